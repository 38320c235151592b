//! What tests/crossplane.rs renders with: the tools of `build-tools.sh --with crossplane`
//! (crossplane, xp-render, function-patch-and-transform), the example files, and kubectl's
//! server-side dry run.

use std::{
    net::{SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use kubespaces_acceptance::Env;
use serde_json::{Value, json};

pub fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

pub fn example(file: &str) -> PathBuf {
    repo().join("examples/crossplane").join(file)
}

pub fn read_yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A tool built by `build-tools.sh --with crossplane`.
pub fn tool(name: &str) -> PathBuf {
    kubespaces_acceptance::built_tool(name, "crossplane")
}

pub fn scratch_dir() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "kubespaces-crossplane-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// function-patch-and-transform as a process, in insecure mode on a loopback port, as render's
/// Development runtime expects it. Stopped on drop.
pub struct Function {
    child: Child,
    pub address: SocketAddr,
    log: PathBuf,
}

impl Function {
    pub fn start() -> Function {
        // A port the kernel just handed out and nobody else asked for since.
        let address = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port");
        let log = scratch_dir().join("function.log");
        let out = std::fs::File::create(&log).expect("function log");
        let child = Command::new(tool("function-patch-and-transform"))
            .args(["--insecure", "--debug", &format!("--address={address}")])
            .stdout(out.try_clone().expect("function log"))
            .stderr(out)
            .spawn()
            .expect("start function-patch-and-transform");
        let mut f = Function {
            child,
            address,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            if let Ok(Some(status)) = f.child.try_wait() {
                panic!(
                    "function-patch-and-transform exited ({status}) before serving on {address}:\n{}",
                    f.log_text()
                );
            }
            assert!(
                Instant::now() < deadline,
                "function-patch-and-transform does not serve on {address} after 30 s:\n{}",
                f.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        f
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `crossplane internal render` answered.
pub struct Rendered {
    pub code: i32,
    pub output: Value,
    pub stderr: String,
}

impl Rendered {
    pub fn xr(&self) -> &Value {
        &self.output["compositeResource"]
    }

    pub fn composed(&self, kind: &str) -> Option<&Value> {
        self.output["composedResources"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["kind"] == kind))
    }

    pub fn tenant(&self) -> &Value {
        self.composed("Tenant")
            .unwrap_or_else(|| panic!("no Tenant composed: {:#}\n{}", self.output, self.stderr))
    }

    /// The XR's condition of `type`: (status, reason).
    pub fn xr_condition(&self, type_: &str) -> (String, String) {
        self.xr()
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
            .map(|c| {
                (
                    c["status"].as_str().unwrap_or_default().to_owned(),
                    c["reason"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .unwrap_or_else(|| ("absent".into(), String::new()))
    }
}

/// Renders `xr` with the example Composition and Function (its target pointed at `function`),
/// the XRD, and the given observed composed resources and other objects (Secrets).
pub fn render(function: &Function, xr: &Value, observed: &[Value], required: &[Value]) -> Rendered {
    let dir = scratch_dir();
    let write = |name: &str, docs: &[Value]| {
        let text: Vec<String> = docs.iter().map(|d| d.to_string()).collect();
        let path = dir.join(name);
        std::fs::write(&path, text.join("\n---\n")).expect("write render input");
        path
    };
    let mut functions = read_yaml(&example("functions.yaml"));
    functions["metadata"]["annotations"]["render.crossplane.io/runtime-development-target"] =
        json!(function.address.to_string());
    let mut cmd = Command::new(tool("xp-render"));
    cmd.arg("--crossplane")
        .arg(tool("crossplane"))
        .arg("--xrd")
        .arg(example("xrd.yaml"));
    if !observed.is_empty() {
        cmd.arg("--observed-resources")
            .arg(write("observed.yaml", observed));
    }
    if !required.is_empty() {
        cmd.arg("--required-resources")
            .arg(write("required.yaml", required));
    }
    let out = cmd
        .arg(write("xr.yaml", std::slice::from_ref(xr)))
        .arg(example("composition.yaml"))
        .arg(write("functions.yaml", &[functions]))
        .stdin(Stdio::null())
        .output()
        .expect("run xp-render");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let output = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "xp-render printed no JSON ({e}), exit {:?}:\n{stderr}\nfunction log:\n{}",
            out.status.code(),
            function.log_text()
        )
    });
    let _ = std::fs::remove_dir_all(&dir);
    Rendered {
        code: out.status.code().unwrap_or(-1),
        output,
        stderr,
    }
}

pub fn example_xr() -> Value {
    read_yaml(&example("xr.yaml"))
}

/// Renders `xr` with nothing observed: what Crossplane creates first. Fails the test unless the
/// render succeeded.
pub fn first_render(function: &Function, xr: &Value) -> Rendered {
    let r = render(function, xr, &[], &[]);
    assert_eq!(r.code, 0, "render failed:\n{}", r.stderr);
    r
}

/// `kubectl apply --server-side --dry-run=server` of `tenant` with strict field validation,
/// as `as_user` when given; returns the object the API server would store, or its refusal.
pub fn dry_run_apply(env: &Env, tenant: &Value, as_user: Option<&str>) -> Result<Value, String> {
    let mut args = vec![
        "apply",
        "--server-side",
        "--field-manager=apiextensions.crossplane.io/composed",
        "--dry-run=server",
        "--validate=strict",
        "-o",
        "json",
        "-f",
        "-",
    ];
    if let Some(user) = as_user {
        args.extend(["--as", user]);
    }
    let out = env.kubectl(&args, Some(&tenant.to_string()));
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).expect("kubectl -o json"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}
