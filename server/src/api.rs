//! The REST API adapter: each handler takes the [`Caller`] from the bearer token, calls a
//! tenant use case ([`crate::tenants`]) and answers in JSON (errors: [`ApiError`]). Every
//! tenant is filtered by owner before it leaves the process; a tenant the caller may not see
//! is answered exactly like one that does not exist.

use axum::{
    Json, Router,
    extract::{Path, Query, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use kubespaces_api::api::Tenant;
use serde::Deserialize;
use serde_json::json;

use crate::{
    caller::Caller,
    error::ApiError,
    state::AppState,
    streams::{Reader, Until, changes_stream},
    tenants::{CreateTenant, SleepRequest, view},
};

/// The API's routes and the probes, for [`crate::app::router`].
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/.well-known/kubespaces", get(well_known))
        .route("/metrics", get(metrics))
        .route("/api/v1/tenants", get(list).post(create))
        .route("/api/v1/tenants/{name}", get(get_one).delete(delete))
        .route("/api/v1/tenants/{name}/kubeconfig", get(kubeconfig))
        .route("/api/v1/tenants/{name}/sleep", post(sleep))
        .route("/api/v1/tenants/{name}/wake", post(wake))
        .route("/api/v1/watch/tenants", get(watch))
}

async fn readyz(State(state): State<AppState>) -> Response {
    if state.tenants.store().is_ready() {
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
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.encode(),
    )
        .into_response())
}

async fn list(State(state): State<AppState>, Caller(caller): Caller) -> Json<serde_json::Value> {
    let items: Vec<Tenant> = state
        .tenants
        .list(&caller)
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
    let tenant = state.tenants.visible(&caller, &name)?;
    Ok(Json(view(&tenant)))
}

async fn create(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Json(body): Json<CreateTenant>,
) -> Result<(StatusCode, Json<Tenant>), ApiError> {
    let created = state.tenants.create(&caller, body).await?;
    Ok((StatusCode::CREATED, Json(view(&created))))
}

async fn delete(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(name): Path<String>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    state.tenants.delete(&caller, &name).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "deleting": name }))))
}

async fn sleep(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(name): Path<String>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    ask(&state, &caller, name, SleepRequest::Sleep).await
}

async fn wake(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(name): Path<String>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    ask(&state, &caller, name, SleepRequest::Wake).await
}

/// 202: the request is written; the operator acts on it (the tenant's phase says when it is
/// Asleep, or Ready again).
async fn ask(
    state: &AppState,
    caller: &crate::auth::Identity,
    name: String,
    request: SleepRequest,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    state.tenants.request(caller, &name, request).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ request.doing(): name }))))
}

async fn kubeconfig(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let data = state.tenants.kubeconfig(&caller, &name).await?;
    Ok(kubeconfig_download(&name, data))
}

/// The kubeconfig file as a download (the API's and the portal's).
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
    let tenants = state.tenants.store();
    Ok(changes_stream(tenants, caller, query.name, until, Reader::Api, slot).into_response())
}
