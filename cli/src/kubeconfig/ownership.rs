//! Which entries of the user's kubeconfig `--merge` may replace: those an earlier merge of the
//! same tenant wrote. Any other entry of the tenant's name is the user's, and stays unless
//! `--force` is given.

use serde_yaml::Value;

use super::{SECTIONS, entry};

/// Entries named `name` in `original` that an earlier merge of this tenant did not write, as
/// `context "prod"`.
///
/// What an earlier merge wrote is recognised by its cluster entry: it points at the tenant's API
/// URL, which the server hands out for this one tenant (`https://<tenant>.api.<domain>`), so a
/// cluster the user set up for anything else does not point there, and the same tenant name on
/// another KubeSpaces installation has another URL. The user and the context of that name count as
/// written by kubespaces only next to that cluster (the three are always written together), the
/// context only while it still joins that cluster and that user. So nothing has to be added to the
/// user's file to mark our entries, and a token rotation or a new CA updates them in place.
pub(super) fn foreign(original: &Value, entries: &[(&str, Value)], name: &str) -> Vec<String> {
    let server = |cluster: &Value| {
        cluster
            .get("cluster")
            .and_then(|c| c.get("server"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let new_server = entries
        .iter()
        .find(|(section, _)| *section == "clusters")
        .and_then(|(_, cluster)| server(cluster));
    let ours = entry(original, "clusters", name)
        .and_then(server)
        .is_some_and(|s| Some(s) == new_server);
    let joins_ours = |context: &Value| {
        let field = |f: &str| {
            context
                .get("context")
                .and_then(|c| c.get(f))
                .and_then(Value::as_str)
        };
        ours && field("cluster") == Some(name) && field("user") == Some(name)
    };
    SECTIONS
        .iter()
        .filter_map(|(section, kind)| {
            let existing = entry(original, section, name)?;
            let written = match *section {
                "contexts" => joins_ours(existing),
                _ => ours,
            };
            (!written).then(|| format!("{kind} {name:?}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::merge;
    use super::*;
    use crate::error::CliError;

    /// A tenant kubeconfig as the server hands it out.
    fn tenant(server: &str, token: &str) -> String {
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: vcluster
  cluster:
    certificate-authority-data: Q0E=
    server: {server}
contexts:
- name: vcluster
  context:
    cluster: vcluster
    user: admin
current-context: vcluster
users:
- name: admin
  user:
    token: {token}
"
        )
    }

    const PROD_API: &str = "https://prod.api.example.com:443";

    /// The user's own `prod`, as kubectl writes it.
    const MINE: &str = "apiVersion: v1
clusters:
- cluster:
    server: https://prod.internal:6443
  name: prod
contexts:
- context:
    cluster: prod
    namespace: web
    user: prod
  name: prod
current-context: prod
kind: Config
preferences: {}
users:
- name: prod
  user:
    token: my-own-token
";

    fn conflict(result: Result<String, CliError>) -> Vec<String> {
        match result {
            Err(CliError::Conflict(c)) => c.entries,
            other => panic!("expected a conflict, got {other:?}"),
        }
    }

    #[test]
    fn a_tenant_never_takes_over_the_users_entries_of_its_name() {
        let e = merge(MINE, &tenant(PROD_API, "t1"), "prod", false);
        assert_eq!(
            conflict(e),
            ["cluster \"prod\"", "user \"prod\"", "context \"prod\""]
        );
        let message = merge(MINE, &tenant(PROD_API, "t1"), "prod", false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            "the kubeconfig already has cluster \"prod\" and user \"prod\" and context \"prod\" \
             that kubespaces did not write for tenant prod; nothing was changed: --force replaces \
             them"
        );
        // Any one of them alone stops the merge too.
        let lone_context = "apiVersion: v1\nkind: Config\ncontexts:\n- context:\n    cluster: prod\n    user: prod\n  name: prod\n";
        assert_eq!(
            conflict(merge(lone_context, &tenant(PROD_API, "t1"), "prod", false)),
            ["context \"prod\""]
        );
        let lone_user =
            "apiVersion: v1\nkind: Config\nusers:\n- name: prod\n  user:\n    token: mine\n";
        assert_eq!(
            conflict(merge(lone_user, &tenant(PROD_API, "t1"), "prod", false)),
            ["user \"prod\""]
        );
    }

    #[test]
    fn force_replaces_them() {
        let merged = merge(MINE, &tenant(PROD_API, "t1"), "prod", true).unwrap();
        let v: Value = serde_yaml::from_str(&merged).unwrap();
        assert_eq!(
            entry(&v, "clusters", "prod").unwrap()["cluster"]["server"],
            PROD_API
        );
        assert_eq!(entry(&v, "users", "prod").unwrap()["user"]["token"], "t1");
    }

    #[test]
    fn what_an_earlier_merge_wrote_is_updated_without_force() {
        let first = merge(MINE, &tenant(PROD_API, "t1"), "prod", true).unwrap();
        // A rotated token for the same tenant (same API URL): updated in place.
        let second = merge(&first, &tenant(PROD_API, "t2"), "prod", false).unwrap();
        let v: Value = serde_yaml::from_str(&second).unwrap();
        assert_eq!(entry(&v, "users", "prod").unwrap()["user"]["token"], "t2");
        // Another tenant of that name (another installation, another URL) is not ours to replace.
        let elsewhere = merge(
            &first,
            &tenant("https://prod.api.other.example:443", "t3"),
            "prod",
            false,
        );
        assert_eq!(
            conflict(elsewhere),
            ["cluster \"prod\"", "user \"prod\"", "context \"prod\""]
        );
        // A context the user re-pointed at a user of their own is theirs now.
        let repointed = first.replace(
            "    cluster: prod\n    user: prod\n  name: prod",
            "    cluster: prod\n    user: me\n  name: prod",
        );
        assert_ne!(repointed, first);
        assert_eq!(
            conflict(merge(&repointed, &tenant(PROD_API, "t2"), "prod", false)),
            ["context \"prod\""]
        );
    }
}
