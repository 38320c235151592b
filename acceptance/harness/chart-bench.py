#!/usr/bin/env python3
"""Measurements for run-chart-bench.sh (`make bench-chart`): the operator as the chart runs it,
two pods on the real node under the chart's requests and limits.

1. Memory and CPU of each operator container, leader and standby, read from its cgroup (what
   the kubelet reports and the limit applies to), and its process's RSS: idle with no Tenant,
   while TENANTS Tenants are created at once (until all are Ready), and settled with them.
   Compared with the container's requests and limits and with the idle figures.
2. Failover: KILLS times the leader's process SIGKILLed and its pod deleted (the Lease must
   expire), KILLS times its pod deleted (SIGTERM: the leader hands the Lease back), alternating;
   each time from the kill until another pod holds the Lease and until a Tenant created right
   after the kill is Ready. Compared with the Lease's duration.

Prints the figures side by side; every round goes to stderr as it ends.
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the harness directory
import benchlib  # noqa: E402  (acceptance/harness/benchlib.py)
from benchlib import die, median_range, mib, percentile, read_int, read_kv, say  # noqa: E402

benchlib.PREFIX = "chart-bench"

NS, RELEASE = "kubespaces-system", "kubespaces"
SELECTOR = f"app.kubernetes.io/instance={RELEASE},app.kubernetes.io/component=operator"
STATE = None
NODE_CGROUP = None


def kubectl(*args, stdin=None):
    """kubectl's output; a failure ends the benchmark."""
    return benchlib.kubectl(*args, stdin=stdin).stdout


def wait_until(what, timeout, check, period=0.1):
    """benchlib.wait_until, polling every 0.1 s unless told otherwise."""
    return benchlib.wait_until(what, timeout, check, period)


class Watch:
    """`kubectl get ... -w -o jsonpath=TEMPLATE`, one line per event, each handed to on_line with
    the time it arrived. Restarted if the API server closes the watch."""

    def __init__(self, args, template, on_line):
        self.args, self.template, self.on_line = args, template, on_line
        self.lines = 0
        self.stopped = False
        self.proc = None
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while not self.stopped:
            self.proc = subprocess.Popen(
                [benchlib.KUBECTL, "get", *self.args, "-w", "-o", f"jsonpath={self.template}" + '{"\\n"}'],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            for line in self.proc.stdout:
                self.on_line(time.monotonic(), line.rstrip("\n"))
                self.lines += 1
            self.proc.wait()

    def stop(self):
        self.stopped = True
        if self.proc:
            self.proc.kill()


class Tenants:
    """When each Tenant was first seen Ready (its Ready condition True at its generation)."""
    TEMPLATE = ('{.metadata.name}|{.metadata.generation}|{.status.observedGeneration}|'
                '{.status.conditions[?(@.type=="Ready")].status}|'
                '{.status.conditions[?(@.type=="Ready")].observedGeneration}')

    def __init__(self):
        self.ready_at = {}
        self.cv = threading.Condition()
        self.watch = Watch(["tenants"], self.TEMPLATE, self.seen)

    def seen(self, t, line):
        name, gen, obs, status, cond_obs = (line.split("|") + [""] * 5)[:5]
        if status == "True" and gen and gen == obs == cond_obs:
            with self.cv:
                self.ready_at.setdefault(name, t)
                self.cv.notify_all()

    def wait_ready(self, names, timeout):
        with self.cv:
            if not self.cv.wait_for(lambda: all(n in self.ready_at for n in names), timeout):
                missing = [n for n in names if n not in self.ready_at]
                die(f"{len(missing)} Tenants not Ready after {timeout}s: {missing[:5]}")
        return [self.ready_at[n] for n in names]


class Lease:
    """Every change of the Lease's holder, with the time it was seen."""

    def __init__(self, name):
        self.events = []
        self.cv = threading.Condition()
        self.watch = Watch(["lease", "-n", NS, name], "{.spec.holderIdentity}", self.seen)

    def seen(self, t, holder):
        with self.cv:
            self.events.append((t, holder))
            self.cv.notify_all()

    def taken_over(self, old, since, timeout):
        """The first time after `since` a pod other than `old` held the Lease, and that pod."""
        def first():
            return next(((t, h) for t, h in self.events if t >= since and h and h != old), None)
        with self.cv:
            if not self.cv.wait_for(first, timeout):
                die(f"no pod but {old} held the Lease {timeout}s after the kill")
            return first()


def tenant(name):
    return {"apiVersion": "kubespaces.io/v1alpha1", "kind": "Tenant", "metadata": {"name": name},
            "spec": {"owner": f"{name}@example.com", "resources": {"cpu": "1", "memory": "1Gi"}}}


def create_tenants(names, concurrency):
    """Creates the Tenants with `concurrency` kubectl processes, each creating its share."""
    procs = []
    for i in range(concurrency):
        items = [tenant(n) for n in names[i::concurrency]]
        if not items:
            continue
        p = subprocess.Popen([benchlib.KUBECTL, "create", "-f", "-"], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        p.stdin.write(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        p.stdin.close()
        procs.append(p)
    for p in procs:
        if p.wait() != 0:
            die(f"kubectl create failed: {p.stderr.read()}")


# --- the operator's pods, their processes and cgroups ---------------------------------------

def pods():
    """name -> (phase, deleting, ready) of the operator's pods."""
    out = json.loads(kubectl("-n", NS, "get", "pods", "-l", SELECTOR, "-o", "json"))
    res = {}
    for p in out["items"]:
        ready = any(c["type"] == "Ready" and c["status"] == "True"
                    for c in p.get("status", {}).get("conditions", []))
        res[p["metadata"]["name"]] = (p["status"].get("phase"), "deletionTimestamp" in p["metadata"], ready)
    return res


def restarts():
    """name -> (restart count, exit code of the last terminated container) of the operator's pods."""
    out = json.loads(kubectl("-n", NS, "get", "pods", "-l", SELECTOR, "-o", "json"))
    res = {}
    for p in out["items"]:
        st = (p["status"].get("containerStatuses") or [{}])[0]
        code = st.get("lastState", {}).get("terminated", {}).get("exitCode")
        res[p["metadata"]["name"]] = (st.get("restartCount", 0), code)
    return res


def holder(lease):
    return kubectl("-n", NS, "get", "lease", lease, "-o", "jsonpath={.spec.holderIdentity}").strip()


def settled(lease):
    """(leader, standby) once both replicas are Running and Ready and one holds the Lease."""
    live = [n for n, (phase, deleting, ready) in pods().items() if phase == "Running" and ready and not deleting]
    if len(live) != 2:
        return None
    h = holder(lease)
    return (h, next(n for n in live if n != h)) if h in live else None


def operator_pid(pod):
    """The operator process of `pod`: on this machine (the node's processes are the machine's), in
    this cluster's cgroups, with POD_NAME=pod."""
    want = f"POD_NAME={pod}".encode()
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            if not os.readlink(f"/proc/{p}/exe").endswith("/kubespaces-operator"):
                continue
            with open(f"/proc/{p}/cgroup") as f:
                if f"/{NODE_CGROUP}/" not in f.read():
                    continue
            with open(f"/proc/{p}/environ", "rb") as f:
                if want in f.read().split(b"\0"):
                    return int(p)
        except OSError:
            continue
    return None


class Container:
    """The operator container of a pod: its cgroup (v1 or v2) and its process."""

    def __init__(self, pod):
        self.pod = pod
        self.pid = wait_until(f"the operator process of {pod}", 30, lambda: operator_pid(pod))
        self.v2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
        self.dirs = {}
        with open(f"/proc/{self.pid}/cgroup") as f:
            for line in f:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                if self.v2 and ctrls == "":
                    self.dirs["v2"] = f"/sys/fs/cgroup{path}"
                for c in ctrls.split(","):
                    if c in ("memory", "cpu", "cpuacct"):
                        self.dirs[c] = f"/sys/fs/cgroup/{ctrls}{path}"

    def sample(self):
        """Working set (usage minus inactive file pages, the kubelet's figure), anon RSS of the
        cgroup, the process's RSS (also the binary's mapped pages, charged to whoever read the file
        first), CPU seconds and throttled periods, all cumulative or instant."""
        s = {"t": time.monotonic()}
        if self.v2:
            d = self.dirs["v2"]
            st = read_kv(f"{d}/memory.stat")
            s["ws"] = read_int(f"{d}/memory.current") - st["inactive_file"]
            s["rss"] = st["anon"]
            cpu = read_kv(f"{d}/cpu.stat")
            s["cpu"] = cpu["usage_usec"] / 1e6
            s["throttled"] = cpu.get("nr_throttled", 0)
        else:
            m = self.dirs["memory"]
            st = read_kv(f"{m}/memory.stat")
            s["ws"] = read_int(f"{m}/memory.usage_in_bytes") - st["total_inactive_file"]
            s["rss"] = st["total_rss"]
            s["cpu"] = read_int(f"{self.dirs['cpuacct']}/cpuacct.usage") / 1e9
            s["throttled"] = read_kv(f"{self.dirs['cpu']}/cpu.stat")["nr_throttled"]
        s["ws"] = max(s["ws"], 0)
        with open(f"/proc/{self.pid}/status") as f:
            s["proc_rss"] = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
        return s

    def limits(self):
        """(memory limit bytes, cpu limit cores) as the kernel enforces them."""
        if self.v2:
            with open(f"{self.dirs['v2']}/memory.max") as f:
                mem = f.read().strip()
            with open(f"{self.dirs['v2']}/cpu.max") as f:
                quota, period = f.read().split()
            return (None if mem == "max" else int(mem), None if quota == "max" else int(quota) / int(period))
        quota = read_int(f"{self.dirs['cpu']}/cpu.cfs_quota_us")
        return (read_int(f"{self.dirs['memory']}/memory.limit_in_bytes"),
                None if quota < 0 else quota / read_int(f"{self.dirs['cpu']}/cpu.cfs_period_us"))


class Sampler:
    """Samples the containers every `period` seconds in a thread until stopped."""

    def __init__(self, containers, period=0.5):
        self.containers, self.period = containers, period
        self.samples = {c.pod: [] for c in containers}
        self.done = threading.Event()
        self.take()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def take(self):
        for c in self.containers:
            self.samples[c.pod].append(c.sample())

    def run(self):
        while not self.done.wait(self.period):
            self.take()

    def stop(self):
        self.done.set()
        self.thread.join()
        self.take()
        return self.samples


def summary(samples):
    """Figures of one container over one window of samples."""
    first, last = samples[0], samples[-1]
    wall = last["t"] - first["t"]
    rates = [(b["cpu"] - a["cpu"]) / (b["t"] - a["t"]) for a, b in zip(samples, samples[1:]) if b["t"] > a["t"]]
    return {
        "ws_median": statistics.median(s["ws"] for s in samples),
        "ws_peak": max(s["ws"] for s in samples),
        "rss_median": statistics.median(s["rss"] for s in samples),
        "rss_peak": max(s["rss"] for s in samples),
        "proc_rss_median": statistics.median(s["proc_rss"] for s in samples),
        "proc_rss_peak": max(s["proc_rss"] for s in samples),
        "cpu_s": last["cpu"] - first["cpu"],
        "cores": (last["cpu"] - first["cpu"]) / wall if wall else 0.0,
        "cores_peak": max(rates, default=0.0),
        "throttled": last["throttled"] - first["throttled"],
        "wall": wall,
    }


def window(containers, seconds):
    s = Sampler(containers, period=1.0)
    time.sleep(seconds)  # the measurement window itself, not a synchronisation
    return {pod: summary(v) for pod, v in s.stop().items()}


# --- the two parts --------------------------------------------------------------------------

def quantity(q):
    """A Kubernetes quantity as a number (bytes or cores)."""
    m = re.fullmatch(r"([0-9.]+)(m|Ki|Mi|Gi|k|M|G)?", q)
    units = {None: 1, "m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 1e3, "M": 1e6, "G": 1e9}
    return float(m.group(1)) * units[m.group(2)]


def resources(pod):
    spec = json.loads(kubectl("-n", NS, "get", "pod", pod, "-o", "json"))["spec"]["containers"][0]["resources"]
    return {f"{kind}_{r}": quantity(spec[kind][r]) for kind in ("requests", "limits") for r in ("memory", "cpu")}


def dump_logs(label):
    """Appends every operator pod's log (and its previous container's) to
    logs/operator-pods-history.log: pods deleted by the failovers take their logs with them."""
    with open(os.path.join(STATE, "logs", "operator-pods-history.log"), "a") as out:
        for pod in pods():
            for prev in ("--previous", None):
                r = subprocess.run([benchlib.KUBECTL, "-n", NS, "logs", pod] + ([prev] if prev else []),
                                   capture_output=True, text=True)
                if r.returncode == 0 and r.stdout:
                    out.write(f"===== {label}: {pod}{' (previous container)' if prev else ''}\n{r.stdout}")


def usage(args, lease_name, tenants, lease, res):
    leader, standby = wait_until("two Ready operator pods, one holding the Lease", 120,
                                 lambda: settled(lease_name), 0.25)
    res["pods"] = {"leader": leader, "standby": standby}
    res["resources"] = resources(leader)
    cs = [Container(leader), Container(standby)]
    mem_limit, cpu_limit = cs[0].limits()
    res["kernel_limits"] = {"memory": mem_limit, "cpu": cpu_limit}
    say(f"leader {leader}, standby {standby}; cgroup limits: memory {mem_limit / 2**20:.0f} MiB, "
        f"cpu {cpu_limit} cores; idle window {args.idle_seconds} s")
    res["loadavg"] = [os.getloadavg()[0]]
    since = time.monotonic()
    res["idle"] = window(cs, args.idle_seconds)

    names = [f"bench-{i:04d}" for i in range(args.tenants)]
    say(f"creating {args.tenants} Tenants ({args.concurrency} kubectl processes at once)")
    sampler = Sampler(cs)
    t0 = time.monotonic()
    create_tenants(names, args.concurrency)
    created = time.monotonic() - t0
    ready = tenants.wait_ready(names, args.timeout)
    samples = sampler.stop()
    lat = sorted(t - t0 for t in ready)
    res["load"] = {pod: summary(v) for pod, v in samples.items()}
    res["tenants"] = {"n": args.tenants, "created": created, "all": lat[-1], "p50": percentile(lat, 50),
                      "p99": percentile(lat, 99)}
    say(f"{args.tenants} Tenants created in {created:.1f} s, all Ready after {lat[-1]:.1f} s "
        f"(p50 {res['tenants']['p50']:.1f} s); leader used {res['load'][leader]['cpu_s']:.1f} CPU s")
    res["loadavg"].append(os.getloadavg()[0])
    res["settled"] = window(cs, args.idle_seconds)
    with lease.cv:
        others = sorted({h for t, h in lease.events if t >= since and h != leader})
    if others or not all(c.pid == operator_pid(c.pod) for c in cs):
        dump_logs("after the load")
        die(f"the Lease changed hands ({others}) or an operator process restarted "
                 "while the leader was measured")


def failover(args, lease_name, tenants, lease, res):
    rounds = []
    for i in range(2 * args.kills):
        how = "kill" if i % 2 == 0 else "delete"
        old, _ = wait_until("two Ready operator pods, one holding the Lease", 180,
                            lambda: settled(lease_name), 0.25)
        name = f"failover-{i:02d}"
        before = restarts()
        dump_logs(f"before failover {i + 1}")
        if how == "kill":
            pid = wait_until(f"the operator process of {old}", 30, lambda: operator_pid(old))
            t0 = time.monotonic()
            os.kill(pid, signal.SIGKILL)
            # Before the kubelet restarts the container: as when the leader's node dies.
            kubectl("-n", NS, "delete", "pod", old, "--grace-period=0", "--force", "--wait=false")
        else:
            t0 = time.monotonic()
            kubectl("-n", NS, "delete", "pod", old, "--wait=false")
        kubectl("create", "-f", "-", stdin=json.dumps(tenant(name)))
        t_lease, new = lease.taken_over(old, t0, 60)
        t_ready = tenants.wait_ready([name], 60)[0]
        # Until both replicas are Ready again: did the Lease change hands more than once?
        wait_until("two Ready operator pods, one holding the Lease", 180, lambda: settled(lease_name), 0.25)
        with lease.cv:
            seq = [(t, h) for t, h in lease.events if t >= t0 and h and h != old]
        later = [(t, h) for (t, h), (_, prev) in zip(seq[1:], seq) if h != prev]
        # Containers that restarted meanwhile (exit code 1: the operator lost the Lease).
        restarted = {n: code for n, (count, code) in restarts().items() if count > before.get(n, (0, None))[0]}
        rounds.append({"how": how, "lease": t_lease - t0, "ready": t_ready - t0,
                       "again": [(t - t0, h) for t, h in later], "restarted": restarted})
        say(f"failover {i + 1}/{2 * args.kills}: leader {old} "
            f"{'SIGKILLed, pod deleted' if how == 'kill' else 'pod deleted (SIGTERM)'}: "
            f"{new} held the Lease after {t_lease - t0:.2f} s, Tenant {name} Ready after {t_ready - t0:.2f} s"
            + "".join(f"; then {h} took the Lease, after {t - t0:.2f} s" for t, h in later)
            + "".join(f"; {n} restarted (exit code {c})" for n, c in restarted.items()))
    res["failover"] = rounds
    res["lease_seconds"] = int(kubectl("-n", NS, "get", "lease", lease_name,
                                       "-o", "jsonpath={.spec.leaseDurationSeconds}"))


# --- the report -----------------------------------------------------------------------------

def ratio(a, b):
    return f"{a / b:.2f}x" if b else "-"


def report(res):
    r, lim = res["resources"], res["kernel_limits"]
    leader, standby = res["pods"]["leader"], res["pods"]["standby"]
    idle, load, settled_ = res["idle"], res["load"], res["settled"]
    n = res["tenants"]["n"]
    print(f"\n== make bench-chart: the operator as the chart installs it, 2 pods on the real node ==")
    print(f"requests: memory {mib(r['requests_memory'])}, cpu {r['requests_cpu']:g}; limits: memory "
          f"{mib(r['limits_memory'])}, cpu {r['limits_cpu']:g} (the cgroup enforces {mib(lim['memory'])}, "
          f"{lim['cpu']:g} cores)")
    print("leader: holds the Lease, watches everything, reconciles; standby: waits for the Lease "
          "(no caches).")
    print(f"idle: no Tenant, {idle[leader]['wall']:.0f} s; load: {n} Tenants created at once until all "
          f"Ready; settled: the {n} Tenants Ready, {settled_[leader]['wall']:.0f} s later. Machine load "
          f"average (1 min) before idle {res['loadavg'][0]:.2f}, after the load {res['loadavg'][1]:.2f}.\n")
    w = 13
    print(f"{'memory, container working set':40} {'leader':>{w}} {'standby':>{w}} {'leader/limit':>{w}} "
          f"{'leader/request':>{w}} {'leader/idle':>{w}}")
    rows = [("idle (median)", idle, "ws_median"), (f"peak while {n} became Ready", load, "ws_peak"),
            (f"{n} Tenants settled (median)", settled_, "ws_median")]
    base = idle[leader]["ws_median"]
    for label, d, key in rows:
        print(f"  {label:38} {mib(d[leader][key]):>{w}} {mib(d[standby][key]):>{w}} "
              f"{ratio(d[leader][key], r['limits_memory']):>{w}} {ratio(d[leader][key], r['requests_memory']):>{w}} "
              f"{ratio(d[leader][key], base) if d is not idle else '':>{w}}")
    print(f"{'  of which anon RSS (cgroup), peak':40} {mib(load[leader]['rss_peak']):>{w}} {mib(load[standby]['rss_peak']):>{w}}")
    print(f"{'  process RSS (+ mapped binary), peak':40} {mib(load[leader]['proc_rss_peak']):>{w}} "
          f"{mib(load[standby]['proc_rss_peak']):>{w}}")
    print(f"\n{'CPU':40} {'leader':>{w}} {'standby':>{w}} {'leader/limit':>{w}} {'leader/request':>{w}} {'leader/idle':>{w}}")
    lc, rc = r["limits_cpu"], r["requests_cpu"]
    for label, d in (("idle: cores (average)", idle), (f"load: cores (average over {load[leader]['wall']:.1f} s)", load),
                     (f"{n} Tenants settled: cores (average)", settled_)):
        a, b = d[leader]["cores"], d[standby]["cores"]
        print(f"  {label:38} {a:>{w}.3f} {b:>{w}.3f} {ratio(a, lc):>{w}} {ratio(a, rc):>{w}} "
              f"{ratio(a, idle[leader]['cores']) if d is not idle else '':>{w}}")
    a = load[leader]["cores_peak"]
    print(f"  {'load: cores, busiest 0.5 s':38} {a:>{w}.3f} {load[standby]['cores_peak']:>{w}.3f} {ratio(a, lc):>{w}} {ratio(a, rc):>{w}}")
    print(f"  {'load: CPU seconds':38} {load[leader]['cpu_s']:>{w}.2f} {load[standby]['cpu_s']:>{w}.2f}"
          f"   ({load[leader]['cpu_s'] / n * 1000:.1f} ms per Tenant)")
    print(f"  {'load: CFS periods throttled':38} {load[leader]['throttled']:>{w}} {load[standby]['throttled']:>{w}}")
    t = res["tenants"]
    print(f"\n{n} Tenants: created in {t['created']:.1f} s; Ready: p50 {t['p50']:.1f} s, p99 {t['p99']:.1f} s, "
          f"all {t['all']:.1f} s ({n / t['all']:.0f} Tenants/s)")

    lease = res["lease_seconds"]
    kills = [x for x in res["failover"] if x["how"] == "kill"]
    print(f"\nfailover, {len(kills)} rounds each, alternating; the bound: the Lease's duration, {lease} s")
    print(f"{'':56} {'p50 (range)':>22} {'p50/Lease':>10}")
    for how, label in (("kill", "leader SIGKILLed + pod deleted (Lease must expire)"),
                       ("delete", "leader's pod deleted (SIGTERM: Lease handed back)")):
        xs = [x for x in res["failover"] if x["how"] == how]
        print(label)
        for key, what in (("lease", "another pod holds the Lease"), ("ready", "a Tenant created at the kill Ready")):
            v = [x[key] for x in xs]
            med = statistics.median(v)
            cell = median_range(v, 2, " s")
            print(f"  {what:54} {cell:>22} {med / lease:>9.2f}x")
        again = [x for x in xs if x["again"]]
        if again:
            print(f"  the Lease changed hands again right after, in {len(again)} of {len(xs)} rounds: after "
                  + ", ".join(f"{x['again'][0][0]:.2f} s" for x in again))
        codes = [c for x in xs for c in x["restarted"].values()]
        if codes:
            print(f"  operator containers restarted: {len(codes)} (exit codes {sorted(codes)}; 1: lost the Lease)")


def main():
    global STATE, NODE_CGROUP
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--state", required=True)
    ap.add_argument("--tenants", type=int, default=300)
    ap.add_argument("--concurrency", type=int, default=8, help="kubectl processes creating Tenants")
    ap.add_argument("--kills", type=int, default=5, help="rounds of each kind of failover")
    ap.add_argument("--idle-seconds", type=int, default=30)
    ap.add_argument("--timeout", type=int, default=600, help="for all Tenants to be Ready")
    ap.add_argument("--results", help="also write the figures here as JSON")
    args = ap.parse_args()
    STATE = args.state
    benchlib.KUBECTL = os.environ["KUBESPACES_KUBECTL"]
    with open(os.path.join(STATE, "run", "node.env")) as f:
        NODE_CGROUP = dict(line.strip().split("=", 1) for line in f if "=" in line)["NODE_CGROUP"]
    dep = json.loads(kubectl("-n", NS, "get", "deployment", f"{RELEASE}-operator", "-o", "json"))
    env = {e["name"]: e.get("value") for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
    lease_name = env["KUBESPACES_LEADER_ELECT_LEASE"]
    tenants = Tenants()
    wait_until("the Tenant watch", 30, lambda: tenants.watch.proc is not None)
    lease = Lease(lease_name)
    wait_until("the Lease watch", 30, lambda: lease.watch.lines > 0)
    res = {}
    usage(args, lease_name, tenants, lease, res)
    failover(args, lease_name, tenants, lease, res)
    dump_logs("at the end")
    tenants.watch.stop()
    lease.watch.stop()
    if args.results:
        with open(args.results, "w") as f:
            json.dump(res, f, indent=1)
    report(res)


if __name__ == "__main__":
    main()
