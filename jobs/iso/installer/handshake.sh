#!/bin/sh
# The installer's handshake with the fleet service (jobs/iso/README.md), shipped in every
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
#   FLEET_RETRIES      attempts per request while the service cannot be reached or is busy
#                      (default 6); a wait for 429 or 503 counts as one
#   FLEET_RETRY_DELAY  seconds before the first retry without Retry-After, doubled each time
#                      up to 60 (default 5)
#
# Exit: 0 written; 3 the service refused (403, 409: its message is printed, nothing written);
# 4 the service could not be reached or stayed busy after the retries; 1 this device or
# image cannot run it (no serial, no HTTP client that can reach the service, a 4xx that
# is no refusal).
#
# HTTPS needs curl or GNU wget (in d-i: wget-udeb with ca-certificates-udeb); busybox's
# wget is refused for https:// because it checks no certificates (or has no TLS at all).
# Busybox wget also shows neither the body nor the headers of an error answer: its refusals
# carry only the status, and a 429 or 503 is waited out on the backoff, not Retry-After.
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
if [ -z "$credential" ] || [ -z "$api_url" ]; then die 1 "$config has no credential or api_url"; fi

# Serials that firmware vendors leave unset are useless as an identity.
usable_serial() {
  case $(printf '%s' "$1" | tr '[:upper:]' '[:lower:]') in
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

wget_extra=
wget_gnu=
if command -v curl >/dev/null 2>&1; then
  client=curl
elif command -v wget >/dev/null 2>&1; then
  client=wget
  # GNU wget keeps the body of an error answer only when asked; busybox wget never does, and
  # its builds may lack a timeout option (Debian's 1.35 crashes on -T).
  if wget --version 2>/dev/null | grep -q 'GNU Wget'; then
    wget_gnu=1
    wget_extra='--content-on-error --timeout=30'
  fi
else
  die 1 "neither curl nor wget is available"
fi
case $api_url in
https://*)
  if [ "$client" = wget ] && [ -z "$wget_gnu" ]; then
    die 1 "cannot do HTTPS to $api_url: this system has only busybox wget, which checks no certificates; it needs curl or GNU wget (d-i: wget-udeb and ca-certificates-udeb)"
  fi
  ;;
esac
# Some busybox builds lack --post-file; their --post-data takes the (small) body instead.
wget_post_file=1
[ "$client" = wget ] && [ -z "$wget_gnu" ] && ! wget --help 2>&1 | grep -q -- '--post-file' && wget_post_file=

# Not every installer's busybox has mktemp.
work=$(mktemp -d "${TMPDIR:-/tmp}/fleet-handshake.XXXXXX" 2>/dev/null) ||
  { work=${TMPDIR:-/tmp}/fleet-handshake.$$ && rm -rf "$work" && mkdir "$work"; } ||
  die 1 "cannot create a temporary folder"
trap 'rm -rf "$work"' EXIT
chmod 700 "$work"

# POSTs the file $2 to $1; sets $status (000 when there was no answer), $body and the
# answer's headers in $work/headers.
post_once() {
  rm -f "$work/body" "$work/err" "$work/headers"
  if [ "$client" = curl ]; then
    status=$(curl -sS -o "$work/body" -D "$work/headers" -w '%{http_code}' --connect-timeout 15 \
      --max-time 60 -H 'Content-Type: application/json' --data-binary "@$2" "$1" 2>"$work/err") ||
      status=000
  else
    if [ -n "$wget_post_file" ]; then
      # shellcheck disable=SC2086
      wget -S -O "$work/body" $wget_extra --header 'Content-Type: application/json' \
        --post-file "$2" "$1" 2>"$work/err"
    else
      # shellcheck disable=SC2086
      wget -S -O "$work/body" $wget_extra --header 'Content-Type: application/json' \
        --post-data "$(cat "$2")" "$1" 2>"$work/err"
    fi
    status=$(sed -n -E 's/.*HTTP\/[0-9.]+ ([0-9][0-9][0-9]).*/\1/p' "$work/err" | tail -n 1)
    [ -n "$status" ] || status=000
    cp "$work/err" "$work/headers" 2>/dev/null # wget -S prints the headers on stderr
  fi
  body=$( [ -r "$work/body" ] && tr -d '\r\n' <"$work/body")
}

# Seconds of the answer's Retry-After (a number of seconds; empty when absent or a date).
retry_after() {
  [ -r "$work/headers" ] || return 0
  tr -d '\r' <"$work/headers" | sed -n -E 's/^[[:space:]]*[Rr][Ee][Tt][Rr][Yy]-[Aa][Ff][Tt][Ee][Rr]:[[:space:]]*([0-9]{1,9})[[:space:]]*$/\1/p' |
    tail -n 1
}

# $1 plus up to 10 % of it, so that devices told to wait alike do not come back at once.
# dash has no $RANDOM: the kernel's random uuid gives the digits (the pid where it is absent).
with_jitter() {
  digits=$(tr -dc '0-9' </proc/sys/kernel/random/uuid 2>/dev/null | cut -c1-4)
  r=$(((1${digits:-$$}) % 10000))
  echo $(($1 + $1 * r / 100000))
}

# POSTs with retries while there is no answer, the service errs or is busy (429, 503:
# its Retry-After, at most 300 s); every wait counts against FLEET_RETRIES. Exit 4 when
# the tries run out.
post() {
  attempt=1
  backoff=$delay
  while :; do
    post_once "$1" "$2"
    case $status in
    000 | 500 | 502 | 504) why="no answer from the service (HTTP $status)" ;;
    429 | 503) why="the service is busy (HTTP $status)" ;;
    *) return 0 ;;
    esac
    if [ "$attempt" -ge "$retries" ]; then
      say "$why: giving up on $1 after $attempt attempts $(tr '\n' ' ' <"$work/err" 2>/dev/null | cut -c1-300)"
      exit 4
    fi
    wait_s=
    case $status in 429 | 503) wait_s=$(retry_after) ;; esac
    if [ -n "$wait_s" ]; then
      [ "$wait_s" -le 300 ] || wait_s=300
    else
      wait_s=$backoff
      backoff=$((backoff * 2))
      [ "$backoff" -le 60 ] || backoff=60
    fi
    wait_s=$(with_jitter "$wait_s")
    say "$why, retrying in ${wait_s}s ($attempt/$retries)"
    sleep "$wait_s"
    attempt=$((attempt + 1))
  done
}

# Unless the answer is a 200: exit 3 with the service's message for a refusal (403, 409),
# exit 1 for any other answer (the image and the service do not fit together).
expect_ok() {
  [ "$status" = 200 ] && return 0
  message=$(printf '%s' "$body" | json_str message)
  code=$(printf '%s' "$body" | json_str error)
  [ -n "$message" ] || message="HTTP $status $(sed -n 's/.*\(server returned error: .*\)/\1/p' "$work/err" | tail -n 1)"
  case $status in
  403 | 409)
    say "$1 refused by the service${code:+ ($code)}: $message"
    exit 3 ;;
  esac
  say "$1 failed: the service answered HTTP $status${code:+ ($code)}: $message"
  exit 1
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
# An encrypted template's one-time install passphrase stays in $out (the installer's memory),
# never in blueprint.json, which the late command copies onto the installed system.
passphrase=$(printf '%s' "$body" | json_str install_passphrase)
body=$(printf '%s' "$body" | sed 's/"disk_encryption":{"install_passphrase":"[^"]*"}/"disk_encryption":{}/')
if [ -n "$passphrase" ]; then
  if ! { printf '%s' "$passphrase" >"$work/install-passphrase" && chmod 600 "$work/install-passphrase" &&
    mv -f "$work/install-passphrase" "$out/install-passphrase"; }; then
    die 1 "cannot write into $out"
  fi
fi
passphrase=
if ! { printf '%s\n' "$body" >"$work/blueprint.json" && printf '%s\n' "$agent" >"$work/agent.json" &&
  chmod 600 "$work/blueprint.json" "$work/agent.json" &&
  mv -f "$work/blueprint.json" "$out/blueprint.json" && mv -f "$work/agent.json" "$out/agent.json"; }; then
  die 1 "cannot write into $out"
fi
say "device $device_id provisioned with template $template"
exit 0
