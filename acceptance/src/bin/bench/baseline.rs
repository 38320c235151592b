//! The baseline: a plain client that does, for a Tenant that exists, what the operator's path
//! cannot avoid — the same host objects (the operator's own `build::*`), a wait for the quota
//! controller, the same final status (the operator's own `status::from_pass`) — in a straight
//! line. Its objects carry [`BASELINE_LABEL`] instead of the tenant label the operator watches,
//! so they never enter the operator's caches.

use std::{collections::HashMap, sync::Arc};

use anyhow::{Context, Result};
use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::ResourceQuota;
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{Patch, PatchParams, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use kubespaces_operator::{
    api::Tenant,
    build::{self, settings::HostConfig},
    names,
    observe::{self, HostObjects},
    reconcile::{Pass, status},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::json;
use tokio::sync::Notify;

/// The label the baseline puts on its host objects instead of `kubespaces.io/tenant`: its value
/// is the baseline run.
pub const BASELINE_LABEL: &str = "kubespaces.io/bench-baseline";

/// Quotas the quota controller has computed, by namespace, for the baseline to wait on.
#[derive(Default)]
struct Enforced {
    quotas: std::sync::Mutex<HashMap<String, ResourceQuota>>,
    changed: Notify,
}

pub struct Baseline {
    client: Client,
    host: HostConfig,
    run: String,
    enforced: Arc<Enforced>,
}

impl Baseline {
    /// A baseline for one run; watches that run's quotas (one watch request for the whole side).
    pub fn new(client: &Client, host: HostConfig, run: &str) -> Arc<Baseline> {
        let enforced = Arc::new(Enforced::default());
        let api: Api<ResourceQuota> = Api::all(client.clone());
        let config = watcher::Config::default().labels(&format!("{BASELINE_LABEL}={run}"));
        let e = enforced.clone();
        tokio::spawn(async move {
            let mut events = std::pin::pin!(watcher(api, config).applied_objects());
            while let Some(Ok(q)) = events.next().await {
                if q.status.as_ref().and_then(|s| s.hard.as_ref()).is_some() {
                    let ns = q.namespace().unwrap_or_default();
                    e.quotas.lock().expect("quota map").insert(ns, q);
                    e.changed.notify_waiters();
                }
            }
        });
        Arc::new(Baseline {
            client: client.clone(),
            host,
            run: run.to_owned(),
            enforced,
        })
    }

    /// The quota of `tenant` once the quota controller enforces its spec.
    async fn enforced(&self, tenant: &Tenant) -> ResourceQuota {
        let ns = names::namespace(&tenant.name_any());
        loop {
            let changed = self.enforced.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            if let Some(q) = self.enforced.quotas.lock().expect("quota map").get(&ns)
                && observe::quota_enforced(tenant, &self.host, q)
            {
                return q.clone();
            }
            changed.await;
        }
    }

    /// A host object as the baseline creates it: the operator's object, with the baseline's
    /// label in place of the tenant label the operator watches.
    fn unwatched<K: Resource>(&self, mut object: K) -> K {
        let labels = object.meta_mut().labels.get_or_insert_default();
        labels.remove(names::TENANT_LABEL);
        labels.insert(BASELINE_LABEL.to_owned(), self.run.clone());
        object
    }

    /// For a created Tenant `t`: its namespace (owned by the Tenant), then the four objects in
    /// it at once; the wait for the quota controller (the operator's Ready needs that too); the
    /// status the operator would write, with the operator's field manager.
    pub async fn provision(&self, t: Tenant) -> Result<()> {
        let (client, host) = (&self.client, &self.host);
        let name = t.name_any();
        let ns = names::namespace(&name);
        let namespace = create(
            &Api::all(client.clone()),
            &self.unwatched(build::namespace(&t, host)),
        )
        .await?;
        let (quota, limit_range, owner_binding, network_policy) = futures::try_join!(
            create_in(client, &ns, self.unwatched(build::quota(&t, host))),
            create_in(client, &ns, self.unwatched(build::limit_range(&t, host))),
            create_in(client, &ns, self.unwatched(build::owner_binding(&t))),
            create_in(client, &ns, self.unwatched(build::network_policy(&t, host))),
        )?;
        let quota = if observe::quota_enforced(&t, host, &quota) {
            quota
        } else {
            self.enforced(&t).await
        };
        let objects = HostObjects {
            namespace: Some(namespace),
            quota: Some(quota),
            limit_range: Some(limit_range),
            owner_binding: Some(owner_binding),
            network_policy: Some(network_policy),
        };
        let outcome = Pass {
            details: observe::details(&t, host, &objects),
            stalled: None,
            quota: observe::quota_status(objects.quota.as_ref()),
            connection: None,
            control_plane: None,
        };
        let new = status::from_pass(&t, &outcome);
        let body = json!({"apiVersion": "kubespaces.io/v1alpha1", "kind": "Tenant", "status": new});
        Api::<Tenant>::all(client.clone())
            .patch_status(
                &name,
                &PatchParams::apply(names::STATUS_FIELD_MANAGER).force(),
                &Patch::Apply(&body),
            )
            .await
            .with_context(|| format!("status of Tenant {name}"))?;
        Ok(())
    }
}

pub async fn create<K>(api: &Api<K>, object: &K) -> Result<K>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    api.create(&PostParams::default(), object)
        .await
        .with_context(|| format!("create {}", object.meta().name.as_deref().unwrap_or("?")))
}

async fn create_in<K>(client: &Client, ns: &str, object: K) -> Result<K>
where
    K: Resource<Scope = NamespaceResourceScope>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    create(&Api::namespaced(client.clone(), ns), &object).await
}
