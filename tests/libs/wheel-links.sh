# Sourced by the GPU machine's build scripts (tests/libs/build-on-device.sh, tests/samples/build-lib-samples.sh,
# tests/samples/build-library-samples.sh): the CUDA 13 math libraries and their headers live in that machine's pip
# wheels. Sets nv (the wheels' cu13 directory: include/, lib/) and links (OUT/.links: libX.so -> the wheel's
# libX.so.N, which the wheels ship without the unversioned name the linker looks for; libcuda.so -> the machine's
# driver, for programs that link -lcuda).
#   wheel_links OUT
wheel_links() {
    local site f base
    site="$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))')"
    nv="$site/nvidia/cu13"
    [ -d "$nv/include" ] || { echo "wheel_links: no $nv/include" >&2; return 1; }
    links="$1/.links"
    mkdir -p "$links"
    for f in "$nv"/lib/lib*.so.*; do
        base="$(basename "$f")"
        ln -sf "$f" "$links/${base%%.so.*}.so"
    done
    f="$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')"
    [ -z "$f" ] || ln -sf "$f" "$links/libcuda.so"
}
