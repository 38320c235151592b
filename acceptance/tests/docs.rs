//! The user documentation, checked against the real cluster and the operator's code.
//!
//! **Runnable blocks.** Every fenced ` ```console ` block of the [`PAGES`] is a shell session that is
//! run, in order, against the cluster of the harness; other blocks (` ```sh `, ` ```yaml `, …) are
//! not run. In a console block:
//!
//! - a line starting `$ ` is a command. A line ending in `\` continues on the next one; a
//!   here-document (`<<'EOF'` or `<<EOF`) takes the lines up to its terminator.
//! - the command must exit 0, unless its (last) line ends in the comment `# exit N`: then it must
//!   exit with N (`kubectl auth can-i` answers no with 1).
//! - the lines after a command, up to the next command or the end of the block, are its expected
//!   output (stdout and stderr together). None: the output is not checked. Otherwise every output
//!   line must match, in order, with runs of whitespace compared as one space (table columns);
//!   `...` in a line matches any text, and a line that is only `...` matches any number of lines.
//!
//! Each command runs with `bash -c` in the repository's root, with at most [`COMMAND_TIMEOUT`];
//! `kubectl` is the cluster's (`KUBESPACES_KUBECTL`, put first on `PATH` under that name) and
//! `KUBECONFIG` the harness's. The first command that fails stops the run, and the test fails
//! naming the page, the command's line and its block's line. Each page's tenant ([`PAGES`]) is
//! used by no other test; it is deleted before and after the run, whatever happened.
//!
//! **Every command block.** A ` ```console `, ` ```sh `, ` ```shell ` or ` ```bash ` block of
//! `docs/*.md`, `README.md` or the chart's README that is not run here says so on the line before
//! it: `<!-- run by <test file> <test function> -->` (that test must exist and read the page) or
//! `<!-- not run: <why> -->`. This part needs no cluster.
//!
//! **Names.** `docs/tenant-lifecycle.md` must name every condition type and reason the operator
//! sets (the PascalCase string literals of its conditions, errors and reconciler), and every
//! such name, annotation or finalizer it mentions must exist in the operator's code. This part
//! needs no cluster.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use kubespaces_acceptance::{Env, pods};

const PAGE: &str = "docs/first-tenant.md";
const APPS_PAGE: &str = "docs/exposing-apps.md";
const LIFECYCLE_PAGE: &str = "docs/tenant-lifecycle.md";
/// The tenant [`PAGE`] creates and deletes.
const TENANT: &str = "team-orion";
/// The tenant [`APPS_PAGE`] creates and deletes.
const APPS_TENANT: &str = "team-vega";
/// Each runnable page and its tenant.
const PAGES: [(&str, &str); 2] = [(PAGE, TENANT), (APPS_PAGE, APPS_TENANT)];
/// Above the longest wait a page gives itself (`--timeout=5m`), so that the page's own timeouts
/// decide and this only stops a command that hangs.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(330);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository root")
        .to_path_buf()
}

fn read(relative: &str) -> String {
    let path = repo_root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One command of a console block.
#[derive(Debug, PartialEq)]
struct DocCommand {
    /// 1-based line of the `$ ` line, and of the block's opening fence.
    line: usize,
    block_line: usize,
    /// What bash runs: the command, its continuation lines and here-document.
    script: String,
    /// The exit status it must end with.
    exit: i32,
    /// Expected output lines; empty: not checked.
    expected: Vec<String>,
}

/// `# exit N` at the end of a command line.
fn expected_exit(line: &str) -> Option<i32> {
    let (_, comment) = line.rsplit_once('#')?;
    comment.trim().strip_prefix("exit")?.trim().parse().ok()
}

/// The terminator of a here-document started on `line`, if any (`<<EOF`, `<<'EOF'`, `<<-"EOF"`).
fn heredoc_terminator(line: &str) -> Option<String> {
    let (_, rest) = line.split_once("<<")?;
    let rest = rest.strip_prefix('-').unwrap_or(rest).trim_start();
    let word: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// The commands of every ` ```console ` block of `markdown`.
fn parse(markdown: &str) -> Result<Vec<DocCommand>, String> {
    let mut commands: Vec<DocCommand> = Vec::new();
    // (fence, runnable, line of the fence) of the block we are in.
    let mut block: Option<(String, bool, usize)> = None;
    let mut in_command = false;
    let mut lines = markdown.lines().enumerate().map(|(i, l)| (i + 1, l));
    while let Some((n, line)) = lines.next() {
        let trimmed = line.trim_start();
        match &block {
            None => {
                if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                    let fence: String = trimmed
                        .chars()
                        .take_while(|c| *c == trimmed.chars().next().unwrap_or('`'))
                        .collect();
                    let info = trimmed[fence.len()..].trim();
                    block = Some((fence, info == "console", n));
                    in_command = false;
                }
                continue;
            }
            Some((fence, _, _))
                if trimmed.starts_with(fence.as_str()) && trimmed.trim() == fence =>
            {
                block = None;
                continue;
            }
            Some((_, false, _)) => continue,
            Some((_, true, block_line)) => {
                let block_line = *block_line;
                if let Some(first) = line.strip_prefix("$ ") {
                    let mut logical = first.to_owned();
                    while logical.ends_with('\\') {
                        let (_, next) = lines
                            .next()
                            .ok_or(format!("line {n}: the command's last line ends in \\"))?;
                        logical.push('\n');
                        logical.push_str(next);
                    }
                    let exit =
                        expected_exit(logical.lines().last().unwrap_or_default()).unwrap_or(0);
                    let mut script = logical.clone();
                    if let Some(word) = heredoc_terminator(&logical) {
                        loop {
                            let (_, body) = lines.next().ok_or(format!(
                                "line {n}: the here-document is not closed by {word}"
                            ))?;
                            script.push('\n');
                            script.push_str(body);
                            if body.trim() == word {
                                break;
                            }
                        }
                    }
                    commands.push(DocCommand {
                        line: n,
                        block_line,
                        script,
                        exit,
                        expected: Vec::new(),
                    });
                    in_command = true;
                } else if in_command {
                    if let Some(c) = commands.last_mut() {
                        c.expected.push(line.to_owned());
                    }
                } else {
                    return Err(format!(
                        "line {n}: a console block starts with a command (`$ ...`), not {line:?}"
                    ));
                }
            }
        }
    }
    match block {
        Some((_, _, line)) => Err(format!("line {line}: the block is never closed")),
        None => Ok(commands),
    }
}

fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One output line against one expected line (`...` matches any text).
fn line_matches(expected: &str, actual: &str) -> bool {
    let (expected, actual) = (squeeze(expected), squeeze(actual));
    let parts: Vec<&str> = expected.split("...").collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &actual[first.len()..];
    if !rest.ends_with(last) {
        return false;
    }
    rest = &rest[..rest.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// All output lines against the expected ones (a line `...` matches any number of lines).
fn output_matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e.trim() == "..." => {
            (0..=actual.len()).any(|skip| output_matches(rest, &actual[skip..]))
        }
        Some((e, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| line_matches(e, a) && output_matches(rest, more)),
    }
}

/// A directory holding `kubectl`, a link to the cluster's kubectl, to put first on PATH.
struct KubectlDir(PathBuf);

impl KubectlDir {
    /// `tag` tells apart the directories of pages run at once in this process.
    fn new(kubectl: &str, tag: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("kubespaces-docs-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory for kubectl");
        let target = if kubectl.contains('/') {
            PathBuf::from(kubectl)
        } else {
            // A bare name: whatever PATH finds.
            let found = std::process::Command::new("bash")
                .args(["-c", &format!("command -v {kubectl}")])
                .output()
                .expect("bash");
            PathBuf::from(String::from_utf8_lossy(&found.stdout).trim())
        };
        std::os::unix::fs::symlink(&target, dir.join("kubectl")).expect("link kubectl");
        KubectlDir(dir)
    }
}

impl Drop for KubectlDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs one command; Err says why it failed.
async fn run(command: &DocCommand, path: &str) -> Result<(), String> {
    // GNU timeout runs the command in a process group of its own and signals all of it.
    let script = format!("set -o pipefail\n{{\n{}\n}} 2>&1", command.script);
    let output = tokio::process::Command::new("timeout")
        .args(["-k", "5", &COMMAND_TIMEOUT.as_secs().to_string()])
        .args(["bash", "-c", &script])
        .current_dir(repo_root())
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("cannot run bash: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    let code = output.status.code().unwrap_or(-1);
    if code == 124 {
        return Err(format!(
            "timed out after {COMMAND_TIMEOUT:?}; output so far:\n{text}"
        ));
    }
    if code != command.exit {
        return Err(format!(
            "exited with {code}, not {}; output:\n{text}",
            command.exit
        ));
    }
    let actual: Vec<&str> = text
        .strip_suffix('\n')
        .unwrap_or(&text)
        .split('\n')
        .collect();
    if !command.expected.is_empty() && !output_matches(&command.expected, &actual) {
        return Err(format!(
            "printed\n{text}\nwhich does not match what the page shows:\n{}",
            command.expected.join("\n")
        ));
    }
    Ok(())
}

#[tokio::test]
async fn the_first_tenant_page_runs_as_written() {
    run_page(PAGE, TENANT, 10).await;
}

#[tokio::test]
async fn the_exposing_apps_page_runs_as_written() {
    run_page(APPS_PAGE, APPS_TENANT, 8).await;
}

/// Runs every console block of `page`, which creates `tenant` and deletes it again, and has at
/// least `at_least` commands.
async fn run_page(page: &str, tenant: &str, at_least: usize) {
    let env = Env::get();
    let markdown = read(page);
    let commands = parse(&markdown).unwrap_or_else(|e| panic!("{page}: {e}"));
    // A page whose blocks were all renamed would pass without running anything.
    assert!(
        commands.len() >= at_least
            && commands.iter().any(|c| c.script.contains("kubectl wait"))
            && commands
                .iter()
                .any(|c| c.script.contains("kubectl delete tenant")),
        "{page} has too few runnable commands: {commands:#?}"
    );
    assert!(
        markdown.contains(&format!("name: {tenant}")),
        "{page} creates {tenant}"
    );

    let kubectl = KubectlDir::new(&env.kubectl, tenant);
    let path = format!(
        "{}:{}",
        kubectl.0.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    pods::delete_tenant(&env, tenant).await;
    let mut failure = None;
    for command in &commands {
        let started = Instant::now();
        let result = run(command, &path).await;
        let first = command.script.lines().next().unwrap_or_default();
        println!(
            "{page}:{} $ {first}  [{}, {:.1} s]",
            command.line,
            if result.is_ok() { "ok" } else { "FAILED" },
            started.elapsed().as_secs_f64()
        );
        if let Err(why) = result {
            failure = Some(format!(
                "{page}:{}: the command of the block at line {}\n  $ {}\n{why}",
                command.line, command.block_line, command.script
            ));
            break;
        }
    }
    pods::delete_tenant(&env, tenant).await;
    if let Some(failure) = failure {
        panic!("{failure}");
    }
    println!("{page}: {} commands ran as written", commands.len());
}

#[test]
fn the_pages_tenant_is_used_by_no_other_test() {
    let root = repo_root();
    let mut files = Vec::new();
    for dir in [
        "acceptance/tests",
        "acceptance/src",
        "provider/tests",
        "provider/src",
    ] {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = entry.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|e| e == "rs")
                    && !p.ends_with("acceptance/tests/docs.rs")
                {
                    files.push(p);
                }
            }
        }
    }
    assert!(files.len() > 5, "found the tests: {files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for (page, tenant) in PAGES {
            assert!(
                !text.contains(tenant),
                "{} uses the tenant {tenant} of {page}: choose another name in one of them",
                f.display()
            );
        }
    }
}

/// The part of a Rust file before its unit tests.
fn without_tests(source: &str) -> &str {
    source
        .split_once("#[cfg(test)]")
        .map_or(source, |(code, _)| code)
}

/// The string literals of `source` that are one PascalCase word (`"NamespaceConflict"`).
fn pascal_literals(source: &str) -> Vec<String> {
    source
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| is_pascal(s))
        .map(str::to_owned)
        .collect()
}

fn is_pascal(s: &str) -> bool {
    s.len() > 1
        && s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.chars().all(|c| c.is_ascii_alphabetic())
}

/// The `code spans` of a Markdown text.
fn code_spans(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            out.extend(line.split('`').skip(1).step_by(2).map(str::to_owned));
        }
    }
    out
}

fn contains_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word)
        .any(|(i, _)| !text[..i].ends_with(ident) && !text[i + word.len()..].starts_with(ident))
}

fn operator_sources() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    // The operator and the API crate it re-exports (conditions, names).
    let mut stack = vec![
        repo_root().join("operator/src"),
        repo_root().join("operator/api/src"),
    ];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("operator/src").flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&p).expect("source");
                out.push((p, text));
            }
        }
    }
    out
}

#[test]
fn the_lifecycle_page_names_every_reason_and_only_real_ones() {
    let page = read(LIFECYCLE_PAGE);
    let spans = code_spans(&page);
    let sources = operator_sources();
    let root = repo_root();

    // Every condition type, reason and phase the operator writes is on the page. (PascalCase
    // literals that are none of these: condition statuses, the Event action, the kind.)
    // Also the kinds and fields the control plane's code builds or reads (not names it writes
    // into conditions).
    let not_names = [
        // The restricted Pod Security settings of the control plane's pods.
        "RuntimeDefault",
        "ALL",
        "True",
        "False",
        "Reconcile",
        "Tenant",
        "Opaque",
        "ClusterIP",
        "Egress",
        "TCP",
        "StatefulSet",
        "PersistentVolumeClaim",
        "Deployment",
        "ClusterRole",
        "ClusterRoleBinding",
        "ServiceAccount",
        "Config",
        "User",
        "PriorityClass",
        "StorageClass",
        "IngressClass",
        "CustomResourceDefinition",
        "TLSRoute",
        "Gateway",
        "ResolvedRefs",
        "Retain",
        "Secret",
        // The kinds the pinned chart renders, which the sweep lists (apply::plan::CHART_KINDS).
        "ConfigMap",
        "Service",
        "Role",
        "RoleBinding",
        "NetworkPolicy",
        "PodDisruptionBudget",
        // The apps Gateway's and Certificate's field values (control_plane::apps).
        "Certificate",
        "ClusterIssuer",
        "HTTPRoute",
        "HTTPS",
        "Terminate",
        "Same",
        "All",
        "Always",
    ];
    let mut written = Vec::new();
    for (path, text) in &sources {
        let rel = path.strip_prefix(&root).unwrap_or(path);
        let relevant = rel.starts_with("operator/src/reconcile")
            || rel.starts_with("operator/src/observe")
            || rel.starts_with("operator/src/build/control_plane")
            || rel.starts_with("operator/src/apply")
            || rel.ends_with("operator/src/helm.rs")
            || rel.ends_with("conditions.rs")
            || rel.ends_with("error.rs");
        if relevant {
            for name in pascal_literals(without_tests(text)) {
                if !not_names.contains(&name.as_str()) && !written.contains(&name) {
                    written.push(name);
                }
            }
        }
    }
    assert!(
        written.len() > 25 && written.iter().any(|n| n == "NamespaceConflict"),
        "the operator's names were found: {written:?}"
    );
    let missing: Vec<&String> = written.iter().filter(|n| !spans.contains(n)).collect();
    assert!(
        missing.is_empty(),
        "{LIFECYCLE_PAGE} does not mention (as `code`) these names the operator writes: {missing:?} \
         (document them; if one is not a condition type, reason or phase, add it to not_names)"
    );

    // Every name the page shows exists in the operator's code: PascalCase words, and
    // annotations, labels and finalizers (`domain/key`).
    let all_code: String = sources.iter().map(|(_, t)| t.as_str()).collect();
    let key_of = |s: &str| s.split('=').next().unwrap_or_default().to_owned();
    let is_key = |s: &str| {
        key_of(s).split_once('/').is_some_and(|(domain, key)| {
            domain.contains('.')
                && domain
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '.' || c == '-')
                && !key.is_empty()
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    let unknown: Vec<&String> = spans
        .iter()
        .filter(|s| {
            (is_pascal(s) && !contains_word(&all_code, s))
                || (is_key(s) && !all_code.contains(&key_of(s)))
        })
        .collect();
    assert!(
        unknown.is_empty(),
        "{LIFECYCLE_PAGE} names what the operator's code does not: {unknown:?}"
    );
}

#[test]
fn console_blocks_parse_and_match_as_documented() {
    let page = "intro\n```yaml\n$ not run\n```\n```console\n$ kubectl apply -f - <<'EOF'\nkind: X\n$ still the document\nEOF\ncreated\n$ kubectl get \\\n  tenants   # exit 1\n...\nteam-x   Ready   ...\n...\n$ true\n```\n";
    let commands = parse(page).expect("parses");
    assert_eq!(commands.len(), 3, "{commands:#?}");
    assert_eq!(
        commands[0],
        DocCommand {
            line: 6,
            block_line: 5,
            script: "kubectl apply -f - <<'EOF'\nkind: X\n$ still the document\nEOF".into(),
            exit: 0,
            expected: vec!["created".into()],
        }
    );
    assert_eq!(commands[1].script, "kubectl get \\\n  tenants   # exit 1");
    assert_eq!(commands[1].exit, 1);
    assert!(commands[2].expected.is_empty());
    assert!(parse("```console\noutput first\n```\n").is_err());
    assert!(parse("```console\n$ x\n").is_err());

    let expected = &commands[1].expected;
    assert!(output_matches(
        expected,
        &["NAME PHASE", "team-x Ready 3s", "team-y Ready 1s"]
    ));
    assert!(output_matches(expected, &["team-x     Ready  3s"]));
    assert!(!output_matches(expected, &["team-x Failed 3s"]));
    assert!(
        !output_matches(&["a".into()], &["a", "b"]),
        "every line must match"
    );
    assert!(line_matches("a ... c ... e", "a b c d e"));
    assert!(!line_matches("a ... c", "a b"));
    assert!(line_matches("x...", "x"));
}

/// The languages of a fenced block that hold commands for a reader to type.
const COMMAND_LANGUAGES: [&str; 4] = ["console", "sh", "shell", "bash"];
/// What marks a command block another test runs: `<!-- run by <test file> <test function> -->`,
/// on the line before it.
const RUN_BY: &str = "<!-- run by ";
/// What marks a command block that is not run: `<!-- not run: <why> -->`, on the line before it.
const NOT_RUN: &str = "<!-- not run:";

/// The command blocks of a page, as this test accounts for them.
#[derive(Debug, Default, PartialEq)]
struct CommandBlocks {
    /// Blocks (line, language) that neither run here (a ` ```console ` block of a runnable page)
    /// nor name the test that runs them nor say why they are not run.
    unaccounted: Vec<(usize, String)>,
    /// (line, test file, test function) of the blocks another test runs.
    run_by: Vec<(usize, String, String)>,
}

/// `<!-- PREFIX rest -->` on `line`: the rest, when it is not empty.
fn marker<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = line
        .trim()
        .strip_prefix(prefix)?
        .strip_suffix("-->")?
        .trim();
    (!rest.is_empty()).then_some(rest)
}

fn command_blocks(markdown: &str, runnable: bool) -> CommandBlocks {
    let mut blocks = CommandBlocks::default();
    let mut fence: Option<String> = None;
    let mut previous = "";
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        match &fence {
            Some(f) if trimmed.trim_end() == f => fence = None,
            Some(_) => {}
            None if trimmed.starts_with("```") || trimmed.starts_with("~~~") => {
                let f: String = trimmed
                    .chars()
                    .take_while(|c| *c == trimmed.chars().next().unwrap_or('`'))
                    .collect();
                let language = trimmed[f.len()..].trim().to_owned();
                if COMMAND_LANGUAGES.contains(&language.as_str())
                    && !(runnable && language == "console")
                    && marker(previous, NOT_RUN).is_none()
                {
                    let by = marker(previous, RUN_BY).and_then(|by| by.split_once(' '));
                    match by {
                        Some((file, test)) => {
                            blocks
                                .run_by
                                .push((i + 1, file.to_owned(), test.trim().to_owned()))
                        }
                        None => blocks.unaccounted.push((i + 1, language)),
                    }
                }
                fence = Some(f);
            }
            None => {}
        }
        previous = line;
    }
    blocks
}

#[test]
fn every_command_block_of_the_docs_runs_in_a_test_or_says_why_not() {
    let root = repo_root();
    let mut pages: Vec<String> = ["README.md", "charts/kubespaces/README.md"]
        .map(String::from)
        .to_vec();
    for entry in std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            pages.push(format!("docs/{name}"));
        }
    }
    assert!(pages.len() > 5, "found the pages: {pages:?}");
    let mut unaccounted = Vec::new();
    for page in &pages {
        let runnable = PAGES.iter().any(|(p, _)| p == page);
        let blocks = command_blocks(&read(page), runnable);
        for (line, language) in blocks.unaccounted {
            unaccounted.push(format!("{page}:{line} (```{language})"));
        }
        // The test named must exist, and read this page.
        for (line, file, test) in blocks.run_by {
            let source = std::fs::read_to_string(root.join(&file)).unwrap_or_default();
            if !source.contains(&format!("fn {test}()")) || !source.contains(page.as_str()) {
                unaccounted.push(format!(
                    "{page}:{line}: {file} has no test {test} that reads {page}"
                ));
            }
        }
    }
    assert!(
        unaccounted.is_empty(),
        "command blocks that run nowhere: {unaccounted:#?}\nrun each one (a ```console block of \
         a page in PAGES, or in a test of its own named by `{RUN_BY}<file> <function> -->` on \
         the line before it), or put `{NOT_RUN} <why> -->` on the line before it"
    );
}

#[test]
fn a_command_block_is_accounted_for_by_running_or_by_its_reason() {
    let page = "```console\n$ a\n```\n<!-- not run: needs a cloud -->\n```sh\nb\n```\n\
                <!-- not run: -->\n```sh\nc\n```\n```yaml\nd: 1\n```\n````sh\n```console\n````\n\
                <!-- run by tests/x.rs the_test -->\n```sh\ne\n```\n";
    let run_by = vec![(19, "tests/x.rs".to_owned(), "the_test".to_owned())];
    assert_eq!(
        command_blocks(page, true),
        CommandBlocks {
            unaccounted: vec![(9, "sh".to_owned()), (15, "sh".to_owned())],
            run_by: run_by.clone(),
        },
        "a reason must not be empty; a block inside another is not a block"
    );
    assert_eq!(
        command_blocks(page, false).unaccounted,
        vec![
            (1, "console".to_owned()),
            (9, "sh".to_owned()),
            (15, "sh".to_owned())
        ],
        "a console block of a page that is not run needs a reason too"
    );
}
