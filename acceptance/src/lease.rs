//! How a leader-election Lease changes hands, read from the Lease's own writes (a watch that sees
//! every one) rather than from how long the handover took: a replica may take the Lease only once
//! it has expired (`renewTime + leaseDurationSeconds` of its holder's last renewal), or earlier
//! when its holder handed it back. So a new holder whose `acquireTime` is before that expiry
//! proves a hand-back, and one after it proves that a killed leader's Lease was respected. (Who
//! cleared the holder says nothing: a standby clears an expired Lease too, before taking it.)

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::{
    Api,
    api::{WatchEvent, WatchParams},
};

/// One handover, as the Lease's writes show it.
#[derive(Debug)]
pub struct Handover {
    /// Who holds the Lease now.
    pub holder: String,
    /// Whether the new holder took it before the old holder's last renewal had expired
    /// (`renewTime + leaseDurationSeconds`): only possible when it was handed back.
    pub taken_before_expiry: bool,
}

fn holder(lease: &Lease) -> Option<String> {
    lease
        .spec
        .as_ref()?
        .holder_identity
        .clone()
        .filter(|h| !h.is_empty())
}

/// When the Lease, as `lease` wrote it, expires: its renewal plus its duration.
fn expiry(lease: &Lease) -> Option<jiff::Timestamp> {
    let spec = lease.spec.as_ref()?;
    let seconds = spec.lease_duration_seconds?;
    spec.renew_time
        .as_ref()?
        .0
        .checked_add(jiff::SignedDuration::from_secs(seconds.into()))
        .ok()
}

/// Runs `act` (which makes the current holder `from` go away) and follows the Lease `name` until
/// another identity holds it, or panics after `timeout`. The watch starts before `act`, from the
/// Lease as read then, so no write in between is missed.
pub async fn handover(
    leases: &Api<Lease>,
    name: &str,
    from: &str,
    act: impl AsyncFnOnce(),
    timeout: Duration,
) -> Handover {
    let mut last = leases.get(name).await.expect("read the Lease");
    assert_eq!(
        holder(&last).as_deref(),
        Some(from),
        "{from} holds the Lease {name}"
    );
    let version = last
        .metadata
        .resource_version
        .clone()
        .expect("a resourceVersion");
    let params = WatchParams::default().fields(&format!("metadata.name={name}"));
    let mut events = leases
        .watch(&params, &version)
        .await
        .expect("watch the Lease")
        .boxed();
    act().await;
    let follow = async {
        while let Some(event) = events.try_next().await.expect("the Lease's watch") {
            let lease = match event {
                WatchEvent::Added(l) | WatchEvent::Modified(l) => l,
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Deleted(_) => panic!("the Lease {name} was deleted"),
                WatchEvent::Error(e) => panic!("the Lease's watch: {e}"),
            };
            match holder(&lease) {
                None => {}
                Some(h) if h == from => last = lease,
                Some(h) => {
                    let acquired = lease
                        .spec
                        .as_ref()
                        .and_then(|s| s.acquire_time.as_ref())
                        .map(|t| t.0);
                    let taken_before_expiry = match (acquired, expiry(&last)) {
                        (Some(acquired), Some(expiry)) => acquired < expiry,
                        _ => false,
                    };
                    return Handover {
                        holder: h,
                        taken_before_expiry,
                    };
                }
            }
        }
        panic!("the Lease's watch ended before another replica took {name}")
    };
    tokio::time::timeout(timeout, follow)
        .await
        .unwrap_or_else(|_| panic!("no other replica took the Lease {name} within {timeout:?}"))
}
