//! What a create may ask for, within the bounds a platform team sets ([`Limits`]): who may create
//! at all (`--creator-group`), how many tenants one owner may have, how large one tenant may be,
//! how often one user may create. Every refusal is 403 (429 for the rate) and says which limit
//! it hit, its value, and who can raise it.
//!
//! The cluster enforces the size limits too, at admission (the chart's
//! ValidatingAdmissionPolicy), for every client; the server checks first so that a user of the
//! CLI or the portal hears the limit in words rather than a policy expression.

use std::num::NonZeroU32;

use kubespaces_api::quantity;

use crate::{
    auth::Identity,
    config::Limits,
    error::ApiError,
    rate_limit::{Keyed, retry_after_secs},
};

/// Who can raise a limit: the platform team, by its admin group when there is one.
fn who_raises(admin_group: Option<&str>) -> String {
    match admin_group {
        Some(group) => format!("your platform team (the members of group {group:?})"),
        None => "your platform team".into(),
    }
}

/// `--creator-group`: only its members (and admins) may create.
pub fn may_create(
    limits: &Limits,
    admin_group: Option<&str>,
    caller: &Identity,
) -> Result<(), ApiError> {
    let groups = &limits.creator_groups;
    if caller.admin || groups.is_empty() || caller.groups.iter().any(|g| groups.contains(g)) {
        return Ok(());
    }
    let named = groups
        .iter()
        .map(|g| format!("{g:?}"))
        .collect::<Vec<_>>()
        .join(" or ");
    Err(ApiError::Forbidden(format!(
        "creating tenants is limited to members of group {named} (--creator-group); ask {} to \
         add you. Group membership is read from your login: log in again once you are added",
        who_raises(admin_group)
    )))
}

/// `--max-tenants-per-owner`: `owned` is how many the owner has now. Admins are the platform
/// team, so they may go beyond it (for a team that needs more).
pub fn within_count(
    limits: &Limits,
    admin_group: Option<&str>,
    caller: &Identity,
    owner: &str,
    owned: usize,
) -> Result<(), ApiError> {
    let max = limits.max_tenants_per_owner;
    if max == 0 || caller.admin || owned < max {
        return Ok(());
    }
    Err(ApiError::Forbidden(format!(
        "{owner} already owns {owned} tenant{}, the most one owner may have \
         (--max-tenants-per-owner {max}); delete one that is no longer needed (one being deleted \
         counts until it is gone), or ask {} to raise the limit",
        if owned == 1 { "" } else { "s" },
        who_raises(admin_group)
    )))
}

/// `--max-tenant-cpu`, `--max-tenant-memory`, `--max-tenant-storage`, for everyone (admission
/// refuses more for admins too). A value that is not a quantity passes: the CRD's validation
/// answers it, in its own words.
pub fn within_size(
    limits: &Limits,
    admin_group: Option<&str>,
    cpu: &str,
    memory: &str,
    storage: Option<&str>,
) -> Result<(), ApiError> {
    let fields = [
        ("cpu", Some(cpu), &limits.max_tenant_cpu, "--max-tenant-cpu"),
        (
            "memory",
            Some(memory),
            &limits.max_tenant_memory,
            "--max-tenant-memory",
        ),
        (
            "storage",
            storage,
            &limits.max_tenant_storage,
            "--max-tenant-storage",
        ),
    ];
    for (field, asked, max, flag) in fields {
        let (Some(asked), Some(max)) = (asked, max) else {
            continue;
        };
        match quantity::parse(asked) {
            Ok(value) if value > max.value() => {
                return Err(ApiError::Forbidden(format!(
                    "{field} {asked} is more than one tenant may have: the most is {max} ({flag}); \
                     ask for {max} or less, or ask {} to raise the limit",
                    who_raises(admin_group)
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// `--create-rate`, per user (the caller, whoever the tenant is for).
pub struct CreateRate {
    limiter: Option<Keyed<String>>,
    limits: Limits,
}

impl CreateRate {
    pub fn new(limits: &Limits) -> CreateRate {
        CreateRate {
            limiter: Keyed::new(limits.create_rate, None::<NonZeroU32>),
            limits: limits.clone(),
        }
    }

    /// Counts one create of `caller`'s.
    pub fn check(&self, admin_group: Option<&str>, caller: &Identity) -> Result<(), ApiError> {
        let Some(Err(wait)) = self.limiter.as_ref().map(|l| l.check(&caller.email)) else {
            return Ok(());
        };
        let secs = retry_after_secs(wait);
        Err(ApiError::TooMany {
            message: format!(
                "too many tenants created: the limit is {} per user (--create-rate {}); retry in \
                 {secs} s, or ask {} to raise the limit",
                self.limits.create_rate.describe(),
                self.limits.create_rate,
                who_raises(admin_group)
            ),
            retry_after: Some(secs),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::{Per, Rate};

    fn user(groups: &[&str]) -> Identity {
        Identity {
            email: "alice@example.com".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            admin: false,
            valid_until: u64::MAX,
        }
    }

    fn admin() -> Identity {
        Identity {
            admin: true,
            ..user(&["kubespaces-admins"])
        }
    }

    fn message(result: Result<(), ApiError>) -> (u16, String) {
        let e = result.unwrap_err();
        (e.status().as_u16(), e.to_string())
    }

    #[test]
    fn only_creator_group_members_and_admins_may_create() {
        let open = Limits::default();
        assert!(
            may_create(&open, None, &user(&[])).is_ok(),
            "no group set: anyone"
        );
        let closed = Limits {
            creator_groups: vec!["platform-users".into(), "ml".into()],
            ..Limits::default()
        };
        assert!(may_create(&closed, None, &user(&["ml"])).is_ok());
        assert!(may_create(&closed, None, &admin()).is_ok(), "admins always");
        let (code, text) = message(may_create(
            &closed,
            Some("kubespaces-admins"),
            &user(&["other"]),
        ));
        assert_eq!(code, 403);
        assert!(
            text.contains("limited to members of group \"platform-users\" or \"ml\""),
            "{text}"
        );
        assert!(
            text.contains("(the members of group \"kubespaces-admins\") to add you"),
            "{text}"
        );
        // Exact group names: no prefixes, no case folding.
        assert!(may_create(&closed, None, &user(&["platform-users-x", "ML"])).is_err());
    }

    #[test]
    fn an_owner_may_have_at_most_the_limit_unless_an_admin_creates() {
        let limits = Limits {
            max_tenants_per_owner: 2,
            ..Limits::default()
        };
        let alice = user(&[]);
        let owner = "alice@example.com";
        assert!(within_count(&limits, None, &alice, owner, 1).is_ok());
        let one = Limits {
            max_tenants_per_owner: 1,
            ..Limits::default()
        };
        let (_, text) = message(within_count(&one, None, &alice, owner, 1));
        assert!(text.contains("already owns 1 tenant, the most"), "{text}");
        let (code, text) = message(within_count(&limits, None, &alice, owner, 2));
        assert_eq!(code, 403);
        assert!(
            text.contains(
                "alice@example.com already owns 2 tenants, the most one owner may have \
                 (--max-tenants-per-owner 2)"
            ),
            "{text}"
        );
        assert!(text.contains("ask your platform team to raise"), "{text}");
        assert!(within_count(&limits, None, &admin(), owner, 9).is_ok());
        let unlimited = Limits {
            max_tenants_per_owner: 0,
            ..Limits::default()
        };
        assert!(within_count(&unlimited, None, &alice, owner, 1000).is_ok());
    }

    #[test]
    fn sizes_compare_as_quantities_not_strings() {
        let limits = Limits {
            max_tenant_cpu: Some("8".parse().unwrap()),
            max_tenant_memory: Some("32Gi".parse().unwrap()),
            max_tenant_storage: Some("100Gi".parse().unwrap()),
            ..Limits::default()
        };
        let ok = |cpu, mem, sto| within_size(&limits, None, cpu, mem, sto).is_ok();
        // At the limit, in other units, and below it.
        assert!(ok("8", "32Gi", Some("100Gi")));
        assert!(ok("8000m", "34359738368", Some("0.09765625Ti")));
        assert!(ok("500m", "1Gi", None));
        // "10" > "8" although it sorts before it; 33G < 32Gi < 35G.
        assert!(!ok("10", "1Gi", None));
        assert!(ok("1", "34G", None));
        assert!(!ok("1", "35G", None));
        assert!(!ok("1", "1Gi", Some("101Gi")));
        assert!(!ok("8001m", "1Gi", None));
        let (code, text) = message(within_size(
            &limits,
            Some("kubespaces-admins"),
            "1",
            "64Gi",
            None,
        ));
        assert_eq!(code, 403);
        assert!(
            text.contains("memory 64Gi is more than one tenant may have: the most is 32Gi (--max-tenant-memory)"),
            "{text}"
        );
        assert!(text.contains("kubespaces-admins"), "{text}");
        // Not a quantity: left to the CRD's validation, which says so in its words.
        assert!(ok("lots", "1Gi", None));
        // No limits set: anything.
        assert!(within_size(&Limits::default(), None, "1000", "1Ei", Some("1Ei")).is_ok());
    }

    #[test]
    fn creates_are_limited_per_user() {
        let limits = Limits {
            create_rate: Rate::new(2, Per::Minute),
            ..Limits::default()
        };
        let rate = CreateRate::new(&limits);
        let (alice, bob) = (
            user(&[]),
            Identity {
                email: "bob@example.com".into(),
                ..user(&[])
            },
        );
        assert!(rate.check(None, &alice).is_ok() && rate.check(None, &alice).is_ok());
        let e = rate.check(None, &alice).unwrap_err();
        assert_eq!(e.status().as_u16(), 429);
        assert!(
            matches!(
                e,
                ApiError::TooMany {
                    retry_after: Some(30),
                    ..
                }
            ),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(
            text.contains("the limit is 2 per minute per user (--create-rate 2/min)"),
            "{text}"
        );
        assert!(text.contains("retry in 30 s"), "{text}");
        assert!(rate.check(None, &bob).is_ok(), "bob has his own");
        let unlimited = CreateRate::new(&Limits {
            create_rate: Rate::Unlimited,
            ..Limits::default()
        });
        for _ in 0..100 {
            assert!(unlimited.check(None, &alice).is_ok());
        }
    }
}
