//! Bounds on the files caldera reads: clouds.yaml, secure.yaml, config.toml, themes,
//! actions.toml and CA bundles. A file from outside is hostile until bounded: a 2 GB
//! clouds.yaml must not be read whole into memory, a device (`/dev/zero`) must not be read
//! at all, and a YAML document nested thousands of levels deep must not reach the parser
//! (libyaml's time grows with the square of the flow depth: 200 KB of `[[[` took 24 s).
//!
//! Every error names the file, what it is and the limit.

use std::io::Read;
use std::path::Path;

/// Largest clouds.yaml / secure.yaml: real ones with dozens of clouds are tens of KB; a
/// 1 MiB file of 8000 clouds costs a (debug) `caldera stacks` 0.7 s and 58 MB in all.
pub const MAX_CLOUDS_BYTES: u64 = 1 << 20;
/// Largest config.toml, theme or actions.toml.
pub const MAX_TOML_BYTES: u64 = 1 << 20;
/// Largest CA bundle (the system bundle is about 200 KB).
pub const MAX_CACERT_BYTES: u64 = 8 << 20;
/// Deepest nesting accepted in a YAML file (block indentation levels plus flow
/// brackets); a clouds.yaml is 4 to 6 deep.
pub const MAX_YAML_DEPTH: usize = 64;

/// Why a file cannot be used. `Display` is the detail; the caller names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileLimitError {
    #[error("does not exist")]
    Missing,
    #[error("is {0}, not a file")]
    NotAFile(&'static str),
    #[error("is larger than the {} limit", human(*.0))]
    TooLarge(u64),
    #[error("is not UTF-8 text")]
    NotText,
    #[error("nests deeper than {max} levels (at line {line}); refusing to parse it")]
    TooDeep { max: usize, line: usize },
    #[error("cannot read: {0}")]
    Io(String),
}

impl FileLimitError {
    pub fn is_missing(&self) -> bool {
        matches!(self, FileLimitError::Missing)
    }
}

fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes % (1 << 10) == 0 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// What kind of thing `path` is, when it is not something to read a configuration from.
/// Regular files and pipes (`OS_CLIENT_CONFIG_FILE=<(vault read …)`) are fine.
pub fn check_readable_kind(path: &Path) -> Result<(), FileLimitError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(FileLimitError::Missing),
        Err(e) => return Err(FileLimitError::Io(e.to_string())),
    };
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok(());
    }
    if ft.is_dir() {
        return Err(FileLimitError::NotAFile("a directory"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return Ok(());
        }
        if ft.is_char_device() {
            return Err(FileLimitError::NotAFile("a character device"));
        }
        if ft.is_block_device() {
            return Err(FileLimitError::NotAFile("a block device"));
        }
        if ft.is_socket() {
            return Err(FileLimitError::NotAFile("a socket"));
        }
    }
    Err(FileLimitError::NotAFile("not a regular file"))
}

/// The bytes of `path`, at most `limit` of them: a larger file is refused after reading
/// `limit + 1` bytes, whatever its size (or endlessness).
pub fn read_bounded_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, FileLimitError> {
    check_readable_kind(path)?;
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => FileLimitError::Missing,
        _ => FileLimitError::Io(e.to_string()),
    })?;
    let mut buf = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| FileLimitError::Io(e.to_string()))?;
    if buf.len() as u64 > limit {
        return Err(FileLimitError::TooLarge(limit));
    }
    Ok(buf)
}

/// [`read_bounded_bytes`] as UTF-8 text.
pub fn read_bounded(path: &Path, limit: u64) -> Result<String, FileLimitError> {
    String::from_utf8(read_bounded_bytes(path, limit)?).map_err(|_| FileLimitError::NotText)
}

/// Refuses YAML nested deeper than `max` before a parser sees it. A quick scan that
/// over-estimates rather than under-estimates: block depth is the stack of indentation
/// levels of the lines, flow depth counts `[` and `{` outside quotes and comments; the
/// two are added.
pub fn check_yaml_depth(text: &str, max: usize) -> Result<(), FileLimitError> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    let mut quote: Option<char> = None;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start_matches([' ', '\t']);
        let indent = line.len() - trimmed.len();
        let blank = trimmed.is_empty() || trimmed.starts_with('#');
        if quote.is_none() && flow == 0 && !blank {
            while indents.last().is_some_and(|&i| i >= indent) {
                indents.pop();
            }
            indents.push(indent);
        }
        // The last character that was not a space: a flow collection or a quoted scalar
        // starts only after an indicator (or at the start of a line), never inside a
        // plain scalar such as `see [1` or `it's`.
        let mut last: Option<char> = None;
        let mut after_space = true;
        let mut chars = trimmed.chars().peekable();
        while let Some(c) = chars.next() {
            let starts_node = matches!(last, None | Some(':' | ',' | '[' | '{' | '-' | '?'));
            match quote {
                Some('"') if c == '\\' => {
                    chars.next();
                }
                Some(q) if c == q => {
                    // '' inside a single-quoted scalar is an escaped quote.
                    if q == '\'' && chars.peek() == Some(&'\'') {
                        chars.next();
                    } else {
                        quote = None;
                    }
                }
                Some(_) => {}
                None => match c {
                    '#' if after_space => break,
                    '"' | '\'' if starts_node => quote = Some(c),
                    '[' | '{' if starts_node => {
                        flow += 1;
                        if indents.len() + flow > max {
                            return Err(FileLimitError::TooDeep { max, line: n + 1 });
                        }
                    }
                    ']' | '}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            after_space = c.is_whitespace();
            if !after_space {
                last = Some(c);
            }
        }
        if indents.len() + flow > max {
            return Err(FileLimitError::TooDeep { max, line: n + 1 });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_yaml_is_shallow_enough() {
        let yaml = "clouds:\n  prod:\n    auth:\n      auth_url: 'http://k:5000' # a comment [[[\n      password: \"p[{\\\"\"\n    regions: [a, {name: b, values: [1, 2]}]\n    note: it's [fine\n";
        check_yaml_depth(yaml, 8).unwrap();
        assert!(check_yaml_depth(yaml, 4).is_err());
    }

    #[test]
    fn deep_flow_and_block_nesting_are_refused_with_the_line() {
        let flow = format!("clouds:\n  a: {}", "[".repeat(100_000));
        assert_eq!(
            check_yaml_depth(&flow, 64),
            Err(FileLimitError::TooDeep { max: 64, line: 2 })
        );
        let block: String = (0..100)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        assert_eq!(
            check_yaml_depth(&block, 64),
            Err(FileLimitError::TooDeep { max: 64, line: 65 })
        );
    }

    #[test]
    fn reads_are_bounded_and_name_what_a_path_is() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.yaml");
        std::fs::write(&small, "a: 1\n").unwrap();
        assert_eq!(read_bounded(&small, 5).unwrap(), "a: 1\n");
        assert_eq!(read_bounded(&small, 4), Err(FileLimitError::TooLarge(4)));
        assert_eq!(
            read_bounded(dir.path(), 10),
            Err(FileLimitError::NotAFile("a directory"))
        );
        assert_eq!(
            read_bounded(&dir.path().join("nope"), 10),
            Err(FileLimitError::Missing)
        );
        #[cfg(unix)]
        assert_eq!(
            read_bounded(Path::new("/dev/zero"), 10)
                .unwrap_err()
                .to_string(),
            "is a character device, not a file"
        );
        assert_eq!(
            FileLimitError::TooLarge(MAX_CLOUDS_BYTES).to_string(),
            "is larger than the 1 MiB limit"
        );
    }
}
