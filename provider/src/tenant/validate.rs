//! `ValidateResourceConfig` for `kubespaces_tenant`: the admission rules of the Tenant CRD,
//! checked at plan time so the diagnostic points at the attribute in the user's file instead
//! of surfacing as an API error during apply.
//!
//! Terraform calls this with unknown values (e.g. `name = "${var.team}-dev"` before the
//! variable is known); an unknown or null value is never an error here: Terraform promises a
//! later call with everything known.

use crate::diag::{AttrPath, Diag};
use crate::duration;
use crate::value::Value;

use super::rules;

/// Applies `rule` to `value` if it is a (known) string; a broken rule is an error at `path`.
fn check(
    diags: &mut Vec<Diag>,
    path: AttrPath,
    value: &Value,
    rule: fn(&str) -> Result<(), String>,
) {
    if let Some(text) = value.as_str()
        && let Err(detail) = rule(text)
    {
        diags.push(Diag::error(format!("Invalid {path}"), detail).at(path));
    }
}

pub fn validate(config: &Value) -> Vec<Diag> {
    let mut diags = Vec::new();
    let mut check = |path, value, rule| check(&mut diags, path, value, rule);
    check(
        AttrPath::root("name"),
        config.get("name"),
        rules::tenant_name,
    );
    check(AttrPath::root("owner"), config.get("owner"), rules::email);
    for q in ["cpu", "memory", "storage"] {
        check(AttrPath::root(q), config.get(q), rules::positive_quantity);
    }
    check(
        AttrPath::root("deletion_policy"),
        config.get("deletion_policy"),
        rules::deletion_policy,
    );
    let timeouts = config.get("timeouts");
    for op in ["create", "update", "delete"] {
        check(
            AttrPath::root("timeouts").child(op),
            timeouts.get(op),
            timeout,
        );
    }
    diags
}

/// `ValidateDataResourceConfig`: the data source is configured by its name alone.
pub fn validate_data_source(config: &Value) -> Vec<Diag> {
    let mut diags = Vec::new();
    check(
        &mut diags,
        AttrPath::root("name"),
        config.get("name"),
        rules::tenant_name,
    );
    diags
}

fn timeout(text: &str) -> Result<(), String> {
    match duration::parse(text) {
        Ok(d) if d.is_zero() => Err(format!(
            "{text:?} would time out at once; use a positive duration such as 10m"
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::fixtures::config;

    fn paths(diags: &[Diag]) -> Vec<String> {
        diags
            .iter()
            .filter_map(|d| d.path.as_ref().map(|p| p.to_string()))
            .collect()
    }

    #[test]
    fn a_good_config_passes() {
        assert_eq!(validate(&config(&[])), vec![]);
    }

    #[test]
    fn each_bad_attribute_is_reported_at_its_own_path() {
        let bad = config(&[
            ("name", Value::string("Team_Atlas")),
            ("owner", Value::string("alice")),
            ("cpu", Value::string("eight")),
            ("memory", Value::string("0")),
            ("storage", Value::string("-1Gi")),
            ("deletion_policy", Value::string("delete")),
            (
                "timeouts",
                Value::object([("create", Value::string("10 minutes"))]),
            ),
        ]);
        let diags = validate(&bad);
        assert_eq!(
            paths(&diags),
            vec![
                "name",
                "owner",
                "cpu",
                "memory",
                "storage",
                "deletion_policy",
                "timeouts.create"
            ]
        );
        assert!(diags.iter().all(|d| d.error));
    }

    #[test]
    fn unknown_values_are_never_errors() {
        let all_unknown = config(&[
            ("name", Value::Unknown),
            ("owner", Value::Unknown),
            ("cpu", Value::Unknown),
            ("memory", Value::Unknown),
            ("storage", Value::Unknown),
            ("deletion_policy", Value::Unknown),
            ("timeouts", Value::Unknown),
        ]);
        assert_eq!(validate(&all_unknown), vec![]);
        assert_eq!(validate(&Value::Unknown), vec![]);
        let inner_unknown = config(&[("timeouts", Value::object([("create", Value::Unknown)]))]);
        assert_eq!(validate(&inner_unknown), vec![]);
    }

    #[test]
    fn zero_timeout_is_refused_with_a_hint() {
        let d = validate(&config(&[(
            "timeouts",
            Value::object([("delete", Value::string("0s"))]),
        )]));
        assert_eq!(paths(&d), vec!["timeouts.delete"]);
        assert!(d[0].detail.contains("positive"));
    }
}
