//! Themes are TOML files: three built in (`themes/*.toml`, embedded), more in
//! `$XDG_CONFIG_HOME/caldera/themes/*.toml`. A broken file is reported with its
//! path, line and column, and the console keeps the default theme.

use crate::model::{Health, StatusState};
use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use toml::Spanned;

pub const BUILTIN: &[(&str, &str)] = &[
    ("dark", include_str!("../../../themes/dark.toml")),
    ("light", include_str!("../../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../../themes/high-contrast.toml"),
    ),
];

/// Where a configuration problem is: a file (or built-in name), line and column (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    pub origin: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{}:{}: {}", self.origin, l, c, self.message),
            (Some(l), None) => write!(f, "{}:{}: {}", self.origin, l, self.message),
            _ => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

impl std::error::Error for FileError {}

/// 1-based line and column of a byte offset in `src`.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = src.get(..offset).unwrap_or(src);
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|s| s.chars().count())
        .unwrap_or(0)
        + 1;
    (line, col)
}

impl FileError {
    pub fn at(
        origin: &str,
        src: &str,
        span: Option<std::ops::Range<usize>>,
        message: impl Into<String>,
    ) -> Self {
        let (line, column) = match span {
            Some(s) => {
                let (l, c) = line_col(src, s.start);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        FileError {
            origin: origin.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    pub fn from_toml(origin: &str, src: &str, e: &toml::de::Error) -> Self {
        FileError::at(origin, src, e.span(), e.message().trim().to_string())
    }
}

macro_rules! theme_colors {
    ($($field:ident),* $(,)?) => {
        /// The colours of a theme. Every style the console draws comes from here.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Theme {
            pub name: String,
            $(pub $field: Color,)*
        }

        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct ColorsFile {
            $(#[serde(default)] $field: Option<Spanned<String>>,)*
        }

        impl ColorsFile {
            fn apply(self, base: &mut Theme, origin: &str, src: &str) -> Result<(), FileError> {
                $(
                    if let Some(v) = self.$field {
                        base.$field = parse_color(v.get_ref()).ok_or_else(|| {
                            FileError::at(
                                origin,
                                src,
                                Some(v.span()),
                                format!("`{}`: unknown colour {:?} (use a name, \"#rrggbb\" or \"0\"..\"255\")",
                                    stringify!($field), v.get_ref()),
                            )
                        })?;
                    }
                )*
                Ok(())
            }
        }
    };
}

theme_colors!(
    fg,
    bg,
    muted,
    accent,
    border,
    title,
    header_fg,
    header_bg,
    selected_fg,
    selected_bg,
    complete,
    in_progress,
    failed,
    paused,
    unknown,
    old,
    updating,
    new,
    healthy,
    unhealthy,
    error,
    warning,
    badge_fg,
    readonly_bg,
    simulator_bg,
    mark,
);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: Option<String>,
    #[serde(default)]
    colors: ColorsFile,
}

fn parse_color(raw: &str) -> Option<Color> {
    let raw = raw.trim();
    if raw.eq_ignore_ascii_case("reset") || raw.eq_ignore_ascii_case("default") {
        return Some(Color::Reset);
    }
    Color::from_str(raw).ok()
}

/// A node's or resource's state as the heat map and the colours see it: by status, or
/// during an upgrade by image (`Old`, `Updating`, `New`: see `model::ImagePhase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CellState {
    Complete,
    InProgress,
    Paused,
    Failed,
    Unknown,
    /// Still on another image than its node group's (waiting, or held on a hook).
    Old,
    /// Being updated by Heat right now.
    Updating,
    /// On its node group's image.
    New,
}

impl CellState {
    pub fn glyph(self) -> char {
        match self {
            CellState::Complete => '█',
            CellState::InProgress => '▓',
            // The tree's hook marker (`‖ pre-update`): a held member waits, it is not old.
            CellState::Paused => '‖',
            CellState::Failed => 'X',
            CellState::Unknown => '░',
            CellState::Old => '▒',
            CellState::Updating => '▓',
            CellState::New => '█',
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            CellState::Complete => "complete",
            CellState::InProgress => "in progress",
            CellState::Paused => "held on hook",
            CellState::Failed => "failed",
            CellState::Unknown => "unknown",
            CellState::Old => "old",
            CellState::Updating => "updating",
            CellState::New => "new",
        }
    }
    /// For narrow screens, after the count: "12 updating".
    pub fn short_label(self) -> &'static str {
        match self {
            CellState::Complete => "done",
            CellState::InProgress => "updating",
            CellState::Paused => "held",
            CellState::Failed => "failed",
            CellState::Unknown => "unknown",
            CellState::Old => "old",
            CellState::Updating => "upd",
            CellState::New => "new",
        }
    }
}

impl Theme {
    /// The default theme (the embedded `dark.toml`); falls back to a hard-coded copy.
    pub fn default_theme() -> Theme {
        Theme::from_toml(BUILTIN[0].1, "builtin:dark", None).unwrap_or_else(|_| Theme::fallback())
    }

    fn fallback() -> Theme {
        Theme {
            name: "fallback".into(),
            fg: Color::Reset,
            bg: Color::Reset,
            muted: Color::DarkGray,
            accent: Color::LightBlue,
            border: Color::DarkGray,
            title: Color::Yellow,
            header_fg: Color::White,
            header_bg: Color::Black,
            selected_fg: Color::Black,
            selected_bg: Color::LightBlue,
            complete: Color::Green,
            in_progress: Color::Blue,
            failed: Color::Red,
            paused: Color::Yellow,
            unknown: Color::DarkGray,
            old: Color::Magenta,
            updating: Color::Blue,
            new: Color::Green,
            healthy: Color::Green,
            unhealthy: Color::Red,
            error: Color::LightRed,
            warning: Color::Yellow,
            badge_fg: Color::Black,
            readonly_bg: Color::Yellow,
            simulator_bg: Color::Magenta,
            mark: Color::Cyan,
        }
    }

    /// Parse a theme file. Colours it leaves out come from `base` (default: the dark theme).
    pub fn from_toml(src: &str, origin: &str, base: Option<&Theme>) -> Result<Theme, FileError> {
        let file: ThemeFile =
            toml::from_str(src).map_err(|e| FileError::from_toml(origin, src, &e))?;
        let mut theme = base.cloned().unwrap_or_else(Theme::fallback);
        file.colors.apply(&mut theme, origin, src)?;
        theme.name = file.name.unwrap_or_else(|| {
            Path::new(origin)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| origin.to_string())
        });
        Ok(theme)
    }

    pub fn builtin(name: &str) -> Option<Theme> {
        let base = Theme::default_theme();
        BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(n, src)| Theme::from_toml(src, &format!("builtin:{n}"), Some(&base)).ok())
    }

    pub fn style(&self) -> Style {
        Style::default().fg(self.fg).bg(self.bg)
    }
    pub fn muted(&self) -> Style {
        Style::default().fg(self.muted)
    }
    pub fn border(&self) -> Style {
        Style::default().fg(self.border)
    }
    pub fn title(&self) -> Style {
        Style::default().fg(self.title).add_modifier(Modifier::BOLD)
    }
    pub fn selected(&self) -> Style {
        Style::default()
            .fg(self.selected_fg)
            .bg(self.selected_bg)
            .add_modifier(Modifier::BOLD)
    }
    pub fn header(&self) -> Style {
        Style::default().fg(self.header_fg).bg(self.header_bg)
    }
    pub fn error(&self) -> Style {
        Style::default().fg(self.error).add_modifier(Modifier::BOLD)
    }
    pub fn warning(&self) -> Style {
        Style::default().fg(self.warning)
    }
    pub fn accent(&self) -> Style {
        Style::default().fg(self.accent)
    }

    pub fn state_color(&self, s: CellState) -> Color {
        match s {
            CellState::Complete => self.complete,
            CellState::InProgress => self.in_progress,
            CellState::Paused => self.paused,
            CellState::Failed => self.failed,
            CellState::Unknown => self.unknown,
            CellState::Old => self.old,
            CellState::Updating => self.updating,
            CellState::New => self.new,
        }
    }

    pub fn status_style(&self, state: StatusState) -> Style {
        let c = match state {
            StatusState::Complete => self.complete,
            StatusState::InProgress => self.in_progress,
            StatusState::Failed => self.failed,
            StatusState::Unknown => self.unknown,
        };
        let s = Style::default().fg(c);
        if state == StatusState::Failed {
            s.add_modifier(Modifier::BOLD)
        } else {
            s
        }
    }

    pub fn health_style(&self, h: Health) -> Style {
        Style::default().fg(match h {
            Health::Healthy => self.healthy,
            Health::Unhealthy => self.unhealthy,
            Health::Unknown => self.unknown,
        })
    }
}

/// Names of the built-in themes and of the user's theme files.
pub fn theme_names(user_dir: Option<&Path>) -> Vec<String> {
    let mut names: Vec<String> = BUILTIN.iter().map(|(n, _)| n.to_string()).collect();
    if let Some(dir) = user_dir {
        if let Ok(entries) = std::fs::read_dir(dir) {
            let mut extra: Vec<String> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .filter(|n| !names.contains(n))
                .collect();
            extra.sort();
            names.extend(extra);
        }
    }
    names
}

/// `$XDG_CONFIG_HOME/caldera/themes`.
pub fn user_theme_dir() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("caldera").join("themes"))
}

/// Resolve `--theme NAME|PATH`: a path to a file, a user theme name, or a built-in name.
pub fn load_theme(spec: &str, user_dir: Option<&Path>) -> Result<Theme, FileError> {
    let base = Theme::default_theme();
    let as_path = Path::new(spec);
    let looks_like_path = spec.contains('/') || spec.ends_with(".toml");
    let file = if looks_like_path {
        Some(as_path.to_path_buf())
    } else {
        user_dir
            .map(|d| d.join(format!("{spec}.toml")))
            .filter(|p| p.is_file())
    };
    if let Some(path) = file {
        let origin = path.display().to_string();
        let src = caldera_cloud::config::file_limits::read_bounded(
            &path,
            caldera_cloud::config::file_limits::MAX_TOML_BYTES,
        )
        .map_err(|e| FileError {
            origin: origin.clone(),
            line: None,
            column: None,
            message: format!("theme file {e}"),
        })?;
        return Theme::from_toml(&src, &origin, Some(&base));
    }
    Theme::builtin(spec).ok_or_else(|| FileError {
        origin: format!("theme {spec:?}"),
        line: None,
        column: None,
        message: format!(
            "no such theme (built-in: {})",
            BUILTIN
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse() {
        for (name, _) in BUILTIN {
            let t = Theme::builtin(name).expect(name);
            assert_eq!(&t.name, name);
        }
    }

    #[test]
    fn bad_colour_names_file_line_and_field() {
        let src = "name = \"x\"\n[colors]\nfg = \"white\"\nfailed = \"blurple\"\n";
        let e = Theme::from_toml(src, "/tmp/x.toml", None).unwrap_err();
        assert_eq!(e.line, Some(4));
        let msg = e.to_string();
        assert!(msg.starts_with("/tmp/x.toml:4:10:"), "{msg}");
        assert!(msg.contains("failed") && msg.contains("blurple"), "{msg}");
    }

    #[test]
    fn syntax_and_unknown_key_errors_have_lines() {
        let e = Theme::from_toml("[colors]\nfg = \n", "t.toml", None).unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        let e = Theme::from_toml(
            "[colors]\nfg = \"red\"\nsparkle = \"red\"\n",
            "t.toml",
            None,
        )
        .unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.message.contains("sparkle"), "{e}");
    }

    #[test]
    fn partial_theme_inherits_and_user_dir_loads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mine.toml"),
            "[colors]\nfailed = \"#ff0000\"\n",
        )
        .unwrap();
        let t = load_theme("mine", Some(dir.path())).unwrap();
        assert_eq!(t.failed, Color::Rgb(255, 0, 0));
        assert_eq!(t.complete, Theme::default_theme().complete);
        assert!(theme_names(Some(dir.path())).contains(&"mine".to_string()));
        assert!(load_theme("nope", Some(dir.path())).is_err());
    }
}
