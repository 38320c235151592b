//! The page of a browser without a session: what KubeSpaces is, and the way in.

use axum::response::Html;

use super::page;

pub fn welcome_page() -> Html<String> {
    page(
        "Welcome",
        None,
        "<h1>KubeSpaces</h1><p>Your own Kubernetes: a namespace on the shared cluster with its \
         own control plane, capped by a quota. Log in to see and create your tenants.</p>\
         <p><a class=\"button\" href=\"/login\">Log in</a></p>",
    )
}
