#!/usr/bin/env python3
"""hosts-sync.py — makes a cluster's public hostnames resolve on this machine through /etc/hosts.

  hosts-sync.py run STATE_DIR     (started by gateway.sh, stopped by cluster-down.sh)
      Watches TLSRoutes and HTTPRoutes in every namespace of the cluster in STATE_DIR and keeps one
      marked block in /etc/hosts,
          # kubespaces STATE_DIR begin
          <node address> <hostname>
          # kubespaces STATE_DIR end
      with every hostname of an Accepted route that lies under the cluster's domain
      (KUBESPACES_DOMAIN), mapped to the node's address (KUBESPACES_NODE_IP), where the Gateway's
      hostPort 443 answers. Wildcard hostnames cannot go into /etc/hosts and are left out: a
      client of a wildcard route needs an exact name that some route lists, or `curl --resolve`.
  hosts-sync.py remove STATE_DIR  removes exactly that block (cluster-down.sh).
  hosts-sync.py show [--except STATE_DIR]  prints every kubespaces block (host-state.sh).

/etc/hosts is edited in place under an exclusive flock on the file itself (it may be a bind mount,
which a rename would break); lines outside our block are never touched. Two clusters (dev, test)
each keep their own block; the lock serialises their writers.
"""

import ctypes
import fcntl
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the harness directory
from benchlib import read_env  # noqa: E402  (acceptance/harness/benchlib.py: STATE/env as a dict)

HOSTS = os.environ.get("KUBESPACES_HOSTS_FILE", "/etc/hosts")  # tests of this script only
KINDS = ("tlsroutes.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io")
RESYNC_SECONDS = 60  # a full re-list even without events, in case a watch missed something


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] hosts-sync: {msg}", flush=True)


def markers(state):
    return f"# kubespaces {state} begin", f"# kubespaces {state} end"


def without_block(text, state):
    """The file's lines without STATE's block (every copy of it, should there be more than one)."""
    begin, end = markers(state)
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\n")
        if not inside and bare == begin:
            inside = True
        elif inside and bare == end:
            inside = False
        elif not inside:
            out.append(line)
    return "".join(out)


def block_lines(text, state):
    """The lines of STATE's block as it is in the file (markers included), or []."""
    begin, end = markers(state)
    lines, inside = [], False
    for bare in text.splitlines():
        if bare == begin:
            inside = True
        if inside:
            lines.append(bare)
        if inside and bare == end:
            break
    return lines


def write_block(state, ip, names):
    """Replaces STATE's block with one entry per name (none: no block at all). In place, locked."""
    begin, end = markers(state)
    wanted = [begin] + [f"{ip} {n}" for n in names] + [end] if names else []
    with open(HOSTS, "r+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            text = f.read()
            if block_lines(text, state) == wanted:
                return False
            rest = without_block(text, state)
            if rest and not rest.endswith("\n"):
                rest += "\n"
            new = rest + "".join(line + "\n" for line in wanted)
            f.seek(0)
            f.write(new)
            f.truncate()
            f.flush()
            os.fsync(f.fileno())
            return True
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def die_with_parent():
    # PR_SET_PDEATHSIG: a kubectl watch must not outlive this process, even after a SIGKILL.
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)


def watch(kubectl, kind, events):
    """Feeds one item into EVENTS for every change of KIND; restarts the watch when it ends."""
    delay = 0.5
    while True:
        started = time.monotonic()
        proc = subprocess.Popen(
            [kubectl, "get", kind, "--all-namespaces", "--watch-only", "--request-timeout=0", "-o", "name"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=die_with_parent,
        )
        for _ in proc.stdout:
            events.put(kind)
        err = proc.stderr.read().strip()
        proc.wait()
        # The API server ends every watch after a while; anything else is worth a line in the log.
        if err:
            log(f"watch of {kind} ended (exit {proc.returncode}): {err}")
        # A watch that failed at once (the CRD is missing, the API server is restarting) is retried
        # with a growing delay; one that ran for a while is restarted at once.
        delay = 0.5 if time.monotonic() - started > 30 else min(delay * 2, 10)
        events.put(kind)  # events may have been missed between two watches: re-list
        time.sleep(delay)


def accepted(route):
    """True when some parent accepted the route for its current generation."""
    generation = route.get("metadata", {}).get("generation")
    for parent in route.get("status", {}).get("parents") or []:
        for c in parent.get("conditions") or []:
            if c.get("type") != "Accepted" or c.get("status") != "True":
                continue
            seen = c.get("observedGeneration")
            if seen is None or generation is None or seen == generation:
                return True
    return False


def wanted_names(kubectl, domain, warned):
    """Exact hostnames of Accepted routes under DOMAIN; None when the routes cannot be listed."""
    res = subprocess.run(
        [kubectl, "get", ",".join(KINDS), "--all-namespaces", "-o", "json"],
        capture_output=True, text=True,
    )
    if res.returncode != 0:
        log(f"cannot list routes: {res.stderr.strip()}")
        return None
    names = set()
    for route in json.loads(res.stdout).get("items", []):
        if not accepted(route):
            continue
        for h in route.get("spec", {}).get("hostnames") or []:
            h = h.lower().rstrip(".")
            if h != domain and not h.endswith("." + domain):
                continue
            if h.startswith("*"):
                if h not in warned:
                    warned.add(h)
                    log(f"{h}: a wildcard cannot go into {HOSTS} (only exact names); left out")
                continue
            names.add(h)
    return sorted(names)


def still_ours(state):
    """False once the cluster is down (no env file) or another hosts-sync was started for it."""
    if not os.path.exists(os.path.join(state, "env")):
        return False
    try:
        with open(os.path.join(state, "run", "hosts-sync.pid"), encoding="utf-8") as f:
            return f.read().strip() in ("", str(os.getpid()))
    except FileNotFoundError:
        return True  # start_bg writes it just after starting us


def run(state):
    env = read_env(state)
    try:
        kubectl, domain, ip = (env[k] for k in ("KUBESPACES_KUBECTL", "KUBESPACES_DOMAIN", "KUBESPACES_NODE_IP"))
    except KeyError as missing:
        sys.exit(f"hosts-sync: {state}/env has no {missing} (is the cluster's Gateway up? gateway.sh writes it)")
    os.environ["KUBECONFIG"] = env.get("KUBECONFIG", os.path.join(state, "kubeconfig"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    log(f"keeping the block of {state} in {HOSTS}: routes under {domain} -> {ip}")
    events = queue.Queue()
    for kind in KINDS:
        threading.Thread(target=watch, args=(kubectl, kind, events), daemon=True).start()
    warned = set()
    current = None
    while True:
        if not still_ours(state):
            log(f"{state} has another hosts-sync or no cluster any more: exiting")
            return
        names = wanted_names(kubectl, domain, warned)
        if names is not None and names != current:
            changed = write_block(state, ip, names)
            current = names
            log(f"{len(names)} name(s): {' '.join(names) or '(none)'}{'' if changed else ' (unchanged)'}")
        try:
            events.get(timeout=RESYNC_SECONDS)
            # A burst of events (a Gateway's status update touches every route) is one re-list.
            while True:
                events.get(timeout=0.2)
        except queue.Empty:
            pass


def show(except_state):
    """Every kubespaces block of the hosts file, except EXCEPT_STATE's."""
    try:
        with open(HOSTS, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return
    skip = markers(except_state)[0] if except_state else None
    inside = skipping = False
    for line in text.splitlines():
        if line.startswith("# kubespaces ") and line.endswith(" begin"):
            inside, skipping = True, line == skip
        if inside and not skipping:
            print(line)
        if inside and line.startswith("# kubespaces ") and line.endswith(" end"):
            inside = skipping = False


def main(argv):
    usage = "usage: hosts-sync.py run STATE_DIR | remove STATE_DIR | show [--except STATE_DIR]"
    if len(argv) == 2 and argv[0] in ("run", "remove"):
        state = os.path.realpath(argv[1])
        if argv[0] == "run":
            run(state)
        elif write_block(state, "", []):
            print(f"hosts-sync: removed the block of {state} from {HOSTS}", file=sys.stderr)
    elif argv[:1] == ["show"] and (len(argv) == 1 or (len(argv) == 3 and argv[1] == "--except")):
        show(os.path.realpath(argv[2]) if len(argv) == 3 else None)
    else:
        sys.exit(usage)


if __name__ == "__main__":
    main(sys.argv[1:])
