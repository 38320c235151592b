//! The tenant page's progress: the detail conditions as a checklist in the operator's order
//! (each with its state word, reason and message; the blocking one marked, for screen readers
//! too, with `aria-current="step"`), and while the tenant is deleted, what its teardown waits
//! for. The page's script rebuilds the same markup from the stream's view.

use super::{esc, hidden};
use crate::tenant_view::{Check, CheckState, Teardown};

fn item(c: &Check) -> String {
    let current = if c.state == CheckState::Blocking {
        " aria-current=\"step\""
    } else {
        ""
    };
    format!(
        "<li class=\"{state}\" data-type=\"{}\" data-status=\"{}\"{current}><span class=\"state\">{}</span>\
<strong class=\"label\">{}</strong><span class=\"reason\">{}</span><span class=\"message\">{}</span></li>",
        esc(&c.type_),
        esc(&c.status),
        c.state.word(),
        esc(&c.label),
        esc(&c.reason),
        esc(&c.message),
        state = c.state.word().to_lowercase(),
    )
}

/// The progress section: what the tenant waits for (`waiting`), the checklist, the teardown.
pub fn progress(waiting: &str, checks: &[Check], teardown: Option<&Teardown>) -> String {
    let items: String = checks.iter().map(item).collect();
    let (reason, message) = teardown.map_or((String::new(), String::new()), |t| {
        (esc(&t.reason), esc(&t.message))
    });
    format!(
        "<section aria-labelledby=\"progress-h\"><h2 id=\"progress-h\">Progress</h2>\
<div id=\"teardown\" class=\"teardown\" role=\"status\"{}><strong>Being deleted:</strong> \
<span id=\"teardown-reason\">{reason}</span>: <span id=\"teardown-message\">{message}</span></div>\
<p id=\"waiting\" aria-live=\"polite\">{}</p>\
<p id=\"checklist-empty\"{}>The operator has not reported on this tenant yet.</p>\
<ol class=\"checklist\" id=\"checklist\" aria-label=\"What the operator has set up\">{items}</ol></section>",
        hidden(teardown.is_none()),
        esc(waiting),
        hidden(!checks.is_empty()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(type_: &str, status: &str, state: CheckState, message: &str) -> Check {
        Check {
            type_: type_.into(),
            label: type_.into(),
            status: status.into(),
            state,
            reason: "Why".into(),
            message: message.into(),
        }
    }

    #[test]
    fn the_checklist_marks_the_blocking_step_and_escapes_messages() {
        let html = progress(
            "Waiting for QuotaReady: <soon>",
            &[
                check("NamespaceReady", "True", CheckState::Done, "ok"),
                check("QuotaReady", "False", CheckState::Blocking, "<img src=x>"),
            ],
            None,
        );
        assert!(html.contains("<li class=\"done\" data-type=\"NamespaceReady\" data-status=\"True\"><span class=\"state\">Done</span>"), "{html}");
        assert!(html.contains("<li class=\"blocking\" data-type=\"QuotaReady\" data-status=\"False\" aria-current=\"step\"><span class=\"state\">Blocking</span>"), "{html}");
        assert!(
            html.contains("&lt;img src=x&gt;") && !html.contains("<img"),
            "{html}"
        );
        assert!(html.contains("Waiting for QuotaReady: &lt;soon&gt;"));
        assert!(html.contains("id=\"teardown\" class=\"teardown\" role=\"status\" hidden"));
        assert!(html.contains("id=\"checklist-empty\" hidden"));
    }

    #[test]
    fn a_teardown_shows_what_it_waits_for() {
        let t = Teardown {
            reason: "NamespaceTerminating".into(),
            message: "2 pods <left>".into(),
        };
        let html = progress("", &[], Some(&t));
        assert!(html.contains("role=\"status\"><strong>Being deleted:</strong> <span id=\"teardown-reason\">NamespaceTerminating</span>: <span id=\"teardown-message\">2 pods &lt;left&gt;</span>"), "{html}");
        assert!(html.contains("<p id=\"checklist-empty\">"));
    }
}
