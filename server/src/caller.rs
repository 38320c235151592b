//! Who calls the API: the bearer token of a request ([`bearer`]), the identity the rate-limit
//! middleware found for it ([`Checked`]), and the authenticated [`Caller`] handlers take.

use axum::{
    extract::FromRequestParts,
    http::{HeaderMap, header, request::Parts},
};
use tracing::{debug, info};

use crate::{auth::Identity, error::ApiError, state::AppState};

/// The bearer token of a request, if it has one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// What the bearer-token check of [`crate::middleware::limit`] found, for the handlers (see
/// [`Caller`]): `None` when the request had a token that was refused.
#[derive(Clone)]
pub struct Checked(pub Option<Identity>);

/// The authenticated caller.
pub struct Caller(pub Identity);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // The rate limit verified the token already (it counts requests per user).
        if let Some(Checked(identity)) = parts.extensions.get::<Checked>() {
            return identity.clone().map(Caller).ok_or(ApiError::Unauthorized);
        }
        let Some(token) = bearer(&parts.headers) else {
            debug!("refused: no bearer token");
            return Err(ApiError::Unauthorized);
        };
        match state.verifier.verify(token).await {
            Ok(identity) => Ok(Caller(identity)),
            Err(reason) => {
                // The reason helps an operator of this server, not the caller: logged only.
                info!(%reason, "refused a token");
                Err(ApiError::Unauthorized)
            }
        }
    }
}
