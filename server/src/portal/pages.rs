//! The portal's pages and its live stream: the tenant list and the new-tenant form (`/`,
//! `POST /tenants`), a tenant's page (`/tenants/{name}`), its kubeconfig download and the
//! stream the tenant page follows (`/portal/events`), all through the tenant use cases
//! ([`crate::tenants`]) as the logged-in browser.

use axum::{
    Form,
    extract::{Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Redirect, Response, sse::Event},
};
use serde::Deserialize;

use super::{
    extract::BrowserSession,
    html::{NewTenant, esc, list_page, page, tenant_body},
    session::Browser,
};
use crate::{
    api::kubeconfig_download,
    state::AppState,
    streams::{Until, Waiting, changes_stream},
    tenants::CreateTenant,
};

pub async fn home(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some(browser) = state.portal.browser(&headers) else {
        return page(
            "Welcome",
            None,
            "<h1>KubeSpaces</h1><p>Your own Kubernetes. Log in to see and create your tenants.</p><a class=\"button\" href=\"/login\">Log in</a>",
        )
        .into_response();
    };
    let tenants = state.tenants.list(&browser.identity);
    list_page(&tenants, &browser, None, None).into_response()
}

pub async fn create(
    State(state): State<AppState>,
    b: Browser,
    Form(form): Form<NewTenant>,
) -> Response {
    if form.csrf != b.csrf {
        return (StatusCode::FORBIDDEN, "invalid form token: reload the page").into_response();
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
            let tenants = state.tenants.list(&b.identity);
            (
                status,
                list_page(&tenants, &b, Some(&e.to_string()), Some(&form)),
            )
                .into_response()
        }
    }
}

pub async fn tenant_page(
    State(state): State<AppState>,
    b: Browser,
    Path(name): Path<String>,
) -> Response {
    let tenant = match state.tenants.visible(&b.identity, &name) {
        Ok(t) => t,
        Err(e) => {
            return (
                e.status(),
                page(
                    "Not found",
                    Some(&b),
                    &format!("<p>{}</p>", esc(&e.to_string())),
                ),
            )
                .into_response();
        }
    };
    page(&name, Some(&b), &tenant_body(&name, &tenant)).into_response()
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

/// The tenant page's live stream: counted among the user's streams, and ended with the session
/// (its expiry, at the latest its token's, or a logout) by an `expired` event the page shows.
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
            .data("your session has ended: log in again to follow this tenant"),
    };
    let tenants = state.tenants.store();
    changes_stream(tenants, b.identity, q.name, until, Waiting::Included, slot).into_response()
}
