//! What a scenario needs of its [`RunLimits`]: the estimate of the
//! memory the file fixes ([`footprint`], held to the memory budget by [`check_memory`]) and its
//! arrival rates ([`check_rates`], held to the rate limit).
//!
//! Some of a run's memory is fixed by the file before the first event: the report series
//! (one entry per bucket for each client, each service and each call site, and the latencies
//! of each bucket; what a bucket costs is [`crate::format::series_bytes`]), the closed-loop
//! users (each one starts with a scheduled event and holds at most one request), each
//! replica's state, and the windows of its patterns (a breaker's ring of outcomes, a
//! throttle's buckets, a sliding log's entries), which fill up as calls go through them. Validation estimates these from the
//! file and refuses a scenario whose total is over [`RunLimits::memory_max`], naming the field
//! that makes it large and a value that fits. What grows with traffic while running (requests
//! in flight) is bounded by the event budget instead.
//!
//! The costs per unit are the peak resident memory of release builds of `resim run`, measured
//! by varying one thing at a time (buckets, clients, services, users, replicas, calls, window
//! sizes) and rounded up, so the estimate errs on the generous side.
//!
//! Somewhat over 600 lines on purpose: every part of a file's memory is estimated here, next
//! to the others, so that one file says what a scenario may hold.

use crate::format::limits::{Bytes, RunLimits};
use crate::format::overrides::segment;
use crate::format::schema::isolation::{Isolation, Units};
use crate::format::schema::traffic::Popularity;
use crate::format::schema::{
    Admission, Client, Layer, LimitKey, Load, Scenario, Schedule, Service,
};
use crate::format::series_bytes::bucket_bytes;
use patterns::breaker::SlidingWindowType;
use patterns::limiter::LimiterConfig;
use sim_core::{Rate, SimDuration};

/// One closed-loop user: its first event (measured 188 bytes) and its one request in flight.
const USER_BYTES: u64 = 512;
/// One replica without calls (measured 4.4 KB).
const REPLICA_BYTES: u64 = 5 << 10;
/// One call site of one replica, without its layers (measured 2.2 KB).
const CALL_SITE_BYTES: u64 = 5 << 9;
/// A call made on a share of requests (`call_ratio` below 1), once per service: its stream
/// (a ChaCha8 generator and its buffer, 320 bytes by `size_of`), boxed with its ratio.
const RATIO_BYTES: u64 = 1 << 9;
/// One layer of one call site, without its window (a bulkhead measured 750 bytes per replica
/// with its share of the report, `bench_mesh --costs`).
const LAYER_BYTES: u64 = 1 << 10;
/// What a breaker holds besides [`LAYER_BYTES`] and its window: its state (boxed), its log of
/// transitions and its part of the report (measured 2.1 KB per replica in all, with a window
/// of 100 calls, `bench_mesh --costs`).
const BREAKER_BYTES: u64 = 3 << 9;
/// A count-based breaker window, per call of its size (one byte of flags per outcome).
const BREAKER_CALL_BYTES: u64 = 1;
/// A time-based breaker window, per second of its size (a bucket of totals).
const BREAKER_SECOND_BYTES: u64 = 32;
/// An adaptive throttle, per bucket.
const THROTTLE_BUCKET_BYTES: u64 = 24;
/// A sliding-log limiter, per unit of its limit (an instant and a count).
const SLIDING_LOG_UNIT_BYTES: u64 = 16;
/// An adaptive timeout, per latency of its window (a ring and its sorted copy).
const ADAPTIVE_LATENCY_BYTES: u64 = 16;
/// A class's or a reported tenant's figures: counters and a compact latency histogram (an
/// upper estimate: two significant digits up to an hour take about 2 KB).
const TRAFFIC_FIGURES_BYTES: u64 = 4 << 10;
/// One report bucket of a class: two counters while running, and a series entry with its
/// name in the report (an upper estimate).
const SERIES_CLASS_BUCKET_BYTES: u64 = 96;
/// One key of a Zipf tenant distribution: its cumulative weight.
const ZIPF_KEY_BYTES: u64 = 8;
/// One key of a per-tenant rate limit: its limiter and two tree entries (an upper estimate).
const TENANT_KEY_BYTES: u64 = 256;
/// A row of a keyed store: its version and, with a Zipf key, its cumulative weight (counted
/// from the two `u64`/`f64` vectors, not measured).
const STORE_ROW_BYTES: u64 = 16;
/// An entry of a cache with a `ttl`, per replica: its expiry (counted, not measured).
const CACHE_ENTRY_BYTES: u64 = 8;

/// One part of a run's memory, as [`footprint`] estimates it.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The field that makes it large, as in error messages.
    pub field: String,
    /// Bytes.
    pub bytes: u64,
    /// What it is, for the message ("a count-based window of 1000 calls on each of 10 replicas").
    pub what: String,
    /// How to make it fit in `allowance` bytes, if a value can.
    fix: Fix,
}

/// How a part can be made smaller.
#[derive(Debug, Clone, PartialEq)]
enum Fix {
    /// Fewer report buckets: `bytes_per_bucket` each over a run of `duration`.
    Bucket {
        duration: SimDuration,
        bytes_per_bucket: u64,
    },
    /// A smaller count of something: `unit_bytes` per unit, e.g. "users", "calls".
    Count {
        unit_bytes: u64,
        noun: &'static str,
        prefix: &'static str,
        also: &'static str,
    },
}

impl Part {
    /// The fix that would make this part fit in `allowance` bytes.
    fn fix(&self, allowance: u64) -> String {
        match &self.fix {
            Fix::Bucket {
                duration,
                bytes_per_bucket,
            } => {
                let buckets = allowance / bytes_per_bucket.max(&1);
                let needed = (buckets > 0)
                    .then(|| duration.as_nanos().div_ceil(buckets))
                    .map(SimDuration::from_nanos)
                    .and_then(round_up_nicely)
                    .filter(|b| b <= duration);
                match needed {
                    Some(b) => format!(
                        "use a bucket of at least {} for a {} run, or a shorter duration",
                        human(b),
                        human(*duration)
                    ),
                    None => "use a shorter duration".to_string(),
                }
            }
            Fix::Count {
                unit_bytes,
                noun,
                prefix,
                also,
            } => {
                let most = round_down(allowance / unit_bytes.max(&1));
                if most == 0 {
                    also.trim_start_matches(", or ").to_string()
                } else {
                    format!("use {prefix}at most {most} {noun}{also}")
                }
            }
        }
    }
}

impl Part {
    /// A part made smaller by a smaller count: `unit_bytes` per `noun`.
    fn count(field: String, bytes: u64, what: String, unit_bytes: u64, noun: &'static str) -> Self {
        Part {
            field,
            bytes,
            what,
            fix: Fix::Count {
                unit_bytes,
                noun,
                prefix: "",
                also: "",
            },
        }
    }

    /// The same part, whose fix writes the value as `prefix` and a count (`max_keys: 100`).
    fn prefixed(mut self, with: &'static str) -> Self {
        if let Fix::Count { prefix, .. } = &mut self.fix {
            *prefix = with;
        }
        self
    }

    /// The same part, whose fix names another way after the count (", or fewer replicas").
    fn or(mut self, other: &'static str) -> Self {
        if let Fix::Count { also, .. } = &mut self.fix {
            *also = other;
        }
        self
    }
}

/// The parts of a scenario's memory that the file fixes, largest first.
pub fn footprint(s: &Scenario) -> Vec<Part> {
    let buckets = s.duration.as_nanos().div_ceil(s.bucket.as_nanos().max(1));
    let mut parts = vec![report_buckets(s, buckets)];
    for (name, c) in &s.clients {
        client_parts(&mut parts, s, name, c, buckets);
    }
    for (name, sv) in &s.services {
        service_parts(&mut parts, s, name, sv);
    }
    parts.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.field.cmp(&b.field)));
    parts
}

/// The report's buckets: the series of every client, service, call site and replica.
fn report_buckets(s: &Scenario, buckets: u64) -> Part {
    let clients = s.clients.len() as u64;
    let services = s.services.len() as u64;
    // A client's call site has one instance; a service's has one per replica.
    let (sites, instances) = s.services.values().fold((clients, clients), |(n, i), sv| {
        let calls = sv.calls.len() as u64;
        let slots = u64::from(crate::format::schema::scaling::slots(sv));
        (
            n.saturating_add(calls),
            i.saturating_add(calls.saturating_mul(slots)),
        )
    });
    let bytes_per_bucket = bucket_bytes(s, clients, services, sites, instances);
    Part {
        field: "bucket".to_string(),
        bytes: buckets.saturating_mul(bytes_per_bucket),
        what: format!(
            "{buckets} report buckets (a {} run in buckets of {}) for {} and {}",
            human(s.duration),
            human(s.bucket),
            plural(clients, "client"),
            plural(services, "service"),
        ),
        fix: Fix::Bucket {
            duration: s.duration,
            bytes_per_bucket,
        },
    }
}

/// A client's users, its call site's windows, and its traffic classes with their tenants.
fn client_parts(parts: &mut Vec<Part>, s: &Scenario, name: &str, c: &Client, buckets: u64) {
    if let Load::Closed { users, .. } | Load::OneShot { users, .. } = c.load {
        let field = format!("clients.{}.load.users", segment(name));
        let bytes = u64::from(users).saturating_mul(USER_BYTES);
        let what = plural(u64::from(users), "user");
        parts.push(Part::count(field, bytes, what, USER_BYTES, "users"));
    }
    windows(
        parts,
        &format!("clients.{}.call", segment(name)),
        &c.call.stack,
        1,
    );
    for (i, class) in c.classes.iter().enumerate() {
        parts.push(Part {
            field: format!("clients.{}.classes[{i}]", segment(name)),
            bytes: TRAFFIC_FIGURES_BYTES
                .saturating_add(buckets.saturating_mul(SERIES_CLASS_BUCKET_BYTES)),
            what: format!("the figures and series of class {:?}", class.name),
            fix: Fix::Bucket {
                duration: s.duration,
                bytes_per_bucket: SERIES_CLASS_BUCKET_BYTES,
            },
        });
        let Some(t) = &class.tenants else { continue };
        let zipf = matches!(t.popularity, Popularity::Zipf { .. });
        let per_key = if zipf { ZIPF_KEY_BYTES } else { 0 };
        let reported = u64::from(t.reported.min(t.keys)) + 2;
        let field = format!("clients.{}.classes[{i}].tenants.keys", segment(name));
        let bytes = reported
            .saturating_mul(TRAFFIC_FIGURES_BYTES)
            .saturating_add(u64::from(t.keys).saturating_mul(per_key));
        let what = format!("{} tenant keys", t.keys);
        let part = Part::count(field, bytes, what, per_key.max(1), "keys");
        parts.push(part.or(", or a Uniform popularity (no table per key)"));
    }
}

/// A service's replicas, tenant keys, isolation, store, cache and its calls' windows.
fn service_parts(parts: &mut Vec<Part>, s: &Scenario, name: &str, sv: &Service) {
    let replicas = u64::from(crate::format::schema::scaling::slots(sv));
    parts.push(replicas_part(name, sv, replicas));
    for (i, a) in sv.admission.iter().enumerate() {
        if let Admission::RateLimit(k) = a
            && k.key == LimitKey::Tenant
        {
            let field = format!("services.{}.admission[{i}].max_keys", segment(name));
            let bytes = (k.max_keys as u64).saturating_mul(TENANT_KEY_BYTES);
            let what = format!("up to {} tenant keys of a rate limit", k.max_keys);
            let part = Part::count(field, bytes, what, TENANT_KEY_BYTES, "keys");
            parts.push(part.prefixed("max_keys: "));
        }
    }
    if let Some(iso) = sv.isolation {
        // Per caller unit: its cell, or its shard and the shard's reverse entries, and the
        // most of its group down at once (counted from the vectors, not measured).
        let per_unit = match iso {
            Isolation::Cells { .. } => 8,
            Isolation::ShuffleSharding { shard_size } => {
                8u64.saturating_add(8u64.saturating_mul(u64::from(shard_size)))
            }
        };
        let units = Units::of(s).len();
        let field = format!("services.{}.isolation", segment(name));
        let what = format!("the replicas of {} caller units", units);
        let part = Part::count(
            field,
            units.saturating_mul(per_unit),
            what,
            per_unit,
            "tenant keys",
        );
        parts.push(part.or(", or a smaller shard"));
    }
    if let Some(store) = &sv.store {
        let rows = u64::from(store.rows);
        let field = format!("services.{}.store.rows", segment(name));
        let what = format!("a store of {}", plural(rows, "row"));
        let bytes = rows.saturating_mul(STORE_ROW_BYTES);
        parts.push(Part::count(field, bytes, what, STORE_ROW_BYTES, "rows"));
    }
    if let Some(cache) = sv.cache.as_ref().filter(|c| c.ttl.is_some()) {
        let (keys, per_key) = (
            u64::from(cache.keys),
            replicas.saturating_mul(CACHE_ENTRY_BYTES),
        );
        let field = format!("services.{}.cache.keys", segment(name));
        let what = format!(
            "{} with a ttl on each of {}",
            plural(keys, "cache key"),
            plural(replicas, "replica")
        );
        let part = Part::count(field, keys.saturating_mul(per_key), what, per_key, "keys");
        parts.push(part.or(", or fewer replicas"));
    }
    ratios_part(parts, name, sv);
    for (i, c) in sv.calls.iter().enumerate() {
        windows(
            parts,
            &format!("services.{}.calls[{i}]", segment(name)),
            &c.stack,
            replicas,
        );
    }
}

/// The streams of a service's calls made on a share of requests, if any.
fn ratios_part(parts: &mut Vec<Part>, name: &str, sv: &Service) {
    let ratios = sv.calls.iter().filter(|c| c.call_ratio < 1.0).count() as u64;
    if ratios > 0 {
        let field = format!("services.{}.calls", segment(name));
        let what = format!("{} made on a share of requests", plural(ratios, "call"));
        let bytes = ratios.saturating_mul(RATIO_BYTES);
        parts.push(Part::count(field, bytes, what, RATIO_BYTES, "calls"));
    }
}

/// A service's replicas, each with its call sites and their layers.
fn replicas_part(name: &str, sv: &Service, replicas: u64) -> Part {
    let layers: u64 = sv
        .calls
        .iter()
        .flat_map(|c| &c.stack)
        .map(|l| match l {
            Layer::Breaker(_) => LAYER_BYTES + BREAKER_BYTES,
            _ => LAYER_BYTES,
        })
        .sum();
    let per_replica = REPLICA_BYTES
        .saturating_add((sv.calls.len() as u64).saturating_mul(CALL_SITE_BYTES))
        .saturating_add(layers);
    let what = format!(
        "{} with {}",
        plural(replicas, "replica"),
        plural(sv.calls.len() as u64, "call")
    );
    let field = format!("services.{}.replicas", segment(name));
    let bytes = replicas.saturating_mul(per_replica);
    Part::count(field, bytes, what, per_replica, "replicas")
}

/// The windows of one call site's layers, on each of `instances` replicas.
fn windows(parts: &mut Vec<Part>, path: &str, stack: &[Layer], instances: u64) {
    let on_each = if instances == 1 {
        String::new()
    } else {
        format!(" on each of {instances} replicas")
    };
    let also = if instances == 1 {
        ""
    } else {
        ", or fewer replicas"
    };
    for (i, layer) in stack.iter().enumerate() {
        let Some(w) = Window::of(layer) else { continue };
        let per_unit = instances.saturating_mul(w.unit_bytes);
        let field = format!("{path}.stack[{i}].{}", w.field);
        let bytes = u64::from(w.units).saturating_mul(per_unit);
        let what = format!("{}{on_each}", w.what);
        let part = Part::count(field, bytes, what, per_unit, w.noun);
        parts.push(part.prefixed(w.prefix).or(also));
    }
}

/// A layer's window: what grows with one of its settings.
struct Window {
    /// The setting, under the layer's path.
    field: &'static str,
    /// Its value.
    units: u32,
    /// Bytes per unit on one instance.
    unit_bytes: u64,
    /// What it is, for the message.
    what: String,
    /// Its unit, plural.
    noun: &'static str,
    /// How the fix writes the value ("a window of ").
    prefix: &'static str,
}

impl Window {
    /// The window of `layer`, if its memory grows with a setting.
    fn of(layer: &Layer) -> Option<Window> {
        let window = |field, units: u32, unit_bytes, what, noun, prefix| Window {
            field,
            units,
            unit_bytes,
            what,
            noun,
            prefix,
        };
        Some(match layer {
            Layer::Breaker(b) => {
                let n = b.sliding_window_size;
                match b.sliding_window_type {
                    SlidingWindowType::CountBased => window(
                        "sliding_window_size",
                        n,
                        BREAKER_CALL_BYTES,
                        format!("a count-based window of {n} calls"),
                        "calls",
                        "a window of ",
                    ),
                    SlidingWindowType::TimeBased => window(
                        "sliding_window_size",
                        n,
                        BREAKER_SECOND_BYTES,
                        format!("a time-based window of {n} seconds"),
                        "seconds",
                        "a window of ",
                    ),
                }
            }
            Layer::AdaptiveTimeout(a) => window(
                "window",
                a.window,
                ADAPTIVE_LATENCY_BYTES,
                format!("an adaptive timeout window of {} latencies", a.window),
                "latencies",
                "a window of ",
            ),
            Layer::Throttle(t) => window(
                "bucket_count",
                t.bucket_count,
                THROTTLE_BUCKET_BYTES,
                format!("a throttle of {} buckets", t.bucket_count),
                "buckets",
                "",
            ),
            Layer::Limiter(LimiterConfig::SlidingLog(w)) => window(
                "limit",
                u32::try_from(w.limit).unwrap_or(u32::MAX),
                SLIDING_LOG_UNIT_BYTES,
                format!("a sliding log of {} entries", w.limit),
                "entries",
                "a limit of ",
            ),
            _ => return None,
        })
    }
}

/// The error for a scenario whose parts do not fit in `limits.memory_max`, if any.
pub fn check_memory(s: &Scenario, limits: &RunLimits) -> Result<(), patterns::ConfigError> {
    let parts = footprint(s);
    let total = parts.iter().fold(0u64, |t, p| t.saturating_add(p.bytes));
    if total <= limits.memory_max {
        return Ok(());
    }
    let largest = &parts[0];
    let rest = total - largest.bytes;
    let whole = if rest > total / 10 {
        format!(", and the whole run about {}", Bytes(total))
    } else {
        String::new()
    };
    let verb = if largest.what.starts_with("a ") || largest.what.starts_with("1 ") {
        "needs"
    } else {
        "need"
    };
    Err(patterns::ConfigError::new(
        largest.field.clone(),
        format!(
            "{} {verb} about {}{whole}, more than the memory budget of {}; {}, or raise the budget with --max-memory",
            largest.what,
            Bytes(largest.bytes),
            Bytes(limits.memory_max),
            largest.fix(limits.memory_max.saturating_sub(rest)),
        ),
    ))
}

/// Every arrival rate of every client, times the load spikes aimed at it, within
/// `limits.rate_max`.
pub fn check_rates(s: &Scenario, limits: &RunLimits) -> Result<(), patterns::ConfigError> {
    let max = limits.rate_max.as_per_second();
    let limit = format!(
        "faster than the limit of {} for one client",
        per_second(max)
    );
    for (name, c) in &s.clients {
        let Load::Open { rate } = &c.load else {
            continue;
        };
        let path = format!("clients.{}.load.rate", segment(name));
        let rates: Vec<(String, &Rate)> = match rate {
            Schedule::Constant(r) => vec![(path, r)],
            Schedule::Steps(steps) => steps
                .iter()
                .enumerate()
                .map(|(i, step)| (format!("{path}[{i}].rate"), &step.rate))
                .collect(),
            Schedule::Ramp { from, to, .. } => {
                vec![(format!("{path}.from"), from), (format!("{path}.to"), to)]
            }
            Schedule::Spike { base, peak, .. } => {
                vec![
                    (format!("{path}.base"), base),
                    (format!("{path}.peak"), peak),
                ]
            }
        };
        let mut fastest = 0.0f64;
        for (field, r) in rates {
            let r = r.as_per_second();
            if r > max {
                return Err(patterns::ConfigError::new(
                    field,
                    format!(
                        "{} is {limit}; use a slower rate, or raise the limit with --max-rate",
                        per_second(r)
                    ),
                ));
            }
            fastest = fastest.max(r);
        }
        // Spikes multiply: overlapping ones compound, so the bound takes them all.
        for (i, f) in s.faults.iter().enumerate() {
            if let crate::format::schema::FaultKind::LoadSpike { client, factor } = &f.kind
                && client == name
                && *factor > 1.0
            {
                fastest *= factor;
                if fastest > max {
                    return Err(patterns::ConfigError::new(
                        format!("faults[{i}].kind.factor"),
                        format!(
                            "a load spike of {} makes client {name:?} send up to {}, {limit}; use a smaller factor, or raise the limit with --max-rate",
                            number(*factor),
                            per_second(fastest)
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A rate per second as a scenario file writes it: `500/s`, `1e12/s`.
fn per_second(r: f64) -> String {
    if r.is_finite() {
        format!("{}/s", number(r))
    } else {
        "more than 1e308/s".to_string()
    }
}

/// `2.5`, `1000000`, or `1e300` for numbers too long to read.
fn number(x: f64) -> String {
    if x.abs() < 1e7 {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// `n` with all but its two leading digits set to zero: a limit people can write down.
fn round_down(n: u64) -> u64 {
    let mut scale = 1;
    while n / scale >= 100 {
        scale *= 10;
    }
    n / scale * scale
}

/// `n thing` or `n things`.
fn plural(n: u64, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// A duration in the largest unit that divides it (`100y`, `12h`, `1s`), else as
/// [`SimDuration`] displays it.
pub fn human(d: SimDuration) -> String {
    const UNITS: [(u64, &str); 8] = [
        (31_557_600_000_000_000, "y"),
        (86_400_000_000_000, "d"),
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    let n = d.as_nanos();
    if n == 0 {
        return "0s".to_string();
    }
    for (unit, name) in UNITS {
        if n.is_multiple_of(unit) {
            return format!("{}{name}", n / unit);
        }
    }
    d.to_string()
}

/// The smallest round duration (1, 2 or 5 of a unit, or 15 and 30 of minutes) at least `d`.
fn round_up_nicely(d: SimDuration) -> Option<SimDuration> {
    const NS: u64 = 1;
    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;
    const M: u64 = 60 * S;
    const H: u64 = 60 * M;
    const D: u64 = 24 * H;
    const NICE: [u64; 34] = [
        NS,
        2 * NS,
        5 * NS,
        10 * NS,
        20 * NS,
        50 * NS,
        100 * NS,
        200 * NS,
        500 * NS,
        US,
        10 * US,
        100 * US,
        MS,
        10 * MS,
        100 * MS,
        S,
        2 * S,
        5 * S,
        10 * S,
        15 * S,
        30 * S,
        M,
        2 * M,
        5 * M,
        10 * M,
        15 * M,
        30 * M,
        H,
        2 * H,
        6 * H,
        12 * H,
        D,
        7 * D,
        31_557_600 * S,
    ];
    NICE.iter()
        .map(|&n| SimDuration::from_nanos(n))
        .find(|&n| n >= d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_their_own_unit() {
        assert_eq!(human(SimDuration::from_secs(3_155_760_000)), "100y");
        assert_eq!(human(SimDuration::from_secs(3600)), "1h");
        assert_eq!(human(SimDuration::from_millis(1500)), "1500ms");
        assert_eq!(
            round_up_nicely(SimDuration::from_millis(1200)),
            Some(SimDuration::from_secs(2))
        );
    }
}
