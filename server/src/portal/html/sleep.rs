//! The tenant page's sleep section: what sleeping means, where the tenant is (the `Asleep`
//! condition's message), and the one request it offers now, *Sleep* to an awake tenant or *Wake*
//! to a sleeping one, each a form that posts with the session's CSRF token. The page's script
//! shows and hides them as the view's `sleepAction` and `sleepMessage` change.

use super::{esc, hidden};
use crate::tenant_view::{SleepAction, TenantView};

/// One request's form: `action` posted to `/tenants/<name>/<action>`, its button saying `label`.
fn form(name: &str, csrf: &str, action: &str, label: &str, shown: bool) -> String {
    format!(
        "<form id=\"{action}-form\" method=\"post\" action=\"/tenants/{}/{action}\"{}>\
<input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">{label}</button></form>",
        esc(name),
        hidden(!shown),
        esc(csrf),
    )
}

/// The section, hidden while the tenant is being deleted.
pub fn sleep_section(view: &TenantView, csrf: &str) -> String {
    let offered = view.sleep_action;
    format!(
        "<section id=\"sleep\" aria-labelledby=\"sleep-h\"{}><h2 id=\"sleep-h\">Sleep</h2>\
<p>While the tenant sleeps its control plane runs no pod: its workloads keep running, and the \
first connection to its API wakes it.</p>\
<p id=\"sleep-message\" role=\"status\"{}>{}</p>{}{}</section>",
        hidden(view.teardown.is_some()),
        hidden(view.sleep_message.is_empty()),
        esc(&view.sleep_message),
        form(
            &view.name,
            csrf,
            "sleep",
            "Sleep",
            offered == Some(SleepAction::Sleep)
        ),
        form(
            &view.name,
            csrf,
            "wake",
            "Wake",
            offered == Some(SleepAction::Wake)
        ),
    )
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use kubespaces_api::api::{Tenant, TenantSpec};

    use super::*;

    fn view(phase: &str, asleep: Option<(&str, &str, &str)>) -> TenantView {
        let mut t = Tenant::new("t<1>", TenantSpec::new("a@example.com", "1", "1Gi", None));
        let conditions: Vec<_> = asleep
            .map(|(status, reason, message)| {
                serde_json::json!({"type": "Asleep", "status": status, "reason": reason,
                    "message": message, "lastTransitionTime": "2026-12-07T10:00:00Z"})
            })
            .into_iter()
            .collect();
        t.status =
            serde_json::from_value(serde_json::json!({"phase": phase, "conditions": conditions}))
                .unwrap();
        TenantView::of(&t, Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn an_awake_tenant_is_offered_sleep_and_a_sleeping_one_wake() {
        let awake = sleep_section(&view("Ready", None), "tok");
        assert!(awake.contains(
            "<form id=\"sleep-form\" method=\"post\" action=\"/tenants/t&lt;1&gt;/sleep\"><input type=\"hidden\" name=\"csrf\" value=\"tok\"><button type=\"submit\">Sleep</button></form>"
        ), "{awake}");
        assert!(awake.contains(
            "<form id=\"wake-form\" method=\"post\" action=\"/tenants/t&lt;1&gt;/wake\" hidden>"
        ));
        assert!(awake.contains("<p id=\"sleep-message\" role=\"status\" hidden></p>"));

        let asleep = sleep_section(
            &view(
                "Asleep",
                Some(("True", "SleepRequested", "the control plane <sleeps>")),
            ),
            "tok",
        );
        assert!(
            asleep.contains("action=\"/tenants/t&lt;1&gt;/sleep\" hidden>"),
            "{asleep}"
        );
        assert!(asleep.contains(
            "<form id=\"wake-form\" method=\"post\" action=\"/tenants/t&lt;1&gt;/wake\"><input"
        ));
        assert!(
            asleep.contains(">the control plane &lt;sleeps&gt;</p>"),
            "escaped"
        );

        let waking = sleep_section(
            &view(
                "Waking",
                Some(("False", "Waking", "waking: ControlPlaneReady")),
            ),
            "tok",
        );
        assert!(waking.contains("/sleep\" hidden>") && waking.contains("/wake\" hidden>"));
    }
}
