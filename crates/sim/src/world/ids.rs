//! Deterministic identifiers: everything random in the world comes from one seeded RNG,
//! so a given seed always builds the same cloud (same ids, names, IPs, durations).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub struct Ids {
    rng: StdRng,
}

impl Ids {
    pub fn new(seed: u64) -> Ids {
        Ids {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// A version-4 shaped UUID, as Heat, Magnum and Nova use.
    pub fn uuid(&mut self) -> String {
        let mut b: [u8; 16] = self.rng.gen();
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        format_uuid(u128::from_be_bytes(b))
    }

    /// A raw 128-bit event id (formatted as a UUID only when served, to keep events small).
    pub fn uuid_bits(&mut self) -> u128 {
        let mut b: [u8; 16] = self.rng.gen();
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        u128::from_be_bytes(b)
    }

    /// Heat's short random suffix for nested stack and resource names (12 lowercase alnum).
    pub fn suffix(&mut self) -> String {
        const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        (0..12)
            .map(|_| CHARS[self.rng.gen_range(0..CHARS.len())] as char)
            .collect()
    }

    pub fn hex(&mut self, len: usize) -> String {
        const CHARS: &[u8] = b"0123456789abcdef";
        (0..len)
            .map(|_| CHARS[self.rng.gen_range(0..16)] as char)
            .collect()
    }

    /// A duration drawn from a log-normal distribution with the given median and sigma:
    /// cloud provisioning times are right-skewed (most nodes are quick, a few straggle).
    pub fn lognormal_ms(&mut self, median_ms: f64, sigma: f64) -> i64 {
        // Box-Muller: two uniforms to one standard normal.
        let u1: f64 = self.rng.gen_range(f64::EPSILON..1.0);
        let u2: f64 = self.rng.gen();
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        (median_ms * (sigma * z).exp()).max(1.0) as i64
    }

    pub fn unit(&mut self) -> f64 {
        self.rng.gen()
    }
}

pub fn format_uuid(v: u128) -> String {
    let h = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

pub fn parse_uuid(s: &str) -> Option<u128> {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 {
        return None;
    }
    u128::from_str_radix(&hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_well_formed() {
        let mut a = Ids::new(7);
        let mut b = Ids::new(7);
        let u = a.uuid();
        assert_eq!(u, b.uuid());
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_eq!(parse_uuid(&u).map(format_uuid), Some(u));
        assert_eq!(a.suffix().len(), 12);
    }

    #[test]
    fn lognormal_median_is_close() {
        let mut ids = Ids::new(1);
        let mut v: Vec<i64> = (0..2001).map(|_| ids.lognormal_ms(1000.0, 0.5)).collect();
        v.sort();
        let med = v[1000];
        assert!((800..1250).contains(&med), "median {med}");
    }
}
