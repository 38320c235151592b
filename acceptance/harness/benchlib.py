"""What the harness's Python programs share: chart-bench.py, control-plane-bench.py,
node-bench.py and conformance.py (messages, commands and kubectl, polling, /proc and cgroup
files, percentiles and figures) and hosts-sync.py (the cluster's env). Imported from the
script's own directory; each script sets PREFIX (its messages' name) and, where it runs kubectl
through here, KUBECTL."""

import os
import statistics
import subprocess
import sys
import time

PREFIX = "bench"
KUBECTL = None


def say(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {PREFIX}: {msg}", file=sys.stderr, flush=True)


def die(msg):
    sys.exit(f"{PREFIX}: {msg}")


def run(*cmd, stdin=None, check=True, timeout=None):
    """Runs cmd (text in and out, both captured); a failure ends the program unless check=False."""
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        die(f"{' '.join(cmd[:6])} ... failed: {r.stderr.strip()[-2000:]}")
    return r


def kubectl(*args, stdin=None, check=True):
    return run(KUBECTL, *args, stdin=stdin, check=check)


def wait_until(what, timeout, check, period=0.25):
    """Polls check() until it returns something truthy; fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = check()
        if v:
            return v
        if time.monotonic() > deadline:
            die(f"timed out after {timeout}s waiting for {what}")
        time.sleep(period)


def read_env(state, *files):
    """The environment after sourcing STATE/env and then each of files (paths under STATE, shell
    assignments, exported or not), as a dict."""
    out = subprocess.run(
        ["bash", "-c", 'set -a && for f in "$@"; do . "$f"; done && env -0', "read-env",
         os.path.join(state, "env"), *(os.path.join(state, f) for f in files)],
        check=True, capture_output=True,
    ).stdout
    env = {}
    for item in out.split(b"\0"):
        key, sep, value = item.decode().partition("=")
        if sep:
            env[key] = value
    return env


def operator_settings(state):
    """STATE/operator.env, the operator's settings the harness wrote (lib.sh operator_setting):
    NAME=VALUE lines, as a dict."""
    with open(os.path.join(state, "operator.env")) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)


def read_kv(path):
    with open(path) as f:
        return {k: int(v) for k, v in (line.split() for line in f)}


def read_int(path):
    with open(path) as f:
        return int(f.read().split()[0])


def percentile(xs, p):
    """The p-th percentile of xs, nearest rank (the median for 50)."""
    if p == 50:
        return statistics.median(xs)
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs)) - 1))]


def mib(b, decimals=1):
    return f"{b / 2**20:.{decimals}f} MiB"


def median_range(vals, decimals=1, unit="s", width=0):
    """'median<unit> (min–max)'."""
    med, lo, hi = statistics.median(vals), min(vals), max(vals)
    return f"{med:{width or ''}.{decimals}f}{unit} ({lo:.{decimals}f}–{hi:.{decimals}f})"
