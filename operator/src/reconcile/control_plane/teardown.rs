//! Teardown of the control plane, ahead of the namespace: the route first (the public host
//! stops answering), then the apps listener, its certificate and the certificate's Secret (the
//! apps hosts stop answering), then the vCluster and its volume claims, then what the chart made
//! outside the namespace. The volumes themselves are checked after the namespace is gone.

use k8s_openapi::api::{
    apps::v1::StatefulSet,
    core::v1::{PersistentVolume, PersistentVolumeClaim, Secret},
};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, DynamicObject, ListParams},
};

use super::ControlPlane;
use crate::{api::Tenant, error::Result};
use crate::{
    apply::{dynamic as apply, plan},
    build::control_plane::apps,
    names::control_plane as names,
};

impl ControlPlane {
    /// Deletes the tenant's route, vCluster, its claims and cluster-scoped objects. Returns what
    /// still blocks the teardown (reason, message), if anything.
    pub async fn remove(
        &self,
        client: &Client,
        tenant: &Tenant,
    ) -> Result<Option<(String, String)>> {
        let name = tenant.name_any();
        let ns = crate::names::namespace(&name);
        let routes: Api<DynamicObject> = self.route_api(client, &ns).await?;
        if routes.get_opt(names::API_ROUTE).await?.is_some() {
            delete(&routes, names::API_ROUTE).await?;
            return Ok(Some((
                "RemovingRoute".into(),
                format!("TLSRoute {ns}/{} is being deleted", names::API_ROUTE),
            )));
        }
        if let Some(blocked) = self.remove_apps(client, &ns).await? {
            return Ok(Some(blocked));
        }
        let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
        if sets.get_opt(names::RELEASE).await?.is_some() {
            delete(&sets, names::RELEASE).await?;
        }
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
        for claim in claims
            .list(&ListParams::default().labels("app=vcluster"))
            .await?
        {
            if claim.metadata.deletion_timestamp.is_none() {
                delete(&claims, &claim.name_any()).await?;
            }
        }
        // Cluster-scoped objects of the inventory (none with the default values; the chart
        // renders ClusterRoles for some syncs). The namespace takes the namespaced ones.
        let inventory = tenant
            .status
            .as_ref()
            .and_then(|s| s.control_plane.as_ref())
            .map(|c| c.objects.clone())
            .unwrap_or_default();
        for entry in inventory
            .iter()
            .filter(|e| plan::is_cluster_scoped_entry(e))
        {
            apply::delete_entry(client, self.kinds(), &name, entry).await?;
        }
        Ok(None)
    }

    /// Deletes the apps Gateway, the Certificate and its Secret (cert-manager does not delete
    /// the Secret with the Certificate); blocked until none of them is left.
    async fn remove_apps(&self, client: &Client, ns: &str) -> Result<Option<(String, String)>> {
        if self.settings.apps.is_none() {
            return Ok(None);
        }
        let mut left = vec![];
        let exposure = [
            (apps::GATEWAY, names::APPS_GATEWAY),
            (apps::CERTIFICATE, names::APPS_CERTIFICATE),
        ];
        for (gvk, name) in exposure {
            let api = self.api(client, ns, gvk).await?;
            if api.get_opt(name).await?.is_some() {
                delete(&api, name).await?;
                left.push(format!("{} {ns}/{name}", gvk.2));
            }
        }
        let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
        if secrets.get_opt(names::APPS_CERTIFICATE).await?.is_some() {
            delete(&secrets, names::APPS_CERTIFICATE).await?;
            left.push(format!("Secret {ns}/{}", names::APPS_CERTIFICATE));
        }
        Ok((!left.is_empty()).then(|| {
            (
                "RemovingAppsListener".to_owned(),
                format!("{} being deleted", left.join(", ")),
            )
        }))
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
