//! The *New tenant* form: each hint under its input, the platform's bounds shown before submit,
//! and a refusal's message next to the field it names (`aria-invalid`, `aria-describedby`).

use serde::Deserialize;

use super::esc;
use crate::config::Limits;

/// The platform's bounds on a create, as the form shows them before submit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormBounds {
    pub max_cpu: Option<String>,
    pub max_memory: Option<String>,
    pub max_storage: Option<String>,
    /// 0: no limit.
    pub max_tenants_per_owner: usize,
    /// How many the browser's user owns now.
    pub owned: usize,
}

impl FormBounds {
    pub fn new(limits: &Limits, owned: usize) -> FormBounds {
        let text = |m: &Option<crate::max_quantity::MaxQuantity>| m.as_ref().map(|m| m.to_string());
        FormBounds {
            max_cpu: text(&limits.max_tenant_cpu),
            max_memory: text(&limits.max_tenant_memory),
            max_storage: text(&limits.max_tenant_storage),
            max_tenants_per_owner: limits.max_tenants_per_owner,
            owned,
        }
    }
}

/// The new-tenant form, as the home page renders it and posts it.
#[derive(Deserialize)]
pub struct NewTenant {
    pub csrf: String,
    pub name: String,
    pub cpu: String,
    pub memory: String,
    #[serde(default)]
    pub storage: String,
}

/// An input of the form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Name,
    Cpu,
    Memory,
    Storage,
}

impl Field {
    pub const ALL: [Field; 4] = [Field::Name, Field::Cpu, Field::Memory, Field::Storage];

    /// The input's id and name.
    pub fn id(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Cpu => "cpu",
            Field::Memory => "memory",
            Field::Storage => "storage",
        }
    }

    /// Where a refusal names the field: the CRD's field path (the API server's message), and
    /// the start of the server's own (bounds: "cpu 100 is more than …"; a taken name).
    fn named_by(self, message: &str) -> Option<usize> {
        let (path, own) = match self {
            Field::Name => ("metadata.name", "tenant name "),
            Field::Cpu => ("spec.resources.cpu", "cpu "),
            Field::Memory => ("spec.resources.memory", "memory "),
            Field::Storage => ("spec.resources.storage", "storage "),
        };
        if message.starts_with(own) {
            return Some(0);
        }
        message.find(path)
    }
}

/// The fields a refusal names, each with what it says of that field: the whole message when it
/// names one field, else the part from each field's path to the next (the API server lists
/// several errors as `[a: …, b: …]`). Empty when it names none (a limit on the owner, the rate).
pub fn field_errors(message: &str) -> Vec<(Field, String)> {
    let mut named: Vec<(usize, Field)> = Field::ALL
        .into_iter()
        .filter_map(|f| f.named_by(message).map(|at| (at, f)))
        .collect();
    named.sort_by_key(|(at, _)| *at);
    if named.len() == 1 {
        return vec![(named[0].1, message.to_owned())];
    }
    named
        .iter()
        .enumerate()
        .map(|(i, (at, field))| {
            let end = named.get(i + 1).map_or(message.len(), |(next, _)| *next);
            let part = message[*at..end].trim_end_matches([',', ' ', ']']);
            (*field, part.to_owned())
        })
        .collect()
}

/// How input `id` points at its hint (`{id}-hint`) and, with an `error`, at that error: its
/// `aria-describedby` and `aria-invalid`, and the error's `<span>` (`alert`: announced at once).
pub fn described(id: &str, error: Option<&str>, alert: bool) -> (String, &'static str, String) {
    match error {
        Some(e) => (
            format!("{id}-hint {id}-error"),
            " aria-invalid=\"true\"",
            format!(
                "<span class=\"field-error\" id=\"{id}-error\"{}>{}</span>",
                if alert { " role=\"alert\"" } else { "" },
                esc(e)
            ),
        ),
        None => (format!("{id}-hint"), "", String::new()),
    }
}

/// One input: its label, the input, its hint under it, and its error when it has one.
fn field(
    f: Field,
    label: &str,
    hint: &str,
    value: &str,
    required: bool,
    error: Option<&str>,
) -> String {
    let id = f.id();
    let (describedby, invalid, error) = described(id, error, false);
    format!(
        "<div class=\"field\"><label for=\"{id}\">{label}</label>\
<input id=\"{id}\" name=\"{id}\"{} value=\"{}\" aria-describedby=\"{describedby}\"{invalid} autocomplete=\"off\">\
<span class=\"hint\" id=\"{id}-hint\">{hint}</span>{error}</div>",
        if required { " required" } else { "" },
        esc(value),
    )
}

/// ` At most X on this platform.` for a maximum, nothing without one.
fn at_most(max: Option<&str>) -> String {
    max.map(|m| format!(" At most {} on this platform.", esc(m)))
        .unwrap_or_default()
}

/// The platform's bounds in one sentence, shown above the form.
pub fn bounds_text(bounds: &FormBounds) -> String {
    let mut sizes = vec![];
    for (what, max) in [
        ("CPU", &bounds.max_cpu),
        ("memory", &bounds.max_memory),
        ("storage", &bounds.max_storage),
    ] {
        if let Some(max) = max {
            sizes.push(format!("{max} {what}"));
        }
    }
    let sizes = if sizes.is_empty() {
        "This platform sets no maximum size per tenant".to_owned()
    } else {
        format!("One tenant may have at most {}", sizes.join(", "))
    };
    let count = match bounds.max_tenants_per_owner {
        0 => "; there is no limit on how many tenants you own.".to_owned(),
        max => format!(
            "; one owner may have at most {max} tenant{} (you have {}).",
            if max == 1 { "" } else { "s" },
            bounds.owned
        ),
    };
    format!("{}{}", esc(&sizes), esc(&count))
}

/// The form, after a refused create with its `error` and what the `form` asked for.
pub fn new_tenant_form(
    csrf: &str,
    bounds: &FormBounds,
    form: Option<&NewTenant>,
    error: Option<&str>,
) -> String {
    let errors = error.map(field_errors).unwrap_or_default();
    let error_of = |f: Field| {
        errors
            .iter()
            .find(|(g, _)| *g == f)
            .map(|(_, e)| e.as_str())
    };
    let value = |get: fn(&NewTenant) -> &str| form.map(get).unwrap_or_default();
    let alert = match error {
        Some(e) if errors.is_empty() => format!("<p class=\"error\" role=\"alert\" id=\"form-error\">{}</p>", esc(e)),
        Some(_) => "<p class=\"error\" role=\"alert\" id=\"form-error\">The tenant was not created: see the field marked below.</p>".to_owned(),
        None => String::new(),
    };
    let fields = [
        field(
            Field::Name,
            "Name",
            "Lowercase letters, digits and '-', starting with a letter.",
            value(|f| &f.name),
            true,
            error_of(Field::Name),
        ),
        field(
            Field::Cpu,
            "CPU",
            &format!(
                "Cores, e.g. 8 or 500m.{}",
                at_most(bounds.max_cpu.as_deref())
            ),
            value(|f| &f.cpu),
            true,
            error_of(Field::Cpu),
        ),
        field(
            Field::Memory,
            "Memory",
            &format!("e.g. 16Gi.{}", at_most(bounds.max_memory.as_deref())),
            value(|f| &f.memory),
            true,
            error_of(Field::Memory),
        ),
        field(
            Field::Storage,
            "Storage (optional)",
            &format!(
                "For volume claims, e.g. 50Gi; without it the tenant cannot claim volumes.{}",
                at_most(bounds.max_storage.as_deref())
            ),
            value(|f| &f.storage),
            false,
            error_of(Field::Storage),
        ),
    ]
    .concat();
    format!(
        "<section aria-labelledby=\"new\"><h2 id=\"new\">New tenant</h2><p id=\"bounds\">{}</p>{alert}\
<form method=\"post\" action=\"/tenants\" aria-labelledby=\"new\" novalidate>\
<input type=\"hidden\" name=\"csrf\" value=\"{}\">{fields}\
<div class=\"actions\"><button type=\"submit\">Create tenant</button></div></form></section>",
        bounds_text(bounds),
        esc(csrf),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_goes_next_to_the_field_it_names() {
        // The API server's words for one bad field (the CRD's message).
        let one = "Tenant.kubespaces.io \"t\" is invalid: spec.resources.cpu: Invalid value: \"lots\": must be a Kubernetes quantity such as 8, 500m, 16Gi or 50Gi";
        assert_eq!(field_errors(one), [(Field::Cpu, one.to_owned())]);
        // Several: each field gets its own part.
        let two = "Tenant.kubespaces.io \"t\" is invalid: [spec.resources.memory: Invalid value: \"x\": must be a Kubernetes quantity such as 8, 500m, 16Gi or 50Gi, spec.resources.cpu: Invalid value: \"0\": must be greater than zero]";
        assert_eq!(
            field_errors(two),
            [
                (Field::Memory, "spec.resources.memory: Invalid value: \"x\": must be a Kubernetes quantity such as 8, 500m, 16Gi or 50Gi".to_owned()),
                (Field::Cpu, "spec.resources.cpu: Invalid value: \"0\": must be greater than zero".to_owned()),
            ]
        );
        // The name rules (CEL at the root) and the server's own refusals.
        let name = "Tenant.kubespaces.io \"A\" is invalid: <nil>: Invalid value: \"object\": metadata.name must be a DNS label";
        assert_eq!(field_errors(name)[0].0, Field::Name);
        assert_eq!(
            field_errors("tenant name \"t\" is not available: …")[0].0,
            Field::Name
        );
        assert_eq!(
            field_errors("storage 2Ti is more than one tenant may have: the most is 1Ti")[0].0,
            Field::Storage
        );
        // A refusal about the owner names no field.
        assert!(
            field_errors("alice@example.com already owns 3 tenants, the most one owner may have")
                .is_empty()
        );
    }

    fn bounds() -> FormBounds {
        FormBounds {
            max_cpu: Some("64".into()),
            max_memory: Some("256Gi".into()),
            max_storage: None,
            max_tenants_per_owner: 3,
            owned: 1,
        }
    }

    #[test]
    fn the_form_shows_the_bounds_and_marks_the_refused_field() {
        let form = NewTenant {
            csrf: "c".into(),
            name: "t".into(),
            cpu: "<lots>".into(),
            memory: "1Gi".into(),
            storage: String::new(),
        };
        let html = new_tenant_form(
            "tok",
            &bounds(),
            Some(&form),
            Some("spec.resources.cpu: Invalid value: \"<lots>\": must be a Kubernetes quantity"),
        );
        assert!(html.contains("One tenant may have at most 64 CPU, 256Gi memory; one owner may have at most 3 tenants (you have 1)."), "{html}");
        assert!(html.contains("e.g. 8 or 500m. At most 64 on this platform."));
        assert!(html.contains("id=\"cpu\" name=\"cpu\" required value=\"&lt;lots&gt;\" aria-describedby=\"cpu-hint cpu-error\" aria-invalid=\"true\""), "{html}");
        assert!(html.contains("<span class=\"field-error\" id=\"cpu-error\">spec.resources.cpu: Invalid value: &quot;&lt;lots&gt;&quot;"));
        assert!(
            html.contains("aria-describedby=\"memory-hint\" autocomplete"),
            "memory is not marked"
        );
        // The hint follows its input; the button is in its own block after the last field.
        let input = html.find("id=\"name\" name").unwrap();
        assert!(input < html.find("id=\"name-hint\"").unwrap());
        assert!(
            html.find("id=\"storage-hint\"").unwrap()
                < html.find("<div class=\"actions\">").unwrap()
        );
        assert!(
            new_tenant_form("tok", &bounds(), None, Some("too many tenants created"))
                .contains("id=\"form-error\">too many tenants created")
        );
        let open = FormBounds {
            max_cpu: None,
            max_memory: None,
            max_storage: None,
            max_tenants_per_owner: 0,
            owned: 0,
        };
        assert_eq!(
            bounds_text(&open),
            "This platform sets no maximum size per tenant; there is no limit on how many tenants you own."
        );
    }
}
