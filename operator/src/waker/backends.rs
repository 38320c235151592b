//! Where each tenant's control plane answers: its Service's cluster IP, looked up once and kept.
//! A lookup per connection would put the cluster DNS (a search-list walk, and on a lost UDP
//! packet the resolver's 5 s retry) on every request of every awake tenant.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::names;

/// How long a looked-up address is used before it is looked up again. A cluster IP never
/// changes for the life of its Service; this only bounds how long a tenant deleted and made
/// again under its name is looked for at the old one (a failed connect forgets it at once).
const KEPT_FOR: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
#[error("tenant {0} has no control plane Service")]
pub struct NoSuchTenant(String);

pub struct Backends {
    port: u16,
    known: Mutex<HashMap<String, (SocketAddr, Instant)>>,
}

impl Backends {
    pub fn new(port: u16) -> Self {
        Self {
            port,
            known: Mutex::new(HashMap::new()),
        }
    }

    /// The address of `tenant`'s control plane Service (kube-proxy refuses a connection to it at
    /// once while it has no ready pod).
    pub async fn address(&self, tenant: &str) -> Result<SocketAddr, NoSuchTenant> {
        if let Some(address) = self.kept(tenant, Instant::now()) {
            return Ok(address);
        }
        let host = format!(
            "{}.{}.svc:{}",
            names::control_plane::RELEASE,
            names::namespace(tenant),
            self.port
        );
        let address = tokio::net::lookup_host(&host)
            .await
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| NoSuchTenant(tenant.to_owned()))?;
        self.keep(tenant, address, Instant::now());
        Ok(address)
    }

    /// Drops what is known of `tenant` (a connection to it failed: its Service may be new).
    pub fn forget(&self, tenant: &str) {
        self.lock().remove(tenant);
    }

    fn kept(&self, tenant: &str, now: Instant) -> Option<SocketAddr> {
        match self.lock().get(tenant) {
            Some((address, at)) if now.duration_since(*at) < KEPT_FOR => Some(*address),
            _ => None,
        }
    }

    fn keep(&self, tenant: &str, address: SocketAddr, now: Instant) {
        let mut known = self.lock();
        // Tenants come and go: what has expired goes with the next lookup.
        known.retain(|_, (_, at)| now.duration_since(*at) < KEPT_FOR);
        known.insert(tenant.to_owned(), (address, now));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (SocketAddr, Instant)>> {
        // A panic while holding this lock leaves a plain map, still whole.
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_kept_until_it_expires_or_is_forgotten() {
        let backends = Backends::new(443);
        let address: SocketAddr = "10.96.0.20:443".parse().unwrap();
        let t0 = Instant::now();
        backends.keep("team-a", address, t0);
        assert_eq!(backends.kept("team-a", t0 + KEPT_FOR / 2), Some(address));
        assert_eq!(backends.kept("team-a", t0 + KEPT_FOR), None);
        assert_eq!(backends.kept("team-b", t0), None);
        backends.forget("team-a");
        assert_eq!(backends.kept("team-a", t0), None);
    }

    #[test]
    fn expired_addresses_go_with_the_next_lookup() {
        let backends = Backends::new(443);
        let t0 = Instant::now();
        backends.keep("gone", "10.96.0.21:443".parse().unwrap(), t0);
        backends.keep("team-a", "10.96.0.20:443".parse().unwrap(), t0 + KEPT_FOR);
        assert!(!backends.lock().contains_key("gone"));
    }
}
