//! Compiles the vendored protocol files in `proto/` into tonic server stubs.
//!
//! `protox` parses the .proto files in pure Rust, so a fresh machine needs no `protoc`.
//! Only servers are generated: Terraform is the client. `generate_default_stubs` gives every
//! RPC an `Unimplemented` body, which Terraform tolerates for the optional ones
//! (MoveResourceState, ephemeral resources, functions calls, identity).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["tfplugin6.8.proto", "grpc_controller.proto"];
    let includes = ["../proto"];
    for f in files {
        println!("cargo:rerun-if-changed=../proto/{f}");
    }
    let fds = protox::compile(files, includes)?;
    // Their indented "DO NOT USE" banners would be taken by rustdoc for doc tests (and fail to
    // compile as Rust); the fields are documented in the .proto file. (The builder's own
    // disable_comments only reaches the service code.)
    let mut messages = tonic_prost_build::Config::new();
    messages.disable_comments([
        ".tfplugin6.PlanResourceChange.Response.legacy_type_system",
        ".tfplugin6.ApplyResourceChange.Response.legacy_type_system",
    ]);
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .generate_default_stubs(true)
        .compile_fds_with_config(fds, messages)?;
    Ok(())
}
