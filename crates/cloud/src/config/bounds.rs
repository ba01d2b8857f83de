//! Numbers a user gives (command-line flags, config.toml, actions.toml): read with bounds,
//! and refused with a message that says what was expected and what was given. A duration
//! of `1e308` seconds, `inf` or `NaN` is no duration (`Duration::from_secs_f64` panics on
//! them), and a hook killed after `0` s never runs: every such number goes through here.

use std::time::Duration;

/// A number shown back to the user: as given where it was text, else as Rust prints it
/// (`inf`, `NaN`, `1e308` are shown as such).
fn shown(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1e15 {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// `value` seconds, finite and from `min` to `max` (both included).
pub fn seconds(value: f64, min: f64, max: f64) -> Result<Duration, String> {
    let out_of_range = || {
        format!(
            "expected a number of seconds from {min} to {max}, got {}",
            shown(value)
        )
    };
    if !value.is_finite() || value < min || value > max {
        return Err(out_of_range());
    }
    Duration::try_from_secs_f64(value).map_err(|_| out_of_range())
}

/// Seconds written as text (a flag's value): a number, then [`seconds`].
pub fn parse_seconds(text: &str, min: f64, max: f64) -> Result<Duration, String> {
    let t = text.trim();
    match t.parse::<f64>() {
        Ok(v) => seconds(v, min, max),
        Err(_) => Err(format!("expected a number of seconds, got {t:?}")),
    }
}

/// A span of time as an operator writes it: `90` or `90s`, `30m`, `2h`, `1d`, or a sum such
/// as `1h30m`; from `min` to `max` seconds.
pub fn parse_span(text: &str, min: f64, max: f64) -> Result<Duration, String> {
    let t = text.trim();
    let bad = || format!("expected a span of time such as 90s, 30m, 2h or 1h30m, got {t:?}");
    if let Ok(v) = t.parse::<f64>() {
        return seconds(v, min, max);
    }
    let mut total = 0f64;
    let mut digits = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() || c == '.' {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1.0,
            'm' => 60.0,
            'h' => 3600.0,
            'd' => 86400.0,
            _ => return Err(bad()),
        };
        let n: f64 = digits.parse().map_err(|_| bad())?;
        total += n * unit;
        digits.clear();
    }
    if !digits.is_empty() || t.is_empty() {
        return Err(bad());
    }
    seconds(total, min, max)
}

/// A plain number (a factor) written as text, finite and from `min` to `max`.
pub fn parse_number(text: &str, min: f64, max: f64) -> Result<f64, String> {
    let t = text.trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && (min..=max).contains(&v) => Ok(v),
        Ok(v) => Err(format!(
            "expected a number from {min} to {max}, got {}",
            shown(v)
        )),
        Err(_) => Err(format!("expected a number from {min} to {max}, got {t:?}")),
    }
}

/// A whole number (a count, or whole seconds) from `min` to `max` (both included).
/// `what` names it in the message: "number", "number of seconds".
pub fn whole(value: i128, min: u64, max: u64, what: &str) -> Result<u64, String> {
    u64::try_from(value)
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| format!("expected a whole {what} from {min} to {max}, got {value}"))
}

/// A whole number written as text (a flag's value), then [`whole`].
pub fn parse_whole(text: &str, min: u64, max: u64, what: &str) -> Result<u64, String> {
    let t = text.trim();
    match t.parse::<i128>() {
        Ok(v) => whole(v, min, max, what),
        Err(_) => Err(format!(
            "expected a whole {what} from {min} to {max}, got {t:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_in_bounds_or_a_message_naming_what_was_given() {
        assert_eq!(
            parse_seconds("2.5", 0.2, 86400.0),
            Ok(Duration::from_millis(2500))
        );
        assert_eq!(
            parse_seconds("1e308", 0.2, 86400.0).unwrap_err(),
            "expected a number of seconds from 0.2 to 86400, got 1e308"
        );
        assert_eq!(
            parse_seconds("inf", 0.2, 86400.0).unwrap_err(),
            "expected a number of seconds from 0.2 to 86400, got inf"
        );
        assert!(parse_seconds("NaN", 0.2, 86400.0)
            .unwrap_err()
            .ends_with("got NaN"));
        assert!(parse_seconds("-1", 0.0, 1.0)
            .unwrap_err()
            .ends_with("got -1"));
        assert_eq!(
            parse_seconds("fast", 0.2, 86400.0).unwrap_err(),
            "expected a number of seconds, got \"fast\""
        );
        assert_eq!(seconds(0.2, 0.2, 1.0), Ok(Duration::from_millis(200)));
    }

    #[test]
    fn whole_numbers_in_bounds() {
        assert_eq!(parse_whole("16", 1, 1024, "number"), Ok(16));
        assert_eq!(
            whole(0, 1, 86400, "number of seconds").unwrap_err(),
            "expected a whole number of seconds from 1 to 86400, got 0"
        );
        assert!(parse_whole("99999999999999999999999", 1, 10, "number").is_err());
        assert!(parse_whole("-3", 0, 10, "number")
            .unwrap_err()
            .ends_with("got -3"));
        assert!(parse_whole("1.5", 0, 10, "number")
            .unwrap_err()
            .ends_with("got \"1.5\""));
    }

    #[test]
    fn spans_take_units_and_sums() {
        assert_eq!(parse_span("90", 0.0, 1e6), Ok(Duration::from_secs(90)));
        assert_eq!(parse_span("30m", 0.0, 1e6), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_span("1h30m", 0.0, 1e6), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_span("2d", 0.0, 1e6), Ok(Duration::from_secs(172_800)));
        assert!(parse_span("30x", 0.0, 1e6).is_err());
        assert!(parse_span("m", 0.0, 1e6).is_err());
        assert!(parse_span("5", 10.0, 1e6).is_err());
        assert!(parse_span("1e308d", 0.0, 1e6).is_err());
    }
}
