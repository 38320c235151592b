//! What a tenant has in the waker's namespace: the ReferenceGrant that lets its API route reach
//! the waker (applied with the route), and the activity Lease the waker writes. Both go at the
//! teardown, after the route: nothing can reach the waker for the tenant any more.

use k8s_openapi::api::coordination::v1::Lease;
use kube::{
    Api, Client, ResourceExt,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams},
};

use super::ControlPlane;
use crate::{
    apply::plan::holds,
    build::control_plane::{route, settings::ServiceRef},
    error::Result,
    names,
};

fn grants(client: &Client, waker: &ServiceRef) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(route::GROUP, route::GRANT_VERSION, route::GRANT_KIND);
    let resource = ApiResource::from_gvk_with_plural(&gvk, "referencegrants");
    Api::namespaced_with(client.clone(), &waker.namespace, &resource)
}

impl ControlPlane {
    /// Applies the tenant's ReferenceGrant when it is missing or not as built.
    pub(super) async fn ensure_waker_grant(
        &self,
        client: &Client,
        waker: &ServiceRef,
        grant: DynamicObject,
    ) -> Result<()> {
        let api = grants(client, waker);
        let name = grant.name_any();
        if let Some(live) = api.get_opt(&name).await?
            && holds(&live, &grant)
        {
            return Ok(());
        }
        let params = PatchParams::apply(names::CHILD_FIELD_MANAGER).force();
        api.patch(&name, &params, &Patch::Apply(&grant)).await?;
        Ok(())
    }

    /// Deletes the tenant's ReferenceGrant and activity Lease, each only if it carries the
    /// tenant's label.
    pub(super) async fn remove_waker_objects(&self, client: &Client, tenant: &str) -> Result<()> {
        let Some(waker) = &self.settings.waker else {
            return Ok(());
        };
        let grants = grants(client, waker);
        let leases: Api<Lease> = Api::namespaced(client.clone(), &waker.namespace);
        let ours = |labels: &std::collections::BTreeMap<String, String>| {
            labels.get(names::TENANT_LABEL).map(String::as_str) == Some(tenant)
        };
        let grant = names::api_route_grant(tenant);
        if let Some(g) = grants.get_opt(&grant).await?
            && ours(g.labels())
        {
            gone(grants.delete(&grant, &DeleteParams::default()).await)?;
        }
        let lease = names::activity_lease(tenant);
        if let Some(l) = leases.get_opt(&lease).await?
            && ours(l.labels())
        {
            gone(leases.delete(&lease, &DeleteParams::default()).await)?;
        }
        Ok(())
    }
}

/// A delete's result, where "not found" (deleted meanwhile) is success.
fn gone<T>(result: kube::Result<T>) -> Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
