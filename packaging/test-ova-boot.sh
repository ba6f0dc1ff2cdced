#!/usr/bin/env bash
# Boots the appliance OVA under QEMU and checks that vmcudad answers GET /status on its admin port.
# Not part of `mvn verify` (it needs the OVA, built with `mvn -B -Pova -DskipTests package`, and takes
# minutes under software emulation). Usage:
#
#   packaging/test-ova-boot.sh [OVA] [--timeout SECONDS] [--uefi] [--disk pvscsi|sata|virtio] [--kvm] [--keep]
#
#   OVA        default: the newest packaging/target/vmcuda-appliance-*.ova
#   --timeout  give up after this many seconds (default 900)
#   --uefi     boot with OVMF (EFI firmware, as the OVF asks ESXi to) instead of SeaBIOS
#   --disk     the disk controller: pvscsi (the OVF's, default with SeaBIOS), sata (default with --uefi:
#              Debian's OVMF has no PVSCSI driver, ESXi's EFI has), virtio
#   --kvm      use KVM when /dev/kvm exists (default: TCG software emulation, as on CI machines)
#   --keep     keep the work directory (serial log, disk overlay)
#
# The guest gets the devices the OVF describes (paravirtual SCSI disk, vmxnet3 NIC), 2 vCPUs and 2 GiB;
# QEMU's user network forwards 127.0.0.1:<free port> to the guest's 7071 (the OVA's vmcudad serves its
# admin HTTP on all interfaces). The guest's serial console is in WORK/serial.log.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ova="" timeout_s=900 uefi=false kvm=false keep=false disk=""
while [ $# -gt 0 ]; do
    case "$1" in
        --timeout) timeout_s="$2"; shift 2 ;;
        --uefi) uefi=true; shift ;;
        --kvm) kvm=true; shift ;;
        --disk) disk="$2"; shift 2 ;;
        --keep) keep=true; shift ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "test-ova-boot: unknown option $1" >&2; exit 2 ;;
        *) ova="$1"; shift ;;
    esac
done
if [ -z "$ova" ]; then
    ova="$(ls -t "$here"/target/vmcuda-appliance-*.ova 2>/dev/null | head -n 1 || true)"
    [ -n "$ova" ] || { echo "test-ova-boot: no OVA in $here/target; build it: mvn -B -Pova -DskipTests package" >&2; exit 2; }
fi
[ -f "$ova" ] || { echo "test-ova-boot: $ova not found" >&2; exit 2; }
for t in qemu-system-x86_64 qemu-img curl; do
    command -v "$t" >/dev/null || {
        echo "test-ova-boot: $t is missing (Debian: apt-get install qemu-system-x86 qemu-utils curl ovmf)" >&2; exit 2; }
done

T0=$(date +%s)
say() { printf '[boot %4ds] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
work="$(mktemp -d /tmp/vmcuda-ova-boot.XXXXXX)"
qemu_pid=""
finish() {
    [ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null && wait "$qemu_pid" 2>/dev/null
    if $keep; then echo "test-ova-boot: work files kept in $work"; else rm -rf "$work"; fi
}
trap finish EXIT

say "unpacking $(basename "$ova")"
tar -xf "$ova" -C "$work"
ovf="$(ls "$work"/*.ovf)"
vmdk="$(ls "$work"/*.vmdk)"
# The manifest must match what was shipped.
(cd "$work" && while IFS= read -r l; do
    f="$(sed -n 's/^SHA256(\(.*\))= .*/\1/p' <<<"$l")"; h="${l##*= }"
    [ "$(sha256sum "$f" | cut -d' ' -f1)" = "$h" ] || { echo "test-ova-boot: manifest mismatch for $f" >&2; exit 1; }
done < "$(ls "$work"/*.mf)")
[ "$(tar -tf "$ova" | head -n 1)" = "$(basename "$ovf")" ] || { echo "test-ova-boot: the OVF is not the OVA's first file" >&2; exit 1; }
say "manifest ok; converting the streamOptimized VMDK to a writable qcow2"
qemu-img convert -O qcow2 "$vmdk" "$work/disk.qcow2"
rm -f "$vmdk"

port=$((20000 + RANDOM % 20000))
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
accel=(-accel tcg,thread=multi -cpu max)
if $kvm && [ -w /dev/kvm ]; then accel=(-accel kvm -cpu host); fi
[ -n "$disk" ] || { if $uefi; then disk=sata; else disk=pvscsi; fi; }
case "$disk" in
    pvscsi) disk_dev=(-device pvscsi,id=scsi0 -device scsi-hd,drive=disk0,bus=scsi0.0) ;;
    sata) disk_dev=(-device ide-hd,drive=disk0,bus=ide.0) ;;
    virtio) disk_dev=(-device virtio-blk-pci,drive=disk0) ;;
    *) echo "test-ova-boot: --disk must be pvscsi, sata or virtio" >&2; exit 2 ;;
esac
firmware=()
if $uefi; then
    code=/usr/share/OVMF/OVMF_CODE_4M.fd vars=/usr/share/OVMF/OVMF_VARS_4M.fd
    [ -f "$code" ] || { echo "test-ova-boot: --uefi needs OVMF (apt-get install ovmf)" >&2; exit 2; }
    cp "$vars" "$work/vars.fd"
    firmware=(-drive "if=pflash,format=raw,readonly=on,file=$code" -drive "if=pflash,format=raw,file=$work/vars.fd")
fi
say "booting under qemu-system-x86_64 (${accel[1]%%,*}, $($uefi && echo OVMF || echo SeaBIOS), $disk disk, vmxnet3 NIC), admin port forwarded to 127.0.0.1:$port; serial log: $work/serial.log"
qemu-system-x86_64 -machine q35 "${accel[@]}" -smp 2 -m 2048 "${firmware[@]}" \
    -nographic -monitor none -serial "file:$work/serial.log" \
    -drive "if=none,id=disk0,file=$work/disk.qcow2,format=qcow2" "${disk_dev[@]}" \
    -netdev "user,id=net0,hostfwd=tcp:127.0.0.1:$port-:7071" -device vmxnet3,netdev=net0 \
    > "$work/qemu.log" 2>&1 &
qemu_pid=$!

# Milestones from the serial console, printed once each while waiting for /status.
milestones=("SYSLINUX|BdsDxe: starting Boot" "Linux version" "Run /init|Loading, please wait"
            "systemd\\[1\\]: .*(Detected|Hostname set)" "vmcuda-gpu-check" "Started vmcudad|vmcuda appliance daemon"
            "login:")
names=("boot loader" "kernel started" "initramfs" "systemd running" "GPU check ran" "vmcudad started" "login prompt")
seen=()
deadline=$((T0 + timeout_s))
while :; do
    if ! kill -0 "$qemu_pid" 2>/dev/null; then
        cat "$work/qemu.log" >&2
        tail -n 40 "$work/serial.log" >&2 || true
        echo "test-ova-boot: FAIL: qemu exited" >&2
        exit 1
    fi
    for i in "${!milestones[@]}"; do
        [ -z "${seen[$i]:-}" ] || continue
        if [ -f "$work/serial.log" ] && tr -d "\r" < "$work/serial.log" | grep -Eaq "${milestones[$i]}"; then
            seen[$i]=1
            say "serial console: ${names[$i]}"
        fi
    done
    if curl -fsS --max-time 5 "http://127.0.0.1:$port/health" > "$work/health.txt" 2>/dev/null; then
        say "vmcudad answered GET /health through the forwarded port: $(head -c 100 "$work/health.txt")"
        # /status needs the operator token of the appliance (created at its first start, inside the VM)
        code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$port/status" 2>/dev/null || true)"
        say "GET /status without the operator token: HTTP $code (401 expected: the appliance has tenants)"
        grep -a "vmcuda-gpu-check" "$work/serial.log" | tr -d '\r' | head -n 3 || true
        say "PASS"
        exit 0
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
        echo "test-ova-boot: FAIL: no answer from vmcudad within $timeout_s s. Last serial lines:" >&2
        tr -d '\r' < "$work/serial.log" | tail -n 40 >&2
        keep=true
        exit 1
    fi
    sleep 5
done
