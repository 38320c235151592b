//! The tenant's own control plane: a vCluster from the pinned chart, rendered with helm,
//! applied with server-side apply under an inventory (and swept by label), exposed by a TLSRoute
//! at the tenant's public host, and a kubeconfig whose credential the operator issues, checks
//! and renews.
//!
//! [`ControlPlane::render`] renders the chart, from which
//! [`desired::of`](crate::build::desired::of) builds the control plane's whole desired state
//! before anything is applied; [`ControlPlane::ensure`] applies that and observes the result.

pub mod credential;
mod quiet_client;
pub mod roll;
pub mod teardown;
mod waker;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::{
        apps::v1::StatefulSet,
        core::v1::{Pod, Secret},
        rbac::v1::Subject,
    },
    jiff::Timestamp,
};
use kube::{
    Api, Client, ResourceExt,
    api::{DynamicObject, Patch, PatchParams},
};
use tracing::{info, warn};

use crate::{
    api::{ControlPlaneStatus, KUBECONFIG_SECRET_KEY, SecretReference, Tenant, TenantEndpoints},
    conditions::{self, Desired},
    error::Result,
};
use crate::{
    apply::dynamic as apply,
    build::{
        control_plane::{VclusterSettings, apps, network, values},
        desired,
    },
    helm as chart,
    names::control_plane as names,
    observe::control_plane as observe,
};

use conditions::API_REACHABLE;

/// How soon to look again while the control plane comes up: most steps (the admin Secret, the
/// route's status) have no watch of ours.
const PROGRESS_REQUEUE: Duration = Duration::from_secs(2);
/// How soon a tenant whose control plane waits for its turn to restart looks again.
const ROLL_REQUEUE: Duration = Duration::from_secs(5);

/// When a tenant's rendered objects were last all applied, their inventory and fingerprint.
type Applied = (Instant, Vec<String>, u64);

/// How far the control plane is, as applying and observing it found.
#[derive(Default)]
pub struct Progress {
    pub details: Vec<Desired>,
    pub endpoints: Option<TenantEndpoints>,
    pub kubeconfig: Option<SecretReference>,
    pub status: Option<ControlPlaneStatus>,
    pub requeue: Option<Duration>,
    /// The [`conditions::ASLEEP`] condition, while the tenant sleeps, wakes or has a sleep
    /// request that cannot be read; it does not hold `Ready` back.
    pub asleep: Option<Desired>,
    /// What woke a tenant that slept until this pass (`connection` or `request`), once.
    pub woke: Option<&'static str>,
}

pub struct ControlPlane {
    pub settings: VclusterSettings,
    /// Who the operator is: bound to [`crate::build::access::CONTROL_PLANE_ROLE`] in each tenant
    /// namespace, which is all it may do there beyond its cluster-wide role.
    pub operator: Subject,
    /// The host's API server, which the control plane's pod must reach.
    pub api_server: network::ApiServer,
    pub base_domain: String,
    /// The Pod Security Standard tenant namespaces enforce; the vCluster enforces it inside too.
    pub pod_security: String,
    /// The host's Kubernetes version (`helm template --kube-version`).
    pub kube_version: String,
    renderer: chart::Renderer,
    kinds: apply::Kinds,
    /// When each tenant's rendered objects were last all applied (drift correction of objects
    /// without a watch happens at most this often), their inventory and what they were
    /// ([`fingerprint`]: a change such as a sleep's replica count is applied at once).
    applied: Mutex<HashMap<String, Applied>>,
    /// When each tenant's route and apps objects were last all applied, and what was wanted
    /// of them then ([`fingerprint`]).
    exposed: Mutex<HashMap<String, (Instant, u64)>>,
    reapply: Duration,
    /// Which restarts of control planes may happen now.
    gate: roll::Gate,
}

impl ControlPlane {
    pub fn new(
        settings: VclusterSettings,
        operator: Subject,
        api_server: network::ApiServer,
        base_domain: String,
        pod_security: String,
        kube_version: String,
        reapply: Duration,
    ) -> Self {
        Self {
            settings,
            operator,
            api_server,
            base_domain,
            pod_security,
            kube_version,
            renderer: chart::Renderer::default(),
            kinds: apply::Kinds::default(),
            applied: Mutex::new(HashMap::new()),
            exposed: Mutex::new(HashMap::new()),
            reapply,
            gate: roll::Gate::default(),
        }
    }

    fn api_host(&self, tenant: &str) -> String {
        crate::names::api_host(tenant, &self.base_domain)
    }

    /// What the platform gives every tenant's control plane, for
    /// [`desired::of`](crate::build::desired::of).
    pub fn platform(&self) -> desired::Platform<'_> {
        desired::Platform {
            settings: &self.settings,
            operator: &self.operator,
            api_server: &self.api_server,
            base_domain: &self.base_domain,
        }
    }

    /// Renders the chart for `tenant` (helm, the one subprocess): nothing is applied.
    pub async fn render(
        &self,
        tenant: &Tenant,
    ) -> std::result::Result<desired::Rendered, chart::ChartError> {
        let name = tenant.name_any();
        let ns = crate::names::namespace(&name);
        let values =
            values::tenant_values(&name, &self.base_domain, &self.pod_security, &self.settings);
        let objects = self
            .renderer
            .render(&self.settings, &name, &ns, &self.kube_version, &values)
            .await?;
        let digest = self.renderer.verify(&self.settings).await?;
        Ok(desired::Rendered { objects, digest })
    }

    /// Applies the built state and reports, one condition per step, how far the control plane
    /// is: running, routed, answering the credential handed out.
    #[tracing::instrument(skip_all, fields(tenant = %tenant.name_any()))]
    pub async fn ensure(
        &self,
        client: &Client,
        tenant: &Tenant,
        desired: desired::ControlPlane,
        statefulset: Option<&StatefulSet>,
        // Every control plane's StatefulSet (the cache), for the roll's gate.
        statefulsets: &[Arc<StatefulSet>],
        // Whether the watched objects (StatefulSet, Service) are all there.
        complete: bool,
    ) -> Result<Progress> {
        let name = tenant.name_any();
        let ns = crate::names::namespace(&name);
        let host = self.api_host(&name);
        let endpoint = credential::Endpoint {
            public_host: &host,
            gateway_address: self.settings.gateway_address.as_deref(),
        };
        let previous = tenant
            .status
            .as_ref()
            .and_then(|s| s.control_plane.as_ref());
        let apps_url = self
            .settings
            .apps
            .as_ref()
            .map(|a| apps::endpoint(&name, &self.base_domain, a));
        let decision = desired.sleep.clone();
        let asleep = decision.asleep.is_some();
        let sleeping = observe::sleeping(&ns, observe::stopped(statefulset), &decision);
        // 1. The rendered chart, and the prune of what a new render dropped, unless it would
        // restart the control plane and it is not its turn; then the route and the apps objects.
        let inventory = previous.map(|p| p.objects.clone()).unwrap_or_default();
        let mut rendered = desired.chart;
        let wanted = fingerprint(&rendered);
        let turn = match roll::template_hash(&rendered) {
            Some(hash) => {
                let policy = self.settings.roll;
                let turn = self
                    .gate
                    .turn(&name, statefulset, &hash, statefulsets, policy);
                if let roll::Turn::Apply { rolled_at } = &turn {
                    roll::stamp(&mut rendered, &hash, *rolled_at);
                }
                turn
            }
            None => roll::Turn::Apply { rolled_at: None },
        };
        let objects = match turn {
            roll::Turn::Apply { .. } => {
                self.apply_chart(client, &name, rendered, wanted, &inventory, complete)
                    .await?
            }
            roll::Turn::Wait { .. } | roll::Turn::Halted { .. } => inventory.clone(),
        };
        if let (Some(waker), Some(grant)) = (&self.settings.waker, desired.waker_grant) {
            self.ensure_waker_objects(client, &name, waker, grant)
                .await?;
        }
        let exposure: Vec<DynamicObject> =
            std::iter::once(desired.route).chain(desired.apps).collect();
        let mut live = self.expose(client, &name, exposure).await?.into_iter();
        let (route, certificate, gateway) = (live.next(), live.next(), live.next());
        let mut progress = Progress {
            endpoints: Some(TenantEndpoints {
                api: Some(endpoint.public_url()),
                apps: apps_url.clone(),
            }),
            status: Some(ControlPlaneStatus {
                chart_version: Some(self.settings.chart_version.clone()),
                chart_digest: Some(desired.digest),
                kubernetes_version: previous.and_then(|p| p.kubernetes_version.clone()),
                footprint: desired.footprint,
                objects,
            }),
            ..Progress::default()
        };

        // 2. The workload, and the admin kubeconfig it writes once it runs; asleep, neither.
        let running = !asleep && observe::running(statefulset);
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
        let admin = match running {
            true => secrets
                .get_opt(names::ADMIN_SECRET)
                .await?
                .and_then(|s| credential::kubeconfig_of(&s, names::ADMIN_SECRET_KEY)),
            false => None,
        };
        // Not running: what its pod waits for (scheduling, a volume, an image, a crash), which
        // the StatefulSet's status does not say.
        let pod = match running || asleep {
            false => {
                Api::<Pod>::namespaced(client.clone(), &ns)
                    .get_opt(names::CONTROL_PLANE_POD)
                    .await?
            }
            true => None,
        };
        let why = observe::pod_waiting(pod.as_ref(), statefulset);
        let chart = &self.settings.chart_version;
        let mut workload = observe::workload(&ns, running, admin.is_some(), chart, why);
        roll::explain(&mut workload, &turn, self.settings.roll);
        progress.details.push(match asleep {
            true => sleeping[0].clone(),
            false => workload,
        });

        // 3. The route.
        let accepted = observe::route_accepted(route.as_ref(), &ns, &self.settings.api_gateway);
        progress.details.push(observe::route(&accepted, &ns, &host));

        // 4. The credential, and a request through the public route with it.
        let reachable = match (&admin, &accepted) {
            _ if asleep => sleeping[1].clone(),
            (Some(admin), Ok(())) => {
                self.ensure_credential(&secrets, &name, &endpoint, admin, &mut progress)
                    .await
            }
            _ => Desired::new(
                API_REACHABLE,
                false,
                "Waiting",
                "waiting for the control plane and its route".to_owned(),
            ),
        };
        progress.details.push(reachable);

        // 5. The apps listener and its certificate.
        if let Some(served) = &apps_url {
            let apps = observe::apps(certificate.as_ref(), gateway.as_ref(), &ns, served);
            progress.details.extend(apps);
        }
        // 6. Sleep: asleep (or its pod still stopping), waking, or a request that cannot be read.
        let [_, _, sleep] = sleeping;
        let slept = tenant
            .condition(conditions::ASLEEP)
            .is_some_and(|c| c.status == "True");
        progress.asleep = match asleep {
            true => Some(sleep),
            false => observe::waking(tenant.condition(conditions::ASLEEP), &progress.details),
        };
        if !asleep && slept {
            progress.woke = decision.woken_by;
        }
        if let Some(problem) = decision.problem {
            let reason = "SleepRequestInvalid";
            progress.asleep = Some(Desired::new(conditions::ASLEEP, asleep, reason, problem));
        }
        let settling = progress
            .asleep
            .as_ref()
            .is_some_and(|a| a.reason == conditions::FALLING_ASLEEP);
        if settling || !progress.details.iter().all(|d| d.status) {
            progress.requeue = Some(PROGRESS_REQUEUE);
        }
        // Awake with an idle period: look again when it would be over (the waker's Lease writes
        // wake the reconcile sooner, and push it back).
        if let Some(idle_in) = decision.idle_in {
            let next = idle_in + Duration::from_secs(1);
            progress.requeue = Some(progress.requeue.map_or(next, |d| d.min(next)));
        }
        if !matches!(turn, roll::Turn::Apply { .. }) {
            // No watch of ours says when another tenant's restart is over.
            let next = progress
                .requeue
                .map_or(ROLL_REQUEUE, |d| d.min(ROLL_REQUEUE));
            progress.requeue = Some(next);
        }
        Ok(progress)
    }

    /// Applies the rendered chart under the inventory `previous` (what the status says the last
    /// apply left; the operator's own access to the namespace went out with the host objects), and
    /// prunes what it no longer has, by the inventory and then by label (the
    /// sweep); returns the new inventory. Whether it was applied lately is kept in memory (a
    /// restarted operator applies everything once): a converged tenant costs no write until the
    /// resync period (`--resync`) has passed.
    async fn apply_chart(
        &self,
        client: &Client,
        name: &str,
        rendered: Vec<DynamicObject>,
        // What was rendered, before the roll's stamp (which may say "now" while a roll is on).
        wanted: u64,
        previous: &[String],
        complete: bool,
    ) -> Result<Vec<String>> {
        let plan = apply::plan(client, &self.kinds, name, rendered, previous).await?;
        let last = self.applied.lock().ok().and_then(|a| a.get(name).cloned());
        let stale = match &last {
            Some((at, applied, was)) => {
                *applied != plan.inventory || *was != wanted || at.elapsed() >= self.reapply
            }
            None => true,
        };
        if stale || !complete || previous != plan.inventory {
            apply::apply_all(client, &self.kinds, &plan).await?;
            apply::prune(client, &self.kinds, name, &plan).await?;
            apply::sweep(client, &self.kinds, name, &plan).await?;
            if let Ok(mut a) = self.applied.lock() {
                a.insert(
                    name.to_owned(),
                    (Instant::now(), plan.inventory.clone(), wanted),
                );
            }
        }
        Ok(plan.inventory)
    }

    /// The route and the apps objects as they are live: applied when they drifted or are
    /// missing, and all of them when what we want of them changed or was last applied a while
    /// ago.
    async fn expose(
        &self,
        client: &Client,
        name: &str,
        exposure: Vec<DynamicObject>,
    ) -> Result<Vec<DynamicObject>> {
        let wanted = fingerprint(&exposure);
        let due = self
            .exposed
            .lock()
            .ok()
            .and_then(|e| e.get(name).copied())
            .is_none_or(|(at, d)| d != wanted || at.elapsed() >= self.reapply);
        let live = apply::apply_changed(client, &self.kinds, name, exposure, due).await?;
        if due && let Ok(mut e) = self.exposed.lock() {
            e.insert(name.to_owned(), (Instant::now(), wanted));
        }
        Ok(live)
    }

    /// Issues (or renews) the kubeconfig's credential when needed, and checks it with a request
    /// through the public route.
    async fn ensure_credential(
        &self,
        secrets: &Api<Secret>,
        tenant: &str,
        endpoint: &credential::Endpoint<'_>,
        admin: &str,
        progress: &mut Progress,
    ) -> Desired {
        let existing = match secrets.get_opt(crate::api::KUBECONFIG_SECRET).await {
            Ok(s) => s,
            Err(e) => return unreachable("KubeApi", crate::error::describe(&e)),
        };
        let now = Timestamp::now();
        let ca = match credential::ca_data(admin) {
            Ok(ca) => ca,
            Err(m) => {
                let secret = names::ADMIN_SECRET;
                let ns = crate::names::namespace(tenant);
                let message =
                    format!("the admin kubeconfig in Secret {ns}/{secret} cannot be used: {m}");
                return unreachable("AdminKubeconfigInvalid", message);
            }
        };
        // A kubeconfig is kept while its credential is young enough and it is exactly what the
        // operator writes, for the control plane's current CA (a control plane that lost its PKI
        // made a new one; the owner may have written the Secret).
        let admin = match credential::admin_client(endpoint, admin).await {
            Ok(c) => c,
            Err(e) => return unreachable("AdminKubeconfigInvalid", e.to_string()),
        };
        // Revoked: the account it was issued for is gone (deleted inside the tenant), or is
        // another one of the same name.
        let account = match credential::account_uid(endpoint, &admin).await {
            Ok(uid) => uid,
            Err(e) => return unreachable("RequestFailed", e.to_string()),
        };
        let current = existing
            .as_ref()
            .filter(|s| !credential::due(s, now))
            .filter(|s| account.is_some() && credential::issued_for(s) == account.as_deref())
            .and_then(|s| credential::kubeconfig_of(s, KUBECONFIG_SECRET_KEY))
            .filter(|k| credential::own_token(tenant, &endpoint.public_url(), &ca, k).is_some());
        if let Some(k) = current {
            return match credential::probe(endpoint, &k).await {
                Ok(version) => self.reachable(tenant, version, existing.as_ref(), now, progress),
                Err((_, message)) => unreachable("RequestFailed", message),
            };
        }
        if existing.is_some() {
            info!(
                tenant,
                "the tenant credential is due, revoked, for another CA or not as the operator wrote it; issuing a new one"
            );
        }
        let issued =
            match credential::issue(endpoint, &admin, self.settings.credential_lifetime).await {
                Ok(i) => i,
                Err(e) => return unreachable("CredentialNotIssued", e.to_string()),
            };
        let kubeconfig = credential::kubeconfig(tenant, &endpoint.public_url(), &ca, &issued.token);
        let secret = credential::secret(tenant, kubeconfig.clone(), &issued);
        let params = PatchParams::apply(crate::names::CHILD_FIELD_MANAGER).force();
        let written = match secrets
            .patch(
                crate::api::KUBECONFIG_SECRET,
                &params,
                &Patch::Apply(&secret),
            )
            .await
        {
            Ok(s) => s,
            Err(e) => return unreachable("KubeApi", crate::error::describe(&e)),
        };
        info!(tenant, expires = %issued.expires_at, "issued the tenant kubeconfig credential");
        match credential::probe(endpoint, &kubeconfig).await {
            Ok(version) => self.reachable(tenant, version, Some(&written), now, progress),
            Err((_, message)) => unreachable("RequestFailed", message),
        }
    }

    fn reachable(
        &self,
        tenant: &str,
        version: String,
        secret: Option<&Secret>,
        now: Timestamp,
        progress: &mut Progress,
    ) -> Desired {
        progress.kubeconfig = Some(SecretReference {
            name: crate::api::KUBECONFIG_SECRET.into(),
            namespace: crate::names::namespace(tenant),
        });
        if let Some(status) = progress.status.as_mut() {
            status.kubernetes_version = Some(version.clone());
        }
        progress.requeue = secret.and_then(|s| credential::renew_in(s, now));
        Desired::new(
            API_REACHABLE,
            true,
            "Authenticated",
            format!(
                "an authenticated request with the kubeconfig in Secret {}/{} through {} succeeded (Kubernetes {version})",
                crate::names::namespace(tenant),
                crate::api::KUBECONFIG_SECRET,
                crate::names::api_host(tenant, &self.base_domain)
            ),
        )
    }

    /// Forgets what is kept in memory for a tenant that is gone.
    pub fn forget(&self, tenant: &str) {
        self.renderer.forget(tenant);
        self.gate.forget(tenant);
        if let Ok(mut a) = self.applied.lock() {
            a.remove(tenant);
        }
        if let Ok(mut e) = self.exposed.lock() {
            e.remove(tenant);
        }
    }

    pub fn kinds(&self) -> &apply::Kinds {
        &self.kinds
    }
}

/// A fingerprint of what is wanted of some objects, to notice a change of it (in memory only,
/// so the hasher need not be stable across versions).
fn fingerprint(objects: &[DynamicObject]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(objects)
        .unwrap_or_default()
        .hash(&mut h);
    h.finish()
}

fn unreachable(reason: &str, message: String) -> Desired {
    warn!(%reason, %message, "tenant API not reachable with the handed-out credential");
    Desired::new(API_REACHABLE, false, reason.to_owned(), message)
}
