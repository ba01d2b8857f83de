//! `$XDG_CONFIG_HOME/caldera/config.toml` and the command-line options, resolved into
//! the theme, key map and settings the console runs with. Problems never stop the
//! console: they are collected (file, line, column, message) for the status line.
//!
//! ```toml
//! theme = "high-contrast"      # a built-in name, a user theme name, or a path
//! refresh_secs = 5             # how often the active view refreshes
//! fps = 30                     # redraws per second at most
//! read_only = true
//!
//! [keys]                       # action = [keys]; names as in the `?` help
//! quit = ["q", "ctrl-q"]
//! sort_next = [">"]
//! faults_only = ["x"]
//! ```

use super::keys::KeyMap;
use super::theme::{load_theme, user_theme_dir, FileError, Theme};
use caldera_cloud::config::bounds;
use caldera_cloud::config::file_limits::{read_bounded, MAX_TOML_BYTES};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// How the console is started. `Default` gives the dark theme, 5 s refresh, 30 fps.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// `--theme NAME|PATH`; beats the config file.
    pub theme: Option<String>,
    /// The config file; `None` means `$XDG_CONFIG_HOME/caldera/config.toml` if it exists.
    pub config_path: Option<PathBuf>,
    /// Skip the config file entirely (tests).
    pub no_config: bool,
    /// Key overrides from the command line, applied after the config file's.
    pub key_overrides: HashMap<String, Vec<String>>,
    pub read_only: bool,
    /// How often the active view refreshes (events are polled at this rate too).
    pub refresh: Duration,
    /// Redraws per second at most.
    pub fps: u32,
    /// Where user themes live; `None` means `$XDG_CONFIG_HOME/caldera/themes`.
    pub theme_dir: Option<PathBuf>,
    /// Messages for the status line at start (e.g. connection warnings).
    pub notices: Vec<String>,
    /// Where the `:fleet` view asks every cloud (`None`: no clouds.yaml, the view says so).
    pub fleet: Option<FleetHandle>,
    /// How `:cloud NAME [REGION]` reconnects (`None`: the command says it cannot).
    pub connector: Option<Connector>,
}

/// A new connection for `:cloud NAME [REGION]`: the service the views read, the operator
/// that acts on it (`None`: reads only), and what the operator should know about it.
pub struct Reconnected {
    pub service: std::sync::Arc<dyn crate::service::CloudService>,
    pub operator: Option<std::sync::Arc<dyn crate::service::operator::Operator>>,
    pub notices: Vec<String>,
    /// What to end once the console has left the cloud it was on (`None`: nothing): the
    /// built-in simulator it was started on, which no `:cloud NAME` leads back to. Run only
    /// after the console has moved, when nothing asks the old cloud any more.
    pub retire: Option<futures::future::BoxFuture<'static, ()>>,
}

/// What connecting to a cloud of clouds.yaml by name (and region) returns, or why not.
pub type ConnectFuture = futures::future::BoxFuture<'static, Result<Reconnected, String>>;

/// Connects the console to another cloud of clouds.yaml (built by the binary, which knows
/// how a connection, its service and its operator are made).
#[derive(Clone)]
pub struct Connector(
    pub std::sync::Arc<dyn Fn(String, Option<String>) -> ConnectFuture + Send + Sync>,
);

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connector")
    }
}

/// The fleet source the console was started with (see `service::fleet_scan`).
#[derive(Clone)]
pub struct FleetHandle(pub crate::service::fleet_scan::SharedFleet);

impl std::fmt::Debug for FleetHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FleetHandle")
    }
}

impl Default for ConsoleOptions {
    fn default() -> Self {
        ConsoleOptions {
            theme: None,
            config_path: None,
            no_config: false,
            key_overrides: HashMap::new(),
            read_only: false,
            refresh: Duration::from_secs(5),
            fps: 30,
            theme_dir: None,
            notices: Vec::new(),
            fleet: None,
            connector: None,
        }
    }
}

/// The quickest refresh `refresh_secs` may ask for, and the slowest.
pub const MIN_REFRESH_SECS: f64 = 0.2;
pub const MAX_REFRESH_SECS: f64 = 86400.0;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    // Values are read as any TOML value and typed here, so a value of the wrong type is
    // named by its key and what it should be, and the rest of the file still applies.
    theme: Option<Spanned<toml::Value>>,
    refresh_secs: Option<Spanned<toml::Value>>,
    fps: Option<Spanned<toml::Value>>,
    read_only: Option<Spanned<toml::Value>>,
    #[serde(default)]
    keys: HashMap<String, Spanned<toml::Value>>,
}

/// `origin:LINE: key: message`, for a value that is there but not what the key takes.
fn key_problem(
    origin: &str,
    src: &str,
    span: std::ops::Range<usize>,
    key: &str,
    msg: &str,
) -> String {
    let mut e = FileError::at(origin, src, Some(span), format!("{key}: {msg}"));
    e.column = None;
    e.to_string()
}

/// A TOML number as seconds; anything else is "a number of seconds" it is not.
fn config_seconds(v: &toml::Value, min: f64, max: f64) -> Result<Duration, String> {
    match v {
        toml::Value::Float(f) => bounds::seconds(*f, min, max),
        // Only integers past 2^53 lose precision here, and those are past any bound.
        toml::Value::Integer(i) => bounds::seconds(*i as f64, min, max),
        other => Err(format!("expected a number of seconds, got {other}")),
    }
}

/// A TOML whole number from `min` to `max`.
fn config_whole(v: &toml::Value, min: u64, max: u64) -> Result<u64, String> {
    match v {
        toml::Value::Integer(i) => bounds::whole(i128::from(*i), min, max, "number"),
        other => Err(format!(
            "expected a whole number from {min} to {max}, got {other}"
        )),
    }
}

/// What the console runs with after options, config file and themes are resolved.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub theme: Theme,
    pub keys: KeyMap,
    pub read_only: bool,
    pub refresh: Duration,
    pub fps: u32,
    pub theme_dir: Option<PathBuf>,
    /// Problems found, already worded with file and line.
    pub problems: Vec<String>,
}

pub fn default_config_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("caldera").join("config.toml"))
}

/// Parse a config file's text and apply it over `out`.
fn apply_config(
    src: &str,
    origin: &str,
    out: &mut Resolved,
    theme_from_cli: bool,
) -> Option<String> {
    let file: ConfigFile = match toml::from_str(src) {
        Ok(f) => f,
        Err(e) => {
            out.problems.push(format!(
                "{} (using defaults)",
                FileError::from_toml(origin, src, &e)
            ));
            return None;
        }
    };
    if let Some(r) = &file.refresh_secs {
        match config_seconds(r.get_ref(), MIN_REFRESH_SECS, MAX_REFRESH_SECS) {
            Ok(d) => out.refresh = d,
            Err(e) => out
                .problems
                .push(key_problem(origin, src, r.span(), "refresh_secs", &e)),
        }
    }
    if let Some(f) = &file.fps {
        let fps = config_whole(f.get_ref(), 1, 240)
            .and_then(|v| u32::try_from(v).map_err(|e| e.to_string()));
        match fps {
            Ok(v) => out.fps = v,
            Err(e) => out
                .problems
                .push(key_problem(origin, src, f.span(), "fps", &e)),
        }
    }
    if let Some(ro) = &file.read_only {
        match ro.get_ref() {
            toml::Value::Boolean(b) => out.read_only = out.read_only || *b,
            other => out.problems.push(key_problem(
                origin,
                src,
                ro.span(),
                "read_only",
                &format!("expected true or false, got {other}"),
            )),
        }
    }
    let mut overrides: Vec<(String, Vec<String>)> = Vec::new();
    for (name, keys) in &file.keys {
        let names: Option<Vec<String>> = match keys.get_ref() {
            toml::Value::Array(items) => items
                .iter()
                .map(|k| k.as_str().map(str::to_string))
                .collect(),
            _ => None,
        };
        match names {
            Some(names) => overrides.push((name.clone(), names)),
            None => out.problems.push(key_problem(
                origin,
                src,
                keys.span(),
                &format!("[keys] {name}"),
                &format!("expected a list of key names, got {}", keys.get_ref()),
            )),
        }
    }
    overrides.sort();
    for (name, msg) in out.keys.apply(&overrides) {
        let span = file.keys.get(&name).map(|k| k.span());
        out.problems
            .push(FileError::at(origin, src, span, format!("[keys] {name}: {msg}")).to_string());
    }
    let theme = match &file.theme {
        Some(t) => match t.get_ref() {
            toml::Value::String(name) => Some(name.clone()),
            other => {
                out.problems.push(key_problem(
                    origin,
                    src,
                    t.span(),
                    "theme",
                    &format!("expected a theme name or path, got {other}"),
                ));
                None
            }
        },
        None => None,
    };
    if theme_from_cli {
        None
    } else {
        theme
    }
}

/// Resolve options + config file + theme. Never fails; problems are in `Resolved::problems`.
pub fn resolve(options: &ConsoleOptions) -> Resolved {
    let theme_dir = options.theme_dir.clone().or_else(user_theme_dir);
    let mut out = Resolved {
        theme: Theme::default_theme(),
        keys: KeyMap::default(),
        read_only: options.read_only,
        refresh: options.refresh,
        fps: options.fps.clamp(1, 240),
        theme_dir: theme_dir.clone(),
        problems: Vec::new(),
    };
    let mut theme_spec = options.theme.clone();
    if !options.no_config {
        let path = options.config_path.clone().or_else(default_config_path);
        if let Some(path) = path {
            let explicit = options.config_path.is_some();
            match read_bounded(&path, MAX_TOML_BYTES) {
                Ok(src) => {
                    let origin = path.display().to_string();
                    let t = apply_config(&src, &origin, &mut out, options.theme.is_some());
                    if t.is_some() {
                        theme_spec = t;
                    }
                }
                Err(e) if explicit || !e.is_missing() => {
                    out.problems.push(format!(
                        "{}: config file {e} (using defaults)",
                        path.display()
                    ));
                }
                Err(_) => {}
            }
        }
    }
    out.problems.extend(options.notices.iter().cloned());
    for msg in super::keys::apply_overrides(&mut out.keys, &options.key_overrides) {
        out.problems.push(format!("--key: {msg}"));
    }
    if let Some(spec) = theme_spec {
        match load_theme(&spec, theme_dir.as_deref()) {
            Ok(t) => out.theme = t,
            Err(e) => out.problems.push(format!("{e} (using the default theme)")),
        }
    }
    out
}

/// Resolve a config given as text (tests and `--config -`).
pub fn resolve_text(src: &str, origin: &Path) -> Resolved {
    let dir: Option<PathBuf> = None;
    let mut out = Resolved {
        theme: Theme::default_theme(),
        keys: KeyMap::default(),
        read_only: false,
        refresh: Duration::from_secs(5),
        fps: 30,
        theme_dir: dir.clone(),
        problems: Vec::new(),
    };
    if let Some(spec) = apply_config(src, &origin.display().to_string(), &mut out, false) {
        match load_theme(&spec, dir.as_deref()) {
            Ok(t) => out.theme = t,
            Err(e) => out.problems.push(format!("{e} (using the default theme)")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::KeyAction;

    #[test]
    fn good_config_applies() {
        let r = resolve_text(
            "theme = \"light\"\nrefresh_secs = 2\nfps = 20\n[keys]\nquit = [\"ctrl-q\"]\n",
            Path::new("c.toml"),
        );
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(r.theme.name, "light");
        assert_eq!(r.fps, 20);
        assert_eq!(r.refresh, Duration::from_secs(2));
        assert_eq!(r.keys.keys_for(KeyAction::Quit).len(), 1);
    }

    /// Numbers past what a duration holds were a panic (`Duration::from_secs_f64`):
    /// every one is refused by name, and the setting keeps its default.
    #[test]
    fn refresh_secs_out_of_bounds_is_refused_never_a_panic() {
        for (v, shown) in [
            ("1e308", "1e308"),
            ("inf", "inf"),
            ("nan", "NaN"),
            ("0.1", "0.1"),
        ] {
            let r = resolve_text(&format!("refresh_secs = {v}\n"), Path::new("c.toml"));
            assert_eq!(r.refresh, Duration::from_secs(5), "{v}");
            assert_eq!(
                r.problems,
                [format!(
                    "c.toml:1: refresh_secs: expected a number of seconds from 0.2 to 86400, got {shown}"
                )],
                "{v}"
            );
        }
    }

    /// A value of the wrong type names its key and what it should be, in words (not
    /// serde's `invalid type: string "fast", expected f64`), and the rest of the file
    /// still applies: nothing else is lost to one bad value.
    #[test]
    fn a_value_of_the_wrong_type_names_its_key_and_loses_nothing_else() {
        let r = resolve_text(
            "theme = \"light\"\nrefresh_secs = \"fast\"\nfps = 1.5\nread_only = \"yes\"\n\
             [keys]\nquit = \"q\"\n",
            Path::new("config.toml"),
        );
        assert_eq!(
            r.problems,
            [
                "config.toml:2: refresh_secs: expected a number of seconds, got \"fast\"",
                "config.toml:3: fps: expected a whole number from 1 to 240, got 1.5",
                "config.toml:4: read_only: expected true or false, got \"yes\"",
                "config.toml:6: [keys] quit: expected a list of key names, got \"q\"",
            ]
        );
        assert_eq!(r.theme.name, "light");
        assert_eq!((r.refresh, r.fps), (Duration::from_secs(5), 30));
        let r = resolve_text("theme = 7\nfps = 20\n", Path::new("c.toml"));
        assert_eq!(
            r.problems,
            ["c.toml:1: theme: expected a theme name or path, got 7"]
        );
        assert_eq!(r.fps, 20);
    }

    #[test]
    fn broken_config_names_file_and_line_and_falls_back() {
        // A file that is not TOML at all: where it breaks, and the defaults.
        let r = resolve_text(
            "theme = \"light\"\nfps = = 3\n",
            Path::new("/home/u/.config/caldera/config.toml"),
        );
        assert_eq!(r.theme.name, "dark");
        assert_eq!(r.problems.len(), 1);
        assert!(
            r.problems[0].starts_with("/home/u/.config/caldera/config.toml:2:7:"),
            "{}",
            r.problems[0]
        );
        assert!(r.problems[0].contains("using defaults"));

        let r = resolve_text(
            "[keys]\nquit = [\"q\"]\nfly = [\"x\"]\nup = [\"hyper-k\"]\n",
            Path::new("c.toml"),
        );
        assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
        assert!(r
            .problems
            .iter()
            .any(|p| p.starts_with("c.toml:3:") && p.contains("fly")));
        assert!(r
            .problems
            .iter()
            .any(|p| p.starts_with("c.toml:4:") && p.contains("hyper-k")));

        let r = resolve_text("theme = \"neon\"\n", Path::new("c.toml"));
        assert_eq!(r.theme.name, "dark");
        assert!(r.problems[0].contains("neon"));
    }

    #[test]
    fn config_file_with_broken_theme_file() {
        let dir = tempfile::tempdir().unwrap();
        let theme = dir.path().join("bad.toml");
        std::fs::write(&theme, "[colors]\n\nfg = \"nope\"\n").unwrap();
        let cfg = dir.path().join("config.toml");
        std::fs::write(&cfg, format!("theme = {:?}\n", theme.display().to_string())).unwrap();
        let r = resolve(&ConsoleOptions {
            config_path: Some(cfg),
            theme_dir: Some(dir.path().to_path_buf()),
            ..ConsoleOptions::default()
        });
        assert_eq!(r.theme.name, "dark");
        assert_eq!(r.problems.len(), 1);
        assert!(r.problems[0].contains("bad.toml:3:6:"), "{}", r.problems[0]);
    }

    #[test]
    fn a_key_bound_to_two_actions_in_one_view_is_reported_and_the_defaults_kept() {
        use crate::keys::TABLE_VIEW;
        use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
        let r = resolve_text("[keys]\nquit = [\"j\"]\n", Path::new("c.toml"));
        assert_eq!(
            r.problems,
            vec![
                "c.toml:2:8: [keys] quit: j is already bound to down in Tables; keeping the default keys of quit (q ctrl-c)"
                    .to_string()
            ]
        );
        let key = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        assert_eq!(r.keys.lookup(&key('j'), TABLE_VIEW), Some(KeyAction::Down));
        assert_eq!(r.keys.lookup(&key('q'), TABLE_VIEW), Some(KeyAction::Quit));
        let help: Vec<(String, &str)> = r
            .keys
            .help_sections()
            .into_iter()
            .flat_map(|s| s.1)
            .collect();
        assert!(
            help.iter()
                .any(|(k, h)| k == "q ctrl-c" && h.starts_with("Quit")),
            "{help:?}"
        );

        // Swapping two keys in one file is not a conflict.
        let r = resolve_text(
            "[keys]\nup = [\"j\"]\ndown = [\"k\"]\n",
            Path::new("c.toml"),
        );
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(r.keys.lookup(&key('j'), TABLE_VIEW), Some(KeyAction::Up));
        assert_eq!(r.keys.lookup(&key('k'), TABLE_VIEW), Some(KeyAction::Down));
    }

    #[test]
    fn oversized_config_and_theme_files_are_refused_with_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config.toml");
        std::fs::write(&cfg, "theme = \"light\"\n").unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&cfg)
            .unwrap()
            .set_len(2 << 30)
            .unwrap();
        let r = resolve(&ConsoleOptions {
            config_path: Some(cfg.clone()),
            theme_dir: Some(dir.path().to_path_buf()),
            ..ConsoleOptions::default()
        });
        assert_eq!(r.theme.name, "dark");
        assert_eq!(
            r.problems,
            vec![format!(
                "{}: config file is larger than the 1 MiB limit (using defaults)",
                cfg.display()
            )]
        );
        let theme = dir.path().join("huge.toml");
        std::fs::File::create(&theme)
            .unwrap()
            .set_len(2 << 20)
            .unwrap();
        let err = load_theme(&theme.display().to_string(), None).unwrap_err();
        assert!(
            err.to_string()
                .contains("theme file is larger than the 1 MiB limit"),
            "{err}"
        );
        assert!(err.to_string().contains("huge.toml"), "{err}");
    }

    /// TOML nesting is bounded by the parser itself (toml_edit's recursion check, 80
    /// levels): a config within the size limit but nested to the brim is an error, not a
    /// stack overflow.
    #[test]
    fn deeply_nested_toml_is_an_error_not_a_crash() {
        let src = format!("theme = {}\n", "[".repeat(500_000));
        let r = resolve_text(&src, Path::new("c.toml"));
        assert_eq!(r.theme.name, "dark");
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        assert!(r.problems[0].starts_with("c.toml:1:"), "{}", r.problems[0]);
        assert!(
            r.problems[0].contains("recursion limit"),
            "{}",
            r.problems[0]
        );
    }
}
