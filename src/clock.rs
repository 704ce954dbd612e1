//! The clock: the only place memdir reads the system time.
//!
//! `MEMDIR_NOW` (an RFC 3339 time) replaces the clock everywhere: dates written,
//! recency, timeline `ts`. Tests, benchmarks and bug reports use it to be reproducible.

use chrono::{DateTime, Utc};

/// Name of the environment variable that fixes the clock.
pub(crate) const NOW_VAR: &str = "MEMDIR_NOW";

/// A source of the current time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Clock {
    fixed: Option<DateTime<Utc>>,
}

/// `MEMDIR_NOW` is set but is not an RFC 3339 time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{NOW_VAR}={value:?} is not an RFC 3339 time (for example 2026-04-14T12:00:00Z)")]
pub struct BadNow {
    pub value: String,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock { fixed: None }
    }

    /// A clock stopped at `t`.
    pub fn fixed(t: DateTime<Utc>) -> Clock {
        Clock { fixed: Some(t) }
    }

    /// The system clock, or the time in `MEMDIR_NOW` when it is set.
    pub fn from_env() -> Result<Clock, BadNow> {
        match std::env::var(NOW_VAR) {
            Ok(v) if !v.trim().is_empty() => DateTime::parse_from_rfc3339(v.trim())
                .map(|t| Clock::fixed(t.with_timezone(&Utc)))
                .map_err(|_| BadNow { value: v }),
            _ => Ok(Clock::system()),
        }
    }

    /// The current time.
    pub fn now(&self) -> DateTime<Utc> {
        self.fixed.unwrap_or_else(Utc::now)
    }

    /// The system's wall time, never `MEMDIR_NOW`: for comparing with file times,
    /// which the file system stamps with the real clock.
    pub fn wall() -> std::time::SystemTime {
        std::time::SystemTime::now()
    }
}
