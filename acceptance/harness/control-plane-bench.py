#!/usr/bin/env python3
"""Measurements for run-control-plane-bench.sh (`make bench-control-plane`): tenant control planes
(issue 8) made by the operator the chart installed, against helm doing the same by hand.

1. Memory per control plane, first (it also warms the node: images unpacked, binaries cached):
   the vCluster chart installed with helm, side by side on the node, once with the values
   KubeSpaces chooses (the platform file + the per-tenant values, as below), once with the chart's
   defaults (only what this node needs to run it at all: local images, the kube-controller-manager
   --controllers fix; telemetry off, as nothing may leave the machine), and variants of ours with
   Go GC settings on the syncer's environment (inherited by kube-apiserver, kcm and kine). Once
   every release's Secret vc-vcluster exists, the pods are left SETTLE seconds, then sampled: the
   vCluster pod's cgroup (anon memory, working set = usage - inactive file) and the RSS sum of its
   processes; the in-tenant CoreDNS pod's working set apart.
2. Time to a usable control plane, N at once, ROUNDS rounds, the order alternating:
   - operator: N Tenants created with one `kubectl create`; time until each is Ready=True at its
     generation (watch), and until `kubectl get ns` with exactly the kubeconfig the operator
     handed out (Secret tenant-kubeconfig) answers through the public URL;
   - baseline: N x (namespace, a TLSRoute like the operator's, `helm install --wait` of the same
     archive with the same values), all at once; time until helm returned, and until `kubectl
     get ns` with the admin kubeconfig of Secret vc-vcluster (server: the public URL) answers.
   The baseline's values are the platform file manifests/vcluster/values-local.yaml and, over it,
   the per-tenant values the operator prints (`kubespaces-operator values`): what it renders.
   Meanwhile the operator pods' memory is sampled (their containers' cgroups and processes), and
   the operator's own histogram kubespaces_tenant_time_to_ready_seconds is read (sum/count).

Prints a table with each side's figures and the ratios; every step goes to stderr as it ends.
"""

import argparse
import base64
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the harness directory
import benchlib  # noqa: E402  (acceptance/harness/benchlib.py)
from benchlib import die, kubectl, read_int, read_kv, run, say, wait_until  # noqa: E402

benchlib.PREFIX = "cp-bench"

OP_NS, OP_RELEASE = "kubespaces-system", "kubespaces"
OP_SELECTOR = f"app.kubernetes.io/instance={OP_RELEASE},app.kubernetes.io/component=operator"
RELEASE = "vcluster"  # the operator's release name in every tenant namespace (names::CONTROL_PLANE_RELEASE)
ADMIN_SECRET = "vc-vcluster"
TENANT_SECRET = "tenant-kubeconfig"
TENANT_PREFIX = "kubespaces-tenant-"
E = {}  # the cluster's env (STATE/env, STATE/operator.env, STATE/run/node.env)
ARGS = None


def merge(base, over):
    """Helm's value merge: maps merge key by key, everything else is replaced."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


# --- values ---------------------------------------------------------------------------------

def platform_values():
    """values-local.yaml with its images (values-local-images.yaml) laid over it."""
    values = {}
    for path in ARGS.values:
        with open(path) as f:
            values = merge(values, yaml.safe_load(f))
    return values


def tenant_values(tenant):
    """The per-tenant values, as the operator itself derives them (`kubespaces-operator values`),
    with the settings the chart gave the operator. The operator names its namespace
    (kubespaces-tenant-<name>) in the serving certificate's extra SANs; helm installs these
    releases into <name> itself, so those two SANs are re-pointed there, as the operator's point
    at its own namespace: the values are then exactly what the operator would give a tenant of
    that name in that namespace."""
    flags = ["--control-plane=vcluster", f"--vcluster-chart={ARGS.chart}",
             f"--vcluster-chart-version={ARGS.chart_version}", f"--vcluster-chart-digest={ARGS.chart_digest}",
             f"--api-gateway={E['KUBESPACES_API_GATEWAY']}", f"--base-domain={E['KUBESPACES_DOMAIN']}"]
    if E.get("KUBESPACES_STORAGE_CLASS"):
        flags.append(f"--control-plane-storage-class={E['KUBESPACES_STORAGE_CLASS']}")
    # chart.sh gives the operator the apps settings only with an issuer (cert-manager).
    if E.get("KUBESPACES_APPS_CLUSTER_ISSUER"):
        flags += [f"--apps-gateway-class={E['KUBESPACES_APPS_GATEWAY_CLASS']}",
                  f"--apps-cluster-issuer={E['KUBESPACES_APPS_CLUSTER_ISSUER']}"]
    # Only what is asked for above: none of the caller's KUBESPACES_* settings leaks in.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBESPACES_")}
    out = subprocess.run([ARGS.operator, "values", tenant, *flags], env=env, check=True,
                         capture_output=True, text=True).stdout
    values = json.loads(out)
    proxy = values["controlPlane"]["proxy"]
    proxy["extraSANs"] = [san.replace(f".{TENANT_PREFIX}{tenant}.", f".{tenant}.") for san in proxy["extraSANs"]]
    return values


def ours(ns):
    return merge(platform_values(), tenant_values(ns))


def chart_defaults():
    """The chart's defaults, but for what this node needs to run the chart at all."""
    p = platform_values()["controlPlane"]
    k8s = p["distro"]["k8s"]
    return {
        "controlPlane": {
            "distro": {"k8s": {"image": k8s["image"], "imagePullPolicy": k8s["imagePullPolicy"],
                               "controllerManager": k8s["controllerManager"]}},
            "statefulSet": {"image": p["statefulSet"]["image"],
                            "imagePullPolicy": p["statefulSet"]["imagePullPolicy"]},
            "coredns": {"deployment": {"image": p["coredns"]["deployment"]["image"]}},
        },
        "telemetry": {"enabled": False},
    }


def with_env(values, env):
    v = json.loads(json.dumps(values))
    v["controlPlane"]["statefulSet"]["env"] = [{"name": k, "value": val} for k, val in env.items()]
    return v


def helm_install(ns, values, wait):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(values, f)
    try:
        cmd = [ARGS.helm, "install", RELEASE, ARGS.chart, "-n", ns, "-f", f.name]
        if wait:
            cmd += ["--wait", "--timeout", f"{ARGS.timeout}s"]
        run(*cmd)
    finally:
        os.unlink(f.name)


# --- memory of pods on this machine (cgroup v1 or v2, and /proc) ------------------------------

CGROUP_V2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")


def cgroup_memory(d):
    """(anon bytes, working set bytes) of a memory cgroup directory."""
    st = read_kv(f"{d}/memory.stat")
    if CGROUP_V2:
        return st["anon"], max(read_int(f"{d}/memory.current") - st["inactive_file"], 0)
    return st["total_rss"], max(read_int(f"{d}/memory.usage_in_bytes") - st["total_inactive_file"], 0)


def memory_cgroup_of(pid):
    """The memory cgroup path of a process (v1: the memory controller's line; v2: the one line)."""
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if (CGROUP_V2 and ctrls == "") or "memory" in ctrls.split(","):
                return path
    return ""


def processes():
    """pid -> (exe basename, memory cgroup path, VmRSS bytes) of every process we may read."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            exe = os.path.basename(os.readlink(f"/proc/{p}/exe"))
            cg = memory_cgroup_of(p)
            with open(f"/proc/{p}/status") as f:
                rss = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:")), 0)
        except (OSError, ValueError):
            continue
        out[int(p)] = (exe, cg, rss)
    return out


def pod_dir(uid):
    root = "/sys/fs/cgroup" if CGROUP_V2 else "/sys/fs/cgroup/memory"
    cg = E["NODE_CGROUP"]
    for pat in (f"{root}/{cg}/kubepods/pod{uid}", f"{root}/{cg}/kubepods/*/pod{uid}",
                f"{root}/{cg}/kubepods*/*pod{uid.replace('-', '_')}*"):
        found = glob.glob(pat)
        if found:
            return found[0]
    return None


def pod_memory(pod, procs):
    """anon, working set (pod cgroup) and RSS sum of the pod's processes but pause, in bytes."""
    uid = pod["metadata"]["uid"]
    d = pod_dir(uid)
    if d is None:
        die(f"no memory cgroup for pod {pod['metadata']['name']} (uid {uid}) under {E['NODE_CGROUP']}")
    anon, ws = cgroup_memory(d)
    cpu = pod_cpu_seconds(d)
    marks = (f"pod{uid}", f"pod{uid.replace('-', '_')}")
    rss = {}
    for exe, cg, r in procs.values():
        if exe != "pause" and any(m in cg for m in marks):
            rss[exe] = rss.get(exe, 0) + r
    return {"anon": anon, "ws": ws, "rss": sum(rss.values()), "rss_by_exe": rss, "cpu": cpu}


def pod_cpu_seconds(memory_dir):
    """CPU seconds the pod used since it started (v1: cpuacct, same path as the memory cgroup)."""
    if CGROUP_V2:
        return read_kv(f"{memory_dir}/cpu.stat")["usage_usec"] / 1e6
    return read_int(memory_dir.replace("/sys/fs/cgroup/memory/", "/sys/fs/cgroup/cpuacct/", 1) + "/cpuacct.usage") / 1e9


def pods_of(ns):
    return json.loads(kubectl("-n", ns, "get", "pods", "-o", "json").stdout)["items"]


# --- 1. memory per control plane ------------------------------------------------------------

def memory(res):
    variants = {"ours": ours("cpb-mem-ours"), "defaults": chart_defaults()}
    for spec in ARGS.variant:
        name, _, env = spec.partition("=")
        variants[name] = with_env(ours(f"cpb-mem-{name}"),
                                  dict(kv.split(":", 1) for kv in env.split(",") if kv))
    say(f"memory: installing {', '.join(variants)} side by side (helm install, namespaces cpb-mem-*)")

    def install(name):
        kubectl("create", "namespace", f"cpb-mem-{name}")
        helm_install(f"cpb-mem-{name}", variants[name], False)
    in_threads(install, list(variants))
    t0 = time.monotonic()

    def secrets_there():
        return all(kubectl("-n", f"cpb-mem-{n}", "get", "secret", ADMIN_SECRET, check=False).returncode == 0
                   for n in variants)

    def all_ready():
        """The vCluster pod and the in-tenant CoreDNS (synced to the host) of every release Ready."""
        for n in variants:
            pods = pods_of(f"cpb-mem-{n}")
            names = [p["metadata"]["name"] for p in pods]
            if f"{RELEASE}-0" not in names or not any("coredns" in x for x in names):
                return False
            for p in pods:
                if not any(c["type"] == "Ready" and c["status"] == "True"
                           for c in p.get("status", {}).get("conditions", [])):
                    return False
        return True
    wait_until("every release's Secret vc-vcluster", ARGS.timeout, secrets_there, 1)
    wait_until("every pod of the releases Ready", ARGS.timeout, all_ready, 1)
    say(f"memory: all Secrets written and pods Ready after {time.monotonic() - t0:.1f}s; "
        f"settling {ARGS.settle}s, then {ARGS.samples} samples 2 s apart")
    time.sleep(ARGS.settle)  # the figure is the settled control plane's; a measurement window
    samples = {n: [] for n in variants}
    for _ in range(ARGS.samples):
        procs = processes()
        for n in variants:
            pods = pods_of(f"cpb-mem-{n}")
            vc = [p for p in pods if p["metadata"]["name"] == f"{RELEASE}-0"]
            other = [p for p in pods if p["metadata"]["name"] != f"{RELEASE}-0"]
            if len(vc) != 1:
                die(f"no pod {RELEASE}-0 in cpb-mem-{n}")
            m = pod_memory(vc[0], procs)
            m["others_ws"] = sum(pod_memory(p, procs)["ws"] for p in other)
            m["others"] = [p["metadata"]["name"] for p in other]
            samples[n].append(m)
        time.sleep(2)  # spacing of the samples, a measurement window
    out = {}
    for n, ss in samples.items():
        med = {k: statistics.median(s[k] for s in ss) for k in ("anon", "ws", "rss", "others_ws")}
        med["cpu"] = ss[0]["cpu"]  # from the pod's start to the first sample (start-up + settling)
        med["rss_by_exe"] = ss[-1]["rss_by_exe"]
        med["others"] = ss[-1]["others"]
        vc = json.loads(kubectl("-n", f"cpb-mem-{n}", "get", "pod", f"{RELEASE}-0", "-o", "json").stdout)
        med["resources"] = vc["spec"]["containers"][0].get("resources", {})
        out[n] = med
        say(f"memory {n}: vCluster pod anon {mib(med['anon'])}, working set {mib(med['ws'])}, RSS sum "
            f"{mib(med['rss'])} ({', '.join(f'{k} {mib(v)}' for k, v in sorted(med['rss_by_exe'].items()))}); "
            f"other pods ({', '.join(med['others']) or 'none'}) working set {mib(med['others_ws'])}; "
            f"CPU {med['cpu']:.1f} s since the pod started")
    res["memory"] = out
    say("memory: uninstalling")
    in_threads(lambda n: run(ARGS.helm, "uninstall", RELEASE, "-n", f"cpb-mem-{n}", "--wait", check=False),
               list(variants))
    kubectl("delete", "namespace", *[f"cpb-mem-{n}" for n in variants], "--wait=true", "--timeout=300s")


# --- the operator's pods ----------------------------------------------------------------------

class OperatorSampler:
    """Samples every operator container of this cluster (its cgroup and process) twice a second."""

    def __init__(self):
        self.peak = {}  # pod -> {"anon", "ws", "rss"} peaks
        self.mark = "idle"
        self.done = threading.Event()
        threading.Thread(target=self.loop, daemon=True).start()

    def operators(self):
        """(pod, cgroup dir, operator's RSS, RSS of the other processes in its container (helm
        renders), how many of those) of every operator process of this cluster."""
        out = []
        procs = processes()
        for pid, (exe, cg, rss) in procs.items():
            if exe != "kubespaces-operator" or f"/{E['NODE_CGROUP']}/" not in cg + "/":
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = dict(x.split(b"=", 1) for x in f.read().split(b"\0") if b"=" in x)
            except OSError:
                continue
            root = "/sys/fs/cgroup" if CGROUP_V2 else "/sys/fs/cgroup/memory"
            kids = [r for p, (e, c, r) in procs.items() if c == cg and p != pid]
            out.append((env.get(b"POD_NAME", str(pid).encode()).decode(), f"{root}{cg}", rss, sum(kids), len(kids)))
        return out

    def loop(self):
        while not self.done.wait(0.5):
            for pod, d, rss, kids_rss, kids in self.operators():
                try:
                    anon, ws = cgroup_memory(d)
                except OSError:
                    continue
                now = {"anon": anon, "ws": ws, "rss": rss, "kids_rss": kids_rss, "kids": kids}
                for key in (self.mark, "all"):
                    p = self.peak.setdefault(key, {}).setdefault(pod, dict.fromkeys(now, 0))
                    for k, v in now.items():
                        p[k] = max(p[k], v)


def leader():
    dep = json.loads(kubectl("-n", OP_NS, "get", "deployment", f"{OP_RELEASE}-operator", "-o", "json").stdout)
    env = {e["name"]: e.get("value") for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
    lease = env.get("KUBESPACES_LEADER_ELECT_LEASE")
    if not lease:
        return None
    return kubectl("-n", OP_NS, "get", "lease", lease, "-o", "jsonpath={.spec.holderIdentity}").stdout.strip()


def histogram():
    """(sum, count) of kubespaces_tenant_time_to_ready_seconds from the leader's /metrics, read
    from the node's network namespace (the pod network)."""
    pod = leader()
    if not pod:
        return None
    ip = kubectl("-n", OP_NS, "get", "pod", pod, "-o", "jsonpath={.status.podIP}").stdout.strip()
    r = run("nsenter", f"--net=/run/netns/{E['NODE_NS']}", "--", "curl", "-sf", "--max-time", "5",
            f"http://{ip}:8080/metrics", check=False)
    vals = dict(re.findall(r"^kubespaces_tenant_time_to_ready_seconds_(sum|count) (\S+)$", r.stdout, re.M))
    return (float(vals["sum"]), float(vals["count"])) if "sum" in vals else None


# --- 2. time to a usable control plane --------------------------------------------------------

def answers(kubeconfig):
    r = run(E["KUBESPACES_KUBECTL"], "--kubeconfig", kubeconfig, "--request-timeout=10s",
            "get", "ns", "-o", "name", check=False)
    return r.returncode == 0 and "namespace/kube-system" in r.stdout


def kubeconfig_file(ns, secret, rewrite_to=None):
    data = kubectl("-n", ns, "get", "secret", secret, "-o", "jsonpath={.data.config}").stdout
    text = base64.b64decode(data).decode()
    if rewrite_to:
        text = re.sub(r"server: \S+", f"server: {rewrite_to}", text)
    fd, path = tempfile.mkstemp(prefix=f"{ns}-", suffix=".kubeconfig", dir=ARGS.state)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def first_answer(kubeconfig):
    wait_until(f"`kubectl get ns` with {kubeconfig}", ARGS.timeout, lambda: answers(kubeconfig), 0.5)
    os.unlink(kubeconfig)
    return time.monotonic()


class TenantWatch:
    """When each Tenant was first seen Ready (its Ready condition True at its generation)."""
    TEMPLATE = ('{.metadata.name}|{.metadata.generation}|{.status.observedGeneration}|'
                '{.status.conditions[?(@.type=="Ready")].status}|'
                '{.status.conditions[?(@.type=="Ready")].observedGeneration}{"\\n"}')

    def __init__(self):
        self.ready_at, self.cv, self.started = {}, threading.Condition(), threading.Event()
        threading.Thread(target=self.loop, daemon=True).start()
        self.started.wait(30)

    def loop(self):
        while True:
            p = subprocess.Popen([E["KUBESPACES_KUBECTL"], "get", "tenants", "-w", "-o", f"jsonpath={self.TEMPLATE}"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self.started.set()
            for line in p.stdout:
                name, gen, obs, status, cobs = (line.rstrip("\n").split("|") + [""] * 5)[:5]
                if status == "True" and gen and gen == obs == cobs:
                    with self.cv:
                        self.ready_at.setdefault(name, time.monotonic())
                        self.cv.notify_all()
            p.wait()

    def wait(self, name):
        with self.cv:
            if not self.cv.wait_for(lambda: name in self.ready_at, ARGS.timeout):
                die(f"Tenant {name} not Ready after {ARGS.timeout}s")
            return self.ready_at[name]


def in_threads(fn, items):
    results, errors = {}, []

    def one(i):
        try:
            results[i] = fn(i)
        except SystemExit as e:
            errors.append(str(e))
    ts = [threading.Thread(target=one, args=(i,)) for i in items]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        die("; ".join(errors))
    return results


def operator_round(r, watch, sampler):
    names = [f"cpb{r}-{i}" for i in range(ARGS.tenants)]
    items = [{"apiVersion": "kubespaces.io/v1alpha1", "kind": "Tenant", "metadata": {"name": n},
              "spec": {"owner": f"{n}@example.com", "resources": {"cpu": "4", "memory": "8Gi"}}} for n in names]
    before = histogram()
    sampler.mark = "operator"
    t0 = time.monotonic()
    kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))

    def one(n):
        ready = watch.wait(n)
        ns = TENANT_PREFIX + n
        return ready - t0, first_answer(kubeconfig_file(ns, TENANT_SECRET)) - t0
    out = in_threads(one, names)
    sampler.mark = "idle"
    after = histogram()
    res = {"ready": sorted(v[0] for v in out.values()), "request": sorted(v[1] for v in out.values())}
    if before and after and after[1] > before[1]:
        res["histogram_mean"] = (after[0] - before[0]) / (after[1] - before[1])
        res["histogram_count"] = after[1] - before[1]
    say(f"round {r} operator: Ready p50 {pct(res['ready'], 50):.1f}s max {res['ready'][-1]:.1f}s; "
        f"get ns with the handed-out kubeconfig p50 {pct(res['request'], 50):.1f}s max {res['request'][-1]:.1f}s"
        + (f"; operator histogram mean {res['histogram_mean']:.1f}s" if "histogram_mean" in res else ""))
    t1 = time.monotonic()
    kubectl("delete", "tenants", *names, "--wait=true", "--timeout=600s")
    wait_until("the tenant namespaces gone", 600, lambda: all(
        kubectl("get", "namespace", TENANT_PREFIX + n, check=False).returncode != 0 for n in names), 1)
    res["teardown"] = time.monotonic() - t1
    say(f"round {r} operator: the {len(names)} Tenants deleted, namespaces gone after {res['teardown']:.1f}s")
    return res


def baseline_round(r):
    nss = [f"cpb{r}-base-{i}" for i in range(ARGS.tenants)]
    gw_ns, gw, section = E["KUBESPACES_API_GATEWAY"].split("/")
    t0 = time.monotonic()

    def one(ns):
        host = f"{ns}.api.{E['KUBESPACES_DOMAIN']}"
        # The Gateway admits routes from namespaces labelled kubespaces.io/tenant (its selector).
        kubectl("create", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns, "labels": {"kubespaces.io/tenant": ns}}}))
        kubectl("apply", "--server-side", "--field-manager=cp-bench", "-f", "-", stdin=json.dumps({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "TLSRoute",
            "metadata": {"name": "tenant-api", "namespace": ns},
            "spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                     "namespace": gw_ns, "name": gw, "sectionName": section}],
                     "hostnames": [host], "rules": [{"backendRefs": [{"name": RELEASE, "port": 443}]}]}}))
        helm_install(ns, ours(ns), True)
        helm = time.monotonic() - t0
        # helm's --wait is content with the StatefulSet's pod Ready; the syncer may write its
        # Secret a moment later (seen once in three runs): a user waits for it too.
        wait_until(f"Secret {ns}/{ADMIN_SECRET}", ARGS.timeout, lambda: kubectl(
            "-n", ns, "get", "secret", ADMIN_SECRET, check=False).returncode == 0, 0.5)
        kc = kubeconfig_file(ns, ADMIN_SECRET, rewrite_to=f"https://{host}:443")
        return helm, first_answer(kc) - t0
    out = in_threads(one, nss)
    res = {"helm": sorted(v[0] for v in out.values()), "request": sorted(v[1] for v in out.values())}
    say(f"round {r} baseline: helm --wait returned p50 {pct(res['helm'], 50):.1f}s max {res['helm'][-1]:.1f}s; "
        f"get ns through the route p50 {pct(res['request'], 50):.1f}s max {res['request'][-1]:.1f}s")
    t1 = time.monotonic()
    in_threads(lambda ns: run(ARGS.helm, "uninstall", RELEASE, "-n", ns, "--wait", check=False), nss)
    kubectl("delete", "namespace", *nss, "--wait=true", "--timeout=600s")
    res["teardown"] = time.monotonic() - t1
    say(f"round {r} baseline: uninstalled, namespaces gone after {res['teardown']:.1f}s")
    return res


# --- the report -------------------------------------------------------------------------------

def mib(b):
    return benchlib.mib(b, 0)


pct = benchlib.percentile
med_range = benchlib.median_range


def report(res):
    n, rounds = ARGS.tenants, res["rounds"]
    ops = [x["operator"] for x in rounds]
    bls = [x["baseline"] for x in rounds]
    print(f"\n== make bench-control-plane: tenant control planes (vCluster {res['chart']}) on the real node ==")
    print(f"machine load average (1 min) at the start {res['loadavg'][0]:.2f}, at the end {res['loadavg'][1]:.2f}")
    print(f"\n1. Time to a usable control plane, {n} at once, {len(rounds)} rounds (order: "
          f"{', '.join(x['order'] for x in rounds)}); median over rounds (range)")
    print("   operator: kubectl create of N Tenants -> Ready=True at the generation (operator renders, applies,")
    print("             routes, issues the credential and probes it through the Gateway)")
    print("   baseline: N x (namespace + TLSRoute + helm install --wait, same archive and values) -> get ns")
    print("             through the public URL with the admin kubeconfig of Secret vc-vcluster")
    w = 24
    print(f"   {'':44} {'operator':>{w}} {'baseline':>{w}} {'ratio':>7}")
    rows = [
        ("p50: Ready | get ns answers", [pct(o["ready"], 50) for o in ops], [pct(b["request"], 50) for b in bls]),
        ("p99: Ready | get ns answers", [pct(o["ready"], 99) for o in ops], [pct(b["request"], 99) for b in bls]),
        ("p50: get ns answers (both)", [pct(o["request"], 50) for o in ops], [pct(b["request"], 50) for b in bls]),
        ("p99: get ns answers (both)", [pct(o["request"], 99) for o in ops], [pct(b["request"], 99) for b in bls]),
    ]
    for label, a, b in rows:
        ratio = statistics.median(a) / statistics.median(b)
        print(f"   {label:44} {med_range(a):>{w}} {med_range(b):>{w}} {ratio:>6.2f}x")
    print(f"   {'baseline p50 | p99: helm install --wait returned':44} {'':>{w}} "
          f"{med_range([pct(b['helm'], 50) for b in bls]) + ' | ' + med_range([pct(b['helm'], 99) for b in bls]):>{w}}")
    hist = [o["histogram_mean"] for o in ops if "histogram_mean" in o]
    if hist:
        print(f"   {'operator histogram: mean time to Ready':44} {med_range(hist):>{w}}")
    print(f"   {'teardown: Tenants / releases deleted, ns gone':44} {med_range([o['teardown'] for o in ops]):>{w}} "
          f"{med_range([b['teardown'] for b in bls]):>{w}}")
    print("   target (issue 8): operator <= 1.1x baseline (p50 and p99 of Ready against get ns answering)")

    print("\n2. Operator memory (the chart's operator pods: container cgroup and process, sampled every 0.5 s)")
    peaks = res["operator_memory"]
    lead = res.get("leader")
    for mark, label in (("idle", "between rounds (idle / baseline running)"), ("operator", "peak while N Tenants became Ready")):
        for pod, p in sorted(peaks.get(mark, {}).items()):
            role = "leader" if pod == lead else "standby"
            print(f"   {label:44} {role:8} working set {mib(p['ws']):>8}, anon {mib(p['anon']):>8}, operator RSS "
                  f"{mib(p['rss']):>8}, helm children RSS {mib(p['kids_rss']):>8} ({p['kids']} at most)")
    print("   (the container's cgroup holds the operator and the `helm template` processes it starts)")

    mem = res["memory"]
    if not mem:
        return
    base = mem["defaults"]
    print(f"\n3. Host memory per control plane: the vCluster pod, settled {ARGS.settle} s after Ready, "
          f"median of {ARGS.samples} samples")
    print(f"   {'values':28} {'anon (cgroup)':>14} {'working set':>12} {'RSS sum':>9} {'anon/def':>9} "
          f"{'ws/def':>7} {'RSS/def':>8}  {'+ CoreDNS pod ws':>16} {'CPU s':>6}")
    for name, m in mem.items():
        print(f"   {name:28} {mib(m['anon']):>14} {mib(m['ws']):>12} {mib(m['rss']):>9} "
              f"{m['anon'] / base['anon']:>8.2f}x {m['ws'] / base['ws']:>6.2f}x {m['rss'] / base['rss']:>7.2f}x  "
              f"{mib(m['others_ws']):>16} {m.get('cpu', 0):>6.1f}")
    print("   ours: the platform file + the per-tenant values the operator renders; defaults: the chart's,")
    print("   but local images, the kcm --controllers fix and telemetry off; other rows: ours + that env on")
    print("   the syncer (controlPlane.statefulSet.env, inherited by kube-apiserver, kcm, kine).")
    print(f"   CPU s: the vCluster pod's CPU time from its start to the first sample ({ARGS.settle} s after all were Ready).")
    print("   RSS by process (ours): " + ", ".join(f"{k} {mib(v)}" for k, v in sorted(mem["ours"]["rss_by_exe"].items())))
    print("   target (issue 8): ours <= 0.6x the chart's defaults")


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--state", required=True)
    ap.add_argument("--tenants", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--settle", type=int, default=30)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=VAR:VALUE,...: also measure ours with that env on the syncer")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--results")
    ARGS = ap.parse_args()
    E.update(benchlib.read_env(ARGS.state, "run/node.env"))
    # The operator's settings: helm, the storage class.
    E.update(benchlib.operator_settings(ARGS.state))
    benchlib.KUBECTL = E["KUBESPACES_KUBECTL"]
    for key in ("KUBESPACES_DOMAIN", "KUBESPACES_API_GATEWAY", "KUBESPACES_HELM", "NODE_CGROUP", "NODE_NS"):
        if not E.get(key):
            die(f"{key} is not in {ARGS.state}/env, operator.env or run/node.env: a real node with the Gateway and the chart installed are needed")
    ARGS.helm = E["KUBESPACES_HELM"]
    charts = glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "charts", "vcluster", "vcluster-*.tgz"))
    if len(charts) != 1:
        die(f"expected one charts/vcluster/vcluster-*.tgz, found {charts}")
    ARGS.chart = os.path.abspath(charts[0])
    ARGS.chart_version = re.sub(r"^vcluster-(.*)\.tgz$", r"\1", os.path.basename(ARGS.chart))
    sums = os.path.join(os.path.dirname(ARGS.chart), "SHA256SUMS")
    ARGS.chart_digest = "sha256:" + open(sums).read().split()[0]
    ARGS.operator = os.path.join(os.path.dirname(__file__), "..", "..", "target", "release", "kubespaces-operator")
    if not os.access(ARGS.operator, os.X_OK):
        die(f"{ARGS.operator} missing: the bench builds it (cargo build --release -p kubespaces-operator)")
    ARGS.values = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "manifests", "vcluster", f)
                   for f in ("values-local.yaml", "values-local-images.yaml")]
    res = {"chart": os.path.basename(ARGS.chart), "loadavg": [os.getloadavg()[0]], "rounds": []}
    sampler = OperatorSampler()
    if not ARGS.skip_memory:
        memory(res)
    watch = TenantWatch()
    for r in range(1, ARGS.rounds + 1):
        order = ("operator", "baseline") if r % 2 else ("baseline", "operator")
        rr = {"order": "/".join(order)}
        for side in order:
            say(f"round {r}: {side}, {ARGS.tenants} at once")
            rr[side] = operator_round(r, watch, sampler) if side == "operator" else baseline_round(r)
        res["rounds"].append(rr)
    sampler.done.set()
    res["operator_memory"] = sampler.peak
    res["leader"] = leader()
    res["loadavg"].append(os.getloadavg()[0])
    if ARGS.skip_memory:
        res["memory"] = {}
    if ARGS.results:
        with open(ARGS.results, "w") as f:
            json.dump(res, f, indent=1)
    report(res)


if __name__ == "__main__":
    main()
