#!/usr/bin/env bash
# vmcuda's shared-memory fast path between two VMs on one KVM host, for real (issue 15 item 6): a qemu guest
# whose only link to the appliance is user-mode networking (the control connection) and an ivshmem-plain
# device backed by the file the appliance daemon names in shm.regions (the bulk data). The guest runs
# region_copy (driver API, vmcuda's libcuda.so.1) with VMCUDA_SHM_REGION set to the ivshmem BAR's sysfs
# resource file; the appliance on the host serves it with CI's stand-in driver (no GPU needed). It passes
# when the copies come back identical and the worker attached a lane of the region (not the socket).
#
# ACCEL=kvm uses KVM (default tcg: software emulation, slower, and what works where KVM is nested; on the
# development machine of 2026-11-23 nested KVM failed to start the vCPU). Needs: root, qemu-system-x86,
# cpio and busybox-static (Debian packages), a Debian cloud kernel image
# (KERNEL_DEB, a linux-image-*-cloud-amd64 .deb: its vmlinuz and virtio modules), and a built tree
# (mvn -B install -DskipTests). Not part of `mvn verify` (CI has no KVM). Usage:
#     KERNEL_DEB=/path/linux-image-6.1.0-50-cloud-amd64_*.deb bash tests/kvm/ivshmem-guest.sh
set -uo pipefail
REPO="$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)"
W="${WORK:-/tmp/vmcuda-kvm}"
rm -rf "$W" && mkdir -p "$W/k" "$W/root"/{bin,lib,lib64,dev,proc,sys,mods,tmp} "$W/state"
fail() { echo "ivshmem-guest: $*" >&2; exit 1; }
[ "${ACCEL:-tcg}" != kvm ] || [ -r /dev/kvm ] || fail "no /dev/kvm"
command -v qemu-system-x86_64 >/dev/null || fail "no qemu-system-x86_64 (apt-get install qemu-system-x86)"
command -v cpio >/dev/null || fail "no cpio (apt-get install cpio)"
[ -x /bin/busybox ] || fail "no /bin/busybox (apt-get install busybox-static)"
[ -f "${KERNEL_DEB:-}" ] || fail "set KERNEL_DEB to a linux-image-*-cloud-amd64 .deb"
dpkg-deb -x "$KERNEL_DEB" "$W/k"
KERNEL="$(ls "$W"/k/boot/vmlinuz-*)"
MODS="$(ls -d "$W"/k/lib/modules/*)"

# ---- the guest: busybox, the virtio network modules, the program and vmcuda's client libraries ----
cp /bin/busybox "$W/root/bin/" && for a in sh mount insmod ip ls cat poweroff sleep sync; do ln -s busybox "$W/root/bin/$a"; done
for m in virtio virtio_ring virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci failover net_failover virtio_net; do
    cp "$(find "$MODS" -name "$m.ko")" "$W/root/mods/" || fail "module $m missing from $KERNEL_DEB"
done
gcc -std=gnu11 -O2 -I/usr/local/cuda/include -I"$REPO/tests/driver" -o "$W/root/bin/region_copy" "$REPO/tests/kvm/region_copy.c" \
    -L"$REPO/client-shim/target/lib" -lcuda -Wl,-rpath,/lib || fail "cannot build region_copy"
cp -L "$REPO"/client-shim/target/lib/libcuda.so.1 "$REPO"/client-shim/target/lib/libvmcuda-client.so "$W/root/lib/"
cp -L /lib/x86_64-linux-gnu/libc.so.6 "$W/root/lib/" && cp -L /lib64/ld-linux-x86-64.so.2 "$W/root/lib64/"
TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$W/root/init" <<INIT
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio virtio_ring virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci failover net_failover virtio_net; do
    insmod /mods/\$m.ko 2>/dev/null
done
ip link set lo up; ip link set eth0 up; ip addr add 10.0.2.15/24 dev eth0; ip route add default via 10.0.2.2
bar=""
for d in /sys/bus/pci/devices/*; do
    [ "\$(cat \$d/vendor)" = 0x1af4 ] && [ "\$(cat \$d/device)" = 0x1110 ] && bar=\$d/resource2
done
echo "guest: ivshmem BAR \$bar"
LD_LIBRARY_PATH=/lib VMCUDA_APPLIANCE=10.0.2.2:$((17470)) VMCUDA_TOKEN=$TOKEN VMCUDA_SHM_REGION=\$bar HOME=/tmp \
    /bin/region_copy
echo "guest: exit \$?"
sync; poweroff -f
INIT
chmod +x "$W/root/init"
(cd "$W/root" && find . | cpio -o -H newc --quiet | gzip -1) >"$W/initrd.gz" || fail "cannot pack the guest"

# ---- the appliance on the host: the region file, the daemon with the stand-in driver ----
REGION=/dev/shm/vmcuda-kvm-region
rm -f "$REGION" && truncate -s 64M "$REGION"
{
    printf 'tenant.kvm.token_sha256 = %s\n' "$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)"
    printf 'shm.regions = %s\n' "$REGION"
    printf 'worker.extra_env = VMCUDA_WORKER_LIBCUDA=%s\n' "$REPO/tests/target/driver/libfakecuda.so"
    printf 'worker.cuda_lib_dirs = /usr/local/cuda/lib64:%s\n' "$REPO/tests/target/driver"
} >"$W/vmcudad.conf"
setsid "$REPO/bin/vmcudad" --listen 127.0.0.1:17470 --admin 127.0.0.1:17471 --state-dir "$W/state" \
    --config "$W/vmcudad.conf" --worker-lib-dir "$REPO/appliance/target/native" >"$W/daemon.log" 2>&1 </dev/null &
DPID=$!
trap 'kill -- -$DPID 2>/dev/null; rm -f "$REGION"' EXIT
for _ in $(seq 1 100); do grep -q "listening on" "$W/daemon.log" 2>/dev/null && break; sleep 0.2; done

timeout 300 qemu-system-x86_64 -accel "${ACCEL:-tcg}" -m 512 -nographic -no-reboot \
    -kernel "$KERNEL" -initrd "$W/initrd.gz" -append "console=ttyS0 quiet panic=-1" \
    -netdev user,id=n0 -device virtio-net-pci,netdev=n0 \
    -object memory-backend-file,id=region,share=on,mem-path="$REGION",size=64M -device ivshmem-plain,memdev=region \
    >"$W/guest.log" 2>&1
sleep 1
grep -a "guest:\|region_copy\|vmcuda" "$W/guest.log" | tr -d '\r'
lanes=$(cat "$W"/state/sessions/*/worker.log 2>/dev/null | grep -c "ring attached: lane")
echo "worker: $lanes lane attachment(s) of the region"
grep -h "ring attached" "$W"/state/sessions/*/worker.log 2>/dev/null | head -2
if grep -aq "region_copy: 2 x 8 MiB each way identical: ok" "$W/guest.log" && [ "$lanes" -ge 1 ]; then
    echo "RESULT: PASS"
else
    echo "RESULT: FAIL (guest log: $W/guest.log, daemon log: $W/daemon.log)"; exit 1
fi
