//! The tenant page's recent Events, newest first. The page's script refetches them
//! (`/tenants/{name}/events`) when the tenant changes, and rebuilds the same markup.

use super::{esc, hidden};
use crate::tenant_events::RecentEvent;

fn item(e: &RecentEvent) -> String {
    let times = if e.count > 1 {
        format!(" (×{})", e.count)
    } else {
        String::new()
    };
    format!(
        "<li data-reason=\"{r}\"><time datetime=\"{}\">{}</time><span class=\"event-type\">{}</span> <strong>{r}</strong> <span class=\"note\">{}</span>{times}</li>",
        esc(&e.time),
        esc(&e.when),
        esc(&e.type_),
        esc(&e.note),
        r = esc(&e.reason),
    )
}

/// The Events section: `events`, or why they could not be read (`Err`: the reason).
pub fn events(events: &Result<Vec<RecentEvent>, String>) -> String {
    let (items, error) = match events {
        Ok(list) => (list.iter().map(item).collect::<String>(), None),
        Err(e) => (String::new(), Some(e.as_str())),
    };
    let empty = events.as_ref().is_ok_and(Vec::is_empty);
    format!(
        "<section aria-labelledby=\"events-h\"><h2 id=\"events-h\">Recent events</h2>\
<p id=\"events-empty\"{}>No events yet.</p><p id=\"events-error\" class=\"error\"{}>{}</p>\
<ul class=\"events\" id=\"events\">{items}</ul></section>",
        hidden(!empty),
        hidden(error.is_none()),
        error
            .map(|e| format!("The events could not be read: {}", esc(e)))
            .unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_listed_escaped_or_say_why_they_are_missing() {
        let e = RecentEvent {
            time: "1970-01-01T00:08:20Z".into(),
            when: "1970-01-01 00:08:20 UTC".into(),
            type_: "Warning".into(),
            reason: "Failed".into(),
            note: "<script>x</script>".into(),
            count: 3,
        };
        let html = events(&Ok(vec![e]));
        assert!(html.contains("<li data-reason=\"Failed\"><time datetime=\"1970-01-01T00:08:20Z\">1970-01-01 00:08:20 UTC</time><span class=\"event-type\">Warning</span> <strong>Failed</strong> <span class=\"note\">&lt;script&gt;x&lt;/script&gt;</span> (×3)</li>"), "{html}");
        assert!(html.contains("id=\"events-empty\" hidden"));
        let none = events(&Ok(vec![]));
        assert!(none.contains("<p id=\"events-empty\">No events yet."));
        let refused = events(&Err("forbidden <x>".into()));
        assert!(refused.contains("The events could not be read: forbidden &lt;x&gt;"));
        assert!(refused.contains("id=\"events-empty\" hidden"));
    }
}
