//! Every name the operator builds for the longest tenant name admission lets through is still a
//! DNS label or label value. Lives here, not in `kubespaces_api::names`, because it checks what
//! the operator's builders (`build`, `config`) actually produce.

use kubespaces_operator::api::{Tenant, TenantSpec};
use kubespaces_operator::build::settings::HostConfig;
use kubespaces_operator::names::*;

/// The longest tenant name admission lets through: the bound in the CEL rule the API server
/// enforces, read from the rule itself (not from `MAX_TENANT_NAME_LEN`, whose derivation
/// this test must not repeat).
fn longest_admitted_name() -> String {
    let (_, bound) = NAME_LENGTH_RULE.rsplit_once("<=").expect("a `<=` bound");
    let len: usize = bound.trim().parse().expect("a number");
    // A valid DNS label of that length, as NAME_LABEL_RULE admits: a letter first and last.
    format!("t{}", "x".repeat(len - 1))
}

/// RFC 1123 label: what a namespace name and each label of a host name must be.
fn is_dns_label(s: &str) -> bool {
    (1..=63).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// A Kubernetes label value: at most 63 characters, alphanumeric at both ends, `-_.` inside.
fn is_label_value(s: &str) -> bool {
    s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && s.bytes().next().is_none_or(|b| b.is_ascii_alphanumeric())
        && s.bytes().last().is_none_or(|b| b.is_ascii_alphanumeric())
}

#[test]
fn every_name_built_for_the_longest_admitted_tenant_fits_a_dns_label() {
    let tenant = longest_admitted_name();
    let t = Tenant::new(&tenant, TenantSpec::new("a@example.com", "1", "1Gi", None));
    // What the operator actually builds and names for this tenant: DNS labels...
    let ns = kubespaces_operator::build::namespace(&t, &HostConfig::default());
    let mut dns_labels: Vec<(String, String)> = vec![(
        "the namespace".into(),
        ns.metadata.name.clone().unwrap_or_default(),
    )];
    for name in derived_labels(&tenant) {
        dns_labels.push(("a derived name".into(), name));
    }
    // (the tenant name is the first label of its public host names)
    for host in [
        api_host(&tenant, "example.com"),
        apps_host(&tenant, "example.com"),
    ] {
        for label in host.split('.').filter(|l| *l != "*") {
            dns_labels.push((format!("a label of {host}"), label.to_owned()));
        }
    }
    // ...and label values, on the namespace and on every object in it.
    let mut label_values: Vec<(String, String)> = vec![];
    for (key, value) in ns.metadata.labels.iter().flatten() {
        label_values.push((format!("namespace label {key}"), value.clone()));
    }
    for (key, value) in kubespaces_operator::build::labels(&tenant) {
        label_values.push((format!("object label {key}"), value));
    }

    for checked in [&dns_labels, &label_values] {
        assert!(
            checked.iter().any(|(_, v)| v.contains(&tenant)),
            "the tenant name is in what was checked: {checked:?}"
        );
    }
    for (what, value) in &dns_labels {
        assert!(
            is_dns_label(value),
            "{what} {value:?} ({} characters) is not a DNS label",
            value.len()
        );
    }
    for (what, value) in &label_values {
        assert!(
            is_label_value(value),
            "{what} {value:?} ({} characters) is not a label value",
            value.len()
        );
    }

    // The bound is the real one, not merely a safe one: one character more and the longest
    // derived name (the vCluster chart's ClusterRole) no longer fits, so admission refuses
    // exactly the names that would fail later.
    let one_more = format!("{tenant}x");
    assert!(!is_dns_label(&control_plane_cluster_role(&one_more)));
    assert!(is_dns_label(&control_plane_cluster_role(&tenant)));
    // ...and it is the chart's own derivation, from the operator's release name.
    assert_eq!(
        kubespaces_operator::names::control_plane::chart_derived(&namespace(&tenant))
            .iter()
            .map(String::len)
            .max(),
        Some(control_plane_cluster_role(&tenant).len() + 3),
        "vc-mn-... (Pro only, never rendered) is the one longer"
    );
}
