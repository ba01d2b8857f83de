//! The simulated clock: simulated time runs `speed` times faster than real time, so a
//! 1000-node rollout can be watched in minutes. All world timestamps are simulated
//! milliseconds since the Unix epoch.

use std::time::Instant;

#[derive(Debug, Clone)]
pub struct SimClock {
    real_start: Instant,
    sim_start_ms: i64,
    speed: f64,
}

impl SimClock {
    pub fn new(sim_start_ms: i64, speed: f64) -> SimClock {
        // A zero or negative speed would freeze or reverse time; clamp to "almost frozen".
        let speed = if speed.is_finite() && speed > 0.0 {
            speed
        } else {
            1e-6
        };
        SimClock {
            real_start: Instant::now(),
            sim_start_ms,
            speed,
        }
    }

    pub fn now_ms(&self) -> i64 {
        let real = self.real_start.elapsed().as_secs_f64() * 1000.0;
        self.sim_start_ms + (real * self.speed) as i64
    }

    pub fn speed(&self) -> f64 {
        self.speed
    }
}

/// Formats simulated milliseconds the way Heat and Nova do (`2026-11-21T12:17:42Z`).
pub fn iso_z(ms: i64) -> String {
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => "1970-01-01T00:00:00Z".to_string(),
    }
}

/// Formats simulated milliseconds the way Magnum does (`2026-11-21T12:17:42+00:00`).
pub fn iso_offset(ms: i64) -> String {
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S+00:00").to_string(),
        None => "1970-01-01T00:00:00+00:00".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(iso_z(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_offset(1_000), "1970-01-01T00:00:01+00:00");
    }

    #[test]
    fn speed_scales_time() {
        let c = SimClock::new(1_000, 1000.0);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(c.now_ms() >= 1_000 + 20_000 - 1);
    }
}
