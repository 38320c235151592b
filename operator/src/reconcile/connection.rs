//! `spec.writeConnectionSecretToRef` (the Crossplane convention): a copy of the tenant
//! kubeconfig, under the key `kubeconfig`, in the Secret the Tenant names.
//!
//! Safe by construction:
//! - only in the namespaces the platform allowed (`--connection-secret-namespaces`; none by
//!   default: the kubeconfig is the tenant's admin credential, and whoever may create a Tenant
//!   could otherwise have it written where they, or others, can read it);
//! - never into a Secret the operator did not create for this Tenant (labels
//!   [`names::MANAGED_BY_LABEL`] and [`CONNECTION_SECRET_OF`]): such a Secret is left untouched
//!   and the `ConnectionSecretReady` condition says so;
//! - removed with the Tenant (owner reference, and explicitly during teardown).
//!
//! The source is the Secret [`Tenant::kubeconfig_secret`] in the tenant namespace; until it
//! exists (the tenant control plane writes it) nothing is written. That Secret sits in the
//! tenant's namespace, so it is read as data: the copy is rebuilt from its CA and token with the
//! tenant's public API URL ([`kubeconfig::rebuild`]), and a source holding anything else
//! (`exec`, `tokenFile`, a proxy, ...) is not copied at all. The condition does not hold `Ready`
//! back: the tenant is usable without the copy.

use std::collections::BTreeMap;

use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, ObjectMeta, PostParams, Preconditions},
};

use super::Context;
use crate::kubeconfig;
use crate::{
    api::{KUBECONFIG_SECRET_KEY, SecretReference, Tenant},
    conditions::{CONNECTION_SECRET_READY, Desired},
    error::Result,
    names,
};

/// Label naming the Tenant a connection Secret was written for.
pub const CONNECTION_SECRET_OF: &str = "kubespaces.io/connection-secret-of";
/// The key of the kubeconfig in the connection Secret (as Crossplane providers write it).
pub const CONNECTION_SECRET_KEY: &str = "kubeconfig";

/// True when `secret` was written by the operator for `tenant`.
pub fn written_for(secret: &Secret, tenant: &str) -> bool {
    let labels = secret.labels();
    labels.get(names::MANAGED_BY_LABEL).map(String::as_str) == Some(names::MANAGED_BY)
        && labels.get(CONNECTION_SECRET_OF).map(String::as_str) == Some(tenant)
}

/// Why the Secret named by `target` may not be written, if so (pure).
pub fn refusal(
    tenant: &str,
    target: &SecretReference,
    allowed: &[String],
    existing: Option<&Secret>,
) -> Option<(&'static str, String)> {
    if !allowed.contains(&target.namespace) {
        let allowed = match allowed {
            [] => "none is allowed".to_owned(),
            list => format!("allowed: {}", list.join(", ")),
        };
        return Some((
            "NamespaceNotAllowed",
            format!(
                "writeConnectionSecretToRef: namespace {} is not in the operator's \
                 --connection-secret-namespaces ({allowed}); nothing was written",
                target.namespace
            ),
        ));
    }
    match existing {
        Some(s) if !written_for(s, tenant) => Some((
            "SecretConflict",
            format!(
                "writeConnectionSecretToRef: Secret {}/{} exists and was not written by KubeSpaces \
                 for tenant {tenant} (no {CONNECTION_SECRET_OF}={tenant} label); it is left \
                 untouched: choose another name, or delete that Secret",
                target.namespace, target.name
            ),
        )),
        _ => None,
    }
}

/// The connection Secret for `tenant` with `kubeconfig`.
pub fn desired(tenant: &Tenant, target: &SecretReference, kubeconfig: ByteString) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(target.name.clone()),
            namespace: Some(target.namespace.clone()),
            labels: Some(BTreeMap::from([
                (
                    names::MANAGED_BY_LABEL.to_owned(),
                    names::MANAGED_BY.to_owned(),
                ),
                (CONNECTION_SECRET_OF.to_owned(), tenant.name_any()),
            ])),
            owner_references: tenant.controller_owner_ref(&()).map(|r| vec![r]),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(
            CONNECTION_SECRET_KEY.to_owned(),
            kubeconfig,
        )])),
        ..Secret::default()
    }
}

/// Writes the connection Secret if the Tenant asks for one; returns its condition (None when
/// no Secret is asked for).
pub async fn ensure(tenant: &Tenant, ctx: &Context) -> Result<Option<Desired>> {
    let Some(target) = &tenant.spec.write_connection_secret_to_ref else {
        return Ok(None);
    };
    let name = tenant.name_any();
    let condition = |ok: bool, reason: &str, message: String| {
        Some(Desired::new(CONNECTION_SECRET_READY, ok, reason, message))
    };
    let allowed = &ctx.connection_secret_namespaces;
    if let Some((reason, message)) = refusal(&name, target, allowed, None) {
        return Ok(condition(false, reason, message));
    }
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &target.namespace);
    let existing = secrets.get_opt(&target.name).await?;
    if let Some((reason, message)) = refusal(&name, target, allowed, existing.as_ref()) {
        return Ok(condition(false, reason, message));
    }
    let source_ref = tenant.kubeconfig_secret();
    let sources: Api<Secret> = Api::namespaced(ctx.client.clone(), &source_ref.namespace);
    let kubeconfig = sources
        .get_opt(&source_ref.name)
        .await?
        .and_then(|s| s.data?.remove(KUBECONFIG_SECRET_KEY));
    let Some(source) = kubeconfig else {
        return Ok(condition(
            false,
            "WaitingForKubeconfig",
            format!(
                "Secret {}/{} will be written once the tenant kubeconfig exists ({}/{})",
                target.namespace, target.name, source_ref.namespace, source_ref.name
            ),
        ));
    };
    let server = tenant.api_url().map_or_else(
        || {
            format!(
                "https://{}:443",
                names::api_host(&name, &ctx.host.base_domain)
            )
        },
        str::to_owned,
    );
    let kubeconfig = match kubeconfig::rebuild(&name, &server, &source.0) {
        Ok(k) => ByteString(k.into_bytes()),
        Err(e) => {
            return Ok(condition(
                false,
                "KubeconfigRefused",
                format!(
                    "Secret {}/{} is not written: the tenant kubeconfig in {}/{} cannot be handed \
                     on ({e}); the operator writes a new one when the tenant's credential is next \
                     checked",
                    target.namespace, target.name, source_ref.namespace, source_ref.name
                ),
            ));
        }
    };
    let want = desired(tenant, target, kubeconfig);
    let params = PostParams {
        field_manager: Some(names::CHILD_FIELD_MANAGER.into()),
        ..PostParams::default()
    };
    match existing {
        None => match secrets.create(&params, &want).await {
            Ok(_) => {}
            // Someone was quicker: look again (and refuse, if it is not ours) next time.
            Err(kube::Error::Api(s)) if s.code == 409 => {
                return Ok(condition(
                    false,
                    "SecretConflict",
                    format!(
                        "Secret {}/{} appeared while it was being written; checking again",
                        target.namespace, target.name
                    ),
                ));
            }
            Err(e) => return Err(e.into()),
        },
        Some(current) if current.data != want.data => {
            // Replace guarded by the version we read and checked: never over someone else's.
            let mut update = want;
            update.metadata.resource_version = current.resource_version();
            secrets.replace(&target.name, &params, &update).await?;
        }
        Some(_) => {}
    }
    Ok(condition(
        true,
        "Written",
        format!(
            "the tenant kubeconfig is in Secret {}/{}, key {CONNECTION_SECRET_KEY}",
            target.namespace, target.name
        ),
    ))
}

/// Removes the connection Secret written for the Tenant (teardown), and nothing else.
pub async fn remove(tenant: &Tenant, ctx: &Context) -> Result<()> {
    let Some(target) = &tenant.spec.write_connection_secret_to_ref else {
        return Ok(());
    };
    if !ctx.connection_secret_namespaces.contains(&target.namespace) {
        return Ok(());
    }
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &target.namespace);
    let Some(secret) = secrets.get_opt(&target.name).await? else {
        return Ok(());
    };
    if !written_for(&secret, &tenant.name_any()) {
        return Ok(());
    }
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: secret.meta().uid.clone(),
            resource_version: secret.resource_version(),
        }),
        ..DeleteParams::default()
    };
    match secrets.delete(&target.name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::TenantSpec;

    fn target(ns: &str) -> SecretReference {
        SecretReference {
            name: "atlas-conn".into(),
            namespace: ns.into(),
        }
    }

    fn secret(labels: &[(&str, &str)]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        }
    }

    #[test]
    fn only_allowed_namespaces() {
        let (reason, message) = refusal("atlas", &target("default"), &[], None).unwrap();
        assert_eq!(reason, "NamespaceNotAllowed");
        assert!(message.contains("none is allowed"), "{message}");
        let allowed = vec!["crossplane-system".to_owned()];
        assert!(refusal("atlas", &target("crossplane-system"), &allowed, None).is_none());
        let (_, message) = refusal("atlas", &target("default"), &allowed, None).unwrap();
        assert!(message.contains("allowed: crossplane-system"), "{message}");
    }

    #[test]
    fn never_over_a_secret_written_by_someone_else() {
        let allowed = vec!["ns".to_owned()];
        let foreign = secret(&[("app", "mine")]);
        let (reason, message) = refusal("atlas", &target("ns"), &allowed, Some(&foreign)).unwrap();
        assert_eq!(reason, "SecretConflict");
        assert!(message.contains("Secret ns/atlas-conn") && message.contains("untouched"));
        let other_tenant = secret(&[
            (names::MANAGED_BY_LABEL, names::MANAGED_BY),
            (CONNECTION_SECRET_OF, "other"),
        ]);
        assert!(refusal("atlas", &target("ns"), &allowed, Some(&other_tenant)).is_some());
        let ours = secret(&[
            (names::MANAGED_BY_LABEL, names::MANAGED_BY),
            (CONNECTION_SECRET_OF, "atlas"),
        ]);
        assert!(refusal("atlas", &target("ns"), &allowed, Some(&ours)).is_none());
    }

    #[test]
    fn the_copy_is_marked_as_ours_and_owned_by_the_tenant() {
        let mut tenant = Tenant::new("atlas", TenantSpec::new("a@example.com", "1", "1Gi", None));
        tenant.metadata.uid = Some("u1".into());
        let s = desired(&tenant, &target("ns"), ByteString(b"kubeconfig".to_vec()));
        assert!(written_for(&s, "atlas"));
        assert_eq!(s.owner_references()[0].uid, "u1");
        assert!(s.data.unwrap().contains_key(CONNECTION_SECRET_KEY));
    }
}
