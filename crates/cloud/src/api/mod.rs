//! The I/O layer: HTTP transport (budget, retries, auth) and typed clients for Keystone, Heat,
//! Magnum and Nova. Knows nothing of the console; converts wire JSON into `crate::model` types.

pub mod auth;
pub mod cloud;
/// The clients' error, at the crate root (`crate::api_error`) because the fetcher uses it too.
pub use crate::api_error as error;
pub mod heat;
pub mod http;
pub mod limits;
pub mod magnum;
pub mod nova;
pub mod time;

#[cfg(test)]
mod transport_tests;

#[cfg(test)]
mod auth_tests;

#[cfg(test)]
mod cloud_tests;

#[cfg(test)]
mod tls_tests;

pub use error::{ApiError, ApiResult, TransportKind};
pub use http::{Request, Response, Transport, TransportConfig};
