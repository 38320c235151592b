//! The provider binary: argument parsing, logging, and handing over to the plugin server.

use terraform_provider_kubespaces::{logging, plugin, server};

use std::process::ExitCode;

/// The provider's source address for reattach; Terraform's default registry host, so that
/// `source = "kubespaces/kubespaces"` matches in Terraform.
const PROVIDER_ADDRESS: &str = "registry.terraform.io/kubespaces/kubespaces";

const USAGE: &str = "\
terraform-provider-kubespaces: Terraform/OpenTofu provider for KubeSpaces tenants.

Terraform and OpenTofu start this program themselves. For development:
  --debug                      serve without Terraform's supervision and print the
                               TF_REATTACH_PROVIDERS value to attach Terraform to it
  --provider-address ADDRESS   source address for --debug (default {ADDRESS})
  --version                    print the version
";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut debug = false;
    let mut address = PROVIDER_ADDRESS.to_owned();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--debug" | "-debug" => debug = true,
            "--provider-address" => match args.next() {
                Some(a) => address = a,
                None => return usage_error("--provider-address needs a value"),
            },
            "--version" | "-version" => {
                println!("{}", env!("CARGO_PKG_VERSION"));
                return ExitCode::SUCCESS;
            }
            "--help" | "-h" => {
                print!("{}", usage());
                return ExitCode::SUCCESS;
            }
            other => return usage_error(&format!("unknown argument {other:?}")),
        }
    }
    logging::init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("starting the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mode = if debug {
        plugin::Mode::Debug {
            provider_address: address,
        }
    } else {
        plugin::Mode::Managed
    };
    match runtime.block_on(plugin::serve(server::KubespacesProvider::default(), mode)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(plugin::PluginError::Handshake(e)) => {
            // Plain text, not JSON: this is for a person at a terminal.
            eprintln!("{e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            tracing::error!(error = %e, "provider failed");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> String {
    USAGE.replace("{ADDRESS}", PROVIDER_ADDRESS)
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("{msg}\n\n{}", usage());
    ExitCode::from(2)
}
