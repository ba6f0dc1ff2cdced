#!/usr/bin/env bash
# Builds the vmcuda appliance OVA (only with `mvn -B -Pova -DskipTests package`, or by hand):
#
#   OUT_DIR/vmcuda-appliance-VERSION.ova  =  tar (ustar) of
#       vmcuda-appliance-VERSION.ovf   the descriptor (2 vCPU, 4 GiB, one disk, one vmxnet3 NIC, EFI firmware)
#       vmcuda-appliance-VERSION.mf    SHA256 lines for the other two files
#       vmcuda-appliance-VERSION-disk1.vmdk   streamOptimized
#
# The disk: an MBR partition table with
#   1. a 256 MiB FAT32 partition (type EF, active) mounted at /boot: the kernel and initrd, SYSLINUX for BIOS
#      firmware (boot sector written by the mtools-based `syslinux` installer, MBR code from mbr.bin) and
#      systemd-boot as \EFI\BOOT\BOOTX64.EFI for EFI firmware (which GPUs with large BARs need under ESXi);
#   2. an ext4 root file system built from a directory with `mkfs.ext4 -d`.
# Nothing is mounted and no loop device is used, so this runs wherever debootstrap can run (root).
#
# The root file system is a minimal Debian 12 from debootstrap (kernel, systemd, systemd-networkd with DHCP,
# a serial console getty, cloud-init for the first boot, OpenSSH, VMware Tools) with
# vmcuda-appliance_VERSION_amd64.deb installed. It has no password and no SSH host key of its own: each VM gets
# them at its first boot (cloud-init.cfg, vmcuda-firstboot). The NVIDIA driver is not
# included: vmcuda-gpu-check.service explains on the console how to install it.
#
# Usage: build-ova.sh --version V --out-dir DIR [--appliance-deb FILE] [--disk-gib N] [--mirror URL]
#        [--work-dir DIR] [--keep-work]
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../debian-version.sh"

version="" deb="" outdir="" disk_gib=8 mirror="http://deb.debian.org/debian" work="" keep_work=false
while [ $# -gt 0 ]; do
    case "$1" in
        --version) version="$2"; shift 2 ;;
        --appliance-deb) deb="$2"; shift 2 ;;
        --out-dir) outdir="$2"; shift 2 ;;
        --disk-gib) disk_gib="$2"; shift 2 ;;
        --mirror) mirror="$2"; shift 2 ;;
        --work-dir) work="$2"; shift 2 ;;
        --keep-work) keep_work=true; shift ;;
        *) echo "build-ova: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$version" ] && [ -n "$outdir" ] || {
    echo "usage: build-ova.sh --version V --out-dir DIR [--appliance-deb FILE] [--disk-gib N] [--mirror URL]" >&2; exit 2; }
# Default: the appliance package that the packaging module (jdeb) wrote into the same directory.
[ -n "$deb" ] || deb="$outdir/vmcuda-appliance_$(debian_version "$version")_amd64.deb"
[ -f "$deb" ] || { echo "build-ova: appliance package $deb not found (mvn -B package builds it)" >&2; exit 1; }
deb="$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$outdir"
outdir="$(cd "$outdir" && pwd)"
work="${work:-$outdir/ova-work}"

T0=$(date +%s)
step_no=0
STEPS=9
step() { step_no=$((step_no + 1)); printf '[ova %d/%d, %4ds] %s\n' "$step_no" "$STEPS" "$(( $(date +%s) - T0 ))" "$*"; }
info() { printf '             %s\n' "$*"; }
die() { echo "build-ova: ERROR: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
step "checking the build tools"
[ "$(id -u)" = 0 ] || die "debootstrap and chroot need root. Run the OVA build as root (the rest of the build does not need it)."
[ "$(uname -m)" = x86_64 ] || die "the appliance image is amd64; build it on an x86_64 machine"
declare -A tool_pkg=(
    [debootstrap]=debootstrap [qemu-img]=qemu-utils [syslinux]=syslinux [mcopy]=mtools [mkfs.fat]=dosfstools
    [sfdisk]=fdisk [mkfs.ext4]=e2fsprogs [chroot]=coreutils
)
need_pkgs=()
for t in "${!tool_pkg[@]}"; do command -v "$t" >/dev/null 2>&1 || need_pkgs+=("${tool_pkg[$t]}"); done
[ -f /usr/lib/syslinux/mbr/mbr.bin ] && [ -f /usr/lib/syslinux/modules/bios/ldlinux.c32 ] || need_pkgs+=(syslinux-common)
[ -f /usr/lib/systemd/boot/efi/systemd-bootx64.efi ] || need_pkgs+=(systemd-boot-efi)
if [ ${#need_pkgs[@]} -gt 0 ]; then
    mapfile -t need_pkgs < <(printf '%s\n' "${need_pkgs[@]}" | sort -u)
    info "missing build tools; installing with apt-get: ${need_pkgs[*]}"
    command -v apt-get >/dev/null || die "no apt-get here: install ${need_pkgs[*]} (Debian package names) by hand"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_pkgs[@]}" >"$outdir/ova-apt.log" 2>&1; then
        info "apt-get install failed; running apt-get update and retrying"
        apt-get update >>"$outdir/ova-apt.log" 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_pkgs[@]}" >>"$outdir/ova-apt.log" 2>&1 ||
            die "could not install ${need_pkgs[*]}; see $outdir/ova-apt.log"
    fi
fi

name="vmcuda-appliance-$version"
rootfs="$work/rootfs"
base_tar="$work/debootstrap-base.tar"
mkdir -p "$work"

# Everything mounted into the chroot is unmounted on every exit path.
mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
    mounted=()
}
trap cleanup EXIT
chroot_mounts() {
    mount -t proc proc "$rootfs/proc" && mounted+=("$rootfs/proc")
    mount -t sysfs sysfs "$rootfs/sys" && mounted+=("$rootfs/sys")
    mount --bind /dev "$rootfs/dev" && mounted+=("$rootfs/dev")
    mount --bind /dev/pts "$rootfs/dev/pts" && mounted+=("$rootfs/dev/pts")
}
in_chroot() { LC_ALL=C DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot "$rootfs" "$@"; }

# ---------------------------------------------------------------------------------------------
# The package set: kernel, systemd (init, networkd, resolved), what an operator needs on the console to
# install the NVIDIA driver (apt over https, wget, an editor, sudo) and fsck for the FAT /boot; cloud-init for
# the first boot (a NoCloud seed or the OVF environment), OpenSSH, and VMware Tools (through which ESXi hands
# over the OVF properties and shuts the VM down cleanly). python3-cffi-backend is named because debootstrap does
# not resolve the virtual package python3-cryptography (for cloud-init) depends on.
packages="linux-image-amd64,systemd-sysv,systemd-resolved,dbus,udev,kmod,initramfs-tools,dosfstools,e2fsprogs,iproute2,iputils-ping,ca-certificates,wget,nano,less,procps,sudo,cloud-init,python3-cffi-backend,openssh-server,open-vm-tools"
key="$(echo "bookworm $mirror $packages" | sha256sum | cut -c1-16)"
if [ -f "$base_tar" ] && [ "$(cat "$base_tar.key" 2>/dev/null)" = "$key" ]; then
    step "debootstrap: reusing $base_tar (delete it to fetch fresh packages)"
else
    step "debootstrap: minimal Debian 12 (bookworm) from $mirror (a few minutes; progress below)"
    rm -rf "$rootfs" "$base_tar" "$base_tar.key"
    mkdir -p "$rootfs"
    # debootstrap prints one line per package step; show a compact running count instead of ~2000 lines.
    if ! debootstrap --variant=minbase --include="$packages" --components=main bookworm "$rootfs" "$mirror" \
            > >(tee "$work/debootstrap.log" | awk '
                /^I: Retrieving/ { r++; if (r % 25 == 0) printf "             retrieved %d packages\n", r; fflush() }
                /^I: Unpacking the base system/ { print "             unpacking the base system"; fflush() }
                /^I: Configuring / { c++; if (c % 25 == 0) printf "             configured %d packages\n", c; fflush() }
                /^I: Base system installed successfully/ { print "             base system installed"; fflush() }
                /^E:/ { print; fflush() }') 2>&1; then
        tail -n 30 "$work/debootstrap.log" >&2
        [ -f "$rootfs/debootstrap/debootstrap.log" ] && tail -n 30 "$rootfs/debootstrap/debootstrap.log" >&2
        die "debootstrap failed (full log: $work/debootstrap.log). Is $mirror reachable?"
    fi
    sync
    info "caching the base system in $base_tar"
    tar --numeric-owner --xattrs -C "$rootfs" -cf "$base_tar" .
    echo "$key" > "$base_tar.key"
fi
rm -rf "$rootfs"
mkdir -p "$rootfs"
tar --numeric-owner --xattrs -C "$rootfs" -xf "$base_tar"

# ---------------------------------------------------------------------------------------------
step "configuring the system (network, consoles, boot hooks) and installing $(basename "$deb")"
root_uuid="$(cat /proc/sys/kernel/random/uuid)"
boot_serial="$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)"   # FAT volume id, 8 hex digits
boot_uuid="${boot_serial:0:4}-${boot_serial:4:4}"

echo vmcuda-appliance > "$rootfs/etc/hostname"
cat > "$rootfs/etc/hosts" <<'EOF'
127.0.0.1	localhost
127.0.1.1	vmcuda-appliance
::1		localhost ip6-localhost ip6-loopback
EOF
cat > "$rootfs/etc/fstab" <<EOF
# vmcuda appliance (built by packaging/ova/build-ova.sh)
UUID=$root_uuid  /      ext4  errors=remount-ro  0 1
UUID=$boot_uuid  /boot  vfat  umask=0077,shortname=winnt  0 2
EOF
cat > "$rootfs/etc/apt/sources.list" <<'EOF'
deb http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware
deb http://deb.debian.org/debian bookworm-updates main contrib non-free non-free-firmware
deb http://security.debian.org/debian-security bookworm-security main contrib non-free non-free-firmware
EOF
# DHCP on every Ethernet interface (vmxnet3 on ESXi, virtio on KVM). The client network is a second NIC
# the operator adds; docs/appliance-esxi.md and docs/appliance-kvm.md show its static configuration.
mkdir -p "$rootfs/etc/systemd/network"
cat > "$rootfs/etc/systemd/network/80-dhcp.network" <<'EOF'
[Match]
Name=en* eth*

[Network]
DHCP=yes

[DHCPv4]
UseDomains=yes
EOF
# Kernel messages and a login prompt on both the VGA console (tty1) and the first serial port.
mkdir -p "$rootfs/etc/systemd/system/getty.target.wants"
ln -sf /lib/systemd/system/serial-getty@.service "$rootfs/etc/systemd/system/getty.target.wants/serial-getty@ttyS0.service"
# /boot is FAT (so EFI firmware and SYSLINUX can read it): no symlinks there. These hooks keep
# /boot/vmlinuz and /boot/initrd.img (the names both boot loaders use) current after kernel upgrades.
mkdir -p "$rootfs/etc/kernel/postinst.d" "$rootfs/etc/initramfs/post-update.d"
cat > "$rootfs/etc/kernel/postinst.d/zz-vmcuda-boot" <<'EOF'
#!/bin/sh
# vmcuda appliance: copy the newest kernel to /boot/vmlinuz (read by SYSLINUX and systemd-boot).
set -e
v="$1"
[ -f "/boot/vmlinuz-$v" ] && cp "/boot/vmlinuz-$v" /boot/vmlinuz
[ -f "/boot/initrd.img-$v" ] && cp "/boot/initrd.img-$v" /boot/initrd.img
exit 0
EOF
cat > "$rootfs/etc/initramfs/post-update.d/zz-vmcuda-boot" <<'EOF'
#!/bin/sh
# vmcuda appliance: copy a regenerated initrd of the running kernel to /boot/initrd.img.
set -e
[ "$1" = "$(uname -r)" ] && [ -f "$2" ] && cp "$2" /boot/initrd.img
exit 0
EOF
chmod 755 "$rootfs/etc/kernel/postinst.d/zz-vmcuda-boot" "$rootfs/etc/initramfs/post-update.d/zz-vmcuda-boot"
# A persistent journal: `journalctl -u vmcudad` still shows the previous boot after the driver install's reboot.
mkdir -p "$rootfs/var/log/journal"
# Every driver a hypervisor disk may need (pvscsi, LSI, AHCI, virtio) in the initrd.
sed -i 's/^MODULES=.*/MODULES=most/' "$rootfs/etc/initramfs-tools/initramfs.conf"

cp "$deb" "$rootfs/tmp/vmcuda-appliance.deb"
chroot_mounts
in_chroot systemctl enable systemd-networkd.service systemd-resolved.service >/dev/null 2>&1 ||
    die "cannot enable systemd-networkd/resolved in the image"
if ! in_chroot dpkg -i /tmp/vmcuda-appliance.deb > "$work/dpkg-appliance.log" 2>&1; then
    cat "$work/dpkg-appliance.log" >&2
    die "installing the appliance package into the image failed"
fi
sed 's/^/             dpkg| /' "$work/dpkg-appliance.log" | tail -n 5
rm -f "$rootfs/tmp/vmcuda-appliance.deb"
# First boot (docs/appliance-esxi.md step 1, "first-boot settings"): cloud-init reads a NoCloud seed or the OVF environment for the
# network, host name, the login user's SSH keys and vmcuda's settings (tenant tokens in /etc/vmcuda/vmcudad.d/,
# ports in /etc/default/vmcudad), all written before vmcudad starts (cloud-init.service runs before sysinit.target).
# No fixed password: root stays locked; the login user vmcuda-admin is made here, locked, and gets its keys or
# password from the seed, else a one-time console password from vmcuda-firstboot.
install -m 0644 "$here/cloud-init.cfg" "$rootfs/etc/cloud/cloud.cfg.d/99-vmcuda.cfg"
install -m 0644 "$here/ds-identify.cfg" "$rootfs/etc/cloud/ds-identify.cfg"
in_chroot useradd --create-home --shell /bin/bash --groups adm,sudo,systemd-journal \
    --comment "vmcuda appliance operator" vmcuda-admin || die "cannot add the user vmcuda-admin to the image"
in_chroot passwd --lock root >/dev/null
install -m 0755 "$here/vmcuda-firstboot" "$rootfs/usr/local/sbin/vmcuda-firstboot"
install -m 0644 "$here/vmcuda-firstboot.service" "$rootfs/etc/systemd/system/vmcuda-firstboot.service"
in_chroot systemctl enable vmcuda-firstboot.service >/dev/null 2>&1 || die "cannot enable vmcuda-firstboot in the image"
# Every deployed VM makes its own SSH host keys (cloud-init does; ssh-keygen -A if it did not run).
rm -f "$rootfs"/etc/ssh/ssh_host_*
mkdir -p "$rootfs/etc/systemd/system/ssh.service.d"
# (ExecStartPre= empties Debian's list, whose `sshd -t` would fail first without keys, then puts it back after)
printf '[Service]\nExecStartPre=\nExecStartPre=/usr/bin/ssh-keygen -A\nExecStartPre=/usr/sbin/sshd -t\n' \
    > "$rootfs/etc/systemd/system/ssh.service.d/10-vmcuda-host-keys.conf"
in_chroot update-initramfs -u -k all > "$work/initramfs.log" 2>&1 || { cat "$work/initramfs.log" >&2; die "update-initramfs failed"; }
in_chroot apt-get clean
cleanup
# Each deployed VM gets its own machine id (and DHCP client id) at first boot.
: > "$rootfs/etc/machine-id"
rm -f "$rootfs/var/lib/dbus/machine-id"
rm -rf "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*.bin "$rootfs/tmp/"* "$rootfs/var/log/"*.log \
    "$rootfs/var/lib/cloud/"*
kver="$(cd "$rootfs/boot" && ls vmlinuz-* | sed 's/^vmlinuz-//' | sort -V | tail -n 1)"
[ -n "$kver" ] || die "no kernel in the image's /boot"
info "kernel $kver, root UUID $root_uuid, boot UUID $boot_uuid"

# ---------------------------------------------------------------------------------------------
step "building the FAT32 /boot partition (SYSLINUX for BIOS, systemd-boot for EFI)"
MiB=$((1024 * 1024))
boot_start_mib=1
boot_mib=256
disk_mib=$((disk_gib * 1024))
root_start_mib=$((boot_start_mib + boot_mib))
root_mib=$((disk_mib - root_start_mib))
[ "$root_mib" -ge 2048 ] || die "--disk-gib $disk_gib is too small (at least 3)"
bootimg="$work/boot.fat"
rm -f "$bootimg"
truncate -s $((boot_mib * MiB)) "$bootimg"
# -h: hidden sectors = the partition's first LBA, which the FAT boot code adds to its sector numbers.
mkfs.fat -F 32 -n VMCUDABOOT -i "$boot_serial" -h $((boot_start_mib * MiB / 512)) "$bootimg" >/dev/null
cmdline="root=UUID=$root_uuid ro console=tty0 console=ttyS0,115200n8 net.ifnames=1"
cat > "$work/syslinux.cfg" <<EOF
DEFAULT vmcuda
PROMPT 0
TIMEOUT 10
SERIAL 0 115200
LABEL vmcuda
    LINUX /vmlinuz
    INITRD /initrd.img
    APPEND $cmdline
EOF
printf 'default vmcuda.conf\ntimeout 1\nconsole-mode keep\n' > "$work/loader.conf"
printf 'title   vmcuda appliance (Debian 12, %s)\nlinux   /vmlinuz\ninitrd  /initrd.img\noptions %s\n' \
    "$kver" "$cmdline" > "$work/vmcuda.conf"
export MTOOLS_SKIP_CHECK=1
mmd -i "$bootimg" ::/syslinux ::/EFI ::/EFI/BOOT ::/loader ::/loader/entries
# Everything the Debian kernel package put into /boot (config, System.map, versioned files) plus the
# unversioned names the loaders read.
for f in "$rootfs"/boot/*; do mcopy -i "$bootimg" "$f" ::/; done
mcopy -i "$bootimg" "$rootfs/boot/vmlinuz-$kver" ::/vmlinuz
mcopy -i "$bootimg" "$rootfs/boot/initrd.img-$kver" ::/initrd.img
mcopy -i "$bootimg" "$work/syslinux.cfg" ::/syslinux/syslinux.cfg
for m in ldlinux.c32 libcom32.c32 libutil.c32; do
    mcopy -i "$bootimg" "/usr/lib/syslinux/modules/bios/$m" ::/syslinux/
done
mcopy -i "$bootimg" /usr/lib/systemd/boot/efi/systemd-bootx64.efi ::/EFI/BOOT/BOOTX64.EFI
mcopy -i "$bootimg" "$work/loader.conf" ::/loader/loader.conf
mcopy -i "$bootimg" "$work/vmcuda.conf" ::/loader/entries/vmcuda.conf
syslinux --install --directory /syslinux "$bootimg"
rm -rf "$rootfs/boot/"*
info "$(mdir -i "$bootimg" -b ::/ | wc -l) files in /boot"

# ---------------------------------------------------------------------------------------------
step "building the disk: MBR, boot partition and the ext4 root file system made in place (${disk_gib} GiB)"
raw="$work/disk.raw"
rm -f "$raw"
truncate -s $((disk_mib * MiB)) "$raw"
sfdisk --quiet "$raw" <<EOF
label: dos
start=$((boot_start_mib * MiB / 512)), size=$((boot_mib * MiB / 512)), type=ef, bootable
start=$((root_start_mib * MiB / 512)), size=$((root_mib * MiB / 512)), type=83
EOF
dd if=/usr/lib/syslinux/mbr/mbr.bin of="$raw" bs=440 count=1 conv=notrunc status=none
dd if="$bootimg" of="$raw" bs=1M seek=$boot_start_mib conv=notrunc,sparse status=none
rm -f "$bootimg"
# The root file system is written straight into partition 2 of the sparse disk file, from the directory.
info "mkfs.ext4 -d: $(du -sh "$rootfs" | cut -f1) of files into ${root_mib} MiB"
mkfs.ext4 -q -F -L vmcuda-root -U "$root_uuid" -d "$rootfs" -E offset=$((root_start_mib * MiB)) \
    "$raw" "${root_mib}M"
sfdisk --list "$raw" | sed 's/^/             /' | tail -n 3

# ---------------------------------------------------------------------------------------------
step "converting to a streamOptimized VMDK (qemu-img, progress in %)"
vmdk_name="$name-disk1.vmdk"
rm -f "$work/$vmdk_name"
qemu-img convert -p -f raw -O vmdk -o subformat=streamOptimized,adapter_type=lsilogic "$raw" "$work/$vmdk_name" |
    tr '\r' '\n' | awk '/\/100%/ { p = int(substr($1, 2)); if (p >= next_p) { printf "             %d%%\n", p; next_p = p + 10; fflush() } }'
[ "${PIPESTATUS[0]}" = 0 ] || die "qemu-img convert failed"
vmdk_size=$(stat -c %s "$work/$vmdk_name")
info "$vmdk_name: $((vmdk_size / MiB)) MiB"

# ---------------------------------------------------------------------------------------------
step "writing the OVF descriptor and the manifest"
ovf_name="$name.ovf"
mf_name="$name.mf"
sed -e "s/@VERSION@/$version/g" -e "s/@NAME@/$name/g" -e "s/@VMDK@/$vmdk_name/g" \
    -e "s/@VMDK_SIZE@/$vmdk_size/g" -e "s/@DISK_BYTES@/$((disk_mib * MiB))/g" \
    "$here/vmcuda-appliance.ovf.in" > "$work/$ovf_name"
grep -q '@[A-Z_]*@' "$work/$ovf_name" && die "unreplaced placeholder in $ovf_name"
(cd "$work" && for f in "$ovf_name" "$vmdk_name"; do
    printf 'SHA256(%s)= %s\n' "$f" "$(sha256sum "$f" | cut -d' ' -f1)"
done) > "$work/$mf_name"

# ---------------------------------------------------------------------------------------------
step "packing the OVA (ustar: descriptor first, then manifest, then disk)"
ova="$outdir/$name.ova"
rm -f "$ova"
tar --format=ustar --owner=0 --group=0 --numeric-owner -C "$work" -cf "$ova" "$ovf_name" "$mf_name" "$vmdk_name"
info "$(tar -tvf "$ova" | awk '{printf "%s %s; ", $6, $3}')"

# ---------------------------------------------------------------------------------------------
step "done: $ova ($(( $(stat -c %s "$ova") / MiB )) MiB) in $(( $(date +%s) - T0 )) s"
if [ "$keep_work" = true ]; then
    info "work files kept in $work (disk.raw is the raw image)"
else
    rm -rf "$rootfs" "$raw" "$work/$vmdk_name"
    info "the debootstrap cache stays in $base_tar for the next build"
fi
echo "Boot test (software emulation, ~5-10 minutes): packaging/test-ova-boot.sh $ova"
