//! The chart values the operator derives for one tenant (pure). The platform's own values
//! (images, resources) come from the `--vcluster-values` files and are overridden by these.

use serde_json::{Value, json};

use super::{names, settings::VclusterSettings};

/// Values for the tenant's release. Every value here is one the tenant's control plane must
/// have for KubeSpaces to work, whatever the platform file says.
pub fn tenant_values(
    tenant: &str,
    base_domain: &str,
    pod_security: &str,
    settings: &VclusterSettings,
) -> Value {
    let ns = crate::names::namespace(tenant);
    let api_host = crate::names::api_host(tenant, base_domain);
    let service = names::RELEASE;
    let mut volume = json!({
        "enabled": true,
        // The datastore outlives its StatefulSet: one deleted by hand comes back (the operator
        // restores it) with the tenant's whole cluster state. The teardown deletes the claim.
        "retentionPolicy": "Retain",
    });
    if let Some(class) = &settings.storage_class {
        volume["storageClass"] = json!(class);
    }
    let mut values = json!({
        "controlPlane": {
            "proxy": {
                // The TLSRoute's host is not added to the serving certificate by vCluster, and
                // TLS passes through the Gateway: the client checks this certificate.
                "extraSANs": [
                    api_host,
                    format!("{service}.{ns}.svc"),
                    format!("{service}.{ns}.svc.cluster.local"),
                ],
            },
            "service": {"spec": {"type": "ClusterIP"}},
            "statefulSet": {
                "persistence": {"volumeClaim": volume},
                "highAvailability": {"replicas": 1},
                "security": {
                    "podSecurityContext": restricted_pod(),
                    "containerSecurityContext": restricted_container(),
                },
            },
            // The init container that copies the Kubernetes binaries.
            "distro": {"k8s": {"enabled": true, "securityContext": restricted_container()}},
            // The tenant's DNS, a pod synced into the namespace (the chart's container defaults
            // already drop every capability but NET_BIND_SERVICE and run as non-root).
            "coredns": {"security": {"podSecurityContext": restricted_pod()}},
            // Behind the operator's own TLSRoute, not the chart's.
            "ingress": {"enabled": false},
        },
        // The operator owns the namespace's quota and container defaults. The vCluster enforces
        // the namespace's Pod Security level inside too (on every namespace, relabelling any a
        // tenant loosens), so a pod the host would refuse is refused at `kubectl apply`, with the
        // reason, rather than left unsynced.
        "policies": {
            "podSecurityStandard": pod_security,
            "resourceQuota": {"enabled": false},
            "limitRange": {"enabled": false},
        },
        // The admin kubeconfig vCluster writes (Secret vc-<release>) names the public URL; the
        // operator reads it to manage the tenant's credential and hands out its own kubeconfig.
        "exportKubeConfig": {
            "context": tenant,
            "server": format!("https://{api_host}:443"),
        },
        "telemetry": {"enabled": false},
        // vCluster makes its Service the owner of its PKI Secret and of every object it syncs,
        // so a Service deleted by hand would take the tenant's CA (and every kubeconfig) and
        // its workloads with it. The operator restores the Service; the namespace's deletion
        // removes all of them at teardown.
        "experimental": {"syncSettings": {"setOwner": false}},
    });
    if settings.apps.is_some() {
        values["sync"] = super::apps::values(tenant, base_domain)["sync"].take();
    }
    values
}

/// The user and group the control plane runs as: not root, and not an ID a tenant's image is
/// likely to pick.
const CONTROL_PLANE_UID: i64 = 12345;

/// Pod-level settings the `restricted` Pod Security Standard requires, so the control plane runs
/// in a namespace that enforces it (the platform's default for the tenant's own workloads).
fn restricted_pod() -> Value {
    json!({
        "runAsNonRoot": true,
        "runAsUser": CONTROL_PLANE_UID,
        "runAsGroup": CONTROL_PLANE_UID,
        "fsGroup": CONTROL_PLANE_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    })
}

/// Container-level settings `restricted` requires; they replace the chart's (which run as root).
fn restricted_container() -> Value {
    json!({
        "allowPrivilegeEscalation": false,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": true,
        "runAsUser": CONTROL_PLANE_UID,
        "runAsGroup": CONTROL_PLANE_UID,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> VclusterSettings {
        VclusterSettings::for_tests()
    }

    #[test]
    fn the_public_host_is_in_the_certificate_and_the_kubeconfig() {
        let v = tenant_values("team-atlas", "example.com", "restricted", &settings());
        let sans = v["controlPlane"]["proxy"]["extraSANs"].as_array().unwrap();
        assert!(sans.contains(&json!("team-atlas.api.example.com")));
        assert_eq!(
            v["exportKubeConfig"]["server"],
            "https://team-atlas.api.example.com:443"
        );
        assert_eq!(
            v["controlPlane"]["statefulSet"]["persistence"]["volumeClaim"]["storageClass"],
            "local-path"
        );
        assert_eq!(v["policies"]["resourceQuota"]["enabled"], false);
        assert_eq!(v["policies"]["podSecurityStandard"], "restricted");
        let pod = &v["controlPlane"]["statefulSet"]["security"]["podSecurityContext"];
        assert_eq!(pod["runAsNonRoot"], true);
        assert_eq!(pod["seccompProfile"]["type"], "RuntimeDefault");
        assert!(v.get("sync").is_none(), "no apps settings, no route sync");
        let mut with_apps = settings();
        with_apps.apps = Some(super::super::settings::AppsSettings {
            gateway_class: "traefik".into(),
            cluster_issuer: "ca".into(),
            port: 443,
        });
        let v = tenant_values("team-atlas", "example.com", "restricted", &with_apps);
        assert_eq!(
            v["sync"]["toHost"]["gatewayApi"]["httpRoutes"]["enabled"],
            true
        );
    }
}
