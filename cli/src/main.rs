//! kubespaces: see the library documentation. Errors are one line on stderr; exit codes are
//! listed in `kubespaces --help`.

use std::{path::PathBuf, time::Duration};

use clap::{CommandFactory, Parser, Subcommand};
use kubespaces_cli::{
    client::{CreateTenant, Session},
    credentials,
    error::{CliError, EXIT_CODES_HELP, Result, exit},
    kubeconfig, login,
    origin::{self, Endpoint},
    output::{self, Format},
    private_file,
    trust::CertificateAuthority,
    wait::{self, Goal},
};

#[derive(Parser)]
#[command(name = "kubespaces", version, about = "Your own Kubernetes: create and use KubeSpaces tenants", after_help = EXIT_CODES_HELP)]
struct Cli {
    /// The KubeSpaces server (default: the one you logged in to). https://, except on loopback
    /// addresses; your login's token is only ever sent to the server you logged in to.
    #[arg(long, global = true, env = "KUBESPACES_SERVER", value_parser = parse_server)]
    server: Option<String>,
    /// CA certificate(s), PEM, to trust for the server and the OIDC issuer besides the built-in
    /// roots (a private CA). Recorded with the login: later commands need it no more.
    #[arg(long, global = true, env = "KUBESPACES_CERTIFICATE_AUTHORITY", value_name = "FILE", value_parser = CertificateAuthority::from_flag)]
    certificate_authority: Option<CertificateAuthority>,
    /// Output format.
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = Format::Table)]
    output: Format,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Log in with your organisation's identity provider (OIDC device flow).
    Login {
        /// Do not try to open a browser; only print the URL and the code.
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget the stored tokens.
    Logout,
    /// Create, inspect, put to sleep, wake and delete tenants.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
}

#[derive(clap::Args)]
struct WaitArgs {
    /// Wait until the tenant is Ready (create, get, wake), Asleep (sleep) or gone (delete),
    /// showing its progress.
    #[arg(long)]
    wait: bool,
    /// How long --wait waits, e.g. 90s, 10m.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    timeout: Duration,
}

#[derive(Subcommand)]
enum TenantCommand {
    /// Create a tenant that you own.
    Create {
        name: String,
        /// CPU for your workloads, e.g. 8 or 500m.
        #[arg(long)]
        cpu: String,
        /// Memory for your workloads, e.g. 16Gi.
        #[arg(long)]
        memory: String,
        /// Persistent storage, e.g. 50Gi (without it the tenant cannot claim volumes).
        #[arg(long)]
        storage: Option<String>,
        /// Admins only: the owner's email.
        #[arg(long)]
        owner: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Show one tenant.
    Get {
        name: String,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// List your tenants (all tenants for admins).
    #[command(alias = "ls")]
    List,
    /// Put a tenant's control plane to sleep; its workloads keep running.
    ///
    /// The control plane runs no pod until the first connection to the tenant's API, or `tenant
    /// wake`, wakes it.
    Sleep {
        name: String,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Wake a sleeping tenant's control plane.
    Wake {
        name: String,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Delete a tenant and everything in it.
    Delete {
        name: String,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Fetch the tenant's kubeconfig: merged into your kubeconfig (context named after the
    /// tenant), or printed.
    Kubeconfig {
        name: String,
        /// Merge into $KUBECONFIG (its first file) or ~/.kube/config, keeping every other entry.
        #[arg(long, conflicts_with = "print")]
        merge: bool,
        /// Print it to stdout (the default without --merge).
        #[arg(long)]
        print: bool,
        /// With --merge: the kubeconfig file to merge into.
        #[arg(long, requires = "merge")]
        kubeconfig: Option<PathBuf>,
        /// With --merge: replace a cluster, user or context of the tenant's name that kubespaces
        /// did not write (without it, such an entry stops the merge).
        #[arg(long, requires = "merge")]
        force: bool,
    },
}

/// `--server`: refused here, before anything is sent, unless https:// (or loopback).
fn parse_server(text: &str) -> std::result::Result<String, String> {
    origin::checked(text, Endpoint::Server).map_err(|e| e.to_string())
}

fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let d: jiff::SignedDuration = text
        .parse()
        .map_err(|e| format!("{text:?} is not a duration such as 90s or 10m: {e}"))?;
    d.try_into()
        .map_err(|_| format!("{text:?} must not be negative"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => std::process::exit(exit::OK),
        Err(e) => {
            eprintln!("kubespaces: error: {}", e.one_line());
            std::process::exit(e.exit_code());
        }
    }
}

async fn run(cli: Cli) -> Result<()> {
    let format = cli.output;
    match cli.command {
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "kubespaces",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        Command::Login { no_browser } => {
            let (server, ca) = match cli.server {
                Some(server) => (server, cli.certificate_authority),
                // Logging in again to the server of the stored login (checked as --server is),
                // trusting the CA it recorded unless told another.
                None => match credentials::load() {
                    Ok(stored) if !stored.server.is_empty() => (
                        origin::checked(&stored.server, Endpoint::StoredServer)?,
                        cli.certificate_authority.or(stored.certificate_authority),
                    ),
                    _ => {
                        return Err(CliError::Other(
                            "which server? use: kubespaces login --server URL".into(),
                        ));
                    }
                },
            };
            let creds = login::device_login(&server, ca, |prompt| {
                let url = prompt
                    .verification_uri_complete
                    .as_deref()
                    .unwrap_or(&prompt.verification_uri);
                eprintln!("To log in, open this page in a browser:\n\n    {url}\n");
                eprintln!("and confirm the code: {}\n", prompt.user_code);
                let graphical = std::env::var_os("DISPLAY").is_some()
                    || std::env::var_os("WAYLAND_DISPLAY").is_some()
                    || cfg!(target_os = "macos")
                    || cfg!(windows);
                if !no_browser && graphical && webbrowser::open(url).is_ok() {
                    eprintln!("(opened in your browser)");
                }
                eprintln!("Waiting for you to confirm...");
            })
            .await?;
            credentials::save(&creds)?;
            eprintln!(
                "Logged in to {} as {} (tokens in {}).",
                creds.server,
                creds.email().unwrap_or_else(|| "?".into()),
                credentials::path()?.display()
            );
            Ok(())
        }
        Command::Logout => {
            if credentials::remove()? {
                eprintln!("Logged out.");
            } else {
                eprintln!("Not logged in.");
            }
            Ok(())
        }
        Command::Tenant(command) => {
            let mut session =
                Session::open(cli.server.as_deref(), cli.certificate_authority).await?;
            tenant(&mut session, command, format).await
        }
    }
}

async fn tenant(session: &mut Session, command: TenantCommand, format: Format) -> Result<()> {
    match command {
        TenantCommand::Create {
            name,
            cpu,
            memory,
            storage,
            owner,
            wait,
        } => {
            let created = session
                .create(&CreateTenant {
                    name: name.clone(),
                    cpu,
                    memory,
                    storage,
                    owner,
                })
                .await?;
            let shown = if wait.wait {
                wait::until(session, &name, Goal::Ready, wait.timeout).await?
            } else {
                eprintln!("tenant {name} created");
                created
            };
            print!("{}", output::print(&[shown], format, true));
            Ok(())
        }
        TenantCommand::Get { name, wait } => {
            let tenant = match wait.wait {
                true => wait::found(session, &name, wait.timeout).await?,
                false => session.get(&name).await?,
            };
            let tenant = if wait.wait && !tenant.is_ready() {
                wait::until(session, &name, Goal::Ready, wait.timeout).await?
            } else {
                tenant
            };
            print!("{}", output::print(&[tenant], format, true));
            Ok(())
        }
        TenantCommand::List => {
            let tenants = session.list().await?;
            print!("{}", output::print(&tenants, format, false));
            Ok(())
        }
        TenantCommand::Sleep { name, wait } => {
            session.sleep(&name).await?;
            if wait.wait {
                let asleep = wait::until(session, &name, Goal::Asleep, wait.timeout).await?;
                print!("{}", output::print(&[asleep], format, true));
            } else {
                eprintln!("tenant {name} is falling asleep");
            }
            Ok(())
        }
        TenantCommand::Wake { name, wait } => {
            session.wake(&name).await?;
            if wait.wait {
                let awake = wait::until(session, &name, Goal::Awake, wait.timeout).await?;
                print!("{}", output::print(&[awake], format, true));
            } else {
                eprintln!("tenant {name} is waking");
            }
            Ok(())
        }
        TenantCommand::Delete { name, wait } => {
            if wait.wait {
                // Watch first, so the deletion cannot slip by unseen.
                let stream = session.watch(&name).await?;
                session.delete(&name).await?;
                wait::gone(session, stream, &name, wait.timeout).await?;
                eprintln!("tenant {name} deleted");
            } else {
                session.delete(&name).await?;
                eprintln!("tenant {name} is being deleted");
            }
            Ok(())
        }
        TenantCommand::Kubeconfig {
            name,
            merge,
            print: _,
            kubeconfig: path,
            force,
        } => {
            let text = session.kubeconfig(&name).await?;
            if !merge {
                print!("{text}");
                return Ok(());
            }
            let target = kubeconfig::target(path.as_deref())?;
            // The user's kubeconfig is theirs: a link there (dotfiles) is theirs too, and kubectl
            // writes through it, so the merge writes where it points. (The token file, which
            // only the CLI writes, is never written through a link.)
            let target = std::fs::canonicalize(&target).unwrap_or(target);
            let existing = match std::fs::read_to_string(&target) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => {
                    return Err(CliError::Other(format!(
                        "cannot read {}: {e}",
                        target.display()
                    )));
                }
            };
            let merged = kubeconfig::merge(&existing, &text, &name, force)?;
            private_file::write(&target, merged.as_bytes())?;
            eprintln!(
                "context {name} merged into {} (use it: kubectl config use-context {name})",
                target.display()
            );
            Ok(())
        }
    }
}
