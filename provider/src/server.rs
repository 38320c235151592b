//! The tfplugin6 `Provider` service: decodes requests, hands plain values to the resource
//! logic, encodes the answers. Problems a user can fix become diagnostics; gRPC errors are
//! kept for requests that make no sense (an unknown type name).

use tokio::sync::RwLock;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::config;
use crate::diag::{self, Diag};
use crate::proto::tfplugin6::{self as tf, provider_server::Provider};
use crate::tenant::store::KubeStore;
use crate::tenant::{self, ops, schema as ts};
use crate::value::{self, Type, Value};

type RpcResult<T> = Result<Response<T>, Status>;

#[derive(Default)]
pub struct KubespacesProvider {
    /// Set by ConfigureProvider: the client, or why there is none.
    client: RwLock<Option<Result<kube::Client, String>>>,
    /// Cancelled by StopProvider (Ctrl-C in Terraform): in-flight waits end early.
    stop: CancellationToken,
}

impl KubespacesProvider {
    /// The store for the configured cluster, or the reason there is none, as a diagnostic.
    async fn store(&self) -> Result<KubeStore, Diag> {
        match &*self.client.read().await {
            Some(Ok(client)) => Ok(KubeStore::new(client.clone())),
            Some(Err(e)) => Err(Diag::error(
                "The kubespaces provider cannot reach the cluster",
                e.clone(),
            )),
            None => Err(Diag::error(
                "The kubespaces provider is not configured",
                "Terraform did not call ConfigureProvider before using the provider.",
            )),
        }
    }
}

/// `kubespaces_tenant` is the only resource and data source; any other name is a request that
/// makes no sense, hence a gRPC error rather than a diagnostic.
fn check_type(type_name: &str) -> Result<(), Status> {
    if type_name == ts::TYPE_NAME {
        Ok(())
    } else {
        Err(Status::invalid_argument(format!(
            "unknown resource type {type_name:?}"
        )))
    }
}

/// Decodes a DynamicValue; an absent one is null, like Terraform's own `decodeDynamicValue`.
fn decode(dv: Option<&tf::DynamicValue>, ty: &Type) -> Result<Value, Diag> {
    let Some(dv) = dv else { return Ok(Value::Null) };
    let result = if dv.msgpack.is_empty() && !dv.json.is_empty() {
        value::from_json(&dv.json, ty)
    } else {
        value::from_msgpack(&dv.msgpack, ty)
    };
    result.map_err(|e| Diag::error("Could not decode a value from Terraform", e.to_string()))
}

fn encode(v: &Value, ty: &Type) -> Result<tf::DynamicValue, Diag> {
    value::to_msgpack(v, ty)
        .map(|msgpack| tf::DynamicValue {
            msgpack,
            json: vec![],
        })
        .map_err(|e| Diag::error("Provider bug: could not encode a value", e.to_string()))
}

fn server_capabilities() -> tf::ServerCapabilities {
    tf::ServerCapabilities {
        // Destroy needs no provider-side plan; Terraform then skips PlanResourceChange.
        plan_destroy: false,
        // The schema is static, so Terraform may reuse a cached copy.
        get_provider_schema_optional: true,
        move_resource_state: false,
    }
}

#[tonic::async_trait]
impl Provider for KubespacesProvider {
    async fn get_metadata(
        &self,
        _request: Request<tf::get_metadata::Request>,
    ) -> RpcResult<tf::get_metadata::Response> {
        Ok(Response::new(tf::get_metadata::Response {
            server_capabilities: Some(server_capabilities()),
            diagnostics: vec![],
            data_sources: vec![tf::get_metadata::DataSourceMetadata {
                type_name: ts::TYPE_NAME.to_owned(),
            }],
            resources: vec![tf::get_metadata::ResourceMetadata {
                type_name: ts::TYPE_NAME.to_owned(),
            }],
            functions: vec![],
            ephemeral_resources: vec![],
        }))
    }

    async fn get_provider_schema(
        &self,
        _request: Request<tf::get_provider_schema::Request>,
    ) -> RpcResult<tf::get_provider_schema::Response> {
        Ok(Response::new(tf::get_provider_schema::Response {
            provider: Some(config::SCHEMA.to_schema(0)),
            resource_schemas: [(
                ts::TYPE_NAME.to_owned(),
                ts::RESOURCE.to_schema(ts::SCHEMA_VERSION),
            )]
            .into(),
            data_source_schemas: [(ts::TYPE_NAME.to_owned(), ts::DATA_SOURCE.to_schema(0))].into(),
            server_capabilities: Some(server_capabilities()),
            ..Default::default()
        }))
    }

    async fn get_functions(
        &self,
        _request: Request<tf::get_functions::Request>,
    ) -> RpcResult<tf::get_functions::Response> {
        // OpenTofu asks for functions on its own path; "none" beats an Unimplemented error.
        Ok(Response::new(tf::get_functions::Response::default()))
    }

    async fn validate_provider_config(
        &self,
        request: Request<tf::validate_provider_config::Request>,
    ) -> RpcResult<tf::validate_provider_config::Response> {
        let diags = match decode(request.get_ref().config.as_ref(), &config::TYPE) {
            Ok(v) => config::validate(&v),
            Err(d) => vec![d],
        };
        Ok(Response::new(tf::validate_provider_config::Response {
            diagnostics: diag::to_proto(&diags),
        }))
    }

    async fn configure_provider(
        &self,
        request: Request<tf::configure_provider::Request>,
    ) -> RpcResult<tf::configure_provider::Response> {
        let req = request.get_ref();
        tracing::debug!(terraform_version = %req.terraform_version, "configuring provider");
        let mut diags = vec![];
        let state = match decode(req.config.as_ref(), &config::TYPE) {
            Err(d) => Err(d.detail),
            Ok(v) => match config::source(&v, |k| std::env::var(k).ok()) {
                // Not an error yet: a plan without existing tenants needs no client.
                Err(diags) => Err(diags
                    .into_iter()
                    .map(|d| d.detail)
                    .collect::<Vec<_>>()
                    .join("; ")),
                Ok(source) => {
                    diags.extend(config::warnings(&v, &source));
                    config::client(&source)
                        .await
                        .inspect(crate::connection::warm_up)
                        .map_err(|e| e.to_string())
                }
            },
        };
        if let Err(e) = &state {
            diags.push(Diag::warning(
                "The kubespaces provider has no cluster connection",
                e.clone(),
            ));
        }
        *self.client.write().await = Some(state);
        Ok(Response::new(tf::configure_provider::Response {
            diagnostics: diag::to_proto(&diags),
        }))
    }

    async fn validate_resource_config(
        &self,
        request: Request<tf::validate_resource_config::Request>,
    ) -> RpcResult<tf::validate_resource_config::Response> {
        let req = request.get_ref();
        check_type(&req.type_name)?;
        let diags = match decode(req.config.as_ref(), &ts::RESOURCE_TYPE) {
            Ok(v) => tenant::validate::validate(&v),
            Err(d) => vec![d],
        };
        Ok(Response::new(tf::validate_resource_config::Response {
            diagnostics: diag::to_proto(&diags),
        }))
    }

    async fn validate_data_resource_config(
        &self,
        request: Request<tf::validate_data_resource_config::Request>,
    ) -> RpcResult<tf::validate_data_resource_config::Response> {
        let req = request.get_ref();
        check_type(&req.type_name)?;
        let diags = match decode(req.config.as_ref(), &ts::DATA_SOURCE_TYPE) {
            Ok(v) => tenant::validate::validate_data_source(&v),
            Err(d) => vec![d],
        };
        Ok(Response::new(tf::validate_data_resource_config::Response {
            diagnostics: diag::to_proto(&diags),
        }))
    }

    async fn upgrade_resource_state(
        &self,
        request: Request<tf::upgrade_resource_state::Request>,
    ) -> RpcResult<tf::upgrade_resource_state::Response> {
        let req = request.get_ref();
        check_type(&req.type_name)?;
        // Version 0 is the only version so far; re-encoding through the current type drops
        // removed attributes and adds new ones as null.
        let json = req
            .raw_state
            .as_ref()
            .map(|r| r.json.as_slice())
            .unwrap_or_default();
        let result = value::from_json(json, &ts::RESOURCE_TYPE)
            .map_err(|e| Diag::error("Could not read the stored state", e.to_string()))
            .and_then(|v| encode(&v, &ts::RESOURCE_TYPE));
        let (upgraded_state, diags) = match result {
            Ok(dv) => (Some(dv), vec![]),
            Err(d) => (None, vec![d]),
        };
        Ok(Response::new(tf::upgrade_resource_state::Response {
            upgraded_state,
            diagnostics: diag::to_proto(&diags),
        }))
    }

    async fn plan_resource_change(
        &self,
        request: Request<tf::plan_resource_change::Request>,
    ) -> RpcResult<tf::plan_resource_change::Response> {
        let req = request.get_ref();
        check_type(&req.type_name)?;
        let ty = &*ts::RESOURCE_TYPE;
        let decoded = (|| {
            Ok::<_, Diag>((
                decode(req.prior_state.as_ref(), ty)?,
                decode(req.proposed_new_state.as_ref(), ty)?,
                decode(req.config.as_ref(), ty)?,
            ))
        })();
        let mut response = tf::plan_resource_change::Response {
            planned_private: req.prior_private.clone(),
            ..Default::default()
        };
        let (prior, proposed, config) = match decoded {
            Ok(v) => v,
            Err(d) => {
                response.diagnostics = vec![d.to_proto()];
                return Ok(Response::new(response));
            }
        };
        if proposed.is_null() {
            // Destroy: nothing to plan (only reached if plan_destroy were enabled).
            response.planned_state = req.proposed_new_state.clone();
            return Ok(Response::new(response));
        }
        let plan = tenant::plan::plan(&prior, &proposed, &config);
        match encode(&plan.planned, ty) {
            Ok(dv) => response.planned_state = Some(dv),
            Err(d) => response.diagnostics.push(d.to_proto()),
        }
        response.requires_replace = plan.requires_replace.iter().map(|p| p.to_proto()).collect();
        Ok(Response::new(response))
    }

    async fn read_resource(
        &self,
        request: Request<tf::read_resource::Request>,
    ) -> RpcResult<tf::read_resource::Response> {
        let req = request.get_ref();
        check_type(&req.type_name)?;
        let ty = &*ts::RESOURCE_TYPE;
        // Echo private state, or Terraform clears it.
        let mut response = tf::read_resource::Response {
            new_state: req.current_state.clone(),
            private: req.private.clone(),
            ..Default::default()
        };
        let outcome = async {
            let current = decode(req.current_state.as_ref(), ty)?;
            let store = self.store().await?;
            Ok::<_, Diag>(ops::read(&store, &current).await)
        };
        respond_state(
            outcome.await,
            ty,
            &mut response.new_state,
            &mut response.diagnostics,
        );
        Ok(Response::new(response))
    }

    async fn apply_resource_change(
        &self,
        request: Request<tf::apply_resource_change::Request>,
    ) -> RpcResult<tf::apply_resource_change::Response> {
        let req = request.get_ref();
        check_type(&req.type_name)?;
        let ty = &*ts::RESOURCE_TYPE;
        let mut response = tf::apply_resource_change::Response {
            new_state: req.prior_state.clone(),
            private: req.planned_private.clone(),
            ..Default::default()
        };
        let outcome = async {
            let prior = decode(req.prior_state.as_ref(), ty)?;
            let planned = decode(req.planned_state.as_ref(), ty)?;
            let store = self.store().await?;
            Ok::<_, Diag>(match (prior.is_null(), planned.is_null()) {
                (true, false) => ops::create(&store, &planned, &self.stop).await,
                (false, false) => ops::update(&store, &prior, &planned, &self.stop).await,
                (false, true) => ops::delete(&store, &prior, &self.stop).await,
                (true, true) => ops::Outcome::ok(Value::Null),
            })
        };
        respond_state(
            outcome.await,
            ty,
            &mut response.new_state,
            &mut response.diagnostics,
        );
        Ok(Response::new(response))
    }

    async fn import_resource_state(
        &self,
        request: Request<tf::import_resource_state::Request>,
    ) -> RpcResult<tf::import_resource_state::Response> {
        let req = request.get_ref();
        check_type(&req.type_name)?;
        let result = ops::import(&req.id).and_then(|v| encode(&v, &ts::RESOURCE_TYPE));
        let mut response = tf::import_resource_state::Response::default();
        match result {
            Ok(state) => {
                response
                    .imported_resources
                    .push(tf::import_resource_state::ImportedResource {
                        type_name: ts::TYPE_NAME.to_owned(),
                        state: Some(state),
                        private: vec![],
                    })
            }
            Err(d) => response.diagnostics.push(d.to_proto()),
        }
        Ok(Response::new(response))
    }

    async fn read_data_source(
        &self,
        request: Request<tf::read_data_source::Request>,
    ) -> RpcResult<tf::read_data_source::Response> {
        let req = request.get_ref();
        check_type(&req.type_name)?;
        let ty = &*ts::DATA_SOURCE_TYPE;
        let mut response = tf::read_data_source::Response::default();
        let outcome = async {
            let config = decode(req.config.as_ref(), ty)?;
            let store = self.store().await?;
            Ok::<_, Diag>(ops::read_data(&store, &config).await)
        };
        respond_state(
            outcome.await,
            ty,
            &mut response.state,
            &mut response.diagnostics,
        );
        Ok(Response::new(response))
    }

    async fn stop_provider(
        &self,
        _request: Request<tf::stop_provider::Request>,
    ) -> RpcResult<tf::stop_provider::Response> {
        tracing::info!("StopProvider: cancelling in-flight waits");
        self.stop.cancel();
        Ok(Response::new(tf::stop_provider::Response {
            error: String::new(),
        }))
    }
}

/// Puts an outcome's state and diagnostics into a response. When there is no outcome (the
/// request could not be decoded, or there is no cluster) or its state cannot be encoded (a
/// provider bug), the response's state is left as it was rather than replaced by null.
fn respond_state(
    outcome: Result<ops::Outcome, Diag>,
    ty: &Type,
    state: &mut Option<tf::DynamicValue>,
    diagnostics: &mut Vec<tf::Diagnostic>,
) {
    match outcome {
        Ok(outcome) => {
            match encode(&outcome.state, ty) {
                Ok(dv) => *state = Some(dv),
                Err(d) => diagnostics.push(d.to_proto()),
            }
            diagnostics.extend(outcome.diags.iter().map(Diag::to_proto));
        }
        Err(d) => diagnostics.push(d.to_proto()),
    }
}
