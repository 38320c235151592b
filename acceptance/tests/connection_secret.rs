//! `spec.writeConnectionSecretToRef`: the tenant kubeconfig copied into the named Secret, in
//! allowed namespaces only, never over a Secret someone else made, removed with the Tenant.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::{
    ByteString,
    api::core::v1::{Namespace, Secret},
};
use kube::{
    Api,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use kubespaces_acceptance::{
    Env,
    operator::{
        OperatorProcess, bind_connection_secrets, least_privileged_kubeconfig, sharded_tenant,
    },
    wait_for, wait_gone,
};
use kubespaces_operator::{
    api::{SecretReference, Tenant, TenantSpec},
    conditions::CONNECTION_SECRET_READY,
    names,
};
use serde_json::json;

const SHARD: &str = "connection-secret";
const NS: &str = "kubespaces-connection-test";

fn tenant(name: &str, target: &str, namespace: &str) -> Tenant {
    let mut spec = TenantSpec::new("quinn@example.com", "1", "1Gi", None);
    spec.write_connection_secret_to_ref = Some(SecretReference {
        name: target.into(),
        namespace: namespace.into(),
    });
    sharded_tenant(name, spec, SHARD)
}

/// Waits for the Tenant's ConnectionSecretReady condition to have `reason`; returns its message.
async fn connection_condition(tenants: &Api<Tenant>, name: &str, reason: &str) -> String {
    wait_for(
        &format!("{name}: ConnectionSecretReady {reason}"),
        Duration::from_secs(60),
        || async {
            let t = tenants.get_opt(name).await.ok().flatten()?;
            t.condition(CONNECTION_SECRET_READY)
                .filter(|c| c.reason == reason)
                .map(|c| c.message.clone())
        },
    )
    .await
}

fn secret(name: &str, namespace: &str, key: &str, value: &[u8]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            key.to_owned(),
            ByteString(value.to_vec()),
        )])),
        ..Secret::default()
    }
}

/// The tenant control plane publishes its kubeconfig (here: the test, in its place), and a
/// reconcile is requested (the operator does not watch Secrets).
async fn publish_kubeconfig(client: &kube::Client, tenants: &Api<Tenant>, name: &str) {
    let tenant_ns = names::namespace(name);
    let source: Api<Secret> = Api::namespaced(client.clone(), &tenant_ns);
    source
        .create(
            &PostParams::default(),
            &secret("tenant-kubeconfig", &tenant_ns, "config", KUBECONFIG),
        )
        .await
        .expect("tenant kubeconfig");
    let request = json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": "copy"}}});
    tenants
        .patch(name, &PatchParams::default(), &Patch::Merge(&request))
        .await
        .expect("request a reconcile");
}

const KUBECONFIG: &[u8] = b"apiVersion: v1\nkind: Config\n";

#[tokio::test]
async fn the_kubeconfig_is_copied_only_where_allowed_and_never_over_a_foreign_secret() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(NS.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces
        .patch(
            NS,
            &PatchParams::apply("kubespaces-acceptance").force(),
            &Patch::Apply(&ns),
        )
        .await
        .expect("namespace");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    // Someone else's Secret, where a Tenant will ask for its connection Secret.
    let foreign = match secrets.get_opt("foreign-conn").await.expect("get") {
        Some(s) => s,
        None => secrets
            .create(
                &PostParams::default(),
                &secret("foreign-conn", NS, "token", b"not yours"),
            )
            .await
            .expect("create the foreign Secret"),
    };

    let kubeconfig = least_privileged_kubeconfig(&client, None).await;
    bind_connection_secrets(&client, &kubeconfig, NS).await;
    let _operator = OperatorProcess::start_as(
        env.operator_bin(),
        SHARD,
        &["--connection-secret-namespaces", NS],
        Some(kubeconfig.path.clone()),
    )
    .await;
    for name in ["conn-foreign", "conn-denied", "conn-copy"] {
        let _ = tenants.delete(name, &DeleteParams::default()).await;
        wait_gone(&tenants, name, Duration::from_secs(60)).await;
    }
    let create = |t: Tenant| {
        let tenants = tenants.clone();
        async move {
            tenants
                .create(&PostParams::default(), &t)
                .await
                .expect("create tenant")
        }
    };
    create(tenant("conn-foreign", "foreign-conn", NS)).await;
    create(tenant("conn-denied", "conn-denied", "default")).await;
    create(tenant("conn-copy", "conn-copy", NS)).await;

    // A foreign Secret: refused, and left exactly as it was, even with a kubeconfig to copy.
    connection_condition(&tenants, "conn-foreign", "SecretConflict").await;
    publish_kubeconfig(&client, &tenants, "conn-foreign").await;
    let message = wait_for(
        "conn-foreign: SecretConflict after the kubeconfig exists",
        Duration::from_secs(60),
        || async {
            let t = tenants.get_opt("conn-foreign").await.ok().flatten()?;
            let handled = t.status.as_ref()?.last_handled_reconcile_at.as_deref() == Some("copy");
            let c = t.condition(CONNECTION_SECRET_READY)?;
            (handled && c.reason == "SecretConflict").then(|| c.message.clone())
        },
    )
    .await;
    assert!(
        message.contains(&format!("Secret {NS}/foreign-conn")) && message.contains("untouched"),
        "{message}"
    );
    let after = secrets.get("foreign-conn").await.expect("foreign Secret");
    assert_eq!(
        after.metadata.resource_version,
        foreign.metadata.resource_version
    );
    assert_eq!(after.data, foreign.data);
    // The tenant itself is fine: the copy does not hold Ready back.
    kubespaces_acceptance::wait_ready(&tenants, "conn-foreign", Duration::from_secs(60)).await;

    // A namespace the operator was not told it may write to: nothing written there.
    let message = connection_condition(&tenants, "conn-denied", "NamespaceNotAllowed").await;
    assert!(message.contains("namespace default"), "{message}");
    let default_secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    assert!(
        default_secrets
            .get_opt("conn-denied")
            .await
            .expect("get")
            .is_none()
    );

    // No tenant kubeconfig yet (no control plane): nothing to copy.
    connection_condition(&tenants, "conn-copy", "WaitingForKubeconfig").await;
    assert!(secrets.get_opt("conn-copy").await.expect("get").is_none());
    publish_kubeconfig(&client, &tenants, "conn-copy").await;
    connection_condition(&tenants, "conn-copy", "Written").await;
    let copy = secrets.get("conn-copy").await.expect("the copy");
    assert_eq!(
        copy.data.as_ref().and_then(|d| d.get("kubeconfig")),
        Some(&ByteString(KUBECONFIG.to_vec()))
    );

    for name in ["conn-foreign", "conn-denied", "conn-copy"] {
        tenants
            .delete(name, &DeleteParams::default())
            .await
            .expect("delete");
    }
    for name in ["conn-foreign", "conn-denied", "conn-copy"] {
        wait_gone(&tenants, name, Duration::from_secs(60)).await;
    }
    // Removed with its Tenant; the foreign Secret stays.
    assert!(secrets.get_opt("conn-copy").await.expect("get").is_none());
    let after = secrets
        .get("foreign-conn")
        .await
        .expect("foreign Secret kept");
    assert_eq!(
        after.metadata.resource_version,
        foreign.metadata.resource_version
    );
}
