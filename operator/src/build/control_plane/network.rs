//! What the control plane's pod may reach beyond the tenant's own isolation policy (pure): the
//! host's API server, which the vCluster syncer works against. NetworkPolicies add up, so this
//! one only opens that path, for the control plane's pod only.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::networking::v1::{
        IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyPeer, NetworkPolicyPort,
        NetworkPolicySpec,
    },
    apimachinery::pkg::{apis::meta::v1::LabelSelector, util::intstr::IntOrString},
};

use super::names;

/// Where the host's API server listens, as its `kubernetes` EndpointSlice says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiServer {
    pub addresses: Vec<String>,
    pub ports: Vec<i32>,
}

pub fn policy(tenant: &str, api: &ApiServer) -> NetworkPolicy {
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
            policy_types: Some(vec!["Egress".into()]),
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
            ingress: None,
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
        let p = policy("a", &api);
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
    }
}
