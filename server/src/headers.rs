//! Security headers on every response (API, portal, probes, errors, redirects), set by one
//! tower-http layer around the whole router.
//!
//! The Content-Security-Policy allows exactly the portal's inline scripts (one per page) and its
//! one inline style, by their SHA-256 hashes: no `'unsafe-inline'`, no other script source at
//! all, so HTML injected into a page (say, through a tenant field a future change forgets to
//! escape) cannot run. `connect-src 'self'` is the pages' live stream (EventSource) and the
//! tenant page's Events (fetch); forms post only to this server; no one may frame the portal
//! (clickjacking of *Delete*/*Log out*).

use axum::{
    body::Body,
    http::{HeaderName, HeaderValue, Response, header},
};
use base64::Engine;
use sha2::{Digest, Sha256};
use tower_http::set_header::{HeaderMetadata, response::SetMultipleResponseHeadersLayer};

use crate::{portal::html, public_url::PublicUrl};

/// One year: browsers keep to https for that long once they have seen the portal over https.
pub const HSTS: &str = "max-age=31536000";

/// `'sha256-…'` of an inline script or style, as CSP spells it.
pub fn csp_hash(source: &str) -> String {
    let digest = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(source));
    format!("'sha256-{digest}'")
}

/// The policy: nothing is allowed unless listed.
pub fn content_security_policy() -> String {
    let scripts: Vec<String> = html::SCRIPTS.iter().map(|s| csp_hash(s)).collect();
    format!(
        "default-src 'none'; script-src {}; style-src {}; connect-src 'self'; \
         form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        scripts.join(" "),
        csp_hash(html::STYLE),
    )
}

/// Every header and its value; Strict-Transport-Security only when the portal is served over
/// https (sent over plain http it would be ignored, or pin a loopback address to https).
pub fn security_headers(public_url: &PublicUrl) -> Vec<(HeaderName, HeaderValue)> {
    // The policy is built from constants and base64; should it ever not be a valid header
    // value, the server falls back to allowing nothing rather than to sending no policy.
    let csp = HeaderValue::try_from(content_security_policy())
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"));
    let mut headers = vec![
        (header::CONTENT_SECURITY_POLICY, csp),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
    ];
    if public_url.is_https() {
        headers.push((
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(HSTS),
        ));
    }
    headers
}

/// The layer that sets them, replacing any value a handler set.
pub fn layer(public_url: &PublicUrl) -> SetMultipleResponseHeadersLayer<Response<Body>> {
    SetMultipleResponseHeadersLayer::overriding(
        security_headers(public_url)
            .into_iter()
            .map(HeaderMetadata::from)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use axum::{
        Router,
        http::{Method, Request, StatusCode},
        routing::get,
    };
    use kubespaces_api::api::{Tenant, TenantSpec};
    use tower::ServiceExt;

    use super::*;
    use crate::{
        auth::Identity,
        config::Limits,
        portal::{
            html::{
                LIST_SCRIPT, STYLE, TENANT_SCRIPT, form::FormBounds, list_page, page, tenant_body,
                welcome::welcome_page,
            },
            session::Browser,
        },
        tenant_view::TenantView,
    };
    use k8s_openapi::jiff::Timestamp;

    fn url(flag: Option<&str>) -> PublicUrl {
        let listen: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        PublicUrl::resolve(flag, listen).unwrap()
    }

    async fn answer(app: &Router, method: Method, path: &str) -> Response<Body> {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .unwrap();
        app.clone().oneshot(request).await.unwrap()
    }

    /// The layer as `app::router` applies it: outermost, over routes and fallbacks alike.
    fn app(public_url: &PublicUrl) -> Router {
        Router::new()
            .route(
                "/page",
                get(|| async {
                    // A handler's own, weaker value is replaced.
                    ([(header::X_FRAME_OPTIONS, "SAMEORIGIN")], "hello")
                }),
            )
            .layer(layer(public_url))
    }

    #[tokio::test]
    async fn every_response_carries_every_header() {
        let https = app(&url(Some("https://kubespaces.example.com")));
        for (method, path, status) in [
            (Method::GET, "/page", StatusCode::OK),
            (Method::GET, "/no-such-page", StatusCode::NOT_FOUND),
            (Method::POST, "/page", StatusCode::METHOD_NOT_ALLOWED),
        ] {
            let response = answer(&https, method.clone(), path).await;
            assert_eq!(response.status(), status, "{method} {path}");
            let h = response.headers();
            assert_eq!(
                h[header::CONTENT_SECURITY_POLICY],
                content_security_policy().as_str()
            );
            assert_eq!(h[header::X_FRAME_OPTIONS], "DENY", "{method} {path}");
            assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
            assert_eq!(h[header::REFERRER_POLICY], "no-referrer");
            assert_eq!(h[header::STRICT_TRANSPORT_SECURITY], HSTS);
            assert_eq!(h.get_all(header::X_FRAME_OPTIONS).iter().count(), 1);
        }
        // Over plain http (loopback) there is no HSTS; the rest is the same.
        let http = app(&url(None));
        let response = answer(&http, Method::GET, "/page").await;
        assert!(
            response
                .headers()
                .get(header::STRICT_TRANSPORT_SECURITY)
                .is_none()
        );
        assert_eq!(response.headers()[header::X_FRAME_OPTIONS], "DENY");
    }

    #[test]
    fn the_policy_allows_only_what_the_portal_needs() {
        let csp = content_security_policy();
        for directive in [
            "default-src 'none'",
            "connect-src 'self'",
            "form-action 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        ] {
            assert!(
                csp.split("; ").any(|d| d == directive),
                "{directive} in {csp}"
            );
        }
        assert!(!csp.contains("unsafe"), "{csp}");
        assert!(!csp.contains('*'), "{csp}");
        // A known vector (`echo -n alert(1) | openssl dgst -sha256 -binary | base64`).
        assert_eq!(
            csp_hash("alert(1)"),
            "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='"
        );
    }

    /// The text of every inline `<tag>…</tag>` in `html`.
    fn inline(html: &str, tag: &str) -> Vec<String> {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        html.split(open.as_str())
            .skip(1)
            .map(|rest| {
                rest.split(close.as_str())
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    /// ` on<letters>=`: an inline event handler, which the CSP would block.
    fn has_inline_handler(html: &str) -> bool {
        html.match_indices(" on").any(|(at, _)| {
            let rest = &html[at + 3..];
            let letters = rest.chars().take_while(char::is_ascii_alphabetic).count();
            letters > 0 && rest[letters..].starts_with('=')
        })
    }

    #[test]
    fn every_inline_script_and_style_is_allowed_by_the_csp() {
        let browser = Browser {
            identity: Identity {
                email: "alice@example.com".into(),
                groups: vec![],
                admin: false,
                valid_until: 0,
            },
            csrf: "token".into(),
        };
        let name = "team-<x>";
        let tenant = Tenant::new(name, TenantSpec::new("alice@example.com", "1", "1Gi", None));
        let view = TenantView::of(&tenant, Timestamp::UNIX_EPOCH);
        let welcome = welcome_page().0;
        let bounds = FormBounds::new(&Limits::default(), 1);
        let list = list_page(
            std::slice::from_ref(&view),
            &browser,
            &bounds,
            Some("spec.resources.cpu: <bad>"),
            None,
        )
        .0;
        let body = tenant_body(&view, "", &Ok(vec![]), &browser.csrf, "", None);
        let tenant_page = page(name, Some(&browser), &body).0;
        let csp = content_security_policy();
        for html in [&welcome, &list, &tenant_page] {
            let (scripts, styles) = (inline(html, "script"), inline(html, "style"));
            assert_eq!(styles, vec![STYLE]);
            for source in scripts.iter().chain(&styles) {
                assert!(
                    csp.contains(&csp_hash(source)),
                    "the CSP ({csp}) does not allow inline {source:?}"
                );
            }
            assert!(!has_inline_handler(html), "{html}");
            assert!(!html.contains(" style="), "{html}");
            assert!(!html.contains("javascript:"), "{html}");
        }
        // Each page's one script, unchanged by the tenant; the name reaches it as data.
        assert_eq!(inline(&tenant_page, "script"), vec![TENANT_SCRIPT]);
        assert_eq!(inline(&list, "script"), vec![LIST_SCRIPT]);
        assert!(tenant_page.contains("data-tenant=\"team-&lt;x&gt;\""));
        assert!(
            has_inline_handler("<a onclick=\"x()\">"),
            "the check itself"
        );
    }
}
