//! Lenient timestamp decoding: OpenStack services write `2026-11-21T12:17:30Z`,
//! `2026-11-21T12:17:30.123456`, `2026-11-21T12:17:30+00:00` or `2026-11-21 12:17:30`
//! depending on service and release. Zone-less times are UTC.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{de::Error, Deserialize, Deserializer};

pub fn parse_time(raw: &str) -> Option<DateTime<Utc>> {
    let raw = raw.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(raw) {
        return Some(t.with_timezone(&Utc));
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(raw, fmt) {
            return Some(t.and_utc());
        }
    }
    None
}

pub fn de_time<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    let raw = String::deserialize(d)?;
    parse_time(&raw).ok_or_else(|| D::Error::custom(format!("invalid timestamp '{raw}'")))
}

pub fn de_opt_time<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(raw) if raw.is_empty() => Ok(None),
        Some(raw) => parse_time(&raw)
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("invalid timestamp '{raw}'"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_openstack_variants() {
        let want = "2026-11-21T12:17:30Z";
        for raw in [
            "2026-11-21T12:17:30Z",
            "2026-11-21T12:17:30",
            "2026-11-21T12:17:30.000000",
            "2026-11-21T12:17:30+00:00",
            "2026-11-21 12:17:30",
        ] {
            assert_eq!(
                parse_time(raw).map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
                Some(want.to_string()),
                "{raw}"
            );
        }
        assert_eq!(parse_time("yesterday"), None);
    }
}
