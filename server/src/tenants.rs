//! The tenant use cases, shared by the REST API ([`crate::api`]) and the portal
//! ([`crate::portal`]): list, get, create, delete a tenant, ask it to sleep or wake, hand out its
//! kubeconfig and (to the portal) its recent Events. Every one sees a tenant only when the caller
//! owns it or is an admin; a tenant the caller may not see is answered exactly like one that does
//! not exist. No HTTP here: the adapters turn the results into responses.

use std::sync::Arc;

use k8s_openapi::{api::core::v1::Secret, jiff::Timestamp};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions},
};
use kubespaces_api::{
    api::{KUBECONFIG_SECRET_KEY, Tenant, TenantSpec},
    kubeconfig,
    names::{SLEEP_REQUESTED_ANNOTATION, WAKE_REQUESTED_ANNOTATION},
};
use serde::Deserialize;
use serde_json::json;
use tracing::{info, warn};

use crate::{
    auth::Identity,
    bounds::{self, CreateRate},
    config::Limits,
    error::ApiError,
    store::Tenants,
    tenant_events::{self, RecentEvent},
};

/// How long a create waits for the cache to hold the tenant it created (usually milliseconds).
const CACHE_CATCH_UP: std::time::Duration = std::time::Duration::from_secs(5);

/// Field manager of the Tenants this server creates.
pub const FIELD_MANAGER: &str = "kubespaces-server";

/// A tenant as the API shows it: the Tenant object without the API server's bookkeeping.
pub fn view(tenant: &Tenant) -> Tenant {
    let mut t = tenant.clone();
    t.metadata.managed_fields = None;
    t
}

/// What a create asks for (the API's JSON body; the portal fills it from its form).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateTenant {
    pub name: String,
    pub cpu: String,
    pub memory: String,
    #[serde(default)]
    pub storage: Option<String>,
    /// Admins only: create the tenant for someone else.
    #[serde(default)]
    pub owner: Option<String>,
}

/// A request for a tenant's control plane: to sleep (run no pod; the tenant's workloads keep
/// running) or to wake. Each is an annotation any door writes with the time of the request; the
/// operator acts on the later of the two (and on connections to the tenant API since).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SleepRequest {
    Sleep,
    Wake,
}

impl SleepRequest {
    /// The annotation the request is written in.
    pub fn annotation(self) -> &'static str {
        match self {
            SleepRequest::Sleep => SLEEP_REQUESTED_ANNOTATION,
            SleepRequest::Wake => WAKE_REQUESTED_ANNOTATION,
        }
    }

    /// What the tenant is doing once asked (the API's answer: `{"sleeping": name}`).
    pub fn doing(self) -> &'static str {
        match self {
            SleepRequest::Sleep => "sleeping",
            SleepRequest::Wake => "waking",
        }
    }

    /// What the tenant is asked to do, as the log says it.
    fn verb(self) -> &'static str {
        match self {
            SleepRequest::Sleep => "sleep",
            SleepRequest::Wake => "wake",
        }
    }
}

/// The JSON merge patch that writes `request` at `at` on the tenant whose uid is `uid`, and
/// nothing else: the uid rides along because it cannot change, so the API server refuses the
/// patch when the name now belongs to a namesake created since (see [`patch_refused`]).
pub fn request_patch(request: SleepRequest, uid: &str, at: Timestamp) -> serde_json::Value {
    json!({
        "metadata": {
            "uid": uid,
            "annotations": { request.annotation(): at.to_string() },
        }
    })
}

/// A refused patch of the tenant the caller saw as `name`: gone (404, or 409 as for delete), or
/// replaced by a namesake (the API server refuses a patch whose uid differs from the stored one
/// as an invalid change of `metadata.uid`, 422), answered like delete answers a tenant that is not
/// there any more.
fn patch_refused(name: &str, error: kube::Error) -> ApiError {
    match error {
        kube::Error::Api(s)
            if s.code == 404
                || s.code == 409
                || (s.code == 422
                    && s.details
                        .as_ref()
                        .is_some_and(|d| d.causes.iter().any(|c| c.field == "metadata.uid"))) =>
        {
            ApiError::NotFound(name.to_owned())
        }
        other => ApiError::from(other),
    }
}

/// The use cases over the watch cache (reads) and the Kubernetes API (writes), within the
/// bounds of `--creator-group`, `--max-tenants-per-owner`, the sizes and `--create-rate`.
pub struct TenantService {
    store: Tenants,
    client: Client,
    limits: Limits,
    admin_group: Option<String>,
    create_rate: CreateRate,
}

impl TenantService {
    pub fn new(
        store: Tenants,
        client: Client,
        limits: &Limits,
        admin_group: Option<String>,
    ) -> TenantService {
        TenantService {
            store,
            client,
            limits: limits.clone(),
            admin_group,
            create_rate: CreateRate::new(limits),
        }
    }

    /// The watch cache every read is served from (readiness, live streams).
    pub fn store(&self) -> &Tenants {
        &self.store
    }

    /// Every tenant the caller may see.
    pub fn list(&self, caller: &Identity) -> Vec<Arc<Tenant>> {
        self.store.list(|t| caller.may_access(&t.spec.owner))
    }

    /// The tenant if it exists and the caller may see it; NotFound in both other cases.
    pub fn visible(&self, caller: &Identity, name: &str) -> Result<Arc<Tenant>, ApiError> {
        self.store
            .get(name)
            .filter(|t| caller.may_access(&t.spec.owner))
            .ok_or_else(|| ApiError::NotFound(name.to_owned()))
    }

    /// Creates a tenant owned by the caller (or, for an admin, by `owner`).
    pub async fn create(&self, caller: &Identity, body: CreateTenant) -> Result<Tenant, ApiError> {
        let owner = match body.owner {
            Some(owner) if owner != caller.email && !caller.admin => {
                return Err(ApiError::Forbidden(
                    "only an admin may create a tenant for another owner; leave owner out to own \
                     it yourself"
                        .into(),
                ));
            }
            Some(owner) => owner,
            None => caller.email.clone(),
        };
        // The bounds, cheapest first; the rate counts only creates that reach the Kubernetes API.
        // The count is the watch cache's: creates in flight are not in it yet, so concurrent
        // creates may pass it by up to the --create-rate burst.
        let limits = &self.limits;
        let admin_group = self.admin_group.as_deref();
        bounds::may_create(limits, admin_group, caller)?;
        let owned = self.store.list(|t| t.spec.owner == owner).len();
        bounds::within_count(limits, admin_group, caller, &owner, owned)?;
        bounds::within_size(
            limits,
            admin_group,
            &body.cpu,
            &body.memory,
            body.storage.as_deref(),
        )?;
        self.create_rate.check(admin_group, caller)?;
        let tenant = Tenant::new(
            &body.name,
            TenantSpec::new(&owner, &body.cpu, &body.memory, body.storage.as_deref()),
        );
        let api: Api<Tenant> = Api::all(self.client.clone());
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        // A taken name gets one answer, whoever holds it: GET, DELETE, kubeconfig and the stream
        // answer "not found" for a tenant the caller may not see, and this must not undo that by
        // saying whose it is. That a create of a taken name fails at all is the one signal left
        // (docs/server-cli-portal.md says why it cannot go).
        let mut changes = self.store.subscribe();
        let created = api.create(&params, &tenant).await.map_err(|e| match e {
            kube::Error::Api(s) if s.code == 409 => ApiError::NameTaken(body.name.clone()),
            other => ApiError::from(other),
        })?;
        info!(caller = %caller.email, tenant = %body.name, %owner, "created tenant");
        // Every read is served from the cache: answer once it holds the new tenant, so the
        // caller's next request finds what it just created.
        if !self
            .store
            .caught_up(&created, &mut changes, CACHE_CATCH_UP)
            .await
        {
            warn!(tenant = %body.name, "the tenant cache has not seen the created tenant yet");
        }
        Ok(created)
    }

    /// Deletes the tenant the caller may see under `name`: that object, not a namesake created
    /// since.
    pub async fn delete(&self, caller: &Identity, name: &str) -> Result<(), ApiError> {
        let tenant = self.visible(caller, name)?;
        let api: Api<Tenant> = Api::all(self.client.clone());
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: tenant.uid(),
                resource_version: None,
            }),
            ..Default::default()
        };
        api.delete(name, &params).await.map_err(|e| match e {
            kube::Error::Api(s) if s.code == 404 || s.code == 409 => {
                ApiError::NotFound(name.to_owned())
            }
            other => ApiError::from(other),
        })?;
        info!(caller = %caller.email, tenant = %name, owner = %tenant.spec.owner, "deleted tenant");
        Ok(())
    }

    /// Asks the tenant the caller may see under `name` to sleep or wake: writes the request's
    /// annotation with the time now, on that object (not a namesake created since). The operator
    /// does the rest; the tenant's phase says when it is done (Asleep, or Ready again).
    pub async fn request(
        &self,
        caller: &Identity,
        name: &str,
        request: SleepRequest,
    ) -> Result<(), ApiError> {
        let tenant = self.visible(caller, name)?;
        // A tenant in the cache has a uid; without one the precondition would be empty.
        let uid = tenant
            .uid()
            .ok_or_else(|| ApiError::NotFound(name.to_owned()))?;
        let api: Api<Tenant> = Api::all(self.client.clone());
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let patch = request_patch(request, &uid, Timestamp::now());
        api.patch(name, &params, &Patch::Merge(&patch))
            .await
            .map_err(|e| patch_refused(name, e))?;
        info!(
            caller = %caller.email,
            tenant = %name,
            owner = %tenant.spec.owner,
            annotation = request.annotation(),
            "asked the tenant to {}",
            request.verb()
        );
        Ok(())
    }

    /// The recent Events of the tenant, for its owner or an admin.
    pub async fn events(
        &self,
        caller: &Identity,
        name: &str,
    ) -> Result<Vec<RecentEvent>, ApiError> {
        let tenant = self.visible(caller, name)?;
        tenant_events::recent(self.client.clone(), &tenant).await
    }

    /// The tenant kubeconfig, for its owner or an admin.
    pub async fn kubeconfig(&self, caller: &Identity, name: &str) -> Result<Vec<u8>, ApiError> {
        let tenant = self.visible(caller, name)?;
        let not_ready = || {
            ApiError::Conflict(format!(
                "tenant {name:?} has no kubeconfig yet (phase {}): its control plane is not \
                 ready; wait until it is Ready",
                tenant.phase().unwrap_or("Pending")
            ))
        };
        // status.kubeconfigSecretRef says the kubeconfig exists; it is read from the one place
        // it is published (Tenant::kubeconfig_secret), never from wherever the status points.
        if tenant
            .status
            .as_ref()
            .and_then(|s| s.kubeconfig_secret_ref.as_ref())
            .is_none()
        {
            return Err(not_ready());
        }
        let location = tenant.kubeconfig_secret();
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &location.namespace);
        let secret = secrets
            .get_opt(&location.name)
            .await?
            .ok_or_else(not_ready)?;
        let data = secret
            .data
            .and_then(|mut d| d.remove(KUBECONFIG_SECRET_KEY))
            .ok_or_else(not_ready)?;
        // That Secret sits in the tenant's namespace (admission keeps the owner from writing
        // it, and it is read as data all the same): only its CA and token are handed on, with
        // the URL the operator published, in the one shape KubeSpaces writes (never an `exec`,
        // a file path, a proxy or another server, which would run on the machine of whoever
        // uses it).
        let server = tenant.api_url().ok_or_else(not_ready)?;
        let rebuilt = kubeconfig::rebuild(name, server, &data.0).map_err(|e| {
            warn!(caller = %caller.email, tenant = %name, error = %e, "refused to hand out the tenant kubeconfig");
            ApiError::Conflict(format!(
                "the kubeconfig of tenant {name:?} cannot be handed out: {e}; KubeSpaces writes \
                 no such kubeconfig, so someone with access to Secret {}/{} changed it; the \
                 operator writes a new one at its next check of the tenant",
                location.namespace, location.name
            ))
        })?;
        info!(caller = %caller.email, tenant = %name, "handed out the tenant kubeconfig");
        Ok(rebuilt.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use kube::core::Status;

    use super::*;

    #[test]
    fn a_request_patch_writes_one_annotation_on_the_tenant_of_that_uid() {
        let at = Timestamp::from_second(1_800_000_000).unwrap();
        assert_eq!(
            request_patch(SleepRequest::Sleep, "u-1", at),
            json!({"metadata": {"uid": "u-1", "annotations": {
                "kubespaces.io/sleep-requested-at": "2027-01-15T08:00:00Z"
            }}})
        );
        let wake = request_patch(SleepRequest::Wake, "u-1", at);
        let written = &wake["metadata"]["annotations"][WAKE_REQUESTED_ANNOTATION];
        assert_eq!(
            written.as_str().and_then(|t| t.parse::<Timestamp>().ok()),
            Some(at),
            "an RFC 3339 time, as the operator reads it"
        );
    }

    /// The API server's refusal with `code`, naming `metadata.uid` as the invalid field or not.
    fn refused(code: u16, uid_field: bool) -> ApiError {
        let causes = match uid_field {
            true => json!([{"reason": "FieldValueInvalid", "message": "field is immutable",
                            "field": "metadata.uid"}]),
            false => json!([]),
        };
        let status: Status = serde_json::from_value(json!({
            "status": "Failure", "code": code, "message": "refused", "reason": "Invalid",
            "details": {"name": "team-atlas", "causes": causes},
        }))
        .unwrap();
        patch_refused("team-atlas", kube::Error::Api(status.boxed()))
    }

    #[test]
    fn a_tenant_gone_or_replaced_since_is_not_found() {
        for (code, uid_field) in [(404, false), (409, false), (422, true)] {
            assert!(
                matches!(refused(code, uid_field), ApiError::NotFound(n) if n == "team-atlas"),
                "{code}"
            );
        }
        // Any other refusal is the API server's own, with its words.
        assert!(matches!(
            refused(422, false),
            ApiError::Kube { code: 422, .. }
        ));
        assert!(matches!(
            refused(403, false),
            ApiError::Kube { code: 502, .. }
        ));
    }
}
