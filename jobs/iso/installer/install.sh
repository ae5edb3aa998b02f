#!/bin/sh
# The installer side of a personalized image, shipped as /fleet/install.sh and called by
# the Debian preseed (/preseed.cfg) and the Ubuntu autoinstall (/autoinstall.yaml).
#
#   install.sh early            handshake; never returns unless it succeeded (see stop_for_good)
#   install.sh debian-early     early, then partitioning, target disk and packages from the
#                               blueprint into debconf (d-i's partman/early_command)
#   install.sh selections       the debconf selections of the blueprint (debian-early's input)
#   install.sh ubuntu-early SCHEME FS
#                               early, then checks that the blueprint's partitioning is the
#                               one the image's autoinstall file carries
#   install.sh ubuntu-check-crypt [TARGET]
#                               a luks-lvm install must have its root on LUKS (the storage
#                               screen asked for the passphrase); fails loudly otherwise
#   install.sh late [TARGET]    agent.json, blueprint.json and the WLAN profile into the
#                               installed system (default /target), all 0600 root; and the
#                               device agent from ./agent/ with its enabled systemd unit
#
# A failed handshake stops the installation for good: d-i shows a failed
# partman/early_command as an error and partitions once someone presses Continue, so the
# early command never returns on failure. It shows why and what to do on the console (and
# in d-i's own dialog), powers the machine off after FLEET_POWEROFF_DELAY seconds, and then
# waits for ever.
#
# Environment: FLEET_OUT (default /run/fleet) and the handshake's own (handshake.sh);
# for tests and odd hardware: FLEET_POWEROFF (the power-off command, default `poweroff -f`),
# FLEET_POWEROFF_DELAY (default 300), FLEET_CONSOLE (default /dev/console), FLEET_SYSFS
# (default /sys) and FLEET_MOUNTS (default /proc/mounts) for the choice of the disk.
set -u

here=$(dirname "$0")
out=${FLEET_OUT:-/run/fleet}
export FLEET_OUT="$out"
export FLEET_CONFIG="${FLEET_CONFIG:-$here/provisioning.json}"
sysfs=${FLEET_SYSFS:-/sys}

log() { printf 'fleet: %s\n' "$*" >&2; }

# d-i's own error dialog with the message, when this runs under d-i's debconf.
show_in_installer() {
  [ -n "${DEBIAN_HAS_FRONTEND:-}" ] && [ -r /usr/share/debconf/confmodule ] || return 0
  set +u # the confmodule is not written for it
  # shellcheck disable=SC1091
  . /usr/share/debconf/confmodule
  cat >/tmp/fleet.templates <<'TEMPLATE'
Template: fleet/stopped
Type: error
Description: Fleet: installation stopped, no disk was touched
 ${MESSAGE}
TEMPLATE
  db_x_loadtemplatefile /tmp/fleet.templates fleet || return 0
  db_subst fleet/stopped MESSAGE "$1"
  db_fset fleet/stopped seen false
  db_input critical fleet/stopped || return 0
  db_go || true
}

# Never returns: prints why the installation stopped and what to do, on the console and
# in the installer, powers off after the delay, then waits for a power-off for ever.
stop_for_good() {
  why=$1
  todo=$2
  delay=${FLEET_POWEROFF_DELAY:-300}
  log "installation stopped before partitioning: $why"
  log "what to do: $todo"
  msg="$why. What to do: $todo. This machine powers off in $delay seconds."
  printf '\n\n*** FLEET: INSTALLATION STOPPED, NO DISK WAS TOUCHED ***\n%s\nWhat to do: %s\nThis machine powers off in %s seconds.\n\n' \
    "$why" "$todo" "$delay" >"${FLEET_CONSOLE:-/dev/console}" 2>/dev/null || true
  (
    sleep "$delay"
    ${FLEET_POWEROFF:-poweroff -f}
  ) &
  # Its own process: the dialog waits for a key press, the power-off must not.
  show_in_installer "$msg" &
  while :; do sleep 3600; done
}

# What the person at the machine should do about a failed handshake (its exit code and
# the service's error code in its output).
advice() {
  case $1 in
  3)
    case $2 in
    *device_already_enrolled*) echo "this device is already managed: an admin must reprovision it in the fleet service, then boot this stick again" ;;
    *template_not_allowed*) echo "this image's enrollment session does not allow the template: build a new image" ;;
    *) echo "the image's credential is not valid (a rotated activation code, or an enrollment session revoked, expired or used up): build a new image or ask an admin" ;;
    esac ;;
  4) echo "check the network (cable or WLAN) and that the fleet service is up, then boot this stick again" ;;
  *) echo "this device or image cannot run the handshake; give the message above to an admin" ;;
  esac
}

# The HTTP client the handshake needs: d-i may have only busybox wget (no HTTPS certificate
# checks, no body or Retry-After of an error answer) unless GNU wget (wget-udeb) is
# installed, so ask anna for it and the CA certificates.
ensure_http_client() {
  command -v curl >/dev/null 2>&1 && return 0
  wget --version 2>/dev/null | grep -q 'GNU Wget' && return 0
  if command -v anna-install >/dev/null 2>&1; then
    log "installing GNU wget and the CA certificates (wget-udeb, ca-certificates-udeb)"
    anna-install wget-udeb ca-certificates-udeb || log "anna-install failed: HTTPS will not work"
  fi
}

run_handshake() {
  ensure_http_client
  errors=$(mktemp 2>/dev/null || echo /tmp/fleet-handshake.err)
  sh "$here/handshake.sh" 2>"$errors"
  rc=$?
  cat "$errors" >&2
  if [ "$rc" -ne 0 ]; then
    said=$(sed -n 's/^fleet handshake: //p' "$errors" | tail -n 1 | sed 's/[ .]*$//')
    rm -f "$errors"
    stop_for_good "the fleet handshake failed (exit $rc): ${said:-no message}" "$(advice "$rc" "$said")"
  fi
  rm -f "$errors"
}

blueprint_field() {
  tr -d '\r\n' <"$out/blueprint.json" | sed -E 's/"encryption":\{[^{}]*\}/"encryption":"object"/' |
    sed -n -E 's/.*"partitioning":\{[^{}]*"'"$1"'":"([^"]*)".*/\1/p'
}

# The blueprint's `partitioning.encryption.unlock` (tpm2, passphrase); empty: not encrypted.
blueprint_unlock() {
  tr -d '\r\n' <"$out/blueprint.json" | sed -n -E 's/.*"encryption":\{[^{}]*"unlock":"([a-z0-9]*)".*/\1/p'
}

# The blueprint's `installation.packages` as a space-separated list (names only).
blueprint_packages() {
  tr -d '\r\n' <"$out/blueprint.json" |
    sed -n -E 's/.*"installation":\{.*"packages":\[([^]]*)\].*/\1/p' | tr -d '"' | tr ',' ' ' |
    tr -cd 'a-z0-9.+ -'
}

# The whole disk a block device (a disk or a partition, by its /dev path) belongs to.
disk_of() {
  name=${1#/dev/}
  if [ -e "$sysfs/class/block/$name/partition" ]; then
    basename "$(dirname "$(readlink -f "$sysfs/class/block/$name")")"
  else
    echo "$name"
  fi
}

# The target: the first disk d-i lists that is not removable and not the medium the
# installer booted from (mounted at /cdrom); nothing when there is none.
target_disk() {
  boot=
  medium=$(sed -n 's|^\(/dev/[^ ]*\) /cdrom .*|\1|p' "${FLEET_MOUNTS:-/proc/mounts}" 2>/dev/null | head -n 1)
  [ -n "$medium" ] && boot=$(disk_of "$medium")
  for dev in $(list-devices disk 2>/dev/null); do
    name=${dev#/dev/}
    [ "$(cat "$sysfs/block/$name/removable" 2>/dev/null)" = 1 ] && continue
    [ "$name" = "$boot" ] && continue
    echo "$dev"
    return 0
  done
}

selections() {
  scheme=$(blueprint_field scheme)
  fs=$(blueprint_field root_filesystem)
  case $fs in ext4 | ext3 | xfs | btrfs) ;; *)
    log "unsupported root file system '$fs' in the blueprint"
    return 1 ;;
  esac
  echo "d-i partman/default_filesystem string $fs"
  echo "d-i partman-auto/choose_recipe select atomic"
  case $scheme in
  single)
    echo "d-i partman-auto/method string regular" ;;
  luks-lvm)
    # The passphrase is deliberately not preseeded: partman-crypto asks for it at the console.
    echo "d-i partman-auto/method string crypto"
    echo "d-i partman-auto-lvm/guided_size string max"
    echo "d-i partman-auto-lvm/new_vg_name string fleet"
    echo "d-i partman-auto-crypto/erase_disks boolean false"
    echo "d-i partman-lvm/device_remove_lvm boolean true"
    echo "d-i partman-lvm/confirm boolean true"
    echo "d-i partman-lvm/confirm_nooverwrite boolean true" ;;
  *)
    log "unsupported partitioning scheme '$scheme' in the blueprint"
    return 1 ;;
  esac
  if command -v list-devices >/dev/null 2>&1; then
    disk=$(target_disk)
    if [ -z "$disk" ]; then
      log "no disk to install on: every disk is removable or the installation medium"
      return 2
    fi
    echo "d-i partman-auto/disk string $disk"
  fi
  # The agent's own packages (AGENT_PACKAGES of installer_config.ts), then the template's.
  tpm=
  [ "$(blueprint_unlock)" = tpm2 ] && tpm='clevis clevis-luks clevis-tpm2 clevis-initramfs '
  echo "d-i pkgsel/include string curl git python3 python3-apt ansible-core $tpm$(blueprint_packages)"
  return 0
}

debian_early() {
  run_handshake
  sel=/tmp/fleet-selections.cfg
  selections >"$sel"
  rc=$?
  case $rc in
  0) ;;
  2) stop_for_good "no disk to install on: every disk is removable or the medium this installer booted from" \
    "connect the internal disk (or enable it in the firmware), then boot this stick again" ;;
  *) stop_for_good "the blueprint's partitioning cannot be installed by this image" \
    "fix the template's partitioning in the fleet service, then boot this stick again" ;;
  esac
  debconf-set-selections "$sel" ||
    stop_for_good "the installer refused the partitioning answers" "give the installer's log (/var/log/syslog) to an admin"
  # partman-crypto's passphrase questions (Debian 12's partman-crypto templates:
  # partman-crypto/passphrase, partman-crypto/passphrase-again, both of type password), from a
  # pipe: the install passphrase is in no selections file.
  if [ "$(blueprint_field scheme)" = luks-lvm ]; then
    IFS= read -r passphrase <"$out/install-passphrase" || [ -n "${passphrase:-}" ] ||
      stop_for_good "the blueprint is encrypted but the handshake left no install passphrase" "boot this stick again"
    printf 'd-i partman-crypto/passphrase password %s\nd-i partman-crypto/passphrase-again password %s\n' \
      "$passphrase" "$passphrase" | debconf-set-selections ||
      stop_for_good "the installer refused the disk passphrase" "give the installer's log (/var/log/syslog) to an admin"
    passphrase=
  fi
}

# Writes the install passphrase into subiquity's autoinstall file (FLEET_AUTOINSTALL, default
# /autoinstall.yaml, where subiquity copied the medium's) as the lvm layout's `password`:
# subiquity reads that file again after the early commands (jobs/iso/installer_config.ts
# cites the lines). Shell builtins only, so the passphrase is on no command line.
ubuntu_passphrase() {
  file=${FLEET_AUTOINSTALL:-/autoinstall.yaml}
  [ "$1" = luks-lvm ] || return 0
  IFS= read -r passphrase <"$out/install-passphrase" || [ -n "${passphrase:-}" ] ||
    stop_for_good "the blueprint is encrypted but the handshake left no install passphrase" "boot this stick again"
  umask 077
  if ! {
    while IFS= read -r line || [ -n "$line" ]; do
      case $line in
      '      # password: '*) printf '      password: "%s"\n' "$passphrase" ;;
      *) printf '%s\n' "$line" ;;
      esac
    done <"$file" >"$file.fleet-tmp" && mv -f "$file.fleet-tmp" "$file"
  }; then
    stop_for_good "cannot write the disk passphrase into $file" "give the installer's log to an admin"
  fi
  passphrase=
}

# The Ubuntu image carries its template's storage layout (an Ubuntu image is always bound to
# a template); the blueprint must agree, else the installation stops here.
ubuntu_check() {
  scheme=$(blueprint_field scheme)
  fs=$(blueprint_field root_filesystem)
  if [ "$scheme" != "$1" ] || [ "$fs" != "$2" ]; then
    stop_for_good "the blueprint asks for $scheme/$fs but this image installs $1/$2" "build a new image for the template"
  fi
}

# Subiquity's interactive storage screen lets the person at the console type the passphrase;
# unticking encryption there would silently install plain LVM, so a luks-lvm install without
# its root on LUKS fails here (a failed late command stops subiquity with an error).
ubuntu_check_crypt() {
  target=${1:-/target}
  [ "$(blueprint_field scheme)" = luks-lvm ] || return 0
  root=$(sed -n 's|^\([^ ]*\) '"$target"' .*|\1|p' "${FLEET_MOUNTS:-/proc/mounts}" | tail -n 1)
  dm=$(basename "$(readlink -f "$root" 2>/dev/null || echo "$root")")
  for slave in "$sysfs/block/$dm/slaves/"*; do
    [ -e "$slave" ] || continue
    case $(cat "$sysfs/block/$(basename "$slave")/dm/uuid" 2>/dev/null) in CRYPT-*) return 0 ;; esac
    for inner in "$slave/slaves/"*; do
      case $(cat "$sysfs/block/$(basename "$inner")/dm/uuid" 2>/dev/null) in CRYPT-*) return 0 ;; esac
    done
  done
  log "this template needs an encrypted disk (luks-lvm), but the root file system ($root) is not on LUKS: tick 'Encrypt the LVM group with LUKS' on the storage screen and install again"
  exit 1
}

# The WLAN profile in the form the installed system's network stack reads: NetworkManager
# (a desktop) takes the keyfile; netplan alone (a server) takes the netplan file, bound to
# the first wireless interface (networkd cannot match WLAN by pattern).
install_wlan() {
  target=$1
  if [ -x "$target/usr/sbin/NetworkManager" ] || [ ! -r "$here/wlan.netplan.yaml" ] ||
    { [ ! -x "$target/usr/sbin/netplan" ] && [ ! -d "$target/etc/netplan" ]; }; then
    [ -r "$here/wlan.nmconnection" ] || return 0
    dir="$target/etc/NetworkManager/system-connections"
    mkdir -p "$dir" && cp "$here/wlan.nmconnection" "$dir/fleet-wlan.nmconnection" &&
      chmod 600 "$dir/fleet-wlan.nmconnection" || return 1
    chown 0:0 "$dir/fleet-wlan.nmconnection" 2>/dev/null
    log "WLAN profile installed for NetworkManager"
    return 0
  fi
  wlan_if=
  for dev in "$sysfs/class/net/"*; do
    [ -e "$dev/wireless" ] || [ -e "$dev/phy80211" ] || continue
    wlan_if=$(basename "$dev")
    break
  done
  if [ -z "$wlan_if" ]; then
    log "no wireless interface: the WLAN profile is not installed"
    return 0
  fi
  mkdir -p "$target/etc/netplan" &&
    sed "s/@FLEET_WLAN_INTERFACE@/$wlan_if/" "$here/wlan.netplan.yaml" >"$target/etc/netplan/90-fleet-wlan.yaml" &&
    chmod 600 "$target/etc/netplan/90-fleet-wlan.yaml" || return 1
  chown 0:0 "$target/etc/netplan/90-fleet-wlan.yaml" 2>/dev/null
  log "WLAN profile installed for netplan on $wlan_if"
}

late() {
  target=${1:-/target}
  umask 077
  mkdir -p "$target/etc/fleet" || exit 1
  chmod 700 "$target/etc/fleet"
  for f in agent.json blueprint.json; do
    cp "$out/$f" "$target/etc/fleet/$f" && chmod 600 "$target/etc/fleet/$f" || exit 1
  done
  install_wlan "$target" || exit 1
  chown -R 0:0 "$target/etc/fleet" 2>/dev/null
  log "agent credentials installed into $target/etc/fleet"
  install_agent "$target"
  disk_key "$target"
}

# An encrypted disk gets its recovery key before the first boot (jobs/iso/README.md, Disk
# encryption): made on the device, escrowed with the bootstrap token, then the install
# passphrase's slot is removed. No escrow, no installation: the late command fails.
# The tools run in the installer where it has them, else in the installed system.
disk_key() {
  target=$1
  unlock=$(blueprint_unlock)
  passfile=$out/install-passphrase
  if [ -z "$unlock" ]; then
    rm -f "$passfile"
    return 0
  fi
  [ -r "$passfile" ] || {
    log "the blueprint is encrypted but the handshake left no install passphrase"
    exit 1
  }
  # The installed system's commands run on its own PATH, not the installer's; chrooted, its
  # curl is plain `curl` (a FLEET_CURL naming the target would be looked up inside it).
  in_target="chroot $target /usr/bin/env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  if command -v cryptsetup >/dev/null 2>&1; then
    run='sh'
    tool=$here/agent/fleet-disk-key
    command -v curl >/dev/null 2>&1 || [ -n "${FLEET_CURL:-}" ] || export FLEET_CURL="$in_target curl"
  else
    run="$in_target sh"
    tool=/usr/local/sbin/fleet-disk-key
    unset FLEET_CURL
  fi
  dev=${FLEET_LUKS_DEVICE:-$(blkid -t TYPE=crypto_LUKS -o device 2>/dev/null | head -n 1)}
  [ -n "$dev" ] || {
    log "the blueprint is encrypted but no LUKS volume was found"
    exit 1
  }
  agent=$(tr -d '\r\n' <"$out/agent.json")
  api=$(printf '%s' "$agent" | sed -n 's/.*"base_url":"\([^"]*\)".*/\1/p')/api/v1
  token=$(printf '%s' "$agent" | sed -n 's/.*"bootstrap_token":"\([^"]*\)".*/\1/p')
  IFS= read -r passphrase <"$passfile" || [ -n "$passphrase" ]
  # shellcheck disable=SC2086 # $run is a command with its arguments
  printf '%s\n%s\n' "$token" "$passphrase" | $run "$tool" swap "$api" "$dev" "$unlock"
  rc=$?
  token=
  passphrase=
  if [ "$rc" -ne 0 ]; then
    log "the disk's recovery key was not escrowed: the installation fails (exit $rc)"
    exit 1
  fi
  rm -f "$passfile"
  log "disk recovery key escrowed; the install passphrase no longer opens $dev"
}

# The device agent from the image's /fleet/agent (jobs/iso/README.md, The device agent): the
# program, its python3 steps, its playbook and its systemd unit, enabled by the link
# `systemctl enable` would make; its state folder.
# Nothing here needs the network: the agent starts at the installed system's first boot.
install_agent() {
  agent=$here/agent
  for f in fleet-agent fleet-disk-key fleet_agent_helpers.py site.yml fleet-agent.service; do
    [ -r "$agent/$f" ] || {
      log "the image lacks $agent/$f: the device agent cannot be installed"
      exit 1
    }
  done
  units=$1/etc/systemd/system
  (umask 022 && mkdir -p "$1/usr/local/sbin" "$1/usr/local/share/fleet" "$units/multi-user.target.wants") || exit 1
  put "$agent/fleet-agent" "$1/usr/local/sbin/fleet-agent" 755
  put "$agent/fleet-disk-key" "$1/usr/local/sbin/fleet-disk-key" 755
  put "$agent/fleet_agent_helpers.py" "$1/usr/local/share/fleet/fleet_agent_helpers.py" 644
  put "$agent/site.yml" "$1/usr/local/share/fleet/site.yml" 644
  put "$agent/fleet-agent.service" "$units/fleet-agent.service" 644
  ln -sf /etc/systemd/system/fleet-agent.service "$units/multi-user.target.wants/fleet-agent.service" || exit 1
  mkdir -p "$1/var/lib/fleet" && chmod 700 "$1/var/lib/fleet" || exit 1
  chown 0:0 "$1/usr/local/sbin/fleet-agent" "$1/usr/local/sbin/fleet-disk-key" "$1/usr/local/share/fleet/fleet_agent_helpers.py" \
    "$1/usr/local/share/fleet/site.yml" "$units/fleet-agent.service" "$1/var/lib/fleet" 2>/dev/null
  log "device agent installed into $1 (fleet-agent.service enabled)"
}

# Copies $1 to $2 with mode $3, through a temporary file beside $2.
put() {
  if ! { cp "$1" "$2.fleet-tmp" && chmod "$3" "$2.fleet-tmp" && mv -f "$2.fleet-tmp" "$2"; }; then
    log "cannot install $2"
    exit 1
  fi
}

case ${1:-} in
early) run_handshake ;;
selections) selections ;;
debian-early) debian_early ;;
ubuntu-early)
  run_handshake
  ubuntu_check "${2:-}" "${3:-}"
  ubuntu_passphrase "${2:-}" ;;
ubuntu-check-crypt)
  shift
  ubuntu_check_crypt "$@" ;;
late)
  shift
  late "$@" ;;
*)
  echo "usage: $0 early|debian-early|selections|ubuntu-early SCHEME FS|ubuntu-check-crypt [target]|late [target]" >&2
  exit 2 ;;
esac
