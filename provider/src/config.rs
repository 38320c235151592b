//! Provider configuration: where the host cluster's API is and how to authenticate.
//!
//! Three ways, checked in this order, each attribute falling back to the environment
//! variable the hashicorp/kubernetes provider uses, so existing CI setups work unchanged:
//! 1. `host` (`KUBE_HOST`) + `token` (`KUBE_TOKEN`) + `cluster_ca_certificate`
//!    (`KUBE_CLUSTER_CA_CERT_DATA`) [+ `insecure` (`KUBE_INSECURE`)];
//! 2. `config_path` (`KUBE_CONFIG_PATH`) and/or `config_context` (`KUBE_CTX`);
//! 3. nothing set: `KUBECONFIG`, then `~/.kube/config`, then in-cluster service account.

use std::sync::LazyLock;

use base64::Engine as _;

use crate::diag::{AttrPath, Diag};
use crate::schema::{Attribute, Block, Mode};
use crate::value::{Type, Value};

pub static SCHEMA: LazyLock<Block> = LazyLock::new(|| {
    let s = |name, what| Attribute::new(name, Type::String, Mode::Optional, what);
    Block {
        attributes: vec![
            s(
                "config_path",
                "Path to a kubeconfig file for the host cluster. Env: `KUBE_CONFIG_PATH`. Without any setting, `KUBECONFIG`, `~/.kube/config` or the in-cluster service account is used.",
            ),
            s(
                "config_context",
                "Context to use from the kubeconfig. Env: `KUBE_CTX`. Default: the current context.",
            ),
            s(
                "host",
                "URL of the host cluster's API server, e.g. `https://10.0.0.1:6443`. Env: `KUBE_HOST`. Takes precedence over kubeconfig settings.",
            ),
            s("token", "Bearer token for `host`. Env: `KUBE_TOKEN`.").sensitive(),
            s(
                "cluster_ca_certificate",
                "PEM CA certificate of `host`. Env: `KUBE_CLUSTER_CA_CERT_DATA`.",
            ),
            Attribute::new(
                "insecure",
                Type::Bool,
                Mode::Optional,
                "Skip TLS verification of `host` (test clusters only). Env: `KUBE_INSECURE`.",
            ),
        ],
        blocks: vec![],
        description: "Connects to the host cluster where the KubeSpaces operator runs.",
    }
});

pub static TYPE: LazyLock<Type> = LazyLock::new(|| SCHEMA.implied_type());

#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Explicit {
        host: String,
        token: Option<String>,
        ca_pem: Option<String>,
        insecure: bool,
    },
    Kubeconfig {
        path: Option<String>,
        context: Option<String>,
    },
    Infer,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    #[error("finding cluster credentials: {0}")]
    Infer(#[from] kube::config::InferConfigError),
    #[error("creating the Kubernetes client: {0}")]
    Client(#[from] kube::Error),
}

/// Works out where to connect, from configuration and then the environment. Returns
/// diagnostics when the configuration cannot be used yet (unknown values) or is inconsistent.
pub fn source(config: &Value, env: impl Fn(&str) -> Option<String>) -> Result<Source, Vec<Diag>> {
    let unknown: Vec<Diag> = SCHEMA
        .attributes
        .iter()
        .filter(|a| config.get(a.name).is_unknown())
        .map(|a| {
            Diag::error(
                "Provider configuration is not known yet",
                format!("`{}` depends on a value known only after apply. Configure the kubespaces provider from values known at plan time (variables, data sources, or resources applied in an earlier run).", a.name),
            )
            .at(AttrPath::root(a.name))
        })
        .collect();
    if config.is_unknown() || !unknown.is_empty() {
        return Err(unknown);
    }
    let get = |attr: &str, var: &str| {
        config
            .get(attr)
            .as_str()
            .map(str::to_owned)
            .or_else(|| env(var))
            .filter(|s| !s.is_empty())
    };
    if let Some(host) = get("host", "KUBE_HOST") {
        let insecure = config
            .get("insecure")
            .as_bool()
            .or_else(|| {
                env("KUBE_INSECURE").map(|v| matches!(v.as_str(), "1" | "true" | "TRUE" | "True"))
            })
            .unwrap_or(false);
        return Ok(Source::Explicit {
            host,
            token: get("token", "KUBE_TOKEN"),
            ca_pem: get("cluster_ca_certificate", "KUBE_CLUSTER_CA_CERT_DATA"),
            insecure,
        });
    }
    let path = get("config_path", "KUBE_CONFIG_PATH");
    let context = get("config_context", "KUBE_CTX");
    if path.is_some() || context.is_some() {
        return Ok(Source::Kubeconfig { path, context });
    }
    Ok(Source::Infer)
}

/// ConfigureProvider: warnings about a configuration that works but should not be used as is.
/// Today one: TLS verification turned off by `insecure` or `KUBE_INSECURE`, named as it was set.
pub fn warnings(config: &Value, source: &Source) -> Vec<Diag> {
    let Source::Explicit {
        host,
        insecure: true,
        ..
    } = source
    else {
        return vec![];
    };
    let detail = |setting: &str| {
        format!(
            "{setting} turns off TLS verification of {host}: the provider accepts any certificate, so whoever can intercept the connection can read the provider's credentials and every tenant it reads, kubeconfig included. Use it for throw-away test clusters only; otherwise give the API server's CA as `cluster_ca_certificate` (KUBE_CLUSTER_CA_CERT_DATA)."
        )
    };
    let warning = if config.get("insecure").as_bool() == Some(true) {
        Diag::warning(
            "`insecure` is set: TLS verification is off",
            detail("`insecure = true`"),
        )
        .at(AttrPath::root("insecure"))
    } else {
        Diag::warning(
            "KUBE_INSECURE is set: TLS verification is off",
            detail("The environment variable KUBE_INSECURE (for the provider's `insecure`)"),
        )
    };
    vec![warning]
}

/// ValidateProviderConfig: warnings for settings that would be silently ignored. Unknown
/// values are not judged (Terraform validates again once they are known).
pub fn validate(config: &Value) -> Vec<Diag> {
    let set = |a: &str| !config.get(a).is_null() && !config.get(a).is_unknown();
    let (ignored, summary, detail): (&[&'static str], _, _) = if set("host") {
        (
            &["config_path", "config_context"],
            "is ignored",
            "`host` is set, so the provider connects to it directly and reads no kubeconfig.",
        )
    } else if !config.get("host").is_unknown() {
        (
            &["token", "cluster_ca_certificate", "insecure"],
            "is ignored without `host`",
            "Set `host` (or KUBE_HOST) to use it; otherwise the kubeconfig's own credentials are used.",
        )
    } else {
        return vec![];
    };
    ignored
        .iter()
        .filter(|a| set(a))
        .map(|a| Diag::warning(format!("`{a}` {summary}"), detail).at(AttrPath::root(a)))
        .collect()
}

/// The in-memory kubeconfig for `host`/`token`/CA, so kube's own TLS and auth handling
/// (the same as for a kubeconfig file) applies.
fn explicit_kubeconfig(
    host: &str,
    token: Option<&str>,
    ca_pem: Option<&str>,
    insecure: bool,
) -> kube::config::Kubeconfig {
    use kube::config::{
        AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
    };
    let cluster = Cluster {
        server: Some(host.to_owned()),
        certificate_authority_data: ca_pem
            .map(|ca| base64::engine::general_purpose::STANDARD.encode(ca)),
        insecure_skip_tls_verify: insecure.then_some(true),
        ..Cluster::default()
    };
    let user = AuthInfo {
        token: token.map(|t| t.to_owned().into()),
        ..AuthInfo::default()
    };
    Kubeconfig {
        clusters: vec![NamedCluster {
            name: "host".into(),
            cluster: Some(cluster),
            ..NamedCluster::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: "terraform".into(),
            auth_info: Some(user),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![NamedContext {
            name: "host".into(),
            context: Some(Context {
                cluster: "host".into(),
                user: Some("terraform".into()),
                ..Context::default()
            }),
            ..NamedContext::default()
        }],
        current_context: Some("host".into()),
        ..Kubeconfig::default()
    }
}

pub async fn client(source: &Source) -> Result<kube::Client, ConfigError> {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let config = match source {
        Source::Explicit {
            host,
            token,
            ca_pem,
            insecure,
        } => {
            let kc = explicit_kubeconfig(host, token.as_deref(), ca_pem.as_deref(), *insecure);
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?
        }
        Source::Kubeconfig { path, context } => {
            let options = KubeConfigOptions {
                context: context.clone(),
                ..KubeConfigOptions::default()
            };
            match path {
                Some(p) => {
                    let kc = Kubeconfig::read_from(shellexpand_home(p))?;
                    kube::Config::from_custom_kubeconfig(kc, &options).await?
                }
                None => kube::Config::from_kubeconfig(&options).await?,
            }
        }
        Source::Infer => kube::Config::infer().await?,
    };
    Ok(crate::connection::client(config)?)
}

/// `~/x` as users write it in HCL.
fn shellexpand_home(path: &str) -> std::path::PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::PathBuf::from(home).join(rest),
        _ => std::path::PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, Value)]) -> Value {
        let mut v = Value::Null;
        for a in &SCHEMA.attributes {
            v.set(a.name, Value::Null);
        }
        for (k, val) in pairs {
            v.set(k, val.clone());
        }
        v
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn host_wins_and_falls_back_to_env_for_the_rest() {
        let env = |k: &str| match k {
            "KUBE_TOKEN" => Some("t0k".to_owned()),
            "KUBE_CONFIG_PATH" => Some("/ignored".to_owned()),
            _ => None,
        };
        let s = source(&cfg(&[("host", Value::string("https://h:6443"))]), env).unwrap();
        assert_eq!(
            s,
            Source::Explicit {
                host: "https://h:6443".into(),
                token: Some("t0k".into()),
                ca_pem: None,
                insecure: false
            }
        );
    }

    #[test]
    fn attribute_beats_environment() {
        let env = |k: &str| (k == "KUBE_CTX").then(|| "from-env".to_owned());
        let s = source(&cfg(&[("config_context", Value::string("kind-dev"))]), env).unwrap();
        assert_eq!(
            s,
            Source::Kubeconfig {
                path: None,
                context: Some("kind-dev".into())
            }
        );
        let s = source(&cfg(&[]), env).unwrap();
        assert_eq!(
            s,
            Source::Kubeconfig {
                path: None,
                context: Some("from-env".into())
            }
        );
    }

    #[test]
    fn nothing_set_infers() {
        assert_eq!(source(&cfg(&[]), no_env), Ok(Source::Infer));
        assert_eq!(source(&Value::Null, no_env), Ok(Source::Infer));
    }

    #[test]
    fn unknown_values_are_reported_at_their_attribute() {
        let err = source(&cfg(&[("host", Value::Unknown)]), no_env).unwrap_err();
        assert_eq!(err.len(), 1);
        assert_eq!(err[0].path, Some(AttrPath::root("host")));
    }

    #[test]
    fn settings_that_would_be_ignored_are_warned_about() {
        let both = cfg(&[
            ("host", Value::string("https://h")),
            ("config_path", Value::string("/k")),
        ]);
        let d = validate(&both);
        assert_eq!(d.len(), 1);
        assert!(!d[0].error);
        assert_eq!(d[0].path, Some(AttrPath::root("config_path")));

        let token_only = cfg(&[("token", Value::string("t"))]);
        assert_eq!(validate(&token_only)[0].path, Some(AttrPath::root("token")));
        // The host may be known later: no warning yet.
        let later = cfg(&[("host", Value::Unknown), ("token", Value::string("t"))]);
        assert_eq!(validate(&later), vec![]);
        assert_eq!(validate(&cfg(&[])), vec![]);
    }

    #[test]
    fn insecure_is_warned_about_by_the_name_it_was_set_under() {
        let host = ("host", Value::string("https://h:6443"));
        let warned = |config: &Value, env: &dyn Fn(&str) -> Option<String>| {
            warnings(config, &source(config, env).unwrap())
        };

        let attribute = cfg(&[host.clone(), ("insecure", Value::Bool(true))]);
        let d = warned(&attribute, &no_env);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(!d[0].error, "a warning, not an error");
        assert_eq!(d[0].path, Some(AttrPath::root("insecure")));
        assert!(d[0].summary.contains("`insecure`"), "{}", d[0].summary);
        assert!(d[0].detail.contains("https://h:6443"), "{}", d[0].detail);
        let proto = d[0].to_proto();
        assert_eq!(
            proto.severity,
            crate::proto::tfplugin6::diagnostic::Severity::Warning as i32
        );

        let kube_insecure =
            |v: &'static str| move |k: &str| (k == "KUBE_INSECURE").then(|| v.to_owned());
        for value in ["1", "true", "TRUE", "True"] {
            let d = warned(&cfg(std::slice::from_ref(&host)), &kube_insecure(value));
            assert_eq!(d.len(), 1, "KUBE_INSECURE={value}: {d:?}");
            assert!(!d[0].error);
            assert!(d[0].summary.contains("KUBE_INSECURE"), "{}", d[0].summary);
            // Not set in the configuration: no attribute to point at.
            assert_eq!(d[0].path, None);
        }

        // Verification on: nothing to say. `insecure = false` beats KUBE_INSECURE.
        assert_eq!(warned(&cfg(std::slice::from_ref(&host)), &no_env), vec![]);
        assert_eq!(
            warned(&cfg(std::slice::from_ref(&host)), &kube_insecure("0")),
            vec![]
        );
        let off = cfg(&[host, ("insecure", Value::Bool(false))]);
        assert_eq!(warned(&off, &kube_insecure("true")), vec![]);
        // Without `host`, `insecure` is not used (and `validate` says it is ignored).
        let unused = cfg(&[("insecure", Value::Bool(true))]);
        assert_eq!(warned(&unused, &no_env), vec![]);
    }

    #[test]
    fn explicit_kubeconfig_carries_server_token_and_ca() {
        let kc = explicit_kubeconfig("https://h:6443", Some("t"), Some("PEM"), true);
        let cluster = kc.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://h:6443"));
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some("UEVN"));
        assert_eq!(cluster.insecure_skip_tls_verify, Some(true));
        assert!(kc.auth_infos[0].auth_info.as_ref().unwrap().token.is_some());
        assert_eq!(kc.current_context.as_deref(), Some("host"));
        let bare = explicit_kubeconfig("https://h:6443", None, None, false);
        let cluster = bare.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(
            (
                cluster.certificate_authority_data.as_deref(),
                cluster.insecure_skip_tls_verify
            ),
            (None, None)
        );
        assert!(
            bare.auth_infos[0]
                .auth_info
                .as_ref()
                .unwrap()
                .token
                .is_none()
        );
    }
}
