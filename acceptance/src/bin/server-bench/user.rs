//! The legitimate side: the seeded Tenants, and a user's timed `GET /api/v1/tenants`.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt, stream};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use kubespaces_acceptance::operator::SHARD_LABEL;
use kubespaces_operator::{
    api::{Tenant, TenantSpec},
    names,
};
use serde_json::{Value, json};

/// The user whose list is timed; owns half the seeded Tenants.
pub const USER: &str = "alice@example.com";
/// Owns the other half, and holds the flood's streams open.
pub const OTHER_USER: &str = "bob@example.com";
/// Member of the server's admin group: checks the server's cache.
pub const ADMIN: &str = "admin@example.com";
/// No operator reconciles Tenants with this label value (cli/tests/bench.rs does the same).
const SHARD: &str = "server-bench";

/// Creates `n` Tenants `server-bench-NNN` (even ones `USER`'s, odd ones `OTHER_USER`'s), with a
/// status as an operator would write it, so the list has the size of a real one. Tenants left
/// by an earlier run on the same cluster are kept.
pub async fn seed(client: &Client, n: usize) -> Result<()> {
    let api: Api<Tenant> = Api::all(client.clone());
    let patched: Vec<bool> = stream::iter(0..n)
        .map(|i| seed_one(api.clone(), i))
        .buffer_unordered(16)
        .try_collect()
        .await?;
    let without = patched.iter().filter(|ok| !**ok).count();
    if without > 0 {
        eprintln!("warning: {without} of {n} Tenants are listed without a status");
    }
    Ok(())
}

/// Ok(false): the Tenant exists, but its status could not be written (warned once per Tenant).
async fn seed_one(api: Api<Tenant>, i: usize) -> Result<bool> {
    let name = format!("server-bench-{i:03}");
    let owner = if i.is_multiple_of(2) {
        USER
    } else {
        OTHER_USER
    };
    let mut tenant = Tenant::new(&name, TenantSpec::new(owner, "1", "1Gi", None));
    tenant.metadata.labels = Some([(SHARD_LABEL.to_owned(), SHARD.to_owned())].into());
    match api.create(&PostParams::default(), &tenant).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e).with_context(|| format!("create Tenant {name}")),
    }
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let status = json!({ "status": {
        "phase": "Ready",
        "observedGeneration": 1,
        "namespace": names::namespace(&name),
        "endpoints": {
            "api": format!("https://{name}.api.kubespaces.localhost:443"),
            "apps": format!("https://*.{name}.apps.kubespaces.localhost"),
        },
        "conditions": [{
            "type": "Ready", "status": "True", "observedGeneration": 1,
            "lastTransitionTime": now, "reason": "Ready",
            "message": "the tenant control plane answers through the Gateway",
        }],
    }});
    let patched = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await;
    if let Err(e) = &patched {
        eprintln!("warning: cannot write the status of Tenant {name}: {e}");
    }
    Ok(patched.is_ok())
}

/// An HTTP client for loopback, never through a proxy of the environment.
pub fn http(fresh_connections: bool) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none());
    if fresh_connections {
        builder = builder.pool_max_idle_per_host(0);
    }
    builder.build().expect("an HTTP client")
}

async fn get_json(http: &reqwest::Client, url: &str, token: &str) -> Option<Value> {
    let r = http.get(url).bearer_auth(token).send().await.ok()?;
    r.error_for_status().ok()?.json().await.ok()
}

/// Waits until the server lists all `seeded` Tenants to the admin; returns how many Tenants
/// `USER` owns (what every list of hers must hold).
pub async fn wait_listed(
    http: &reqwest::Client,
    base: &str,
    admin_token: &str,
    seeded: usize,
) -> Result<usize> {
    let url = format!("{base}/api/v1/tenants");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(list) = get_json(http, &url, admin_token).await {
            let items = list["items"].as_array().cloned().unwrap_or_default();
            let labelled = items
                .iter()
                .filter(|t| t["metadata"]["labels"][SHARD_LABEL] == SHARD)
                .count();
            if labelled == seeded {
                return Ok(items.iter().filter(|t| t["spec"]["owner"] == USER).count());
            }
        }
        if Instant::now() > deadline {
            bail!("the server did not list the {seeded} seeded Tenants within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The timed requests: successful ones' latencies (sorted), and what went wrong otherwise.
pub struct Latencies {
    pub sorted: Vec<Duration>,
    pub failures: usize,
    pub first_failure: Option<String>,
}

impl Latencies {
    /// Nearest-rank percentile, in ms.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        let n = self.sorted.len();
        if n == 0 {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        self.sorted[rank.clamp(1, n) - 1].as_secs_f64() * 1e3
    }
}

/// `requests` lists as the user, one after the other; each is timed from sending the request
/// to the last byte of the answer, and must answer 200 with `expected` items.
pub async fn time_lists(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    requests: usize,
    expected: usize,
) -> Latencies {
    let url = format!("{base}/api/v1/tenants");
    let mut out = Latencies {
        sorted: Vec::with_capacity(requests),
        failures: 0,
        first_failure: None,
    };
    for _ in 0..requests {
        let t0 = Instant::now();
        let answer = async {
            let r = http.get(&url).bearer_auth(token).send().await?;
            let status = r.status();
            Ok::<_, reqwest::Error>((status, r.bytes().await?))
        }
        .await;
        let elapsed = t0.elapsed();
        let failure = match answer {
            Err(e) => Some(format!("request failed: {e}")),
            Ok((status, _)) if !status.is_success() => Some(format!("answered {status}")),
            Ok((_, body)) => {
                let items = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v["items"].as_array().map(Vec::len));
                (items != Some(expected))
                    .then(|| format!("listed {items:?} Tenants, not {expected}"))
            }
        };
        match failure {
            None => out.sorted.push(elapsed),
            Some(why) => {
                out.failures += 1;
                out.first_failure.get_or_insert(why);
            }
        }
    }
    out.sorted.sort();
    out
}
