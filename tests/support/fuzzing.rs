//! Entry points for fuzzing every parser that reads untrusted input: clouds.yaml (and
//! secure.yaml), console themes, console config and key bindings, and the wire decoders
//! of Heat, Magnum, Nova and Keystone (plus error bodies, `Retry-After`, timestamps and
//! output values). Used by the cargo-fuzz targets in `fuzz/` and by the bounded random
//! harness in `tests/offline/fuzz_parsers.rs`. Each function must return for any input, never panic.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The parser families, for `by_tag` and the harness's per-target seeds.
pub const TARGETS: &[&str] = &[
    "clouds_yaml",
    "theme",
    "console_config",
    "heat",
    "magnum",
    "nova",
    "keystone",
    "misc",
];

/// Runs target number `tag % TARGETS.len()` on `data`.
pub fn by_tag(tag: u8, data: &[u8]) {
    match tag as usize % TARGETS.len() {
        0 => clouds_yaml(data),
        1 => theme(data),
        2 => console_config(data),
        3 => heat(data),
        4 => magnum(data),
        5 => nova(data),
        6 => keystone(data),
        _ => misc(data),
    }
}

/// A private directory for the config files the file-based loaders read.
fn scratch_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("caldera-fuzz-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        dir
    })
}

/// `data` is a clouds.yaml, optionally followed by `\0` and a secure.yaml; loaded through
/// the real discovery (files on disk), with and without a cloud name asked for.
pub fn clouds_yaml(data: &[u8]) {
    use caldera::config::{load_cloud, DiscoveryEnv};
    // One file pair per thread, so parallel test threads do not read each other's input.
    let tid = format!("{:?}", std::thread::current().id())
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>();
    let dir = scratch_dir();
    let clouds = dir.join(format!("clouds-{tid}.yaml"));
    let secure = dir.join(format!("secure-{tid}.yaml"));
    let (main, sec) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    if std::fs::write(&clouds, main).is_err() {
        return;
    }
    let secure_path = match sec {
        Some(s) if std::fs::write(&secure, s).is_ok() => Some(secure.clone()),
        _ => None,
    };
    let env = DiscoveryEnv {
        client_config_file: Some(clouds),
        client_secure_file: secure_path,
        ..Default::default()
    };
    let _ = load_cloud(&env, None);
    let _ = load_cloud(&env, Some("mycloud"));
    let _ = caldera::config::clouds::list_clouds(&env);
}

pub fn theme(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let base = caldera::tui::theme::Theme::default_theme();
    let _ = caldera::tui::theme::Theme::from_toml(src, "fuzz.toml", None);
    let _ = caldera::tui::theme::Theme::from_toml(src, "fuzz.toml", Some(&base));
    let _ = caldera::tui::theme::line_col(src, data.len() / 2);
}

/// The console config (refresh, theme, `[keys]` overrides) and single key specs.
pub fn console_config(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let _ = caldera::tui::config::resolve_text(src, Path::new("fuzz-config.toml"));
    for line in src.lines().take(64) {
        let _ = caldera::tui::keys::KeyBinding::parse(line);
    }
}

pub fn heat(data: &[u8]) {
    caldera::api::heat::heat_client::fuzz_decode(data);
    caldera::api::heat::deployments::fuzz_decode(data);
}

pub fn magnum(data: &[u8]) {
    caldera::api::magnum::magnum_client::fuzz_decode(data);
}

pub fn nova(data: &[u8]) {
    caldera::api::nova::fuzz_decode(data);
}

pub fn keystone(data: &[u8]) {
    caldera::api::auth::fuzz_decode(data);
}

/// Small parsers of server-provided text: error bodies, Retry-After, timestamps, URLs,
/// output values holding addresses, status words.
pub fn misc(data: &[u8]) {
    let _ = caldera::api::error::server_message(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = caldera::fetch::retry::parse_retry_after(text, std::time::SystemTime::now());
    let _ = caldera::fetch::retry::parse_retry_after(text, std::time::UNIX_EPOCH);
    let _ = caldera::api::time::parse_time(text);
    let _ = caldera::api::error::redact_url(text);
    let _ = caldera::model::Status::parse(text);
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        let _ = caldera::ops::ips::addresses_in(&v);
    }
}
