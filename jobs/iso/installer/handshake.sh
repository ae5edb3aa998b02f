#!/bin/sh
# The installer's handshake with the fleet service (CONTRACT §5 and §10), shipped in every
# personalized image as /fleet/handshake.sh and run by the Debian preseed or the Ubuntu
# autoinstall before the disk is touched.
#
# POSIX sh for dash and busybox ash; needs only curl or wget (plus sed, tr, mkdir, mv).
# The installer environments have no jq, so the service's compact JSON is read with sed:
# only keys that occur once in an answer are read, and the agent object (the last, flat
# object of the Runtime Blueprint) is taken verbatim.
#
# Environment:
#   FLEET_CONFIG       provisioning.json (default: beside this script)
#   FLEET_SERIAL       the device serial (default: DMI product_serial, else product_uuid)
#   FLEET_OUT          output folder (default /run/fleet): blueprint.json, agent.json (0600)
#   FLEET_RETRIES      attempts per request while the service cannot be reached (default 6)
#   FLEET_RETRY_DELAY  seconds before the first retry, doubled each time up to 60 (default 5)
#
# Exit: 0 written; 3 the service refused (its message is printed, nothing written);
# 4 the service could not be reached after the retries; 1 this device or image cannot run it.
set -u

here=$(dirname "$0")
config=${FLEET_CONFIG:-$here/provisioning.json}
out=${FLEET_OUT:-/run/fleet}
retries=${FLEET_RETRIES:-6}
delay=${FLEET_RETRY_DELAY:-5}

say() { printf 'fleet handshake: %s\n' "$*" >&2; }
die() {
  code=$1
  shift
  say "$*"
  exit "$code"
}

# The value of string field $1 in the one-line JSON on stdin (the last occurrence), with
# \" and \\ unescaped; empty when absent or not a string.
json_str() {
  sed -n -E 's/.*"'"$1"'"[[:space:]]*:[[:space:]]*"(([^"\\]|\\.)*)".*/\1/p' | sed -e 's/\\"/"/g' -e 's/\\\\/\\/g'
}

# A JSON string literal of $1: backslash and quote escaped, control characters dropped.
json_quote() {
  printf '"%s"' "$(printf '%s' "$1" | tr -d '\000-\037' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"
}

[ -r "$config" ] || die 1 "cannot read the image's provisioning file $config"
conf=$(tr -d '\r\n' <"$config")
credential=$(printf '%s' "$conf" | json_str credential)
api_url=$(printf '%s' "$conf" | json_str api_url)
image_template=$(printf '%s' "$conf" | json_str template_id)
[ -n "$credential" ] && [ -n "$api_url" ] || die 1 "$config has no credential or api_url"

# Serials that firmware vendors leave unset are useless as an identity.
usable_serial() {
  case $(printf '%s' "$1" | tr 'A-Z' 'a-z') in
  '' | 0 | none | 'not specified' | 'default string' | 'to be filled by o.e.m.' | 'system serial number' | \
    '0123456789' | 'not applicable' | '00000000-0000-0000-0000-000000000000' | 'ffffffff-ffff-ffff-ffff-ffffffffffff')
    return 1 ;;
  esac
  return 0
}
read_dmi() { [ -r "$1" ] && tr -d '\000-\037' <"$1" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//'; }

serial=${FLEET_SERIAL:-}
if [ -z "$serial" ]; then
  serial=$(read_dmi /sys/class/dmi/id/product_serial)
  usable_serial "$serial" || serial=$(read_dmi /sys/class/dmi/id/product_uuid)
  usable_serial "$serial" || serial=
fi
[ -n "$serial" ] || die 1 "no usable serial (DMI product_serial and product_uuid are empty): set FLEET_SERIAL"
serial=$(printf '%s' "$serial" | cut -c1-128)

if command -v curl >/dev/null 2>&1; then
  client=curl
elif command -v wget >/dev/null 2>&1; then
  client=wget
  wget_extra=
  # GNU wget keeps the body of an error answer only when asked; busybox wget never does, and
  # its builds may lack a timeout option (Debian's 1.35 crashes on -T).
  wget --help 2>&1 | grep -q -- '--content-on-error' && wget_extra='--content-on-error --timeout=30'
else
  die 1 "neither curl nor wget is available"
fi

# Not every installer's busybox has mktemp.
work=$(mktemp -d "${TMPDIR:-/tmp}/fleet-handshake.XXXXXX" 2>/dev/null) ||
  { work=${TMPDIR:-/tmp}/fleet-handshake.$$ && rm -rf "$work" && mkdir "$work"; } ||
  die 1 "cannot create a temporary folder"
trap 'rm -rf "$work"' EXIT
chmod 700 "$work"

# POSTs the file $2 to $1; sets $status (000 when there was no answer) and $body.
post_once() {
  rm -f "$work/body" "$work/err"
  if [ "$client" = curl ]; then
    status=$(curl -sS -o "$work/body" -w '%{http_code}' --connect-timeout 15 --max-time 60 \
      -H 'Content-Type: application/json' --data-binary "@$2" "$1" 2>"$work/err") || status=000
  else
    # shellcheck disable=SC2086
    wget -S -O "$work/body" $wget_extra --header 'Content-Type: application/json' \
      --post-file "$2" "$1" 2>"$work/err"
    status=$(sed -n -E 's/.*HTTP\/[0-9.]+ ([0-9][0-9][0-9]).*/\1/p' "$work/err" | tail -n 1)
    [ -n "$status" ] || status=000
  fi
  body=$( [ -r "$work/body" ] && tr -d '\r\n' <"$work/body")
}

# POSTs with retries while there is no answer or the service is temporarily unavailable.
post() {
  attempt=1
  wait_s=$delay
  while :; do
    post_once "$1" "$2"
    case $status in
    000 | 502 | 503 | 504) ;;
    *) return 0 ;;
    esac
    if [ "$attempt" -ge "$retries" ]; then
      say "no answer from $1 after $attempt attempts: $(tr '\n' ' ' <"$work/err" 2>/dev/null)"
      exit 4
    fi
    say "no answer from the service (HTTP $status), retrying in ${wait_s}s ($attempt/$retries)"
    sleep "$wait_s"
    attempt=$((attempt + 1))
    wait_s=$((wait_s * 2))
    [ "$wait_s" -le 60 ] || wait_s=60
  done
}

# Exit 3 with the service's message unless the answer is a 200.
expect_ok() {
  [ "$status" = 200 ] && return 0
  message=$(printf '%s' "$body" | json_str message)
  code=$(printf '%s' "$body" | json_str error)
  [ -n "$message" ] || message="HTTP $status $(sed -n 's/.*\(server returned error: .*\)/\1/p' "$work/err" | tail -n 1)"
  say "$1 refused by the service${code:+ ($code)}: $message"
  exit 3
}

printf '{"code":%s,"serial":%s}' "$(json_quote "$credential")" "$(json_quote "$serial")" >"$work/activate.json"
post "$api_url/activate" "$work/activate.json"
expect_ok activation
device_id=$(printf '%s' "$body" | json_str device_id)
template=${image_template:-$(printf '%s' "$body" | json_str default_template_id)}
case $device_id$template in
*[!0-9a-fA-F-]* | '') die 1 "the activation answer lacks a device or template id" ;;
esac

printf '{"code":%s,"device_id":"%s"}' "$(json_quote "$credential")" "$device_id" >"$work/resolve.json"
post "$api_url/templates/$template/resolve" "$work/resolve.json"
expect_ok "resolve of template $template"
agent=$(printf '%s' "$body" | sed -n 's/.*"agent":\({[^{}]*}\).*/\1/p')
[ -n "$agent" ] || die 1 "the Runtime Blueprint has no agent object"

umask 077
mkdir -p "$out" || die 1 "cannot create $out"
printf '%s\n' "$body" >"$work/blueprint.json" && printf '%s\n' "$agent" >"$work/agent.json" &&
  chmod 600 "$work/blueprint.json" "$work/agent.json" &&
  mv -f "$work/blueprint.json" "$out/blueprint.json" && mv -f "$work/agent.json" "$out/agent.json" ||
  die 1 "cannot write into $out"
say "device $device_id provisioned with template $template"
exit 0
