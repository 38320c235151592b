//! `tenant kubeconfig --merge`: the tenant's cluster, user and context, all named after the
//! tenant, go into the user's kubeconfig. Every other entry, comment and blank line stays byte for
//! byte: the file is edited as text, one list item at a time (the layout kubectl writes). A file
//! laid out otherwise (flow style, JSON) is rewritten as a whole instead, which keeps every entry
//! but not its formatting; the result is checked against the original either way. An entry of the
//! tenant's name that kubespaces did not write is never replaced without `--force` ([`Conflict`]):
//! a tenant called `prod` must not take over the user's own `prod` context.

use std::path::{Path, PathBuf};

use serde_yaml::{Mapping, Value};

use crate::error::{CliError, Conflict, Result};

mod ownership;

const SECTIONS: [(&str, &str); 3] = [
    ("clusters", "cluster"),
    ("users", "user"),
    ("contexts", "context"),
];

fn invalid(what: &str) -> CliError {
    CliError::Other(format!(
        "the tenant kubeconfig from the server is unusable: {what}"
    ))
}

fn entry<'a>(config: &'a Value, section: &str, name: &str) -> Option<&'a Value> {
    config
        .get(section)?
        .as_sequence()?
        .iter()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
}

/// The tenant's three entries, each named `name`: (section, entry).
pub fn tenant_entries(tenant_kubeconfig: &str, name: &str) -> Result<Vec<(&'static str, Value)>> {
    // Never merge what would run a program, read a file or reroute kubectl on this machine: a
    // tenant kubeconfig holds a server, a CA and a token, nothing else.
    kubespaces_api::kubeconfig::parse(tenant_kubeconfig)
        .map_err(|e| invalid(&format!("{e}; nothing was merged")))?;
    let config: Value =
        serde_yaml::from_str(tenant_kubeconfig).map_err(|e| invalid(&e.to_string()))?;
    let context_name = config
        .get("current-context")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .or_else(|| {
            config
                .get("contexts")?
                .as_sequence()?
                .first()?
                .get("name")?
                .as_str()
                .map(str::to_owned)
        })
        .ok_or_else(|| invalid("no context"))?;
    let context = entry(&config, "contexts", &context_name)
        .and_then(|c| c.get("context"))
        .ok_or_else(|| invalid("the current context is missing"))?;
    let cluster_name = context
        .get("cluster")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let user_name = context
        .get("user")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let cluster = entry(&config, "clusters", cluster_name)
        .and_then(|c| c.get("cluster"))
        .ok_or_else(|| invalid("the context's cluster is missing"))?;
    let user = entry(&config, "users", user_name)
        .and_then(|u| u.get("user"))
        .ok_or_else(|| invalid("the context's user is missing"))?;
    let mut renamed_context = context.clone();
    if let Some(map) = renamed_context.as_mapping_mut() {
        map.insert("cluster".into(), name.into());
        map.insert("user".into(), name.into());
    }
    // Keys in alphabetical order, as kubectl writes them.
    let named = |kind: &str, body: &Value| {
        let mut pairs = [(kind, body.clone()), ("name", Value::from(name))];
        pairs.sort_by_key(|(k, _)| *k);
        Value::Mapping(
            pairs
                .into_iter()
                .map(|(k, v)| (Value::from(k), v))
                .collect(),
        )
    };
    Ok(vec![
        ("clusters", named("cluster", cluster)),
        ("users", named("user", user)),
        ("contexts", named("context", &renamed_context)),
    ])
}

/// `existing` (a kubeconfig file's text, possibly empty) with the tenant's entries added, or
/// replacing the ones an earlier merge wrote; entries of that name kubespaces did not write are
/// replaced only with `force`, else nothing is merged ([`Conflict`]).
pub fn merge(existing: &str, tenant_kubeconfig: &str, name: &str, force: bool) -> Result<String> {
    let entries = tenant_entries(tenant_kubeconfig, name)?;
    if existing.trim().is_empty() {
        let mut config = Mapping::new();
        config.insert("apiVersion".into(), "v1".into());
        config.insert("kind".into(), "Config".into());
        for (section, value) in &entries {
            config.insert((*section).into(), Value::Sequence(vec![value.clone()]));
        }
        config.insert("current-context".into(), name.into());
        return serde_yaml::to_string(&config).map_err(|e| CliError::Other(e.to_string()));
    }
    let original: Value = serde_yaml::from_str(existing).map_err(|e| {
        CliError::Other(format!(
            "the kubeconfig to merge into is not valid YAML: {e}"
        ))
    })?;
    let foreign = ownership::foreign(&original, &entries, name);
    if !force && !foreign.is_empty() {
        return Err(Conflict {
            tenant: name.to_owned(),
            entries: foreign,
        }
        .into());
    }
    let merged = match merge_text(existing, &entries, name) {
        Some(text) if check(&original, &text, &entries, name) => text,
        _ => rewrite(&original, &entries, name)?,
    };
    Ok(merged)
}

/// The whole file re-serialised (the fallback for layouts [`merge_text`] does not edit).
fn rewrite(original: &Value, entries: &[(&str, Value)], name: &str) -> Result<String> {
    let mut config = original
        .as_mapping()
        .cloned()
        .ok_or_else(|| CliError::Other("the kubeconfig to merge into is not a mapping".into()))?;
    for (section, value) in entries {
        let mut list: Vec<Value> = config
            .get(*section)
            .and_then(Value::as_sequence)
            .cloned()
            .unwrap_or_default();
        list.retain(|e| e.get("name").and_then(Value::as_str) != Some(name));
        list.push(value.clone());
        config.insert((*section).into(), Value::Sequence(list));
    }
    serde_yaml::to_string(&config).map_err(|e| CliError::Other(e.to_string()))
}

/// Every entry of `original` but the tenant's is in `merged` unchanged, and the tenant's are new.
fn check(original: &Value, merged: &str, entries: &[(&str, Value)], name: &str) -> bool {
    let Ok(merged) = serde_yaml::from_str::<Value>(merged) else {
        return false;
    };
    let (Some(before), Some(after)) = (original.as_mapping(), merged.as_mapping()) else {
        return false;
    };
    for (key, value) in before {
        let section = key.as_str().unwrap_or_default();
        if SECTIONS.iter().any(|(s, _)| *s == section) {
            let kept = |v: &Value| -> Vec<Value> {
                v.as_sequence()
                    .into_iter()
                    .flatten()
                    .filter(|e| e.get("name").and_then(Value::as_str) != Some(name))
                    .cloned()
                    .collect()
            };
            if kept(value) != kept(after.get(key).unwrap_or(&Value::Null)) {
                return false;
            }
        } else if after.get(key) != Some(value) {
            return false;
        }
    }
    entries
        .iter()
        .all(|(section, value)| entry(&merged, section, name) == Some(value))
}

/// Top-level key of a line, if it starts one (`clusters:` at column 0).
fn top_key(line: &str) -> Option<&str> {
    if line.starts_with([' ', '\t', '-', '#']) {
        return None;
    }
    let (key, _) = line.split_once(':')?;
    (!key.is_empty() && !key.contains(' ')).then_some(key)
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// The text edit: in each section, drop the items named `name` and append the new one, with the
/// section's own indentation. None when the layout is not the block style kubectl writes.
fn merge_text(existing: &str, entries: &[(&str, Value)], name: &str) -> Option<String> {
    let mut lines: Vec<String> = existing.lines().map(str::to_owned).collect();
    for (section, value) in entries {
        let rendered = serde_yaml::to_string(&vec![value.clone()]).ok()?;
        let start = lines.iter().position(|l| top_key(l) == Some(section));
        let Some(start) = start else {
            // No such section yet: append it.
            lines.push(format!("{section}:"));
            lines.extend(rendered.lines().map(str::to_owned));
            continue;
        };
        let rest = lines[start].split_once(':')?.1.trim();
        if !(rest.is_empty() || rest == "[]" || rest == "null" || rest == "~") {
            return None; // flow style
        }
        let end = lines[start + 1..]
            .iter()
            .position(|l| top_key(l).is_some())
            .map_or(lines.len(), |p| start + 1 + p);
        // Blank and comment lines closing the section stay after the new item.
        let mut body_end = end;
        while body_end > start + 1 && {
            let l = lines[body_end - 1].trim();
            l.is_empty() || l.starts_with('#')
        } {
            body_end -= 1;
        }
        let trailing: Vec<String> = lines[body_end..end].to_vec();
        let body = &lines[start + 1..body_end];
        let item_indent = body
            .iter()
            .find(|l| l.trim_start().starts_with("- ") || l.trim() == "-")
            .map_or(0, |l| indent_of(l));
        // Item boundaries: lines starting "- " at the items' indentation.
        let starts: Vec<usize> = body
            .iter()
            .enumerate()
            .filter(|(_, l)| indent_of(l) == item_indent && l.trim_start().starts_with('-'))
            .map(|(i, _)| i)
            .collect();
        let mut kept: Vec<String> = body[..starts.first().copied().unwrap_or(body.len())].to_vec();
        for (k, &s) in starts.iter().enumerate() {
            let e = starts.get(k + 1).copied().unwrap_or(body.len());
            let item: Vec<String> = body[s..e].to_vec();
            let text: String = item
                .iter()
                .map(|l| format!("{}\n", l.get(item_indent..).unwrap_or("")))
                .collect();
            let parsed: Vec<Value> = serde_yaml::from_str(&text).ok()?;
            let is_tenants = parsed
                .first()
                .and_then(|v| v.get("name"))
                .and_then(Value::as_str)
                == Some(name);
            if !is_tenants {
                kept.extend(item);
            }
        }
        let pad = " ".repeat(item_indent);
        kept.extend(rendered.lines().map(|l| format!("{pad}{l}")));
        kept.extend(trailing);
        let header = format!("{section}:");
        lines.splice(start..end, std::iter::once(header).chain(kept));
    }
    let mut text = lines.join("\n");
    text.push('\n');
    Some(text)
}

/// Where `--merge` writes: `--kubeconfig`, else the first file of `$KUBECONFIG`, else
/// `~/.kube/config`.
pub fn target(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path.to_owned());
    }
    if let Some(list) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty())
        && let Some(first) = std::env::split_paths(&list).find(|p| !p.as_os_str().is_empty())
    {
        return Ok(first);
    }
    dirs::home_dir()
        .map(|h| h.join(".kube").join("config"))
        .ok_or_else(|| {
            CliError::Other("no home directory for ~/.kube/config: set KUBECONFIG".into())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TENANT: &str = "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: Q0E=
    server: https://team-atlas.api.example.com:443
  name: my-vcluster
contexts:
- context:
    cluster: my-vcluster
    user: my-vcluster
  name: my-vcluster
current-context: my-vcluster
kind: Config
users:
- name: my-vcluster
  user:
    token: secret-token
";

    const EXISTING: &str = "apiVersion: v1
# my clusters
clusters:
- cluster:
    server: https://prod.example.com   # prod
    insecure-skip-tls-verify: true
  name: prod
- cluster:
    server: https://old-atlas.example.com
  name: team-atlas

contexts:
- context:
    cluster: prod
    user: me
    namespace: web
  name: prod
current-context: prod
kind: Config
preferences: {}
users:
- name: me
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: my-login
      args: [\"--flag\", 'x']
";

    #[test]
    fn merging_keeps_every_other_line_byte_for_byte() {
        // EXISTING's team-atlas cluster is not one kubespaces wrote (another server): --force.
        let merged = merge(EXISTING, TENANT, "team-atlas", true).unwrap();
        // Every line of the original, except the old team-atlas cluster, in order.
        let old_entry = [
            "- cluster:",
            "    server: https://old-atlas.example.com",
            "  name: team-atlas",
        ];
        let mut remaining = merged.lines();
        for line in EXISTING.lines() {
            if old_entry.contains(&line) && line != "- cluster:" {
                continue;
            }
            if line == "- cluster:" {
                continue; // item headers also open the new entries
            }
            assert!(
                remaining.any(|l| l == line),
                "line {line:?} lost or reordered in:\n{merged}"
            );
        }
        assert!(
            !merged.contains("old-atlas"),
            "the old entry is replaced:\n{merged}"
        );
        let v: Value = serde_yaml::from_str(&merged).unwrap();
        let ctx = entry(&v, "contexts", "team-atlas").unwrap();
        assert_eq!(ctx["context"]["cluster"], "team-atlas");
        assert_eq!(ctx["context"]["user"], "team-atlas");
        assert_eq!(
            entry(&v, "users", "team-atlas").unwrap()["user"]["token"],
            "secret-token"
        );
        assert_eq!(
            entry(&v, "clusters", "team-atlas").unwrap()["cluster"]["server"],
            "https://team-atlas.api.example.com:443"
        );
        assert_eq!(
            v["current-context"], "prod",
            "the current context is the user's choice"
        );
        // Merging twice changes nothing, and needs no --force: the entries are kubespaces' now.
        assert_eq!(merge(&merged, TENANT, "team-atlas", false).unwrap(), merged);
    }

    #[test]
    fn a_tenant_kubeconfig_that_would_run_a_program_is_never_merged() {
        let planted = TENANT.replace(
            "    token: secret-token\n",
            "    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh}\n",
        );
        let e = merge(EXISTING, &planted, "team-atlas", true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("users[0].user.exec") && e.contains("nothing was merged"),
            "{e}"
        );
    }

    #[test]
    fn an_empty_file_gets_a_complete_kubeconfig() {
        let merged = merge("", TENANT, "team-atlas", false).unwrap();
        let v: Value = serde_yaml::from_str(&merged).unwrap();
        assert_eq!(v["current-context"], "team-atlas");
        assert!(entry(&v, "clusters", "team-atlas").is_some());
    }

    #[test]
    fn flow_style_files_are_rewritten_without_losing_entries() {
        let existing = r#"{"apiVersion":"v1","kind":"Config","clusters":[{"name":"a","cluster":{"server":"https://a"}}],"contexts":[],"users":[]}"#;
        let merged = merge(existing, TENANT, "t", false).unwrap();
        let v: Value = serde_yaml::from_str(&merged).unwrap();
        assert!(entry(&v, "clusters", "a").is_some());
        assert!(entry(&v, "clusters", "t").is_some());
    }
}
