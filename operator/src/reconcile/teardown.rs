//! Teardown through the finalizer, in a fixed order, and nothing orphaned: the finalizer goes
//! only when the namespace is really gone (not merely Terminating). With `deletionPolicy:
//! Orphan` the host objects stay and only the owner reference that would let the garbage
//! collector remove them is dropped.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, Patch, PatchParams},
    runtime::controller::Action,
};
use serde_json::json;

use super::{Context, remove_finalizer, status};
use crate::{
    api::{DeletionPolicy, Tenant},
    conditions,
    error::Result,
    names, observe,
};

const TEARDOWN_REQUEUE: Duration = Duration::from_secs(2);

pub async fn run(api: &Api<Tenant>, tenant: &Tenant, ctx: &Context) -> Result<Action> {
    let name = tenant.name_any();
    if !tenant.has_teardown_finalizer() {
        forget(ctx, &name);
        return Ok(Action::await_change());
    }
    let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
    let ns_name = names::namespace(&name);
    // Read the namespace fresh: letting go of the finalizer must not rest on a stale cache.
    let ns = namespaces.get_opt(&ns_name).await?;
    let ours = ns
        .as_ref()
        .is_some_and(|n| observe::namespace_conflict(tenant, Some(n)).is_none());

    // A copy of the tenant's credential outside its namespace goes first, whatever the policy.
    super::connection::remove(tenant, ctx).await?;
    let blocked = match (tenant.spec.deletion_policy, ns) {
        (DeletionPolicy::Orphan, Some(ns)) if ours => {
            release(&namespaces, tenant, &ns).await?;
            None
        }
        (DeletionPolicy::Delete, Some(ns)) if ours => {
            // The route and the tenant control plane go first; the namespace is last because
            // it holds everything else.
            let first = match (&ctx.control_plane, ns.metadata.deletion_timestamp.is_none()) {
                (Some(cp), true) => cp.remove(&ctx.client, tenant).await?,
                _ => None,
            };
            if first.is_none() && ns.metadata.deletion_timestamp.is_none() {
                namespaces
                    .delete(&ns_name, &DeleteParams::background())
                    .await?;
            }
            first.or_else(|| {
                Some((
                    "NamespaceTerminating".to_owned(),
                    observe::terminating_reason(&ns),
                ))
            })
        }
        // The namespace is gone: its volumes must be too, once their provisioner released them.
        (DeletionPolicy::Delete, None) if ctx.control_plane.is_some() => {
            crate::reconcile::control_plane::teardown::volumes_left(&ctx.client, &name).await?
        }
        // Gone, or never ours (a conflicting namespace is left alone).
        _ => None,
    };
    match blocked {
        Some(blocked) => {
            status::write(
                api,
                tenant,
                status::with_conditions(tenant, conditions::deleting(Some(blocked)), None),
                ctx,
            )
            .await?;
            Ok(Action::requeue(TEARDOWN_REQUEUE))
        }
        None => {
            remove_finalizer(api, tenant, ctx).await?;
            forget(ctx, &name);
            Ok(Action::await_change())
        }
    }
}

/// Drops what the operator keeps in memory for a tenant that is gone, whatever its deletion
/// policy (an orphaned tenant's objects stay, but nothing of ours refers to them any more).
fn forget(ctx: &Context, tenant: &str) {
    ctx.metrics.set_phase(tenant, None);
    if let Some(cp) = &ctx.control_plane {
        cp.forget(tenant);
    }
}

/// Drops the Tenant's owner reference from the namespace so the garbage collector keeps it.
async fn release(namespaces: &Api<Namespace>, tenant: &Tenant, ns: &Namespace) -> Result<()> {
    let uid = tenant.uid().unwrap_or_default();
    let refs = ns.owner_references();
    if !refs.iter().any(|r| r.uid == uid) {
        return Ok(());
    }
    let kept: Vec<_> = refs.iter().filter(|r| r.uid != uid).cloned().collect();
    let patch =
        json!({"metadata": {"ownerReferences": kept, "resourceVersion": ns.resource_version()}});
    namespaces
        .patch(
            &ns.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}
