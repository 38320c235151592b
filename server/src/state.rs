//! What every handler shares ([`AppState`]): the settings, the verifier of ID tokens, the
//! tenant use cases, the portal's sessions, the limits and the metrics. Built once at start-up
//! from the settings; below every handler, above everything it holds.

use std::{sync::Arc, time::Duration};

use kube::Client;

use crate::{
    auth::Verifier,
    config::Config,
    metrics::Metrics,
    portal::{oidc::Oidc, seal::Sealer, session::Portal},
    public_url::PublicUrl,
    rate_limit::RequestLimits,
    store::Tenants,
    streams::StreamSlots,
    tenants::TenantService,
};

#[derive(Clone)]
pub struct AppState {
    pub tenants: Arc<TenantService>,
    pub verifier: Arc<Verifier>,
    pub config: Arc<Config>,
    pub public_url: PublicUrl,
    pub portal: Arc<Portal>,
    pub metrics: Arc<Metrics>,
    pub request_limits: Arc<RequestLimits>,
    pub streams: Arc<StreamSlots>,
}

impl AppState {
    /// The server's state from its settings; `public_url` and `sealer` are made from them by
    /// the caller (the first needs the bound address: [`PublicUrl::resolve`]; the second reads
    /// a file: [`Sealer::for_flag`]).
    pub fn new(
        config: Config,
        public_url: PublicUrl,
        client: Client,
        verifier: Arc<Verifier>,
        tenants: Tenants,
        sealer: Sealer,
    ) -> AppState {
        let metrics = Arc::new(Metrics::default());
        let oidc = Oidc::new(
            verifier.clone(),
            &config.oidc_client_id,
            &config.oidc_scopes,
            public_url.redirect_uri(),
        );
        let portal = Arc::new(Portal::new(
            oidc,
            sealer,
            Duration::from_secs(config.pending_login_ttl_secs),
        ));
        AppState {
            tenants: Arc::new(TenantService::new(
                tenants,
                client,
                &config.limits,
                config.admin_group.clone(),
            )),
            verifier,
            request_limits: Arc::new(RequestLimits::new(&config.limits)),
            streams: StreamSlots::new(config.limits.max_streams_per_user),
            config: Arc::new(config),
            public_url,
            portal,
            metrics,
        }
    }
}
