//! Virtual time: [`SimTime`] (an instant) and [`SimDuration`] (a span), both integer nanoseconds.
//!
//! Time in a simulation is a `u64` count of nanoseconds since the start of the run, never a float:
//! floats would make event order depend on rounding, and rounding depends on the order of
//! operations. Arithmetic that overflows or goes below zero is a bug in the model, so it is
//! asserted rather than wrapped or saturated silently; the `checked_*` and `saturating_*`
//! methods are there for the places where the model expects it.
//!
//! Durations (de)serialize as humantime strings (`"250ms"`, `"2s"`, `"1m 30s"`), and [`Rate`]
//! as a count over a unit (`"500/s"`), which is the form scenario files and pattern configs use.

use core::fmt;
use core::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};
use core::str::FromStr;

const NANOS_PER_MICRO: u64 = 1_000;
const NANOS_PER_MILLI: u64 = 1_000_000;
const NANOS_PER_SEC: u64 = 1_000_000_000;

/// An instant on the virtual clock, in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

/// A span of virtual time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(u64);

impl SimTime {
    /// The start of every run.
    pub const ZERO: SimTime = SimTime(0);
    /// The last representable instant (about 584 years); used as "never".
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// The instant `nanos` nanoseconds after the start.
    #[inline]
    pub const fn from_nanos(nanos: u64) -> Self {
        SimTime(nanos)
    }

    /// The instant `millis` milliseconds after the start.
    #[inline]
    pub const fn from_millis(millis: u64) -> Self {
        SimTime(millis * NANOS_PER_MILLI)
    }

    /// The instant `secs` seconds after the start.
    #[inline]
    pub const fn from_secs(secs: u64) -> Self {
        SimTime(secs * NANOS_PER_SEC)
    }

    /// Nanoseconds since the start.
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Seconds since the start, as a float: for reports only, never for state.
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_SEC as f64
    }

    /// The span from the start of the run to this instant.
    #[inline]
    pub const fn since_start(self) -> SimDuration {
        SimDuration(self.0)
    }

    /// `self - earlier`; panics if `earlier` is later than `self` (a bug in the caller).
    #[inline]
    pub fn duration_since(self, earlier: SimTime) -> SimDuration {
        assert!(
            earlier.0 <= self.0,
            "duration_since: {earlier} is later than {self}"
        );
        SimDuration(self.0 - earlier.0)
    }

    /// `self - earlier`, or zero when `earlier` is later (for clocks that may appear to go back).
    #[inline]
    pub const fn saturating_duration_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, or `None` on overflow.
    #[inline]
    pub const fn checked_add(self, d: SimDuration) -> Option<SimTime> {
        match self.0.checked_add(d.0) {
            Some(t) => Some(SimTime(t)),
            None => None,
        }
    }

    /// `self + d`, clamped to [`SimTime::MAX`] ("never").
    #[inline]
    pub const fn saturating_add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }

    /// `self - d`, or `None` before the start.
    #[inline]
    pub const fn checked_sub(self, d: SimDuration) -> Option<SimTime> {
        match self.0.checked_sub(d.0) {
            Some(t) => Some(SimTime(t)),
            None => None,
        }
    }

    /// `self - d`, clamped to the start of the run.
    #[inline]
    pub const fn saturating_sub(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_sub(d.0))
    }
}

impl SimDuration {
    /// No time at all.
    pub const ZERO: SimDuration = SimDuration(0);
    /// The longest representable span; used as "unbounded".
    pub const MAX: SimDuration = SimDuration(u64::MAX);
    /// The longest span a configuration may hold: 100 years of 365.25 days, as humantime
    /// counts them. A run of at most this long, plus any one configured span, plus a sampled
    /// delay, stays well inside the clock's 584 years, so adding a configured value to the
    /// clock can never overflow it. Deserialization refuses longer values.
    pub const CONFIG_MAX: SimDuration = SimDuration::from_secs(3_155_760_000);

    /// A span of `nanos` nanoseconds.
    #[inline]
    pub const fn from_nanos(nanos: u64) -> Self {
        SimDuration(nanos)
    }

    /// A span of `micros` microseconds.
    #[inline]
    pub const fn from_micros(micros: u64) -> Self {
        SimDuration(micros * NANOS_PER_MICRO)
    }

    /// A span of `millis` milliseconds.
    #[inline]
    pub const fn from_millis(millis: u64) -> Self {
        SimDuration(millis * NANOS_PER_MILLI)
    }

    /// A span of `secs` seconds.
    #[inline]
    pub const fn from_secs(secs: u64) -> Self {
        SimDuration(secs * NANOS_PER_SEC)
    }

    /// A span from a float number of seconds, rounded to the nearest nanosecond and clamped
    /// to `[0, MAX]` (NaN becomes zero). Used where a computed float becomes a time.
    pub fn from_secs_f64(secs: f64) -> Self {
        Self::from_nanos_f64(secs * NANOS_PER_SEC as f64)
    }

    /// A span from a float number of nanoseconds, rounded to nearest and clamped to `[0, MAX]`.
    #[inline]
    pub fn from_nanos_f64(nanos: f64) -> Self {
        if nanos.is_nan() || nanos <= 0.0 {
            return SimDuration::ZERO;
        }
        // `as` saturates at u64::MAX for large values; rounding goes through libm so the
        // result is the same on every platform.
        SimDuration(libm::round(nanos) as u64)
    }

    /// Nanoseconds in this span.
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Whole milliseconds in this span (truncated).
    #[inline]
    pub const fn as_millis(self) -> u64 {
        self.0 / NANOS_PER_MILLI
    }

    /// Seconds as a float: for reports and rate arithmetic, never for state.
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_SEC as f64
    }

    /// Milliseconds as a float: for reports.
    #[inline]
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_MILLI as f64
    }

    /// True for the zero span.
    #[inline]
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// `self + other`, or `None` on overflow.
    #[inline]
    pub const fn checked_add(self, other: SimDuration) -> Option<SimDuration> {
        match self.0.checked_add(other.0) {
            Some(d) => Some(SimDuration(d)),
            None => None,
        }
    }

    /// `self - other`, or `None` if `other` is longer.
    #[inline]
    pub const fn checked_sub(self, other: SimDuration) -> Option<SimDuration> {
        match self.0.checked_sub(other.0) {
            Some(d) => Some(SimDuration(d)),
            None => None,
        }
    }

    /// `self + other`, clamped to [`SimDuration::MAX`].
    #[inline]
    pub const fn saturating_add(self, other: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(other.0))
    }

    /// `self - other`, clamped to zero.
    #[inline]
    pub const fn saturating_sub(self, other: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(other.0))
    }

    /// `self * k`, clamped to [`SimDuration::MAX`].
    #[inline]
    pub const fn saturating_mul(self, k: u64) -> SimDuration {
        SimDuration(self.0.saturating_mul(k))
    }

    /// `self * factor` for a float factor, rounded to the nearest nanosecond and clamped.
    #[inline]
    pub fn mul_f64(self, factor: f64) -> SimDuration {
        SimDuration::from_nanos_f64(self.0 as f64 * factor)
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, d: SimDuration) -> SimTime {
        match self.0.checked_add(d.0) {
            Some(t) => SimTime(t),
            None => panic!("virtual time overflow: {self} + {d}"),
        }
    }
}

impl AddAssign<SimDuration> for SimTime {
    #[inline]
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}

impl Sub<SimDuration> for SimTime {
    type Output = SimTime;
    #[inline]
    fn sub(self, d: SimDuration) -> SimTime {
        match self.0.checked_sub(d.0) {
            Some(t) => SimTime(t),
            None => panic!("virtual time underflow: {self} - {d}"),
        }
    }
}

impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    #[inline]
    fn sub(self, earlier: SimTime) -> SimDuration {
        self.duration_since(earlier)
    }
}

impl Add for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn add(self, other: SimDuration) -> SimDuration {
        match self.0.checked_add(other.0) {
            Some(d) => SimDuration(d),
            None => panic!("duration overflow: {self} + {other}"),
        }
    }
}

impl AddAssign for SimDuration {
    #[inline]
    fn add_assign(&mut self, other: SimDuration) {
        *self = *self + other;
    }
}

impl Sub for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn sub(self, other: SimDuration) -> SimDuration {
        match self.0.checked_sub(other.0) {
            Some(d) => SimDuration(d),
            None => panic!("duration underflow: {self} - {other}"),
        }
    }
}

impl SubAssign for SimDuration {
    #[inline]
    fn sub_assign(&mut self, other: SimDuration) {
        *self = *self - other;
    }
}

impl Mul<u64> for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn mul(self, k: u64) -> SimDuration {
        match self.0.checked_mul(k) {
            Some(d) => SimDuration(d),
            None => panic!("duration overflow: {self} * {k}"),
        }
    }
}

impl Div<u64> for SimDuration {
    type Output = SimDuration;
    #[inline]
    fn div(self, k: u64) -> SimDuration {
        assert!(k != 0, "duration divided by zero");
        SimDuration(self.0 / k)
    }
}

/// Writes `nanos / unit` exactly, with trailing zeros of the fraction removed.
fn write_exact(f: &mut fmt::Formatter<'_>, nanos: u64, unit: u64, digits: usize) -> fmt::Result {
    let whole = nanos / unit;
    let frac = nanos % unit;
    if frac == 0 {
        return write!(f, "{whole}");
    }
    let text = format!("{frac:0digits$}");
    write!(f, "{whole}.{}", text.trim_end_matches('0'))
}

impl fmt::Display for SimTime {
    /// Seconds since the start with at least three decimals: `12.345s`, `0.000s`,
    /// `1.000000250s`. Exact: no rounding.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / NANOS_PER_SEC;
        let frac = self.0 % NANOS_PER_SEC;
        let text = format!("{frac:09}");
        let trimmed = text.trim_end_matches('0');
        let shown = if trimmed.len() < 3 {
            &text[..3]
        } else {
            trimmed
        };
        write!(f, "{whole}.{shown}s")
    }
}

impl fmt::Display for SimDuration {
    /// The largest unit that keeps the value at least 1, exact: `250ms`, `1.5s`, `12.345s`,
    /// `1.25µs`, `0s`. Spans of a minute or more stay in seconds (`90s`) so that output
    /// columns compare easily.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n == 0 {
            return f.write_str("0s");
        }
        if n >= NANOS_PER_SEC {
            write_exact(f, n, NANOS_PER_SEC, 9)?;
            f.write_str("s")
        } else if n >= NANOS_PER_MILLI {
            write_exact(f, n, NANOS_PER_MILLI, 6)?;
            f.write_str("ms")
        } else if n >= NANOS_PER_MICRO {
            write_exact(f, n, NANOS_PER_MICRO, 3)?;
            f.write_str("µs")
        } else {
            write!(f, "{n}ns")
        }
    }
}

impl From<core::time::Duration> for SimDuration {
    fn from(d: core::time::Duration) -> Self {
        SimDuration(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl From<SimDuration> for core::time::Duration {
    fn from(d: SimDuration) -> Self {
        core::time::Duration::from_nanos(d.0)
    }
}

/// Why a duration string was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseDurationError {
    input: String,
    reason: String,
}

impl fmt::Display for ParseDurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid duration {:?}: {}; write a number with a unit, e.g. \"250ms\", \"2s\" or \"1m 30s\"",
            self.input, self.reason
        )
    }
}

impl std::error::Error for ParseDurationError {}

impl FromStr for SimDuration {
    type Err = ParseDurationError;

    /// Parses humantime syntax (`"250ms"`, `"2s"`, `"1m 30s"`, `"0s"`). A bare number is
    /// rejected: a unit-less duration in a scenario file is almost always a mistake.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s.trim();
        if trimmed.starts_with('-') {
            return Err(ParseDurationError {
                input: s.to_string(),
                reason: "durations cannot be negative".to_string(),
            });
        }
        humantime::parse_duration(trimmed)
            .map(SimDuration::from)
            .map_err(|e| ParseDurationError {
                input: s.to_string(),
                reason: e.to_string(),
            })
    }
}

impl serde::Serialize for SimDuration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for SimDuration {
    /// A humantime string of at most [`SimDuration::CONFIG_MAX`]. A bare number is refused
    /// with the fix (`60` → write `"60s"` or `"60ms"`), since the unit cannot be guessed.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = SimDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration: a string with a unit, e.g. \"250ms\" or \"2s\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SimDuration, E> {
                let d: SimDuration = v.parse().map_err(E::custom)?;
                if d > SimDuration::CONFIG_MAX {
                    return Err(E::custom(format!(
                        "invalid duration {v:?}: longer than 100 years, the longest a configuration may hold; write at most \"100y\""
                    )));
                }
                Ok(d)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SimDuration, E> {
                Err(E::custom(bare_number_duration(v)))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SimDuration, E> {
                Err(E::custom(bare_number_duration(v)))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<SimDuration, E> {
                Err(E::custom(bare_number_duration(v)))
            }
        }
        // `deserialize_any`, not `deserialize_str`: a number must reach the visitor, which
        // knows what to suggest, instead of failing as "expected string".
        deserializer.deserialize_any(Visitor)
    }
}

fn bare_number_duration(v: impl fmt::Display) -> String {
    format!("invalid duration {v}: a duration is a string with a unit; write \"{v}s\" or \"{v}ms\"")
}

/// A rate of events: a count per unit of time, written `"500/s"`, `"30/min"`, `"2.5/ms"`.
///
/// Stored as events per second. A rate is a configuration value; the state machines that use
/// it turn it into an integer interval ([`Rate::interval`]) before doing time arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Rate {
    per_second: f64,
}

impl Rate {
    /// The fastest rate a configuration may hold: one event per nanosecond, the clock's
    /// resolution. Faster rates would have intervals that round to zero.
    pub const MAX_PER_SECOND: f64 = 1e9;

    /// A rate of `per_second` events per second; must be finite and not negative.
    pub fn per_second(per_second: f64) -> Self {
        assert!(
            per_second.is_finite() && per_second >= 0.0,
            "rate must be finite and not negative, got {per_second}"
        );
        Rate { per_second }
    }

    /// Events per second.
    pub fn as_per_second(self) -> f64 {
        self.per_second
    }

    /// Mean time between events (`1 / rate`), rounded to the nearest nanosecond;
    /// [`SimDuration::MAX`] for a zero rate.
    pub fn interval(self) -> SimDuration {
        if self.per_second == 0.0 {
            SimDuration::MAX
        } else {
            SimDuration::from_secs_f64(1.0 / self.per_second)
        }
    }

    /// Expected number of events in `d`.
    pub fn events_in(self, d: SimDuration) -> f64 {
        self.per_second * d.as_secs_f64()
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/s", self.per_second)
    }
}

/// Why a rate string was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseRateError {
    input: String,
    reason: &'static str,
}

impl fmt::Display for ParseRateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid rate {:?}: {}; write a count and a unit, e.g. \"500/s\", \"30/min\" or \"2.5/ms\"",
            self.input, self.reason
        )
    }
}

impl std::error::Error for ParseRateError {}

impl FromStr for Rate {
    type Err = ParseRateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| ParseRateError {
            input: s.to_string(),
            reason,
        };
        let (count, unit) = s.split_once('/').ok_or_else(|| err("missing the unit"))?;
        let count: f64 = count
            .trim()
            .parse()
            .map_err(|_| err("the count is not a number"))?;
        if !count.is_finite() || count < 0.0 {
            return Err(err("the count must be a finite number, not negative"));
        }
        let seconds_per_unit = match unit.trim() {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" | "sec" => 1.0,
            "m" | "min" => 60.0,
            "h" | "hour" => 3600.0,
            _ => return Err(err("unknown unit (use ns, us, ms, s, min or h)")),
        };
        let per_second = count / seconds_per_unit;
        // A finite count over a short unit can still overflow (`1e308/ns`).
        if !(per_second.is_finite() && per_second <= Rate::MAX_PER_SECOND) {
            return Err(err(
                "faster than one per nanosecond, the clock's resolution (at most \"1/ns\")",
            ));
        }
        Ok(Rate { per_second })
    }
}

impl serde::Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Rate {
    /// A count over a unit (`"500/s"`); a bare number is refused with the fix.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Rate;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a rate: a string with a unit, e.g. \"500/s\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Rate, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Rate, E> {
                Err(E::custom(bare_number_rate(v)))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Rate, E> {
                Err(E::custom(bare_number_rate(v)))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Rate, E> {
                Err(E::custom(bare_number_rate(v)))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

fn bare_number_rate(v: impl fmt::Display) -> String {
    format!("invalid rate {v}: a rate is a string with a unit; write \"{v}/s\" or \"{v}/min\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_exact_and_readable() {
        assert_eq!(SimTime::from_millis(12_345).to_string(), "12.345s");
        assert_eq!(SimTime::ZERO.to_string(), "0.000s");
        assert_eq!(
            SimTime::from_nanos(1_000_000_250).to_string(),
            "1.00000025s"
        );
        assert_eq!(SimDuration::from_millis(250).to_string(), "250ms");
        assert_eq!(SimDuration::from_millis(1500).to_string(), "1.5s");
        assert_eq!(SimDuration::from_nanos(1250).to_string(), "1.25µs");
        assert_eq!(SimDuration::from_nanos(7).to_string(), "7ns");
        assert_eq!(SimDuration::ZERO.to_string(), "0s");
    }

    #[test]
    fn durations_parse_with_units_only() {
        assert_eq!("250ms".parse(), Ok(SimDuration::from_millis(250)));
        assert_eq!("1m 30s".parse(), Ok(SimDuration::from_secs(90)));
        assert!("5".parse::<SimDuration>().is_err());
        let err = "-5s".parse::<SimDuration>().unwrap_err().to_string();
        assert!(err.contains("negative"), "{err}");
    }

    #[test]
    fn display_round_trips_through_parse() {
        for nanos in [
            1,
            999,
            1_000,
            1_500,
            250_000_000,
            1_000_000_001,
            90 * NANOS_PER_SEC,
        ] {
            let d = SimDuration::from_nanos(nanos);
            let text = d.to_string().replace('µ', "u");
            assert_eq!(text.parse::<SimDuration>(), Ok(d), "{text}");
        }
    }

    #[test]
    fn rates_need_a_unit() {
        assert_eq!("500/s".parse::<Rate>().unwrap().as_per_second(), 500.0);
        assert_eq!("30/min".parse::<Rate>().unwrap().as_per_second(), 0.5);
        assert_eq!(
            "2/ms".parse::<Rate>().unwrap().interval(),
            SimDuration::from_micros(500)
        );
        assert!("500".parse::<Rate>().is_err());
        assert!("-1/s".parse::<Rate>().is_err());
        assert!("5/fortnight".parse::<Rate>().is_err());
        // A finite count can overflow once converted, and nothing is faster than the clock.
        for fast in ["1e308/ns", "2/ns", "1e10/s"] {
            let e = fast.parse::<Rate>().unwrap_err().to_string();
            assert!(e.contains("at most \"1/ns\""), "{e}");
        }
        assert_eq!(
            "1/ns".parse::<Rate>().unwrap().interval(),
            SimDuration::from_nanos(1)
        );
    }

    #[test]
    fn files_get_the_unit_they_forgot_and_at_most_100_years() {
        use serde::Deserialize;
        use serde::de::IntoDeserializer;
        use serde::de::value::Error;
        let number = |v: u64| {
            SimDuration::deserialize(v.into_deserializer()).map_err(|e: Error| e.to_string())
        };
        assert_eq!(
            number(60).unwrap_err(),
            "invalid duration 60: a duration is a string with a unit; write \"60s\" or \"60ms\""
        );
        let text = |v: &str| {
            SimDuration::deserialize(v.into_deserializer()).map_err(|e: Error| e.to_string())
        };
        assert_eq!(text("100y"), Ok(SimDuration::CONFIG_MAX));
        let e = text("1000000y").unwrap_err();
        assert!(e.contains("longer than 100 years"), "{e}");
        let rate = Rate::deserialize(100u64.into_deserializer()).map_err(|e: Error| e.to_string());
        assert!(rate.unwrap_err().contains("write \"100/s\""));
    }

    #[test]
    fn overflow_is_caught_by_checked_forms() {
        assert_eq!(SimTime::MAX.checked_add(SimDuration::from_nanos(1)), None);
        assert_eq!(SimTime::ZERO.checked_sub(SimDuration::from_nanos(1)), None);
        assert_eq!(
            SimTime::from_secs(1).saturating_duration_since(SimTime::from_secs(2)),
            SimDuration::ZERO
        );
    }
}
