//! The apply/refresh behaviour, against an in-memory store with paused time: no cluster,
//! no real waiting.

use std::sync::Mutex;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kubespaces_api::api::{TenantSpec, TenantStatus};

use super::*;

/// One tenant slot. The "operator" marks it Ready at the current generation once
/// `ready_after` GETs have happened, and lets it vanish `gone_after` GETs after a delete.
#[derive(Default)]
struct Fake {
    tenant: Option<Tenant>,
    gets: u32,
    ready_after: Option<u32>,
    gone_after: Option<u32>,
    deleting_since: Option<u32>,
    fail: bool,
    exists_already: bool,
}

struct FakeStore(Mutex<Fake>);

impl FakeStore {
    fn new(f: Fake) -> Self {
        Self(Mutex::new(f))
    }
    fn gets(&self) -> u32 {
        self.0.lock().unwrap().gets
    }
}

fn set_status(t: &mut Tenant, phase: &str, ready: bool) {
    let generation = t.metadata.generation;
    t.status = Some(TenantStatus {
        phase: Some(phase.into()),
        observed_generation: generation,
        conditions: vec![Condition {
            type_: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            observed_generation: generation,
            reason: phase.into(),
            message: format!("tenant is {phase}"),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::UNIX_EPOCH,
            ),
        }],
        ..TenantStatus::default()
    });
}

fn conflict() -> StoreError {
    StoreError::Api(kube::Error::Api(
        kube::core::Status::failure("exists", "AlreadyExists")
            .with_code(409)
            .boxed(),
    ))
}

#[tonic::async_trait]
impl TenantStore for FakeStore {
    async fn get(&self, _name: &str) -> Result<Option<Tenant>, StoreError> {
        let mut f = self.0.lock().unwrap();
        f.gets += 1;
        let gets = f.gets;
        if let (Some(since), Some(after)) = (f.deleting_since, f.gone_after)
            && gets >= since + after
        {
            f.tenant = None;
        }
        let (ready_after, fail) = (f.ready_after, f.fail);
        if let Some(t) = f.tenant.as_mut() {
            if fail {
                set_status(t, "Failed", false);
            } else if ready_after.is_some_and(|n| gets >= n) {
                set_status(t, "Ready", true);
            }
        }
        Ok(f.tenant.clone())
    }

    async fn create(&self, tenant: &Tenant) -> Result<Tenant, StoreError> {
        let mut f = self.0.lock().unwrap();
        if f.exists_already {
            return Err(conflict());
        }
        let mut t = tenant.clone();
        t.metadata.generation = Some(1);
        f.tenant = Some(t.clone());
        Ok(t)
    }

    async fn patch_spec(&self, _name: &str, spec: &TenantSpec) -> Result<Tenant, StoreError> {
        let mut f = self.0.lock().unwrap();
        let t = f.tenant.as_mut().expect("exists");
        t.spec = spec.clone();
        t.metadata.generation = t.metadata.generation.map(|g| g + 1);
        f.gets = 0;
        Ok(f.tenant.clone().expect("exists"))
    }

    async fn delete(&self, _name: &str) -> Result<(), StoreError> {
        let mut f = self.0.lock().unwrap();
        f.deleting_since = Some(f.gets);
        Ok(())
    }

    async fn kubeconfig(&self, tenant: &Tenant) -> Result<Option<String>, StoreError> {
        Ok(tenant.is_ready().then(|| "apiVersion: v1\n".to_owned()))
    }
}

fn planned(overrides: &[(&str, Value)]) -> Value {
    crate::tenant::fixtures::planned_state(overrides)
}

/// A store holding `team-atlas` as `create` left it, Ready (the "operator" answers the first
/// GET), and the state `create` returned.
async fn created(fake: Fake) -> (FakeStore, Value) {
    let store = FakeStore::new(Fake {
        ready_after: Some(1),
        ..fake
    });
    let state = create(&store, &planned(&[]), &CancellationToken::new())
        .await
        .state;
    (store, state)
}

fn timeouts(op: &str, d: &str) -> (&'static str, Value) {
    (
        "timeouts",
        Value::object([(op.to_owned(), Value::string(d))]),
    )
}

#[tokio::test(start_paused = true)]
async fn create_waits_until_ready_and_returns_a_wholly_known_state() {
    let store = FakeStore::new(Fake {
        ready_after: Some(3),
        ..Fake::default()
    });
    let out = create(&store, &planned(&[]), &CancellationToken::new()).await;
    assert_eq!(out.diags, vec![]);
    assert_eq!(out.state.get("phase"), &Value::string("Ready"));
    assert_eq!(
        out.state.get("kubeconfig"),
        &Value::string("apiVersion: v1\n")
    );
    assert!(out.state.is_wholly_known());
    assert_eq!(store.gets(), 3);
}

#[tokio::test(start_paused = true)]
async fn create_timeout_returns_the_object_with_an_error_so_terraform_taints_it() {
    let store = FakeStore::new(Fake::default());
    let p = planned(&[timeouts("create", "10s")]);
    let started = Instant::now();
    let out = create(&store, &p, &CancellationToken::new()).await;
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    assert_eq!(out.diags.len(), 1);
    assert!(out.diags[0].summary.contains("Timed out"));
    assert!(
        out.diags[0].detail.contains("Ready"),
        "{}",
        out.diags[0].detail
    );
    assert_eq!(
        out.state.get("name"),
        &Value::string("team-atlas"),
        "not null: no leak"
    );
    assert!(out.state.is_wholly_known());
}

#[tokio::test(start_paused = true)]
async fn create_without_waiting_returns_at_once() {
    let store = FakeStore::new(Fake::default());
    let out = create(
        &store,
        &planned(&[("wait_for_ready", Value::Bool(false))]),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(out.diags, vec![]);
    assert_eq!(store.gets(), 0);
    assert!(out.state.get("phase").is_null());
    assert!(out.state.is_wholly_known());
}

#[tokio::test(start_paused = true)]
async fn create_of_an_existing_tenant_points_at_name_and_suggests_import() {
    let store = FakeStore::new(Fake {
        exists_already: true,
        ..Fake::default()
    });
    let out = create(&store, &planned(&[]), &CancellationToken::new()).await;
    assert!(out.state.is_null());
    assert_eq!(out.diags[0].path, Some(AttrPath::root("name")));
    assert!(out.diags[0].detail.contains("terraform import"));
}

#[tokio::test(start_paused = true)]
async fn stop_provider_ends_the_wait_but_keeps_the_object() {
    let store = FakeStore::new(Fake::default());
    let stop = CancellationToken::new();
    stop.cancel();
    let out = create(&store, &planned(&[]), &stop).await;
    assert!(out.diags[0].summary.contains("Interrupted"));
    assert_eq!(out.state.get("name"), &Value::string("team-atlas"));
}

#[tokio::test(start_paused = true)]
async fn failed_phase_at_the_current_generation_stops_the_wait() {
    let store = FakeStore::new(Fake {
        fail: true,
        ..Fake::default()
    });
    let started = Instant::now();
    let out = create(&store, &planned(&[]), &CancellationToken::new()).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(out.diags[0].summary.contains("failed"));
    assert_eq!(out.state.get("phase"), &Value::string("Failed"));
}

#[tokio::test(start_paused = true)]
async fn update_waits_for_ready_at_the_new_generation_not_the_old_one() {
    let (store, prior) = created(Fake::default()).await;
    assert_eq!(prior.get("phase"), &Value::string("Ready"));
    // After the patch the object is still Ready at generation 1; the fake reaches
    // generation 2 only on the 4th GET.
    store.0.lock().unwrap().ready_after = Some(4);
    let mut next = prior.clone();
    next.set("cpu", Value::string("16"));
    next.set("phase", Value::Unknown);
    let out = update(&store, &prior, &next, &CancellationToken::new()).await;
    assert_eq!(out.diags, vec![]);
    assert_eq!(store.gets(), 4);
    assert_eq!(out.state.get("cpu"), &Value::string("16"));
    assert_eq!(out.state.get("phase"), &Value::string("Ready"));
}

#[tokio::test(start_paused = true)]
async fn update_of_terraform_only_settings_writes_nothing() {
    let (store, prior) = created(Fake::default()).await;
    let mut next = prior.clone();
    next.set("timeouts", Value::object([("create", Value::string("1h"))]));
    let out = update(&store, &prior, &next, &CancellationToken::new()).await;
    assert_eq!(out.diags, vec![]);
    let generation = store
        .0
        .lock()
        .unwrap()
        .tenant
        .as_ref()
        .and_then(|t| t.metadata.generation);
    assert_eq!(generation, Some(1), "no patch was sent");
    assert_eq!(out.state.get("timeouts"), next.get("timeouts"));
}

#[tokio::test(start_paused = true)]
async fn delete_waits_until_the_tenant_is_gone() {
    let (store, prior) = created(Fake {
        gone_after: Some(3),
        ..Fake::default()
    })
    .await;
    let started = Instant::now();
    let out = delete(&store, &prior, &CancellationToken::new()).await;
    assert_eq!(out.diags, vec![]);
    assert!(out.state.is_null());
    assert_eq!(started.elapsed(), POLL_INTERVAL * 2);
}

#[tokio::test(start_paused = true)]
async fn delete_timeout_keeps_the_resource_in_state() {
    let (store, mut prior) = created(Fake::default()).await;
    prior.set("timeouts", Value::object([("delete", Value::string("5s"))]));
    let out = delete(&store, &prior, &CancellationToken::new()).await;
    assert!(out.diags[0].summary.contains("Timed out deleting"));
    assert_eq!(out.state, prior);
}

#[tokio::test(start_paused = true)]
async fn read_of_a_tenant_deleted_outside_terraform_is_null() {
    let store = FakeStore::new(Fake::default());
    let out = read(&store, &planned(&[])).await;
    assert_eq!(out.diags, vec![]);
    assert!(out.state.is_null());
}

#[tokio::test(start_paused = true)]
async fn import_then_read_fills_everything_in() {
    let (store, _) = created(Fake::default()).await;
    let stub = import("team-atlas").unwrap();
    let out = read(&store, &stub).await;
    assert_eq!(out.state.get("owner"), &Value::string("alice@example.com"));
    assert_eq!(out.state.get("wait_for_ready"), &Value::Bool(true));
    assert!(out.state.get("timeouts").is_null());
    assert!(import("Not_A_Name").is_err());
}

#[tokio::test(start_paused = true)]
async fn data_source_of_a_missing_tenant_is_an_error_on_name() {
    let store = FakeStore::new(Fake::default());
    let out = read_data(&store, &Value::object([("name", Value::string("nope"))])).await;
    assert_eq!(out.diags[0].path, Some(AttrPath::root("name")));
}

#[test]
fn timeouts_default_to_twenty_minutes() {
    assert_eq!(timeout_of(&planned(&[]), "create"), DEFAULT_TIMEOUT);
    assert_eq!(
        timeout_of(&planned(&[timeouts("delete", "90s")]), "delete"),
        Duration::from_secs(90)
    );
}

#[test]
fn a_wait_that_ends_unready_names_the_operators_last_error() {
    let mut t = model::tenant_from_state(&planned(&[])).unwrap();
    set_status(&mut t, "Provisioning", false);
    assert_eq!(
        ready_message(&t),
        "phase Provisioning, Ready: tenant is Provisioning (Provisioning)"
    );
    let mut synced = t.status.as_ref().unwrap().conditions[0].clone();
    synced.type_ = "Synced".into();
    synced.reason = "ReconcileError".into();
    synced.message = "KubeApi: namespaces \"x\" is forbidden (HTTP 403 Forbidden)".into();
    t.status.as_mut().unwrap().conditions.push(synced);
    assert_eq!(
        ready_message(&t),
        "phase Provisioning, Ready: tenant is Provisioning (Provisioning); \
         Synced: KubeApi: namespaces \"x\" is forbidden (HTTP 403 Forbidden) (ReconcileError)"
    );
}
