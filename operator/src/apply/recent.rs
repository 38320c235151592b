//! Read-your-own-writes on top of the watch caches.
//!
//! A reconcile often runs again before the watch has delivered what the previous one wrote (its
//! own writes trigger it). Judged by the cache alone it would write everything again. So each
//! write is remembered, with the resourceVersion the API server gave it, and preferred to the
//! cache until the cache holds that version or a later one.
//!
//! resourceVersions are opaque by contract; an etcd-backed API server issues increasing
//! integers, and those are compared as such. Where a version is not an integer, a write is
//! preferred for at most [`TRUST`], and the reconciler looks again by then (see
//! [`RecentWrites::pending`]).
//!
//! A write is remembered under a [`Key`]: the tenant, the kind and the object's name (the same
//! key the watches derive from what they deliver, to tell the echo of our own write).
//!
//! Writes are kept as the typed objects they were (a Namespace, a TenantStatus, ...), not as
//! JSON: the reconciler asks on every pass, and a typed answer needs no encoding of the cached
//! object nor decoding of ours.

use std::{
    any::Any,
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

/// How long a write of ours is preferred to a cache that has not shown it yet.
pub const TRUST: Duration = Duration::from_secs(5);

/// One object of a tenant, or one part of the Tenant itself (`name` is then the part written:
/// `status`, `finalizers`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub tenant: String,
    pub kind: String,
    pub name: String,
}

impl Key {
    pub fn new(tenant: &str, kind: &str, name: &str) -> Self {
        Key {
            tenant: tenant.to_owned(),
            kind: kind.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The key of a typed object of `tenant`.
    pub fn of<K: kube::Resource<DynamicType = ()>>(tenant: &str, object: &K) -> Self {
        let name = object.meta().name.as_deref().unwrap_or_default();
        Key::new(tenant, &K::kind(&()), name)
    }
}

#[derive(Default)]
pub struct RecentWrites {
    entries: Mutex<HashMap<Key, Entry>>,
}

struct Entry {
    version: Option<String>,
    written: Box<dyn Any + Send + Sync>,
    at: Instant,
}

impl Entry {
    fn holds(&self) -> bool {
        self.at.elapsed() < TRUST
    }

    /// True when a cache at `cached` has caught up with this write.
    fn superseded_by(&self, cached: Option<&str>) -> bool {
        let number = |v: Option<&str>| v.and_then(|v| v.parse::<u64>().ok());
        match (number(cached), number(self.version.as_deref())) {
            (Some(cached), Some(written)) => cached >= written,
            _ => cached.is_some() && cached == self.version.as_deref(),
        }
    }
}

impl RecentWrites {
    /// What we know of an object: `cached` (at `cached_version`), unless we wrote it more
    /// recently than the cache shows. A key holds one type of object; asked for another, the
    /// cache answers.
    pub fn current<T: Clone + 'static>(
        &self,
        key: &Key,
        cached_version: Option<&str>,
        cached: Option<T>,
    ) -> Option<T> {
        let Ok(mut entries) = self.entries.lock() else {
            return cached;
        };
        match entries.get(key) {
            Some(e) if e.holds() && !e.superseded_by(cached_version) => {
                match e.written.downcast_ref::<T>() {
                    Some(written) => Some(written.clone()),
                    None => cached,
                }
            }
            Some(_) => {
                entries.remove(key);
                cached
            }
            None => cached,
        }
    }

    /// Remembers an object (or part of one) we just wrote, at the version the server returned.
    pub fn record<T: Send + Sync + 'static>(&self, key: Key, version: Option<String>, written: T) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(
                key,
                Entry {
                    version,
                    written: Box::new(written),
                    at: Instant::now(),
                },
            );
        }
    }

    /// True when the object under `key`, at `version`, is exactly what we wrote last: the
    /// watch echoing our own write. It tells the reconciler nothing it did not know (it wrote
    /// that), so it need not trigger another pass. Any other version (someone else's change,
    /// or the API server's own, like a quota's status) is news.
    pub fn is_echo(&self, key: &Key, version: Option<&str>) -> bool {
        version.is_some()
            && self.entries.lock().is_ok_and(|entries| {
                entries
                    .get(key)
                    .is_some_and(|e| e.version.as_deref() == version)
            })
    }

    /// True when a write for `tenant` is still preferred to the cache: look again after
    /// [`TRUST`], when the cache alone decides.
    pub fn pending(&self, tenant: &str) -> bool {
        self.entries
            .lock()
            .is_ok_and(|e| e.iter().any(|(k, v)| k.tenant == tenant && v.holds()))
    }

    /// Forgets everything of `tenant` (a tenant that is gone).
    pub fn forget(&self, tenant: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|k, _| k.tenant != tenant);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn k(tenant: &str, kind: &str, name: &str) -> Key {
        Key::new(tenant, kind, name)
    }

    fn age(recent: &RecentWrites, key: &Key) {
        if let Ok(mut entries) = recent.entries.lock()
            && let Some(e) = entries.get_mut(key)
        {
            e.at -= TRUST;
        }
    }

    #[test]
    fn only_the_version_we_wrote_is_an_echo() {
        let recent = RecentWrites::default();
        recent.record(k("t", "Namespace", "x"), Some("7".into()), json!({"v": 2}));
        assert!(recent.is_echo(&k("t", "Namespace", "x"), Some("7")));
        // Someone else's later change, an earlier state, another object, no version at all.
        assert!(!recent.is_echo(&k("t", "Namespace", "x"), Some("8")));
        assert!(!recent.is_echo(&k("t", "Namespace", "x"), Some("6")));
        assert!(!recent.is_echo(&k("t", "LimitRange", "x"), Some("7")));
        assert!(
            !recent.is_echo(&k("t", "Namespace", "y"), Some("7")),
            "another object of the kind (two RoleBindings of a tenant) is not ours"
        );
        assert!(!recent.is_echo(&k("t", "Namespace", "x"), None));
        recent.record(k("u", "Namespace", "x"), None, json!({}));
        assert!(!recent.is_echo(&k("u", "Namespace", "x"), None));
    }

    #[test]
    fn our_write_wins_until_the_cache_shows_it() {
        let recent = RecentWrites::default();
        recent.record(
            k("t", "ResourceQuota", "x"),
            Some("7".into()),
            json!({"v": 2}),
        );
        assert_eq!(
            recent.current(
                &k("t", "ResourceQuota", "x"),
                Some("5"),
                Some(json!({"v": 1}))
            ),
            Some(json!({"v": 2}))
        );
        assert_eq!(
            recent.current(&k("t", "ResourceQuota", "x"), None, None),
            Some(json!({"v": 2})),
            "create not yet seen"
        );
        assert!(recent.pending("t"));
        // The cache shows our write: the cache is the truth again and the entry is dropped.
        assert_eq!(
            recent.current(
                &k("t", "ResourceQuota", "x"),
                Some("7"),
                Some(json!({"v": 2, "s": 1}))
            ),
            Some(json!({"v": 2, "s": 1}))
        );
        assert!(!recent.pending("t"));
    }

    #[test]
    fn a_later_change_by_someone_else_wins_at_once() {
        let recent = RecentWrites::default();
        recent.record(
            k("t", "ResourceQuota", "x"),
            Some("7".into()),
            json!({"v": 2}),
        );
        // The quota controller wrote the status after our create.
        assert_eq!(
            recent.current(
                &k("t", "ResourceQuota", "x"),
                Some("9"),
                Some(json!({"v": 2, "status": 1}))
            ),
            Some(json!({"v": 2, "status": 1}))
        );
        assert!(!recent.pending("t"));
    }

    #[test]
    fn opaque_versions_fall_back_to_time() {
        let recent = RecentWrites::default();
        recent.record(k("t", "Namespace", "x"), Some("b".into()), json!("ours"));
        assert_eq!(
            recent.current(&k("t", "Namespace", "x"), Some("a"), Some(json!("cache"))),
            Some(json!("ours"))
        );
        assert_eq!(
            recent.current(&k("t", "Namespace", "x"), Some("b"), Some(json!("cache"))),
            Some(json!("cache"))
        );
    }

    #[test]
    fn after_a_while_the_cache_is_believed_whatever_it_says() {
        let recent = RecentWrites::default();
        recent.record(k("t", "LimitRange", "x"), Some("7".into()), json!({"v": 2}));
        age(&recent, &k("t", "LimitRange", "x"));
        assert!(!recent.pending("t"));
        // e.g. deleted by someone right after we created it
        assert_eq!(
            recent.current::<Value>(&k("t", "LimitRange", "x"), None, None),
            None
        );
    }

    #[test]
    fn forgetting_a_tenant_drops_only_its_entries() {
        let recent = RecentWrites::default();
        recent.record(k("a", "Tenant", "status"), None, json!(1));
        recent.record(k("ab", "Tenant", "status"), None, json!(1));
        recent.forget("a");
        assert!(!recent.pending("a"));
        assert!(recent.pending("ab"));
    }
}
