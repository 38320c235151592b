//! Pods' logs followed while a test acts on them, for its failure message: a pod deleted by the
//! test takes its log with it, so what it said on its way out is read as it says it.

use std::sync::{Arc, Mutex};

use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, api::LogParams};
use tokio::task::JoinHandle;

/// The logs of some pods, followed from when [`Followed::start`] is called until it is dropped.
pub struct Followed {
    logs: Vec<(String, Arc<Mutex<Vec<String>>>)>,
    tasks: Vec<JoinHandle<()>>,
}

impl Followed {
    /// Follows each of `names`' logs (with the kubelet's timestamps), from the last 20 lines on.
    pub fn start(pods: &Api<Pod>, names: &[String]) -> Followed {
        let params = LogParams {
            follow: true,
            timestamps: true,
            tail_lines: Some(20),
            ..LogParams::default()
        };
        let mut logs = Vec::new();
        let mut tasks = Vec::new();
        for name in names {
            let lines = Arc::new(Mutex::new(Vec::new()));
            logs.push((name.clone(), lines.clone()));
            let (pods, name, params) = (pods.clone(), name.clone(), params.clone());
            tasks.push(tokio::spawn(async move {
                let push = |line: String| {
                    if let Ok(mut l) = lines.lock() {
                        l.push(line);
                    }
                };
                match pods.log_stream(&name, &params).await {
                    Ok(stream) => {
                        let mut stream = std::pin::pin!(stream.lines());
                        while let Some(line) = stream.next().await {
                            match line {
                                Ok(line) => push(line),
                                Err(e) => return push(format!("(log stream ended: {e})")),
                            }
                        }
                        push("(log stream ended)".into());
                    }
                    Err(e) => push(format!("(cannot follow the log: {e})")),
                }
            }));
        }
        Followed { logs, tasks }
    }

    /// Every pod's lines so far, under its name.
    pub fn text(&self) -> String {
        self.logs
            .iter()
            .map(|(name, lines)| {
                let lines = lines.lock().map(|l| l.join("\n")).unwrap_or_default();
                format!("--- log of {name} ---\n{lines}\n")
            })
            .collect()
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
