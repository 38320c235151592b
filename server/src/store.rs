//! The watch cache every read is served from (a kube-rs reflector over all Tenants), and a
//! broadcast of the changes it sees for the live stream. Lists are filtered from memory: a
//! request never turns into an API call to list tenants.

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use kube::{
    Api, Client, ResourceExt,
    core::DeserializeGuard,
    runtime::{
        WatchStreamExt,
        reflector::{self, Store},
        watcher,
    },
};
use kubespaces_api::api::{Tenant, TenantSpec};
use tokio::sync::broadcast;
use tracing::{error, warn};

/// One change, as the live stream sends it.
#[derive(Debug, Clone)]
pub struct Change {
    /// `applied` (created or changed) or `deleted`.
    pub kind: &'static str,
    pub tenant: Arc<Tenant>,
}

#[derive(Clone)]
pub struct Tenants {
    store: Store<Tenant>,
    changes: broadcast::Sender<Change>,
}

impl Tenants {
    /// Starts the watch; the returned cache fills in the background (see [`Tenants::ready`]).
    pub fn start(client: Client) -> Tenants {
        let (store, mut writer) = reflector::store();
        let (changes, _) = broadcast::channel(1024);
        let sender = changes.clone();
        // Guarded: a Tenant this version cannot read (stored under another schema) must not fail
        // the list that fills the cache, or the server would never be ready.
        let api: Api<DeserializeGuard<Tenant>> = Api::all(client);
        let stream = watcher(api, watcher::Config::default()).default_backoff();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let event = match event.map(readable) {
                    Ok(Some(event)) => event,
                    Ok(None) => continue,
                    Err(e) => {
                        warn!(error = %e, "tenant watch failed; retrying with backoff");
                        continue;
                    }
                };
                // The cache first, then the broadcast: a stream that sees a change finds it
                // in the cache.
                writer.apply_watcher_event(&event);
                let change = |kind, t: &Tenant| Change {
                    kind,
                    tenant: Arc::new(t.clone()),
                };
                let sent = match &event {
                    // InitApply: a relist; the store is replaced, streams resend what they see.
                    watcher::Event::Apply(t) | watcher::Event::InitApply(t) => change("applied", t),
                    watcher::Event::Delete(t) => change("deleted", t),
                    watcher::Event::Init | watcher::Event::InitDone => continue,
                };
                let _ = sender.send(sent);
            }
            error!("the tenant watch ended");
        });
        Tenants { store, changes }
    }

    /// Waits until the first list has filled the cache.
    pub async fn ready(&self) -> bool {
        self.store.wait_until_ready().await.is_ok()
    }

    /// True once the first list has filled the cache (the readiness probe).
    pub fn is_ready(&self) -> bool {
        futures::FutureExt::now_or_never(self.store.wait_until_ready()).is_some_and(|r| r.is_ok())
    }

    /// The tenants `visible` admits, sorted by name.
    pub fn list(&self, visible: impl Fn(&Tenant) -> bool) -> Vec<Arc<Tenant>> {
        let mut tenants: Vec<Arc<Tenant>> = self
            .store
            .state()
            .into_iter()
            .filter(|t| visible(t))
            .collect();
        tenants.sort_by_key(|t| t.name_any());
        tenants
    }

    pub fn get(&self, name: &str) -> Option<Arc<Tenant>> {
        self.store.get(&reflector::ObjectRef::new(name))
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Waits, at most `within`, until the cache holds `written` (by uid): a read this server
    /// answers right after its own create (`kubespaces tenant create` then `get`) must find the
    /// tenant. `changes` is subscribed before the write, so its change cannot slip by; the
    /// reflector fills the cache before the change is broadcast. False when the time ran out.
    pub async fn caught_up(
        &self,
        written: &Tenant,
        changes: &mut broadcast::Receiver<Change>,
        within: Duration,
    ) -> bool {
        let (name, uid) = (written.name_any(), written.uid());
        let held = || self.get(&name).is_some_and(|t| t.uid() == uid);
        let caught = async {
            while !held() {
                match changes.recv().await {
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return false,
                }
            }
            true
        };
        tokio::time::timeout(within, caught).await.unwrap_or(false)
    }
}

/// The event with every Tenant this version cannot read kept out of the cache: not listed, and
/// a readable one that becomes unreadable leaves it (a `Delete` of its name), so that nobody is
/// shown a state the server can no longer vouch for. Each is logged.
fn readable(event: watcher::Event<DeserializeGuard<Tenant>>) -> Option<watcher::Event<Tenant>> {
    // The Tenant as read, or one holding only the unreadable object's metadata (the cache keys
    // by its name), and whether it could be read.
    let read = |guard: DeserializeGuard<Tenant>| match guard.0 {
        Ok(tenant) => (tenant, true),
        Err(invalid) => {
            let name = invalid.metadata.name.clone().unwrap_or_default();
            warn!(tenant = %name, error = %invalid.error, "cannot read Tenant; it is left out");
            let mut gone = Tenant::new(&name, TenantSpec::new("", "0", "0", None));
            gone.metadata = invalid.metadata;
            (gone, false)
        }
    };
    Some(match event {
        watcher::Event::Apply(guard) => match read(guard) {
            (tenant, true) => watcher::Event::Apply(tenant),
            (gone, false) => watcher::Event::Delete(gone),
        },
        watcher::Event::Delete(guard) => watcher::Event::Delete(read(guard).0),
        // An unreadable one is simply not in the new cache (None: no event at all, since an
        // `Init` here would start the relist over).
        watcher::Event::InitApply(guard) => match read(guard) {
            (tenant, true) => watcher::Event::InitApply(tenant),
            (_, false) => return None,
        },
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Tenant as the API server holds it, with `deletion_policy` (a newer version's value
    /// makes it unreadable here).
    fn stored(name: &str, deletion_policy: &str) -> DeserializeGuard<Tenant> {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kubespaces.io/v1alpha1", "kind": "Tenant",
            "metadata": {"name": name, "uid": format!("uid-{name}")},
            "spec": {"owner": "uma@example.com", "resources": {"cpu": "1", "memory": "1Gi"},
                     "deletionPolicy": deletion_policy}
        }))
        .expect("a guard takes any object")
    }

    #[test]
    fn a_tenant_this_version_cannot_read_is_kept_out_of_the_cache() {
        let name = |e: &watcher::Event<Tenant>| match e {
            watcher::Event::Apply(t) | watcher::Event::InitApply(t) | watcher::Event::Delete(t) => {
                t.name_any()
            }
            _ => String::new(),
        };
        // Read: passed on as it came.
        let event = readable(watcher::Event::InitApply(stored("ok", "Delete")));
        assert!(matches!(event, Some(watcher::Event::InitApply(_))));
        // Unreadable in a relist: not in the new cache, and the relist goes on (no `Init`).
        assert!(readable(watcher::Event::InitApply(stored("newer", "Archive"))).is_none());
        // Changed into something unreadable: out of the cache, by its name.
        let event = readable(watcher::Event::Apply(stored("newer", "Archive")));
        assert!(matches!(event, Some(watcher::Event::Delete(_))));
        assert_eq!(event.as_ref().map(name).as_deref(), Some("newer"));
        let event = readable(watcher::Event::Apply(stored("ok", "Orphan")));
        assert!(matches!(event, Some(watcher::Event::Apply(_))));
        assert!(matches!(
            readable(watcher::Event::InitDone),
            Some(watcher::Event::InitDone)
        ));
    }
}
