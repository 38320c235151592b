//! The go-plugin handshake: the environment Terraform/OpenTofu set for a plugin, and the
//! one line the plugin prints on stdout to say where it listens.

use base64::Engine as _;

pub const MAGIC_COOKIE_KEY: &str = "TF_PLUGIN_MAGIC_COOKIE";
pub const MAGIC_COOKIE_VALUE: &str =
    "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2";
/// go-plugin's own protocol version, the first field of the handshake line.
const CORE_PROTOCOL_VERSION: u32 = 1;
/// The only plugin protocol we implement (tfplugin6).
pub const PROTOCOL_VERSION: u32 = 6;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum HandshakeError {
    #[error(
        "This binary is a plugin. These are not meant to be executed directly.\n\
         Please execute the program that consumes these plugins (terraform or tofu), which \
         will load any plugins automatically.\n\
         To debug the provider, run it with --debug and follow the instructions it prints."
    )]
    NotLaunchedByTerraform,
    #[error(
        "Terraform offered plugin protocol versions {offered:?}, but this provider speaks \
         only protocol 6 (Terraform ≥ 1.0 or OpenTofu)"
    )]
    NoCommonVersion { offered: String },
}

/// go-plugin refuses to run without the cookie; so do we, so that someone running the binary
/// by hand gets an explanation instead of a process that silently waits for a client.
pub fn check_cookie(value: Option<&str>) -> Result<(), HandshakeError> {
    match value {
        Some(v) if v == MAGIC_COOKIE_VALUE => Ok(()),
        _ => Err(HandshakeError::NotLaunchedByTerraform),
    }
}

/// Picks protocol 6 from `PLUGIN_PROTOCOL_VERSIONS` (e.g. `5,6`; order not guaranteed).
/// A client that sets nothing predates version negotiation and is assumed to want ours.
pub fn negotiate(offered: Option<&str>) -> Result<u32, HandshakeError> {
    let Some(offered) = offered.filter(|s| !s.trim().is_empty()) else {
        return Ok(PROTOCOL_VERSION);
    };
    if offered
        .split(',')
        .any(|v| v.trim().parse::<u32>() == Ok(PROTOCOL_VERSION))
    {
        Ok(PROTOCOL_VERSION)
    } else {
        Err(HandshakeError::NoCommonVersion {
            offered: offered.to_owned(),
        })
    }
}

/// `1|6|unix|/tmp/x.sock|grpc|<cert>`: the certificate is the server's DER in *unpadded*
/// standard base64 (go-plugin decodes with `RawStdEncoding`; padding breaks it), and empty
/// when TLS is off.
pub fn handshake_line(network: &str, addr: &str, server_cert_der: Option<&[u8]>) -> String {
    let cert = server_cert_der
        .map(|der| base64::engine::general_purpose::STANDARD_NO_PAD.encode(der))
        .unwrap_or_default();
    format!("{CORE_PROTOCOL_VERSION}|{PROTOCOL_VERSION}|{network}|{addr}|grpc|{cert}")
}

/// The `TF_REATTACH_PROVIDERS` value for debug mode, keyed by provider source address.
pub fn reattach_json(provider_address: &str, pid: u32, socket: &str) -> String {
    serde_json::json!({
        provider_address: {
            "Protocol": "grpc",
            "ProtocolVersion": PROTOCOL_VERSION,
            "Pid": pid,
            "Test": true,
            "Addr": {"Network": "unix", "String": socket},
        }
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_must_match_exactly() {
        assert_eq!(check_cookie(Some(MAGIC_COOKIE_VALUE)), Ok(()));
        assert_eq!(
            check_cookie(None),
            Err(HandshakeError::NotLaunchedByTerraform)
        );
        assert_eq!(
            check_cookie(Some("d602")),
            Err(HandshakeError::NotLaunchedByTerraform)
        );
    }

    #[test]
    fn the_hand_run_message_says_what_to_do() {
        let msg = HandshakeError::NotLaunchedByTerraform.to_string();
        assert!(msg.starts_with("This binary is a plugin."));
        assert!(msg.contains("--debug"));
    }

    #[test]
    fn negotiates_six_from_any_order() {
        assert_eq!(negotiate(Some("5,6")), Ok(6));
        assert_eq!(negotiate(Some("6,5")), Ok(6));
        assert_eq!(negotiate(Some(" 6 ")), Ok(6));
        assert_eq!(negotiate(None), Ok(6));
        assert!(matches!(
            negotiate(Some("4,5")),
            Err(HandshakeError::NoCommonVersion { .. })
        ));
    }

    #[test]
    fn line_uses_unpadded_base64_der() {
        // 4 bytes encode to 6 characters + "==" with padding; go-plugin needs none.
        let line = handshake_line("unix", "/tmp/p.sock", Some(&[0x30, 0x82, 0x01, 0x02]));
        assert_eq!(line, "1|6|unix|/tmp/p.sock|grpc|MIIBAg");
        assert_eq!(handshake_line("unix", "/s", None), "1|6|unix|/s|grpc|");
    }

    #[test]
    fn reattach_json_has_go_plugins_field_names() {
        let v: serde_json::Value =
            serde_json::from_str(&reattach_json("registry.terraform.io/a/b", 42, "/s")).unwrap();
        let e = &v["registry.terraform.io/a/b"];
        assert_eq!(e["ProtocolVersion"], 6);
        assert_eq!(e["Pid"], 42);
        assert_eq!(e["Addr"]["Network"], "unix");
        assert_eq!(e["Addr"]["String"], "/s");
    }
}
