//! The user documentation, checked against the real cluster and the operator's code.
//!
//! **Runnable blocks.** Every fenced ` ```console ` block of the [`PAGES`] is a shell session that is
//! run, in order, against the cluster of the harness; other blocks (` ```sh `, ` ```yaml `, …) are
//! not run. Their syntax (commands, continuations, here-documents, `# exit N`, expected output with
//! `...`) is `kubespaces_acceptance::doc_console`'s.
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

use std::{path::PathBuf, time::Duration};

use kubespaces_acceptance::{
    Env,
    doc_console::{DocCommand, Session, ToolDir, line_matches, output_matches, parse, repo_root},
    pods,
};

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

fn read(relative: &str) -> String {
    let path = repo_root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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

    let tools = ToolDir::new(tenant, &[("kubectl", &env.kubectl)]);
    let root = repo_root();
    let session = Session {
        page,
        dir: &root,
        path: tools.path(),
        timeout: COMMAND_TIMEOUT,
    };
    pods::delete_tenant(&env, tenant).await;
    let mut failure = None;
    for command in &commands {
        if let Err(why) = session.step(command).await {
            failure = Some(why);
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
        // The control plane's pod as the scheduler and the kubelet report it, which
        // ControlPlaneReady's message quotes (observe::control_plane::pod_waiting).
        "PodScheduled",
        "ContainerCreating",
        "PodInitializing",
        // With the waker: the route's grant in its namespace, and the control plane's policy
        // type that admits its pods (control_plane::route, control_plane::network).
        "ReferenceGrant",
        "Ingress",
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
