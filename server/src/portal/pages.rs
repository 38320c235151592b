//! The portal's pages and its live stream: the tenant list and the new-tenant form (`/`,
//! `POST /tenants`), a tenant's page (`/tenants/{name}`), its kubeconfig download, its recent
//! Events (`/tenants/{name}/events`, JSON for the page's script), its sleep and wake
//! (`POST /tenants/{name}/sleep`, `/wake`), its deletion (`POST /tenants/{name}/delete`) and the
//! stream the pages follow (`/portal/events`), all through the tenant use cases
//! ([`crate::tenants`]) as the logged-in browser.

use axum::{
    Form, Json,
    extract::{Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Redirect, Response, sse::Event},
};
use k8s_openapi::jiff::Timestamp;
use kubespaces_api::conditions;
use serde::Deserialize;
use tracing::warn;

use super::{
    extract::BrowserSession,
    html::{NewTenant, esc, form::FormBounds, list_page, page, tenant_body, welcome::welcome_page},
    session::Browser,
};
use crate::{
    api::kubeconfig_download,
    state::AppState,
    streams::{Reader, Until, changes_stream},
    tenant_view::TenantView,
    tenants::{CreateTenant, SleepRequest},
};

/// The home page (the list and the form), after a refused create with its `error` and `form`.
fn home_page(
    state: &AppState,
    b: &Browser,
    error: Option<&str>,
    form: Option<&NewTenant>,
) -> Response {
    let now = Timestamp::now();
    let tenants = state.tenants.list(&b.identity);
    let views: Vec<TenantView> = tenants.iter().map(|t| TenantView::of(t, now)).collect();
    let owned = tenants
        .iter()
        .filter(|t| t.spec.owner == b.identity.email)
        .count();
    let bounds = FormBounds::new(&state.config.limits, owned);
    list_page(&views, b, &bounds, error, form).into_response()
}

pub async fn home(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match state.portal.browser(&headers) {
        Some(browser) => home_page(&state, &browser, None, None),
        None => welcome_page().into_response(),
    }
}

fn forged() -> Response {
    (StatusCode::FORBIDDEN, "invalid form token: reload the page").into_response()
}

pub async fn create(
    State(state): State<AppState>,
    b: Browser,
    Form(form): Form<NewTenant>,
) -> Response {
    if form.csrf != b.csrf {
        return forged();
    }
    let request = CreateTenant {
        name: form.name.trim().to_owned(),
        cpu: form.cpu.trim().to_owned(),
        memory: form.memory.trim().to_owned(),
        storage: Some(form.storage.trim().to_owned()).filter(|s| !s.is_empty()),
        owner: None,
    };
    let name = request.name.clone();
    match state.tenants.create(&b.identity, request).await {
        Ok(_) => Redirect::to(&format!("/tenants/{name}")).into_response(),
        Err(e) => {
            let status = e.status();
            let mut response = home_page(&state, &b, Some(&e.to_string()), Some(&form));
            *response.status_mut() = status;
            response
        }
    }
}

/// The page of `e`: a tenant `b` may not see (answered like one that does not exist), or a
/// deletion, sleep or wake that failed.
fn refused(b: &Browser, e: &crate::error::ApiError) -> Response {
    let status = e.status();
    (
        status,
        page(
            if status == StatusCode::NOT_FOUND {
                "Not found"
            } else {
                "Error"
            },
            Some(b),
            &format!("<p>{}</p>", esc(&e.to_string())),
        ),
    )
        .into_response()
}

/// The tenant page as `b` sees it (after a refused deletion: its `delete_error`).
async fn tenant_response(
    state: &AppState,
    b: &Browser,
    name: &str,
    delete_error: Option<&str>,
) -> Response {
    let tenant = match state.tenants.visible(&b.identity, name) {
        Ok(t) => t,
        Err(e) => return refused(b, &e),
    };
    let view = TenantView::of(&tenant, Timestamp::now());
    let waiting = conditions::waiting_for(tenant.conditions()).unwrap_or_default();
    // The page works without its Events: a refusal to read them is said on the page.
    let events = state.tenants.events(&b.identity, name).await.map_err(|e| {
        warn!(tenant = %name, error = %e, "could not read the tenant's Events");
        e.to_string()
    });
    let login = format!("kubespaces login --server {}", state.public_url.as_str());
    page(
        name,
        Some(b),
        &tenant_body(&view, &waiting, &events, &b.csrf, &login, delete_error),
    )
    .into_response()
}

pub async fn tenant_page(
    State(state): State<AppState>,
    b: Browser,
    Path(name): Path<String>,
) -> Response {
    tenant_response(&state, &b, &name, None).await
}

/// What the deletion form posts: the CSRF token and the name typed to confirm.
#[derive(Deserialize)]
pub struct DeleteTenant {
    csrf: String,
    #[serde(default)]
    confirm: String,
}

/// Deletes the tenant when the name typed is its name, then shows its page (the teardown,
/// live); a wrong name deletes nothing and says so next to the field.
pub async fn delete(
    State(state): State<AppState>,
    b: Browser,
    Path(name): Path<String>,
    Form(form): Form<DeleteTenant>,
) -> Response {
    if form.csrf != b.csrf {
        return forged();
    }
    if form.confirm.trim() != name {
        let error = format!(
            "\"{}\" is not this tenant's name: type {name} exactly to delete it",
            form.confirm.trim()
        );
        let mut response = tenant_response(&state, &b, &name, Some(&error)).await;
        if response.status().is_success() {
            *response.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
        }
        return response;
    }
    match state.tenants.delete(&b.identity, &name).await {
        Ok(()) => Redirect::to(&format!("/tenants/{name}")).into_response(),
        Err(e) => refused(&b, &e),
    }
}

/// What the sleep and wake forms post: the CSRF token alone.
#[derive(Deserialize)]
pub struct Ask {
    csrf: String,
}

/// Asks the tenant to sleep, then shows its page (falling asleep, live).
pub async fn sleep(
    State(state): State<AppState>,
    b: Browser,
    Path(name): Path<String>,
    Form(form): Form<Ask>,
) -> Response {
    ask(&state, &b, &name, &form, SleepRequest::Sleep).await
}

/// Asks the tenant to wake, then shows its page (waking, live).
pub async fn wake(
    State(state): State<AppState>,
    b: Browser,
    Path(name): Path<String>,
    Form(form): Form<Ask>,
) -> Response {
    ask(&state, &b, &name, &form, SleepRequest::Wake).await
}

/// The request through the same use case as the API's, after the form's CSRF check, answered
/// like a deletion: the tenant's page, or why not.
async fn ask(
    state: &AppState,
    b: &Browser,
    name: &str,
    form: &Ask,
    request: SleepRequest,
) -> Response {
    if form.csrf != b.csrf {
        return forged();
    }
    match state.tenants.request(&b.identity, name, request).await {
        Ok(()) => Redirect::to(&format!("/tenants/{name}")).into_response(),
        Err(e) => refused(b, &e),
    }
}

/// The tenant's recent Events, for its page's script.
pub async fn tenant_events(
    State(state): State<AppState>,
    b: BrowserSession,
    Path(name): Path<String>,
) -> Response {
    match state.tenants.events(&b.identity, &name).await {
        Ok(events) => Json(events).into_response(),
        Err(e) => e.into_response(),
    }
}

pub async fn download(
    State(state): State<AppState>,
    b: Browser,
    Path(name): Path<String>,
) -> Response {
    match state.tenants.kubeconfig(&b.identity, &name).await {
        Ok(data) => kubeconfig_download(&name, data),
        Err(e) => (
            e.status(),
            page(
                "Kubeconfig",
                Some(&b),
                &format!(
                    "<p class=\"error\" role=\"alert\">{}</p>",
                    esc(&e.to_string())
                ),
            ),
        )
            .into_response(),
    }
}

#[derive(Deserialize)]
pub struct EventsQuery {
    name: Option<String>,
}

/// The pages' live stream (one tenant's for its page, every visible tenant's for the list):
/// counted among the user's streams, and ended with the session (its expiry, at the latest its
/// token's, or a logout) by an `expired` event the page shows.
pub async fn events(
    State(state): State<AppState>,
    b: BrowserSession,
    Query(q): Query<EventsQuery>,
) -> Response {
    let slot = match state.streams.acquire(&b.identity.email) {
        Ok(slot) => slot,
        Err(e) => return e.into_response(),
    };
    let portal = state.portal.clone();
    let id = b.id;
    let until = Until {
        deadline: tokio::time::Instant::from_std(b.expires),
        still: Some(Box::new(move || portal.session_alive(&id))),
        last: Event::default()
            .event("expired")
            .data("your session has ended: log in again to see live changes"),
    };
    let tenants = state.tenants.store();
    changes_stream(tenants, b.identity, q.name, until, Reader::Portal, slot).into_response()
}
