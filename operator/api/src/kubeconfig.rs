//! Tenant kubeconfigs as data, never as configuration.
//!
//! A kubeconfig can make whoever loads it run a program (`exec`, `auth-provider`), read a local
//! file (`tokenFile`, `client-certificate`, `certificate-authority`), send its requests through a
//! proxy or skip the server's certificate check. The kubeconfigs KubeSpaces handles sit in
//! Secrets of the tenant namespace (admission keeps the owner from writing them; a guard
//! bypassed or a bug must not be enough): loaded as they are, they would let a tenant run code
//! in the operator (or read its ServiceAccount token and have it sent to the tenant) and on the
//! machine of everyone who downloads one, an admin included.
//!
//! So every door reads them with [`parse`]: it takes the CA and the token or client certificate
//! of the current context, refuses anything else by its field name, and ignores the server (the
//! platform knows the tenant's URL). Every door hands out only what [`Credential::kubeconfig`]
//! builds from those parts.

use serde::Serialize;
use serde_json::{Map, Value};
use thiserror::Error;

/// Why a kubeconfig is not taken.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum KubeconfigError {
    /// Not YAML, or not shaped as a kubeconfig.
    #[error("it is not a kubeconfig: {0}")]
    Malformed(String),
    /// A field KubeSpaces never writes and never reads.
    #[error(
        "it sets {field}, which a tenant kubeconfig may not hold (only a server, \
         certificate-authority-data, and a token or client-certificate-data with client-key-data)"
    )]
    Refused { field: String },
    /// A field the credential needs is missing or empty.
    #[error("it has no {0}")]
    Missing(String),
}

/// How the kubeconfig's user authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    Token(String),
    /// Base64 PEM, as kubeconfigs hold them.
    ClientCertificate {
        certificate_data: String,
        key_data: String,
    },
}

/// What the platform takes from a kubeconfig: the CA (base64 PEM) and the credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub ca_data: String,
    pub auth: Auth,
}

/// The fields allowed at each level (`preferences` only empty, as vCluster writes it).
const TOP: &[&str] = &[
    "apiVersion",
    "kind",
    "clusters",
    "contexts",
    "users",
    "current-context",
    "preferences",
];
const NAMED: &[&str] = &["name", "cluster", "context", "user"];
const CLUSTER: &[&str] = &["server", "certificate-authority-data"];
const CONTEXT: &[&str] = &["cluster", "user", "namespace"];
const USER: &[&str] = &["token", "client-certificate-data", "client-key-data"];

fn refuse_unknown(
    object: &Map<String, Value>,
    allowed: &[&str],
    at: &str,
) -> Result<(), KubeconfigError> {
    match object.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(field) => Err(KubeconfigError::Refused {
            field: format!("{at}{field}"),
        }),
        None => Ok(()),
    }
}

fn object<'a>(value: &'a Value, at: &str) -> Result<&'a Map<String, Value>, KubeconfigError> {
    value
        .as_object()
        .ok_or_else(|| KubeconfigError::Malformed(format!("{at} is not a mapping")))
}

fn string(
    object: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<String>, KubeconfigError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(KubeconfigError::Malformed(format!(
            "{at}{key} is not a string"
        ))),
    }
}

/// A list entry's name and body.
type Entry<'a> = (String, &'a Map<String, Value>);

/// The entries of list `key` (`clusters`, `contexts`, `users`), each checked against the fields
/// allowed in it, by name.
fn entries<'a>(
    top: &'a Map<String, Value>,
    key: &str,
    inner: &str,
    allowed: &[&str],
) -> Result<Vec<Entry<'a>>, KubeconfigError> {
    let list = match top.get(key) {
        None | Some(Value::Null) => return Ok(vec![]),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(KubeconfigError::Malformed(format!("{key} is not a list"))),
    };
    list.iter()
        .enumerate()
        .map(|(i, entry)| {
            let at = format!("{key}[{i}].");
            let entry = object(entry, &format!("{key}[{i}]"))?;
            refuse_unknown(entry, NAMED, &at)?;
            let name = string(entry, "name", &at)?.unwrap_or_default();
            let body = object(
                entry.get(inner).unwrap_or(&Value::Null),
                &format!("{at}{inner}"),
            )?;
            refuse_unknown(body, allowed, &format!("{at}{inner}."))?;
            Ok((name, body))
        })
        .collect()
}

/// The body of the entry of `list` that `context.<key>` names.
fn named<'a>(
    list: &[Entry<'a>],
    context: &Map<String, Value>,
    key: &str,
) -> Result<&'a Map<String, Value>, KubeconfigError> {
    let name = string(context, key, "context.")?
        .ok_or_else(|| KubeconfigError::Missing(format!("context.{key}")))?;
    list.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, body)| *body)
        .ok_or_else(|| KubeconfigError::Missing(format!("{key} {name:?} of the context")))
}

/// The credential of a kubeconfig's current context (or of its only context), refusing every
/// field but the server, the inline CA and an inline token or client certificate.
pub fn parse(yaml: &str) -> Result<Credential, KubeconfigError> {
    let doc: Value =
        serde_yaml::from_str(yaml).map_err(|e| KubeconfigError::Malformed(e.to_string()))?;
    let top = object(&doc, "the document")?;
    refuse_unknown(top, TOP, "")?;
    if let Some(p) = top.get("preferences")
        && !p.is_null()
        && p.as_object().is_none_or(|p| !p.is_empty())
    {
        return Err(KubeconfigError::Refused {
            field: "preferences".into(),
        });
    }
    let clusters = entries(top, "clusters", "cluster", CLUSTER)?;
    let contexts = entries(top, "contexts", "context", CONTEXT)?;
    let users = entries(top, "users", "user", USER)?;
    let current = string(top, "current-context", "")?;
    let context = match current {
        Some(name) => contexts.iter().find(|(n, _)| *n == name),
        None if contexts.len() == 1 => contexts.first(),
        None => None,
    }
    .ok_or_else(|| KubeconfigError::Missing("current context".into()))?
    .1;
    let cluster = named(&clusters, context, "cluster")?;
    let user = named(&users, context, "user")?;
    let ca_data = string(cluster, "certificate-authority-data", "cluster.")?
        .ok_or_else(|| KubeconfigError::Missing("cluster.certificate-authority-data".into()))?;
    let auth = match (
        string(user, "token", "user.")?,
        string(user, "client-certificate-data", "user.")?,
        string(user, "client-key-data", "user.")?,
    ) {
        (Some(token), None, None) => Auth::Token(token),
        (None, Some(certificate_data), Some(key_data)) => Auth::ClientCertificate {
            certificate_data,
            key_data,
        },
        (None, _, _) => {
            return Err(KubeconfigError::Missing(
                "user.token, nor user.client-certificate-data with user.client-key-data".into(),
            ));
        }
        (Some(_), _, _) => {
            return Err(KubeconfigError::Refused {
                field: "user.token together with a client certificate".into(),
            });
        }
    };
    Ok(Credential { ca_data, auth })
}

// The shape written, fields in the order they have always been written in (alphabetical).
#[derive(Serialize)]
struct Document<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    clusters: [NamedCluster<'a>; 1],
    contexts: [NamedContext<'a>; 1],
    #[serde(rename = "current-context")]
    current_context: &'a str,
    kind: &'static str,
    users: [NamedUser<'a>; 1],
}

#[derive(Serialize)]
struct NamedCluster<'a> {
    cluster: ClusterBody<'a>,
    name: &'a str,
}

#[derive(Serialize)]
struct ClusterBody<'a> {
    #[serde(rename = "certificate-authority-data")]
    ca_data: &'a str,
    server: &'a str,
}

#[derive(Serialize)]
struct NamedContext<'a> {
    context: ContextBody<'a>,
    name: &'a str,
}

#[derive(Serialize)]
struct ContextBody<'a> {
    cluster: &'a str,
    user: &'a str,
}

#[derive(Serialize)]
struct NamedUser<'a> {
    name: &'a str,
    user: UserBody<'a>,
}

#[derive(Serialize)]
struct UserBody<'a> {
    #[serde(
        rename = "client-certificate-data",
        skip_serializing_if = "Option::is_none"
    )]
    certificate_data: Option<&'a str>,
    #[serde(rename = "client-key-data", skip_serializing_if = "Option::is_none")]
    key_data: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<&'a str>,
}

impl Credential {
    /// The only kubeconfig KubeSpaces writes: one cluster (`server`, this CA), one user (this
    /// credential) and one context, all named `name`.
    pub fn kubeconfig(&self, name: &str, server: &str) -> String {
        let user = match &self.auth {
            Auth::Token(token) => UserBody {
                certificate_data: None,
                key_data: None,
                token: Some(token),
            },
            Auth::ClientCertificate {
                certificate_data,
                key_data,
            } => UserBody {
                certificate_data: Some(certificate_data),
                key_data: Some(key_data),
                token: None,
            },
        };
        let doc = Document {
            api_version: "v1",
            clusters: [NamedCluster {
                cluster: ClusterBody {
                    ca_data: &self.ca_data,
                    server,
                },
                name,
            }],
            contexts: [NamedContext {
                context: ContextBody {
                    cluster: name,
                    user: name,
                },
                name,
            }],
            current_context: name,
            kind: "Config",
            users: [NamedUser { name, user }],
        };
        // Strings, lists and mappings only: serialising cannot fail.
        serde_yaml::to_string(&doc).unwrap_or_default()
    }
}

/// The tenant kubeconfig the platform hands out: `server` (the tenant's public API URL, from the
/// Tenant's status), the tenant control plane's CA and the token, nothing else.
pub fn tenant_kubeconfig(name: &str, server: &str, ca_data: &str, token: &str) -> String {
    Credential {
        ca_data: ca_data.into(),
        auth: Auth::Token(token.into()),
    }
    .kubeconfig(name, server)
}

/// A kubeconfig read from where a tenant could have written it (a Secret's bytes), rebuilt from
/// its trusted parts for handing on: the server is `server`, whatever the file said; only a
/// token is handed on.
pub fn rebuild(name: &str, server: &str, bytes: &[u8]) -> Result<String, KubeconfigError> {
    let yaml = std::str::from_utf8(bytes).map_err(|e| KubeconfigError::Malformed(e.to_string()))?;
    let credential = parse(yaml)?;
    match credential.auth {
        Auth::Token(_) => Ok(credential.kubeconfig(name, server)),
        Auth::ClientCertificate { .. } => Err(KubeconfigError::Refused {
            field: "user.client-certificate-data (a tenant kubeconfig carries a token)".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VCLUSTER_ADMIN: &str = "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: Q0E=
    server: https://localhost:8443
  name: my-vcluster
contexts:
- context:
    cluster: my-vcluster
    user: my-vcluster
  name: my-vcluster
current-context: my-vcluster
kind: Config
preferences: {}
users:
- name: my-vcluster
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
";

    #[test]
    fn the_admin_kubeconfig_vcluster_writes_is_taken() {
        let c = parse(VCLUSTER_ADMIN).unwrap();
        assert_eq!(c.ca_data, "Q0E=");
        assert_eq!(
            c.auth,
            Auth::ClientCertificate {
                certificate_data: "Q0VSVA==".into(),
                key_data: "S0VZ".into()
            }
        );
    }

    #[test]
    fn what_the_platform_writes_it_reads_back_and_nothing_else_survives() {
        let k = tenant_kubeconfig(
            "team-atlas",
            "https://team-atlas.api.example.com:443",
            "Q0E=",
            "tok",
        );
        let c = parse(&k).unwrap();
        assert_eq!(c.auth, Auth::Token("tok".into()));
        assert_eq!(
            c.kubeconfig("team-atlas", "https://team-atlas.api.example.com:443"),
            k
        );
        assert!(k.starts_with("apiVersion: v1\nclusters:\n"), "{k}");
        assert!(
            k.contains("server: https://team-atlas.api.example.com:443"),
            "{k}"
        );
        // The server of the file read is never handed on.
        let rebuilt = rebuild(
            "team-atlas",
            "https://right.example.com:443",
            k.replace("team-atlas.api", "evil").as_bytes(),
        )
        .unwrap();
        assert!(
            rebuilt.contains("https://right.example.com:443") && !rebuilt.contains("evil"),
            "{rebuilt}"
        );
        assert!(rebuild("a", "https://a", VCLUSTER_ADMIN.as_bytes()).is_err());
    }

    #[test]
    fn every_field_that_runs_code_reads_files_or_reroutes_is_refused_by_name() {
        for (insert_after, line, field) in [
            (
                "  user:\n",
                "    exec: {command: sh, apiVersion: client.authentication.k8s.io/v1}\n",
                "users[0].user.exec",
            ),
            (
                "  user:\n",
                "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n",
                "users[0].user.tokenFile",
            ),
            (
                "  user:\n",
                "    auth-provider: {name: gcp}\n",
                "users[0].user.auth-provider",
            ),
            (
                "  user:\n",
                "    client-certificate: /etc/cert\n",
                "users[0].user.client-certificate",
            ),
            ("  user:\n", "    as: system:admin\n", "users[0].user.as"),
            ("  user:\n", "    username: u\n", "users[0].user.username"),
            (
                "- cluster:\n",
                "    insecure-skip-tls-verify: true\n",
                "clusters[0].cluster.insecure-skip-tls-verify",
            ),
            (
                "- cluster:\n",
                "    proxy-url: http://evil:3128\n",
                "clusters[0].cluster.proxy-url",
            ),
            (
                "- cluster:\n",
                "    certificate-authority: /etc/ca\n",
                "clusters[0].cluster.certificate-authority",
            ),
            (
                "- cluster:\n",
                "    tls-server-name: evil\n",
                "clusters[0].cluster.tls-server-name",
            ),
            (
                "- cluster:\n",
                "    extensions: []\n",
                "clusters[0].cluster.extensions",
            ),
            ("kind: Config\n", "extensions: []\n", "extensions"),
        ] {
            let yaml = VCLUSTER_ADMIN.replacen(insert_after, &format!("{insert_after}{line}"), 1);
            assert_eq!(
                parse(&yaml),
                Err(KubeconfigError::Refused {
                    field: field.into()
                }),
                "{yaml}"
            );
        }
        let prefs = VCLUSTER_ADMIN.replace("preferences: {}", "preferences: {colors: true}");
        assert!(matches!(
            parse(&prefs),
            Err(KubeconfigError::Refused { .. })
        ));
        let message = parse(&VCLUSTER_ADMIN.replace(
            "    client-certificate-data: Q0VSVA==\n    client-key-data: S0VZ\n",
            "    tokenFile: /t\n",
        ))
        .unwrap_err()
        .to_string();
        assert!(message.contains("users[0].user.tokenFile"), "{message}");
    }

    #[test]
    fn a_kubeconfig_without_a_usable_credential_says_what_is_missing() {
        let no_ca = VCLUSTER_ADMIN.replace("    certificate-authority-data: Q0E=\n", "");
        assert_eq!(
            parse(&no_ca),
            Err(KubeconfigError::Missing(
                "cluster.certificate-authority-data".into()
            ))
        );
        let no_key = VCLUSTER_ADMIN.replace("    client-key-data: S0VZ\n", "");
        assert!(matches!(parse(&no_key), Err(KubeconfigError::Missing(_))));
        let other_context =
            VCLUSTER_ADMIN.replace("current-context: my-vcluster", "current-context: other");
        assert!(matches!(
            parse(&other_context),
            Err(KubeconfigError::Missing(_))
        ));
        assert!(matches!(
            parse("- a\n- b\n"),
            Err(KubeconfigError::Malformed(_))
        ));
    }
}
