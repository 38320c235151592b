//! The local cluster's lifecycle, as `make up` / `make down` use it: a second cluster comes up
//! next to the test cluster three times in a row, runs a pod each time, and after each stop the
//! machine is exactly as before (no process, mount, link, namespace, iptables rule, cgroup or
//! sysctl of it left). The test cluster keeps working meanwhile.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use kubespaces_acceptance::Env;

fn harness(script: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("harness")
        .join(script)
}

/// Runs a harness script and fails the test with its output when it fails.
fn run(script: &str, args: &[&str]) -> String {
    let out = Command::new(harness(script))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
    assert!(
        out.status.success(),
        "{script} {} failed:\n{}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// kubectl against the cluster whose admin kubeconfig is `kubeconfig`.
fn kubectl(env: &Env, kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new(&env.kubectl)
        .env("KUBECONFIG", kubeconfig)
        .args(args)
        .output()
        .expect("run kubectl");
    assert!(
        out.status.success(),
        "kubectl {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A line-by-line difference of two host snapshots, for the failure message.
fn diff(before: &str, after: &str) -> String {
    let (b, a): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    let gone = b
        .iter()
        .filter(|l| !a.contains(l))
        .map(|l| format!("- {l}"));
    let new = a
        .iter()
        .filter(|l| !b.contains(l))
        .map(|l| format!("+ {l}"));
    gone.chain(new).collect::<Vec<_>>().join("\n")
}

#[test]
fn a_second_cluster_comes_up_three_times_beside_the_test_cluster_and_leaves_nothing_behind() {
    let env = Env::get();
    let main_kubeconfig = PathBuf::from(std::env::var("KUBECONFIG").expect("KUBECONFIG"));
    let state = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.kubespaces/test-peer");
    let state_arg = state.to_str().expect("utf-8 path");
    // A previous run that was killed may have left this cluster up; start from nothing.
    run("cluster-down.sh", &[state_arg]);
    // The test cluster's own pods may come and go meanwhile: its part is left out of the snapshots.
    let main_state = std::env::var("KUBESPACES_STATE").expect("KUBESPACES_STATE");
    let snapshot = || run("host-state.sh", &["--except", &main_state]);
    let before = snapshot();

    for round in 1..=3 {
        run("cluster-up.sh", &[state_arg]);
        let kubeconfig = state.join("kubeconfig");
        let nodes = kubectl(&env, &kubeconfig, &["get", "nodes", "-o", "name"]);
        assert!(
            nodes.contains("node/kubespaces-test-peer"),
            "round {round}: the peer cluster has its own real node: {nodes}"
        );
        // A pod really runs there: its output comes from a process on the peer's node.
        let image = std::fs::read_to_string(state.join("env"))
            .expect("peer env")
            .lines()
            .find_map(|l| l.strip_prefix("export KUBESPACES_BUSYBOX_IMAGE="))
            .expect("KUBESPACES_BUSYBOX_IMAGE in the peer's env")
            .to_owned();
        let message = format!("hello from round {round}");
        kubectl(
            &env,
            &kubeconfig,
            &[
                "run",
                "hello",
                "--image",
                &image,
                "--image-pull-policy=IfNotPresent",
                "--restart=Never",
                "--",
                "echo",
                &message,
            ],
        );
        kubectl(
            &env,
            &kubeconfig,
            &[
                "wait",
                "pod/hello",
                "--for=jsonpath={.status.phase}=Succeeded",
                "--timeout=120s",
            ],
        );
        let logs = kubectl(&env, &kubeconfig, &["logs", "hello"]);
        assert_eq!(logs.trim(), message, "round {round}: the pod's own output");
        // Side by side: the test cluster's node is still Ready while the peer runs.
        let ready = kubectl(
            &env,
            &main_kubeconfig,
            &[
                "get",
                "nodes",
                "-o",
                "jsonpath={.items[*].status.conditions[?(@.type==\"Ready\")].status}",
            ],
        );
        assert!(
            ready.split_whitespace().all(|s| s == "True"),
            "round {round}: the test cluster's nodes stay Ready: {ready}"
        );

        run("cluster-down.sh", &[state_arg]);
        // Polled until it settles: a process cluster-down killed may still be ending, and a pod
        // of the test cluster may be caught between its start and its cgroup (a CI run saw one
        // `/pause` so). A leftover is what is still there 15 s on.
        let settled = Instant::now() + Duration::from_secs(15);
        let after = loop {
            let after = snapshot();
            if after == before || Instant::now() > settled {
                break after;
            }
            std::thread::sleep(Duration::from_millis(500));
        };
        assert!(
            before == after,
            "round {round}: the stopped peer cluster left this on the machine (- before, + after):\n{}",
            diff(&before, &after)
        );
    }
}
