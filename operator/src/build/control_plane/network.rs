//! What the control plane's pod may reach, and be reached from, beyond the tenant's own isolation
//! policy (pure): the host's API server, which the vCluster syncer works against, and, with a
//! waker, the waker's pods, which carry the tenant API's connections. NetworkPolicies add up, so
//! this one only opens those paths, for the control plane's pod only.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::networking::v1::{
        IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule,
        NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
    },
    apimachinery::pkg::{apis::meta::v1::LabelSelector, util::intstr::IntOrString},
};

use super::{names, settings::ServiceRef};

/// Where the host's API server listens, as its `kubernetes` EndpointSlice says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiServer {
    pub addresses: Vec<String>,
    pub ports: Vec<i32>,
}

pub fn policy(tenant: &str, api: &ApiServer, waker: Option<&ServiceRef>) -> NetworkPolicy {
    let mut meta = crate::build::install_meta(names::CONTROL_PLANE_POLICY);
    meta.namespace = Some(crate::names::namespace(tenant));
    meta.labels = Some(crate::build::labels(tenant));
    NetworkPolicy {
        metadata: meta,
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([
                    ("app".to_owned(), "vcluster".to_owned()),
                    ("release".to_owned(), names::RELEASE.to_owned()),
                ])),
                ..LabelSelector::default()
            }),
            policy_types: Some(match waker {
                Some(_) => vec!["Egress".into(), "Ingress".into()],
                None => vec!["Egress".into()],
            }),
            egress: Some(vec![NetworkPolicyEgressRule {
                to: Some(
                    api.addresses
                        .iter()
                        .map(|a| NetworkPolicyPeer {
                            ip_block: Some(IPBlock {
                                cidr: if a.contains(':') {
                                    format!("{a}/128")
                                } else {
                                    format!("{a}/32")
                                },
                                except: None,
                            }),
                            ..NetworkPolicyPeer::default()
                        })
                        .collect(),
                ),
                ports: Some(
                    api.ports
                        .iter()
                        .map(|p| NetworkPolicyPort {
                            port: Some(IntOrString::Int(*p)),
                            protocol: Some("TCP".into()),
                            end_port: None,
                        })
                        .collect(),
                ),
            }]),
            ingress: waker.map(|w| {
                vec![NetworkPolicyIngressRule {
                    from: Some(vec![NetworkPolicyPeer {
                        namespace_selector: Some(LabelSelector {
                            match_labels: Some(BTreeMap::from([(
                                crate::names::NAMESPACE_NAME_LABEL.to_owned(),
                                w.namespace.clone(),
                            )])),
                            ..LabelSelector::default()
                        }),
                        pod_selector: Some(LabelSelector {
                            match_labels: Some(BTreeMap::from([(
                                crate::names::WAKER_POD_LABEL.0.to_owned(),
                                crate::names::WAKER_POD_LABEL.1.to_owned(),
                            )])),
                            ..LabelSelector::default()
                        }),
                        ..NetworkPolicyPeer::default()
                    }]),
                    ports: None,
                }]
            }),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_control_plane_pod_may_reach_only_the_api_server() {
        let api = ApiServer {
            addresses: vec!["10.250.0.1".into()],
            ports: vec![6443],
        };
        let p = policy("a", &api, None);
        let spec = p.spec.unwrap();
        let selector = spec.pod_selector.unwrap().match_labels.unwrap();
        assert_eq!(selector["release"], names::RELEASE);
        let rule = &spec.egress.unwrap()[0];
        let cidr = &rule.to.as_ref().unwrap()[0].ip_block.as_ref().unwrap().cidr;
        assert_eq!(cidr, "10.250.0.1/32");
        assert_eq!(
            rule.ports.as_ref().unwrap()[0].port,
            Some(IntOrString::Int(6443))
        );
        assert_eq!(spec.policy_types.unwrap(), ["Egress"]);
        assert!(spec.ingress.is_none());
    }

    #[test]
    fn with_a_waker_its_pods_alone_may_connect_to_the_control_plane() {
        let waker = ServiceRef {
            namespace: "kubespaces-system".into(),
            name: "kubespaces-waker".into(),
        };
        let spec = policy("a", &ApiServer::default(), Some(&waker))
            .spec
            .unwrap();
        assert_eq!(spec.policy_types.unwrap(), ["Egress", "Ingress"]);
        let from = &spec.ingress.unwrap()[0].from.clone().unwrap()[0];
        let ns = from
            .namespace_selector
            .clone()
            .unwrap()
            .match_labels
            .unwrap();
        assert_eq!(ns[crate::names::NAMESPACE_NAME_LABEL], "kubespaces-system");
        let pods = from.pod_selector.clone().unwrap().match_labels.unwrap();
        assert_eq!(
            pods[crate::names::WAKER_POD_LABEL.0],
            crate::names::WAKER_POD_LABEL.1
        );
    }
}
