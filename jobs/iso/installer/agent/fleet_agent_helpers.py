"""The JSON and state steps of fleet-agent, one subcommand each:

    python3 fleet_agent_helpers.py STEP ARGS...

fleet-agent (POSIX sh) does the requests, the waits and the logging; these steps read the
configuration and the service's answers, write the request bodies and the agent's state
files, sum up an apply, tell whether a desired state is the one last applied and collect
the software inventory. Arguments are paths and plain words (never secrets); every file
written is private and replaced atomically. A step that fails exits 1 with one line on
stderr, named after the step; `outcomes` exits 5 when a role failed. Standard library only,
and python3-apt (apt_pkg, apt) for the pending upgrades and applying them: the device has
the distribution's python3 and nothing else. The device actions' steps also run a script
and write the result bodies.
"""

import glob
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time

UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
ROLE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$")
SECRET = re.compile(r"^[A-Za-z0-9_-]{16,512}$")


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def load_or_empty(path):
    """A state file of the agent's own; missing or unreadable counts as empty."""
    try:
        return load(path)
    except (OSError, ValueError):
        return {}


def write_atomic(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.rename(tmp, path)


def one_line(text, limit=500):
    return re.sub(r"[\x00-\x1f\x7f]+", " ", str(text)).strip()[:limit]


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def hardware():
    """What the service keeps of this machine: DMI, CPU, memory, disks, OS and kernel."""
    hw = {}
    dmi = {}
    for key in ("sys_vendor", "product_name", "product_version", "product_serial", "product_uuid",
                "board_name", "bios_version"):
        value = read("/sys/class/dmi/id/" + key)
        if value:
            dmi[key] = one_line(value, 200)
    hw["dmi"] = dmi
    cpu = {"cores": os.cpu_count()}
    for line in (read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            cpu["model"] = one_line(line.split(":", 1)[1], 200)
            break
    hw["cpu"] = cpu
    for line in (read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            hw["memory_mb"] = int(line.split()[1]) // 1024
    disks = []
    try:
        names = sorted(os.listdir("/sys/block"))
    except OSError:
        names = []
    for name in names:
        if name.startswith(("loop", "ram", "zram", "dm-", "sr", "md", "nbd")):
            continue
        size = read("/sys/block/%s/size" % name)
        disk = {"name": name, "size_gb": int(size) * 512 // 10**9 if size and size.isdigit() else None}
        model = read("/sys/block/%s/device/model" % name)
        if model:
            disk["model"] = one_line(model, 200)
        disks.append(disk)
    hw["disks"] = disks[:64]
    for line in (read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            hw["os"] = one_line(line.split("=", 1)[1].strip("\""), 200)
    uname = os.uname()
    hw["kernel"] = uname.release
    hw["hostname"] = uname.nodename
    return hw


def conf(conf_path):
    """Checks agent.json; prints the base URL, the device id and "token" or "none"."""
    c = load(conf_path)
    base, device = c.get("base_url"), c.get("device_id")
    if not isinstance(base, str) or not re.match(r"^https?://[^\s]+$", base):
        sys.exit("agent.json: base_url is not an http(s) URL")
    if not isinstance(device, str) or not UUID.match(device):
        sys.exit("agent.json: device_id is not a UUID")
    token = c.get("bootstrap_token")
    print(base.rstrip("/"))
    print(device)
    print("token" if isinstance(token, str) and token else "none")


def bootstrap_body(conf_path, out_path):
    c = load(conf_path)
    body = {"device_id": c["device_id"], "bootstrap_token": c["bootstrap_token"], "hardware": hardware()}
    write_atomic(out_path, json.dumps(body))


def hardware_json(out_path):
    """The hardware as JSON (fleet-agent keeps it and puts it into the check-in's body)."""
    write_atomic(out_path, json.dumps(hardware()))


def secret(answer_path, secret_path, device_id):
    """Keeps the agent secret of a bootstrap answer for this device."""
    answer = load(answer_path)
    value = answer.get("agent_secret")
    if answer.get("device_id") != device_id or not isinstance(value, str) or not SECRET.match(value):
        sys.exit("the bootstrap answer has no usable agent secret")
    write_atomic(secret_path, value + "\n")


def drop_token(conf_path):
    """Removes the used bootstrap token from agent.json."""
    c = load(conf_path)
    c.pop("bootstrap_token", None)
    write_atomic(conf_path, json.dumps(c) + "\n")


def error(answer_path):
    """The service's error answer as one line, whatever the answer holds."""
    try:
        answer = load(answer_path)
        print(one_line("%s: %s" % (answer.get("error", "error"), answer.get("message", "")), 300))
    except (OSError, ValueError, AttributeError):
        print("no error message")


def answer(desired_path, vars_path, results_path, work_path):
    """Checks a check-in answer and writes the playbook's variables; prints the role
    repository's URL and the poll interval (at least 5 seconds)."""
    desired = load(desired_path)
    for b in desired["blueprints"] + desired["auftraege"]:
        if not isinstance(b.get("ansible_role"), str) or not ROLE.match(b["ansible_role"]):
            sys.exit("the check-in names an unusable role %r" % (b.get("ansible_role"),))
    url, interval = desired["repository_url"], desired["poll_interval_seconds"]
    if not isinstance(url, str) or re.search(r"\s", url) or url.startswith("-") or not isinstance(interval, int):
        sys.exit("the check-in answer is not understood")
    variables = {"fleet_blueprints": desired["blueprints"], "fleet_auftraege": desired["auftraege"],
                 "fleet_results": results_path, "fleet_work": work_path}
    write_atomic(vars_path, json.dumps(variables))
    wanted = "wanted" if desired.get("inventory") == "wanted" else "-"
    hours = desired.get("inventory_refresh_hours", 6)
    if not isinstance(hours, int) or isinstance(hours, bool) or hours < 1:
        hours = 6
    print(url)
    print(max(5, interval))
    print(wanted)
    print(hours)


def items_of(desired):
    """The roles of a desired state in the playbook's order: blueprints, then orders."""
    items = [{"merkmal": b["merkmal"], "ansible_role": b["ansible_role"], "state": "present", "optionen": {},
              "kind": "blueprint"} for b in desired["blueprints"]]
    items += [{"merkmal": a["merkmal"], "ansible_role": a["ansible_role"], "state": a["state"],
               "optionen": a.get("optionen") or {}, "kind": "auftrag"} for a in desired["auftraege"]]
    return items


def outcomes(results_path, log_path, desired_path, reported_path, out_path, which="new"):
    """The report of an apply; exit 5 on any failure. With "every" (an apply of a new desired
    state) an entry for every order, so a change that leaves an outcome as it was is still
    confirmed; with "new" (the same state applied again) only outcomes that are new since the
    last accepted report, and failures."""
    if which not in ("every", "new"):
        raise ValueError("which orders to report: every or new, not %r" % (which,))
    items = items_of(load(desired_path))
    try:
        results = {r["index"]: r for r in load(results_path)}
    except (OSError, ValueError, KeyError, TypeError):
        results = {}
    log_lines = (read(log_path) or "").splitlines()
    changed, current = set(), None
    for line in log_lines:
        m = re.search(r"fleet-item-(begin|end) (\d+)", line)
        if m:
            current = int(m.group(2)) if m.group(1) == "begin" else None
        elif current is not None and "| CHANGED" in line:
            changed.add(current)
    tail = one_line(" ".join(log_lines[-5:])) or "the playbook did not run"
    reported = load_or_empty(reported_path)
    entries, failed = [], []
    for i, item in enumerate(items):
        result = results.get(i)
        ok = bool(result and result.get("ok"))
        message = None if ok else one_line(result.get("message") if result else "the playbook stopped: " + tail)
        if not ok:
            failed.append("%s (%s)" % (item["ansible_role"], message))
        if item["kind"] != "auftrag":
            continue
        present = item["state"] == "present"
        event = ("applied" if ok else "apply_failed") if present else ("removed" if ok else "remove_failed")
        outcome = "%s|%s|%s" % (event, item["ansible_role"], json.dumps(item["optionen"], sort_keys=True))
        if ok and which == "new" and reported.get(item["merkmal"]) == outcome:
            continue
        entries.append({"merkmal": item["merkmal"], "event": event,
                        "detail": {"role": item["ansible_role"], "changed": i in changed, "message": message},
                        "_outcome": outcome})
    if entries:
        body = {"entries": [{k: v for k, v in e.items() if k != "_outcome"} for e in entries[:500]],
                "outcomes": {e["merkmal"]: e["_outcome"] for e in entries[:500]}}
        write_atomic(out_path, json.dumps(body))
    print("%d roles applied, %d failed%s; %d to report" % (
        len(items) - len(failed), len(failed), (": " + "; ".join(failed))[:1000] if failed else "", len(entries)))
    sys.exit(5 if failed else 0)


def canonical(blueprints, auftraege, commit):
    """What an apply puts on the device, as one text: the blueprints and the orders (each
    item with its keys sorted, the items in a sorted order) and the roles' commit. Equal
    states give equal texts whatever the order of keys or items in the answer."""
    def items(values):
        if not isinstance(values, list):
            raise ValueError("blueprints and auftraege must be lists")
        return sorted(json.dumps(v, sort_keys=True) for v in values)
    return json.dumps({"blueprints": items(blueprints), "auftraege": items(auftraege), "commit": commit},
                      sort_keys=True)


def record_applied(desired_path, commit, record_path):
    """Records what an apply that succeeded put on the device: the desired state's blueprints
    and orders and the roles' commit (compared by `same-as-applied`)."""
    desired = load(desired_path)
    canonical(desired["blueprints"], desired["auftraege"], commit)
    record = {"blueprints": desired["blueprints"], "auftraege": desired["auftraege"], "commit": commit}
    write_atomic(record_path, json.dumps(record, sort_keys=True) + "\n")


def same_as_applied(desired_path, commit, record_path):
    """Prints "same" when the desired state, with the roles at `commit`, is what the last
    successful apply recorded, else "changed" (also with no record, or no commit known)."""
    desired = load(desired_path)
    mine = canonical(desired["blueprints"], desired["auftraege"], commit)
    record = load_or_empty(record_path)
    try:
        last = canonical(record["blueprints"], record["auftraege"], record["commit"])
    except (KeyError, TypeError, ValueError):
        last = None
    print("same" if commit and mine == last else "changed")


def report_body(spooled_path, out_path):
    """The body to send for a spooled report (its entries, not its outcomes)."""
    spooled = load(spooled_path)
    write_atomic(out_path, json.dumps({"entries": spooled["entries"]}))


def accepted(spooled_path, reported_path):
    """Records the outcomes of a report the service took, so they are not reported again."""
    spooled = load(spooled_path)
    reported = load_or_empty(reported_path)
    reported.update(spooled.get("outcomes", {}))
    write_atomic(reported_path, json.dumps(reported, sort_keys=True))


LUKS_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
RECOVERY_KEY = re.compile(r"^[cbdefghijklnrtuv]{8}(-[cbdefghijklnrtuv]{8}){7}$")


def take_rotation(answer_path):
    """Takes the disk key rotation out of a check-in answer (which is kept as the desired
    state: no key may stay in a file) and prints it for the agent as one line: key id,
    LUKS UUID, revealed key. Prints nothing when there is none."""
    desired = load(answer_path)
    rotation = desired.pop("disk_key_rotation", None)
    write_atomic(answer_path, json.dumps(desired))
    if not rotation:
        return
    key_id, luks_uuid, key = rotation["key_id"], rotation["luks_uuid"], rotation["recovery_key"]
    if not (UUID.match(key_id) and LUKS_UUID.match(luks_uuid) and RECOVERY_KEY.match(key)):
        raise ValueError("the disk key rotation is not understood")
    print("%s %s %s" % (key_id, luks_uuid, key))


def poll(desired_path):
    """The poll interval of the kept desired state."""
    print(int(load(desired_path)["poll_interval_seconds"]))


# -- the software inventory
#
# The body of PUT /agent/inventory: the installed packages (dpkg-query), the OS
# (/etc/os-release), the running kernel, the pending upgrades from the apt lists the device
# has, and whether a reboot is needed. Its hash is SHA-256 of the UTF-8 bytes of its RFC 8785
# (JSON Canonicalization Scheme) form without "hash", packages sorted by name then arch and
# pending by name: the service computes the same and asks for the body only when it differs.

DPKG_FORMAT = "${Package}\t${Architecture}\t${Version}\t${source:Package}\t${source:Version}\t${db:Status-Status}\n"
# Known to dpkg but without files of the package on disk.
NOT_INSTALLED = ("config-files", "not-installed")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _jcs_string(s):
    out = ['"']
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch < " ":
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def jcs(value):
    """RFC 8785 canonical JSON of null, booleans, integers, strings, lists and objects: object
    keys sorted by their UTF-16 code units, no whitespace, strings with only the escapes
    RFC 8785 names (other characters as they are). Floats are refused: the inventory has none,
    and their ECMAScript form is not needed."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        if abs(value) > 2**53 - 1:
            raise ValueError("integer beyond the exact range of a JSON number: %d" % value)
        return str(value)
    if isinstance(value, str):
        return _jcs_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    if isinstance(value, dict):
        for k in value:
            if not isinstance(k, str):
                raise ValueError("object keys must be strings")
        keys = sorted(value, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
        return "{" + ",".join(_jcs_string(k) + ":" + jcs(value[k]) for k in keys) + "}"
    raise ValueError("no canonical JSON for %s" % type(value).__name__)


def inventory_hash(body):
    """The inventory's hash: lowercase hex SHA-256 of the canonical JSON of the body without "hash"."""
    rest = {k: v for k, v in body.items() if k != "hash"}
    return hashlib.sha256(jcs(rest).encode("utf-8")).hexdigest()


def os_release(path="/etc/os-release"):
    """ID, VERSION_ID and VERSION_CODENAME of os-release(5) (shell-style values)."""
    fields = {}
    for line in (read(path) or "").splitlines():
        m = re.match(r"^([A-Z0-9_]+)=(.*)$", line.strip())
        if not m:
            continue
        value = m.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            quote, value = value[0], value[1:-1]
            if quote == '"':
                value = re.sub(r'\\([\\$"`])', r"\1", value)
        fields[m.group(1)] = value
    return {"id": fields.get("ID", "linux"), "version_id": fields.get("VERSION_ID", ""),
            "codename": fields.get("VERSION_CODENAME", "")}


def packages(dpkg_dir):
    """The installed packages, as dpkg knows them, sorted by name then architecture."""
    out = subprocess.run(["dpkg-query", "--admindir=" + dpkg_dir, "-W", "-f=" + DPKG_FORMAT],
                         check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout.decode("utf-8", "replace")
    found = []
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) != 6 or parts[5] in NOT_INSTALLED or not parts[2]:
            continue
        name, arch, version, source, source_version = parts[:5]
        found.append({"name": name, "version": version, "arch": arch,
                      "source": source or name, "source_version": source_version or version})
    found.sort(key=lambda p: (p["name"], p["arch"]))
    return found


def is_security(package_file):
    """Whether an apt package file (one Release of the lists) is a distribution's security
    suite: its suite (archive) or codename ends in "-security" (Debian's bookworm-security,
    Ubuntu's noble-security pocket), or its label is Debian's "Debian-Security"."""
    return any((getattr(package_file, attr, None) or "").endswith("-security") for attr in ("archive", "codename")) \
        or package_file.label == "Debian-Security"


def _apt(dpkg_dir, lists_dir):
    import apt_pkg
    apt_pkg.init_config()
    apt_pkg.config.set("Dir::State::status", os.path.join(dpkg_dir, "status"))
    apt_pkg.config.set("Dir::State::Lists", lists_dir)
    # Nothing written: the agent only reads the lists (and may not own apt's cache).
    apt_pkg.config.set("Dir::Cache::pkgcache", "")
    apt_pkg.config.set("Dir::Cache::srcpkgcache", "")
    apt_pkg.init_system()
    return apt_pkg


def pending(apt_pkg, cache=None, depcache=None):
    """The upgrades apt would install from the lists it has: each installed package whose
    candidate is newer, with whether the candidate comes from a security suite. cache and
    depcache: apt_pkg's of an open apt.Cache (apply-updates), else read here."""
    if cache is None:
        cache = apt_pkg.Cache(None)
        depcache = apt_pkg.DepCache(cache)
    found = []
    for pkg in cache.packages:
        current = pkg.current_ver
        if current is None:
            continue
        candidate = depcache.get_candidate_ver(pkg)
        if candidate is None or apt_pkg.version_compare(candidate.ver_str, current.ver_str) <= 0:
            continue
        found.append({"name": pkg.get_fullname(True), "installed": current.ver_str, "candidate": candidate.ver_str,
                      "security": any(is_security(f) for f, _ in candidate.file_list)})
    found.sort(key=lambda p: p["name"])
    return found


def reboot_required(compare, kernel, boot_dir="/boot", flag="/var/run/reboot-required"):
    """A reboot is needed when the system says so, or a kernel newer than the running one is installed."""
    if os.path.exists(flag):
        return True
    for path in glob.glob(os.path.join(boot_dir, "vmlinuz-*")):
        if compare(os.path.basename(path)[len("vmlinuz-"):], kernel) > 0:
            return True
    return False


def dpkg_compare(a, b):
    """dpkg --compare-versions as a comparison (without python3-apt)."""
    if subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0:
        return 1
    return 0 if subprocess.run(["dpkg", "--compare-versions", a, "eq", b]).returncode == 0 else -1


def inventory(dpkg_dir, lists_dir, out_path, hash_path, luks_path=None):
    """Collects the inventory into out_path (the body, with its hash) and its hash into
    hash_path. Without python3-apt the pending upgrades are empty (said on stderr). luks_path:
    the encrypted volumes and their key slots (fleet-disk-key luks), when the device can tell."""
    kernel = os.uname().release
    try:
        apt_pkg = _apt(dpkg_dir, lists_dir)
    except ImportError:
        apt_pkg = None
        print("inventory: python3-apt is not installed: no pending upgrades", file=sys.stderr)
    body = {
        "os": os_release(),
        "kernel": kernel,
        "packages": packages(dpkg_dir),
        "pending": pending(apt_pkg) if apt_pkg else [],
        "reboot_required": reboot_required(apt_pkg.version_compare if apt_pkg else dpkg_compare, kernel),
    }
    # Only a device with encrypted volumes reports them (an unencrypted one sends no "luks").
    volumes = load_or_empty(luks_path) if luks_path else None
    if isinstance(volumes, list) and volumes:
        body["luks"] = volumes
    body["hash"] = inventory_hash(body)
    write_atomic(out_path, json.dumps(body, ensure_ascii=False, separators=(",", ":")))
    write_atomic(hash_path, body["hash"] + "\n")
    print("%d packages, %d pending (%d security)%s" % (
        len(body["packages"]), len(body["pending"]), sum(1 for p in body["pending"] if p["security"]),
        ", reboot required" if body["reboot_required"] else ""))


def canonical_hash(path):
    """The inventory hash of the JSON object in path (for tests: the same rule as `inventory`)."""
    print(inventory_hash(load(path)))


def canonical_json(path):
    """The RFC 8785 form of the JSON value in path, on stdout (for tests)."""
    sys.stdout.buffer.write(jcs(load(path)).encode("utf-8"))


# -- device actions
#
# The check-in's `actions` run once each, after the apply of a cycle. fleet-agent keeps a
# record folder per action id under the state's actions/ folder (it claims an id by renaming
# a folder into place, and marks the run by creating ran/ in it, so no id runs twice); these
# steps queue the answer's actions, run a script, apply updates and write the result body
# (result.json) that fleet-agent sends and keeps until the service took it.

ACTION_TYPE = re.compile(r"^[a-z_]{1,32}$")
INTERPRETERS = ("sh", "bash", "python3")
OUTPUT_LIMIT = 64 * 1024
TIMED_OUT = 124  # the exit code of a script killed at its timeout (as timeout(1) has it)


def take_actions(answer_path, actions_dir):
    """Takes the actions out of a check-in answer (which is kept as the desired state: no
    script stays in it) and queues those without a record, in the answer's order, as
    actions_dir/queue/NN-ID.TYPE.json (the queue of an earlier answer is replaced). Prints
    how many were queued; an action that is not understood is skipped with a line on stderr."""
    desired = load(answer_path)
    actions = desired.pop("actions", None) or []
    if not isinstance(actions, list):
        raise ValueError("actions is not a list")
    queue = os.path.join(actions_dir, "queue")
    os.makedirs(queue, mode=0o700, exist_ok=True)
    for name in os.listdir(queue):
        os.unlink(os.path.join(queue, name))
    queued = 0
    for i, action in enumerate(actions):
        if not isinstance(action, dict) or not isinstance(action.get("id"), str) or not UUID.fullmatch(action["id"]):
            print("take-actions: an action without a usable id is skipped", file=sys.stderr)
            continue
        action_id, kind = action["id"].lower(), action.get("type")
        if not isinstance(kind, str) or not ACTION_TYPE.fullmatch(kind) or not isinstance(action.get("parameters", {}), dict):
            print("take-actions: action %s is not understood, skipped" % action_id, file=sys.stderr)
            continue
        if os.path.lexists(os.path.join(actions_dir, action_id)):
            continue
        write_atomic(os.path.join(queue, "%02d-%s.%s.json" % (i, action_id, kind)), json.dumps(action))
        queued += 1
    write_atomic(answer_path, json.dumps(desired))
    print(queued)


def parameters(rec_dir):
    action = load(os.path.join(rec_dir, "action.json"))
    params = action.get("parameters") or {}
    if not isinstance(params, dict):
        raise ValueError("the action's parameters are not an object")
    return action, params


def integer(params, key, default, low, high):
    value = params.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError("%s must be a whole number from %d to %d" % (key, low, high))
    return value


def tail_text(path, limit=OUTPUT_LIMIT):
    """The last `limit` bytes of a file as UTF-8 text (from a character's start; bytes that
    are not UTF-8 and NULs, which the service cannot store, as U+FFFD); "" when there is none."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError:
        return ""

    def from_char_start(raw):
        i = 0
        while i < min(len(raw), 4) and raw[i] & 0xC0 == 0x80:
            i += 1
        return raw[i:]

    if size > limit:
        data = from_char_start(data)
    text = data.decode("utf-8", "replace").replace("\x00", "\ufffd")
    encoded = text.encode("utf-8")
    if len(encoded) > limit:  # replacement characters are longer than the bytes they replace
        text = from_char_start(encoded[-limit:]).decode("utf-8")
    return text


def write_result(rec_dir, exit_code, duration_ms, details=None):
    body = {"exit_code": int(exit_code), "output": tail_text(os.path.join(rec_dir, "output")),
            "duration_ms": max(0, int(duration_ms))}
    if details:
        body["details"] = details
    write_atomic(os.path.join(rec_dir, "result.json"), json.dumps(body, ensure_ascii=False))


def action_result(rec_dir, exit_code, duration_ms, interrupted=None):
    """Writes the result body of an action fleet-agent ran (or that was interrupted, with
    "interrupted"): its exit code, the last 64 KiB of rec_dir/output and the details a step
    left in rec_dir/details.json."""
    details = load_or_empty(os.path.join(rec_dir, "details.json"))
    if not isinstance(details, dict):
        details = {}
    if interrupted is not None:
        if interrupted != "interrupted":
            raise ValueError("the last argument is \"interrupted\" or none, not %r" % (interrupted,))
        details["interrupted"] = True
    write_result(rec_dir, exit_code, duration_ms, details)


def kill_group(proc, grace):
    """Ends a process group: SIGTERM, then SIGKILL after `grace` seconds for whatever is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        if sig == signal.SIGTERM:
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
    proc.wait()


def run_script(rec_dir, grace=5):
    """Runs a `script` action as this user (root on a device): its text from a private file
    (never a command line), by its interpreter in a session of its own, stdout and stderr
    into rec_dir/output; at its timeout the process group is ended (exit code 124,
    details.timed_out). The text is taken out of action.json before it runs and its file is
    removed after. Writes result.json; prints one line for the journal (never the output)."""
    action, params = parameters(rec_dir)
    interpreter, text = params.get("interpreter"), params.get("script")
    timeout = integer(params, "timeout_seconds", 600, 1, 3600)
    if interpreter not in INTERPRETERS:
        raise ValueError("the interpreter is none of %s" % ", ".join(INTERPRETERS))
    if not isinstance(text, str) or not text:
        raise ValueError("the action has no script")
    script_path = os.path.abspath(os.path.join(rec_dir, "script"))
    write_atomic(script_path, text)
    params["script"] = None
    action["parameters"] = params
    write_atomic(os.path.join(rec_dir, "action.json"), json.dumps(action))
    details = None
    fd = os.open(os.path.join(rec_dir, "output"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    started = time.monotonic()
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                proc = subprocess.Popen([interpreter, script_path], stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, cwd="/", start_new_session=True)
            except OSError as e:
                out.write(("%s cannot be started: %s\n" % (interpreter, e.strerror)).encode("utf-8"))
                code = 127
            else:
                try:
                    code = proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    kill_group(proc, grace)
                    code, details = TIMED_OUT, {"timed_out": True, "timeout_seconds": timeout}
                if code < 0:  # ended by a signal, as a shell says it
                    code = 128 - code
    finally:
        os.unlink(script_path)
    duration_ms = int((time.monotonic() - started) * 1000)
    write_result(rec_dir, code, duration_ms, details)
    if details:
        print("timed out after %d s, ended" % timeout)
    else:
        print("exit %d in %d ms" % (code, duration_ms))


def reboot_params(rec_dir):
    """A reboot's delay (printed) and the message for logged-in users (rec_dir/message)."""
    _, params = parameters(rec_dir)
    delay = integer(params, "delay_seconds", 60, 0, 3600)
    message = params.get("message") or ""
    if not isinstance(message, str) or len(message) > 200:
        raise ValueError("the message is not a text of at most 200 characters")
    text = "This computer restarts in %d seconds." % delay
    if message.strip():
        text = one_line(message, 200) + "\n" + text
    write_atomic(os.path.join(rec_dir, "message"), text + "\n")
    print(delay)


def installed_versions(cache):
    """Every installed package's version in an apt_pkg.Cache, by name (with :arch when foreign)."""
    return {p.get_fullname(True): p.current_ver.ver_str for p in cache.packages if p.current_ver is not None}


def upgraded(before, after):
    """What an upgrade changed: each package installed before and after at another version,
    by name, as { name, from, to }."""
    return [{"name": n, "from": before[n], "to": after[n]}
            for n in sorted(after) if n in before and before[n] != after[n]]


def mark_updates(apt_cache, apt_pkg, security_only):
    """Marks in an apt.Cache the pending upgrades (the inventory's list, by the same rule),
    only those whose candidate comes from a security suite when security_only; a package
    keeps its automatic-install flag. Returns the chosen entries of the pending list."""
    chosen = [p for p in pending(apt_pkg, apt_cache._cache, apt_cache._depcache)
              if p["security"] or not security_only]
    with apt_cache.actiongroup():
        for p in chosen:
            apt_cache[p["name"]].mark_upgrade(from_user=False)
    return chosen


def apply_updates(rec_dir, dpkg_dir, lists_dir):
    """An `apply_updates` action: apt upgrades the pending packages (security ones only unless
    security_only is false), non-interactive, keeping changed configuration files. apt's
    output on stdout; details.json gets { upgraded: [{ name, from, to }], reboot_required }.
    Exit 0, or 100 when apt failed (as apt-get does)."""
    _, params = parameters(rec_dir)
    security_only = params.get("security_only", True)
    if security_only is None:
        security_only = True
    if not isinstance(security_only, bool):
        raise ValueError("security_only must be true or false")
    try:
        apt_pkg = _apt(dpkg_dir, lists_dir)
    except ImportError:
        print("python3-apt is not installed: no updates can be applied")
        sys.exit(100)
    apt_pkg.config.set("Dpkg::Options::", "--force-confold")
    os.environ["DEBIAN_FRONTEND"] = "noninteractive"
    os.environ["APT_LISTCHANGES_FRONTEND"] = "none"
    import apt
    import apt.progress.base
    import apt.progress.text

    cache = apt.Cache()
    before = installed_versions(cache._cache)
    chosen = mark_updates(cache, apt_pkg, security_only)
    print("%d %supdates to apply%s" % (len(chosen), "security " if security_only else "",
                                       "".join("\n  %s %s -> %s" % (p["name"], p["installed"], p["candidate"])
                                               for p in chosen)))
    sys.stdout.flush()
    code = 0
    try:
        if cache.broken_count:
            print("apt cannot resolve the upgrade: %d packages broken" % cache.broken_count)
            code = 100
        elif cache.get_changes():
            if not cache.commit(apt.progress.text.AcquireProgress(sys.stdout), apt.progress.base.InstallProgress()):
                code = 100
    except (apt.cache.FetchFailedException, apt.cache.LockFailedException, SystemError) as e:
        print("apt failed: %s" % one_line(e, 1000))
        code = 100
    sys.stdout.flush()
    cache.open()
    details = {"upgraded": upgraded(before, installed_versions(cache._cache)),
               "reboot_required": reboot_required(apt_pkg.version_compare, os.uname().release)}
    write_atomic(os.path.join(rec_dir, "details.json"), json.dumps(details))
    print("%d packages upgraded%s" % (len(details["upgraded"]), ", reboot required" if details["reboot_required"] else ""))
    sys.exit(code)


STEPS = {
    "conf": conf,
    "bootstrap-body": bootstrap_body,
    "hardware-json": hardware_json,
    "inventory": inventory,
    "canonical-hash": canonical_hash,
    "canonical-json": canonical_json,
    "secret": secret,
    "drop-token": drop_token,
    "error": error,
    "answer": answer,
    "outcomes": outcomes,
    "report-body": report_body,
    "accepted": accepted,
    "poll": poll,
    "take-rotation": take_rotation,
    "record-applied": record_applied,
    "same-as-applied": same_as_applied,
    "take-actions": take_actions,
    "run-script": run_script,
    "reboot-params": reboot_params,
    "apply-updates": apply_updates,
    "action-result": action_result,
}


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: %s STEP ARGS... (steps: %s)" % (os.path.basename(argv[0]), ", ".join(STEPS)))
    step = STEPS.get(argv[1])
    if step is None:
        sys.exit("unknown step " + argv[1])
    try:
        step(*argv[2:])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
        sys.exit("%s: %s" % (argv[1], one_line(e, 300)))


if __name__ == "__main__":
    main(sys.argv)
