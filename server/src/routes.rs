//! The HTTP API. Every handler gets the caller from the bearer token ([`Caller`]) and sees a
//! tenant only when the caller owns it or is an admin; a tenant the caller may not see is
//! answered exactly like one that does not exist.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Json, Router,
    extract::{
        FromRequestParts, Path, Query, Request, State, connect_info::IntoMakeServiceWithConnectInfo,
    },
    http::{HeaderMap, StatusCode, header, request::Parts},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
};
use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, PostParams, Preconditions},
};
use kubespaces_api::{
    api::{KUBECONFIG_SECRET_KEY, Tenant, TenantSpec},
    kubeconfig,
};
use serde::Deserialize;
use serde_json::json;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::{
    auth::{Identity, Verifier},
    bounds::{self, CreateRate},
    config::Config,
    error::ApiError,
    metrics::Metrics,
    portal::Portal,
    public_url::PublicUrl,
    rate_limit::{self, Checked, RequestLimits},
    store::Tenants,
    streams::{StreamSlots, Until, Waiting, changes_stream},
};

/// Field manager of the Tenants this server creates.
pub const FIELD_MANAGER: &str = "kubespaces-server";

#[derive(Clone)]
pub struct AppState {
    pub tenants: Tenants,
    pub client: Client,
    pub verifier: Arc<Verifier>,
    pub config: Arc<Config>,
    pub public_url: PublicUrl,
    pub portal: Arc<Portal>,
    pub metrics: Arc<Metrics>,
    pub request_limits: Arc<RequestLimits>,
    pub create_rate: Arc<CreateRate>,
    pub streams: Arc<StreamSlots>,
}

impl AppState {
    /// The server's state from its settings; `public_url` is resolved from them by the caller
    /// (it needs the bound address: [`PublicUrl::resolve`]).
    pub fn new(
        config: Config,
        public_url: PublicUrl,
        client: Client,
        verifier: Arc<Verifier>,
        tenants: Tenants,
    ) -> AppState {
        let metrics = Arc::new(Metrics::default());
        let portal = Arc::new(Portal::new(
            public_url.clone(),
            config.max_pending_logins,
            Duration::from_secs(config.pending_login_ttl_secs),
            metrics.clone(),
        ));
        AppState {
            tenants,
            client,
            verifier,
            request_limits: Arc::new(RequestLimits::new(&config.limits)),
            create_rate: Arc::new(CreateRate::new(&config.limits)),
            streams: StreamSlots::new(config.limits.max_streams_per_user),
            config: Arc::new(config),
            public_url,
            portal,
            metrics,
        }
    }
}

/// The bearer token of a request, if it has one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// The authenticated caller.
pub struct Caller(pub Identity);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // The rate limit verified the token already (it counts requests per user).
        if let Some(Checked(identity)) = parts.extensions.get::<Checked>() {
            return identity.clone().map(Caller).ok_or(ApiError::Unauthorized);
        }
        let Some(token) = bearer(&parts.headers) else {
            debug!("refused: no bearer token");
            return Err(ApiError::Unauthorized);
        };
        match state.verifier.verify(token).await {
            Ok(identity) => Ok(Caller(identity)),
            Err(reason) => {
                // The reason helps an operator of this server, not the caller: logged only.
                info!(%reason, "refused a token");
                Err(ApiError::Unauthorized)
            }
        }
    }
}

/// The server as `axum::serve` takes it: the router, told each connection's peer address (the
/// rate limit of requests without a login counts by it).
pub fn app(state: AppState) -> IntoMakeServiceWithConnectInfo<Router, SocketAddr> {
    router(state).into_make_service_with_connect_info::<SocketAddr>()
}

pub fn router(state: AppState) -> Router {
    let headers = crate::headers::layer(&state.public_url);
    let limit = middleware::from_fn_with_state(state.clone(), rate_limit::limit);
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/.well-known/kubespaces", get(well_known))
        .route("/metrics", get(metrics))
        .route("/api/v1/tenants", get(list).post(create))
        .route("/api/v1/tenants/{name}", get(get_one).delete(delete))
        .route("/api/v1/tenants/{name}/kubeconfig", get(kubeconfig))
        .route("/api/v1/watch/tenants", get(watch))
        .merge(crate::portal::routes())
        // Inside the trace and the headers, so a 429 is logged and carries the headers too.
        .layer(limit)
        .layer(middleware::from_fn(trace))
        // Outermost, so no response escapes it (404s and 405s of the router included).
        .layer(headers)
        .with_state(state)
}

/// One span per request (method, path, status); headers, and so tokens, are never recorded.
async fn trace(request: Request, next: Next) -> Response {
    let span = info_span!(
        "request",
        method = %request.method(),
        path = %request.uri().path(),
    );
    async move {
        let response = next.run(request).await;
        debug!(status = response.status().as_u16(), "answered");
        response
    }
    .instrument(span)
    .await
}

async fn readyz(State(state): State<AppState>) -> Response {
    if state.tenants.is_ready() {
        "ok".into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "the tenant cache is not filled yet",
        )
            .into_response()
    }
}

/// What a client needs to log in: the issuer, the client id and the scopes to ask for.
async fn well_known(State(state): State<AppState>) -> Json<serde_json::Value> {
    Json(json!({
        "issuer": state.verifier.issuer(),
        "clientId": state.config.oidc_client_id,
        "scopes": state.config.oidc_scopes,
    }))
}

/// The server's Prometheus metrics, for members of the admin group only: every endpoint but the
/// probes and the login's own is authenticated, and these numbers are about the whole server.
async fn metrics(
    State(state): State<AppState>,
    Caller(caller): Caller,
) -> Result<Response, ApiError> {
    if !caller.admin {
        return Err(ApiError::Forbidden(
            "the metrics are for members of the admin group (--admin-group)".into(),
        ));
    }
    // Expired logins leave at the next login; drop them now so the gauge is current.
    state.portal.expire_logins();
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.encode(),
    )
        .into_response())
}

/// A tenant as the API shows it: the Tenant object without the API server's bookkeeping.
pub fn view(tenant: &Tenant) -> Tenant {
    let mut t = tenant.clone();
    t.metadata.managed_fields = None;
    t
}

/// The tenant if it exists and the caller may see it; NotFound in both other cases.
pub fn visible(state: &AppState, caller: &Identity, name: &str) -> Result<Arc<Tenant>, ApiError> {
    state
        .tenants
        .get(name)
        .filter(|t| caller.may_access(&t.spec.owner))
        .ok_or_else(|| ApiError::NotFound(name.to_owned()))
}

async fn list(State(state): State<AppState>, Caller(caller): Caller) -> Json<serde_json::Value> {
    let items: Vec<Tenant> = state
        .tenants
        .list(|t| caller.may_access(&t.spec.owner))
        .iter()
        .map(|t| view(t))
        .collect();
    Json(json!({ "items": items }))
}

async fn get_one(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(name): Path<String>,
) -> Result<Json<Tenant>, ApiError> {
    let tenant = visible(&state, &caller, &name)?;
    Ok(Json(view(&tenant)))
}

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

async fn create(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Json(body): Json<CreateTenant>,
) -> Result<(StatusCode, Json<Tenant>), ApiError> {
    let created = create_tenant(&state, &caller, body).await?;
    Ok((StatusCode::CREATED, Json(view(&created))))
}

/// Creates a tenant owned by the caller (or, for an admin, by `owner`). Shared with the portal.
pub async fn create_tenant(
    state: &AppState,
    caller: &Identity,
    body: CreateTenant,
) -> Result<Tenant, ApiError> {
    let owner = match body.owner {
        Some(owner) if owner != caller.email && !caller.admin => {
            return Err(ApiError::Forbidden(
                "only an admin may create a tenant for another owner; leave owner out to own it \
                 yourself"
                    .into(),
            ));
        }
        Some(owner) => owner,
        None => caller.email.clone(),
    };
    // The bounds, cheapest first; the rate counts only creates that reach the Kubernetes API.
    // The count is the watch cache's: creates in flight are not in it yet, so concurrent
    // creates may pass it by up to the --create-rate burst.
    let limits = &state.config.limits;
    let admin_group = state.config.admin_group.as_deref();
    bounds::may_create(limits, admin_group, caller)?;
    let owned = state.tenants.list(|t| t.spec.owner == owner).len();
    bounds::within_count(limits, admin_group, caller, &owner, owned)?;
    bounds::within_size(
        limits,
        admin_group,
        &body.cpu,
        &body.memory,
        body.storage.as_deref(),
    )?;
    state.create_rate.check(admin_group, caller)?;
    let tenant = Tenant::new(
        &body.name,
        TenantSpec::new(&owner, &body.cpu, &body.memory, body.storage.as_deref()),
    );
    let api: Api<Tenant> = Api::all(state.client.clone());
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    // A taken name gets one answer, whoever holds it: GET, DELETE, kubeconfig and the stream
    // answer "not found" for a tenant the caller may not see, and this must not undo that by
    // saying whose it is. That a create of a taken name fails at all is the one signal left
    // (docs/server-cli-portal.md says why it cannot go).
    let created = api.create(&params, &tenant).await.map_err(|e| match e {
        kube::Error::Api(s) if s.code == 409 => ApiError::NameTaken(body.name.clone()),
        other => ApiError::from(other),
    })?;
    info!(caller = %caller.email, tenant = %body.name, %owner, "created tenant");
    Ok(created)
}

async fn delete(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(name): Path<String>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let tenant = visible(&state, &caller, &name)?;
    let api: Api<Tenant> = Api::all(state.client.clone());
    // Only the object the caller was allowed to see: not a namesake created since.
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: tenant.uid(),
            resource_version: None,
        }),
        ..Default::default()
    };
    api.delete(&name, &params).await.map_err(|e| match e {
        kube::Error::Api(s) if s.code == 404 || s.code == 409 => ApiError::NotFound(name.clone()),
        other => ApiError::from(other),
    })?;
    info!(caller = %caller.email, tenant = %name, owner = %tenant.spec.owner, "deleted tenant");
    Ok((StatusCode::ACCEPTED, Json(json!({ "deleting": name }))))
}

async fn kubeconfig(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let data = tenant_kubeconfig(&state, &caller, &name).await?;
    Ok(kubeconfig_download(&name, data))
}

/// The kubeconfig file as a download.
pub fn kubeconfig_download(name: &str, data: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/yaml".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}.kubeconfig\""),
            ),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        data,
    )
        .into_response()
}

/// The tenant kubeconfig, for its owner or an admin. Shared with the portal.
pub async fn tenant_kubeconfig(
    state: &AppState,
    caller: &Identity,
    name: &str,
) -> Result<Vec<u8>, ApiError> {
    let tenant = visible(state, caller, name)?;
    let not_ready = || {
        ApiError::Conflict(format!(
            "tenant {name:?} has no kubeconfig yet (phase {}): its control plane is not ready; \
             wait until it is Ready",
            tenant.phase().unwrap_or("Pending")
        ))
    };
    // status.kubeconfigSecretRef says the kubeconfig exists; it is read from the one place it
    // is published (Tenant::kubeconfig_secret), never from wherever the status points.
    if tenant
        .status
        .as_ref()
        .and_then(|s| s.kubeconfig_secret_ref.as_ref())
        .is_none()
    {
        return Err(not_ready());
    }
    let location = tenant.kubeconfig_secret();
    let secrets: Api<Secret> = Api::namespaced(state.client.clone(), &location.namespace);
    let secret = secrets
        .get_opt(&location.name)
        .await?
        .ok_or_else(not_ready)?;
    let data = secret
        .data
        .and_then(|mut d| d.remove(KUBECONFIG_SECRET_KEY))
        .ok_or_else(not_ready)?;
    // That Secret sits in the tenant's namespace (admission keeps the owner from writing it, and
    // it is read as data all the same): only its CA and token are handed on, with the URL the
    // operator published, in the one shape KubeSpaces writes (never an `exec`, a file
    // path, a proxy or another server, which would run on the machine of whoever uses it).
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

#[derive(Deserialize)]
pub struct WatchQuery {
    /// Only this tenant.
    pub name: Option<String>,
}

/// Server-sent events: first every visible tenant (`applied`), then each change as it happens
/// (`applied` or `deleted`), filtered like the list. Ends when the caller falls too far behind
/// (reconnect to resynchronise) and when the token expires ([`crate::streams`]); at most
/// `--max-streams-per-user` at once.
async fn watch(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Query(query): Query<WatchQuery>,
) -> Result<Response, ApiError> {
    let slot = state.streams.acquire(&caller.email)?;
    let until = Until::token(&caller);
    Ok(changes_stream(&state, caller, query.name, until, Waiting::Omitted, slot).into_response())
}
