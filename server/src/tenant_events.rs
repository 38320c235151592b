//! A tenant's recent Events, as the portal shows them. The operator records them on the Tenant
//! through kube's `Recorder` (events.k8s.io/v1): a Tenant is cluster-scoped, so its Events live
//! in namespace `default`, and they are found by the Tenant's uid (`regarding.uid`), so a
//! namesake deleted earlier does not lend its history. The chart grants the server `list` on
//! Events in that namespace only (templates/server-rbac.yaml). Who may read them is decided
//! by the caller of [`recent`]: [`crate::tenants::TenantService::events`].

use k8s_openapi::{api::events::v1::Event, jiff::Timestamp};
use kube::{Api, Client, ResourceExt, api::ListParams};
use kubespaces_api::api::Tenant;
use serde::Serialize;

use crate::error::ApiError;

/// Where the Events of cluster-scoped objects are recorded (kube's `Recorder`, like client-go's).
pub const EVENTS_NAMESPACE: &str = "default";

/// How many Events the page shows, newest first.
pub const RECENT: usize = 10;

/// One Event, as the page shows it. `reason` and `note` are written by whoever may create Events
/// in `default`: text, escaped when shown.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RecentEvent {
    /// RFC 3339, for `<time datetime>`.
    pub time: String,
    /// `2026-12-06 21:20:03 UTC`.
    pub when: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    pub reason: String,
    pub note: String,
    /// How often it happened (a series counts repeats).
    pub count: i32,
}

/// When an Event last happened: its series' last sighting, its time, or the older fields.
fn last_seen(e: &Event) -> Option<Timestamp> {
    e.series
        .as_ref()
        .map(|s| s.last_observed_time.0)
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.deprecated_last_timestamp.as_ref().map(|t| t.0))
        .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The newest [`RECENT`] of `events`, newest first.
pub fn latest(events: Vec<Event>) -> Vec<RecentEvent> {
    let mut dated: Vec<(Option<Timestamp>, Event)> =
        events.into_iter().map(|e| (last_seen(&e), e)).collect();
    dated.sort_by_key(|d| std::cmp::Reverse(d.0));
    dated
        .into_iter()
        .take(RECENT)
        .map(|(at, e)| RecentEvent {
            time: at.map(|t| t.to_string()).unwrap_or_default(),
            when: at
                .map(|t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string())
                .unwrap_or_default(),
            type_: e.type_.unwrap_or_default(),
            reason: e.reason.unwrap_or_default(),
            note: e.note.unwrap_or_default(),
            count: e
                .series
                .as_ref()
                .map(|s| s.count)
                .or(e.deprecated_count)
                .unwrap_or(1),
        })
        .collect()
}

/// The recent Events of `tenant` (this object: its uid), read with the server's client.
pub async fn recent(client: Client, tenant: &Tenant) -> Result<Vec<RecentEvent>, ApiError> {
    let Some(uid) = tenant.uid() else {
        return Ok(vec![]);
    };
    let api: Api<Event> = Api::namespaced(client, EVENTS_NAMESPACE);
    let params = ListParams::default().fields(&format!("regarding.uid={uid}"));
    Ok(latest(api.list(&params).await?.items))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{
        api::events::v1::EventSeries,
        apimachinery::pkg::apis::meta::v1::{MicroTime, Time},
    };

    use super::*;

    fn event(reason: &str, secs: i64) -> Event {
        Event {
            reason: Some(reason.into()),
            type_: Some("Normal".into()),
            note: Some(format!("{reason} happened")),
            event_time: Some(MicroTime(Timestamp::from_second(secs).unwrap())),
            ..Event::default()
        }
    }

    #[test]
    fn the_newest_first_at_most_recent_with_repeats_counted() {
        let mut repeated = event("Failed", 10);
        repeated.series = Some(EventSeries {
            count: 4,
            last_observed_time: MicroTime(Timestamp::from_second(500).unwrap()),
        });
        let mut old_style = event("Old", 0);
        old_style.event_time = None;
        old_style.deprecated_last_timestamp = Some(Time(Timestamp::from_second(300).unwrap()));
        let mut all = vec![event("Ready", 400), repeated, old_style];
        all.extend((0..20).map(|i| event("Noise", i)));
        let shown = latest(all);
        assert_eq!(shown.len(), RECENT);
        let reasons: Vec<&str> = shown.iter().take(3).map(|e| e.reason.as_str()).collect();
        assert_eq!(reasons, ["Failed", "Ready", "Old"], "by last sighting");
        assert_eq!(shown[0].count, 4);
        assert_eq!(shown[1].count, 1);
        assert_eq!(shown[0].when, "1970-01-01 00:08:20 UTC");
        assert_eq!(shown[0].time, "1970-01-01T00:08:20Z");
    }
}
