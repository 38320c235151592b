//! The live stream (server-sent events) of the API (`/api/v1/watch/tenants`) and the portal
//! (`/portal/events`): first every visible tenant, then each change. Two bounds hold on it:
//!
//! - at most `--max-streams-per-user` open at once per user ([`StreamSlots`]), since each holds
//!   a connection, a task and a queue of changes;
//! - it ends when the login it was opened with does ([`Until`]): the token's `exp` (plus the
//!   leeway), or the portal session's end or logout. Who may see what is decided from the
//!   token's claims once, when the stream opens; ending the stream with the token is what makes
//!   a change of those claims (a user removed from the admin group) reach an open stream.

use std::{
    collections::HashMap,
    convert::Infallible,
    num::NonZeroUsize,
    pin::Pin,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::{Duration, SystemTime},
};

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kubespaces_api::{api::Tenant, conditions};
use tokio::time::Instant;
use tokio_stream::wrappers::BroadcastStream;

use crate::{
    auth::Identity,
    error::ApiError,
    store::{Change, Tenants},
    tenant_view::TenantView,
    tenants::view,
};

/// How often a stream with a validity check ([`Until::still`]) re-checks it while no change
/// arrives (a portal logout ends the tab's stream within this).
const RECHECK: Duration = Duration::from_secs(15);

/// The longest a stream is kept open, whatever the token says: a far-off `exp` must not
/// overflow the timer, and a day-long stream is reopened by any client anyway.
const MAX_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// The open streams per user, at most `max` each.
pub struct StreamSlots {
    max: usize,
    open: Mutex<HashMap<String, usize>>,
}

/// One open stream; gives its place back when dropped (the client went away or the stream
/// ended).
pub struct Slot {
    slots: Arc<StreamSlots>,
    user: String,
}

impl StreamSlots {
    pub fn new(max: NonZeroUsize) -> Arc<StreamSlots> {
        Arc::new(StreamSlots {
            max: max.get(),
            open: Mutex::new(HashMap::new()),
        })
    }

    // No code under the lock panics, so a poisoned map is whole: use it.
    fn lock(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for one more stream of `user`, or the 429 that names the limit.
    pub fn acquire(self: &Arc<Self>, user: &str) -> Result<Slot, ApiError> {
        let mut open = self.lock();
        let count = open.entry(user.to_owned()).or_insert(0);
        if *count >= self.max {
            return Err(ApiError::TooMany {
                message: format!(
                    "too many live streams: you have {} open, the most one user may have \
                     (--max-streams-per-user {}); close one (each open portal page and each \
                     `kubespaces tenant … --wait` holds one) or ask your platform team to \
                     raise the limit",
                    *count, self.max
                ),
                retry_after: None,
            });
        }
        *count += 1;
        Ok(Slot {
            slots: self.clone(),
            user: user.to_owned(),
        })
    }

    /// Streams `user` has open.
    pub fn open(&self, user: &str) -> usize {
        self.lock().get(user).copied().unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.slots.lock();
        if let Some(count) = open.get_mut(&self.user) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.user);
            }
        }
    }
}

/// When a stream ends, and what it says then.
pub struct Until {
    pub deadline: Instant,
    /// Re-checked at every change and every [`RECHECK`]: false ends the stream (portal logout).
    pub still: Option<Box<dyn Fn() -> bool + Send + Sync>>,
    /// The stream's last words: an event the portal page shows, or (for the API, whose clients
    /// read every event as a tenant) a comment, which SSE clients skip.
    pub last: Event,
}

impl Until {
    /// Until the token's validity ends: for the API's bearer-token streams.
    pub fn token(identity: &Identity) -> Until {
        Until {
            deadline: deadline_in(identity.remaining(SystemTime::now())),
            still: None,
            last: Event::default().comment(
                "the token this stream was opened with has expired: reconnect with a fresh token",
            ),
        }
    }

    fn valid(&self) -> bool {
        self.still.as_ref().is_none_or(|still| still())
    }
}

/// `Instant::now() + remaining`, at most [`MAX_LIFETIME`] away.
pub fn deadline_in(remaining: Duration) -> Instant {
    Instant::now() + remaining.min(MAX_LIFETIME)
}

type Changes = Pin<Box<dyn Stream<Item = Change> + Send>>;

struct Feed {
    changes: Changes,
    until: Until,
    ended: bool,
    /// What each tenant's event carries: the API's tenant or the portal's view of it.
    reader: Reader,
    /// Held for as long as the stream is: its place among the user's streams.
    _slot: Slot,
}

impl Feed {
    /// The next event, or None once the stream is over.
    async fn next(&mut self) -> Option<Event> {
        if self.ended {
            return None;
        }
        loop {
            tokio::select! {
                // The end first: nothing more is sent once the login has ended.
                biased;
                _ = tokio::time::sleep_until(self.until.deadline) => return self.end(),
                change = self.changes.next() => {
                    let change = change?;
                    if !self.until.valid() {
                        return self.end();
                    }
                    return Some(event(&change, self.reader));
                }
                _ = tokio::time::sleep(RECHECK), if self.until.still.is_some() => {
                    if !self.until.valid() {
                        return self.end();
                    }
                }
            }
        }
    }

    fn end(&mut self) -> Option<Event> {
        self.ended = true;
        Some(self.until.last.clone())
    }
}

/// Who reads a stream, which decides what its events carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// An API client: the tenant as the API shows it (`/api/v1/tenants/watch`).
    Api,
    /// For the portal's pages, only what their scripts read: a `view` ([`TenantView`]:
    /// checklist, quota bars, teardown), which they copy into the page without deciding or
    /// parsing anything themselves, and `waiting` ([`conditions::waiting_for`]; empty when
    /// nothing is unmet), so the page shows the CLI's definition without one of its own.
    Portal,
}

fn event(change: &Change, reader: Reader) -> Event {
    let event = Event::default().event(change.kind);
    let data = match reader {
        Reader::Api => event.json_data(view(&change.tenant)),
        Reader::Portal => event.json_data(serde_json::json!({
            "view": TenantView::of(&change.tenant, Timestamp::now()),
            "waiting": conditions::waiting_for(change.tenant.conditions()).unwrap_or_default(),
        })),
    };
    data.unwrap_or_else(|_| Event::default().event("error"))
}

/// The live stream of `tenants` for `caller` (only `name` when given), ending as `until` says;
/// `slot` is its place among the caller's streams. Ends also when the caller falls too far
/// behind (reconnect to resynchronise).
pub fn changes_stream(
    tenants: &Tenants,
    caller: Identity,
    name: Option<String>,
    until: Until,
    reader: Reader,
    slot: Slot,
) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
    let wanted = move |t: &Tenant| {
        caller.may_access(&t.spec.owner) && name.as_ref().is_none_or(|n| *n == t.name_any())
    };
    // Subscribe before the snapshot, so nothing between the two is lost.
    let changes = BroadcastStream::new(tenants.subscribe());
    let initial: Vec<Change> = tenants
        .list(&wanted)
        .into_iter()
        .map(|tenant| Change {
            kind: "applied",
            tenant,
        })
        .collect();
    let live = changes
        .take_while(|c| futures::future::ready(c.is_ok()))
        .filter_map(move |c| futures::future::ready(c.ok().filter(|c| wanted(&c.tenant))));
    let feed = Feed {
        changes: Box::pin(futures::stream::iter(initial).chain(live)),
        until,
        ended: false,
        reader,
        _slot: slot,
    };
    let stream = futures::stream::unfold(feed, |mut feed| async move {
        let event = feed.next().await?;
        Some((Ok(event), feed))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use kubespaces_api::api::TenantSpec;

    use super::*;

    #[test]
    fn each_user_holds_at_most_max_streams_and_gets_them_back_when_they_close() {
        let slots = StreamSlots::new(NonZeroUsize::new(2).unwrap());
        let a = slots.acquire("alice").unwrap();
        let b = slots.acquire("alice").unwrap();
        let refused = slots.acquire("alice").err().unwrap();
        assert_eq!(refused.status().as_u16(), 429);
        let text = refused.to_string();
        assert!(
            text.contains("you have 2 open, the most one user may have (--max-streams-per-user 2)"),
            "{text}"
        );
        // Bob is not affected by alice's streams.
        let _bob = slots.acquire("bob").unwrap();
        drop(a);
        assert_eq!(slots.open("alice"), 1);
        let _c = slots.acquire("alice").unwrap();
        drop(b);
        drop(_c);
        assert_eq!(slots.open("alice"), 0);
        assert_eq!(
            slots.lock().len(),
            1,
            "no entry left for alice, bob's stays"
        );
    }

    fn feed(slots: &Arc<StreamSlots>, changes: Changes, until: Until) -> Feed {
        Feed {
            changes,
            until,
            ended: false,
            reader: Reader::Api,
            _slot: slots.acquire("alice").unwrap(),
        }
    }

    fn change(name: &str) -> Change {
        Change {
            kind: "applied",
            tenant: Arc::new(Tenant::new(
                name,
                TenantSpec::new("alice", "1", "1Gi", None),
            )),
        }
    }

    /// The text of an event as it goes on the wire.
    fn wire(event: &Event) -> String {
        format!("{event:?}")
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_ends_when_the_token_does_with_its_last_words_and_frees_its_slot() {
        let slots = StreamSlots::new(NonZeroUsize::MIN);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Change>();
        let changes: Changes = Box::pin(tokio_stream::wrappers::UnboundedReceiverStream::new(rx));
        let identity = Identity {
            email: "alice".into(),
            groups: vec![],
            admin: false,
            valid_until: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_secs()
                + 60,
        };
        let mut f = feed(&slots, changes, Until::token(&identity));
        tx.send(change("one")).unwrap();
        assert!(wire(&f.next().await.unwrap()).contains("one"));
        // No change for a minute: the paused clock runs to the deadline, the stream says why
        // it ends, and ends.
        let started = Instant::now();
        let last = wire(&f.next().await.unwrap());
        assert!(
            last.contains("has expired: reconnect with a fresh token"),
            "{last}"
        );
        assert!((59..=61).contains(&started.elapsed().as_secs()));
        // Changes after the end are not sent.
        tx.send(change("two")).unwrap();
        assert!(f.next().await.is_none());
        assert_eq!(slots.open("alice"), 1);
        drop(f);
        assert_eq!(slots.open("alice"), 0, "the slot is back");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_ends_when_its_session_does() {
        let slots = StreamSlots::new(NonZeroUsize::MIN);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Change>();
        let changes: Changes = Box::pin(tokio_stream::wrappers::UnboundedReceiverStream::new(rx));
        let alive = Arc::new(AtomicBool::new(true));
        let a = alive.clone();
        let until = Until {
            deadline: deadline_in(Duration::from_secs(3600)),
            still: Some(Box::new(move || a.load(Ordering::SeqCst))),
            last: Event::default().event("expired").data("log in again"),
        };
        let mut f = feed(&slots, changes, until);
        tx.send(change("one")).unwrap();
        assert!(wire(&f.next().await.unwrap()).contains("one"));
        // Logged out: the next change is not sent; the stream ends with its last words.
        alive.store(false, Ordering::SeqCst);
        tx.send(change("two")).unwrap();
        let last = wire(&f.next().await.unwrap());
        assert!(last.contains("expired") && !last.contains("two"), "{last}");
        assert!(f.next().await.is_none());

        // Logged out while nothing changes: the periodic re-check ends it.
        let alive = Arc::new(AtomicBool::new(true));
        let a = alive.clone();
        let (_tx, rx) = tokio::sync::mpsc::unbounded_channel::<Change>();
        let until = Until {
            deadline: deadline_in(Duration::from_secs(3600)),
            still: Some(Box::new(move || a.load(Ordering::SeqCst))),
            last: Event::default().event("expired").data("log in again"),
        };
        drop(f);
        let mut f = feed(
            &slots,
            Box::pin(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)),
            until,
        );
        alive.store(false, Ordering::SeqCst);
        let started = Instant::now();
        assert!(wire(&f.next().await.unwrap()).contains("expired"));
        assert!(started.elapsed() <= RECHECK);
    }
}
