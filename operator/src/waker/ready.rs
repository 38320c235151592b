//! Whether a waking control plane serves yet, asked of its pod itself. Its Service routes to the
//! pod only once the kubelet's probes pass, and the vCluster chart's startup probe asks every
//! 6 s: a held connection would wait seconds for a control plane already answering.

use std::net::{IpAddr, SocketAddr};

use k8s_openapi::{
    Resource,
    api::{apps::v1::StatefulSet, core::v1::Pod},
};
use kube::{Api, Client};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use super::held::TenantTls;
use crate::names::{self, control_plane as cp};

/// The port the control plane's container serves on (its Service's 443 targets it).
const POD_PORT: u16 = 8443;

/// The address of `tenant`'s control plane pod when it answers `GET /readyz` with 200, as the
/// kubelet's readiness probe asks it; None while it does not (or there is no such pod yet).
pub async fn ready_pod(client: &Client, tenant: &str, tls: &TenantTls) -> Option<SocketAddr> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &names::namespace(tenant));
    let pod = pods.get_opt(cp::CONTROL_PLANE_POD).await.ok()??;
    if !made_by_the_statefulset(&pod) {
        return None;
    }
    let ip: IpAddr = pod.status?.pod_ip?.parse().ok()?;
    let address = SocketAddr::new(ip, POD_PORT);
    readyz(address, tls).await.then_some(address)
}

/// A pod the control plane's StatefulSet made. A second line: the admission guard already keeps
/// a tenant from making a pod of that name.
fn made_by_the_statefulset(pod: &Pod) -> bool {
    pod.metadata.owner_references.iter().flatten().any(|o| {
        o.controller == Some(true)
            && o.kind == StatefulSet::KIND
            && o.api_version == StatefulSet::API_VERSION
            && o.name == cp::RELEASE
    })
}

/// One `GET /readyz` over TLS checked against the tenant's CA; true on a 200. Written out rather
/// than through an HTTP client: it is one fixed request whose status line is all that is read.
async fn readyz(address: SocketAddr, tls: &TenantTls) -> bool {
    let asked = async {
        let tcp = TcpStream::connect(address).await?;
        let mut stream = tokio_rustls::TlsConnector::from(tls.probe.clone())
            .connect(tls.host.clone(), tcp)
            .await?;
        stream
            .write_all(b"GET /readyz HTTP/1.1\r\nHost: readyz\r\nConnection: close\r\n\r\n")
            .await?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await?;
        Ok::<_, std::io::Error>(head)
    };
    match tokio::time::timeout(std::time::Duration::from_secs(2), asked).await {
        Ok(Ok(head)) => head.starts_with(b"HTTP/1.1 200"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;

    fn pod_owned_by(kind: &str, name: &str, controller: bool) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: name.into(),
            controller: Some(controller),
            ..OwnerReference::default()
        }]);
        pod
    }

    #[test]
    fn only_the_statefulsets_pod_is_asked() {
        assert!(made_by_the_statefulset(&pod_owned_by(
            "StatefulSet",
            cp::RELEASE,
            true
        )));
        assert!(!made_by_the_statefulset(&pod_owned_by(
            "StatefulSet",
            "impostor",
            true
        )));
        assert!(!made_by_the_statefulset(&pod_owned_by(
            "ReplicaSet",
            cp::RELEASE,
            true
        )));
        assert!(!made_by_the_statefulset(&pod_owned_by(
            "StatefulSet",
            cp::RELEASE,
            false
        )));
        assert!(!made_by_the_statefulset(&Pod::default()));
    }
}
