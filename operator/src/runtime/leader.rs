//! Leader election on a `coordination.k8s.io` Lease, so that several replicas can run and only
//! one reconciles and writes.
//!
//! Acquiring, renewing and releasing the Lease is done by `kube-lease-manager`. Three things
//! are added on top of it:
//!
//! - **A write fence.** The crate reports a change of leadership only when it sees one; while its
//!   renewals fail (API server unreachable, overloaded) it keeps saying "leader", although another
//!   replica may take the Lease once it expires. So the operator watches the Lease itself and
//!   lets its client send writes only while the Lease, as last seen, names this process and was
//!   renewed recently enough that no other replica can have taken it ([`lease_allows_writes`]).
//!   Everything the controller writes (objects, status, Events) goes through that client
//!   ([`super::kube_client`]).
//! - **Short retries.** The crate's own watch loop backs off up to 30 s after an error; the loop
//!   here retries after at most ~2 s, so leadership is settled soon after the API server is back.
//! - **Stepping down first.** On termination the leader closes its fence and hands the Lease
//!   back before it drains its in-flight reconciles ([`StepDown`]): a standby takes over within
//!   the moment a single request takes, even when a slow reconcile would outlast the kubelet's
//!   grace period, and the reconciles still draining can write nothing beside the new leader.
//!
//! Losing the Lease ends the process (see [`LeaderError::Lost`]).

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, SystemTime},
};

use clap::Args;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{
    Api, Client,
    runtime::{WatchStreamExt, watcher},
};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};

use super::watch_backoff;
use thiserror::Error;
use tokio::sync::watch;
use tracing::{info, warn};

/// How long a Lease stays valid after its last renewal. A replica that stops renewing (killed,
/// cut off) is replaced at most this long (plus about a second) after its last renewal.
pub const LEASE_DURATION: Duration = Duration::from_secs(12);
/// The leader renews this long before the Lease would expire, i.e. every 8 s.
pub const RENEW_BEFORE_EXPIRY: Duration = Duration::from_secs(4);
/// The leader stops writing this long before the Lease, as last seen renewed, would expire: the
/// room left for clock skew between replicas and for a renewal in flight.
pub const FENCE_BEFORE_EXPIRY: Duration = Duration::from_secs(2);

const DEFAULT_LEASE: &str = "kubespaces-operator";

/// Leader election settings.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct LeaderConfig {
    /// Run for leadership of a Lease and reconcile only while holding it, so several replicas
    /// can run (the others wait, ready, and take over). The Lease lasts 12 s and is renewed
    /// every 8 s: when the leader is killed, another replica takes over within about 13 s; when
    /// it shuts down gracefully it hands the Lease back and the next one takes it at once.
    /// Losing the Lease ends the process (Kubernetes starts it again, as a standby). Off by
    /// default: a single operator needs no Lease.
    #[arg(
        long = "leader-elect",
        env = "KUBESPACES_LEADER_ELECT",
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    pub enabled: bool,
    /// Namespace of the Lease (the operator's own namespace). Required with --leader-elect.
    #[arg(
        long = "leader-elect-namespace",
        env = "KUBESPACES_LEADER_ELECT_NAMESPACE",
        required_if_eq("enabled", "true")
    )]
    pub namespace: Option<String>,
    /// Name of the Lease. Replicas that share it elect one leader.
    #[arg(
        long = "leader-elect-lease",
        env = "KUBESPACES_LEADER_ELECT_LEASE",
        default_value = DEFAULT_LEASE
    )]
    pub lease: String,
}

impl Default for LeaderConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            namespace: None,
            lease: DEFAULT_LEASE.into(),
        }
    }
}

#[derive(Debug, Error)]
pub enum LeaderError {
    /// Another replica holds the Lease now. The process ends rather than stopping the
    /// controller in place: in-flight reconciles would otherwise go on writing next to the new
    /// leader, and a fresh process starts as a clean standby with nothing left over (caches,
    /// queued work, remembered writes). Kubernetes restarts it.
    #[error("lost the leader Lease {0}; exiting so that only the new leader writes")]
    Lost(String),
    #[error("--leader-elect needs --leader-elect-namespace (the namespace of the Lease)")]
    NoNamespace,
}

/// Who this process is in the election: the pod name, or the host name and process id (two
/// processes on one machine must never share an identity).
pub fn identity() -> String {
    if let Ok(pod) = std::env::var("POD_NAME")
        && !pod.is_empty()
    {
        return pod;
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "kubespaces-operator".into());
    format!("{host}_{}", std::process::id())
}

/// The Lease as last seen by the watch: holder, last renewal and duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseView {
    pub holder: Option<String>,
    pub renewed: Option<SystemTime>,
    pub duration: Option<Duration>,
}

impl LeaseView {
    fn of(lease: &Lease) -> Self {
        let spec = lease.spec.as_ref();
        LeaseView {
            holder: spec.and_then(|s| s.holder_identity.clone()),
            renewed: spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0.into()),
            duration: spec
                .and_then(|s| s.lease_duration_seconds)
                .and_then(|d| u64::try_from(d).ok())
                .map(Duration::from_secs),
        }
    }
}

/// True when `lease` names `me` and was renewed so recently that no other replica can have
/// taken it over: its expiry, less [`FENCE_BEFORE_EXPIRY`], is still ahead of `now`.
pub fn lease_allows_writes(lease: Option<&LeaseView>, me: &str, now: SystemTime) -> bool {
    let Some(lease) = lease else { return false };
    let (Some(renewed), Some(duration)) = (lease.renewed, lease.duration) else {
        return false;
    };
    lease.holder.as_deref() == Some(me)
        && renewed
            .checked_add(duration.saturating_sub(FENCE_BEFORE_EXPIRY))
            .is_some_and(|until| until > now)
}

/// Decides whether the controller's client may send a write. Open for good without leader
/// election.
#[derive(Clone)]
pub struct WriteGate(Option<Arc<Fence>>);

struct Fence {
    identity: String,
    lease: watch::Receiver<Option<LeaseView>>,
    name: String,
    /// Set when this replica steps down: no write goes out afterwards, whatever the Lease says.
    closed: AtomicBool,
}

impl WriteGate {
    pub fn open() -> Self {
        WriteGate(None)
    }

    pub fn allows_writes(&self) -> bool {
        match &self.0 {
            None => true,
            Some(f) => {
                !f.closed.load(Ordering::SeqCst)
                    && lease_allows_writes(
                        f.lease.borrow().as_ref(),
                        &f.identity,
                        SystemTime::now(),
                    )
            }
        }
    }

    /// Refuses every write from now on (stepping down). Nothing to close without election.
    fn close(&self) {
        if let Some(f) = &self.0 {
            f.closed.store(true, Ordering::SeqCst);
        }
    }

    /// Why a write was refused, for the error the controller sees.
    pub fn refusal(&self) -> String {
        let lease = self.0.as_ref().map(|f| f.name.as_str()).unwrap_or_default();
        format!(
            "write not sent: this replica's hold on the leader Lease {lease} is not confirmed \
             (not the leader, stepping down, or the Lease could not be renewed)"
        )
    }
}

/// Where this process stands in the election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The Lease could not be read or created yet.
    Connecting,
    /// Waiting for the Lease.
    Standby,
    Leader,
    /// Held the Lease and lost it.
    Lost,
    /// Left the election (the Lease handed back if it was held).
    Left,
}

/// A running election.
pub struct Election {
    pub role: watch::Receiver<Role>,
    pub gate: WriteGate,
    resign: Arc<watch::Sender<bool>>,
    task: tokio::task::JoinHandle<()>,
    name: String,
}

impl Election {
    /// Starts watching the Lease and running for it, with `client` (which should not be gated
    /// by the election itself).
    pub fn start(client: Client, config: &LeaderConfig) -> Result<Election, LeaderError> {
        let namespace = config.namespace.clone().ok_or(LeaderError::NoNamespace)?;
        let identity = identity();
        let name = format!("{namespace}/{}", config.lease);
        let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
        let (seen_tx, seen) = watch::channel(None);
        tokio::spawn(watch_lease(leases, config.lease.clone(), seen_tx));
        let gate = WriteGate(Some(Arc::new(Fence {
            identity: identity.clone(),
            lease: seen.clone(),
            name: name.clone(),
            closed: AtomicBool::new(false),
        })));
        let (role_tx, role) = watch::channel(Role::Connecting);
        let (resign, resign_rx) = watch::channel(false);
        info!(lease = %name, %identity, "running for leadership");
        let task = tokio::spawn(run_for_lease(
            client,
            namespace,
            config.lease.clone(),
            identity,
            seen,
            role_tx,
            resign_rx,
        ));
        Ok(Election {
            role,
            gate,
            resign: Arc::new(resign),
            task,
            name,
        })
    }

    /// Resolves once this process leads and its writes are let through.
    pub async fn leading(&mut self) -> Result<(), LeaderError> {
        let role = self
            .role
            .wait_for(|r| matches!(r, Role::Leader | Role::Lost))
            .await
            .map(|r| *r)
            .ok();
        if role != Some(Role::Leader) {
            return Err(LeaderError::Lost(self.name.clone()));
        }
        // The watch confirms the Lease a moment after the crate took it.
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        while !self.gate.allows_writes() {
            tick.tick().await;
        }
        Ok(())
    }

    /// Resolves when leadership is lost, and never after this process left the election on
    /// its own ([`StepDown`]): the election's task has ended then, which is no loss, and the
    /// controller must go on draining.
    pub async fn lost(&self) -> LeaderError {
        let mut role = self.role.clone();
        if role.wait_for(|r| *r == Role::Lost).await.is_err() {
            std::future::pending::<()>().await;
        }
        LeaderError::Lost(self.name.clone())
    }

    /// What the controller's shutdown runs first: see [`StepDown`].
    pub fn step_down(&self) -> StepDown {
        StepDown {
            gate: self.gate.clone(),
            resign: self.resign.clone(),
            role: self.role.clone(),
        }
    }

    /// Leaves the election, handing the Lease back if it is held (and [`StepDown`] has not), so
    /// a standby takes over at once; waits for that.
    pub async fn resign(self) {
        let _ = self.resign.send(true);
        if tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .is_err()
        {
            warn!("could not hand the Lease back within 5 s; it will expire");
        }
    }
}

/// A leader's way out: its fence closed, then the Lease handed back, before its in-flight
/// reconciles drain. A reconcile takes seconds under load, and a pod deleted with a short grace
/// period gets little more before SIGKILL: handing back after the drain would leave the Lease to
/// expire. (A pod force-deleted, with grace period 0, cannot hand it back at all: its
/// ServiceAccount token is bound to the pod, and the API server refuses it once the pod is gone.
/// The Lease then expires, as after a kill.)
#[derive(Clone)]
pub struct StepDown {
    gate: WriteGate,
    resign: Arc<watch::Sender<bool>>,
    role: watch::Receiver<Role>,
}

impl StepDown {
    /// Closes the fence, hands the Lease back and waits (at most 5 s) until that is done.
    pub async fn now(self) {
        self.gate.close();
        let _ = self.resign.send(true);
        let mut role = self.role;
        let left = role.wait_for(|r| matches!(r, Role::Left | Role::Lost));
        if tokio::time::timeout(Duration::from_secs(5), left)
            .await
            .is_err()
        {
            warn!("could not hand the Lease back within 5 s; it will expire");
        }
    }
}

/// Keeps `seen` up to date with the Lease (None while it does not exist).
async fn watch_lease(leases: Api<Lease>, name: String, seen: watch::Sender<Option<LeaseView>>) {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut stream = std::pin::pin!(watcher(leases, config).backoff(watch_backoff()));
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Apply(lease) | watcher::Event::InitApply(lease)) => {
                seen.send_replace(Some(LeaseView::of(&lease)));
            }
            Ok(watcher::Event::Delete(_)) => {
                seen.send_replace(None);
            }
            Ok(watcher::Event::Init | watcher::Event::InitDone) => {}
            Err(e) => warn!(error = %e, "watch of the leader Lease failed; retrying"),
        }
    }
}

async fn build_manager(
    client: &Client,
    namespace: &str,
    lease: &str,
    identity: &str,
) -> Result<LeaseManager, kube_lease_manager::LeaseManagerError> {
    LeaseManagerBuilder::new(client.clone(), lease)
        .with_namespace(namespace)
        .with_identity(identity)
        .with_duration(LEASE_DURATION.as_secs())
        .with_grace(RENEW_BEFORE_EXPIRY.as_secs())
        // One field manager per replica (the crate's default, named after the identity): two
        // replicas taking an expired Lease at once then conflict on holderIdentity in the API
        // server, and only one gets it. A shared manager would let the last write win.
        .build()
        .await
}

async fn run_for_lease(
    client: Client,
    namespace: String,
    lease: String,
    identity: String,
    mut seen: watch::Receiver<Option<LeaseView>>,
    role: watch::Sender<Role>,
    mut resign: watch::Receiver<bool>,
) {
    let mut backoff = watch_backoff();
    fn pause(backoff: &mut watcher::ExponentialBackoff) -> Duration {
        backoff.next().unwrap_or(Duration::from_secs(1))
    }
    'connect: loop {
        let manager = match build_manager(&client, &namespace, &lease, &identity).await {
            Ok(m) => m,
            Err(e) => {
                warn!(error = %e, "cannot read or create the leader Lease; retrying");
                tokio::time::sleep(pause(&mut backoff)).await;
                continue;
            }
        };
        role.send_if_modified(|r| {
            let changed = *r == Role::Connecting;
            if changed {
                *r = Role::Standby;
            }
            changed
        });
        // After a failed Lease request a standby holds back for a Lease duration before running
        // again: the Lease may have run out only because nobody could reach the API server, and
        // the leader renews it within ~2 s of the API's return. Taking it at once would end the
        // leader's process for nothing. (A leader that really died is replaced that much later.)
        let mut hold_back: Option<tokio::time::Instant> = None;
        loop {
            let leader = *role.borrow() == Role::Leader;
            let held = hold_back.filter(|_| !leader);
            tokio::select! {
                biased;
                _ = async { resign.wait_for(|r| *r).await.map(|_| ()) } => {
                    if leader && let Err(e) = manager.release().await {
                        warn!(error = %e, "could not hand the Lease back");
                    }
                    info!("left the election");
                    role.send_replace(Role::Left);
                    return;
                }
                _ = tokio::time::sleep_until(held.unwrap_or_else(tokio::time::Instant::now)), if held.is_some() => {
                    hold_back = None;
                }
                changed = manager.changed(), if held.is_none() => match changed {
                    Ok(true) => {
                        info!(%identity, "acquired the leader Lease");
                        role.send_replace(Role::Leader);
                        backoff = watch_backoff();
                    }
                    Ok(false) if leader => {
                        role.send_replace(Role::Lost);
                        return;
                    }
                    Ok(false) => {}
                    Err(e) if leader => {
                        // The fence holds writes back meanwhile.
                        warn!(error = %e, "leader election: renewing the Lease failed; retrying");
                        tokio::time::sleep(pause(&mut backoff)).await;
                    }
                    Err(e) => {
                        warn!(error = %e, "leader election: Lease request failed; standing by");
                        hold_back = Some(tokio::time::Instant::now() + LEASE_DURATION);
                    }
                },
                Ok(()) = seen.changed() => {
                    let view = seen.borrow_and_update().clone();
                    let holder = view.as_ref().and_then(|v| v.holder.clone());
                    if leader && holder.as_deref().is_some_and(|h| h != identity) {
                        warn!(holder = ?holder, "another replica holds the leader Lease");
                        role.send_replace(Role::Lost);
                        return;
                    }
                    if !leader && holder.is_none() {
                        // Handed back: run for it now instead of when it would have expired.
                        continue 'connect;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(holder: Option<&str>, renewed_ago: u64, now: SystemTime) -> LeaseView {
        LeaseView {
            holder: holder.map(String::from),
            renewed: Some(now - Duration::from_secs(renewed_ago)),
            duration: Some(LEASE_DURATION),
        }
    }

    #[test]
    fn writes_only_while_our_lease_is_fresh() {
        let now = SystemTime::now();
        assert!(lease_allows_writes(
            Some(&view(Some("me"), 0, now)),
            "me",
            now
        ));
        assert!(lease_allows_writes(
            Some(&view(Some("me"), 8, now)),
            "me",
            now
        ));
        // Past the fence (12 s - 2 s): another replica may take it soon; stop writing.
        assert!(!lease_allows_writes(
            Some(&view(Some("me"), 10, now)),
            "me",
            now
        ));
        assert!(!lease_allows_writes(
            Some(&view(Some("other"), 0, now)),
            "me",
            now
        ));
        assert!(!lease_allows_writes(Some(&view(None, 0, now)), "me", now));
        assert!(!lease_allows_writes(None, "me", now));
        let mut no_duration = view(Some("me"), 0, now);
        no_duration.duration = None;
        assert!(!lease_allows_writes(Some(&no_duration), "me", now));
    }

    #[test]
    fn a_closed_fence_refuses_writes_on_a_fresh_lease() {
        let now = SystemTime::now();
        let (_seen, lease) = watch::channel(Some(view(Some("me"), 0, now)));
        let gate = WriteGate(Some(Arc::new(Fence {
            identity: "me".into(),
            lease,
            name: "ns/lease".into(),
            closed: AtomicBool::new(false),
        })));
        assert!(gate.allows_writes());
        gate.clone().close();
        assert!(!gate.allows_writes(), "a clone shares the fence");
    }

    fn election(role: watch::Receiver<Role>) -> Election {
        Election {
            role,
            gate: WriteGate::open(),
            resign: Arc::new(watch::channel(false).0),
            task: tokio::spawn(async {}),
            name: "ns/lease".into(),
        }
    }

    #[tokio::test]
    async fn leaving_the_election_is_not_losing_it() {
        use futures::FutureExt;
        // Stepped down: the election's task ended after saying Left.
        let (role_tx, role) = watch::channel(Role::Leader);
        let left = election(role);
        role_tx.send_replace(Role::Left);
        drop(role_tx);
        assert!(
            left.lost().now_or_never().is_none(),
            "a step-down is not a loss: the controller goes on draining"
        );
        let (role_tx, role) = watch::channel(Role::Leader);
        let lost = election(role);
        role_tx.send_replace(Role::Lost);
        drop(role_tx);
        assert!(matches!(
            lost.lost().now_or_never(),
            Some(LeaderError::Lost(_))
        ));
    }

    #[test]
    fn the_renewal_comes_before_the_fence_and_the_fence_before_expiry() {
        assert!(RENEW_BEFORE_EXPIRY > FENCE_BEFORE_EXPIRY);
        assert!(FENCE_BEFORE_EXPIRY > Duration::ZERO);
        assert!(
            LEASE_DURATION <= Duration::from_secs(13),
            "handover within 15 s"
        );
    }

    #[test]
    fn the_gate_is_open_without_election() {
        assert!(WriteGate::open().allows_writes());
    }

    #[test]
    fn an_identity_is_never_empty() {
        assert!(!identity().is_empty());
    }

    fn parse(args: &[&str]) -> Result<LeaderConfig, clap::Error> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            leader: LeaderConfig,
        }
        let argv = std::iter::once("kubespaces-operator").chain(args.iter().copied());
        <Cli as clap::Parser>::try_parse_from(argv).map(|c| c.leader)
    }

    #[test]
    fn flags() {
        assert_eq!(parse(&[]).unwrap(), LeaderConfig::default());
        let on = parse(&["--leader-elect", "--leader-elect-namespace", "ks"]).unwrap();
        assert!(on.enabled);
        assert_eq!(on.namespace.as_deref(), Some("ks"));
        assert_eq!(on.lease, "kubespaces-operator");
        assert!(
            parse(&["--leader-elect=true", "--leader-elect-namespace=ks"])
                .unwrap()
                .enabled
        );
        assert!(!parse(&["--leader-elect=false"]).unwrap().enabled);
        let e = parse(&["--leader-elect"]).unwrap_err().to_string();
        assert!(e.contains("--leader-elect-namespace"), "{e}");
    }
}
