#!/usr/bin/env bash
# Remasters the installer base image into a personalized ISO 9660 image with xorriso.
# Run by the build_iso task (jobs/tasks/build_iso.ts); usable by hand for debugging.
#
# Input, from the environment only (no secrets: the personalized files already sit in a
# private staging folder, so no credential reaches a command line or this environment):
#   FLEET_ISO_BASE       the base installer image; empty: the development base image
#   FLEET_ISO_BACKEND    debian or ubuntu: which installer the image is (default debian)
#   FLEET_ISO_BOOT_FILES paths the boot entries start (kernel, initrd): must be in the base
#   FLEET_ISO_DEV_BASE   where the development base image is cached (made when missing)
#   FLEET_ISO_STAGING    folder laid over the image's root: /fleet, the answer file, boot entries
#   FLEET_ISO_OUTPUT     the image to write; must not exist yet
#
# Output protocol, one item a line on stdout: "PROGRESS <0-100>", "WARNING <text>".
# Failures: "ERROR <text>" on stderr and a non-zero exit (2 usage, 3 no xorriso,
# 4 unusable base image, 5 xorriso failed, 6 the result does not check out).
set -euo pipefail
export LC_ALL=C
# Images carry the activation code and WLAN password: readable by the service's user only,
# from creation on (the development base image and every temporary included).
umask 077

fail() {
  local code=$1
  shift
  echo "ERROR $*" >&2
  exit "$code"
}
progress() { echo "PROGRESS $1"; }

: "${FLEET_ISO_STAGING:?}" "${FLEET_ISO_OUTPUT:?}"
base=${FLEET_ISO_BASE:-}
backend=${FLEET_ISO_BACKEND:-debian}
read -r -a boot_files <<<"${FLEET_ISO_BOOT_FILES:-}"
[[ -d $FLEET_ISO_STAGING ]] || fail 2 "staging folder $FLEET_ISO_STAGING does not exist"
[[ -e $FLEET_ISO_OUTPUT ]] && fail 2 "output $FLEET_ISO_OUTPUT exists already"

command -v xorriso >/dev/null 2>&1 ||
  fail 3 "xorriso is not installed on the build host (install the xorriso package)"
progress 5

# Is the file an ISO 9660 image? Its primary volume descriptor says "CD001" at byte 32769.
# xorriso itself would take a missing or foreign file for blank media and carry on.
is_iso9660() {
  [[ $(dd if="$1" bs=1 skip=32769 count=5 2>/dev/null) == CD001 ]]
}

# Runs xorriso, turning its "Writing: ... NN.N%" reports into PROGRESS lines between $1 and $2;
# everything else it says goes to stderr, for the task's log.
run_xorriso() {
  local from=$1 to=$2
  shift 2
  xorriso -abort_on FAILURE -return_with SORRY 32 "$@" 2>&1 | while IFS= read -r line; do
    if [[ $line =~ UPDATE\ :\ Writing:\ +[0-9]+s\ +([0-9]+)(\.[0-9]+)?% ]]; then
      progress $((from + (to - from) * BASH_REMATCH[1] / 100))
    else
      echo "xorriso: $line" >&2
    fi
  done
}

if [[ -z $base ]]; then
  : "${FLEET_ISO_DEV_BASE:?}"
  base=$FLEET_ISO_DEV_BASE
  echo "WARNING ISO_BASE_IMAGE is not set (nor ISO_BASE_IMAGE_${backend^^}):" \
    "using a development $backend base image (valid ISO 9660, not bootable)"
  if ! is_iso9660 "$base"; then
    # Built beside the cache under a temporary name and renamed, so concurrent builds
    # never read a half-written base image.
    tree=$(mktemp -d "${FLEET_ISO_DEV_BASE}.tree.XXXXXX")
    trap 'rm -rf "$tree" "$base.$$.tmp"' EXIT
    cat >"$tree/README.TXT" <<EOF
Fleet development base image ($backend).

This is NOT an installer: it stands in for the $backend installer image on development hosts
so that personalized builds work end to end. It is a valid ISO 9660 image and not bootable;
its kernel and initrd are placeholders at the paths of the real installer, so that the boot
entries the build writes can be checked.
EOF
    mkdir -p "$tree/.disk" "$tree/boot/grub"
    echo "Fleet development base image ($backend)" >"$tree/.disk/info"
    echo "# the installer's own boot menu (replaced by the build)" >"$tree/boot/grub/grub.cfg"
    if [[ $backend == debian ]]; then
      mkdir -p "$tree/isolinux"
      echo "# the installer's own boot menu (replaced by the build)" >"$tree/isolinux/isolinux.cfg"
    fi
    for f in "${boot_files[@]}"; do
      mkdir -p "$tree$(dirname "$f")"
      echo "placeholder for $f" >"$tree$f"
    done
    run_xorriso 10 20 -outdev "$base.$$.tmp" -volid "FLEET_DEV_${backend^^}" -joliet on -map "$tree" / -commit ||
      fail 5 "xorriso could not create the development base image"
    mv -f "$base.$$.tmp" "$base"
    rm -rf "$tree"
    trap - EXIT
  fi
fi

[[ -f $base ]] || fail 4 "base image $base does not exist or is not a regular file"
[[ -r $base ]] || fail 4 "base image $base is not readable"
is_iso9660 "$base" || fail 4 "base image $base is not an ISO 9660 image"
# The boot entries written by the build start these: a base without them is another installer.
if ((${#boot_files[@]} > 0)); then
  found=$(xorriso -indev "$base" -find / -type f 2>/dev/null) || fail 4 "base image $base cannot be read"
  for f in "${boot_files[@]}"; do
    grep -qxF "'$f'" <<<"$found" || fail 4 "base image $base is not a $backend installer image: it has no $f"
  done
fi
progress 20

# A new image from the base's tree with the staging folder laid over its root. "-boot_image any replay" carries the
# base's boot equipment (El Torito, hybrid MBR/GPT) over, so an installer stays bootable.
run_xorriso 25 90 \
  -indev "$base" -outdev "$FLEET_ISO_OUTPUT" \
  -boot_image any replay \
  -map "$FLEET_ISO_STAGING" / \
  -commit ||
  fail 5 "xorriso could not write the personalized image"
progress 92

is_iso9660 "$FLEET_ISO_OUTPUT" || fail 6 "the written image is not an ISO 9660 image"
xorriso -indev "$FLEET_ISO_OUTPUT" -find /fleet -name provisioning.json 2>/dev/null | grep -q "^'/fleet/provisioning.json'$" ||
  fail 6 "the written image does not contain /fleet/provisioning.json"
progress 98
