# The driver front end's library and framework sections on the exact code (client GPU-less), results in $OUT/fw.tgz.
W=/tmp/fw; rm -rf $W; mkdir -p $W
SECTIONS="libs frameworks" OUT=$W/drv timeout 520 bash tests/gpu/run-driver-on-device.sh > $W/driver-libs-frameworks.txt 2>&1
echo "exit $?" >> $W/driver-libs-frameworks.txt
grep -h "RESULT\|session records" $W/*.txt
grep -c "^PASS" $W/driver-libs-frameworks.txt; grep "^FAIL" $W/driver-libs-frameworks.txt | head
tar czf $OUT/fw.tgz -C $W .
