//! The Tenant field reference (`docs/reference/tenant.md`), generated from the CRD schema the API
//! server enforces, so the page cannot drift from the type: a test fails when the committed page
//! differs from what the schema gives.

use std::fmt::Write;

use kube::CustomResourceExt;
use serde_json::Value;

use super::Tenant;

/// One row of the reference: a field, where it sits, and what the API server accepts there.
struct Field {
    path: String,
    type_: String,
    required: bool,
    description: String,
    rules: Vec<String>,
}

/// The whole page, in Markdown.
pub fn field_reference() -> String {
    let crd = serde_json::to_value(Tenant::crd()).unwrap_or_default();
    let version = &crd["spec"]["versions"][0];
    let root = &version["schema"]["openAPIV3Schema"];
    let schema = &root["properties"];
    let mut page = format!(
        "# Tenant field reference\n\n\
         `apiVersion: {}/{}`, `kind: {}`, cluster-scoped (short name `{}`). Generated from the CRD \
         schema by `KUBESPACES_UPDATE_MANIFESTS=1 cargo test -p kubespaces-api reference`; \
         do not edit. Each rule below is checked by the API server when a Tenant is applied, and \
         its message is what you see when it refuses one.\n",
        crd["spec"]["group"].as_str().unwrap_or_default(),
        version["name"].as_str().unwrap_or_default(),
        crd["spec"]["names"]["kind"].as_str().unwrap_or_default(),
        crd["spec"]["names"]["shortNames"][0]
            .as_str()
            .unwrap_or_default(),
    );
    let _ = write!(
        page,
        "\n## `metadata.name`\n\nThe tenant's name, which its namespace, host names and every other \
         derived name start from. The API server also checks:\n\n"
    );
    for rule in rules(root) {
        let _ = writeln!(page, "- {rule}");
    }
    for (section, intro) in [
        ("spec", "What you ask for. The operator never writes it."),
        (
            "status",
            "What the operator observed. Read it; never write it (the operator owns it).",
        ),
    ] {
        let mut fields = Vec::new();
        walk(&schema[section], section, true, &mut fields);
        let _ = write!(
            page,
            "\n## `{section}`\n\n{intro}\n\n| field | type | required | description |\n|---|---|---|---|\n"
        );
        for f in fields.iter().skip(1) {
            let mut text = cell(&f.description);
            for rule in &f.rules {
                let sep = if text.is_empty() { "" } else { "<br>" };
                let _ = write!(text, "{sep}• {}", cell(rule));
            }
            let _ = writeln!(
                page,
                "| `{}` | {} | {} | {} |",
                f.path,
                f.type_,
                if f.required { "yes" } else { "no" },
                text
            );
        }
    }
    page
}

/// Collects `schema` at `path` and everything under it, depth first, in the schema's order.
fn walk(schema: &Value, path: &str, required: bool, out: &mut Vec<Field>) {
    out.push(Field {
        path: path.to_owned(),
        type_: type_name(schema),
        required,
        description: schema["description"].as_str().unwrap_or_default().into(),
        rules: rules(schema),
    });
    let required_here: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            let child = format!("{path}.{name}");
            walk(
                property,
                &child,
                required_here.contains(&name.as_str()),
                out,
            );
        }
    }
    if let Some(items) = schema["items"]["properties"].as_object() {
        let item_required: Vec<&str> = schema["items"]["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for (name, property) in items {
            let child = format!("{path}[].{name}");
            walk(
                property,
                &child,
                item_required.contains(&name.as_str()),
                out,
            );
        }
    }
}

fn type_name(schema: &Value) -> String {
    if schema["x-kubernetes-int-or-string"] == Value::Bool(true) {
        return "quantity (string or integer)".into();
    }
    let base = schema["type"].as_str().unwrap_or("any");
    match (base, schema["format"].as_str()) {
        ("array", _) => format!("list of {}", type_name(&schema["items"])),
        ("string", Some("date-time")) => "timestamp (RFC 3339)".into(),
        (base, _) => base.into(),
    }
}

/// What the API server checks on the field besides its type, as a user reads it.
fn rules(schema: &Value) -> Vec<String> {
    let mut rules = Vec::new();
    if let Some(default) = schema.get("default").filter(|d| !is_empty(d)) {
        rules.push(format!("default: `{default}`"));
    }
    if let Some(values) = schema["enum"].as_array() {
        let values: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        rules.push(format!("one of {}", values.join(", ")));
    }
    if let Some(max) = schema["maxLength"].as_u64() {
        rules.push(format!("at most {max} characters"));
    }
    for rule in schema["x-kubernetes-validations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(message) = rule["message"].as_str() {
            rules.push(message.to_owned());
        }
    }
    rules
}

fn is_empty(v: &Value) -> bool {
    v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(|o| o.is_empty())
}

/// Markdown table cell: one line, pipes escaped.
fn cell(text: &str) -> String {
    text.split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("<br><br>")
        .replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Fails when `docs/reference/tenant.md` differs from what the CRD schema gives. Run with
    /// `KUBESPACES_UPDATE_MANIFESTS=1` to rewrite it.
    #[test]
    fn the_committed_field_reference_matches_the_crd() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/tenant.md");
        let generated = field_reference();
        if std::env::var_os("KUBESPACES_UPDATE_MANIFESTS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{} is stale; regenerate with `KUBESPACES_UPDATE_MANIFESTS=1 cargo test -p kubespaces-api reference`",
            path.display()
        );
    }

    #[test]
    fn every_spec_field_and_its_rules_are_listed() {
        let page = field_reference();
        for row in [
            "| `spec.owner` | string | yes |",
            "| `spec.resources.cpu` | quantity (string or integer) | yes |",
            "| `spec.resources.storage` | quantity (string or integer) | no |",
            "| `spec.writeConnectionSecretToRef.namespace` | string | yes |",
            "| `spec.deletionPolicy` | string | no |",
            "| `status.conditions[].type` | string | yes |",
        ] {
            assert!(page.contains(row), "{row} in:\n{page}");
        }
        assert!(page.contains("must be an email address such as alice@example.com"));
        assert!(page.contains("one of `\"Delete\"`, `\"Orphan\"`"));
        assert!(page.contains("default: `\"Delete\"`"));
        assert!(
            page.contains(&format!("at most {}", crate::names::MAX_TENANT_NAME_LEN)),
            "the name's length rule: {page}"
        );
    }
}
