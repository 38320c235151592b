use super::*;
use kubespaces_api::api::{TenantEndpoints, TenantStatus};

fn planned() -> Value {
    crate::tenant::fixtures::planned_state(&[
        ("deletion_policy", Value::string("Orphan")),
        ("wait_for_ready", Value::Bool(false)),
        ("timeouts", Value::object([("create", Value::string("5m"))])),
    ])
}

fn live() -> Tenant {
    let mut t = tenant_from_state(&planned()).unwrap();
    t.spec.resources.cpu = Quantity("8000m".into());
    t.status = Some(TenantStatus {
        phase: Some("Ready".into()),
        endpoints: Some(TenantEndpoints {
            api: Some("https://team-atlas.api.example.com:443".into()),
            apps: Some("https://*.team-atlas.apps.example.com".into()),
        }),
        ..TenantStatus::default()
    });
    t
}

#[test]
fn spec_from_state_maps_every_field() {
    let spec = spec_from_state(&planned()).unwrap();
    assert_eq!(spec.owner, "alice@example.com");
    assert_eq!(spec.resources.cpu.0, "8");
    assert_eq!(spec.resources.storage, None);
    assert_eq!(spec.deletion_policy, DeletionPolicy::Orphan);
    let mut unknown_cpu = planned();
    unknown_cpu.set("cpu", Value::Unknown);
    assert_eq!(
        spec_from_state(&unknown_cpu),
        Err(ModelError::Missing("cpu"))
    );
}

#[test]
fn patch_removes_storage_with_an_explicit_null() {
    let patch = spec_patch(&spec_from_state(&planned()).unwrap());
    assert!(patch["spec"]["resources"]["storage"].is_null());
    assert!(patch["spec"]["resources"].get("storage").is_some());
    assert_eq!(patch["spec"]["deletionPolicy"], "Orphan");
    assert!(patch["spec"].get("writeConnectionSecretToRef").is_none());
}

#[test]
fn state_keeps_the_users_notation_and_terraform_only_fields() {
    let s = state_from_tenant(&live(), Some("kc".into()), &planned());
    assert_eq!(s.get("cpu"), &Value::string("8"), "8000m is the same as 8");
    assert_eq!(s.get("wait_for_ready"), &Value::Bool(false));
    assert_eq!(s.get("timeouts"), planned().get("timeouts"));
    assert_eq!(s.get("phase"), &Value::string("Ready"));
    assert_eq!(
        s.get("apps_domain"),
        &Value::string("*.team-atlas.apps.example.com")
    );
    assert_eq!(s.get("kubeconfig"), &Value::string("kc"));
    assert!(s.is_wholly_known());
}

#[test]
fn state_after_import_uses_defaults_and_the_api_notation() {
    let s = state_from_tenant(&live(), None, &Value::Null);
    assert_eq!(s.get("cpu"), &Value::string("8000m"));
    assert_eq!(s.get("wait_for_ready"), &Value::Bool(true));
    assert!(s.get("timeouts").is_null());
    assert!(s.get("kubeconfig").is_null());
}

#[test]
fn state_is_schema_complete() {
    let s = state_from_tenant(&live(), None, &Value::Null);
    let bytes = crate::value::to_msgpack(&s, &super::super::schema::RESOURCE_TYPE).unwrap();
    let back = crate::value::from_msgpack(&bytes, &super::super::schema::RESOURCE_TYPE).unwrap();
    assert_eq!(back, s);
    let Value::Object(m) = &s else { panic!() };
    assert_eq!(m.len(), 14);
}

#[test]
fn honour_plan_keeps_known_planned_values_and_fills_unknowns() {
    let mut actual = state_from_tenant(&live(), Some("kc".into()), &planned());
    actual.set("owner", Value::string("someone-else@example.com"));
    let merged = honour_plan(&planned(), actual);
    assert_eq!(merged.get("owner"), &Value::string("alice@example.com"));
    assert_eq!(merged.get("phase"), &Value::string("Ready"));
    assert_eq!(merged.get("kubeconfig"), &Value::string("kc"));
}

#[test]
fn data_source_state_matches_its_schema() {
    let d = data_from_tenant(&live(), None);
    let ty = &super::super::schema::DATA_SOURCE_TYPE;
    assert!(crate::value::to_msgpack(&d, ty).is_ok());
}
