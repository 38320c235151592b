//! When things go wrong: invalid configuration, interruption, a tenant that fails or does not
//! get Ready in time, and a cluster that does not serve the Tenant API. Nothing is leaked or
//! forgotten.

use super::*;

#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn invalid_configuration_fails_at_plan_on_the_attribute() {
    let ws = Workspace::new("invalid");
    ws.write(&tenant_tf("acc-invalid", "lots").replace("alice@example.com", "alice"));
    let out = ws.run(&["plan"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Each diagnostic names its attribute and quotes its line.
    assert!(stderr.contains("Invalid cpu"), "{stderr}");
    assert!(stderr.contains("cpu    = \"lots\""), "{stderr}");
    assert!(stderr.contains("Invalid owner"), "{stderr}");
    assert!(stderr.contains("owner  = \"alice\""), "{stderr}");
    assert!(stderr.contains("is not an email address"), "{stderr}");
}

/// Ctrl-C while apply waits for a tenant that is not getting Ready: Terraform asks the provider
/// to stop (StopProvider) and waits for the apply to return, so it is the provider that ends the
/// wait, early, and returns the tenant, which Terraform keeps in state, tainted. Without
/// StopProvider the wait would run into the 10-minute create timeout.
#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn interrupt_during_apply_keeps_the_tenant_in_state() {
    use std::os::unix::process::CommandExt;
    let ws = Workspace::new("sigint");
    let api = tenants().await;
    let name = format!("acc-int-{}", std::process::id());
    // Not Ready before the interrupt, nor after: the API server refuses the tenant's namespace.
    let hold = NamespaceHold::new(
        &format!("kubespaces-acc-int-{}", std::process::id()),
        &names::namespace(&name),
    )
    .await;
    ws.write(&tenant_tf_with(
        &name,
        "1",
        "  timeouts {\n    create = \"10m\"\n  }\n",
    ));
    let stderr_path = ws.dir.join("apply.stderr");
    // Its own process group, like a terminal's foreground job: Ctrl-C reaches Terraform
    // and the provider alike.
    let child = ws
        .command(&["apply", "-auto-approve"])
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let mut terraform = KillOnDrop(child);
    // The provider has created the tenant and is waiting for it.
    kubespaces_acceptance::wait_for(&format!("tenant {name} to be created"), WAIT, || async {
        api.get_opt(&name).await.unwrap().map(|_| ())
    })
    .await;
    Command::new("kill")
        .args(["-INT", "--", &format!("-{}", terraform.0.id())])
        .status()
        .unwrap();
    let status = kubespaces_acceptance::wait_for("terraform to exit after Ctrl-C", WAIT, || {
        let exited = terraform.0.try_wait().unwrap();
        async move { exited }
    })
    .await;
    let stderr = collapsed(&std::fs::read(&stderr_path).unwrap());
    assert!(!status.success(), "an interrupted apply fails: {stderr}");
    assert!(
        stderr.contains(&format!("Interrupted while waiting for tenant \"{name}\"")),
        "the provider ended its wait on StopProvider: {stderr}"
    );
    assert!(
        api.get_opt(&name).await.unwrap().is_some(),
        "the tenant was created"
    );
    let state = ws.ok(&["state", "list"]);
    assert!(
        state.contains("kubespaces_tenant.t"),
        "and recorded: {state}"
    );
    assert!(
        ws.ok(&["show"]).contains("(tainted)"),
        "tainted, since it never got Ready"
    );

    hold.release().await;
    ws.ok(&["destroy", "-auto-approve"]);
    assert!(api.get_opt(&name).await.unwrap().is_none());
}

/// A spawned Terraform (and its process group), killed if the test ends before it does.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.0.id())])
                .status();
            let _ = self.0.wait();
        }
    }
}

#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn failed_create_leaves_a_tainted_tenant_that_the_next_apply_replaces() {
    use k8s_openapi::api::core::v1::Namespace;
    let ws = Workspace::new("tainted");
    let api = tenants().await;
    let namespaces = namespaces().await;
    let name = format!("acc-taint-{}", std::process::id());
    // A namespace of the tenant's name that KubeSpaces did not create: the operator refuses
    // it (NamespaceConflict) and the tenant fails permanently.
    let squatter: Namespace = serde_json::from_value(serde_json::json!({
        "metadata": {"name": names::namespace(&name)}
    }))
    .unwrap();
    namespaces
        .create(&Default::default(), &squatter)
        .await
        .unwrap();

    ws.write(&tenant_tf(&name, "1"));
    let out = ws.run(&["apply", "-auto-approve"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = collapsed(&out.stderr);
    assert!(
        stderr.contains(&format!("Tenant \"{name}\" failed")),
        "{stderr}"
    );
    assert!(
        stderr.contains("already exists"),
        "the operator's reason: {stderr}"
    );
    assert!(
        ws.ok(&["show"]).contains("(tainted)"),
        "kept in state, tainted"
    );
    assert!(
        api.get_opt(&name).await.unwrap().is_some(),
        "and not leaked"
    );

    namespaces
        .delete(&names::namespace(&name), &Default::default())
        .await
        .unwrap();
    wait_namespace_gone(&names::namespace(&name)).await;
    assert_eq!(
        ws.planned_actions("kubespaces_tenant.t"),
        vec!["delete", "create"]
    );
    ws.ok(&["apply", "-auto-approve"]);
    assert!(api.get(&name).await.unwrap().is_ready());
}

#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn create_timeout_leaves_a_tainted_tenant_that_the_next_apply_replaces() {
    let ws = Workspace::new("timeout");
    let api = tenants().await;
    let name = format!("acc-hold-{}", std::process::id());
    let namespace = names::namespace(&name);
    // Provisioning genuinely stuck: the API server refuses the tenant's namespace, so the
    // operator keeps retrying and the tenant never gets Ready.
    let hold = NamespaceHold::new(
        &format!("kubespaces-acc-hold-{}", std::process::id()),
        &namespace,
    )
    .await;

    // Long enough for the operator's first pass to record why (under load it waits for a helm
    // render slot first: 5 s was sometimes too short for that), far shorter than a Ready.
    ws.write(&tenant_tf_with(
        &name,
        "1",
        "  timeouts {\n    create = \"20s\"\n  }\n",
    ));
    let out = ws.run(&["apply", "-auto-approve"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = collapsed(&out.stderr);
    assert!(
        stderr.contains(&format!("Timed out waiting for tenant \"{name}\"")),
        "{stderr}"
    );
    assert!(stderr.contains("Not Ready after 20s"), "{stderr}");
    assert!(
        stderr.contains(HOLD_MESSAGE),
        "the error gives the operator's reason: {stderr}"
    );
    assert!(
        ws.ok(&["show"]).contains("(tainted)"),
        "kept in state, tainted"
    );
    let stuck = api.get_opt(&name).await.unwrap().expect("and not leaked");
    let synced = stuck
        .condition(conditions::SYNCED)
        .map(|c| c.message.as_str());
    assert!(
        synced.is_some_and(|m| m.contains(HOLD_MESSAGE)),
        "stuck because of the hold: {synced:?}"
    );
    assert!(!namespace_exists(&namespace).await, "the hold held");

    hold.release().await;
    // The replacement gets the time a tenant's control plane needs to start.
    ws.write(&tenant_tf(&name, "1"));
    assert_eq!(
        ws.planned_actions("kubespaces_tenant.t"),
        vec!["delete", "create"]
    );
    ws.ok(&["apply", "-auto-approve"]);
    assert!(api.get(&name).await.unwrap().is_ready());

    ws.ok(&["destroy", "-auto-approve"]);
    assert!(
        api.get_opt(&name).await.unwrap().is_none(),
        "destroy waits until gone"
    );
    wait_namespace_gone(&namespace).await;
}

/// Pointed at an API server that does not serve Tenants (another cluster, a wrong context; here
/// a path on the right server where nothing is served), the provider says so instead of taking
/// the tenants for deleted: the plan fails and the state keeps them, and destroy forgets nothing.
#[tokio::test]
#[ignore = "needs TF_ACC=1, terraform and a KUBECONFIG whose cluster runs the operator"]
async fn a_cluster_without_the_tenant_api_is_an_error_not_an_empty_cluster() {
    let pid = std::process::id();
    let api = tenants().await;
    let name = format!("acc-wrong-{pid}");
    // The kubeconfig's own user: only someone allowed to ask is told 404.
    let cluster = service_account::connection();
    let ws = Workspace::new("wrong");
    ws.write(&tenant_tf(&name, "1"));
    ws.ok(&["apply", "-auto-approve"]);

    let ca_path = ws.dir.join("ca.pem");
    std::fs::write(&ca_path, &cluster.ca).unwrap();
    ws.write_with_provider_config(
        &format!(
            "  host                   = \"{}/not-the-kubernetes-api\"\n  token                  = \"{}\"\n  cluster_ca_certificate = file(\"{}\")\n",
            cluster.host,
            cluster.admin_token,
            ca_path.display()
        ),
        &tenant_tf(&name, "1"),
    );
    for command in [&["plan"][..], &["destroy", "-auto-approve"][..]] {
        let out = ws.run(command);
        assert_eq!(out.status.code(), Some(1), "{command:?}");
        let stderr = collapsed(&out.stderr);
        assert!(
            stderr.contains("does not serve the Tenant API"),
            "{command:?}: {stderr}"
        );
        assert!(
            ws.ok(&["state", "list"]).contains("kubespaces_tenant.t"),
            "{command:?} keeps the tenant in state"
        );
    }
    assert!(
        api.get(&name).await.unwrap().is_ready(),
        "and it is untouched"
    );

    ws.write(&tenant_tf(&name, "1"));
    ws.ok(&["destroy", "-auto-approve"]);
    assert!(api.get_opt(&name).await.unwrap().is_none());
}
