//! What the API answers when a request fails: a status code and one sentence in a JSON body
//! `{"error": "..."}`. Authentication failures say nothing more than "unauthorized".

use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No token, or a token that failed validation. The reason is logged, never returned.
    #[error("unauthorized")]
    Unauthorized,
    #[error("{0}")]
    Forbidden(String),
    /// Unknown tenant, or one the caller may not see (the two are indistinguishable on purpose).
    #[error("tenant {0:?} not found")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// A create of a name that is taken. One answer whoever holds the name (the caller, someone
    /// the caller may not see, a tenant being deleted), so it tells no one whose it is.
    #[error(
        "tenant name {0:?} is not available: a tenant of that name exists (perhaps one you \
         cannot see) or is being deleted; choose another name"
    )]
    NameTaken(String),
    /// The Kubernetes API refused or failed; its own words, with the HTTP status it gave.
    #[error("{message}")]
    Kube { code: u16, message: String },
    #[error("{0}")]
    Unavailable(String),
    /// Over a limit of how much or how often (429); `retry_after` in seconds when waiting helps.
    #[error("{message}")]
    TooMany {
        message: String,
        retry_after: Option<u64>,
    },
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) | ApiError::NameTaken(_) => StatusCode::CONFLICT,
            ApiError::Kube { code, .. } => {
                StatusCode::from_u16(*code).unwrap_or(StatusCode::BAD_GATEWAY)
            }
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::TooMany { .. } => StatusCode::TOO_MANY_REQUESTS,
        }
    }
}

impl From<kube::Error> for ApiError {
    fn from(error: kube::Error) -> Self {
        match &error {
            kube::Error::Api(status) => ApiError::Kube {
                // Only client errors are passed on as they are; the server's own trouble with
                // the API server is a 502 for the caller.
                code: if (400..500).contains(&status.code)
                    && status.code != 401
                    && status.code != 403
                {
                    status.code
                } else {
                    502
                },
                message: status.message.clone(),
            },
            other => ApiError::Kube {
                code: 502,
                message: format!("the Kubernetes API could not be reached: {other}"),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let retry_after = match &self {
            ApiError::TooMany { retry_after, .. } => *retry_after,
            _ => None,
        };
        let mut response = (status, Json(json!({ "error": self.to_string() }))).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}
