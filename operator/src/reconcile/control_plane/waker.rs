//! What a tenant has in the waker's namespace: the ReferenceGrant that lets its API route reach
//! the waker (applied with the route), and the activity Lease the waker renews (made here: the
//! waker may only renew, so a connection that ends after the teardown cannot make it again).
//! Both go at the teardown, after the route: nothing can reach the waker for the tenant any more.

use k8s_openapi::api::coordination::v1::Lease;
use kube::{
    Api, Client, ResourceExt,
    api::{
        ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ObjectMeta, Patch, PatchParams,
        PostParams,
    },
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
    /// Applies the tenant's ReferenceGrant when it is missing or not as built, and makes its
    /// activity Lease when it is missing.
    pub(super) async fn ensure_waker_objects(
        &self,
        client: &Client,
        tenant: &str,
        waker: &ServiceRef,
        grant: DynamicObject,
    ) -> Result<()> {
        let leases: Api<Lease> = Api::namespaced(client.clone(), &waker.namespace);
        let lease = names::activity_lease(tenant);
        if leases.get_opt(&lease).await?.is_none() {
            let new = Lease {
                metadata: ObjectMeta {
                    name: Some(lease),
                    labels: Some(activity_labels(tenant)),
                    ..ObjectMeta::default()
                },
                spec: None,
            };
            match leases.create(&PostParams::default(), &new).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
        }
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

/// The labels of a tenant's activity Lease: the tenant's, and the waker's, which the operator's
/// watch of them selects.
pub fn activity_labels(tenant: &str) -> std::collections::BTreeMap<String, String> {
    [
        (names::TENANT_LABEL.to_owned(), tenant.to_owned()),
        (
            names::MANAGED_BY_LABEL.to_owned(),
            crate::waker::activity::MANAGED_BY.to_owned(),
        ),
    ]
    .into()
}

/// A delete's result, where "not found" (deleted meanwhile) is success.
fn gone<T>(result: kube::Result<T>) -> Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
