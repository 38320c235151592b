//! Who may create, how many tenants one owner may have, how large one tenant may be.

use std::time::Duration;

use kubespaces_acceptance::{
    Env,
    oidc::{Dex, TestIssuer, TestKey},
    wait_for,
};
use kubespaces_server::config::Limits;
use serde_json::json;

use crate::common::{
    assert_reached_the_cluster, call, claims, create, create_body, remove, server_for, server_with,
};

const CREATORS: &str = "kubespaces-creators";
const RAISE: &str = "ask your platform team (the members of group \"kubespaces-admins\")";

/// With --creator-group, a user outside the group is told which group and whom to ask; an
/// admin and a member of the group get past the gate; nothing is created for the refused.
#[tokio::test]
async fn only_the_creator_group_and_admins_may_create_tenants() {
    let env = Env::get();
    let dex = Dex::get();
    let member_tenant = "hu-member";
    remove(&env, &[member_tenant, "hu-outsider"]).await;
    let limits = Limits {
        creator_groups: vec![CREATORS.into()],
        ..Limits::default()
    };
    let server = server_with(&dex, limits.clone()).await;
    let alice = dex.token("alice@example.com").await;
    let refused = create(&server, &alice, "hu-outsider", "1", "1Gi").await;
    assert_eq!(refused.code, 403, "{:?}", refused.body);
    let e = refused.error();
    assert!(
        e.contains("creating tenants is limited to members of group \"kubespaces-creators\" (--creator-group)"),
        "{e}"
    );
    assert!(e.contains(&format!("{RAISE} to add you")), "{e}");
    let admin = dex.token("admin@example.com").await;
    assert_reached_the_cluster(
        &create(&server, &admin, "hu-outsider", "lots", "1Gi").await,
        "the admin, outside the creator group",
    );

    // Dex's users have no such group: a member's token comes from an issuer of the test's own.
    let key = TestKey::generate("creators");
    let issuer = TestIssuer::start(&[&key]).await;
    let server = server_for(&issuer.url, "kubespaces", limits).await;
    let token = |groups| key.sign(&claims(&issuer.url, "erin@example.com", groups, 600));
    let outsider = create(&server, &token(json!(["other"])), "hu-outsider", "1", "1Gi").await;
    assert_eq!(outsider.code, 403, "{:?}", outsider.body);
    let member = create(
        &server,
        &token(json!(["other", CREATORS])),
        member_tenant,
        "1",
        "1Gi",
    )
    .await;
    assert_eq!(member.code, 201, "{:?}", member.body);
    let tenants = env.tenants().await;
    assert_eq!(
        tenants.get(member_tenant).await.unwrap().spec.owner,
        "erin@example.com"
    );
    assert!(
        tenants.get_opt("hu-outsider").await.unwrap().is_none(),
        "the refused creates created nothing"
    );
    remove(&env, &[member_tenant]).await;
}

/// With --max-tenants-per-owner 1: dave's second tenant is refused, naming the limit and the
/// fix; an admin may still create for him; once his first is gone, he has room again.
#[tokio::test]
async fn an_owner_may_have_at_most_the_maximum_number_of_tenants() {
    let env = Env::get();
    let dex = Dex::get();
    let (first, second) = ("hu-dave-1", "hu-dave-2");
    remove(&env, &[first, second]).await;
    let server = server_with(
        &dex,
        Limits {
            max_tenants_per_owner: 1,
            ..Limits::default()
        },
    )
    .await;
    let dave = dex.token("dave@example.com").await;
    let admin = dex.token("admin@example.com").await;
    let mine = call(
        &server,
        reqwest::Method::GET,
        "/api/v1/tenants",
        Some(&dave),
        None,
    )
    .await;
    assert_eq!(
        mine.body["items"].as_array().map(Vec::len),
        Some(0),
        "dave owns no tenant before the test: {:?}",
        mine.body
    );
    let created = create(&server, &dave, first, "1", "1Gi").await;
    assert_eq!(created.code, 201, "{:?}", created.body);
    wait_for(
        "dave's tenant in the cache",
        Duration::from_secs(10),
        || async {
            let path = format!("/api/v1/tenants/{first}");
            (call(&server, reqwest::Method::GET, &path, Some(&dave), None)
                .await
                .code
                == 200)
                .then_some(())
        },
    )
    .await;
    let refused = create(&server, &dave, second, "1", "1Gi").await;
    assert_eq!(refused.code, 403, "{:?}", refused.body);
    let e = refused.error();
    assert!(
        e.contains("dave@example.com already owns 1 tenant, the most one owner may have (--max-tenants-per-owner 1)"),
        "{e}"
    );
    assert!(e.contains("delete one that is no longer needed"), "{e}");
    assert!(e.contains(RAISE), "{e}");
    assert!(env.tenants().await.get_opt(second).await.unwrap().is_none());
    // The platform team may give him more.
    let for_dave =
        json!({"name": second, "cpu": "lots", "memory": "1Gi", "owner": "dave@example.com"});
    assert_reached_the_cluster(
        &create_body(&server, &admin, for_dave).await,
        "admin for dave",
    );

    // Deleting his first makes room (once it is gone: until then it still counts).
    remove(&env, &[first]).await;
    wait_for(
        "room for dave's next tenant",
        Duration::from_secs(30),
        || async {
            let answer = create(&server, &dave, second, "lots", "1Gi").await;
            (answer.code == 422).then_some(())
        },
    )
    .await;
}

/// With maxima for CPU, memory and storage: a create asking for more is refused, for users and
/// admins alike (admission refuses it for everyone), naming the field, the maximum and who can
/// raise it; quantities compare by value, so the maximum in other units gets past the bound.
#[tokio::test]
async fn a_tenant_larger_than_the_maxima_is_refused_naming_the_field() {
    let env = Env::get();
    let dex = Dex::get();
    let name = "hu-too-big";
    let server = server_with(
        &dex,
        Limits {
            max_tenant_cpu: Some("4".parse().unwrap()),
            max_tenant_memory: Some("8Gi".parse().unwrap()),
            max_tenant_storage: Some("20Gi".parse().unwrap()),
            ..Limits::default()
        },
    )
    .await;
    let alice = dex.token("alice@example.com").await;
    let admin = dex.token("admin@example.com").await;
    for token in [&alice, &admin] {
        for (resources, says) in [
            (
                json!({"cpu": "5", "memory": "1Gi"}),
                "cpu 5 is more than one tenant may have: the most is 4 (--max-tenant-cpu)",
            ),
            (
                json!({"cpu": "4001m", "memory": "1Gi"}),
                "cpu 4001m is more than one tenant may have: the most is 4 (--max-tenant-cpu)",
            ),
            (
                json!({"cpu": "1", "memory": "8193Mi"}),
                "memory 8193Mi is more than one tenant may have: the most is 8Gi (--max-tenant-memory)",
            ),
            (
                json!({"cpu": "1", "memory": "1Gi", "storage": "21Gi"}),
                "storage 21Gi is more than one tenant may have: the most is 20Gi (--max-tenant-storage)",
            ),
        ] {
            let mut body = resources.clone();
            body["name"] = json!(name);
            let refused = create_body(&server, token, body).await;
            assert_eq!(refused.code, 403, "{resources}: {:?}", refused.body);
            let e = refused.error();
            assert!(e.contains(says), "{resources}: {e}");
            assert!(e.contains(&format!("{RAISE} to raise the limit")), "{e}");
        }
    }
    assert!(env.tenants().await.get_opt(name).await.unwrap().is_none());
    // Exactly the maxima, written otherwise, get past the bound (the CRD then refuses the
    // impossible memory, so nothing is created).
    let at_most = json!({"name": name, "cpu": "4000m", "memory": "lots", "storage": "20480Mi"});
    let answer = create_body(&server, &alice, at_most).await;
    assert_eq!(answer.code, 422, "{:?}", answer.body);
}
