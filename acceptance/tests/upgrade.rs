//! The upgrade a platform team runs, with a live tenant: from the previous release
//! (`previous-release.sh`) to this one, as docs/install.md upgrades, while probes ask the
//! tenant's API (with the kubeconfig handed out), its app and the portal every 200 ms
//! ([`kubespaces_acceptance::upgrade`]).
//!
//! It takes the shared release back to the previous one first, so it is `#[ignore]`d in a plain
//! `cargo test` and `make test` runs it with `--ignored` before the other tests start (alone).
//! Whatever fails, it takes the release back to this chart with the values it saved first.

use std::time::Duration;

use kubespaces_acceptance::{
    Env, pods,
    release::chart_version,
    upgrade::{self, LiveTenant, Previous, Saved},
};

/// The tenant made under the previous release.
const TENANT: &str = "team-rigel";
/// How often the probes ask.
const PROBE_PERIOD: Duration = Duration::from_millis(200);

/// Under the previous release's chart, operator and server, a tenant with its own control plane
/// and an app; then this release. No probe may fail: not the tenant's API, not its app, not the
/// portal (two server replicas, a PodDisruptionBudget and a drain; from 0.1.0, which has no
/// drain, the portal's failures are printed, and this release's own rollout is asserted). The
/// tenant stays Ready (its condition never changes) and its control plane is not restarted (the
/// same pod, the same StatefulSet generation: the new operator renders the same objects).
// Several workers: the probes run while this thread waits for helm and kubectl.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "takes the shared release back to the previous one and upgrades it: make test runs it alone, with --ignored (run-tests.sh)"]
async fn an_upgrade_from_the_previous_release_keeps_every_tenant_answering() {
    let env = Env::get();
    let saved = Saved::now(&env);
    let upgrade = tokio::spawn({
        let saved = saved.clone();
        async move { upgrade_with_a_live_tenant(&saved).await }
    })
    .await;
    // Whatever happened, this chart again (nothing to do when the upgrade got there).
    saved.restore(&env);
    pods::delete_tenant(&env, TENANT).await;
    if let Err(panic) = upgrade {
        std::panic::resume_unwind(panic.into_panic());
    }
}

async fn upgrade_with_a_live_tenant(saved: &Saved) {
    let env = Env::get();
    let previous = Previous::get();
    upgrade::install_previous(&env, &previous, saved);
    let tenant = LiveTenant::create(&env, TENANT).await;
    let before = tenant.marks(&env);

    let mut probes = tenant.probes(PROBE_PERIOD).await;
    probes.push(upgrade::portal_probe(PROBE_PERIOD));
    let took = upgrade::upgrade_to_this_release(&env, saved).await;

    let mut reports = Vec::new();
    for probe in probes {
        let report = probe.stop().await;
        println!("{report}");
        reports.push(report);
    }
    println!(
        "helm upgrade from {} to {}: {:.1} s",
        previous.version,
        chart_version(),
        took.as_secs_f64()
    );
    // The portal's probe is the last. Release 0.1.0's server pods stop listening at SIGTERM,
    // before the Gateway has dropped them from its endpoints (they have no preStop drain): a
    // request to the portal may fail in that moment, which the rollout below rules out from
    // 0.2.0 on. The tenant's API and app must not fail at all.
    let portal = reports.pop().expect("the portal's probe");
    let failed: Vec<String> = reports
        .iter()
        .filter(|r| r.failed > 0)
        .map(ToString::to_string)
        .collect();
    assert!(failed.is_empty(), "during the upgrade: {failed:#?}");
    if previous.version != "0.1.0" {
        assert_eq!(portal.failed, 0, "during the upgrade: {portal}");
    }
    assert_eq!(
        before,
        tenant.marks(&env),
        "the tenant's control plane restarted or its Ready condition changed during the upgrade"
    );

    // What every later upgrade does to the server: its pods replaced one at a time, each drained
    // before it stops (the chart's server.drainSeconds). No request to the portal fails. From
    // when the previous release's pods are gone: their failures are the upgrade's, above.
    upgrade::server_settled(&env).await;
    let portal = upgrade::portal_probe(PROBE_PERIOD);
    upgrade::roll_server(&env);
    let portal = portal.stop().await;
    println!("rollout of this release's server: {portal}");
    assert_eq!(portal.failed, 0, "during the server's rollout: {portal}");
}
