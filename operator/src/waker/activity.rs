//! The tenant APIs' activity, as connections pass: noted in memory at once, written to each
//! tenant's activity Lease ([`names::activity_lease`], made by the operator; the waker only
//! renews it) at most once per debounce period, and at once when a connection finds its tenant
//! asleep (the write is what wakes it: the operator watches these Leases).

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::{apimachinery::pkg::apis::meta::v1::MicroTime, jiff::Timestamp};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;
use tracing::warn;

use crate::names;

/// The field manager of the waker's Lease writes.
pub const FIELD_MANAGER: &str = "kubespaces-waker";
/// The `app.kubernetes.io/managed-by` value of activity Leases, which the operator watches.
pub const MANAGED_BY: &str = "kubespaces-waker";

pub struct Activity {
    leases: Api<Lease>,
    identity: String,
    debounce: Duration,
    /// Per tenant: the last activity seen, and when its Lease was last written.
    seen: Mutex<HashMap<String, Seen>>,
}

#[derive(Clone, Copy)]
struct Seen {
    at: Timestamp,
    written: Option<Instant>,
    pending: bool,
}

impl Activity {
    pub fn new(leases: Api<Lease>, identity: String, debounce: Duration) -> Self {
        Self {
            leases,
            identity,
            debounce,
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Notes activity on `tenant`'s API now; written by [`Activity::flush`].
    pub fn touch(&self, tenant: &str) {
        if let Ok(mut seen) = self.seen.lock() {
            let entry = seen.entry(tenant.to_owned()).or_insert(Seen {
                at: Timestamp::now(),
                written: None,
                pending: true,
            });
            entry.at = Timestamp::now();
            entry.pending = true;
        }
    }

    /// Writes `tenant`'s activity now (a connection waits for it to wake).
    pub async fn wake(&self, tenant: &str) -> Result<(), kube::Error> {
        self.touch(tenant);
        self.write(tenant, Timestamp::now()).await
    }

    /// Writes the activity noted since the last write of each tenant whose last write is at
    /// least a debounce period old, or of every tenant (`all`: before the process ends).
    pub async fn flush(&self, all: bool) {
        let due: Vec<(String, Timestamp)> = match self.seen.lock() {
            Ok(seen) => seen
                .iter()
                .filter(|(_, s)| s.pending)
                .filter(|(_, s)| all || s.written.is_none_or(|w| w.elapsed() >= self.debounce))
                .map(|(t, s)| (t.clone(), s.at))
                .collect(),
            Err(_) => return,
        };
        for (tenant, at) in due {
            match self.write(&tenant, at).await {
                Ok(()) => {}
                // No Lease: the tenant is gone (or not made yet); nothing is kept for it.
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    if let Ok(mut seen) = self.seen.lock() {
                        seen.remove(&tenant);
                    }
                }
                Err(error) => warn!(%tenant, %error, "could not record the tenant API's activity"),
            }
        }
    }

    async fn write(&self, tenant: &str, at: Timestamp) -> Result<(), kube::Error> {
        let name = names::activity_lease(tenant);
        // A merge patch, which never creates: a Lease the teardown deleted stays gone. Every
        // replica writes it; the latest renew time wins.
        let renew = json!({"spec": {
            "holderIdentity": self.identity,
            "renewTime": MicroTime(at),
        }});
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        self.leases
            .patch(&name, &params, &Patch::Merge(&renew))
            .await?;
        if let Ok(mut seen) = self.seen.lock()
            && let Some(s) = seen.get_mut(tenant)
        {
            s.written = Some(Instant::now());
            // Activity noted while the write was under way stays pending.
            s.pending = s.at > at;
        }
        Ok(())
    }

    /// Forgets tenants with no activity for a long while, so memory follows the live tenants.
    pub fn forget_older_than(&self, age: Duration) {
        let Ok(span) = k8s_openapi::jiff::SignedDuration::try_from(age) else {
            return;
        };
        let cutoff = Timestamp::now() - span;
        if let Ok(mut seen) = self.seen.lock() {
            seen.retain(|_, s| s.pending || s.at > cutoff);
        }
    }
}
