//! clouds.yaml discovery and parsing, the way OpenStack clients do it.
//!
//! Search order: `OS_CLIENT_CONFIG_FILE`, then the current directory,
//! `$XDG_CONFIG_HOME/openstack` (default `~/.config/openstack`), `/etc/xdg/openstack`,
//! `/etc/openstack`; file names `clouds.yaml`, `clouds.yml`, `clouds.json`. A `secure.yaml`
//! (same directories and extensions, or `OS_CLIENT_SECURE_FILE`) is deep-merged over it, so
//! passwords can live in a separate, tighter-permission file.
//!
//! Discovery takes a [`DiscoveryEnv`] rather than reading the process environment, so tests can
//! point it at temporary directories.

use super::error::ConfigError;
use super::file_limits::{
    check_readable_kind, check_yaml_depth, read_bounded, FileLimitError, MAX_CLOUDS_BYTES,
    MAX_YAML_DEPTH,
};
use super::secret::Secret;
use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};
use std::path::{Path, PathBuf};

/// Where to look, and what the user asked for. `from_process` reads the real environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoveryEnv {
    /// `OS_CLIENT_CONFIG_FILE`.
    pub client_config_file: Option<PathBuf>,
    /// `OS_CLIENT_SECURE_FILE`.
    pub client_secure_file: Option<PathBuf>,
    /// `OS_CLOUD`.
    pub os_cloud: Option<String>,
    pub cwd: Option<PathBuf>,
    /// `XDG_CONFIG_HOME`; when unset, `home/.config`.
    pub xdg_config_home: Option<PathBuf>,
    pub home: Option<PathBuf>,
    /// `/etc/xdg/openstack`, `/etc/openstack`.
    pub system_dirs: Vec<PathBuf>,
}

impl DiscoveryEnv {
    pub fn from_process() -> DiscoveryEnv {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        DiscoveryEnv {
            client_config_file: var("OS_CLIENT_CONFIG_FILE").map(PathBuf::from),
            client_secure_file: var("OS_CLIENT_SECURE_FILE").map(PathBuf::from),
            os_cloud: var("OS_CLOUD").and_then(|v| v.into_string().ok()),
            cwd: std::env::current_dir().ok(),
            xdg_config_home: var("XDG_CONFIG_HOME").map(PathBuf::from),
            home: dirs::home_dir(),
            system_dirs: vec![
                PathBuf::from("/etc/xdg/openstack"),
                PathBuf::from("/etc/openstack"),
            ],
        }
    }

    /// The directories searched, in order.
    pub fn search_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if let Some(cwd) = &self.cwd {
            dirs.push(cwd.clone());
        }
        let xdg = self
            .xdg_config_home
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".config")));
        if let Some(xdg) = xdg {
            dirs.push(xdg.join("openstack"));
        }
        dirs.extend(self.system_dirs.iter().cloned());
        dirs
    }
}

const CLOUD_FILES: [&str; 3] = ["clouds.yaml", "clouds.yml", "clouds.json"];
const SECURE_FILES: [&str; 3] = ["secure.yaml", "secure.yml", "secure.json"];
const CLOUDS: &str = "clouds.yaml";
const SECURE: &str = "secure.yaml";

/// A file named by an environment variable: it must be something to read, and the error
/// says what it is instead (a directory, a device) when it is not.
fn named_file(path: &Path, what: &'static str, var: &str) -> Result<PathBuf, ConfigError> {
    match check_readable_kind(path) {
        Ok(()) => Ok(path.to_path_buf()),
        Err(e) => Err(ConfigError::Read {
            what,
            path: path.to_path_buf(),
            detail: match e {
                FileLimitError::Missing => format!("{var} names a file that does not exist"),
                other => format!("{var} names a path that {other}"),
            },
        }),
    }
}

fn first_existing(dirs: &[PathBuf], names: &[&str]) -> Option<PathBuf> {
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
}

/// Which files configure the clouds: clouds.yaml and, if present, secure.yaml.
pub fn find_files(env: &DiscoveryEnv) -> Result<(PathBuf, Option<PathBuf>), ConfigError> {
    let dirs = env.search_dirs();
    let clouds = match &env.client_config_file {
        Some(path) => named_file(path, CLOUDS, "OS_CLIENT_CONFIG_FILE")?,
        None => first_existing(&dirs, &CLOUD_FILES).ok_or_else(|| ConfigError::NotFound {
            searched: dirs
                .iter()
                .map(|d| format!("{}/{{clouds.yaml,clouds.yml,clouds.json}}", d.display()))
                .collect::<Vec<_>>()
                .join(", "),
        })?,
    };
    let secure = match &env.client_secure_file {
        Some(path) => Some(named_file(path, SECURE, "OS_CLIENT_SECURE_FILE")?),
        None => first_existing(&dirs, &SECURE_FILES),
    };
    Ok((clouds, secure))
}

/// Reads and parses one clouds/secure file, bounded in size and nesting before the YAML
/// parser sees it (see [`super::file_limits`]).
fn read_yaml(path: &Path, what: &'static str) -> Result<Value, ConfigError> {
    let read_err = |detail: String| ConfigError::Read {
        what,
        path: path.to_path_buf(),
        detail,
    };
    let text = read_bounded(path, MAX_CLOUDS_BYTES).map_err(|e| read_err(e.to_string()))?;
    if text.trim().is_empty() {
        return Ok(Value::Mapping(Mapping::new()));
    }
    check_yaml_depth(&text, MAX_YAML_DEPTH).map_err(|e| read_err(e.to_string()))?;
    serde_yaml_ng::from_str::<Value>(&text).map_err(|e| ConfigError::Syntax {
        what,
        path: path.to_path_buf(),
        line: e.location().map(|l| l.line()),
        detail: e.to_string(),
    })
}

/// The value at `path` (`auth.password`) under `cloud` in a clouds/secure document, if the
/// document sets it: which file a bad value came from.
fn sets_key(doc: &Value, cloud: &str, path: &serde_path_to_error::Path) -> bool {
    use serde_path_to_error::Segment;
    let mut cur = match doc.get("clouds").and_then(|c| c.get(cloud)) {
        Some(v) => v,
        None => return false,
    };
    for seg in path.iter() {
        let next = match seg {
            Segment::Map { key } => cur.get(key.as_str()),
            Segment::Seq { index } => cur.get(*index),
            Segment::Enum { .. } | Segment::Unknown => Some(cur),
        };
        match next {
            Some(v) => cur = v,
            None => return false,
        }
    }
    true
}

/// Deep-merges `over` into `base`: mappings merge key by key, anything else is replaced.
pub fn deep_merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Mapping(b), Value::Mapping(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(existing) => deep_merge(existing, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

// ---- the typed configuration ----

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainRef {
    Id(String),
    Name(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserRef {
    Id(String),
    Name { name: String, domain: DomainRef },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectScope {
    Id(String),
    Name { name: String, domain: DomainRef },
}

/// How to authenticate to Keystone. `Debug` is derived: secrets are [`Secret`]s (`***`).
#[derive(Debug, Clone, PartialEq)]
pub enum Credentials {
    Password {
        user: UserRef,
        password: Secret,
        scope: Option<ProjectScope>,
    },
    /// Application credentials carry their own scope.
    ApplicationCredential {
        id: Option<String>,
        name: Option<String>,
        /// Required with `name`.
        user: Option<UserRef>,
        secret: Secret,
    },
}

/// caldera's own settings under a cloud (`caldera: {read_only, production,
/// max_events_per_stack, output_key}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalderaSettings {
    #[serde(default)]
    pub read_only: bool,
    /// Production clouds ask for the cluster name before destructive actions.
    #[serde(default)]
    pub production: bool,
    /// The cloud's Heat `max_events_per_stack`, when it is not Heat's default 1000: event
    /// followers poll fast enough that a busy stack cannot purge events between two polls.
    #[serde(default)]
    pub max_events_per_stack: Option<u32>,
    /// The member output that holds each node's address on this cloud's stacks, for the
    /// console and `caldera ips` (a flag still wins). Unset: discovered per node group from
    /// the stacks' templates.
    #[serde(default)]
    pub output_key: Option<String>,
}

/// One cloud, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct CloudConfig {
    pub name: String,
    /// The clouds.yaml it came from.
    pub source: PathBuf,
    /// The secure.yaml merged over it, if any.
    pub secure_source: Option<PathBuf>,
    pub auth_url: String,
    pub credentials: Credentials,
    pub region_name: Option<String>,
    /// `public` (default), `internal` or `admin`.
    pub interface: String,
    pub verify: bool,
    pub cacert: Option<PathBuf>,
    pub caldera: CalderaSettings,
    /// Files that hold this cloud's password or secret (for a permissions warning).
    pub secret_files: Vec<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
struct RawCloud {
    #[serde(default)]
    auth_type: Option<String>,
    #[serde(default)]
    auth: RawAuth,
    #[serde(default)]
    region_name: Option<String>,
    #[serde(default)]
    interface: Option<String>,
    #[serde(default)]
    verify: Option<bool>,
    #[serde(default)]
    cacert: Option<String>,
    #[serde(default)]
    caldera: Option<CalderaSettings>,
}

#[derive(Debug, Default, Deserialize)]
struct RawAuth {
    auth_url: Option<String>,
    username: Option<String>,
    user_id: Option<String>,
    password: Option<Secret>,
    project_name: Option<String>,
    project_id: Option<String>,
    // Old spellings of project_name/project_id, still found in clouds.yaml files.
    tenant_name: Option<String>,
    tenant_id: Option<String>,
    user_domain_name: Option<String>,
    user_domain_id: Option<String>,
    project_domain_name: Option<String>,
    project_domain_id: Option<String>,
    domain_name: Option<String>,
    domain_id: Option<String>,
    application_credential_id: Option<String>,
    application_credential_name: Option<String>,
    application_credential_secret: Option<Secret>,
}

fn nonempty(v: &Option<String>) -> Option<String> {
    v.as_ref()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The cloud names defined in a loaded clouds.yaml.
fn cloud_names(clouds: &Mapping) -> Vec<String> {
    clouds
        .keys()
        .filter_map(|k| k.as_str().map(str::to_string))
        .collect()
}

/// Finds the files, picks the cloud (`requested` from `--cloud`, else `OS_CLOUD`, else the only
/// cloud) and validates it.
pub fn load_cloud(env: &DiscoveryEnv, requested: Option<&str>) -> Result<CloudConfig, ConfigError> {
    let (path, secure) = find_files(env)?;
    let mut doc = read_yaml(&path, CLOUDS)?;
    let secure_doc = match &secure {
        Some(s) => Some(read_yaml(s, SECURE)?),
        None => None,
    };
    let clouds_of = |doc: &Value, path: &Path| -> Result<Mapping, ConfigError> {
        match doc.get("clouds") {
            Some(Value::Mapping(m)) => Ok(m.clone()),
            None => Ok(Mapping::new()),
            Some(_) => Err(ConfigError::Syntax {
                what: CLOUDS,
                path: path.to_path_buf(),
                line: None,
                detail: "'clouds' must be a mapping of cloud names to settings".into(),
            }),
        }
    };
    let base_clouds = clouds_of(&doc, &path)?;
    if base_clouds.is_empty() {
        return Err(ConfigError::NoCloudChosen {
            path,
            problem: "no clouds defined (expected a top-level 'clouds:' mapping)".into(),
        });
    }
    let names = cloud_names(&base_clouds);
    let chosen = match requested
        .map(str::to_string)
        .or_else(|| env.os_cloud.clone())
    {
        Some(name) => name,
        None if names.len() == 1 => names[0].clone(),
        None => {
            return Err(ConfigError::NoCloudChosen {
                path,
                problem: format!(
                    "several clouds defined ({}); choose one with --cloud or OS_CLOUD",
                    names.join(", ")
                ),
            })
        }
    };
    if !names.contains(&chosen) {
        return Err(ConfigError::UnknownCloud {
            path,
            cloud: chosen,
            known: names.join(", "),
        });
    }

    // Which file holds the secrets of this cloud, before merging hides it.
    let has_secret = |doc: &Value| {
        let auth = doc
            .get("clouds")
            .and_then(|c| c.get(chosen.as_str()))
            .and_then(|c| c.get("auth"));
        auth.is_some_and(|a| {
            a.get("password").is_some() || a.get("application_credential_secret").is_some()
        })
    };
    let mut secret_files = Vec::new();
    if has_secret(&doc) {
        secret_files.push(path.clone());
    }
    if let (Some(s), Some(sdoc)) = (&secure, &secure_doc) {
        if has_secret(sdoc) {
            secret_files.push(s.clone());
        }
    }
    // Kept: a bad value found after merging is blamed on the file that set it.
    let secure_only = secure_doc.clone();
    if let Some(sdoc) = secure_doc {
        deep_merge(&mut doc, sdoc);
    }
    let value = doc
        .get("clouds")
        .and_then(|c| c.get(chosen.as_str()))
        .cloned()
        .unwrap_or(Value::Null);
    let key_err = |key: &str, problem: &str| ConfigError::Key {
        what: CLOUDS,
        path: path.clone(),
        cloud: chosen.clone(),
        key: key.to_string(),
        problem: problem.to_string(),
    };
    let raw: RawCloud = if value.is_null() {
        RawCloud::default()
    } else {
        // The path of the bad value (`auth.auth_url`), and the file that set it.
        serde_path_to_error::deserialize(value).map_err(|e| {
            let (what, file) = match (&secure, &secure_only) {
                (Some(s), Some(sdoc)) if sets_key(sdoc, &chosen, e.path()) => (SECURE, s.clone()),
                _ => (CLOUDS, path.clone()),
            };
            let key = e.path().to_string();
            ConfigError::Key {
                what,
                path: file,
                cloud: chosen.clone(),
                key: if key == "." { "settings".into() } else { key },
                problem: format!("is invalid: {}", e.inner()),
            }
        })?
    };
    let auth = &raw.auth;
    let auth_url =
        nonempty(&auth.auth_url).ok_or_else(|| key_err("auth.auth_url", "is missing"))?;
    if url::Url::parse(&auth_url).is_err() {
        return Err(key_err(
            "auth.auth_url",
            &format!("'{auth_url}' is not a URL"),
        ));
    }
    let default_domain = nonempty(&auth.domain_id)
        .map(DomainRef::Id)
        .or_else(|| nonempty(&auth.domain_name).map(DomainRef::Name));
    let user = |required: bool| -> Result<Option<UserRef>, ConfigError> {
        if let Some(id) = nonempty(&auth.user_id) {
            return Ok(Some(UserRef::Id(id)));
        }
        match nonempty(&auth.username) {
            Some(name) => {
                let domain = nonempty(&auth.user_domain_id)
                    .map(DomainRef::Id)
                    .or_else(|| nonempty(&auth.user_domain_name).map(DomainRef::Name))
                    .or_else(|| default_domain.clone())
                    .ok_or_else(|| {
                        key_err(
                            "auth.user_domain_name",
                            "is missing (or user_domain_id, domain_name); Keystone needs the domain of a user given by name",
                        )
                    })?;
                Ok(Some(UserRef::Name { name, domain }))
            }
            None if required => Err(key_err("auth.username", "is missing (or auth.user_id)")),
            None => Ok(None),
        }
    };
    let auth_type = nonempty(&raw.auth_type).unwrap_or_else(|| {
        if auth.application_credential_secret.is_some() {
            "v3applicationcredential".into()
        } else {
            "password".into()
        }
    });
    let credentials = match auth_type.as_str() {
        "password" | "v3password" => {
            let user = user(true)?.ok_or_else(|| key_err("auth.username", "is missing"))?;
            let password = auth
                .password
                .clone()
                .filter(|p| !p.is_empty())
                .ok_or_else(|| key_err("auth.password", "is missing (put it in secure.yaml)"))?;
            let scope = if let Some(id) =
                nonempty(&auth.project_id).or_else(|| nonempty(&auth.tenant_id))
            {
                ProjectScope::Id(id)
            } else if let Some(name) =
                nonempty(&auth.project_name).or_else(|| nonempty(&auth.tenant_name))
            {
                let domain = nonempty(&auth.project_domain_id)
                    .map(DomainRef::Id)
                    .or_else(|| nonempty(&auth.project_domain_name).map(DomainRef::Name))
                    .or_else(|| default_domain.clone())
                    .ok_or_else(|| {
                        key_err(
                            "auth.project_domain_name",
                            "is missing (or project_domain_id, domain_name); needed with project_name",
                        )
                    })?;
                ProjectScope::Name { name, domain }
            } else {
                return Err(key_err(
                    "auth.project_name",
                    "is missing (or auth.project_id); Heat and Magnum need a project-scoped token",
                ));
            };
            Credentials::Password {
                user,
                password,
                scope: Some(scope),
            }
        }
        "v3applicationcredential" => {
            let secret = auth
                .application_credential_secret
                .clone()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| key_err("auth.application_credential_secret", "is missing"))?;
            let id = nonempty(&auth.application_credential_id);
            let name = nonempty(&auth.application_credential_name);
            let user = if id.is_none() { user(false)? } else { None };
            if id.is_none() && (name.is_none() || user.is_none()) {
                return Err(key_err(
                    "auth.application_credential_id",
                    "is missing (or application_credential_name with username/user_id)",
                ));
            }
            Credentials::ApplicationCredential {
                id,
                name,
                user,
                secret,
            }
        }
        other => {
            return Err(key_err(
                "auth_type",
                &format!("'{other}' is not supported (use password or v3applicationcredential)"),
            ))
        }
    };
    let interface = nonempty(&raw.interface)
        .map(|i| i.trim_end_matches("URL").to_string())
        .unwrap_or_else(|| "public".into());
    if !matches!(interface.as_str(), "public" | "internal" | "admin") {
        return Err(key_err(
            "interface",
            &format!("'{interface}' is not public, internal or admin"),
        ));
    }
    Ok(CloudConfig {
        name: chosen.clone(),
        source: path.clone(),
        secure_source: secure,
        auth_url,
        credentials,
        region_name: nonempty(&raw.region_name),
        interface,
        verify: raw.verify.unwrap_or(true),
        cacert: nonempty(&raw.cacert).map(PathBuf::from),
        caldera: raw.caldera.unwrap_or_default(),
        secret_files,
    })
}

/// Lists the clouds defined in the discovered clouds.yaml (for `--cloud` completion and errors).
pub fn list_clouds(env: &DiscoveryEnv) -> Result<(PathBuf, Vec<String>), ConfigError> {
    let (path, _) = find_files(env)?;
    let doc = read_yaml(&path, CLOUDS)?;
    let names = match doc.get("clouds") {
        Some(Value::Mapping(m)) => cloud_names(m),
        _ => Vec::new(),
    };
    Ok((path, names))
}

/// Whether `path` can be read by its group or by others (a password file should not be).
/// Always `false` on platforms without Unix permissions.
pub fn readable_by_others(path: &Path) -> std::io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode();
        Ok(mode & 0o044 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = std::fs::metadata(path)?;
        Ok(false)
    }
}

/// The warnings about `cloud`'s secret files that group or others can read. Shown before
/// authenticating (the password is exposed whether or not it still works).
pub fn permission_warnings(cloud: &CloudConfig) -> Vec<String> {
    exposed_secret_files(cloud)
        .into_iter()
        .map(|path| {
            format!(
                "{} holds a password or secret and is readable by group or others; run chmod 600 on it",
                path.display()
            )
        })
        .collect()
}

/// The secret files of `cloud` that group or others can read, for a startup warning.
pub fn exposed_secret_files(cloud: &CloudConfig) -> Vec<PathBuf> {
    cloud
        .secret_files
        .iter()
        .filter(|p| readable_by_others(p).unwrap_or(false))
        .cloned()
        .collect()
}
