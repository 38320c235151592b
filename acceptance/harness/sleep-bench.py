#!/usr/bin/env python3
"""Measurements for run-sleep-bench.sh (`make bench-sleep`): idle tenants that sleep (issue 23), on
a cluster whose chart routes every tenant API through the waker.

1. Create: TENANTS Tenants at once, `spec.sleep.afterIdle: never`; the time until each is Ready.
2. Awake path: `kubectl get ns` with the kubeconfig handed out, REQUESTS times per side on one
   awake tenant, in alternating blocks: waker, straight, waker, ... (ROUNDS straight blocks, one
   more waker block, so a node that settles or gets busy during the measurement weighs on both
   sides alike); for each straight block the chart is upgraded with sleep.waker.enabled=false (the
   routes go straight to the control planes again), then back. p50/p99 per side and the ratio.
   Measured twice: right after the creates (the node still busy with five control planes
   starting), and after 4 (density) with the others asleep.
3. Wake: WAKES times on one tenant, a sleep request (annotation), the tenant Asleep, then the
   first `kubectl get ns` timed: p50/p99 and the requests that failed, beside create's p50.
4. Density: the host memory (cgroup working set) of every tenant's control plane pod, all awake;
   then all but AWAKE asleep, the same sum; the waker's pods apart.

Prints a table with each side's figures and the ratios; every step goes to stderr as it ends.
"""

import argparse
import base64
import datetime
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the harness directory
import benchlib  # noqa: E402  (acceptance/harness/benchlib.py)
from benchlib import die, kubectl, percentile, run, say, wait_until  # noqa: E402

benchlib.PREFIX = "sleep-bench"
HERE = os.path.dirname(os.path.abspath(__file__))
# The control-plane bench's cgroup readers (its file name is no module name).
_spec = importlib.util.spec_from_file_location("cpbench", os.path.join(HERE, "control-plane-bench.py"))
cpbench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cpbench)
benchlib.PREFIX = "sleep-bench"  # the module set its own

OP_NS, RELEASE = "kubespaces-system", "kubespaces"
PREFIX = "kubespaces-tenant-"
SLEEP_ANNOTATION = "kubespaces.io/sleep-requested-at"


def now():
    """The time of a request, to the microsecond (a connection in the same second is later or
    earlier, not the same)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


def tenant_yaml(name):
    return (f"apiVersion: kubespaces.io/v1alpha1\nkind: Tenant\nmetadata: {{name: {name}}}\n"
            f"spec:\n  owner: bench@example.com\n  resources: {{cpu: '1', memory: 1Gi}}\n"
            f"  sleep: {{afterIdle: never}}\n")


def tenant(name):
    r = kubectl("get", "tenant", name, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def phase(name):
    t = tenant(name)
    return (t or {}).get("status", {}).get("phase")


def ready(t):
    st = (t or {}).get("status", {})
    gen = t["metadata"].get("generation") if t else None
    return any(c["type"] == "Ready" and c["status"] == "True" and c.get("observedGeneration") == gen
               for c in st.get("conditions", []))


def kubeconfig_file(name, directory):
    data = kubectl("-n", PREFIX + name, "get", "secret", "tenant-kubeconfig", "-o",
                   "jsonpath={.data.config}").stdout
    path = os.path.join(directory, f"{name}.kubeconfig")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(base64.b64decode(data))
    return path


def get_ns(kc):
    """One `kubectl get ns` with exactly that kubeconfig: (seconds, ok, what it said)."""
    t0 = time.monotonic()
    r = subprocess.run([benchlib.KUBECTL, "--kubeconfig", kc, "get", "ns", "-o", "name"],
                       capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    ok = r.returncode == 0 and "namespace/default" in r.stdout
    return time.monotonic() - t0, ok, (r.stderr or r.stdout).strip()[-300:]


def route_backend(name):
    r = kubectl("-n", PREFIX + name, "get", "tlsroute", "tenant-api", "-o",
                "jsonpath={.spec.rules[0].backendRefs[0].name}", check=False)
    return r.stdout.strip()


def set_waker(enabled, names, chart):
    """helm upgrade with the waker on or off, then until every route points where it should."""
    want = f"{RELEASE}-waker" if enabled else "vcluster"
    run(os.environ["KUBESPACES_HELM"], "upgrade", RELEASE, chart, "-n", OP_NS, "--reuse-values",
        "--set", f"sleep.waker.enabled={str(enabled).lower()}", "--wait", "--timeout", "5m")
    wait_until(f"the tenant routes to point at {want}", 300,
               lambda: all(route_backend(n) == want for n in names), period=1)
    # Until the Gateway serves them so: the route answers the first request through it.
    return want


def control_plane_memory(names):
    """(sum of working sets, per tenant) of the control plane pods (none for a sleeping one)."""
    procs = cpbench.processes()
    per = {}
    for n in names:
        pods = [p for p in cpbench.pods_of(PREFIX + n) if p["metadata"]["name"] == "vcluster-0"
                and p.get("status", {}).get("phase") == "Running"]
        per[n] = sum(cpbench.pod_memory(p, procs)["ws"] for p in pods)
    return sum(per.values()), per


def waker_memory():
    procs = cpbench.processes()
    pods = [p for p in cpbench.pods_of(OP_NS)
            if p["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "waker"]
    return sum(cpbench.pod_memory(p, procs)["ws"] for p in pods), len(pods)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--state", required=True)
    p.add_argument("--chart", required=True, help="the chart directory the release was installed from")
    p.add_argument("--tenants", type=int, default=5)
    p.add_argument("--awake", type=int, default=1, help="tenants left awake for the density figure")
    p.add_argument("--wakes", type=int, default=10)
    p.add_argument("--requests", type=int, default=100, help="kubectl runs per side of the awake path")
    p.add_argument("--rounds", type=int, default=3, help="straight blocks of the awake path")
    p.add_argument("--settle", type=float, default=20, help="seconds before memory is sampled")
    p.add_argument("--results")
    a = p.parse_args()
    env = benchlib.read_env(a.state, "operator.env", "run/node.env")
    os.environ.update(env)
    cpbench.E.update(env)
    benchlib.KUBECTL = env["KUBESPACES_KUBECTL"]
    names = [f"sleepy-{i}" for i in range(a.tenants)]
    res = {"tenants": a.tenants}
    tmp = tempfile.mkdtemp(prefix="sleep-bench-")

    # 1. create
    say(f"create: {a.tenants} tenants at once")
    t0 = time.monotonic()
    kubectl("apply", "-f", "-", stdin="---\n".join(tenant_yaml(n) for n in names))
    took = {}
    def all_ready():
        for n in names:
            if n not in took and ready(tenant(n)):
                took[n] = time.monotonic() - t0
        return len(took) == len(names)
    wait_until("every tenant Ready", 900, all_ready, period=0.5)
    creates = sorted(took.values())
    res["create"] = creates
    say(f"create: p50 {percentile(creates, 50):.1f}s, max {max(creates):.1f}s")
    kcs = {n: kubeconfig_file(n, tmp) for n in names}
    probe = names[0]

    # 2. awake path: through the waker and straight, in alternating blocks
    def sample(label, requests):
        get_ns(kcs[probe])  # the route answers (the Gateway serves the latest routes)
        xs = []
        for _ in range(requests):
            s, ok, said = get_ns(kcs[probe])
            if not ok:
                die(f"awake path ({label}): kubectl get ns failed: {said}")
            xs.append(s)
        say(f"awake path {label}: p50 {percentile(xs, 50) * 1000:.0f} ms, p99 {percentile(xs, 99) * 1000:.0f} ms")
        return xs

    def blocks(total, count):
        """`total` requests in `count` blocks as even as they go."""
        return [total // count + (1 if i < total % count else 0) for i in range(count)]

    def awake_path(when):
        via_blocks, direct_blocks = blocks(a.requests, a.rounds + 1), blocks(a.requests, a.rounds)
        via = sample(f"{when}, through the waker (block 1)", via_blocks[0])
        direct = []
        for i, (d, v) in enumerate(zip(direct_blocks, via_blocks[1:]), start=1):
            set_waker(False, names, a.chart)
            direct += sample(f"{when}, straight to the control plane (block {i})", d)
            set_waker(True, names, a.chart)
            via += sample(f"{when}, through the waker (block {i + 1})", v)
        return {"waker": via, "direct": direct}
    res["awake"] = awake_path("after the creates")

    # 3. wakes
    wakes, failed = [], []
    for i in range(a.wakes):
        kubectl("annotate", "tenant", probe, "--overwrite", f"{SLEEP_ANNOTATION}={now()}")
        wait_until(f"{probe} Asleep (wake {i + 1})", 300, lambda: phase(probe) == "Asleep", period=0.5)
        s, ok, said = get_ns(kcs[probe])
        wakes.append(s)
        if not ok:
            failed.append(said)
        say(f"wake {i + 1}: {s:.1f}s {'ok' if ok else 'FAILED: ' + said}")
        wait_until(f"{probe} Ready after wake {i + 1}", 300, lambda: phase(probe) == "Ready", period=0.5)
    res["wake"] = {"seconds": wakes, "failed": failed}

    # 4. density
    for n in names:
        if phase(n) != "Ready":
            get_ns(kcs[n])
    wait_until("every tenant awake", 300, lambda: all(phase(n) == "Ready" for n in names), period=1)
    time.sleep(a.settle)  # measured memory settles after a start (no condition says when)
    awake_sum, awake_per = control_plane_memory(names)
    asleep_names = names[a.awake:]
    at = now()
    for n in asleep_names:
        kubectl("annotate", "tenant", n, "--overwrite", f"{SLEEP_ANNOTATION}={at}")
    wait_until("the others Asleep", 300, lambda: all(phase(n) == "Asleep" for n in asleep_names), period=1)
    time.sleep(a.settle)
    sleeping_sum, sleeping_per = control_plane_memory(names)
    waker_ws, waker_pods = waker_memory()
    res["density"] = {"awake": awake_per, "sleeping": sleeping_per, "waker": waker_ws}
    # 5. the awake path again, on a node settled: the others asleep, no control plane starting
    res["awake_settled"] = awake_path(f"{len(asleep_names)} asleep")

    mib = lambda b: f"{b / 2**20:.0f} MiB"  # noqa: E731
    ms = lambda s: f"{s * 1000:.0f} ms"  # noqa: E731
    create_p50 = percentile(creates, 50)
    rows = [
        ("wake: first kubectl get ns after a sleep, p50 / p99",
         f"{percentile(wakes, 50):.1f} s / {percentile(wakes, 99):.1f} s ({len(wakes)} wakes, {len(failed)} failed)",
         f"create until Ready p50 {create_p50:.1f} s", f"{percentile(wakes, 99) / create_p50:.2f}x (p99/p50)"),
        (f"density: {a.tenants} control planes, {len(asleep_names)} asleep",
         mib(sleeping_sum), f"all awake {mib(awake_sum)}", f"{sleeping_sum / awake_sum:.2f}x"),
        ("  with the waker's pods added to the sleeping side",
         mib(sleeping_sum + waker_ws), f"({waker_pods} pods, {mib(waker_ws)})",
         f"{(sleeping_sum + waker_ws) / awake_sum:.2f}x"),
    ]
    for key, when in (("awake", "after the creates"), ("awake_settled", f"{len(asleep_names)} asleep")):
        via, direct = res[key]["waker"], res[key]["direct"]
        for q in (50, 99):
            rows.append((f"awake path ({when}): kubectl get ns p{q}",
                         f"through the waker {ms(percentile(via, q))}", f"straight {ms(percentile(direct, q))}",
                         f"{percentile(via, q) / percentile(direct, q):.2f}x"))
    print()
    print(f"{'measure':<56} {'sleep / waker':<36} {'baseline':<28} ratio")
    for r in rows:
        print(f"{r[0]:<56} {r[1]:<36} {r[2]:<28} {r[3]}")
    if a.results:
        with open(a.results, "w") as f:
            json.dump(res, f, indent=1)
    for n in names:
        kubectl("delete", "tenant", n, "--wait=false")
    if failed:
        die(f"{len(failed)} wake(s) failed: {failed}")


if __name__ == "__main__":
    main()
