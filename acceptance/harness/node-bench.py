#!/usr/bin/env python3
"""Measurements for run-node-bench.sh (`make bench-node`).

--pods N --rounds R ...: creates N pods at once on the real node and on the kwok node of the
    cluster (R rounds each, alternating which goes first), times each pod from the create request
    until a watch shows it Ready, and records the PSS of the node's processes; appends result lines
    to --results.
--report FILE: prints the results side by side (real against kwok) with medians, ranges, ratios.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the harness directory
import benchlib  # noqa: E402  (acceptance/harness/benchlib.py)
from benchlib import die, median_range, percentile  # noqa: E402

benchlib.PREFIX = "node-bench"


def pod_list(ns, n, image, node):
    """N sleeping busybox pods pinned to the real node or to the kwok node."""
    spec = {
        "terminationGracePeriodSeconds": 0,
        "containers": [{
            "name": "sleep", "image": image, "imagePullPolicy": "IfNotPresent",
            "command": ["sleep", "3600"],
            "resources": {"requests": {"cpu": "1m", "memory": "4Mi"}},
        }],
    }
    if node == "kwok":
        spec["nodeSelector"] = {"type": "kwok"}
        spec["tolerations"] = [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}]
    # The real node needs no selector: the kwok node is tainted.
    items = [{"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": f"p{i}", "namespace": ns}, "spec": spec} for i in range(n)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def ready(pod):
    for c in pod.get("status", {}).get("conditions", []) or []:
        if c.get("type") == "Ready" and c.get("status") == "True":
            return True
    return False


def watch_ready(kubectl, ns, n, t0_box, seen, done):
    """Reads `kubectl get pods -w -o json` and notes when each pod is first seen Ready."""
    proc = subprocess.Popen([kubectl, "-n", ns, "get", "pods", "-w", "-o", "json"],
                            stdout=subprocess.PIPE, text=True)
    dec = json.JSONDecoder()
    buf = ""
    try:
        while len(seen) < n:
            chunk = proc.stdout.readline()
            if not chunk:
                break
            buf += chunk
            while True:
                stripped = buf.lstrip()
                try:
                    obj, end = dec.raw_decode(stripped)
                except ValueError:
                    break
                buf = stripped[end:]
                name = obj.get("metadata", {}).get("name")
                if name and name not in seen and ready(obj):
                    seen[name] = time.monotonic() - t0_box[0]
    finally:
        proc.kill()
        done.set()


def run_round(args, node, rnd):
    ns = f"bench-{node}-{rnd}"
    kubectl = args.kubectl
    subprocess.run([kubectl, "create", "namespace", ns], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([kubectl, "-n", ns, "wait", "--for=jsonpath={.metadata.name}=default",
                    "serviceaccount/default", "--timeout=60s"], check=True,
                   stdout=subprocess.DEVNULL)
    seen, done, t0_box = {}, threading.Event(), []
    watcher = threading.Thread(target=watch_ready,
                               args=(kubectl, ns, args.pods, t0_box, seen, done), daemon=True)
    # The clock starts before the create; a watch that starts later lists what exists first, so
    # no pod is missed whichever comes first.
    t0_box.append(time.monotonic())
    watcher.start()
    subprocess.run([kubectl, "apply", "-f", "-"], input=json.dumps(pod_list(ns, args.pods, args.image, node)),
                   text=True, check=True, stdout=subprocess.DEVNULL)
    done.wait(timeout=300)
    if len(seen) < args.pods:
        die(f"only {len(seen)} of {args.pods} pods Ready on the {node} node in 300 s")
    lat = sorted(seen.values())
    p50, p99 = percentile(lat, 50), percentile(lat, 99)
    print(f"[node-bench] round {rnd}: {args.pods} pods Ready on the {node} node: "
          f"p50 {p50:.2f}s p99 {p99:.2f}s, all after {lat[-1]:.2f}s", file=sys.stderr)
    pss = pss_of_node(args.state, node) if node == "real" or rnd == 1 else None
    subprocess.run([kubectl, "delete", "namespace", ns, "--wait=true", "--timeout=300s"],
                   check=True, stdout=subprocess.DEVNULL)
    return p50, p99, lat[-1], pss


def pid_of(state, name):
    try:
        with open(os.path.join(state, "run", f"{name}.pid")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def pss_kib(pid):
    """Proportional set size: shared pages (the 50 shims run one binary) are split between the
    processes sharing them, so the sum is what the processes really cost."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_of_node(state, node):
    """PSS (KiB) of the node's own processes: components by pid file; the shims and CoreDNS by
    executable name within the node's network namespace."""
    if node == "kwok":
        return {"kwok": pss_kib(pid_of(state, "kwok"))}
    out = {n: pss_kib(pid_of(state, n)) for n in ("kubelet", "containerd", "kube-proxy", "kube-router")}
    ns_ino = os.stat(f"/proc/{pid_of(state, 'kubelet')}/ns/net").st_ino
    shims = 0
    coredns = 0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            exe = os.path.basename(os.readlink(f"/proc/{p}/exe"))
            in_node = os.stat(f"/proc/{p}/ns/net").st_ino == ns_ino
        except OSError:
            continue
        if exe == "containerd-shim-runc-v2" and in_node:
            shims += pss_kib(p)
        elif exe == "coredns":
            coredns += pss_kib(p)
    out["coredns"] = coredns
    out["shims (all pods)"] = shims
    return out


def bench(args):
    with open(args.results, "a") as res:
        for rnd in range(1, args.rounds + 1):
            order = ["real", "kwok"] if rnd % 2 else ["kwok", "real"]
            for node in order:
                p50, p99, last, pss = run_round(args, node, rnd)
                res.write(f"pods {node} {p50:.3f} {p99:.3f} {last:.3f}\n")
                if pss:
                    res.write(f"pss {node} {json.dumps(pss)}\n")


def fmt(values):
    return statistics.median(values), median_range(values, 2, "s", 6)


def report(path):
    up, cold, pods, pss = {}, None, {}, {}
    with open(path) as f:
        for line in f:
            kind, node, rest = line.split(" ", 2)
            if kind == "up":
                up.setdefault(node, []).append(float(rest))
            elif kind == "up-cold":
                cold = float(rest)
            elif kind == "pods":
                pods.setdefault(node, []).append([float(x) for x in rest.split()])
            elif kind == "pss":
                pss.setdefault(node, []).append(json.loads(rest))
    print("\n== make bench-node: the real node against a kwok node (simulated pods) ==")
    print(f"{'':34} {'real node':>22} {'kwok node':>22} {'real/kwok':>10}")
    rm, rs = fmt(up["real"])
    km, ks = fmt(up["kwok"])
    print(f"{'cluster-up to Ready (warm)':34} {rs:>22} {ks:>22} {rm / km:>9.2f}x")
    if cold is not None:
        print(f"{'cluster-up, empty image store':34} {cold:>21.2f}s")
    for i, label in enumerate(["pod start p50", "pod start p99", "all pods Ready"]):
        rm, rs = fmt([r[i] for r in pods["real"]])
        km, ks = fmt([r[i] for r in pods["kwok"]])
        print(f"{label:34} {rs:>22} {ks:>22} {rm / max(km, 0.001):>9.2f}x")
    last_real = pss["real"][-1]
    total_real = sum(last_real.values())
    total_kwok = sum(pss["kwok"][-1].values())
    print(f"{'node processes PSS, pods running':34} {total_real / 1024:>20.1f}MiB "
          f"{total_kwok / 1024:>20.1f}MiB {total_real / total_kwok:>9.2f}x")
    for name, kib in last_real.items():
        print(f"  {name:32} {kib / 1024:>20.1f}MiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pods", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kubectl")
    ap.add_argument("--image")
    ap.add_argument("--state")
    ap.add_argument("--results")
    ap.add_argument("--report")
    args = ap.parse_args()
    if args.report:
        report(args.report)
    else:
        bench(args)


if __name__ == "__main__":
    main()
