//! One timed side: the client creates the Tenants (the same code on both sides), and whoever
//! provisions them — the operator, or the baseline's workers — makes them Ready.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt, channel::mpsc, stream};
use k8s_openapi::api::core::v1::ResourceQuota;
use kube::{
    Api, Client, ResourceExt,
    api::ListParams,
    runtime::{watcher, watcher::Event},
};
use kubespaces_acceptance::operator::{SHARD_LABEL, sharded_tenant};
use kubespaces_operator::{
    api::{Tenant, TenantSpec},
    names,
};
use tokio::sync::{Notify, oneshot};

use crate::{
    apiserver::{self, Requests},
    baseline::{Baseline, create},
};

pub fn tenant(name: &str, shard: &str) -> Tenant {
    let spec = TenantSpec::new(format!("{name}@example.com"), "2", "4Gi", Some("10Gi"));
    sharded_tenant(name, spec, shard)
}

/// When each Tenant of a shard became Ready, as a watch sees it.
#[derive(Default)]
struct Readiness {
    ready: Mutex<HashMap<String, Instant>>,
    changed: Notify,
}

impl Readiness {
    /// Watches the Tenants of `shard`; returns once the watch has listed them, so no change is
    /// missed from then on.
    async fn watch(client: &Client, shard: &str) -> Result<Arc<Readiness>> {
        let readiness = Arc::new(Readiness::default());
        let api: Api<Tenant> = Api::all(client.clone());
        let config = watcher::Config::default().labels(&format!("{SHARD_LABEL}={shard}"));
        let (listed, listed_rx) = oneshot::channel();
        let r = readiness.clone();
        tokio::spawn(async move {
            let mut listed = Some(listed);
            let mut events = std::pin::pin!(watcher(api, config));
            while let Some(event) = events.next().await {
                let tenant = match event {
                    Ok(Event::Apply(t) | Event::InitApply(t)) => t,
                    Ok(Event::InitDone) => {
                        if let Some(l) = listed.take() {
                            let _ = l.send(());
                        }
                        continue;
                    }
                    _ => continue,
                };
                if tenant.is_ready() {
                    let mut ready = r.ready.lock().expect("readiness map");
                    ready.entry(tenant.name_any()).or_insert_with(Instant::now);
                    r.changed.notify_waiters();
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(60), listed_rx)
            .await
            .context("the Tenant watch did not list within 60 s")?
            .context("the Tenant watch ended")?;
        Ok(readiness)
    }

    /// Waits until all of `names` are Ready; returns when each became Ready.
    async fn all(&self, names: &[String]) -> HashMap<String, Instant> {
        loop {
            let changed = self.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            {
                let ready = self.ready.lock().expect("readiness map");
                if names.iter().all(|n| ready.contains_key(n)) {
                    return names
                        .iter()
                        .filter_map(|n| Some((n.clone(), *ready.get(n)?)))
                        .collect();
                }
            }
            changed.await;
        }
    }
}

/// How the client hands out the Tenants.
#[derive(Clone, Copy)]
pub enum Load {
    /// All at once, `concurrency` creates in flight: the provisioner queues the rest.
    Burst { concurrency: usize },
    /// One at a time, each created only once the one before is Ready: the latency of one
    /// tenant, with no queue in front of it.
    OneAtATime,
}

pub struct Side {
    /// CPU time of the control plane and of this process (the client: creates, watches and,
    /// on the baseline's side, its workers) while the side ran, to its quiet point.
    pub cluster_cpu: f64,
    pub client_cpu: f64,
    /// The operator's CPU time meanwhile (set by the caller; 0 on the baseline's side).
    pub operator_cpu: f64,
    pub wall: Duration,
    pub p50: Duration,
    pub p99: Duration,
    pub requests: Requests,
}

impl Side {
    /// CPU time of everything the side ran on: control plane, client, operator.
    pub fn cpu(&self) -> f64 {
        self.cluster_cpu + self.client_cpu + self.operator_cpu
    }

    pub fn writes_per_tenant(&self, n: usize) -> f64 {
        apiserver::writes(&self.requests) / n as f64
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Creates the Tenants `names` in `shard` under `load`, has them provisioned by `baseline` (or,
/// without one, by the operator of that shard), waits until all are Ready and measures the side:
/// wall time from the first create, time-to-Ready of each Tenant from the start of its create,
/// and the requests the API server counted between quiet points before and after.
pub async fn run(
    client: &Client,
    shard: &str,
    names: Vec<String>,
    load: Load,
    baseline: Option<Arc<Baseline>>,
) -> Result<Side> {
    let readiness = Readiness::watch(client, shard).await?;
    let tenants: Api<Tenant> = Api::all(client.clone());
    let started: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    // Created Tenants go to the baseline's workers in creation order, as the operator's watch
    // hands them to its reconcilers.
    let (created, queue) = mpsc::unbounded::<Tenant>();
    let before = apiserver::settled(client).await?;
    let cpu_before = (
        control_plane_cpu(),
        cpu_seconds(std::process::id()).unwrap_or(0.0),
    );
    let t0 = Instant::now();
    let (concurrency, one_at_a_time) = match load {
        Load::Burst { concurrency } => (concurrency, false),
        Load::OneAtATime => (1, true),
    };
    let create_all = {
        let (readiness, started, tenants) = (readiness.clone(), started.clone(), tenants.clone());
        let (baseline, shard) = (baseline.clone(), shard.to_owned());
        async move {
            stream::iter(names.clone())
                .map(|name| {
                    let (readiness, started, tenants) =
                        (readiness.clone(), started.clone(), tenants.clone());
                    let (baseline, created) = (baseline.clone(), created.clone());
                    let t = tenant(&name, &shard);
                    async move {
                        started
                            .lock()
                            .expect("start times")
                            .insert(name.clone(), Instant::now());
                        let t = create(&tenants, &t).await?;
                        match (&baseline, one_at_a_time) {
                            (Some(b), true) => b.provision(t).await?,
                            (Some(_), false) => created.unbounded_send(t)?,
                            (None, _) => {}
                        }
                        if one_at_a_time {
                            readiness.all(std::slice::from_ref(&name)).await;
                        }
                        anyhow::Ok(())
                    }
                })
                .buffer_unordered(concurrency)
                .try_collect::<Vec<_>>()
                .await?;
            // Ends the baseline's queue.
            drop(created);
            readiness.all(&names).await;
            anyhow::Ok(())
        }
    };
    let provision_all = async {
        match &baseline {
            Some(b) => {
                queue
                    .map(|t| b.provision(t))
                    .buffer_unordered(concurrency)
                    .try_collect::<Vec<_>>()
                    .await?;
            }
            None => drop(queue),
        }
        anyhow::Ok(())
    };
    let all = async { futures::try_join!(create_all, provision_all) };
    tokio::time::timeout(Duration::from_secs(900), all)
        .await
        .context("tenants not Ready within 15 min")??;
    let wall = t0.elapsed();
    if baseline.is_none() {
        // The operator holds usage-only status updates back for a moment after Ready: they are
        // its work too, and must land in this side's count, not the next one's.
        usage_mirrored(client, shard).await?;
    }
    let after = apiserver::settled(client).await?;
    let cpu_after = (
        control_plane_cpu(),
        cpu_seconds(std::process::id()).unwrap_or(0.0),
    );
    let ready = readiness.ready.lock().expect("readiness map").clone();
    let started = started.lock().expect("start times");
    let mut latencies: Vec<Duration> = started
        .iter()
        .filter_map(|(name, at)| Some(ready.get(name)?.duration_since(*at)))
        .collect();
    latencies.sort();
    Ok(Side {
        cluster_cpu: cpu_after.0 - cpu_before.0,
        client_cpu: cpu_after.1 - cpu_before.1,
        operator_cpu: 0.0,
        wall,
        p50: percentile(&latencies, 0.5),
        p99: percentile(&latencies, 0.99),
        requests: apiserver::delta(&before, &after),
    })
}

/// Counts the changes (after the initial list) to objects of kind `K` carrying `label`, from the
/// moment this returns: what changed in the operator's inputs while it was watched.
pub async fn count_changes<K>(
    client: &Client,
    label: &str,
) -> Result<Arc<std::sync::atomic::AtomicUsize>>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let api: Api<K> = Api::all(client.clone());
    let (listed, listed_rx) = oneshot::channel();
    let c = count.clone();
    let config = watcher::Config::default().labels(label);
    tokio::spawn(async move {
        let mut listed = Some(listed);
        let mut events = std::pin::pin!(watcher(api, config));
        while let Some(event) = events.next().await {
            match event {
                Ok(Event::InitDone) => {
                    if let Some(l) = listed.take() {
                        let _ = l.send(());
                    }
                }
                Ok(Event::Apply(_) | Event::Delete(_)) => {
                    c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                _ => {}
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(60), listed_rx)
        .await
        .context("the watch did not list within 60 s")?
        .context("the watch ended")?;
    Ok(count)
}

/// User and system CPU time of a process (/proc/<pid>/stat, in USER_HZ = 100 ticks a second).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: the fields counted here start after its ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    Some((ticks(11)? + ticks(12)?) / 100.0)
}

/// CPU time of the control plane's processes (API server, etcd, controller-manager: what the
/// two sides load), from the pids the harness records in $KUBESPACES_STATE/run. On a machine
/// whose cores are shared, CPU time is steadier than wall time.
fn control_plane_cpu() -> f64 {
    let Ok(state) = std::env::var("KUBESPACES_STATE") else {
        return 0.0;
    };
    ["kube-apiserver", "etcd", "kube-controller-manager"]
        .iter()
        .filter_map(|name| {
            let pid = std::fs::read_to_string(format!("{state}/run/{name}.pid")).ok()?;
            cpu_seconds(pid.trim().parse().ok()?)
        })
        .sum()
}

/// Waits until every Tenant of `shard` shows in its status the usage its quota shows (at most
/// 60 s). Polled: the operator writes nothing that says "done".
async fn usage_mirrored(client: &Client, shard: &str) -> Result<()> {
    let tenants: Api<Tenant> = Api::all(client.clone());
    let quotas: Api<ResourceQuota> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let used: HashMap<String, _> = quotas
            .list(&ListParams::default().labels(names::TENANT_LABEL))
            .await?
            .items
            .into_iter()
            .filter_map(|q| Some((q.namespace()?, q.status?.used.unwrap_or_default())))
            .collect();
        let behind = tenants
            .list(&ListParams::default().labels(&format!("{SHARD_LABEL}={shard}")))
            .await?
            .items
            .iter()
            .filter(|t| {
                let shown = t
                    .status
                    .as_ref()
                    .and_then(|s| s.quota.as_ref())
                    .map(|q| &q.used);
                shown != used.get(&names::namespace(&t.name_any()))
            })
            .count();
        if behind == 0 || Instant::now() > deadline {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
