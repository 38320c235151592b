//! `spec.writeConnectionSecretToRef`: the tenant kubeconfig copied into the named Secret, in
//! allowed namespaces only, never over a Secret someone else made, removed with the Tenant. The
//! refusals are played with an operator that runs no control planes, the test publishing each
//! tenant kubeconfig in the control plane's place (planted ones included); the copy a user relies
//! on is also made from a real control plane's kubeconfig, and used.

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
    control_planes::{pinned_digest, vcluster_flags},
    operator::{
        OperatorProcess, bind_connection_secrets, least_privileged_kubeconfig, sharded_tenant,
    },
    pods::{delete_tenant, leftovers},
    tenant_cluster::{assert_reaches_tenant, private_kubeconfig},
    wait_for, wait_gone, wait_ready,
};
use kubespaces_operator::kubeconfig;
use kubespaces_operator::{
    api::{SecretReference, Tenant, TenantSpec},
    conditions::CONNECTION_SECRET_READY,
    names,
};
use serde_json::json;

const SHARD: &str = "connection-secret";
const NS: &str = "kubespaces-connection-test";

fn tenant(name: &str, target: &str, namespace: &str) -> Tenant {
    tenant_of(SHARD, name, target, namespace)
}

fn tenant_of(shard: &str, name: &str, target: &str, namespace: &str) -> Tenant {
    let mut spec = TenantSpec::new("quinn@example.com", "1", "1Gi", None);
    spec.write_connection_secret_to_ref = Some(SecretReference {
        name: target.into(),
        namespace: namespace.into(),
    });
    sharded_tenant(name, spec, shard)
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

/// The tenant control plane publishes its kubeconfig (here: the test, in its place, as the
/// platform's admin; the tenant's owner may not write that Secret), and a reconcile is requested
/// with `request` (the operator does not watch Secrets).
async fn publish_kubeconfig(
    client: &kube::Client,
    tenants: &Api<Tenant>,
    name: &str,
    kubeconfig: &str,
    request: &str,
) {
    let tenant_ns = names::namespace(name);
    let source: Api<Secret> = Api::namespaced(client.clone(), &tenant_ns);
    let mut published = secret(
        "tenant-kubeconfig",
        &tenant_ns,
        "config",
        kubeconfig.as_bytes(),
    );
    published.metadata.managed_fields = None;
    source
        .patch(
            "tenant-kubeconfig",
            &PatchParams::apply("kubespaces-acceptance").force(),
            &Patch::Apply(&published),
        )
        .await
        .expect("tenant kubeconfig");
    let request =
        json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": request}}});
    tenants
        .patch(name, &PatchParams::default(), &Patch::Merge(&request))
        .await
        .expect("request a reconcile");
}

/// A token kubeconfig as the operator writes one, but naming another server.
fn published_kubeconfig() -> String {
    kubeconfig::tenant_kubeconfig("elsewhere", "https://elsewhere.example.com:443", CA, TOKEN)
}
const CA: &str = "Q0E=";
const TOKEN: &str = "tenant-token";

#[tokio::test]
async fn the_kubeconfig_is_copied_only_where_allowed_and_never_over_a_foreign_secret() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    connection_namespace(&client).await;
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
    publish_kubeconfig(
        &client,
        &tenants,
        "conn-foreign",
        &published_kubeconfig(),
        "copy",
    )
    .await;
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
    // A kubeconfig that would run a program wherever it is used (planted by the admin, for a
    // tenant that got past the guards): never copied.
    let planted = published_kubeconfig().replacen(
        "    token: ",
        "    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh}\n    token: ",
        1,
    );
    publish_kubeconfig(&client, &tenants, "conn-copy", &planted, "planted").await;
    let message = connection_condition(&tenants, "conn-copy", "KubeconfigRefused").await;
    assert!(message.contains("users[0].user.exec"), "{message}");
    assert!(secrets.get_opt("conn-copy").await.expect("get").is_none());
    // The copy holds the CA and token with the tenant's own API URL, nothing of the file's else.
    publish_kubeconfig(
        &client,
        &tenants,
        "conn-copy",
        &published_kubeconfig(),
        "copy",
    )
    .await;
    connection_condition(&tenants, "conn-copy", "Written").await;
    let copy = secrets.get("conn-copy").await.expect("the copy");
    let copied = copy
        .data
        .as_ref()
        .and_then(|d| d.get("kubeconfig"))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .expect("a kubeconfig in the copy");
    let credential = kubeconfig::parse(&copied).expect("a kubeconfig as KubeSpaces writes them");
    assert_eq!(
        (credential.ca_data.as_str(), credential.auth),
        (CA, kubeconfig::Auth::Token(TOKEN.into()))
    );
    assert!(
        copied.contains("server: https://conn-copy.api.") && !copied.contains("elsewhere"),
        "{copied}"
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

/// The namespace the connection Secrets go to, made (or kept) by the test.
async fn connection_namespace(client: &kube::Client) {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(NS.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .patch(
            NS,
            &PatchParams::apply("kubespaces-acceptance").force(),
            &Patch::Apply(&ns),
        )
        .await
        .expect("namespace");
}

#[tokio::test]
async fn a_real_control_planes_kubeconfig_is_copied_and_works() {
    let env = Env::get();
    let client = env.client().await;
    let tenants = env.tenants().await;
    connection_namespace(&client).await;
    let (shard, name) = ("connection-secret-cp", "conn-real");
    let kubeconfig = least_privileged_kubeconfig(&client, None).await;
    bind_connection_secrets(&client, &kubeconfig, NS).await;
    let mut flags = vcluster_flags(&pinned_digest(), &[]);
    flags.extend(["--connection-secret-namespaces".to_owned(), NS.to_owned()]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let _operator = OperatorProcess::start_as(
        env.operator_bin(),
        shard,
        &flags,
        Some(kubeconfig.path.clone()),
    )
    .await;
    delete_tenant(&env, name).await;
    tenants
        .create(&PostParams::default(), &tenant_of(shard, name, name, NS))
        .await
        .expect("create the tenant");
    wait_ready(&tenants, name, Duration::from_secs(300)).await;
    connection_condition(&tenants, name, "Written").await;

    // The copy, used as the user who asked for it would: kubectl with exactly that file.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let copied = secrets
        .get(name)
        .await
        .expect("the connection Secret")
        .data
        .and_then(|mut d| d.remove("kubeconfig"))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .expect("a kubeconfig in the connection Secret");
    let path = private_kubeconfig(&format!("{name}-connection.kubeconfig"), &copied);
    assert_reaches_tenant(&env, &path).await;

    delete_tenant(&env, name).await;
    assert!(
        secrets.get_opt(name).await.expect("get").is_none(),
        "the copy goes with its Tenant"
    );
    let left = leftovers(&env, name, &names::namespace(name));
    assert!(left.is_empty(), "left of {name}: {left:?}");
}
