#!/bin/sh
# The installer side of a personalized image, shipped as /fleet/install.sh and called by
# the Debian preseed (/preseed.cfg) and the Ubuntu autoinstall (/autoinstall.yaml).
#
#   install.sh early            handshake; exits non-zero (and so aborts the installation
#                               before the disk is touched) unless it succeeded
#   install.sh debian-early     early, then partitioning and packages from the blueprint
#                               into debconf (d-i's partman/early_command)
#   install.sh selections       the debconf selections of the blueprint (debian-early's input)
#   install.sh ubuntu-early SCHEME FS
#                               early, then checks that the blueprint's partitioning is the
#                               one the image's autoinstall file carries
#   install.sh late [TARGET]    agent.json, blueprint.json and the WLAN profile into the
#                               installed system (default /target), all 0600 root; and the
#                               device agent from ./agent/ with its enabled systemd unit
#
# Environment: FLEET_OUT (default /run/fleet) and the handshake's own (handshake.sh).
set -u

here=$(dirname "$0")
out=${FLEET_OUT:-/run/fleet}
export FLEET_OUT="$out"
export FLEET_CONFIG="${FLEET_CONFIG:-$here/provisioning.json}"

log() { printf 'fleet: %s\n' "$*" >&2; }

blueprint_field() {
  tr -d '\r\n' <"$out/blueprint.json" |
    sed -n -E 's/.*"partitioning":\{[^{}]*"'"$1"'":"([^"]*)".*/\1/p'
}

# The blueprint's `installation.packages` as a space-separated list (names only).
blueprint_packages() {
  tr -d '\r\n' <"$out/blueprint.json" |
    sed -n -E 's/.*"installation":\{.*"packages":\[([^]]*)\].*/\1/p' | tr -d '"' | tr ',' ' ' |
    tr -cd 'a-z0-9.+ -'
}

run_handshake() {
  sh "$here/handshake.sh"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    log "the handshake failed (exit $rc): installation stopped before partitioning"
    exit "$rc"
  fi
}

selections() {
  scheme=$(blueprint_field scheme)
  fs=$(blueprint_field root_filesystem)
  case $fs in ext4 | ext3 | xfs | btrfs) ;; *)
    log "unsupported root file system '$fs' in the blueprint"
    exit 1 ;;
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
    echo "d-i partman-crypto/erase_disks boolean false"
    echo "d-i partman-lvm/device_remove_lvm boolean true"
    echo "d-i partman-lvm/confirm boolean true"
    echo "d-i partman-lvm/confirm_nooverwrite boolean true" ;;
  *)
    log "unsupported partitioning scheme '$scheme' in the blueprint"
    exit 1 ;;
  esac
  if command -v list-devices >/dev/null 2>&1; then
    disk=$(list-devices disk | head -n 1)
    [ -n "$disk" ] && echo "d-i partman-auto/disk string $disk"
  fi
  packages=$(blueprint_packages)
  [ -n "$packages" ] && echo "d-i pkgsel/include string $packages"
  return 0
}

# The Ubuntu image carries its template's storage layout (an Ubuntu image is always bound to
# a template); the blueprint must agree, else the installation stops here.
ubuntu_check() {
  scheme=$(blueprint_field scheme)
  fs=$(blueprint_field root_filesystem)
  if [ "$scheme" != "$1" ] || [ "$fs" != "$2" ]; then
    log "the blueprint asks for $scheme/$fs but this image installs $1/$2: build a new image"
    exit 1
  fi
}

late() {
  target=${1:-/target}
  umask 077
  mkdir -p "$target/etc/fleet" || exit 1
  chmod 700 "$target/etc/fleet"
  for f in agent.json blueprint.json; do
    cp "$out/$f" "$target/etc/fleet/$f" && chmod 600 "$target/etc/fleet/$f" || exit 1
  done
  if [ -r "$here/wlan.nmconnection" ]; then
    dir="$target/etc/NetworkManager/system-connections"
    mkdir -p "$dir" && cp "$here/wlan.nmconnection" "$dir/fleet-wlan.nmconnection" &&
      chmod 600 "$dir/fleet-wlan.nmconnection" || exit 1
  fi
  chown -R 0:0 "$target/etc/fleet" "$target/etc/NetworkManager/system-connections/fleet-wlan.nmconnection" 2>/dev/null
  log "agent credentials installed into $target/etc/fleet"
  install_agent "$target"
}

# The device agent from the image's /fleet/agent (CONTRACT §18): the program, its playbook
# and its systemd unit, enabled by the link `systemctl enable` would make; its state folder.
# Nothing here needs the network: the agent starts at the installed system's first boot.
install_agent() {
  agent=$here/agent
  for f in fleet-agent site.yml fleet-agent.service; do
    [ -r "$agent/$f" ] || {
      log "the image lacks $agent/$f: the device agent cannot be installed"
      exit 1
    }
  done
  units=$1/etc/systemd/system
  (umask 022 && mkdir -p "$1/usr/local/sbin" "$1/usr/local/share/fleet" "$units/multi-user.target.wants") || exit 1
  put "$agent/fleet-agent" "$1/usr/local/sbin/fleet-agent" 755
  put "$agent/site.yml" "$1/usr/local/share/fleet/site.yml" 644
  put "$agent/fleet-agent.service" "$units/fleet-agent.service" 644
  ln -sf /etc/systemd/system/fleet-agent.service "$units/multi-user.target.wants/fleet-agent.service" || exit 1
  mkdir -p "$1/var/lib/fleet" && chmod 700 "$1/var/lib/fleet" || exit 1
  chown 0:0 "$1/usr/local/sbin/fleet-agent" "$1/usr/local/share/fleet/site.yml" "$units/fleet-agent.service" \
    "$1/var/lib/fleet" 2>/dev/null
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
debian-early)
  run_handshake
  selections >/tmp/fleet-selections.cfg || exit 1
  debconf-set-selections /tmp/fleet-selections.cfg ;;
ubuntu-early)
  run_handshake
  ubuntu_check "${2:-}" "${3:-}" ;;
late)
  shift
  late "$@" ;;
*)
  echo "usage: $0 early|debian-early|selections|ubuntu-early SCHEME FS|late [target]" >&2
  exit 2 ;;
esac
