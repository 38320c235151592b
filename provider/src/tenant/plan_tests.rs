use super::*;
use crate::tenant::fixtures::config;

/// State after a successful create of `config(&[])`.
fn state() -> Value {
    config(&[
        ("id", Value::string("team-atlas")),
        ("deletion_policy", Value::string("Delete")),
        ("wait_for_ready", Value::Bool(true)),
        ("phase", Value::string("Ready")),
        (
            "api_endpoint",
            Value::string("https://team-atlas.api.example.com:443"),
        ),
        (
            "apps_domain",
            Value::string("*.team-atlas.apps.example.com"),
        ),
        ("namespace", Value::string("kubespaces-tenant-team-atlas")),
        ("kubeconfig", Value::string("apiVersion: v1\n")),
    ])
}

/// What Terraform proposes: config, with prior values for computed attributes null in config.
fn proposed(prior: &Value, config: &Value) -> Value {
    let mut p = config.clone();
    for attr in [
        "id",
        "deletion_policy",
        "wait_for_ready",
        "phase",
        "api_endpoint",
        "apps_domain",
        "namespace",
        "kubeconfig",
    ] {
        if config.get(attr).is_null() {
            p.set(attr, prior.get(attr).clone());
        }
    }
    p
}

fn plan_for(prior: &Value, config: &Value) -> Plan {
    plan(prior, &proposed(prior, config), config)
}

#[test]
fn create_plans_defaults_and_derived_names_and_leaves_the_rest_unknown() {
    let c = config(&[]);
    let p = plan_for(&Value::Null, &c).planned;
    assert_eq!(p.get("id"), &Value::string("team-atlas"));
    assert_eq!(
        p.get("namespace"),
        &Value::string("kubespaces-tenant-team-atlas")
    );
    assert_eq!(p.get("deletion_policy"), &Value::string("Delete"));
    assert_eq!(p.get("wait_for_ready"), &Value::Bool(true));
    for a in ["phase", "api_endpoint", "apps_domain", "kubeconfig"] {
        assert!(p.get(a).is_unknown(), "{a}");
    }
    // Configured values are planned exactly as configured.
    assert_eq!(p.get("cpu"), &Value::string("8"));
    assert!(p.get("storage").is_null());
}

#[test]
fn create_with_an_unknown_name_cannot_know_the_namespace() {
    let c = config(&[("name", Value::Unknown)]);
    let p = plan_for(&Value::Null, &c).planned;
    assert!(p.get("id").is_unknown());
    assert!(p.get("namespace").is_unknown());
}

#[test]
fn configured_defaults_are_kept() {
    let c = config(&[
        ("deletion_policy", Value::string("Orphan")),
        ("wait_for_ready", Value::Bool(false)),
    ]);
    let p = plan_for(&Value::Null, &c).planned;
    assert_eq!(p.get("deletion_policy"), &Value::string("Orphan"));
    assert_eq!(p.get("wait_for_ready"), &Value::Bool(false));
}

#[test]
fn no_change_returns_the_prior_state_exactly() {
    let prior = state();
    let p = plan_for(&prior, &config(&[]));
    assert_eq!(p.planned, prior);
}

#[test]
fn same_quota_in_another_notation_is_no_change() {
    let prior = state();
    let p = plan_for(&prior, &config(&[("cpu", Value::string("8000m"))]));
    assert_eq!(p.planned, prior);
}

#[test]
fn cpu_change_is_in_place_and_only_the_phase_becomes_unknown() {
    let prior = state();
    let p = plan_for(&prior, &config(&[("cpu", Value::string("16"))])).planned;
    assert_eq!(p.get("cpu"), &Value::string("16"));
    assert!(p.get("phase").is_unknown());
    for stable in [
        "id",
        "namespace",
        "api_endpoint",
        "apps_domain",
        "kubeconfig",
    ] {
        assert_eq!(p.get(stable), prior.get(stable), "{stable}");
    }
}

#[test]
fn changing_only_timeouts_or_waiting_keeps_the_phase() {
    let prior = state();
    let c = config(&[
        (
            "timeouts",
            Value::object([("create", Value::string("30m"))]),
        ),
        ("wait_for_ready", Value::Bool(false)),
    ]);
    let p = plan_for(&prior, &c).planned;
    assert_eq!(p.get("phase"), &Value::string("Ready"));
    assert_eq!(p.get("wait_for_ready"), &Value::Bool(false));
    assert_eq!(p.get("timeouts").get("create"), &Value::string("30m"));
}

#[test]
fn removing_deletion_policy_from_the_file_goes_back_to_the_default() {
    let mut prior = state();
    prior.set("deletion_policy", Value::string("Orphan"));
    let p = plan_for(&prior, &config(&[])).planned;
    assert_eq!(p.get("deletion_policy"), &Value::string("Delete"));
    assert!(p.get("phase").is_unknown(), "a spec change");
}

#[test]
fn name_change_forces_replacement_and_resets_computed_values() {
    let prior = state();
    let p = plan_for(&prior, &config(&[("name", Value::string("team-borealis"))]));
    assert_eq!(
        p.requires_replace,
        vec![AttrPath::root("name"), AttrPath::root("owner")]
    );
    assert_eq!(
        p.planned.get("namespace"),
        &Value::string("kubespaces-tenant-team-borealis")
    );
    assert_eq!(p.planned.get("id"), &Value::string("team-borealis"));
    for a in ["phase", "api_endpoint", "apps_domain", "kubeconfig"] {
        assert!(p.planned.get(a).is_unknown(), "{a}");
    }
}

#[test]
fn owner_change_forces_replacement_too() {
    let prior = state();
    let p = plan_for(
        &prior,
        &config(&[("owner", Value::string("bob@example.com"))]),
    );
    assert!(p.requires_replace.contains(&AttrPath::root("owner")));
    assert!(p.planned.get("kubeconfig").is_unknown(), "a new tenant's");
    assert_eq!(p.planned.get("id"), &Value::string("team-atlas"));
}

#[test]
fn unknown_spec_value_makes_the_phase_unknown_but_nothing_else() {
    let prior = state();
    let p = plan_for(&prior, &config(&[("memory", Value::Unknown)])).planned;
    assert!(p.get("memory").is_unknown());
    assert!(p.get("phase").is_unknown());
    assert_eq!(p.get("api_endpoint"), prior.get("api_endpoint"));
}
