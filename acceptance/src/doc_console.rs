//! Shell sessions as the docs write them: the ` ```console ` blocks a test runs and compares
//! (`tests/docs.rs` for the pages every user follows, `tests/install.rs` for the install guide).
//!
//! In a console block, a line starting `$ ` is a command. A line ending in `\` continues on the
//! next one; a here-document (`<<'EOF'` or `<<EOF`) takes the lines up to its terminator. The
//! command must exit 0, unless its (last) line ends in the comment `# exit N`. The lines after a
//! command, up to the next command or the end of the block, are its expected output (stdout and
//! stderr together); none: the output is not checked. Otherwise every output line must match, in
//! order, with runs of whitespace compared as one space (table columns); `...` in a line matches
//! any text, and a line that is only `...` matches any number of lines.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

/// One command of a console block.
#[derive(Debug, PartialEq)]
pub struct DocCommand {
    /// 1-based line of the `$ ` line, and of the block's opening fence.
    pub line: usize,
    pub block_line: usize,
    /// What bash runs: the command, its continuation lines and here-document.
    pub script: String,
    /// The exit status it must end with.
    pub exit: i32,
    /// Expected output lines; empty: not checked.
    pub expected: Vec<String>,
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
pub fn parse(markdown: &str) -> Result<Vec<DocCommand>, String> {
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
pub fn line_matches(expected: &str, actual: &str) -> bool {
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
pub fn output_matches(expected: &[String], actual: &[&str]) -> bool {
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

/// A directory of links to the tools a page calls by name (`kubectl`, `helm`: the cluster's, not
/// whatever the machine has), put first on `PATH`. Removed when dropped.
pub struct ToolDir(PathBuf);

impl ToolDir {
    /// `tools`: (name, the program it runs; a bare name is looked up on `PATH`). `tag` tells apart
    /// the directories of pages run at once in this process.
    pub fn new(tag: &str, tools: &[(&str, &str)]) -> Self {
        let dir =
            std::env::temp_dir().join(format!("kubespaces-docs-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory for the tools");
        for (name, program) in tools {
            let target = if program.contains('/') {
                PathBuf::from(program)
            } else {
                let found = std::process::Command::new("bash")
                    .args(["-c", &format!("command -v {program}")])
                    .output()
                    .expect("bash");
                PathBuf::from(String::from_utf8_lossy(&found.stdout).trim())
            };
            std::os::unix::fs::symlink(&target, dir.join(name)).expect("link a tool");
        }
        ToolDir(dir)
    }

    /// `PATH` with these tools first.
    pub fn path(&self) -> String {
        format!(
            "{}:{}",
            self.0.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }
}

impl Drop for ToolDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs one command with `bash -c` in `dir`, with `path` as `PATH`, for at most `timeout`; Err says
/// why it failed (its exit status or its output).
pub async fn run(
    command: &DocCommand,
    dir: &Path,
    path: &str,
    timeout: Duration,
) -> Result<(), String> {
    // GNU timeout runs the command in a process group of its own and signals all of it.
    let script = format!("set -o pipefail\n{{\n{}\n}} 2>&1", command.script);
    let output = tokio::process::Command::new("timeout")
        .args(["-k", "5", &timeout.as_secs().to_string()])
        .args(["bash", "-c", &script])
        .current_dir(dir)
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
            "timed out after {timeout:?}; output so far:\n{text}"
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

/// The repository's root, where the pages are (and where `tests/docs.rs` runs their commands).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Where a page's commands run: the directory, `PATH` and the longest a command may take.
pub struct Session<'a> {
    pub page: &'a str,
    pub dir: &'a Path,
    pub path: String,
    pub timeout: Duration,
}

impl Session<'_> {
    /// Runs `command` as [`run`] does and prints a line saying how it went; Err names the page,
    /// the command's line and its block's line, and says why.
    pub async fn step(&self, command: &DocCommand) -> Result<(), String> {
        let started = Instant::now();
        let result = run(command, self.dir, &self.path, self.timeout).await;
        let first = command.script.lines().next().unwrap_or_default();
        println!(
            "{}:{} $ {first}  [{}, {:.1} s]",
            self.page,
            command.line,
            if result.is_ok() { "ok" } else { "FAILED" },
            started.elapsed().as_secs_f64()
        );
        result.map_err(|why| {
            format!(
                "{}:{}: the command of the block at line {}\n  $ {}\n{why}",
                self.page, command.line, command.block_line, command.script
            )
        })
    }
}
