//! Every limit a scenario is held to, in one place: the fixed ones (`*_MAX`: what a file, a
//! scenario and its parts may hold, which validation checks and which the world sizes its
//! tables by), and the [`RunLimits`] a command line may raise (the memory budget and the rate
//! limit), with [`Bytes`], the sizes they are written in. What a scenario needs of them is
//! estimated in [`footprint`](crate::format::footprint).

use sim_core::{Rate, SimDuration};
use std::fmt;

// What a file may be: its size, its nesting, its overrides.

/// The largest scenario file read, in bytes.
pub const FILE_BYTES_MAX: u64 = 64 << 20;

/// The largest file of samples (`Empirical(file: ...)`) read, in bytes.
pub const SAMPLE_FILE_BYTES_MAX: u64 = 256 << 20;

/// The most samples one file of samples may give: 16 bytes each (a value and a weight) is
/// 160 MB, which the memory budget's default leaves room for.
pub const SAMPLES_MAX: usize = 10_000_000;

/// How deeply a file may nest (RON's recursion limit, which counts structures, lists and
/// variants): each `Mixture` inside another takes seven levels, so about 17 fit. At this limit
/// a debug build reads the file within a test thread's 2 MiB stack.
pub const NESTING_MAX: usize = 128;

/// The most overrides one scenario takes (a variant's and the command line's together).
pub const OVERRIDES_MAX: usize = 256;

// What a scenario may hold: its durations and its topology.

/// The longest run, and the longest duration a scenario may hold anywhere: a bound that keeps
/// every instant of a run, plus any configured span, plus any sampled delay (at most
/// `sim_core::sample::SAMPLE_MAX`), representable. 100 years of 365.25 days, as humantime
/// counts them ([`SimDuration::CONFIG_MAX`]).
pub const DURATION_MAX: SimDuration = SimDuration::CONFIG_MAX;

/// The most replicas of one service: a balancer that picks the least loaded replica looks at
/// each one per request. Clients and services have no fixed limit: what each holds counts in
/// the memory estimate ([`footprint`](crate::format::footprint)).
pub const REPLICAS_MAX: u32 = 10_000;

/// The most downstream calls one service may make per request, and so the most `stages`
/// (each call is in one stage, no stage is empty): more routes than a gateway gives one
/// listener, numbered in 16 bits; a `Pick` stage scans its calls' weights and an `All` stage
/// starts each of its calls per request. A job keeps the running calls of a stage of up to 8
/// inline (`world/downstream.rs`). Was 8 until issue 38.
pub const CALLS_MAX: usize = 1_000;

/// The most layers in one call's pattern stack: every kind of layer, with room for gates a
/// configuration repeats. A call keeps the permits of 6 gates inline (`world/stack.rs`). Was 6
/// until issue 38.
pub const LAYERS_MAX: usize = 16;

// Request classes and tenants.

/// The most classes one client may declare.
pub const CLASSES_MAX: usize = 64;

/// The most tenant keys one class may draw from (a Zipf class keeps one cumulative weight
/// per key, 8 bytes each).
pub const TENANT_KEYS_MAX: u32 = 1_000_000;

/// The most tenants a class reports one by one (the rest are summed as "others").
pub const TENANTS_REPORTED_MAX: u32 = 100;

/// The highest numeric priority level
/// ([`Priority::Level`](crate::format::schema::Priority::Level)); levels are 0 (least
/// important) to 63, the priority shedder's classes.
pub const PRIORITY_LEVEL_MAX: u8 = 63;

// The schema's parts: distributed limiters, fan-outs, pools, isolation, stores.

/// The most tokens one lease may take.
pub const LEASE_BATCH_MAX: u64 = 1_000_000;

/// The most leaves of one fan-out.
pub const FAN_OUT_MAX: u32 = 100_000;

/// The largest pool (connections per calling replica).
pub const POOL_SIZE_MAX: u32 = 100_000;

/// The most replica assignments one isolated service may hold: units × replicas per unit
/// (each is 8 bytes: the unit's entry and the replica's reverse entry).
pub const ASSIGNMENTS_MAX: u64 = 4_000_000;

/// The most rows of one store (each is 8 bytes of version, plus a cumulative weight for a
/// Zipf key).
pub const ROWS_MAX: u32 = 1_000_000;
/// What a run may use. The defaults fit a 2-core machine with 24 GB of memory running a few
/// runs side by side; the command line raises them (`--max-memory`, `--max-rate`).
#[derive(Debug, Clone, PartialEq)]
pub struct RunLimits {
    /// The most memory, in bytes, the parts of a run that the file fixes may need (see the
    /// module docs). Default 4 GiB.
    pub memory_max: u64,
    /// The fastest arrival rate of one client, load spikes included. Default 1,000,000/s: at
    /// that rate the default event budget is spent within a few simulated seconds. At most
    /// one per nanosecond, the clock's resolution.
    pub rate_max: Rate,
}

impl RunLimits {
    /// The default memory budget.
    pub const MEMORY_MAX_DEFAULT: u64 = 4 << 30;
    /// The default rate limit, per second.
    pub const RATE_MAX_DEFAULT: f64 = 1_000_000.0;
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            memory_max: Self::MEMORY_MAX_DEFAULT,
            rate_max: Rate::per_second(Self::RATE_MAX_DEFAULT),
        }
    }
}

/// A byte count for people: `512 B`, `1.5 KiB`, `4 GiB`, `1.6 TiB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
        let mut value = self.0 as f64;
        let mut unit = 0;
        while value >= 1024.0 && unit + 1 < UNITS.len() {
            value /= 1024.0;
            unit += 1;
        }
        if unit == 0 || value >= 10.0 || value.fract() == 0.0 {
            write!(f, "{} {}", libm::round(value), UNITS[unit])
        } else {
            write!(f, "{:.1} {}", value, UNITS[unit])
        }
    }
}

impl std::str::FromStr for Bytes {
    type Err = String;

    /// `4GiB`, `512 MiB`, `8G` (binary), `4GB` (decimal) or a plain number of bytes.
    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let number: f64 = number
            .parse()
            .map_err(|_| format!("{text:?}: write a size such as 8GiB, 512MiB or 4000000000"))?;
        let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1.0,
            "k" | "kib" => 1024.0,
            "m" | "mib" => 1024.0 * 1024.0,
            "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
            "t" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
            "kb" => 1e3,
            "mb" => 1e6,
            "gb" => 1e9,
            "tb" => 1e12,
            other => {
                return Err(format!(
                    "{text:?}: unknown unit {other:?} (use B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB)"
                ));
            }
        };
        let bytes = number * scale;
        if !(bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64) {
            return Err(format!(
                "{text:?}: must be at least 1 byte and below 16 EiB"
            ));
        }
        Ok(Bytes(bytes as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_and_print_for_people() {
        assert_eq!("8GiB".parse(), Ok(Bytes(8 << 30)));
        assert_eq!("512 MiB".parse(), Ok(Bytes(512 << 20)));
        assert_eq!("4GB".parse(), Ok(Bytes(4_000_000_000)));
        assert_eq!("1000".parse(), Ok(Bytes(1000)));
        assert!("8 furlongs".parse::<Bytes>().is_err());
        assert!("0".parse::<Bytes>().is_err());
        assert_eq!(Bytes(4 << 30).to_string(), "4 GiB");
        assert_eq!(Bytes(1536).to_string(), "1.5 KiB");
        assert_eq!(Bytes(100).to_string(), "100 B");
    }
}
