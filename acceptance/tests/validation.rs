//! Bad input is refused at the earliest door: the API server's admission, with a message that
//! names the field. Nothing is created by a refused apply.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kubespaces_acceptance::{Env, tenant_manifest as spec, tenant_yaml};

struct Case {
    what: &'static str,
    manifest: String,
    /// Text the error must contain: the field, and usually the fix.
    expect: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    let ok_resources = "  resources:\n    cpu: \"1\"\n    memory: 1Gi\n";
    let with = |name: &str, cpu: &str, memory: &str, storage: Option<&str>| {
        tenant_yaml(name, "alice@example.com", cpu, memory, storage)
    };
    let long = "a".repeat(kubespaces_operator::names::MAX_TENANT_NAME_LEN + 1);
    vec![
        Case {
            what: "name too long for the names derived from it",
            manifest: with(&long, "1", "1Gi", None),
            expect: &["metadata.name", "at most 31"],
        },
        Case {
            what: "uppercase name",
            manifest: with("Team-Atlas", "1", "1Gi", None),
            expect: &["metadata.name", "lowercase"],
        },
        Case {
            what: "dotted name",
            manifest: with("team.atlas", "1", "1Gi", None),
            expect: &["metadata.name", "DNS label"],
        },
        Case {
            what: "name starting with a digit",
            manifest: with("1team", "1", "1Gi", None),
            expect: &["metadata.name", "DNS label"],
        },
        Case {
            what: "owner not an email",
            manifest: tenant_yaml("v-owner", "alice", "1", "1Gi", None),
            expect: &["spec.owner", "email address"],
        },
        Case {
            what: "owner without domain",
            manifest: tenant_yaml("v-owner2", "alice@", "1", "1Gi", None),
            expect: &["spec.owner", "email address"],
        },
        Case {
            what: "owner with a space",
            manifest: tenant_yaml("v-owner3", "\"alice smith@example.com\"", "1", "1Gi", None),
            expect: &["spec.owner", "email address"],
        },
        Case {
            what: "owner missing",
            manifest: spec("v-noowner", ok_resources),
            expect: &["spec.owner", "Required"],
        },
        Case {
            what: "resources missing",
            manifest: spec("v-nores", "  owner: alice@example.com\n"),
            expect: &["spec.resources", "Required"],
        },
        Case {
            what: "cpu missing",
            manifest: spec(
                "v-nocpu",
                "  owner: alice@example.com\n  resources:\n    memory: 1Gi\n",
            ),
            expect: &["spec.resources.cpu", "Required"],
        },
        Case {
            what: "negative cpu",
            manifest: with("v-negcpu", "-1", "1Gi", None),
            expect: &["spec.resources.cpu", "greater than zero"],
        },
        Case {
            what: "negative integer cpu",
            manifest: spec(
                "v-negint",
                "  owner: alice@example.com\n  resources:\n    cpu: -2\n    memory: 1Gi\n",
            ),
            expect: &["spec.resources.cpu", "greater than zero"],
        },
        Case {
            what: "unparsable cpu",
            manifest: with("v-badcpu", "lots", "1Gi", None),
            expect: &["spec.resources.cpu", "quantity such as"],
        },
        Case {
            what: "zero memory",
            manifest: with("v-zeromem", "1", "0", None),
            expect: &["spec.resources.memory", "greater than zero"],
        },
        Case {
            what: "memory with a made-up unit",
            manifest: with("v-badmem", "1", "16GB", None),
            expect: &["spec.resources.memory", "quantity such as"],
        },
        Case {
            what: "negative storage",
            manifest: with("v-negsto", "1", "1Gi", Some("-5Gi")),
            expect: &["spec.resources.storage", "greater than zero"],
        },
        Case {
            what: "storage with a made-up unit",
            manifest: with("v-badsto", "1", "1Gi", Some("lots")),
            expect: &["spec.resources.storage", "quantity such as"],
        },
        Case {
            what: "unknown field",
            manifest: spec(
                "v-unknown",
                &format!("  owner: alice@example.com\n{ok_resources}  replicas: 3\n"),
            ),
            expect: &["unknown field", "spec.replicas"],
        },
        Case {
            what: "unknown deletion policy",
            manifest: spec(
                "v-policy",
                &format!("  owner: alice@example.com\n{ok_resources}  deletionPolicy: Keep\n"),
            ),
            expect: &["spec.deletionPolicy", "Unsupported value", "Orphan"],
        },
        Case {
            what: "connection secret in an invalid namespace",
            manifest: spec(
                "v-secret",
                &format!(
                    "  owner: alice@example.com\n{ok_resources}  writeConnectionSecretToRef:\n    name: atlas-conn\n    namespace: Bad_NS\n"
                ),
            ),
            expect: &["spec.writeConnectionSecretToRef.namespace", "DNS label"],
        },
        Case {
            what: "connection secret with an invalid name",
            manifest: spec(
                "v-secretname",
                &format!(
                    "  owner: alice@example.com\n{ok_resources}  writeConnectionSecretToRef:\n    name: Atlas_Conn\n    namespace: team-atlas\n"
                ),
            ),
            expect: &["spec.writeConnectionSecretToRef.name", "DNS subdomain"],
        },
        Case {
            what: "an idle period that is no duration",
            manifest: spec(
                "v-idle",
                &format!(
                    "  owner: alice@example.com\n{ok_resources}  sleep:\n    afterIdle: soon\n"
                ),
            ),
            expect: &["spec.sleep.afterIdle", "30m, 2h or 1h30m", "never"],
        },
        Case {
            what: "fractional number of cpus as a YAML float",
            manifest: spec(
                "v-float",
                "  owner: alice@example.com\n  resources:\n    cpu: 1.5\n    memory: 1Gi\n",
            ),
            expect: &["spec.resources.cpu"],
        },
    ]
}

/// A CEL rule of the CRD: the field it is on (`""` for the object itself) and its message.
#[derive(Debug)]
struct Rule {
    field: String,
    message: String,
    /// A transition rule (it reads `oldSelf`): only an update can trip it.
    transition: bool,
}

impl Rule {
    /// Whether an API server error is this rule's refusal: the field, then the message, on one
    /// line (`spec.resources.cpu: Invalid value: "string": must be greater than zero`). Rules on
    /// the object itself name their field in the message.
    fn refused(&self, error: &str) -> bool {
        let field = format!("{}: ", self.field);
        error
            .lines()
            .any(|l| l.contains(&self.message) && (self.field.is_empty() || l.contains(&field)))
    }
}

/// Every CEL rule a manifest can trip, from the CRD as the API server has it: the rules on
/// the object and under `spec` (the status is written by the operator, not by users).
async fn user_facing_rules(env: &Env) -> Vec<Rule> {
    fn walk(schema: &serde_json::Value, field: &str, out: &mut Vec<Rule>) {
        for rule in schema["x-kubernetes-validations"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let message = rule["message"].as_str().filter(|m| !m.is_empty());
            let text = rule["rule"].as_str().unwrap_or_default();
            out.push(Rule {
                transition: text.contains("oldSelf"),
                field: field.to_owned(),
                // Without a message the API server quotes the rule.
                message: message
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("failed rule: {}", rule["rule"].as_str().unwrap())),
            });
        }
        for (name, property) in schema["properties"].as_object().into_iter().flatten() {
            match field {
                "" if name == "status" => {}
                "" => walk(property, name, out),
                _ => walk(property, &format!("{field}.{name}"), out),
            }
        }
    }
    let crd = Api::<CustomResourceDefinition>::all(env.client().await)
        .get("tenants.kubespaces.io")
        .await
        .expect("the Tenant CRD is installed");
    let mut rules = Vec::new();
    for version in crd.spec.versions.iter().filter(|v| v.served) {
        let schema = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref());
        walk(&serde_json::to_value(schema).unwrap(), "", &mut rules);
    }
    rules
}

#[tokio::test]
async fn invalid_tenants_are_refused_at_admission_with_the_field_named() {
    let env = Env::get();
    let cases = cases();
    // Each case names the field it is about: a refusal that only says "invalid" fails.
    for case in &cases {
        assert!(
            case.expect
                .iter()
                .any(|e| e.starts_with("metadata.name") || e.starts_with("spec.")),
            "{}: expects no field path in {:?}",
            case.what,
            case.expect
        );
    }
    let mut failures = Vec::new();
    let mut errors = Vec::new();
    for case in &cases {
        let out = env.kubectl(&["apply", "-f", "-"], Some(&case.manifest));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.success() {
            failures.push(format!("{}: was accepted", case.what));
        } else if let Some(missing) = case.expect.iter().find(|e| !err.contains(**e)) {
            failures.push(format!("{}: error lacks {missing:?}: {err}", case.what));
        }
        errors.push(err);
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases wrong:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // The cases cover the schema: every rule the CRD declares refused at least one of them,
    // on its own field and with its own message. A rule added without a case fails here.
    let rules = user_facing_rules(&env).await;
    assert!(
        rules.iter().any(|r| r.field.is_empty()) && rules.iter().any(|r| r.field == "spec.owner"),
        "the walk found the rules on the object and under spec: {rules:#?}"
    );
    // Transition rules refuse only updates: `the_owner_cannot_change` plays the one there is,
    // and a new one fails here until it has such a test too.
    let transitions: Vec<&str> = rules
        .iter()
        .filter(|r| r.transition)
        .map(|r| r.field.as_str())
        .collect();
    assert_eq!(transitions, ["spec.owner"], "{rules:#?}");
    let untested: Vec<&Rule> = rules
        .iter()
        .filter(|r| !r.transition && !errors.iter().any(|e| r.refused(e)))
        .collect();
    assert!(
        untested.is_empty(),
        "{} of {} CRD rules refused no case:\n{untested:#?}",
        untested.len(),
        rules.len()
    );
    // Nothing was created by any refused apply.
    let names = env.kubectl_ok(&["get", "tenants", "-o", "name"], None);
    assert!(
        !names
            .lines()
            .any(|l| l.starts_with("tenant.kubespaces.io/v-")),
        "{names}"
    );
}

#[tokio::test]
async fn the_longest_allowed_name_and_integer_quantities_are_accepted() {
    let env = Env::get();
    let name = format!(
        "v-{}",
        "x".repeat(kubespaces_operator::names::MAX_TENANT_NAME_LEN - 2)
    );
    let manifest = spec(
        &name,
        "  owner: alice@example.com\n  resources:\n    cpu: 2\n    memory: 1073741824\n",
    );
    env.kubectl_ok(&["apply", "-f", "-", "--dry-run=server"], Some(&manifest));
}

#[tokio::test]
async fn an_update_to_an_invalid_value_is_refused_too() {
    let env = Env::get();
    env.apply(&tenant_yaml(
        "update-check",
        "alice@example.com",
        "1",
        "1Gi",
        None,
    ));
    let out = env.kubectl(
        &[
            "patch",
            "tenant",
            "update-check",
            "--type=merge",
            "-p",
            r#"{"spec":{"resources":{"cpu":"0"}}}"#,
        ],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("spec.resources.cpu"),
        "{err}"
    );
    env.kubectl_ok(&["delete", "tenant", "update-check", "--wait=false"], None);
}

/// The owner cannot change: the refusal names the field and says what to do instead.
#[tokio::test]
async fn the_owner_cannot_change() {
    let env = Env::get();
    // A name of this run's own: a run that failed here may have left its tenant behind.
    let name = format!("owner-check-{}", std::process::id());
    env.apply(&tenant_yaml(&name, "alice@example.com", "1", "1Gi", None));
    let patch = r#"{"spec":{"owner":"mallory@example.com"}}"#;
    let args = ["patch", "tenant", &name, "--type=merge", "-p", patch];
    let out = env.kubectl(&args, None);
    let err = String::from_utf8_lossy(&out.stderr);
    let owner = env.kubectl_ok(
        &["get", "tenant", &name, "-o", "jsonpath={.spec.owner}"],
        None,
    );
    env.kubectl_ok(&["delete", "tenant", &name, "--wait=false"], None);
    assert!(
        !out.status.success()
            && err.contains("spec.owner")
            && err.contains(kubespaces_operator::names::OWNER_IMMUTABLE_MESSAGE),
        "{err}"
    );
    assert_eq!(owner, "alice@example.com");
}

/// The platform's maxima per Tenant (the chart's `tenants.maxima`, 64 CPUs, 256Gi and 1Ti on the
/// harness's cluster) hold at admission, whoever writes the Tenant: more is refused naming the
/// field, the maximum and who can raise it; exactly the maximum is admitted.
#[tokio::test]
async fn a_tenant_larger_than_the_platform_maxima_is_refused() {
    let env = Env::get();
    for (field, over, max) in [
        ("cpu", "64001m", "64"),
        ("memory", "257Gi", "256Gi"),
        ("storage", "2Ti", "1Ti"),
    ] {
        let mut resources = vec![("cpu", "1"), ("memory", "1Gi")];
        resources.retain(|(f, _)| *f != field);
        resources.push((field, over));
        let listed: String = resources
            .iter()
            .map(|(f, v)| format!("    {f}: {v}\n"))
            .collect();
        let manifest = spec(
            "maxima-check",
            &format!("  owner: alice@example.com\n  resources:\n{listed}"),
        );
        let out = env.kubectl(&["apply", "-f", "-", "--dry-run=server"], Some(&manifest));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success()
                && err.contains(&format!("spec.resources.{field}: {over}"))
                && err.contains(&format!("at most {max}"))
                && err.contains(&format!("tenants.maxima.{field}")),
            "{field} {over}: {err}"
        );
    }
    let manifest = spec(
        "maxima-check",
        "  owner: alice@example.com\n  resources:\n    cpu: 64\n    memory: 256Gi\n    storage: 1Ti\n",
    );
    env.kubectl_ok(&["apply", "-f", "-", "--dry-run=server"], Some(&manifest));
}
