//! `--wait`: follows the server's live stream of one tenant until it reaches a [`Goal`] (Ready,
//! Asleep, awake again) or is gone, showing its progress on stderr (a spinner on a terminal, one
//! line per change otherwise). A stream that ends or breaks (a server replica going away, a
//! stream outliving its token) is opened again.

use std::{io::IsTerminal, time::Duration};

use futures::{Stream, StreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use kubespaces_api::{
    api::Tenant,
    conditions::{self, Phase},
};

use crate::{
    client::{Change, Session},
    error::{CliError, Result},
    output,
};

/// How long `get --wait` looks again for a tenant the server says does not exist: one just
/// created through one server replica reaches the others' caches within seconds.
const CACHES_CATCH_UP: Duration = Duration::from_secs(10);

/// The tenant `name`, looked for again for a few seconds (at most `timeout`) while the server
/// says it does not exist (a `--wait` right after a create may ask another replica than the
/// create did).
pub async fn found(session: &mut Session, name: &str, timeout: Duration) -> Result<Tenant> {
    let started = std::time::Instant::now();
    let within = CACHES_CATCH_UP.min(timeout);
    let mut pause = Duration::from_millis(200);
    loop {
        match session.get(name).await {
            Err(CliError::NotFound(_)) if started.elapsed() < within => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            other => return other,
        }
    }
}

/// What a `--wait` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// Ready at its current generation (`create`, `get`): a sleeping tenant is Ready too.
    Ready,
    /// Its control plane asleep, running no pod (`sleep`).
    Asleep,
    /// Awake again (`wake`): Ready, its control plane running and answering.
    Awake,
}

impl Goal {
    /// Whether `t` has reached the goal.
    pub fn reached(self, t: &Tenant) -> bool {
        match self {
            Goal::Ready => t.is_ready(),
            Goal::Asleep => t.phase() == Some(Phase::Asleep.as_str()),
            // Phase Ready alone is not enough: it stays Ready while the pod of a tenant asked to
            // sleep stops (Asleep False, FallingAsleep), which a wake request then undoes.
            Goal::Awake => {
                t.is_ready()
                    && t.phase() == Some(Phase::Ready.as_str())
                    && !t.condition(conditions::ASLEEP).is_some_and(|c| {
                        c.status == "True"
                            || [conditions::FALLING_ASLEEP, conditions::WAKING]
                                .contains(&c.reason.as_str())
                    })
            }
        }
    }

    /// The goal as a timeout names it: "was not {word} within …".
    fn word(self) -> &'static str {
        match self {
            Goal::Ready => "Ready",
            Goal::Asleep => "Asleep",
            Goal::Awake => "awake (Ready)",
        }
    }
}

/// One line of progress: the tenant's phase, and what it waits for (or, falling asleep, that).
pub fn describe(t: &Tenant) -> String {
    let name = t.metadata.name.as_deref().unwrap_or("");
    let falling_asleep = t
        .condition(conditions::ASLEEP)
        .filter(|c| c.status != "True" && c.reason == conditions::FALLING_ASLEEP);
    match (output::pending(t), falling_asleep) {
        (Some(pending), _) => format!("{name}: {} (waiting for {pending})", output::phase(t)),
        (None, Some(c)) => format!(
            "{name}: {} (falling asleep: {})",
            output::phase(t),
            c.message
        ),
        (None, None) => format!("{name}: {}", output::phase(t)),
    }
}

/// Progress on stderr: a spinner on a terminal, one line per change otherwise.
struct Progress {
    bar: Option<ProgressBar>,
    last: String,
}

impl Progress {
    fn new() -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress {
            bar,
            last: String::new(),
        }
    }

    fn show(&mut self, message: String) {
        if message == self.last {
            return;
        }
        match &self.bar {
            Some(bar) => bar.set_message(message.clone()),
            None => eprintln!("{message}"),
        }
        self.last = message;
    }

    fn done(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Waits until tenant `name` reaches `goal`, and returns it; a tenant that fails or is deleted
/// meanwhile ends the wait with that error.
pub async fn until(
    session: &mut Session,
    name: &str,
    goal: Goal,
    timeout: Duration,
) -> Result<Tenant> {
    let mut progress = Progress::new();
    let result = tokio::time::timeout(timeout, async {
        loop {
            let mut stream = std::pin::pin!(session.watch(name).await?);
            while let Some(change) = stream.next().await {
                let change = match change {
                    // Opened again below, as after an end.
                    Err(CliError::StreamBroken(_)) => break,
                    change => change?,
                };
                if change.kind == "deleted" {
                    return Err(CliError::NotFound(name.to_owned()));
                }
                let t = change.tenant;
                progress.show(describe(&t));
                if goal.reached(&t) {
                    return Ok(t);
                }
                if t.phase() == Some(Phase::Failed.as_str()) {
                    return Err(CliError::Timeout(format!(
                        "tenant {name} failed: {}",
                        output::pending(&t).unwrap_or_default()
                    )));
                }
            }
            // The stream ended or broke (a server replica went away, or we fell behind): watch
            // again.
        }
    })
    .await;
    let last = progress.last.clone();
    progress.done();
    result.unwrap_or_else(|_| {
        Err(CliError::Timeout(format!(
            "tenant {name} was not {} within {}s (last seen: {last})",
            goal.word(),
            timeout.as_secs()
        )))
    })
}

/// Waits until tenant `name` is gone, following `first` (opened before the deletion was asked
/// for, so that the deletion cannot slip by unseen).
pub async fn gone(
    session: &mut Session,
    first: impl Stream<Item = Result<Change>> + 'static,
    name: &str,
    timeout: Duration,
) -> Result<()> {
    let mut progress = Progress::new();
    let result = tokio::time::timeout(timeout, async {
        let mut stream: std::pin::Pin<Box<dyn Stream<Item = _>>> = Box::pin(first);
        loop {
            while let Some(change) = stream.next().await {
                let change = match change {
                    Err(CliError::StreamBroken(_)) => break,
                    change => change?,
                };
                if change.kind == "deleted" {
                    return Ok(());
                }
                progress.show(describe(&change.tenant));
            }
            // The stream ended or broke (it lives no longer than the login it was opened with,
            // or a server replica went away): watch again; a tenant the server no longer has is
            // gone.
            match session.watch(name).await {
                Ok(next) => stream = Box::pin(next),
                Err(CliError::NotFound(_)) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    })
    .await;
    progress.done();
    result.unwrap_or_else(|_| {
        Err(CliError::Timeout(format!(
            "tenant {name} was not gone within {}s",
            timeout.as_secs()
        )))
    })
}

#[cfg(test)]
mod tests {
    use kubespaces_api::api::TenantSpec;
    use serde_json::json;

    use super::*;

    /// A tenant at generation 1, observed, in `phase`, Ready but while waking, with an `Asleep`
    /// condition (status, reason) when given.
    fn tenant(phase: &str, asleep: Option<(&str, &str)>) -> Tenant {
        let mut t = Tenant::new(
            "team-atlas",
            TenantSpec::new("a@example.com", "1", "1Gi", None),
        );
        t.metadata.generation = Some(1);
        let at = "2026-12-07T10:00:00Z";
        let ready = if phase == "Waking" { "False" } else { "True" };
        let mut conditions = vec![json!({"type": "Ready", "status": ready, "reason": "Ready",
            "message": "", "lastTransitionTime": at, "observedGeneration": 1})];
        if let Some((status, reason)) = asleep {
            conditions.push(json!({"type": "Asleep", "status": status, "reason": reason,
                "message": "StatefulSet x/vcluster is stopping its pod", "lastTransitionTime": at}));
        }
        t.status = serde_json::from_value(json!({
            "phase": phase, "observedGeneration": 1, "conditions": conditions,
        }))
        .unwrap();
        t
    }

    #[test]
    fn each_goal_is_reached_by_its_phase_only() {
        let awake = tenant("Ready", None);
        let falling = tenant("Ready", Some(("False", conditions::FALLING_ASLEEP)));
        let asleep = tenant("Asleep", Some(("True", "SleepRequested")));
        let waking = tenant("Waking", Some(("False", conditions::WAKING)));
        let unreadable = tenant("Ready", Some(("False", "SleepRequestInvalid")));
        let reached =
            |goal: Goal| [&awake, &falling, &asleep, &waking, &unreadable].map(|t| goal.reached(t));
        // A sleeping tenant's Ready stays True: `get --wait` returns for it.
        assert_eq!(reached(Goal::Ready), [true, true, true, false, true]);
        assert_eq!(reached(Goal::Asleep), [false, false, true, false, false]);
        assert_eq!(reached(Goal::Awake), [true, false, false, false, true]);
    }

    #[test]
    fn progress_says_when_the_tenant_falls_asleep() {
        let falling = tenant("Ready", Some(("False", conditions::FALLING_ASLEEP)));
        assert_eq!(
            describe(&falling),
            "team-atlas: Ready (falling asleep: StatefulSet x/vcluster is stopping its pod)"
        );
        assert_eq!(
            describe(&tenant("Asleep", Some(("True", "Idle")))),
            "team-atlas: Asleep"
        );
        assert_eq!(describe(&tenant("Ready", None)), "team-atlas: Ready");
    }
}
