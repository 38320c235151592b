//! Field rules shared by validation and the data source. They mirror the Tenant CRD's
//! admission rules (operator `api::schema` and `names`) so a plan fails where
//! `kubectl apply` would, with the same advice, but before anything is created.

use kubespaces_api::{names, quantity};

pub fn tenant_name(name: &str) -> Result<(), String> {
    let max = names::MAX_TENANT_NAME_LEN;
    let ok_chars = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let starts = name.bytes().next().is_some_and(|b| b.is_ascii_lowercase());
    let ends = name.bytes().last().is_some_and(|b| b != b'-');
    if name.len() > max {
        Err(format!(
            "{name:?} is {} characters; a tenant name may have at most {max}, so that every name derived from it fits in 63 (the longest: {})",
            name.len(),
            names::control_plane_cluster_role("<name>"),
        ))
    } else if !(ok_chars && starts && ends) {
        Err(format!(
            "{name:?} is not a DNS label: start with a lowercase letter, then use lowercase letters, digits or '-', and end with a letter or digit"
        ))
    } else {
        Ok(())
    }
}

pub fn email(owner: &str) -> Result<(), String> {
    let bad = || {
        Err(format!(
            "{owner:?} is not an email address such as alice@example.com"
        ))
    };
    if owner.len() > 254 || owner.chars().any(char::is_whitespace) {
        return bad();
    }
    match owner.split_once('@') {
        Some((local, domain))
            if !local.is_empty()
                && !domain.contains('@')
                && domain
                    .split_once('.')
                    .is_some_and(|(a, b)| !a.is_empty() && !b.is_empty()) =>
        {
            Ok(())
        }
        _ => bad(),
    }
}

pub fn deletion_policy(policy: &str) -> Result<(), String> {
    match policy {
        "Delete" | "Orphan" => Ok(()),
        _ => Err(format!(
            "{policy:?} is not a deletion policy: use \"Delete\" or \"Orphan\""
        )),
    }
}

pub fn positive_quantity(text: &str) -> Result<(), String> {
    match quantity::parse(text) {
        Ok(q) if q.is_positive() => Ok(()),
        Ok(_) => Err(format!("{text:?} must be greater than zero")),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_crd_rule() {
        let longest = "a".repeat(names::MAX_TENANT_NAME_LEN);
        for ok in ["a", "team-atlas", "t1", &longest] {
            assert_eq!(tenant_name(ok), Ok(()), "{ok}");
        }
        for bad in ["", "1team", "-a", "a-", "Team", "team_atlas", "team.atlas"] {
            assert!(tenant_name(bad).is_err(), "{bad}");
        }
        let long = "a".repeat(names::MAX_TENANT_NAME_LEN + 1);
        assert!(tenant_name(&long).unwrap_err().contains("at most 31"));
    }

    #[test]
    fn emails() {
        assert_eq!(email("alice@example.com"), Ok(()));
        for bad in [
            "alice",
            "@example.com",
            "alice@",
            "alice@example",
            "a b@example.com",
            "a@b@c.d",
        ] {
            assert!(email(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn quantities_must_be_valid_and_positive() {
        assert_eq!(positive_quantity("500m"), Ok(()));
        assert_eq!(positive_quantity("16Gi"), Ok(()));
        assert!(
            positive_quantity("0")
                .unwrap_err()
                .contains("greater than zero")
        );
        assert!(positive_quantity("-1Gi").is_err());
        assert!(positive_quantity("eight").is_err());
    }
}
