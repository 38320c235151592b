//! What the operator calls on the Kubernetes API, in one table, and the RBAC derived from it:
//! the ClusterRole `kubespaces:operator` (controller), a Role for connection Secrets (bound in
//! each namespace they may be written to) and a Role for the leader Lease. No wildcard anywhere.
//!
//! What is derived and what is listed, honestly:
//! - The table ([`CONTROLLER`], [`CONNECTION_SECRETS`], [`ELECTION`]) is written by hand, one line per resource, with
//!   the code that needs each verb. The roles are generated from it (`manifests`), so the table
//!   and the roles cannot disagree.
//! - That the table covers what the code really calls is checked twice: a unit test ties every
//!   kind the controller watches or writes (its Rust types) to a line, and at run time every
//!   request the controller's client sends is matched against the table
//!   ([`request_attributes`], [`covers`]); one that is not covered is logged and counted in
//!   `kubespaces_kube_api_requests_unlisted_total`, which the acceptance tests keep at zero
//!   while the suite runs the operator under the generated role.
//! - The `bind` permission on the owner ClusterRole is listed by hand: the API server's RBAC
//!   escalation check asks for it when the operator creates RoleBindings to that role, and it
//!   is why the operator does not need to hold every permission it grants to owners.

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role};

use crate::names;

/// One resource the operator uses and the verbs it uses it with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub group: &'static str,
    /// Plural resource name, `resource/subresource` for a subresource.
    pub resource: &'static str,
    pub verbs: &'static [&'static str],
    /// Only these objects (empty: any).
    pub names: &'static [&'static str],
    /// Where in the code the verbs come from.
    pub why: &'static str,
}

const fn access(
    group: &'static str,
    resource: &'static str,
    verbs: &'static [&'static str],
    why: &'static str,
) -> Access {
    Access {
        group,
        resource,
        verbs,
        names: &[],
        why,
    }
}

/// The ClusterRole of the operator.
pub const OPERATOR_CLUSTER_ROLE: &str = "kubespaces:operator";
/// The Role for the leader Lease (bound in the operator's namespace).
pub const LEADER_ELECTION_ROLE: &str = "kubespaces:operator-leader-election";

/// Everything the controller calls (cluster-wide).
pub const CONTROLLER: &[Access] = &[
    access(
        "kubespaces.io",
        "tenants",
        &["list", "watch", "patch"],
        "controller: CRD check (list) and watch; reconcile: add the finalizer (merge patch), \
         remove it (JSON patch)",
    ),
    access(
        "kubespaces.io",
        "tenants/status",
        &["patch"],
        "reconcile::status::write (server-side apply of the status)",
    ),
    access(
        "kubespaces.io",
        "tenants/finalizers",
        &["update"],
        "the namespace's owner reference to its Tenant sets blockOwnerDeletion, which the \
         OwnerReferencesPermissionEnforcement admission plugin allows only with this",
    ),
    access(
        "",
        "namespaces",
        &["get", "list", "watch", "create", "patch", "delete"],
        "controller: watch; host::ensure: create, read a conflicting one (get), apply (patch); \
         teardown: read fresh (get), delete, drop the owner reference (patch)",
    ),
    access(
        "",
        "resourcequotas",
        &["list", "watch", "create", "patch"],
        "controller: watch; apply::typed: create, else server-side apply",
    ),
    access(
        "",
        "limitranges",
        &["list", "watch", "create", "patch"],
        "controller: watch; apply::typed: create, else server-side apply",
    ),
    access(
        "rbac.authorization.k8s.io",
        "rolebindings",
        &["list", "watch", "create", "patch"],
        "controller: watch; apply::typed: create, else server-side apply",
    ),
    Access {
        group: "rbac.authorization.k8s.io",
        resource: "clusterroles",
        verbs: &["bind"],
        names: &[names::OWNER_CLUSTER_ROLE, CONTROL_PLANE_ROLE],
        why: "the owner RoleBinding and the operator's own RoleBinding in each tenant namespace \
              refer to these ClusterRoles: binding them needs `bind` on them (or every \
              permission in them, which the operator does not hold cluster-wide)",
    },
    access(
        "apps",
        "statefulsets",
        &["list", "watch"],
        "controller: watch the control planes' StatefulSets (readiness, drift)",
    ),
    access(
        "rbac.authorization.k8s.io",
        "clusterroles",
        &["get", "create", "patch", "delete"],
        "apply::dynamic: the ClusterRole the chart renders when the vCluster imports the \
         tenant's apps Gateway (server-side apply; prune; teardown)",
    ),
    access(
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        &["get", "create", "patch", "delete"],
        "apply::dynamic: the chart's ClusterRoleBinding for that ClusterRole",
    ),
    access(
        "gateway.networking.k8s.io",
        "gateways",
        &["get", "list", "watch"],
        "the chart's ClusterRole for the Gateway import (the operator may grant only what it \
         holds); control_plane: read the apps Gateway's status",
    ),
    access(
        "gateway.networking.k8s.io",
        "gatewayclasses",
        &["get", "list", "watch"],
        "the chart's ClusterRole for the Gateway import",
    ),
    access(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &["get", "list", "watch"],
        "the chart's ClusterRole for the Gateway import (vCluster reads the host's Gateway API \
         CRDs)",
    ),
    access(
        "",
        "services",
        &["list", "watch"],
        "controller: watch the control planes' Services (drift)",
    ),
    access(
        "",
        "persistentvolumes",
        &["list"],
        "control_plane::teardown::volumes_left: the teardown waits for the volumes of the \
         tenant namespace's claims to be released",
    ),
    Access {
        group: "discovery.k8s.io",
        resource: "endpointslices",
        verbs: &["get"],
        names: &["kubernetes"],
        why: "controller: where the host's API server listens (default/kubernetes), which the \
              control planes' NetworkPolicy lets their pods reach",
    },
    access(
        "authentication.k8s.io",
        "selfsubjectreviews",
        &["create"],
        "controller: who the operator is, for its RoleBinding in tenant namespaces",
    ),
    access(
        "networking.k8s.io",
        "networkpolicies",
        &["list", "watch", "create", "patch"],
        "controller: watch; apply::typed: create, else server-side apply",
    ),
    Access {
        group: "",
        resource: "secrets",
        verbs: &["get"],
        names: &[crate::api::KUBECONFIG_SECRET],
        why: "reconcile::connection: read the tenant kubeconfig (in the tenant namespace) to \
              copy it where writeConnectionSecretToRef points; no other Secret",
    },
    access(
        "events.k8s.io",
        "events",
        &["create", "patch"],
        "reconcile::publish through kube's Recorder: create, patch to count repeats",
    ),
];

/// What `spec.writeConnectionSecretToRef` needs, in each namespace of
/// `--connection-secret-namespaces` only (a Role bound there, not cluster-wide).
pub const CONNECTION_SECRETS: &[Access] = &[access(
    "",
    "secrets",
    &["get", "create", "update", "delete"],
    "reconcile::connection: read the target to check whose it is (get), write the copy \
     (create, or update guarded by its resourceVersion), remove it on teardown (delete)",
)];
/// What the operator needs inside each tenant namespace to run the tenant's control plane,
/// in a ClusterRole that the operator binds to itself there only (with `bind`, above). Every
/// line it server-side applies has `create` too: applying an object that does not exist yet
/// creates it. The
/// chart's own Role (`vc-vcluster`, for the vCluster's ServiceAccount) is created by the
/// operator, and the API server lets it grant only what it holds: so this table holds, besides
/// what the operator calls itself, every rule of that Role (the pod and endpoint lines).
pub const CONTROL_PLANE: &[Access] = &[
    access(
        "",
        "serviceaccounts",
        &["get", "list", "create", "patch", "delete"],
        "apply::dynamic: the chart's ServiceAccounts (server-side apply; prune; sweep)",
    ),
    access(
        "",
        "secrets",
        &[
            "create", "delete", "patch", "update", "get", "list", "watch",
        ],
        "apply::dynamic: the chart's config Secret; credential: read vc-vcluster, write \
         tenant-kubeconfig; and the chart Role's secrets rule",
    ),
    access(
        "",
        "configmaps",
        &[
            "create", "delete", "patch", "update", "get", "list", "watch",
        ],
        "the chart Role's rule for the vCluster",
    ),
    access(
        "",
        "services",
        &[
            "create", "delete", "patch", "update", "get", "list", "watch",
        ],
        "apply::dynamic: the chart's Services; the chart Role's rule",
    ),
    access(
        "",
        "pods",
        &[
            "create", "delete", "patch", "update", "get", "list", "watch",
        ],
        "the chart Role's rule: the vCluster syncs the tenant's pods; reconcile::control_plane \
         gets the control plane's own pod, to say what it waits for",
    ),
    access(
        "",
        "pods/attach",
        &[
            "create", "delete", "patch", "update", "get", "list", "watch",
        ],
        "the chart Role's rule",
    ),
    access(
        "",
        "pods/portforward",
        &[
            "create", "delete", "patch", "update", "get", "list", "watch",
        ],
        "the chart Role's rule",
    ),
    access(
        "",
        "pods/exec",
        &[
            "create", "delete", "patch", "update", "get", "list", "watch",
        ],
        "the chart Role's rule",
    ),
    access(
        "",
        "persistentvolumeclaims",
        &[
            "create", "delete", "patch", "update", "get", "list", "watch",
        ],
        "control_plane::teardown: delete the datastore's claim; the chart Role's rule",
    ),
    access(
        "",
        "pods/status",
        &["patch", "update"],
        "the chart Role's rule",
    ),
    access(
        "",
        "pods/ephemeralcontainers",
        &["patch", "update"],
        "the chart Role's rule",
    ),
    access(
        "",
        "pods/resize",
        &["patch", "update"],
        "the chart Role's rule",
    ),
    access(
        "apps",
        "statefulsets",
        &[
            "get", "list", "watch", "create", "patch", "update", "delete",
        ],
        "apply::dynamic: the chart's StatefulSet; teardown deletes it; the chart Role's rule",
    ),
    access(
        "apps",
        "replicasets",
        &["get", "list", "watch", "patch", "update"],
        "the chart Role's rule",
    ),
    access(
        "apps",
        "deployments",
        &["get", "list", "watch", "patch", "update"],
        "the chart Role's rule",
    ),
    access(
        "",
        "endpoints",
        &[
            "get", "list", "watch", "create", "delete", "patch", "update",
        ],
        "the chart Role's rule",
    ),
    access(
        "",
        "pods/log",
        &["get", "list", "watch"],
        "the chart Role's rule",
    ),
    access(
        "",
        "events",
        &["create", "get", "list", "watch"],
        "the chart Role's rule",
    ),
    access(
        "events.k8s.io",
        "events",
        &["create", "get", "list", "watch"],
        "the chart Role's rule",
    ),
    access(
        "discovery.k8s.io",
        "endpointslices",
        &[
            "create", "list", "get", "delete", "patch", "update", "watch",
        ],
        "the chart Role's rule",
    ),
    access(
        "rbac.authorization.k8s.io",
        "roles",
        &["get", "list", "create", "patch", "delete"],
        "apply::dynamic: the chart's Role (server-side apply; prune; sweep)",
    ),
    access(
        "rbac.authorization.k8s.io",
        "rolebindings",
        &["get", "create", "patch", "delete"],
        "apply::dynamic: the chart's RoleBinding (server-side apply; prune; the sweep lists them under CONTROLLER)",
    ),
    access(
        "networking.k8s.io",
        "networkpolicies",
        &["get", "create", "patch", "delete"],
        "apply::dynamic: the chart's NetworkPolicies (server-side apply; prune; sweep)",
    ),
    access(
        "policy",
        "poddisruptionbudgets",
        &["get", "list", "create", "patch", "delete"],
        "apply::dynamic: the chart's PodDisruptionBudget where the platform values turn it on \
         (server-side apply; prune; sweep)",
    ),
    access(
        "gateway.networking.k8s.io",
        "tlsroutes",
        &["get", "create", "patch", "delete"],
        "control_plane: the API route (server-side apply, read its status; teardown)",
    ),
    access(
        "gateway.networking.k8s.io",
        "gateways",
        &["get", "create", "patch", "delete"],
        "control_plane::apps: the tenant's apps Gateway (server-side apply, read its status; \
         teardown)",
    ),
    access(
        "cert-manager.io",
        "certificates",
        &["get", "create", "patch", "delete"],
        "control_plane::apps: the apps certificate (server-side apply, read its status; \
         teardown)",
    ),
    access(
        "gateway.networking.k8s.io",
        "httproutes",
        &[
            "create", "delete", "patch", "update", "get", "list", "watch",
        ],
        "the chart Role's rule: the vCluster syncs the tenant's HTTPRoutes to the host",
    ),
    access(
        "gateway.networking.k8s.io",
        "referencegrants",
        &["get", "list", "watch"],
        "the chart Role's rule: the vCluster validates the tenant's ReferenceGrants",
    ),
];
/// The ClusterRole for [`CONTROL_PLANE`], bound by the operator to itself in tenant namespaces.
pub const CONTROL_PLANE_ROLE: &str = "kubespaces:operator-control-plane";

/// The Role for [`CONNECTION_SECRETS`] (bound in each allowed namespace).
pub const CONNECTION_SECRETS_ROLE: &str = "kubespaces:operator-connection-secrets";

/// What the leader election calls, in the operator's own namespace.
pub const ELECTION: &[Access] = &[access(
    "coordination.k8s.io",
    "leases",
    &["get", "create", "patch", "list", "watch"],
    "kube-lease-manager: read (get), create if missing, take/renew/release (patch); \
     leader::watch_lease: the write fence (list, watch)",
)];

/// The Role for [`WAKER_NAMESPACE`] (bound to the operator in the waker's namespace).
pub const WAKER_NAMESPACE_ROLE: &str = "kubespaces:operator-waker-namespace";

/// What the operator calls in the waker's namespace (with `--waker-service`).
pub const WAKER_NAMESPACE: &[Access] = &[
    access(
        "coordination.k8s.io",
        "leases",
        &["get", "list", "watch", "create", "delete"],
        "controller: watch the waker's activity Leases (a tenant's last connection); \
         control_plane::waker: make a tenant's Lease (get, create), delete it at the teardown",
    ),
    access(
        "gateway.networking.k8s.io",
        "referencegrants",
        &["get", "create", "patch", "delete"],
        "control_plane::waker: each tenant's ReferenceGrant to the waker's Service (read, \
         server-side apply, which creates it; teardown)",
    ),
];

/// The Role of the waker itself (bound to its account in its namespace).
pub const WAKER_ROLE: &str = "kubespaces:waker";

/// What the waker calls, in its own namespace: nothing but the activity Leases.
pub const WAKER: &[Access] = &[access(
    "coordination.k8s.io",
    "leases",
    &["patch"],
    "waker::activity: renew a tenant's activity Lease (a merge patch, which never creates it: \
     the operator does)",
)];

/// The ClusterRole of the waker, for [`WAKER_TENANTS`].
pub const WAKER_TENANTS_ROLE: &str = "kubespaces:waker-tenants";

/// What the waker reads in tenant namespaces, for a connection held while its tenant wakes: the
/// control plane's certificates Secret (and no other), whose server CA signs the certificate it
/// answers with (`waker::held`), and the control plane's pod (and no other), which it asks
/// whether it serves yet (`waker::ready`). It holds, with the CA, what the operator's own access
/// to each tenant gives.
pub const WAKER_TENANTS: &[Access] = &[
    Access {
        group: "",
        resource: "secrets",
        verbs: &["get"],
        names: &[names::control_plane::CERTS_SECRET],
        why: "waker::held: the tenant's server CA, to complete the TLS handshake of a connection \
              held while the tenant wakes",
    },
    Access {
        group: "",
        resource: "pods",
        verbs: &["get"],
        names: &[names::control_plane::CONTROL_PLANE_POD],
        why: "waker::ready: the waking control plane's pod address, to ask it whether it serves \
              before the kubelet's probes route its Service to it",
    },
];

/// What a request asks of the API server, in RBAC terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestAttributes {
    pub group: String,
    /// `resource` or `resource/subresource`.
    pub resource: String,
    pub name: Option<String>,
    pub verb: &'static str,
}

/// The RBAC attributes of a request to a resource path (`/api/...`, `/apis/...`), as the API
/// server's request-info parser derives them; None for anything else (discovery, /version).
pub fn request_attributes(method: &http::Method, uri: &http::Uri) -> Option<RequestAttributes> {
    let parts: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return None,
    };
    let rest = match rest {
        // Namespaced objects; `namespaces/<ns>/status|finalize` are the namespace's own.
        ["namespaces", _ns, tail @ ..]
            if !tail.is_empty() && !["status", "finalize"].contains(&tail[0]) =>
        {
            tail
        }
        rest => rest,
    };
    let (resource, name, sub) = match rest {
        [resource] => (*resource, None, None),
        [resource, name] => (*resource, Some(*name), None),
        [resource, name, sub] => (*resource, Some(*name), Some(*sub)),
        _ => return None,
    };
    let watch = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let verb = match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET if name.is_some() => "get",
        http::Method::GET => "list",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE if name.is_some() => "delete",
        http::Method::DELETE => "deletecollection",
        _ => return None,
    };
    Some(RequestAttributes {
        group: group.to_owned(),
        resource: match sub {
            Some(sub) => format!("{resource}/{sub}"),
            None => resource.to_owned(),
        },
        name: name.map(String::from),
        verb,
    })
}

/// True when one line of `table` allows the request.
pub fn covers(table: &[Access], request: &RequestAttributes) -> bool {
    table.iter().any(|a| {
        a.group == request.group
            && a.resource == request.resource
            && a.verbs.contains(&request.verb)
            && (a.names.is_empty()
                || request
                    .name
                    .as_deref()
                    .is_some_and(|n| a.names.contains(&n)))
    })
}

fn rules(table: &[Access]) -> Vec<PolicyRule> {
    table
        .iter()
        .map(|a| PolicyRule {
            api_groups: Some(vec![a.group.to_owned()]),
            resources: Some(vec![a.resource.to_owned()]),
            resource_names: (!a.names.is_empty())
                .then(|| a.names.iter().map(|n| n.to_string()).collect()),
            verbs: a.verbs.iter().map(|v| v.to_string()).collect(),
            ..PolicyRule::default()
        })
        .collect()
}

/// The operator's ClusterRole, from [`CONTROLLER`].
pub fn operator_cluster_role() -> ClusterRole {
    ClusterRole {
        metadata: crate::build::install_meta(OPERATOR_CLUSTER_ROLE),
        rules: Some(rules(CONTROLLER)),
        ..ClusterRole::default()
    }
}

/// The control plane's ClusterRole, from [`CONTROL_PLANE`]; bound by the operator in tenant
/// namespaces only.
pub fn control_plane_role() -> ClusterRole {
    ClusterRole {
        metadata: crate::build::install_meta(CONTROL_PLANE_ROLE),
        rules: Some(rules(CONTROL_PLANE)),
        ..ClusterRole::default()
    }
}

/// The connection Secrets' Role, from [`CONNECTION_SECRETS`]; no namespace: bound in each
/// namespace of `--connection-secret-namespaces`.
pub fn connection_secrets_role() -> Role {
    Role {
        metadata: crate::build::install_meta(CONNECTION_SECRETS_ROLE),
        rules: Some(rules(CONNECTION_SECRETS)),
    }
}

/// The operator's Role in the waker's namespace, from [`WAKER_NAMESPACE`].
pub fn waker_namespace_role() -> Role {
    Role {
        metadata: crate::build::install_meta(WAKER_NAMESPACE_ROLE),
        rules: Some(rules(WAKER_NAMESPACE)),
    }
}

/// The waker's Role, from [`WAKER`].
pub fn waker_role() -> Role {
    Role {
        metadata: crate::build::install_meta(WAKER_ROLE),
        rules: Some(rules(WAKER)),
    }
}

/// The waker's ClusterRole, from [`WAKER_TENANTS`].
pub fn waker_tenants_role() -> ClusterRole {
    ClusterRole {
        metadata: crate::build::install_meta(WAKER_TENANTS_ROLE),
        rules: Some(rules(WAKER_TENANTS)),
        ..ClusterRole::default()
    }
}

/// The leader election's Role, from [`ELECTION`]; no namespace: it is created and bound in the
/// operator's namespace.
pub fn leader_election_role() -> Role {
    Role {
        metadata: crate::build::install_meta(LEADER_ELECTION_ROLE),
        rules: Some(rules(ELECTION)),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::{
        coordination::v1::Lease,
        core::v1::{LimitRange, Namespace, ResourceQuota},
        events::v1::Event,
        networking::v1::NetworkPolicy,
        rbac::v1::RoleBinding,
    };
    use kube::Resource;

    use super::*;
    use crate::api::Tenant;

    fn line<K: Resource<DynamicType = ()>>(table: &[Access]) -> Option<Access> {
        let (group, plural) = (K::group(&()), K::plural(&()));
        table
            .iter()
            .find(|a| a.group == group && a.resource == plural)
            .copied()
    }

    /// Every kind the controller watches (its caches and the Tenant watch in `controller`) can
    /// be listed and watched, and every kind `apply::typed` writes can be created and
    /// server-side applied.
    #[test]
    fn every_kind_the_controller_uses_has_a_line() {
        fn watched_and_applied<K: Resource<DynamicType = ()>>() {
            let a = line::<K>(CONTROLLER).unwrap_or_else(|| panic!("{}", K::kind(&())));
            for verb in ["list", "watch", "create", "patch"] {
                assert!(a.verbs.contains(&verb), "{} {verb}", K::kind(&()));
            }
        }
        watched_and_applied::<Namespace>();
        watched_and_applied::<ResourceQuota>();
        watched_and_applied::<LimitRange>();
        watched_and_applied::<RoleBinding>();
        watched_and_applied::<NetworkPolicy>();
        let tenants = line::<Tenant>(CONTROLLER).unwrap();
        assert_eq!(tenants.verbs, ["list", "watch", "patch"]);
        let events = line::<Event>(CONTROLLER).unwrap();
        assert_eq!(events.verbs, ["create", "patch"]);
        let namespaces = line::<Namespace>(CONTROLLER).unwrap();
        assert!(namespaces.verbs.contains(&"delete") && namespaces.verbs.contains(&"get"));
        let leases = line::<Lease>(ELECTION).unwrap();
        assert!(leases.verbs.contains(&"patch") && leases.verbs.contains(&"watch"));
        assert!(
            line::<Lease>(CONTROLLER).is_none(),
            "Leases only in the namespaced Role"
        );
    }

    #[test]
    fn no_wildcards_and_bind_only_on_the_owner_role() {
        for a in CONTROLLER
            .iter()
            .chain(CONNECTION_SECRETS)
            .chain(ELECTION)
            .chain(CONTROL_PLANE)
        {
            assert!(!a.group.contains('*') && !a.resource.contains('*'), "{a:?}");
            assert!(a.verbs.iter().all(|v| !v.contains('*')), "{a:?}");
            assert!(!a.verbs.contains(&"escalate") && !a.verbs.contains(&"impersonate"));
            if a.verbs.contains(&"bind") {
                assert_eq!(a.verbs, ["bind"]);
                assert_eq!(a.names, [names::OWNER_CLUSTER_ROLE, CONTROL_PLANE_ROLE]);
            }
        }
        let role = operator_cluster_role();
        let bind = role
            .rules
            .iter()
            .flatten()
            .find(|r| r.verbs.contains(&"bind".to_owned()))
            .unwrap();
        assert_eq!(
            bind.resource_names.as_deref(),
            Some(
                &[
                    names::OWNER_CLUSTER_ROLE.to_owned(),
                    CONTROL_PLANE_ROLE.to_owned()
                ][..]
            )
        );
    }

    fn attrs(method: http::Method, uri: &str) -> Option<RequestAttributes> {
        request_attributes(&method, &uri.parse().unwrap())
    }

    #[test]
    fn requests_are_read_as_the_api_server_reads_them() {
        use http::Method;
        let a = attrs(
            Method::GET,
            "/apis/kubespaces.io/v1alpha1/tenants?&watch=true&timeoutSeconds=290",
        )
        .unwrap();
        assert_eq!(
            (a.group.as_str(), a.resource.as_str(), a.verb),
            ("kubespaces.io", "tenants", "watch")
        );
        let a = attrs(
            Method::PATCH,
            "/apis/kubespaces.io/v1alpha1/tenants/t/status?fieldManager=x",
        )
        .unwrap();
        assert_eq!((a.resource.as_str(), a.verb), ("tenants/status", "patch"));
        let a = attrs(Method::GET, "/api/v1/namespaces/kubespaces-tenant-t").unwrap();
        assert_eq!(
            (a.resource.as_str(), a.verb, a.name.as_deref()),
            ("namespaces", "get", Some("kubespaces-tenant-t"))
        );
        let a = attrs(Method::POST, "/api/v1/namespaces/ns/resourcequotas").unwrap();
        assert_eq!((a.resource.as_str(), a.verb), ("resourcequotas", "create"));
        let a = attrs(Method::DELETE, "/api/v1/namespaces/ns").unwrap();
        assert_eq!((a.resource.as_str(), a.verb), ("namespaces", "delete"));
        let a = attrs(Method::PUT, "/api/v1/namespaces/ns/finalize").unwrap();
        assert_eq!(
            (a.resource.as_str(), a.verb),
            ("namespaces/finalize", "update")
        );
        let a = attrs(
            Method::PATCH,
            "/apis/events.k8s.io/v1/namespaces/default/events/e1",
        )
        .unwrap();
        assert_eq!(
            (a.group.as_str(), a.resource.as_str(), a.verb),
            ("events.k8s.io", "events", "patch")
        );
        assert!(attrs(Method::GET, "/version").is_none());
        assert!(attrs(Method::GET, "/apis").is_none());
    }

    #[test]
    fn the_table_covers_what_it_lists_and_nothing_else() {
        use http::Method;
        let covered = |m, uri| covers(CONTROLLER, &attrs(m, uri).unwrap());
        assert!(covered(
            Method::POST,
            "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies"
        ));
        assert!(!covered(
            Method::DELETE,
            "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies/p"
        ));
        assert!(!covered(Method::GET, "/api/v1/namespaces/ns/secrets"));
        assert!(!covered(Method::GET, "/api/v1/namespaces/ns/secrets/s"));
        assert!(!covered(
            Method::PATCH,
            "/apis/kubespaces.io/v1alpha1/tenants/t/scale"
        ));
    }
}
