# The full suites on the exact code, client GPU-less (the scripts do the namespace), results tarred into $OUT/all.tgz.
W=/tmp/suites; rm -rf $W; mkdir -p $W
PROGRAMS="completion completion_ptds completion_quiet printf printf_big arrays graph_nodes graphs bulk_paths big_copies memory symbols zero_copy managed" SECTIONS=programs OUT=$W/drv bash tests/gpu/run-driver-on-device.sh > $W/driver-programs.txt 2>&1
OUT=$W/rt bash tests/gpu/run-on-device.sh > $W/run-on-device.txt 2>&1
OUT=$W/ucx bash tests/gpu/run-ucx-on-device.sh > $W/run-ucx-on-device.txt 2>&1
grep -h "RESULT\|session records" $W/*.txt
grep -h "transport ucx not used\|UCX  ERROR" $W/run-ucx-on-device.txt | sort | uniq -c | head
tar czf $OUT/all.tgz -C $W .
