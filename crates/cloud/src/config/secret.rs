//! A string that must never be printed: passwords, application-credential secrets, tokens.

use serde::{Deserialize, Deserializer};
use std::fmt;

/// Holds a secret. `Debug` and `Display` print `***`; the value is reachable only through
/// [`Secret::expose`], so every use is greppable.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// A secret is a string. Anything else is refused without saying what it was: serde's own
/// message (`invalid type: integer \`12345\``) would print the password.
impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        const NOT_SHOWN: &str = "must be a string (quote it in YAML); the value is not shown";
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Secret;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Secret, E> {
                Ok(Secret(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Secret, E> {
                Ok(Secret(v))
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Secret, E> {
                Err(E::custom(NOT_SHOWN))
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Secret, E> {
                Err(E::custom(NOT_SHOWN))
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Secret, E> {
                Err(E::custom(NOT_SHOWN))
            }
            fn visit_i128<E: serde::de::Error>(self, _: i128) -> Result<Secret, E> {
                Err(E::custom(NOT_SHOWN))
            }
            fn visit_u128<E: serde::de::Error>(self, _: u128) -> Result<Secret, E> {
                Err(E::custom(NOT_SHOWN))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Secret, E> {
                Err(E::custom(NOT_SHOWN))
            }
            fn visit_char<E: serde::de::Error>(self, _: char) -> Result<Secret, E> {
                Err(E::custom(NOT_SHOWN))
            }
            fn visit_bytes<E: serde::de::Error>(self, _: &[u8]) -> Result<Secret, E> {
                Err(E::custom(NOT_SHOWN))
            }
        }
        // `any`: a deserializer asked for a string would word the refusal itself, value included.
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_printed() {
        let s = Secret::new("hunter2-very-secret");
        assert!(!format!("{s:?}").contains("hunter2"));
        assert!(!format!("{s}").contains("hunter2"));
        assert!(!format!("{:?}", Some(s.clone())).contains("hunter2"));
        assert_eq!(s.expose(), "hunter2-very-secret");
    }
}
