#!/usr/bin/env bash
# Boots the appliance OVA under QEMU the way an operator deploys it, with a cloud-init NoCloud seed (a disk
# labelled CIDATA) that gives a static address, a host name, an SSH key, a tenant, the operator token and the
# admin port on all interfaces; then checks that each of them took effect from outside the VM:
#   GET /healthz at the static address, /status refused without the seeded operator token and served with it,
#   SSH with the seeded key only (no password login, root locked, host name set, no generated 'default' tenant),
#   and `vmcuda doctor` from this machine opening a session over TLS with the seeded tenant token.
# With --ovf-env the same settings come as the OVF environment of a vApp deployment instead (an ISO labelled
# "OVF ENV" holding ovf-env.xml, the transport ESXi and vCloud also offer; cloud-init's OVF datasource): host
# name, SSH key, user-data and network-config as the OVA's ProductSection properties.
# With --no-seed it checks the other first boot: no key or password given, so the console shows a one-time
# password (vmcuda-firstboot) and no fixed password exists.
# Not part of `mvn verify` (it needs the OVA, built with `mvn -B -Pova -DskipTests package`, and takes
# minutes under software emulation). Usage:
#
#   packaging/test-ova-boot.sh [OVA] [--timeout SECONDS] [--uefi] [--disk pvscsi|sata|virtio] [--kvm] [--ovf-env|--no-seed] [--keep]
#
#   OVA        default: the newest packaging/target/vmcuda-appliance-*.ova
#   --timeout  give up after this many seconds (default 900); it fails sooner when the serial console stays
#              silent for --stall seconds (default 300) before the appliance answers, or when qemu exits
#   --uefi     boot with OVMF (EFI firmware, as the OVF asks ESXi to) instead of SeaBIOS
#   --disk     the disk controller: pvscsi (the OVF's, default with SeaBIOS), sata (default with --uefi:
#              Debian's OVMF has no PVSCSI driver, ESXi's EFI has), virtio
#   --kvm      use KVM when /dev/kvm is usable (default: TCG software emulation, as on CI machines)
#   --ovf-env  the first-boot settings as OVF properties (see above; needs xorriso or genisoimage)
#   --no-seed  boot without a seed (see above)
#   --keep     keep the work directory (serial log, disk overlay, seed, SSH key)
#
# The guest gets the devices the OVF describes (paravirtual SCSI disk, vmxnet3 NIC), 2 vCPUs and 2 GiB;
# QEMU's user network forwards free ports on 127.0.0.1 to the guest's 22, 7070 and 7071. The guest's serial
# console is in WORK/serial.log.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
ova="" timeout_s=900 stall_s=300 uefi=false kvm=false keep=false disk="" seed=nocloud
while [ $# -gt 0 ]; do
    case "$1" in
        --timeout) timeout_s="$2"; shift 2 ;;
        --stall) stall_s="$2"; shift 2 ;;
        --uefi) uefi=true; shift ;;
        --kvm) kvm=true; shift ;;
        --disk) disk="$2"; shift 2 ;;
        --no-seed) seed=none; shift ;;
        --ovf-env) seed=ovf; shift ;;
        --keep) keep=true; shift ;;
        -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "test-ova-boot: unknown option $1" >&2; exit 2 ;;
        *) ova="$1"; shift ;;
    esac
done
if [ -z "$ova" ]; then
    ova="$(ls -t "$here"/target/vmcuda-appliance-*.ova 2>/dev/null | head -n 1 || true)"
    [ -n "$ova" ] || { echo "test-ova-boot: no OVA in $here/target; build it: mvn -B -Pova -DskipTests package" >&2; exit 2; }
fi
[ -f "$ova" ] || { echo "test-ova-boot: $ova not found" >&2; exit 2; }
for t in qemu-system-x86_64 qemu-img curl ssh ssh-keygen mkfs.fat mcopy sha256sum; do
    command -v "$t" >/dev/null || {
        echo "test-ova-boot: $t is missing (Debian: apt-get install qemu-system-x86 qemu-utils curl openssh-client dosfstools mtools ovmf)" >&2
        exit 2; }
done

T0=$(date +%s)
say() { printf '[boot %4ds] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
work="$(mktemp -d /tmp/vmcuda-ova-boot.XXXXXX)"
qemu_pid=""
finish() {
    # (a failing last command of an && list would end this trap under set -e before the clean-up below)
    if [ -n "$qemu_pid" ]; then kill "$qemu_pid" 2>/dev/null; wait "$qemu_pid" 2>/dev/null || true; fi
    if $keep; then echo "test-ova-boot: work files kept in $work"; else rm -rf "$work"; fi
}
trap finish EXIT
fail() {
    echo "test-ova-boot: FAIL: $*" >&2
    [ -f "$work/serial.log" ] && { echo "--- last serial console lines ---" >&2; tr -d '\r' < "$work/serial.log" | tail -n 40 >&2; }
    keep=true
    exit 1
}

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

free_port() { # a free TCP port on 127.0.0.1
    local p=$((20000 + RANDOM % 20000))
    while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
    echo "$p"
}
admin_port=$(free_port); ssh_port=$(free_port); client_port=$(free_port)
[ "$ssh_port" != "$admin_port" ] || ssh_port=$((admin_port + 1))
[ "$client_port" != "$admin_port" ] && [ "$client_port" != "$ssh_port" ] || client_port=$((ssh_port + 1))

# ---- the seed: what an operator gives a VM at its first boot
mac=52:54:00:76:6d:63
guest_ip=10.0.2.15   # QEMU's user network hands this one out by DHCP
hostname_seeded=vmcuda-boot-test
seed_drive=()
seed_words="the operator token, admin port on all interfaces"
if [ "$seed" != none ]; then
    ssh-keygen -q -t ed25519 -N '' -C vmcuda-boot-test -f "$work/id_ed25519"
    tenant_token="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    admin_token="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    sha() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
    mkdir -p "$work/seed"
    # vmcuda's settings are files cloud-init writes before vmcudad first starts, the same in both routes
    cat > "$work/seed/vmcuda-files" <<EOF
write_files:
  - path: /etc/vmcuda/vmcudad.d/40-site.properties
    permissions: '0600'
    content: |
      # from the first-boot settings (test-ova-boot.sh)
      tenant.boottest.token_sha256 = $(sha "$tenant_token")
      admin.token_sha256 = $(sha "$admin_token")
  - path: /etc/default/vmcudad
    content: |
      VMCUDAD_ADMIN=0.0.0.0:7071
EOF
    # a static address (reaching it proves the network configuration was applied), the same in both routes
    guest_ip=10.0.2.20
    cat > "$work/seed/network-config" <<EOF
version: 2
ethernets:
  client0:
    match:
      macaddress: "$mac"
    set-name: client0
    addresses: [$guest_ip/24]
    gateway4: 10.0.2.2
    nameservers:
      addresses: [10.0.2.3]
EOF
fi
if [ "$seed" = nocloud ]; then
    printf 'instance-id: vmcuda-boot-test-%s\nlocal-hostname: %s\n' "$(date +%s)" "$hostname_seeded" > "$work/seed/meta-data"
    { printf '#cloud-config\nhostname: %s\nssh_authorized_keys:\n  - %s\n' "$hostname_seeded" "$(cat "$work/id_ed25519.pub")"
      cat "$work/seed/vmcuda-files"; } > "$work/seed/user-data"
    # NoCloud reads a FAT or ISO 9660 file system labelled CIDATA; FAT needs no root and no ISO tool. The
    # firmware boots the appliance disk (bootindex 0), not this one.
    mkfs.fat -C -n CIDATA "$work/seed.img" 2048 >/dev/null
    MTOOLS_SKIP_CHECK=1 mcopy -i "$work/seed.img" "$work/seed/user-data" "$work/seed/meta-data" "$work/seed/network-config" ::/
    seed_drive=(-drive "if=none,id=seed,file=$work/seed.img,format=raw" -device ide-hd,drive=seed,bus=ide.1)
    say "NoCloud seed: static address $guest_ip, host name $hostname_seeded, an SSH key, tenant 'boottest', $seed_words"
elif [ "$seed" = ovf ]; then
    # the keys below must be the ones the OVA declares, and in a ProductSection without ovf:class (a class would
    # prefix them in the environment, where cloud-init looks for the bare names)
    python3 - "$ovf" <<'PYEOF' || fail "the OVF descriptor does not declare the first-boot properties cloud-init reads"
import sys, xml.etree.ElementTree as ET
OVF = "{http://schemas.dmtf.org/ovf/envelope/1}"
keys = {p.get(OVF + "key") for ps in ET.parse(sys.argv[1]).getroot().iter(OVF + "ProductSection")
        if not ps.get(OVF + "class") for p in ps.iter(OVF + "Property")}
missing = {"hostname", "public-keys", "password", "user-data", "network-config", "instance-id"} - keys
if missing:
    sys.exit("missing (or under an ovf:class): " + ", ".join(sorted(missing)))
PYEOF
    hostname_seeded=vmcuda-ovf-test
    mkiso=""
    if command -v xorriso >/dev/null; then mkiso="xorriso -as mkisofs"; elif command -v genisoimage >/dev/null; then mkiso=genisoimage; fi
    [ -n "$mkiso" ] || { echo "test-ova-boot: --ovf-env needs xorriso or genisoimage" >&2; exit 2; }
    { printf '#cloud-config\n'; cat "$work/seed/vmcuda-files"; } > "$work/seed/user-data"
    # the OVF environment a hypervisor writes from the OVA's ProductSection (vmcuda-appliance.ovf.in)
    mkdir -p "$work/ovf-env"
    cat > "$work/ovf-env/ovf-env.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<Environment xmlns="http://schemas.dmtf.org/ovf/environment/1" xmlns:oe="http://schemas.dmtf.org/ovf/environment/1"
             xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" oe:id="vmcuda-appliance">
  <PlatformSection><Kind>QEMU (packaging/test-ova-boot.sh)</Kind></PlatformSection>
  <PropertySection>
    <Property oe:key="instance-id" oe:value="vmcuda-ovf-test-$(date +%s)"/>
    <Property oe:key="hostname" oe:value="$hostname_seeded"/>
    <Property oe:key="public-keys" oe:value="$(cat "$work/id_ed25519.pub")"/>
    <Property oe:key="user-data" oe:value="$(base64 -w0 "$work/seed/user-data")"/>
    <Property oe:key="network-config" oe:value="$({ echo "network:"; sed 's/^/  /' "$work/seed/network-config"; } | base64 -w0)"/>
  </PropertySection>
</Environment>
EOF
    $mkiso -quiet -V "OVF ENV" -o "$work/ovf-env.iso" "$work/ovf-env" 2>/dev/null || $mkiso -V "OVF ENV" -o "$work/ovf-env.iso" "$work/ovf-env"
    seed_drive=(-drive "if=none,id=ovfenv,file=$work/ovf-env.iso,format=raw,media=cdrom,readonly=on" -device ide-cd,drive=ovfenv,bus=ide.1)
    say "OVF environment (ISO transport): host name $hostname_seeded, an SSH key (public-keys), user-data with tenant 'boottest', $seed_words, network-config with the static address $guest_ip"
fi

accel=(-accel tcg,thread=multi -cpu max)
if $kvm; then
    if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then accel=(-accel kvm -cpu host); else say "--kvm: /dev/kvm is not usable here; software emulation"; fi
fi
[ -n "$disk" ] || { if $uefi; then disk=sata; else disk=pvscsi; fi; }
case "$disk" in
    pvscsi) disk_dev=(-device pvscsi,id=scsi0 -device scsi-hd,drive=disk0,bus=scsi0.0,bootindex=0) ;;
    sata) disk_dev=(-device ide-hd,drive=disk0,bus=ide.0,bootindex=0) ;;
    virtio) disk_dev=(-device virtio-blk-pci,drive=disk0,bootindex=0) ;;
    *) echo "test-ova-boot: --disk must be pvscsi, sata or virtio" >&2; exit 2 ;;
esac
firmware=()
if $uefi; then
    code=/usr/share/OVMF/OVMF_CODE_4M.fd vars=/usr/share/OVMF/OVMF_VARS_4M.fd
    [ -f "$code" ] || { echo "test-ova-boot: --uefi needs OVMF (apt-get install ovmf)" >&2; exit 2; }
    cp "$vars" "$work/vars.fd"
    firmware=(-drive "if=pflash,format=raw,readonly=on,file=$code" -drive "if=pflash,format=raw,file=$work/vars.fd")
fi
fwd="hostfwd=tcp:127.0.0.1:$admin_port-$guest_ip:7071,hostfwd=tcp:127.0.0.1:$ssh_port-$guest_ip:22,hostfwd=tcp:127.0.0.1:$client_port-$guest_ip:7070"
say "booting under qemu-system-x86_64 (${accel[1]%%,*}, $($uefi && echo OVMF || echo SeaBIOS), $disk disk, vmxnet3 NIC); guest $guest_ip:7071/22/7070 forwarded to 127.0.0.1:$admin_port/$ssh_port/$client_port; serial log: $work/serial.log"
: > "$work/serial.log"
qemu-system-x86_64 -machine q35 "${accel[@]}" -smp 2 -m 2048 "${firmware[@]}" \
    -nographic -monitor none -serial "file:$work/serial.log" \
    -drive "if=none,id=disk0,file=$work/disk.qcow2,format=qcow2" "${disk_dev[@]}" "${seed_drive[@]}" \
    -netdev "user,id=net0,$fwd" -device "vmxnet3,netdev=net0,mac=$mac" \
    > "$work/qemu.log" 2>&1 &
qemu_pid=$!

# Milestones from the serial console, printed once each while waiting.
milestones=("SYSLINUX|BdsDxe: starting Boot" "Linux version" "Run /init|Loading, please wait"
            "systemd\\[1\\]: .*(Detected|Hostname set)" "cloud-init.*(running 'init'|Cloud-init v)" "vmcuda-gpu-check"
            "Started vmcudad|vmcuda appliance daemon" "login:")
names=("boot loader" "kernel started" "initramfs" "systemd running" "cloud-init ran" "GPU check ran" "vmcudad started" "login prompt")
seen=()
deadline=$((T0 + timeout_s))
last_size=0 last_change=$(date +%s)
# wait_for WHAT CHECK: polls CHECK every 5 s, printing milestones; fails when qemu exits, the console stalls or time is up
wait_for() {
    local what="$1"; shift
    while :; do
        kill -0 "$qemu_pid" 2>/dev/null || { cat "$work/qemu.log" >&2; fail "qemu exited before $what"; }
        for i in "${!milestones[@]}"; do
            [ -z "${seen[$i]:-}" ] || continue
            if tr -d "\r" < "$work/serial.log" | grep -Eaq "${milestones[$i]}"; then
                seen[$i]=1
                say "serial console: ${names[$i]}"
            fi
        done
        "$@" && return 0
        local now size
        now=$(date +%s) size=$(stat -c %s "$work/serial.log")
        if [ "$size" != "$last_size" ]; then last_size=$size last_change=$now; fi
        [ $((now - last_change)) -lt "$stall_s" ] ||
            fail "the serial console has been silent for $stall_s s (qemu stalled, or the guest hangs) while waiting for $what"
        [ "$now" -lt "$deadline" ] || fail "no $what within $timeout_s s"
        sleep 5
    done
}

if [ "$seed" = none ]; then
    one_time() { tr -d '\r' < "$work/serial.log" | grep -aq "one-time password  [A-Za-z0-9]\{16\}"; }
    wait_for "one-time password on the console login screen" one_time
    say "console: $(tr -d '\r' < "$work/serial.log" | grep -a "one-time password" | head -n 1)"
    say "PASS (no seed: a one-time console password, no fixed one)"
    exit 0
fi

healthz() { curl -fsS --max-time 5 "http://127.0.0.1:$admin_port/healthz" > "$work/healthz.txt" 2>/dev/null; }
wait_for "answer from vmcudad's admin port at $guest_ip" healthz
say "GET /healthz at $guest_ip (the static address of the first-boot settings, which also opened the admin port): $(head -c 100 "$work/healthz.txt")"

code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$admin_port/status" || true)"
[ "$code" = 401 ] || fail "GET /status without a token answered HTTP $code, not 401"
code="$(curl -s -o "$work/status.txt" -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $admin_token" \
    "http://127.0.0.1:$admin_port/status" || true)"
[ "$code" = 200 ] || fail "GET /status with the seeded operator token answered HTTP $code"
say "GET /status: 401 without a token, 200 with the seeded operator token"

ssh_opts=(-o BatchMode=yes -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile="$work/known_hosts"
          -o ConnectTimeout=10 -p "$ssh_port")
ssh_ok() { ssh "${ssh_opts[@]}" -i "$work/id_ed25519" vmcuda-admin@127.0.0.1 true 2>/dev/null; }
wait_for "SSH login with the seeded key" ssh_ok
guest() { ssh "${ssh_opts[@]}" -i "$work/id_ed25519" vmcuda-admin@127.0.0.1 "$@"; }
name="$(guest hostname)"
[ "$name" = "$hostname_seeded" ] || fail "host name is '$name', not the seed's $hostname_seeded"
root_pw="$(guest sudo -n passwd -S root | cut -d' ' -f2)"
[ "$root_pw" = L ] || fail "root's password is not locked (passwd -S: $root_pw)"
guest "ip -4 -o addr show client0" | grep -q "inet $guest_ip/24" || fail "client0 does not have the seed's $guest_ip/24"
if guest sudo -n test -e /etc/vmcuda/tenant-default.token; then fail "vmcudad-prestart made tenant 'default' though the seed gave one"; fi
say "SSH with the seeded key as vmcuda-admin: host name $name, root locked, client0 $guest_ip/24, no generated tenant"
set +e
pw_out="$(ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile="$work/known_hosts" -o ConnectTimeout=10 \
    -o PreferredAuthentications=password,keyboard-interactive -o PubkeyAuthentication=no -p "$ssh_port" vmcuda-admin@127.0.0.1 true 2>&1)"
pw_rc=$?
set -e
[ "$pw_rc" != 0 ] && grep -q 'Permission denied (publickey)' <<<"$pw_out" || fail "SSH offers more than keys: $pw_out"
say "SSH password login refused: $(grep -o 'Permission denied (publickey)' <<<"$pw_out")"

# The client side: this machine as a client VM, with the seeded tenant token and the appliance's own certificate
guest cat /etc/vmcuda/tls/vmcudad.pem > "$work/appliance.pem" || fail "the appliance's certificate is not readable for vmcuda-admin"
if [ -x "$repo/bin/vmcuda" ]; then
    set +e
    VMCUDA_APPLIANCE="127.0.0.1:$client_port" VMCUDA_TOKEN="$tenant_token" VMCUDA_TLS_CA="$work/appliance.pem" \
        timeout 120 "$repo/bin/vmcuda" doctor > "$work/doctor.out" 2>&1
    set -e
    sed 's/^/             doctor| /' "$work/doctor.out" | grep -E "session:|GPUs:|TLS|RESULT" || true
    grep -Eq '^  session: opened .*token accepted' "$work/doctor.out" ||
        fail "vmcuda doctor did not open a session with the seeded tenant token (see above)"
    say "vmcuda doctor over TLS with the seeded tenant token: session opened (the VM has no GPU)"
else
    say "bin/vmcuda not built: the client check is skipped (mvn -B -DskipTests install builds it)"
fi
say "PASS"
