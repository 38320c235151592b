//! The tfplugin6 service called in-process, with msgpack built the way Terraform builds it.

use terraform_provider_kubespaces::proto::tfplugin6::{self as tf, provider_server::Provider};
use terraform_provider_kubespaces::server::KubespacesProvider;
use terraform_provider_kubespaces::tenant::schema::{RESOURCE_TYPE, TYPE_NAME};
use terraform_provider_kubespaces::value::{Value, from_msgpack, to_msgpack};
use tonic::Request;

fn dv(v: &Value) -> Option<tf::DynamicValue> {
    Some(tf::DynamicValue {
        msgpack: to_msgpack(v, &RESOURCE_TYPE).unwrap(),
        json: vec![],
    })
}

fn config(cpu: &str) -> Value {
    Value::object([
        ("name", Value::string("team-atlas")),
        ("owner", Value::string("alice@example.com")),
        ("cpu", Value::string(cpu)),
        ("memory", Value::string("16Gi")),
    ])
}

fn path_names(d: &tf::Diagnostic) -> Vec<String> {
    use tf::attribute_path::step::Selector;
    d.attribute
        .iter()
        .flat_map(|p| &p.steps)
        .filter_map(|s| match &s.selector {
            Some(Selector::AttributeName(n)) => Some(n.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn schema_has_the_provider_the_resource_and_the_data_source() {
    let p = KubespacesProvider::default();
    let r = p
        .get_provider_schema(Request::new(tf::get_provider_schema::Request {}))
        .await
        .unwrap()
        .into_inner();
    assert!(
        r.provider.is_some(),
        "Terraform errors on a missing provider schema"
    );
    let block = r.resource_schemas[TYPE_NAME].block.as_ref().unwrap();
    let name = block.attributes.iter().find(|a| a.name == "name").unwrap();
    assert_eq!(name.r#type, b"\"string\"");
    assert!(name.required);
    assert!(r.data_source_schemas.contains_key(TYPE_NAME));
    assert!(r.diagnostics.is_empty());
}

#[tokio::test]
async fn validation_points_at_the_attribute() {
    let p = KubespacesProvider::default();
    let r = p
        .validate_resource_config(Request::new(tf::validate_resource_config::Request {
            type_name: TYPE_NAME.into(),
            config: dv(&config("lots")),
            client_capabilities: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.diagnostics.len(), 1);
    assert_eq!(path_names(&r.diagnostics[0]), vec!["cpu"]);
}

#[tokio::test]
async fn plan_create_and_replace() {
    let p = KubespacesProvider::default();
    let r = p
        .plan_resource_change(Request::new(tf::plan_resource_change::Request {
            type_name: TYPE_NAME.into(),
            prior_state: None,
            proposed_new_state: dv(&config("8")),
            config: dv(&config("8")),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    assert!(!r.legacy_type_system);
    assert!(
        r.deferred.is_none(),
        "Terraform refuses deferrals it did not allow"
    );
    let planned = from_msgpack(&r.planned_state.unwrap().msgpack, &RESOURCE_TYPE).unwrap();
    assert!(planned.get("phase").is_unknown());
    assert_eq!(
        planned.get("namespace"),
        &Value::string("kubespaces-tenant-team-atlas")
    );
    assert_eq!(path_names_of(&r.requires_replace), vec!["name", "owner"]);
}

fn path_names_of(paths: &[tf::AttributePath]) -> Vec<String> {
    paths
        .iter()
        .map(|p| {
            path_names(&tf::Diagnostic {
                attribute: Some(p.clone()),
                ..Default::default()
            })
            .join(".")
        })
        .collect()
}

#[tokio::test]
async fn upgrade_state_fills_a_schema_complete_object() {
    let p = KubespacesProvider::default();
    let r = p
        .upgrade_resource_state(Request::new(tf::upgrade_resource_state::Request {
            type_name: TYPE_NAME.into(),
            version: 0,
            raw_state: Some(tf::RawState {
                json: br#"{"id":"team-atlas","name":"team-atlas","removed_attr":1}"#.to_vec(),
                flatmap: Default::default(),
            }),
        }))
        .await
        .unwrap()
        .into_inner();
    let bytes = r.upgraded_state.unwrap().msgpack;
    assert_eq!(bytes[0], 0x8e, "a map of all 14 attributes");
    let v = from_msgpack(&bytes, &RESOURCE_TYPE).unwrap();
    assert_eq!(v.get("name"), &Value::string("team-atlas"));
}

#[tokio::test]
async fn apply_before_configure_is_a_diagnostic_not_a_crash() {
    let p = KubespacesProvider::default();
    let r = p
        .apply_resource_change(Request::new(tf::apply_resource_change::Request {
            type_name: TYPE_NAME.into(),
            planned_state: dv(&config("8")),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.diagnostics.len(), 1);
    assert!(r.diagnostics[0].summary.contains("not configured"));
}

#[tokio::test]
async fn unknown_type_names_are_refused() {
    let p = KubespacesProvider::default();
    let err = p
        .read_resource(Request::new(tf::read_resource::Request {
            type_name: "kubespaces_other".into(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
}

#[tokio::test]
async fn import_checks_the_id() {
    let p = KubespacesProvider::default();
    let r = p
        .import_resource_state(Request::new(tf::import_resource_state::Request {
            type_name: TYPE_NAME.into(),
            id: "Team Atlas".into(),
            client_capabilities: None,
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(r.imported_resources.is_empty());
    assert_eq!(r.diagnostics[0].summary, "Invalid import ID");
}

/// `insecure = true` works, and says what it costs: a WARNING diagnostic on the attribute.
#[tokio::test]
async fn configuring_insecure_is_a_warning_on_the_attribute() {
    use terraform_provider_kubespaces::config;
    let p = KubespacesProvider::default();
    let provider_config = Value::object([
        ("host", Value::string("https://127.0.0.1:6443")),
        ("insecure", Value::Bool(true)),
    ]);
    let r = p
        .configure_provider(Request::new(tf::configure_provider::Request {
            config: Some(tf::DynamicValue {
                msgpack: to_msgpack(&provider_config, &config::TYPE).unwrap(),
                json: vec![],
            }),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.diagnostics.len(), 1, "{:?}", r.diagnostics);
    let d = &r.diagnostics[0];
    assert_eq!(d.severity, tf::diagnostic::Severity::Warning as i32);
    assert_eq!(path_names(d), vec!["insecure"]);
    assert!(
        d.summary.contains("TLS verification is off"),
        "{}",
        d.summary
    );
}
