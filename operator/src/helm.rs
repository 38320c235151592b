//! The pinned chart: its archive checked against the pinned digest and version, then rendered
//! with a real `helm template` into the objects to apply.

use std::{collections::HashMap, sync::Mutex, time::SystemTime};

use kube::api::DynamicObject;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use thiserror::Error;
use tokio::io::AsyncWriteExt;

use crate::{build::control_plane::VclusterSettings, names::control_plane as names};

#[derive(Debug, Error)]
pub enum ChartError {
    /// The archive is not the one pinned: nothing is installed until the pin or the archive is
    /// fixed (a permanent error: the tenant stalls).
    #[error(
        "the vCluster chart {path} has digest {actual}, but the operator pins {pinned} (--vcluster-chart-digest): \
         nothing is installed until the archive or the pin is fixed"
    )]
    DigestMismatch {
        path: String,
        actual: String,
        pinned: String,
    },
    /// The archive renders a chart of another version than the one pinned.
    #[error(
        "the vCluster chart {path} is version {actual}, but the operator pins {pinned} (--vcluster-chart-version)"
    )]
    VersionMismatch {
        path: String,
        actual: String,
        pinned: String,
    },
    #[error("cannot read the vCluster chart {path}: {source}")]
    Unreadable {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// helm could not be started or refused to render.
    #[error("helm template of the vCluster chart failed: {0}")]
    Render(String),
    #[error("helm template produced an object that is not valid: {0}")]
    Output(String),
}

impl ChartError {
    /// Errors that no retry fixes without a change of the pin, the archive or the values.
    pub fn is_permanent(&self) -> bool {
        !matches!(self, ChartError::Unreadable { .. })
    }

    pub fn reason(&self) -> &'static str {
        match self {
            ChartError::DigestMismatch { .. } => "ChartDigestMismatch",
            ChartError::VersionMismatch { .. } => "ChartVersionMismatch",
            ChartError::Unreadable { .. } => "ChartUnreadable",
            ChartError::Render(_) => "ChartRenderFailed",
            ChartError::Output(_) => "ChartRenderFailed",
        }
    }
}

/// The sha256 digest of a file, as `sha256:<hex>`.
pub fn digest_of(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Renders charts for tenants, checking the archive's digest once per change of the file and
/// keeping the last render per tenant (a render runs helm: ~0.1 s of CPU; most reconciles
/// render the same values again).
pub struct Renderer {
    verified: Mutex<Option<(SystemTime, u64, String)>>,
    renders: Mutex<HashMap<String, (String, Vec<DynamicObject>)>>,
    /// Each helm process takes ~50 MiB, charged to the operator's container: a burst of new
    /// tenants renders a few at a time, not one per reconcile slot.
    helm_slots: tokio::sync::Semaphore,
}

/// How many `helm template` processes run at once.
const HELM_SLOTS: usize = 2;

impl Default for Renderer {
    fn default() -> Self {
        Self {
            verified: Mutex::default(),
            renders: Mutex::default(),
            helm_slots: tokio::sync::Semaphore::new(HELM_SLOTS),
        }
    }
}

impl Renderer {
    /// The archive's digest if it matches the pin.
    pub async fn verify(&self, settings: &VclusterSettings) -> Result<String, ChartError> {
        let path = &settings.chart;
        let unreadable = |source| ChartError::Unreadable {
            path: path.display().to_string(),
            source,
        };
        let meta = tokio::fs::metadata(path).await.map_err(unreadable)?;
        let stamp = (meta.modified().map_err(unreadable)?, meta.len());
        let known = self.verified.lock().map(|v| v.clone()).unwrap_or(None);
        let actual = match known {
            Some((modified, len, digest)) if (modified, len) == stamp => digest,
            _ => {
                let bytes = tokio::fs::read(path).await.map_err(unreadable)?;
                let digest = digest_of(&bytes);
                if let Ok(mut v) = self.verified.lock() {
                    *v = Some((stamp.0, stamp.1, digest.clone()));
                }
                digest
            }
        };
        if actual != settings.chart_digest {
            return Err(ChartError::DigestMismatch {
                path: path.display().to_string(),
                actual,
                pinned: settings.chart_digest.clone(),
            });
        }
        Ok(actual)
    }

    /// The chart rendered for `tenant` with `values` (after the platform's values files),
    /// in `namespace`. Cached by the values and the archive's digest.
    pub async fn render(
        &self,
        settings: &VclusterSettings,
        tenant: &str,
        namespace: &str,
        kube_version: &str,
        values: &Value,
    ) -> Result<Vec<DynamicObject>, ChartError> {
        let digest = self.verify(settings).await?;
        let key = format!("{digest} {kube_version} {values}");
        if let Some((k, objects)) = self
            .renders
            .lock()
            .ok()
            .and_then(|r| r.get(tenant).cloned())
            && k == key
        {
            return Ok(objects);
        }
        let yaml = {
            let _slot = self.helm_slots.acquire().await;
            helm_template(settings, namespace, kube_version, values).await?
        };
        let objects = parse(&yaml)?;
        check_version(&objects, settings)?;
        if let Ok(mut r) = self.renders.lock() {
            r.insert(tenant.to_owned(), (key, objects.clone()));
        }
        Ok(objects)
    }

    /// Forgets a tenant's render (it is gone).
    pub fn forget(&self, tenant: &str) {
        if let Ok(mut r) = self.renders.lock() {
            r.remove(tenant);
        }
    }
}

async fn helm_template(
    settings: &VclusterSettings,
    namespace: &str,
    kube_version: &str,
    values: &Value,
) -> Result<String, ChartError> {
    let mut cmd = tokio::process::Command::new(&settings.helm);
    cmd.arg("template")
        .arg(names::RELEASE)
        .arg(&settings.chart)
        .args(["--namespace", namespace, "--kube-version", kube_version]);
    for file in &settings.values {
        cmd.arg("--values").arg(file);
    }
    // The tenant's values last (they win), through stdin: JSON is YAML.
    cmd.args(["--values", "-"])
        // helm must not read or write anything of the operator's: no home, no cache.
        .env_clear()
        .env("HELM_CACHE_HOME", "/tmp/helm/cache")
        .env("HELM_CONFIG_HOME", "/tmp/helm/config")
        .env("HELM_DATA_HOME", "/tmp/helm/data")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let helm = settings.helm.display().to_string();
    let mut child = cmd
        .spawn()
        .map_err(|e| ChartError::Render(format!("cannot run {helm}: {e} (set --helm)")))?;
    let input = values.to_string();
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .await
            .map_err(|e| ChartError::Render(format!("writing the values to {helm}: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| ChartError::Render(format!("{helm}: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(ChartError::Render(
            stderr.trim().chars().take(800).collect(),
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| ChartError::Output(e.to_string()))
}

/// The objects of a multi-document YAML stream; empty documents (helm renders some) skipped.
pub fn parse(yaml: &str) -> Result<Vec<DynamicObject>, ChartError> {
    let mut objects = vec![];
    for doc in serde_yaml::Deserializer::from_str(yaml) {
        let value = Value::deserialize(doc).map_err(|e| ChartError::Output(e.to_string()))?;
        if value.is_null() {
            continue;
        }
        let object: DynamicObject = serde_json::from_value(value)
            .map_err(|e| ChartError::Output(format!("not a Kubernetes object: {e}")))?;
        if object.types.is_none() || object.metadata.name.is_none() {
            return Err(ChartError::Output(
                "an object without apiVersion, kind or name".into(),
            ));
        }
        objects.push(object);
    }
    Ok(objects)
}

/// Every object the chart renders is labelled `chart: vcluster-<version>`: the archive must
/// hold the pinned version.
fn check_version(objects: &[DynamicObject], settings: &VclusterSettings) -> Result<(), ChartError> {
    let want = format!("vcluster-{}", settings.chart_version);
    let found = objects
        .iter()
        .filter_map(|o| o.metadata.labels.as_ref()?.get("chart"))
        .find(|c| c.starts_with("vcluster-"));
    match found {
        Some(c) if *c == want => Ok(()),
        other => Err(ChartError::VersionMismatch {
            path: settings.chart.display().to_string(),
            actual: other
                .map(|c| c.trim_start_matches("vcluster-").to_owned())
                .unwrap_or_else(|| "unknown".into()),
            pinned: settings.chart_version.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_with_empty_documents_parses_into_its_objects() {
        let yaml = "---\n# comment only\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: vcluster\n  labels: {chart: vcluster-0.36.1}\n---\n";
        let objects = parse(yaml).unwrap();
        assert_eq!(objects.len(), 1);
        assert!(parse("apiVersion: v1\nkind: Service\nmetadata: {}\n").is_err());
    }

    #[test]
    fn the_digest_is_sha256_hex() {
        assert_eq!(
            digest_of(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
