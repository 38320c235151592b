//! A Terraform working directory per test: its own CLI configuration, `main.tf` and state.
//!
//! Two ways to find the provider: `dev_overrides` pointing at this build (no `init`, what
//! most tests use), or a filesystem mirror holding a copy of the binary, installed by a real
//! `init` as an offline user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_terraform-provider-kubespaces");
/// The version the provider reports (`--version`) and is mirrored under.
pub const PROVIDER_VERSION: &str = env!("CARGO_PKG_VERSION");
/// Where `kubespaces/kubespaces` resolves to: Terraform's default provider host and
/// OpenTofu's. Protocol identifiers (part of provider source addresses), not URLs we fetch.
pub const PROVIDER_HOSTS: [&str; 2] = ["registry.terraform.io", "registry.opentofu.org"];

pub struct Workspace {
    pub dir: PathBuf,
    terraform: String,
    kubeconfig: String,
    cli_config: PathBuf,
    /// Installed by `init` (from the mirror) rather than overridden: then pinned to a version.
    installed: bool,
    /// Extra environment for every terraform command.
    env: Vec<(String, String)>,
}

impl Workspace {
    /// The provider from this build through `dev_overrides`: no `init`.
    pub fn new(test: &str) -> Self {
        let ws = Self::empty(test);
        let plugin_dir = Path::new(BIN).parent().unwrap().display().to_string();
        let overrides: String = PROVIDER_HOSTS
            .iter()
            .map(|h| format!("    \"{h}/kubespaces/kubespaces\" = \"{plugin_dir}\"\n"))
            .collect();
        std::fs::write(
            &ws.cli_config,
            format!("provider_installation {{\n  dev_overrides {{\n{overrides}  }}\n}}\n"),
        )
        .unwrap();
        ws
    }

    /// The provider installed by `init` from a filesystem mirror in the unpacked layout
    /// (`<host>/kubespaces/kubespaces/<version>/<os>_<arch>/terraform-provider-kubespaces_v<version>`),
    /// holding a copy of this build; the network is never consulted for it.
    pub fn with_filesystem_mirror(test: &str) -> Self {
        let mut ws = Self::empty(test);
        let mirror = ws.dir.join("mirror");
        for host in PROVIDER_HOSTS {
            let dir = mirror
                .join(host)
                .join("kubespaces/kubespaces")
                .join(PROVIDER_VERSION)
                .join(platform());
            std::fs::create_dir_all(&dir).unwrap();
            // A regular file, as a user unpacking a release gets (not a symlink, which
            // Terraform would resolve): a hard link where the filesystem allows, since the
            // debug binary is 200 MB, else a copy.
            let file = dir.join(format!("terraform-provider-kubespaces_v{PROVIDER_VERSION}"));
            if std::fs::hard_link(BIN, &file).is_err() {
                std::fs::copy(BIN, &file).unwrap();
            }
        }
        let patterns = PROVIDER_HOSTS
            .iter()
            .map(|h| format!("\"{h}/kubespaces/*\""))
            .collect::<Vec<_>>()
            .join(", ");
        std::fs::write(
            &ws.cli_config,
            format!(
                "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [{patterns}]\n  }}\n  direct {{\n    exclude = [{patterns}]\n  }}\n}}\n",
                mirror.display()
            ),
        )
        .unwrap();
        ws.installed = true;
        ws
    }

    fn empty(test: &str) -> Self {
        assert_eq!(
            std::env::var("TF_ACC").as_deref(),
            Ok("1"),
            "acceptance tests need TF_ACC=1"
        );
        let kubeconfig =
            std::env::var("KUBECONFIG").expect("KUBECONFIG of a cluster with the operator");
        let dir =
            std::env::temp_dir().join(format!("kubespaces-tf-acc-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let terraform =
            std::env::var("TF_ACC_TERRAFORM_PATH").unwrap_or_else(|_| "terraform".into());
        Self {
            cli_config: dir.join("cli.tfrc"),
            dir,
            terraform,
            kubeconfig,
            installed: false,
            env: vec![],
        }
    }

    /// Sets `name` in the environment of every terraform command from now on.
    pub fn set_env(&mut self, name: &str, value: &str) {
        self.env.push((name.to_owned(), value.to_owned()));
    }

    /// `main.tf`: the provider configured with the test cluster's kubeconfig, then `body`.
    pub fn write(&self, body: &str) {
        self.write_with_provider_config(
            &format!("  config_path = \"{}\"\n", self.kubeconfig),
            body,
        );
    }

    /// `main.tf`: the provider block with `provider_config` inside, then `body`.
    pub fn write_with_provider_config(&self, provider_config: &str, body: &str) {
        // An installed provider is pinned, as users pin it; an overridden one has no version.
        let version = match self.installed {
            true => format!(", version = \"= {PROVIDER_VERSION}\""),
            false => String::new(),
        };
        let provider = format!(
            "terraform {{\n  required_providers {{\n    kubespaces = {{ source = \"kubespaces/kubespaces\"{version} }}\n  }}\n}}\nprovider \"kubespaces\" {{\n{provider_config}}}\n"
        );
        std::fs::write(self.dir.join("main.tf"), format!("{provider}{body}")).unwrap();
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.terraform);
        c.args(args)
            .arg("-no-color")
            .current_dir(&self.dir)
            .env("TF_CLI_CONFIG_FILE", &self.cli_config)
            .env("TF_IN_AUTOMATION", "1")
            .env("CHECKPOINT_DISABLE", "1")
            // A user's plugin cache would stand between `init` and the mirror.
            .env_remove("TF_PLUGIN_CACHE_DIR")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().unwrap();
        eprintln!(
            "$ terraform {}\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "terraform {args:?} failed");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `plan -detailed-exitcode`: 0 no changes, 1 error, 2 changes.
    pub fn plan_code(&self) -> i32 {
        self.run(&["plan", "-detailed-exitcode"])
            .status
            .code()
            .unwrap_or(-1)
    }

    /// Actions planned for one resource, from `show -json` of a saved plan.
    pub fn planned_actions(&self, address: &str) -> Vec<String> {
        self.ok(&["plan", "-out=plan.out"]);
        let json: serde_json::Value =
            serde_json::from_str(&self.ok(&["show", "-json", "plan.out"])).unwrap();
        json["resource_changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["address"] == address)
            .map(|c| serde_json::from_value(c["change"]["actions"].clone()).unwrap())
            .unwrap_or_default()
    }

    /// Every attribute of one resource in the state (`show -json`); null when it is not there.
    pub fn resource_values(&self, address: &str) -> serde_json::Value {
        let json: serde_json::Value = serde_json::from_str(&self.ok(&["show", "-json"])).unwrap();
        json["values"]["root_module"]["resources"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["address"] == address))
            .map(|r| r["values"].clone())
            .unwrap_or(serde_json::Value::Null)
    }

    /// Every state file of the workspace as it is on disk (`terraform.tfstate`, its backup),
    /// one after the other.
    pub fn state_files(&self) -> String {
        let mut files: Vec<_> = std::fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .contains(".tfstate")
            })
            .collect();
        files.sort();
        assert!(
            files.iter().any(|p| p.ends_with("terraform.tfstate")),
            "no terraform.tfstate in {}",
            self.dir.display()
        );
        files
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect()
    }

    pub fn state_value(&self, address: &str, attr: &str) -> serde_json::Value {
        self.resource_values(address)[attr].clone()
    }

    /// `output -json`: each output's `value` (sensitive ones included), by name.
    pub fn outputs(&self) -> serde_json::Value {
        let json: serde_json::Value = serde_json::from_str(&self.ok(&["output", "-json"])).unwrap();
        let values = json
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v["value"].clone()))
            .collect();
        serde_json::Value::Object(values)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = self.command(&["destroy", "-auto-approve"]).output();
        // A failed test's directory is kept for a look at its state and logs.
        if std::thread::panicking() {
            eprintln!("kept {} for inspection", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Terraform's name for this machine's platform, e.g. `linux_amd64`.
pub fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    };
    format!("{}_{arch}", std::env::consts::OS)
}

/// Terraform wraps diagnostics at the terminal width; compare with whitespace collapsed.
pub fn collapsed(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
