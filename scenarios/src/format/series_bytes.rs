//! What one report bucket costs a run's memory ([`bucket_bytes`]), for the estimate of
//! [`crate::format::footprint`]: its series and its latencies, by what the run keeps
//! ([`Series`]) and how many requests a bucket holds.
//!
//! A run's memory per bucket peaks while its report is built: the figures (each client's,
//! call site's and service's counts and gauges, the run's latencies per bucket) beside the
//! report's rows (a point per client, service and call site). The costs below are those
//! two together, measured as the peak resident memory of release builds of `resim run` over
//! runs of a million buckets and divided by the buckets (ARCHITECTURE.md, "Long horizons").
//!
//! The latencies of a bucket's successes are kept as they are up to 128 values and binned
//! beyond, so a bucket costs what its requests make it: nothing beyond its entry without a
//! request, a few bytes per value with a few, and bins up to its longest latency with many.
//! The requests per bucket are the clients' mean rates over the run (a closed loop's users
//! over its mean think time) times the bucket's width.

use crate::format::offered::mean_rate;
use crate::format::schema::{Load, Scenario, Series};
use sim_core::SimDuration;
use sim_core::metrics::{FEW_COMPACT, LATENCY_MAX, LatencyHistogram};

/// Per bucket, whatever the topology: the report's row (216 bytes) and the run's entry of
/// latencies (56 bytes, in a list grown by doubling).
const ROW_BYTES: u64 = 320;
/// Per bucket and client: its counts (40 bytes, in a list grown by doubling) and its point
/// in the row.
const CLIENT_BYTES: u64 = 192;
/// Per bucket and service: its counts and gauges while running (three gauges of 16 bytes
/// and a tally, grown by doubling), its bucket in the figures (216 bytes) and its point in
/// the row with its name.
const SERVICE_BYTES: u64 = 512;
/// Per bucket and call site: its counts (40 bytes, grown by doubling) and its point.
const CALL_BYTES: u64 = 192;
/// Per bucket and call site instance (a replica's own counts).
const CALL_INSTANCE_BYTES: u64 = 32;
/// Per bucket and client of a run that keeps only its clients' counts (`Series::Clients`): a
/// 40-byte count in a list grown by doubling.
const CLIENT_COUNTS_BYTES: u64 = 80;

/// The bytes one report bucket of `s` costs, with `clients`, `services`, call `sites` and
/// their `instances`.
pub fn bucket_bytes(s: &Scenario, clients: u64, services: u64, sites: u64, instances: u64) -> u64 {
    match s.series {
        Series::Clients => clients.saturating_mul(CLIENT_COUNTS_BYTES),
        Series::All => ROW_BYTES
            .saturating_add(latencies_bytes(s))
            .saturating_add(clients.saturating_mul(CLIENT_BYTES))
            .saturating_add(services.saturating_mul(SERVICE_BYTES))
            .saturating_add(sites.saturating_mul(CALL_BYTES))
            .saturating_add(instances.saturating_mul(CALL_INSTANCE_BYTES)),
    }
}

/// The latencies of one bucket's successes: as many values as the clients offer in a bucket
/// on average (at most [`FEW_COMPACT`] kept as they are, in a list grown by doubling), or
/// bins up to a latency as long as the run when there are more, or when a client's rate is
/// not known.
fn latencies_bytes(s: &Scenario) -> u64 {
    let per_bucket = requests_per_second(s).map(|r| r * s.bucket.as_secs_f64());
    match per_bucket {
        Some(n) if n <= FEW_COMPACT as f64 => {
            // A bucket without a request keeps nothing (at most `n` of them hold one); a list
            // holds at least 4 values, in an allocation with a 16-byte header.
            let values = (n.ceil() as u64).max(4).next_power_of_two();
            (n.min(1.0) * (values * 8 + 16) as f64).ceil() as u64
        }
        _ => {
            let mut histogram = LatencyHistogram::compact();
            histogram.record(s.duration.min(LATENCY_MAX));
            histogram.binned().heap_bytes()
        }
    }
}

/// What the clients offer per second on average over the run, if every client's rate is
/// known: an open loop's schedule, a closed loop's users over its mean think time.
fn requests_per_second(s: &Scenario) -> Option<f64> {
    s.clients.values().try_fold(0.0, |total, c| {
        let rate = match &c.load {
            Load::Open { rate } => mean_rate(rate, s.duration),
            Load::Closed { users, think } => {
                let think = think.compile().ok()?.mean_nanos()?;
                (think > 0.0).then(|| f64::from(*users) / (think / 1e9))?
            }
            Load::OneShot { users, .. } => {
                f64::from(*users) / s.duration.max(SimDuration::from_nanos(1)).as_secs_f64()
            }
        };
        Some(total + rate)
    })
}
