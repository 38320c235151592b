//! The API server's own count of requests (`apiserver_request_total`), so both sides' requests
//! are measured the same way, by the party that serves them.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use kube::{Client, api::ListParams};

/// Requests counted by the API server: (verb, resource[/subresource]) → count.
pub type Requests = BTreeMap<(String, String), f64>;

pub const WRITE_VERBS: [&str; 6] = [
    "POST",
    "PUT",
    "PATCH",
    "APPLY",
    "DELETE",
    "DELETECOLLECTION",
];

fn is_write(verb: &str) -> bool {
    WRITE_VERBS.contains(&verb)
}

/// The API server's `apiserver_request_total`, summed by verb and resource.
pub async fn requests(client: &Client) -> Result<Requests> {
    // A plain GET of /metrics (`list` with no parameters builds just that).
    let request = kube::core::Request::new("/metrics").list(&ListParams::default())?;
    let text = client.request_text(request).await.context("GET /metrics")?;
    Ok(parse(&text))
}

/// What the API server spent its time on besides the counts, under keys that are no verb (so
/// no write count includes them): ("seconds VERB", resource) for the summed duration of the
/// requests (watches excepted: theirs is how long they stay open), and ("watch events", kind)
/// for the events it sent to watchers.
const SECONDS: &str = "seconds ";
const WATCH_EVENTS: &str = "watch events";

fn parse(text: &str) -> Requests {
    let mut out = Requests::new();
    for line in text.lines() {
        let (metric, rest) = if let Some(rest) = line.strip_prefix("apiserver_request_total{") {
            ("", rest)
        } else if let Some(rest) = line.strip_prefix("apiserver_request_duration_seconds_sum{") {
            (SECONDS, rest)
        } else if let Some(rest) = line.strip_prefix("apiserver_watch_events_total{") {
            (WATCH_EVENTS, rest)
        } else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        let label = |key: &str| {
            labels
                .split(',')
                .find_map(|kv| kv.strip_prefix(&format!("{key}=\"")))
                .map(|v| v.trim_end_matches('"').to_owned())
                .unwrap_or_default()
        };
        if metric == WATCH_EVENTS {
            // The kind label (older API servers) or the resource one.
            let kind = Some(label("kind"))
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| label("resource"));
            *out.entry((WATCH_EVENTS.to_owned(), kind)).or_default() += value;
            continue;
        }
        let (resource, sub) = (label("resource"), label("subresource"));
        let resource = if sub.is_empty() {
            resource
        } else {
            format!("{resource}/{sub}")
        };
        let verb = label("verb");
        if metric == SECONDS && matches!(verb.as_str(), "WATCH" | "CONNECT") {
            continue;
        }
        *out.entry((format!("{metric}{verb}"), resource))
            .or_default() += value;
    }
    out
}

/// Writes other than Lease renewals (which go on at every moment, from every component).
fn work_writes(requests: &Requests) -> f64 {
    requests
        .iter()
        .filter(|((verb, resource), _)| is_write(verb) && resource != "leases")
        .map(|(_, v)| v)
        .sum()
}

/// The request counts once writes have stopped (no write but Lease renewals for 2 s, at most
/// 60 s): the writes a side caused after its last tenant was Ready (the controller-manager's
/// ConfigMap and ServiceAccount in each new namespace, quota updates, late Events) are its own,
/// and must not spill into the next side's count. Polling is the only way to see "nothing
/// happens": there is no event for it.
pub async fn settled(client: &Client) -> Result<Requests> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = requests(client).await?;
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = requests(client).await?;
        if work_writes(&now) == work_writes(&last) || Instant::now() > deadline {
            return Ok(now);
        }
        last = now;
    }
}

pub fn delta(before: &Requests, after: &Requests) -> Requests {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, v)| *v > 0.0)
        .collect()
}

pub fn writes(requests: &Requests) -> f64 {
    requests
        .iter()
        .filter(|((verb, _), _)| is_write(verb))
        .map(|(_, v)| v)
        .sum()
}

/// "POST tenants 1.00, APPLY tenants/status 1.00, …": writes per tenant by verb and resource.
pub fn write_breakdown(requests: &Requests, n: usize) -> String {
    requests
        .iter()
        .filter(|((verb, _), _)| is_write(verb))
        .map(|((verb, resource), v)| format!("{verb} {resource} {:.2}", v / n as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "APPLY tenants/status 1.2 s, …; watch events: Tenant 900, …": where the API server's time
/// went (the `top` largest request totals), and how many events it sent to watchers.
pub fn time_breakdown(requests: &Requests, top: usize) -> String {
    let mut seconds: Vec<(String, f64)> = requests
        .iter()
        .filter_map(|((verb, resource), v)| {
            Some((format!("{} {resource}", verb.strip_prefix(SECONDS)?), *v))
        })
        .collect();
    seconds.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total: f64 = seconds.iter().map(|(_, v)| v).sum();
    let events: Vec<String> = requests
        .iter()
        .filter(|((metric, _), _)| metric == WATCH_EVENTS)
        .map(|((_, kind), v)| format!("{kind} {v}"))
        .collect();
    format!(
        "{total:.1} s in requests: {}; watch events sent: {}",
        seconds
            .iter()
            .take(top)
            .map(|(k, v)| format!("{k} {v:.2} s"))
            .collect::<Vec<_>>()
            .join(", "),
        events.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_verb_and_resource_with_subresource() {
        let text = "# HELP x\n\
            apiserver_request_total{code=\"201\",component=\"apiserver\",resource=\"tenants\",subresource=\"\",verb=\"POST\",version=\"v1alpha1\"} 3\n\
            apiserver_request_total{code=\"409\",component=\"apiserver\",resource=\"tenants\",subresource=\"\",verb=\"POST\",version=\"v1alpha1\"} 1\n\
            apiserver_request_total{code=\"200\",component=\"apiserver\",resource=\"tenants\",subresource=\"status\",verb=\"APPLY\",version=\"v1alpha1\"} 2\n\
            apiserver_request_total{code=\"200\",component=\"apiserver\",resource=\"leases\",subresource=\"\",verb=\"PUT\",version=\"v1\"} 7\n";
        let r = parse(&format!(
            "{text}apiserver_request_duration_seconds_sum{{component=\"apiserver\",resource=\"tenants\",subresource=\"status\",verb=\"APPLY\"}} 0.5\n\
             apiserver_request_duration_seconds_sum{{component=\"apiserver\",resource=\"tenants\",subresource=\"\",verb=\"WATCH\"}} 99\n\
             apiserver_watch_events_total{{group=\"kubespaces.io\",kind=\"Tenant\",version=\"v1alpha1\"}} 9\n"
        ));
        assert_eq!(r[&("seconds APPLY".into(), "tenants/status".into())], 0.5);
        assert_eq!(r[&("watch events".into(), "Tenant".into())], 9.0);
        assert!(!r.contains_key(&("seconds WATCH".into(), "tenants".into())));
        assert!(
            time_breakdown(&r, 3).starts_with("0.5 s in requests: APPLY tenants/status 0.50 s")
        );
        assert_eq!(r[&("POST".into(), "tenants".into())], 4.0);
        assert_eq!(r[&("APPLY".into(), "tenants/status".into())], 2.0);
        assert_eq!(writes(&r), 13.0);
        assert_eq!(work_writes(&r), 6.0);
    }
}
