//! Configuration errors. Every message names the file, and where it applies the cloud and the key,
//! so an operator can fix the file without reading code.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No clouds.yaml anywhere on the search path.
    #[error("no clouds.yaml found; looked for {searched}")]
    NotFound { searched: String },

    /// `OS_CLIENT_CONFIG_FILE` (or an explicit path) names a file that is not there, or
    /// the file cannot be used (a directory, a device, too large, too deeply nested).
    /// `what` is `clouds.yaml` or `secure.yaml`.
    #[error("{what} {path}: {detail}")]
    Read {
        what: &'static str,
        path: PathBuf,
        detail: String,
    },

    /// The file is not valid YAML/JSON (or does not have the expected shape).
    #[error("{what} {path}: syntax error{}: {detail}", line.map(|l| format!(" at line {l}")).unwrap_or_default())]
    Syntax {
        what: &'static str,
        path: PathBuf,
        line: Option<usize>,
        detail: String,
    },

    /// A cloud was asked for by name and is not in the file.
    #[error("clouds.yaml {path}: cloud '{cloud}' not found; clouds defined: {known}")]
    UnknownCloud {
        path: PathBuf,
        cloud: String,
        known: String,
    },

    /// No cloud was named and the file defines several (or none).
    #[error("clouds.yaml {path}: {problem}")]
    NoCloudChosen { path: PathBuf, problem: String },

    /// A key of the chosen cloud is missing or has a bad value; `path` is the file the bad
    /// value came from (`what`: clouds.yaml, or secure.yaml when it set the key).
    #[error("{what} {path}: cloud '{cloud}': {key} {problem}")]
    Key {
        what: &'static str,
        path: PathBuf,
        cloud: String,
        key: String,
        problem: String,
    },

    /// A file named by the configuration (e.g. `cacert`) cannot be used.
    #[error("{what} {path}: {detail}")]
    File {
        what: String,
        path: PathBuf,
        detail: String,
    },

    /// Command-line or other settings that do not fit together.
    #[error("{0}")]
    Invalid(String),
}
