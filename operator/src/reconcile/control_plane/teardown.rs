//! Teardown of the control plane, ahead of the namespace: the steps of [`removal::control_plane`]
//! carried out one after another, each waited for where the plan says so. The volumes themselves
//! are checked after the namespace is gone.

use k8s_openapi::api::core::v1::PersistentVolume;
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, DynamicObject, ListParams},
};

use super::ControlPlane;
use crate::{api::Tenant, error::Result};
use crate::{
    apply::{dynamic as apply, plan, removal},
    error::Error,
};

impl ControlPlane {
    /// Deletes the tenant's route, apps listener, vCluster, its claims and cluster-scoped
    /// objects, step by step, then what it has in the waker's namespace. Returns what still blocks the teardown (reason, message), if
    /// anything.
    pub async fn remove(
        &self,
        client: &Client,
        tenant: &Tenant,
    ) -> Result<Option<(String, String)>> {
        let name = tenant.name_any();
        let inventory = tenant
            .status
            .as_ref()
            .and_then(|s| s.control_plane.as_ref())
            .map(|c| c.objects.clone())
            .unwrap_or_default();
        let apps = self.settings.apps.is_some();
        for step in removal::control_plane(&name, &inventory, apps) {
            let mut left = vec![];
            for entry in &step.objects {
                if self.delete(client, &name, entry).await? {
                    left.push(shown(entry));
                }
            }
            for (gvk, selector) in &step.labelled {
                let (resource, _) = self.kinds().resolve(client, gvk).await?;
                let ns = crate::names::namespace(&name);
                let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
                for o in api.list(&ListParams::default().labels(selector)).await? {
                    if o.metadata.deletion_timestamp.is_none() {
                        delete(&api, &o.name_any()).await?;
                    }
                }
            }
            if let (Some(reason), false) = (step.waits, left.is_empty()) {
                return Ok(Some((
                    reason.to_owned(),
                    format!("{} being deleted", left.join(", ")),
                )));
            }
        }
        // The route is gone: no connection reaches the waker for this tenant any more.
        self.remove_waker_objects(client, &name).await?;
        Ok(None)
    }

    /// Deletes one object of the plan; whether it was there. Anything in the tenant's namespace
    /// may go (the namespace goes next); a cluster-scoped object only with the tenant's label.
    async fn delete(&self, client: &Client, tenant: &str, entry: &str) -> Result<bool> {
        if plan::is_cluster_scoped_entry(entry) {
            return apply::delete_entry(client, self.kinds(), tenant, entry).await;
        }
        let Some((gvk, ns, name)) = plan::parse_entry(entry) else {
            return Ok(false);
        };
        let resource = match self.kinds().resolve(client, &gvk).await {
            Ok((resource, _)) => resource,
            // The kind itself is gone (its CRD removed): nothing of it can be left.
            Err(Error::KubeApi(kube::Error::Discovery(_))) => return Ok(false),
            Err(e) => return Err(e),
        };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
        if api.get_opt(&name).await?.is_none() {
            return Ok(false);
        }
        delete(&api, &name).await?;
        Ok(true)
    }
}

/// An entry as a person reads it: `Kind namespace/name`.
fn shown(entry: &str) -> String {
    match plan::parse_entry(entry) {
        Some((gvk, ns, name)) => format!("{} {ns}/{name}", gvk.kind),
        None => entry.to_owned(),
    }
}

/// Volumes still bound to claims of the namespace: the teardown is not done until the
/// provisioner released them.
pub async fn volumes_left(client: &Client, tenant: &str) -> Result<Option<(String, String)>> {
    let ns = crate::names::namespace(tenant);
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let left: Vec<String> = volumes
        .list(&ListParams::default())
        .await?
        .into_iter()
        .filter(|v| {
            v.spec
                .as_ref()
                .and_then(|s| s.claim_ref.as_ref()?.namespace.as_deref())
                == Some(ns.as_str())
        })
        .map(|v| v.name_any())
        .collect();
    Ok((!left.is_empty()).then(|| {
        (
            "VolumesReleasing".to_owned(),
            format!(
                "PersistentVolume(s) {} of namespace {ns} are being released by their provisioner",
                left.join(", ")
            ),
        )
    }))
}

async fn delete<K>(api: &Api<K>, name: &str) -> Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
        Err(e) => Err(e.into()),
    }
}
