//! The teardown finalizer is put on every Tenant at admission (a MutatingAdmissionPolicy), so
//! the operator needs no write for it; where it is missing anyway, the operator adds it.

use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kubespaces_acceptance::{
    Env,
    operator::{OperatorProcess, sharded_tenant},
    wait_gone, wait_ready,
};
use kubespaces_operator::api::{Tenant, TenantSpec};
use serde_json::json;

fn tenant(name: &str, shard: &str) -> Tenant {
    let spec = TenantSpec::new("heidi@example.com", "1", "1Gi", None);
    sharded_tenant(name, spec, shard)
}

#[tokio::test]
async fn the_finalizer_is_set_at_admission_and_added_by_the_operator_if_missing() {
    let env = Env::get();
    let tenants = env.tenants().await;
    // No operator handles this shard yet: whatever the create returns is the API server's doing.
    let created = tenants
        .create(&PostParams::default(), &tenant("fin-admission", "fallback"))
        .await
        .expect("create");
    assert!(
        created.has_teardown_finalizer(),
        "finalizer set at admission: {:?}",
        created.metadata.finalizers
    );

    // Take it away, as on a cluster without the admission policy; the operator puts it back.
    let strip = json!([{"op": "remove", "path": "/metadata/finalizers"}]);
    let strip: json_patch::Patch = serde_json::from_value(strip).unwrap();
    tenants
        .patch(
            "fin-admission",
            &PatchParams::default(),
            &Patch::<()>::Json(strip),
        )
        .await
        .expect("strip finalizer");
    let _operator = OperatorProcess::start_least_privileged(
        &env.client().await,
        env.operator_bin(),
        "fallback",
        &[],
    )
    .await;
    let ready = wait_ready(&tenants, "fin-admission", Duration::from_secs(60)).await;
    assert!(ready.has_teardown_finalizer());

    tenants
        .delete("fin-admission", &DeleteParams::default())
        .await
        .expect("delete");
    wait_gone(&tenants, "fin-admission", Duration::from_secs(60)).await;
}
