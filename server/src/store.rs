//! The watch cache every read is served from (a kube-rs reflector over all Tenants), and a
//! broadcast of the changes it sees for the live stream. Lists are filtered from memory: a
//! request never turns into an API call to list tenants.

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use kube::{
    Api, Client, ResourceExt,
    runtime::{
        WatchStreamExt,
        reflector::{self, Store},
        watcher,
    },
};
use kubespaces_api::api::Tenant;
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
        let (store, writer) = reflector::store();
        let (changes, _) = broadcast::channel(1024);
        let sender = changes.clone();
        let api: Api<Tenant> = Api::all(client);
        let stream = reflector::reflector(writer, watcher(api, watcher::Config::default()))
            .default_backoff();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(watcher::Event::Apply(t)) => {
                        let tenant = Arc::new(t);
                        let _ = sender.send(Change {
                            kind: "applied",
                            tenant,
                        });
                    }
                    Ok(watcher::Event::Delete(t)) => {
                        let _ = sender.send(Change {
                            kind: "deleted",
                            tenant: Arc::new(t),
                        });
                    }
                    // A relist: the store is replaced; streams resend what they see.
                    Ok(watcher::Event::InitApply(t)) => {
                        let _ = sender.send(Change {
                            kind: "applied",
                            tenant: Arc::new(t),
                        });
                    }
                    Ok(_) => {}
                    Err(e) => warn!(error = %e, "tenant watch failed; retrying with backoff"),
                }
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
