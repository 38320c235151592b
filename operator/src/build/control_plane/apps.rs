//! Apps exposure (pure): each tenant's apps Gateway, its wildcard certificate, and the
//! vCluster values that import that Gateway into the tenant and sync the tenant's HTTPRoutes to
//! it — pinned to the tenant's own apps domain — plus what the Gateway's and the Certificate's
//! status say.
//!
//! One Gateway per tenant, in the tenant namespace: its listener's hostname and
//! `allowedRoutes: Same` already confine it to the tenant's routes and names, its certificate
//! Secret needs no cross-namespace grant, and vCluster imports exactly one host Gateway into
//! the tenant (`sync.fromHost.gateways`), where routes name it as their parent.

use kube::api::{DynamicObject, ObjectMeta, TypeMeta};
use serde_json::{Value, json};

use super::{
    names,
    route::{condition, text},
    settings::AppsSettings,
};

/// A kind's group, version and kind.
pub type Gvk = (&'static str, &'static str, &'static str);
pub const GATEWAY: Gvk = ("gateway.networking.k8s.io", "v1", "Gateway");
pub const CERTIFICATE: Gvk = ("cert-manager.io", "v1", "Certificate");

/// `*.<name>.apps.<domain>`: every app name the tenant may use.
pub fn wildcard(tenant: &str, base_domain: &str) -> String {
    crate::names::apps_host(tenant, base_domain)
}

/// `https://*.<name>.apps.<domain>` (with the port when it is not 443), for `status.endpoints.apps`.
pub fn endpoint(tenant: &str, base_domain: &str, apps: &AppsSettings) -> String {
    match apps.port {
        443 => format!("https://{}", wildcard(tenant, base_domain)),
        port => format!("https://{}:{port}", wildcard(tenant, base_domain)),
    }
}

fn object(tenant: &str, (group, version, kind): Gvk, name: &str, data: Value) -> DynamicObject {
    DynamicObject {
        types: Some(TypeMeta {
            api_version: format!("{group}/{version}"),
            kind: kind.into(),
        }),
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(crate::names::namespace(tenant)),
            labels: Some(crate::build::labels(tenant)),
            ..ObjectMeta::default()
        },
        data,
    }
}

/// The tenant's apps Gateway: one HTTPS listener for its wildcard, terminated with the
/// certificate's Secret, taking HTTPRoutes from the tenant namespace only.
pub fn gateway(tenant: &str, base_domain: &str, apps: &AppsSettings) -> DynamicObject {
    object(
        tenant,
        GATEWAY,
        names::APPS_GATEWAY,
        json!({"spec": {
            "gatewayClassName": apps.gateway_class,
            "listeners": [{
                "name": names::APPS_LISTENER,
                "protocol": "HTTPS",
                "port": apps.port,
                "hostname": wildcard(tenant, base_domain),
                "tls": {
                    "mode": "Terminate",
                    "certificateRefs": [{"kind": "Secret", "group": "", "name": names::APPS_CERTIFICATE}],
                },
                "allowedRoutes": {
                    "namespaces": {"from": "Same"},
                    "kinds": [{"group": GATEWAY.0, "kind": "HTTPRoute"}],
                },
            }],
        }}),
    )
}

/// The wildcard certificate from the platform's ClusterIssuer. A new private key on every
/// renewal, so a leaked key stops working at the next one.
pub fn certificate(tenant: &str, base_domain: &str, apps: &AppsSettings) -> DynamicObject {
    object(
        tenant,
        CERTIFICATE,
        names::APPS_CERTIFICATE,
        json!({"spec": {
            "secretName": names::APPS_CERTIFICATE,
            "dnsNames": [wildcard(tenant, base_domain)],
            "issuerRef": {"group": CERTIFICATE.0, "kind": "ClusterIssuer", "name": apps.cluster_issuer},
            "privateKey": {"rotationPolicy": "Always"},
            // The Secret carries the tenant's label, so the teardown and sweeps find it.
            "secretTemplate": {"labels": crate::build::labels(tenant)},
        }}),
    )
}

/// The vCluster values for apps: the tenant's HTTPRoutes are synced to the host, and the apps
/// Gateway is imported read-only as `kubespaces/apps`, accepting routes from every tenant
/// namespace but only for hostnames under the tenant's wildcard (vCluster refuses others with
/// an Event on the route; the host's admission policy refuses them again).
pub fn values(tenant: &str, base_domain: &str) -> Value {
    let ns = crate::names::namespace(tenant);
    let host_gateway = format!("{ns}/{}", names::APPS_GATEWAY);
    let in_tenant = format!(
        "{}/{}",
        names::APPS_GATEWAY_IN_TENANT_NAMESPACE,
        names::APPS_GATEWAY
    );
    json!({"sync": {
        "toHost": {"gatewayApi": {"httpRoutes": {"enabled": true}}},
        "fromHost": {"gateways": {
            "enabled": true,
            "mappings": {"byName": {host_gateway: in_tenant}},
            "allowedRoutes": {"overrides": [{
                "hostNamespace": ns,
                "name": names::APPS_GATEWAY,
                "allowedHostnames": [wildcard(tenant, base_domain)],
                "virtualNamespacePolicy": {"from": "All"},
            }]},
            // The tenant sees its listener and status, not the host's Secret names or
            // infrastructure settings.
            "sanitize": {"certificateRefs": true, "infrastructure": true},
        }},
    }})
}

/// Whether the Certificate is issued and current (its `Ready` condition); otherwise the reason
/// and a message naming it.
pub fn certificate_ready(certificate: Option<&DynamicObject>) -> Result<(), (String, String)> {
    let Some(certificate) = certificate else {
        return Err((
            "Creating".into(),
            format!("Certificate {} does not exist yet", names::APPS_CERTIFICATE),
        ));
    };
    match condition(&certificate.data["status"]["conditions"], "Ready") {
        Some(c) if c["status"] == "True" => Ok(()),
        Some(c) => Err((
            text(&c["reason"]).unwrap_or_else(|| "NotReady".into()),
            format!(
                "Certificate {}: {}",
                names::APPS_CERTIFICATE,
                text(&c["message"]).unwrap_or_default()
            ),
        )),
        None => Err((
            "Issuing".into(),
            format!(
                "Certificate {} has no Ready condition yet (is cert-manager running?)",
                names::APPS_CERTIFICATE
            ),
        )),
    }
}

/// Whether the Gateway programmed the apps listener for the generation we applied; otherwise
/// the reason and a message naming the listener.
pub fn listener_programmed(gateway: Option<&DynamicObject>) -> Result<(), (String, String)> {
    let Some(gateway) = gateway else {
        return Err((
            "Creating".into(),
            format!("Gateway {} does not exist yet", names::APPS_GATEWAY),
        ));
    };
    let generation = gateway.metadata.generation;
    let listener = gateway.data["status"]["listeners"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["name"] == names::APPS_LISTENER);
    let Some(listener) = listener else {
        return Err((
            "Pending".into(),
            format!(
                "Gateway {}: no status for listener {} yet (is a controller serving its class?)",
                names::APPS_GATEWAY,
                names::APPS_LISTENER
            ),
        ));
    };
    for type_ in ["Accepted", "ResolvedRefs", "Programmed"] {
        match condition(&listener["conditions"], type_) {
            Some(c)
                if c["status"] == "True"
                    && c["observedGeneration"]
                        .as_i64()
                        .is_none_or(|g| Some(g) >= generation) => {}
            Some(c) if c["status"] == "True" => {
                return Err((
                    "Pending".into(),
                    format!(
                        "Gateway {}: listener {} not programmed for the latest change yet",
                        names::APPS_GATEWAY,
                        names::APPS_LISTENER
                    ),
                ));
            }
            Some(c) => {
                return Err((
                    text(&c["reason"]).unwrap_or_else(|| format!("Not{type_}")),
                    format!(
                        "Gateway {} listener {}: {type_} is {}: {}",
                        names::APPS_GATEWAY,
                        names::APPS_LISTENER,
                        text(&c["status"]).unwrap_or_default(),
                        text(&c["message"]).unwrap_or_default()
                    ),
                ));
            }
            None => {
                return Err((
                    "Pending".into(),
                    format!(
                        "Gateway {} listener {}: no {type_} condition yet",
                        names::APPS_GATEWAY,
                        names::APPS_LISTENER
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apps() -> AppsSettings {
        AppsSettings {
            gateway_class: "traefik".into(),
            cluster_issuer: "ca".into(),
            port: 443,
        }
    }

    #[test]
    fn the_listener_and_certificate_cover_exactly_the_tenants_wildcard() {
        let g = gateway("team-atlas", "example.com", &apps());
        let l = &g.data["spec"]["listeners"][0];
        assert_eq!(l["hostname"], "*.team-atlas.apps.example.com");
        assert_eq!(l["allowedRoutes"]["namespaces"]["from"], "Same");
        assert_eq!(
            l["tls"]["certificateRefs"][0]["name"],
            names::APPS_CERTIFICATE
        );
        assert_eq!(
            g.metadata.namespace.as_deref(),
            Some("kubespaces-tenant-team-atlas")
        );
        let c = certificate("team-atlas", "example.com", &apps());
        assert_eq!(
            c.data["spec"]["dnsNames"],
            json!(["*.team-atlas.apps.example.com"])
        );
        assert_eq!(c.data["spec"]["issuerRef"]["name"], "ca");
        assert_eq!(
            endpoint("team-atlas", "example.com", &apps()),
            "https://*.team-atlas.apps.example.com"
        );
    }

    #[test]
    fn vcluster_imports_only_the_tenants_gateway_and_pins_its_hostnames() {
        let v = values("team-atlas", "example.com");
        let gw = &v["sync"]["fromHost"]["gateways"];
        assert_eq!(
            gw["mappings"]["byName"]["kubespaces-tenant-team-atlas/apps"],
            "kubespaces/apps"
        );
        assert_eq!(
            gw["allowedRoutes"]["overrides"][0]["allowedHostnames"],
            json!(["*.team-atlas.apps.example.com"])
        );
        assert_eq!(
            v["sync"]["toHost"]["gatewayApi"]["httpRoutes"]["enabled"],
            true
        );
    }

    #[test]
    fn readiness_follows_the_certificate_and_the_listener_status() {
        let mut c = certificate("a", "example.com", &apps());
        assert_eq!(certificate_ready(None).unwrap_err().0, "Creating");
        assert_eq!(certificate_ready(Some(&c)).unwrap_err().0, "Issuing");
        c.data["status"] = json!({"conditions": [{"type": "Ready", "status": "False", "reason": "DoesNotExist", "message": "Issuing certificate as Secret does not exist"}]});
        let (reason, message) = certificate_ready(Some(&c)).unwrap_err();
        assert_eq!(reason, "DoesNotExist");
        assert!(message.contains("Secret does not exist"));
        c.data["status"]["conditions"][0]["status"] = json!("True");
        assert!(certificate_ready(Some(&c)).is_ok());

        let mut g = gateway("a", "example.com", &apps());
        g.metadata.generation = Some(2);
        assert_eq!(listener_programmed(Some(&g)).unwrap_err().0, "Pending");
        let ok = |t: &str, generation: i64| json!({"type": t, "status": "True", "reason": t, "observedGeneration": generation});
        g.data["status"] = json!({"listeners": [{"name": "https", "conditions": [
            ok("Accepted", 2),
            {"type": "ResolvedRefs", "status": "False", "reason": "InvalidCertificateRef", "message": "secret apps-tls not found"},
            ok("Programmed", 2),
        ]}]});
        let (reason, message) = listener_programmed(Some(&g)).unwrap_err();
        assert_eq!(reason, "InvalidCertificateRef");
        assert!(message.contains("apps-tls"));
        g.data["status"]["listeners"][0]["conditions"][1] = ok("ResolvedRefs", 1);
        assert!(
            listener_programmed(Some(&g))
                .unwrap_err()
                .1
                .contains("latest change")
        );
        g.data["status"]["listeners"][0]["conditions"][1] = ok("ResolvedRefs", 2);
        assert!(listener_programmed(Some(&g)).is_ok());
    }
}
