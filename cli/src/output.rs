//! Printing tenants: a kubectl-style table (NAME PHASE API, as `kubectl get tenants` shows
//! them), or the objects as YAML or JSON.

use std::io::Write;

use clap::ValueEnum;
use kubespaces_api::api::Tenant;
use kubespaces_api::conditions;
use tabwriter::TabWriter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Table,
    Yaml,
    Json,
}

/// The phase, or what it is before the operator has written one.
pub fn phase(t: &Tenant) -> &str {
    t.phase().unwrap_or("Pending")
}

pub fn api_url(t: &Tenant) -> &str {
    t.status
        .as_ref()
        .and_then(|s| s.endpoints.as_ref())
        .and_then(|e| e.api.as_deref())
        .unwrap_or("")
}

/// What the tenant is waiting for ([`conditions::waiting_for`], the portal's definition too).
pub fn pending(t: &Tenant) -> Option<String> {
    conditions::waiting_for(t.conditions())
}

/// NAME PHASE API, columns padded like kubectl (Go's tabwriter, padding 3).
pub fn table(tenants: &[Tenant]) -> String {
    let mut tw = TabWriter::new(vec![]).padding(3);
    let _ = writeln!(tw, "NAME\tPHASE\tAPI");
    for t in tenants {
        let _ = writeln!(
            tw,
            "{}\t{}\t{}",
            t.metadata.name.as_deref().unwrap_or(""),
            phase(t),
            api_url(t)
        );
    }
    let bytes = tw.into_inner().unwrap_or_default();
    // tabwriter pads the last column too; kubectl does not.
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(|l| format!("{}\n", l.trim_end()))
        .collect()
}

pub fn print(tenants: &[Tenant], format: Format, single: bool) -> String {
    match (format, single) {
        (Format::Table, _) => table(tenants),
        (Format::Yaml, true) => serde_yaml::to_string(&tenants[0]).unwrap_or_default(),
        (Format::Json, true) => {
            serde_json::to_string_pretty(&tenants[0]).unwrap_or_default() + "\n"
        }
        (Format::Yaml, false) => {
            serde_yaml::to_string(&serde_json::json!({"items": tenants})).unwrap_or_default()
        }
        (Format::Json, false) => {
            serde_json::to_string_pretty(&serde_json::json!({"items": tenants})).unwrap_or_default()
                + "\n"
        }
    }
}

#[cfg(test)]
mod tests {
    use kubespaces_api::api::{TenantEndpoints, TenantSpec, TenantStatus};

    use super::*;

    #[test]
    fn the_table_reads_like_the_walk_through() {
        let mut t = Tenant::new(
            "team-atlas",
            TenantSpec::new("a@example.com", "8", "16Gi", None),
        );
        t.status = Some(TenantStatus {
            phase: Some("Ready".into()),
            endpoints: Some(TenantEndpoints {
                api: Some("https://team-atlas.api.example.com:443".into()),
                apps: None,
            }),
            ..Default::default()
        });
        assert_eq!(
            table(&[t]),
            "NAME         PHASE   API\nteam-atlas   Ready   https://team-atlas.api.example.com:443\n"
        );
    }

    #[test]
    fn asleep_and_waking_are_phases_like_the_others() {
        let tenant = |name: &str, phase: &str| {
            let mut t = Tenant::new(name, TenantSpec::new("a@example.com", "1", "1Gi", None));
            t.status = Some(TenantStatus {
                phase: Some(phase.into()),
                endpoints: Some(TenantEndpoints {
                    api: Some(format!("https://{name}.api.example.com:443")),
                    apps: None,
                }),
                ..Default::default()
            });
            t
        };
        assert_eq!(
            table(&[
                tenant("team-atlas", "Asleep"),
                tenant("team-vega", "Waking")
            ]),
            "NAME         PHASE    API\n\
             team-atlas   Asleep   https://team-atlas.api.example.com:443\n\
             team-vega    Waking   https://team-vega.api.example.com:443\n"
        );
    }
}
