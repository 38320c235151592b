#!/usr/bin/env python3
"""The upstream conformance suite (e2e.test, built from the cluster's Kubernetes module) against a
tenant, with the tenant's own kubeconfig, and against the host cluster beside it, in one run:
run-conformance.sh (`make conformance`) starts the cluster and imports the images first.

Prints, per side, the specs passed / failed / skipped and the wall time, the failures by name, and
which tests the host passes that the tenant does not, each with why when docs/conformance.md
explains it (EXPLAINED); the JUnit report of each side stays in
STATE/conformance/<side>/junit_01.xml and its output in STATE/conformance/<side>.log. Exits 1 when
the tenant fails a test the host passes that EXPLAINED does not name.
"""
import argparse
import base64
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True  # no __pycache__ in the harness directory
import benchlib  # noqa: E402  (acceptance/harness/benchlib.py)
from benchlib import say  # noqa: E402

OWNER = "conformance@example.com"

# The specs a tenant fails and the host passes for a reason docs/conformance.md ("What differs,
# and why") explains, by name as short() writes it: a deliberate platform policy or a limit of
# vCluster. Each entry is a row of that table; a spec added here without one is a failure hidden.
EXPLAINED = {
    "[sig-api-machinery] ResourceQuota should create a ResourceQuota and capture the life of a service.":
        "platform policy: the tenant's quota allows no NodePort Service",
    "[sig-auth] ServiceAccounts should mount an API token into pods":
        "vCluster: a token the syncer requests carries no node-name claim",
    "[sig-network] EndpointSlice should support a Service with multiple endpoint IPs specified in multiple EndpointSlices":
        "platform policy: a selector-less Service has no endpoints on the host (kubespaces-tenant-endpoints)",
    "[sig-network] EndpointSlice should support a Service with multiple ports specified in multiple EndpointSlices":
        "platform policy: a selector-less Service has no endpoints on the host (kubespaces-tenant-endpoints)",
}


def kubectl(*args, stdin=None):
    return benchlib.kubectl(*args, stdin=stdin).stdout


def tenant_kubeconfig(name, budget, path):
    """Creates the Tenant (if it is not there), waits until it is Ready and writes its kubeconfig,
    read from the one place the platform publishes it, to PATH (0600)."""
    cpu, memory, storage = budget
    tenant = {"apiVersion": "kubespaces.io/v1alpha1", "kind": "Tenant",
              "metadata": {"name": name},
              "spec": {"owner": OWNER,
                       "resources": {"cpu": cpu, "memory": memory, "storage": storage}}}
    kubectl("apply", "-f", "-", stdin=json.dumps(tenant))
    t0 = time.monotonic()
    kubectl("wait", f"tenant/{name}", "--for=condition=Ready", "--timeout=600s")
    say(f"tenant {name} Ready after {time.monotonic() - t0:.0f} s")
    ref = json.loads(kubectl("get", "tenant", name, "-o", "json"))["status"]["kubeconfigSecretRef"]
    data = kubectl("get", "secret", "-n", ref["namespace"], ref["name"],
                   "-o", "jsonpath={.data.config}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(base64.b64decode(data))


def run_suite(e2e, side, kubeconfig, focus, skip, timeout, registries, out):
    """Runs the suite against KUBECONFIG; returns (results, wall seconds), results being
    {spec name: 'passed' | 'failed' | 'skipped'} for the specs the focus selected."""
    report = os.path.join(out, side)
    os.makedirs(report, exist_ok=True)
    log = os.path.join(out, f"{side}.log")
    # The cluster's kubectl for the specs that run one, not whatever PATH holds.
    args = [e2e, f"--kubeconfig={kubeconfig}", "--provider=skeleton", f"--report-dir={report}",
            f"--kubectl-path={benchlib.KUBECTL}", f"--ginkgo.focus={focus}", "--ginkgo.no-color",
            f"--ginkgo.timeout={timeout}"]
    if skip:
        args.append(f"--ginkgo.skip={skip}")
    env = dict(os.environ, KUBE_TEST_REPO_LIST=registries)
    say(f"{side}: e2e.test running (output in {log})")
    t0 = time.monotonic()
    with open(log, "w") as f:
        subprocess.run(args, stdout=f, stderr=subprocess.STDOUT, env=env, check=False)
    wall = time.monotonic() - t0
    return results(os.path.join(report, "junit_01.xml"), focus, skip), wall


def results(junit, focus, skip):
    """The specs of the JUnit report that the focus selected (not the suite's set-up nodes, nor
    the specs the focus left out), by name: passed, failed or skipped at run time."""
    selected = re.compile(focus)
    skipped_out = re.compile(skip) if skip else None
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "")
        if not name.startswith("[It] "):
            continue
        name = name[len("[It] "):]
        if not selected.search(name) or (skipped_out and skipped_out.search(name)):
            continue
        status = case.get("status", "")
        if case.find("failure") is not None or case.find("error") is not None:
            status = "failed"
        out[name] = status if status in ("passed", "failed") else "skipped"
    return out


def short(name):
    """The spec's name without its trailing labels."""
    return re.sub(r"( \[[^\]]*\])+$", "", name)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--state", required=True)
    p.add_argument("--e2e", required=True, help="the e2e.test binary")
    p.add_argument("--registries", required=True, help="KUBE_TEST_REPO_LIST for e2e.test")
    p.add_argument("--focus", default=r"\[Conformance\]")
    p.add_argument("--skip", default="")
    p.add_argument("--timeout", default="24h",
                   help="per side: the suite stops there, the specs not run count as skipped")
    p.add_argument("--tenant", default="conformance")
    p.add_argument("--budget", default="8,16Gi,20Gi", help="the tenant's cpu,memory,storage")
    p.add_argument("--sides", default="tenant,host")
    a = p.parse_args()
    benchlib.PREFIX = "conformance"
    # The cluster's own kubectl (its env file names it), as every harness program runs.
    benchlib.KUBECTL = os.environ["KUBESPACES_KUBECTL"]
    out = os.path.join(a.state, "conformance")
    os.makedirs(out, exist_ok=True)
    kubeconfigs = {"host": os.environ["KUBECONFIG"]}
    sides = a.sides.split(",")
    if "tenant" in sides:
        kubeconfigs["tenant"] = os.path.join(out, "tenant.kubeconfig")
        tenant_kubeconfig(a.tenant, a.budget.split(","), kubeconfigs["tenant"])
    runs = {side: run_suite(a.e2e, side, kubeconfigs[side], a.focus, a.skip, a.timeout,
                                  a.registries, out)
            for side in sides}

    print(f"\nconformance: focus {a.focus!r}" + (f", skip {a.skip!r}" if a.skip else ""))
    print(f"{'side':8} {'specs':>6} {'passed':>7} {'failed':>7} {'skipped':>8} {'wall':>9}")
    for side, (res, wall) in runs.items():
        count = lambda s: sum(1 for v in res.values() if v == s)  # noqa: E731
        print(f"{side:8} {len(res):6} {count('passed'):7} {count('failed'):7} "
              f"{count('skipped'):8} {wall:8.0f}s")
    if "tenant" in runs and "host" in runs:
        (t, tw), (h, hw) = runs["tenant"], runs["host"]
        print(f"wall time tenant/host: {tw / hw:.2f}x" if hw else "")
    for side, (res, _) in runs.items():
        failed = sorted(short(n) for n, s in res.items() if s == "failed")
        print(f"\nfailed on the {side} ({len(failed)}):")
        for n in failed:
            print(f"  {n}")
    status = 0
    if "tenant" in runs and "host" in runs:
        t, h = runs["tenant"][0], runs["host"][0]
        worse = sorted(short(n) for n, s in h.items() if s == "passed" and t.get(n) != "passed")
        unexplained = [n for n in worse if n not in EXPLAINED]
        print(f"\npassed on the host, not on the tenant ({len(worse)}, "
              f"{len(worse) - len(unexplained)} explained in docs/conformance.md):")
        for n in worse:
            print(f"  {n}" + (f"\n    explained: {EXPLAINED[n]}" if n in EXPLAINED else "\n    NOT EXPLAINED"))
        status = 1 if unexplained else 0
    print(f"\nJUnit reports: {out}/<side>/junit_01.xml; output: {out}/<side>.log")
    return status


if __name__ == "__main__":
    sys.exit(main())
