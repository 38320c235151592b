//! The portal's HTML: server-rendered pages, no front-end build step. Each page's one inline
//! script and the one inline style are constants, so the Content-Security-Policy can allow
//! exactly them by hash ([`crate::headers`]); data reaches the scripts through HTML-escaped
//! `data-*` attributes and the live stream, never through script text. Every form carries the
//! session's CSRF token.
//!
//! - [`style`]: the stylesheet;
//! - [`welcome`], [`list`], [`form`], [`tenant`]: the pages (the form is part of the list's);
//! - [`checklist`], [`quota`], [`sleep`], [`events`]: the parts of the tenant page.

pub mod checklist;
pub mod events;
pub mod form;
pub mod list;
pub mod quota;
pub mod sleep;
pub mod style;
pub mod tenant;
pub mod welcome;

use axum::response::Html;

pub use self::{
    form::NewTenant,
    list::{LIST_SCRIPT, list_page},
    style::STYLE,
    tenant::{TENANT_SCRIPT, tenant_body},
};
use super::session::Browser;

/// Every inline script of the portal, for the CSP.
pub const SCRIPTS: [&str; 2] = [LIST_SCRIPT, TENANT_SCRIPT];

/// `text` as HTML text or attribute value.
pub fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// ` hidden` when `yes`: the attribute of a part the page's script shows or hides.
pub fn hidden(yes: bool) -> &'static str {
    if yes { " hidden" } else { "" }
}

/// A whole page: `body` under the header bar, which names the logged-in browser and carries
/// its logout form.
pub fn page(title: &str, who: Option<&Browser>, body: &str) -> Html<String> {
    let bar = match who {
        Some(b) => format!(
            "<form method=\"post\" action=\"/logout\"><span>{}</span><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">Log out</button></form>",
            esc(&b.identity.email),
            esc(&b.csrf)
        ),
        None => String::new(),
    };
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{} · KubeSpaces</title><style>{STYLE}</style></head><body><header><a href=\"/\"><strong>KubeSpaces</strong></a>{bar}</header><main>{body}</main></body></html>",
        esc(title)
    ))
}

/// A phase as a badge; `id` names it for the page's script.
pub fn badge(phase: &str, id: Option<&str>) -> String {
    let id = id.map(|i| format!(" id=\"{i}\"")).unwrap_or_default();
    format!(
        "<span class=\"badge phase-{p}\"{id}>{p}</span>",
        p = esc(phase)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_text_and_both_quotes() {
        assert_eq!(
            esc("<a href='x'>\"&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&quot;&amp;&quot;&lt;/a&gt;"
        );
        assert_eq!(
            badge("<x>", Some("phase")),
            "<span class=\"badge phase-&lt;x&gt;\" id=\"phase\">&lt;x&gt;</span>"
        );
    }
}
