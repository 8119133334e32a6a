//! A reference model and its theory: [`Station`] is an M/M/c queue built on the public API,
//! [`run_mmc`] runs it, and [`mm1_mean_wait`] / [`erlang_c`] / [`mmc_mean_wait`] give the
//! textbook answers it must match. [`mg1_mean_wait`] (Pollaczek–Khinchine, with
//! [`md1_mean_wait`] for constant work), [`erlang_b`] (M/M/c/c, loss without a queue) and
//! [`mm1k_blocking`] / [`mm1k_mean_wait`] (a bounded queue) are the formulas the book's
//! scenarios are checked against; [`mm1k_first_refusal_by`] and [`mm1k_first_refusal_mean`]
//! (when a bounded queue first refuses) are the exact answers `resim risk` is tested against.
//!
//! The examples (`mm1`, `mm_c`), the engine benchmark and the queueing-theory tests all run
//! this one model, so the number a benchmark prints is the number a test checks.

use crate::Digest;
use crate::metrics::Counter;
use crate::rng::{RngStream, Seed};
use crate::sample::Sampler;
use crate::sim::{Ctx, Entity, Limits, Message, Sim, StopReason};
use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

/// Mean time in queue (excluding service) of M/M/1: ρ / (μ − λ).
pub fn mm1_mean_wait(arrival_rate: f64, service_rate: f64) -> f64 {
    assert!(arrival_rate < service_rate, "M/M/1 is unstable for λ ≥ μ");
    let rho = arrival_rate / service_rate;
    rho / (service_rate - arrival_rate)
}

/// Erlang C: the probability that an arrival waits, for `servers` servers at offered load
/// `a = λ/μ` (requires a < servers).
pub fn erlang_c(servers: u32, offered_load: f64) -> f64 {
    let c = f64::from(servers);
    assert!(offered_load < c, "M/M/c is unstable for λ/μ ≥ c");
    // Sum a^k/k! iteratively to avoid factorial overflow.
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..servers {
        term *= offered_load / f64::from(k);
        sum += term;
    }
    let last = term * offered_load / c; // a^c / c!
    let tail = last * c / (c - offered_load);
    tail / (sum + tail)
}

/// Mean time in queue of M/M/c: C(c, a) / (cμ − λ).
pub fn mmc_mean_wait(servers: u32, arrival_rate: f64, service_rate: f64) -> f64 {
    let a = arrival_rate / service_rate;
    erlang_c(servers, a) / (f64::from(servers) * service_rate - arrival_rate)
}

/// Mean time in queue of M/G/1 (the Pollaczek–Khinchine formula): λ·E\[S²\] / (2(1 − ρ)),
/// with ρ = λ·E\[S\], for arrival rate λ and a service time S of mean `service_mean` and second
/// moment `service_second_moment` (seconds and seconds squared).
pub fn mg1_mean_wait(arrival_rate: f64, service_mean: f64, service_second_moment: f64) -> f64 {
    let rho = arrival_rate * service_mean;
    assert!(rho < 1.0, "M/G/1 is unstable for ρ ≥ 1");
    arrival_rate * service_second_moment / (2.0 * (1.0 - rho))
}

/// Mean time in queue of M/D/1, constant work of `service_time` seconds: ρ·S / (2(1 − ρ)),
/// half of M/M/1's at the same load.
pub fn md1_mean_wait(arrival_rate: f64, service_time: f64) -> f64 {
    mg1_mean_wait(arrival_rate, service_time, service_time * service_time)
}

/// Erlang B: the probability that an arrival finds all `servers` busy and is lost, in an
/// M/M/c/c system (no queue) at offered load `a = λ/μ`. It holds for any distribution of work
/// with that mean. Computed by the recurrence B(0) = 1, B(k) = a·B(k−1) / (k + a·B(k−1)),
/// which never forms a factorial.
pub fn erlang_b(servers: u32, offered_load: f64) -> f64 {
    assert!(offered_load >= 0.0);
    let mut b = 1.0;
    for k in 1..=servers {
        b = offered_load * b / (f64::from(k) + offered_load * b);
    }
    b
}

/// M/M/1/K: the probability that an arrival finds `capacity` (K) requests in the system, one
/// in service and K − 1 waiting, and is refused: (1 − ρ)·ρᴷ / (1 − ρᴷ⁺¹), or 1/(K + 1) at
/// ρ = 1.
pub fn mm1k_blocking(arrival_rate: f64, service_rate: f64, capacity: u32) -> f64 {
    assert!(capacity >= 1);
    let rho = arrival_rate / service_rate;
    let k = f64::from(capacity);
    if (rho - 1.0).abs() < 1e-12 {
        return 1.0 / (k + 1.0);
    }
    (1.0 - rho) * libm::pow(rho, k) / (1.0 - libm::pow(rho, k + 1.0))
}

/// M/M/1/K: the mean time in queue of the requests admitted. The mean number in the system
/// is L = ρ/(1 − ρ) − (K + 1)ρᴷ⁺¹/(1 − ρᴷ⁺¹) (K/2 at ρ = 1); by Little's law over the
/// admitted rate λ(1 − P_K), W = L / (λ(1 − P_K)), and W_q = W − 1/μ.
pub fn mm1k_mean_wait(arrival_rate: f64, service_rate: f64, capacity: u32) -> f64 {
    let rho = arrival_rate / service_rate;
    let k = f64::from(capacity);
    let in_system = if (rho - 1.0).abs() < 1e-12 {
        k / 2.0
    } else {
        let tail = libm::pow(rho, k + 1.0);
        rho / (1.0 - rho) - (k + 1.0) * tail / (1.0 - tail)
    };
    let admitted = arrival_rate * (1.0 - mm1k_blocking(arrival_rate, service_rate, capacity));
    in_system / admitted - 1.0 / service_rate
}

/// M/M/1/K started empty: the mean time to the first refused arrival (one that finds `capacity`
/// (K) requests in the system), in the units of the rates. A birth–death first passage: the
/// mean time to go from n in the system to n + 1 is T₀ = 1/λ and Tₙ = (1 + μ·Tₙ₋₁)/λ (the
/// first move is up with probability λ/(λ + μ), else down and back), and the refusal is the
/// step up from K, so the mean is T₀ + T₁ + … + T_K.
pub fn mm1k_first_refusal_mean(arrival_rate: f64, service_rate: f64, capacity: u32) -> f64 {
    assert!(capacity >= 1 && arrival_rate > 0.0 && service_rate > 0.0);
    let mut step = 1.0 / arrival_rate;
    let mut mean = step;
    for _ in 0..capacity {
        step = (1.0 + service_rate * step) / arrival_rate;
        mean += step;
    }
    mean
}

/// M/M/1/K started empty: the probability that the first refused arrival (one that finds
/// `capacity` (K) requests in the system) comes within `horizon` (in the units of the
/// rates), the exact answer `resim risk` is tested against.
///
/// The chain of the number in the system, 0..=K, with the refusal as an absorbing state, is
/// uniformized at the rate Λ = λ + μ: its jumps are those of a discrete chain (up with
/// probability λ/Λ, from K into the refusal; down with μ/Λ, or staying at 0) made at the
/// times of a Poisson process of rate Λ, so P(refused by t) = Σₖ Poisson(k; Λt)·Aₖ, where Aₖ
/// is the probability of the refusal within k jumps. The sum is taken to Λt + 12√(Λt) + 30
/// jumps, past which the Poisson weights are below 10⁻³⁰: exact to rounding (the absorbed
/// mass is accumulated, not taken as one minus the rest, so a small probability keeps its
/// digits).
pub fn mm1k_first_refusal_by(
    arrival_rate: f64,
    service_rate: f64,
    capacity: u32,
    horizon: f64,
) -> f64 {
    assert!(capacity >= 1 && arrival_rate > 0.0 && service_rate > 0.0 && horizon >= 0.0);
    let rate = arrival_rate + service_rate;
    let (up, down) = (arrival_rate / rate, service_rate / rate);
    let mean_jumps = rate * horizon;
    let jumps_max = libm::ceil(mean_jumps + 12.0 * libm::sqrt(mean_jumps) + 30.0) as u64;
    let k = capacity as usize;
    let mut chain = vec![0.0; k + 1];
    chain[0] = 1.0;
    let mut next = vec![0.0; k + 1];
    let (mut absorbed, mut by) = (0.0, 0.0);
    for jumps in 0..=jumps_max {
        // The Poisson weight of exactly `jumps` jumps by the horizon.
        let weight = if mean_jumps == 0.0 {
            if jumps == 0 { 1.0 } else { 0.0 }
        } else {
            let j = jumps as f64;
            libm::exp(j * libm::log(mean_jumps) - mean_jumps - libm::lgamma(j + 1.0))
        };
        by += weight * absorbed;
        // One more jump.
        next.iter_mut().for_each(|p| *p = 0.0);
        next[0] += chain[0] * down;
        for n in 0..=k {
            if n < k {
                next[n + 1] += chain[n] * up;
            }
            if n > 0 {
                next[n - 1] += chain[n] * down;
            }
        }
        absorbed += chain[k] * up;
        std::mem::swap(&mut chain, &mut next);
    }
    by
}

/// The events of the station.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StationEvent {
    /// A customer arrives.
    Arrival,
    /// A server finishes its customer.
    Departure,
}

impl Message for StationEvent {
    fn kind(&self) -> u64 {
        match self {
            StationEvent::Arrival => 1,
            StationEvent::Departure => 2,
        }
    }
}

/// How many batches the waiting times are split into for the batch-means standard error.
pub const BATCHES: usize = 32;

/// An M/M/c station that generates its own Poisson arrivals: `servers` servers, an
/// unbounded FIFO queue (the scenario for this model is the textbook one, where the queue
/// must be unbounded for the theory to hold), and a fixed number of customers.
pub struct Station {
    servers: u32,
    busy: u32,
    waiting: VecDeque<SimTime>,
    interarrival: Sampler,
    service: Sampler,
    arrivals_rng: RngStream,
    service_rng: RngStream,
    arrivals_left: u64,
    /// Customers whose service has started.
    pub started: Counter,
    wait_total_nanos: u128,
    batch_size: u64,
    /// Customers still to start before the current batch is complete (a countdown, where
    /// `started % batch_size` would cost a 64-bit division per customer).
    batch_left: u64,
    /// Total wait (ns) of each completed batch of `batch_size` customers.
    batch_totals: Vec<u128>,
    batch_start_total: u128,
    queue_length_max: usize,
}

impl Entity for Station {
    type Msg = StationEvent;
    type Shared = ();

    #[inline]
    fn handle(&mut self, ctx: &mut Ctx<'_, StationEvent, ()>, msg: StationEvent) {
        match msg {
            StationEvent::Arrival => {
                self.arrivals_left -= 1;
                if self.arrivals_left > 0 {
                    let gap = self.interarrival.sample(&mut self.arrivals_rng);
                    ctx.send_self(gap, StationEvent::Arrival);
                }
                if self.busy < self.servers {
                    self.busy += 1;
                    self.start_service(ctx, SimDuration::ZERO);
                } else {
                    self.waiting.push_back(ctx.now());
                    self.queue_length_max = self.queue_length_max.max(self.waiting.len());
                }
            }
            StationEvent::Departure => match self.waiting.pop_front() {
                Some(arrived) => {
                    let wait = ctx.now() - arrived;
                    self.start_service(ctx, wait);
                }
                None => self.busy -= 1,
            },
        }
        debug_assert!(self.busy <= self.servers);
        debug_assert!(self.waiting.is_empty() || self.busy == self.servers);
    }
}

impl Station {
    fn start_service(&mut self, ctx: &mut Ctx<'_, StationEvent, ()>, wait: SimDuration) {
        self.started.inc();
        self.wait_total_nanos += u128::from(wait.as_nanos());
        self.batch_left -= 1;
        if self.batch_left == 0 {
            self.batch_left = self.batch_size;
            self.batch_totals
                .push(self.wait_total_nanos - self.batch_start_total);
            self.batch_start_total = self.wait_total_nanos;
        }
        let work = self.service.sample(&mut self.service_rng);
        ctx.send_self(work, StationEvent::Departure);
    }

    /// Mean time in queue over all customers served so far, in seconds.
    pub fn mean_wait_secs(&self) -> f64 {
        if self.started.get() == 0 {
            return 0.0;
        }
        (self.wait_total_nanos as f64 / self.started.get() as f64) / 1e9
    }

    /// The standard error of [`Station::mean_wait_secs`] by batch means (the batches are long
    /// enough for their means to be nearly independent when the run is long).
    pub fn mean_wait_standard_error(&self) -> f64 {
        let n = self.batch_totals.len();
        if n < 2 {
            return f64::INFINITY;
        }
        let means: Vec<f64> = self
            .batch_totals
            .iter()
            .map(|total| *total as f64 / self.batch_size as f64 / 1e9)
            .collect();
        let mean = means.iter().sum::<f64>() / n as f64;
        let var = means.iter().map(|m| (m - mean) * (m - mean)).sum::<f64>() / (n - 1) as f64;
        libm::sqrt(var / n as f64)
    }

    /// The longest the queue got.
    pub fn queue_length_max(&self) -> usize {
        self.queue_length_max
    }
}

/// Parameters of an M/M/c run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MmcParams {
    /// Number of servers (c).
    pub servers: u32,
    /// Arrival rate λ per second.
    pub arrival_rate: f64,
    /// Service rate μ per second per server.
    pub service_rate: f64,
    /// Customers to generate.
    pub customers: u64,
    /// The run seed.
    pub seed: u64,
}

impl MmcParams {
    /// M/M/1 with λ = 0.9, μ = 1.0 (the examples' default).
    pub fn mm1(customers: u64, seed: u64) -> Self {
        MmcParams {
            servers: 1,
            arrival_rate: 0.9,
            service_rate: 1.0,
            customers,
            seed,
        }
    }

    /// The theoretical mean time in queue, in seconds.
    pub fn theory_mean_wait(&self) -> f64 {
        mmc_mean_wait(self.servers, self.arrival_rate, self.service_rate)
    }
}

/// What a run of [`run_mmc`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct MmcReport {
    /// Events executed (two per customer).
    pub events: u64,
    /// Mean time in queue, seconds.
    pub mean_wait_secs: f64,
    /// Its batch-means standard error, seconds.
    pub mean_wait_standard_error: f64,
    /// The run digest.
    pub digest: Digest,
    /// Why the run ended.
    pub stop_reason: StopReason,
    /// Virtual time at the end.
    pub end: SimTime,
    /// The longest queue seen.
    pub queue_length_max: usize,
}

/// Runs an M/M/c station to completion (arrival and service streams `"mmc/arrivals"` and
/// `"mmc/service"`).
pub fn run_mmc(params: MmcParams) -> MmcReport {
    assert!(params.servers > 0 && params.customers > 0);
    let seed = Seed(params.seed);
    let batch_size = (params.customers / BATCHES as u64).max(1);
    let station = Station {
        servers: params.servers,
        busy: 0,
        waiting: VecDeque::new(),
        interarrival: Sampler::exponential(SimDuration::from_secs_f64(1.0 / params.arrival_rate)),
        service: Sampler::exponential(SimDuration::from_secs_f64(1.0 / params.service_rate)),
        arrivals_rng: seed.stream("mmc/arrivals"),
        service_rng: seed.stream("mmc/service"),
        arrivals_left: params.customers,
        started: Counter::default(),
        wait_total_nanos: 0,
        batch_size,
        batch_left: batch_size,
        batch_totals: Vec::with_capacity(BATCHES + 1),
        batch_start_total: 0,
        queue_length_max: 0,
    };
    let limits = Limits::new(
        params.customers.saturating_mul(2).saturating_add(1),
        SimDuration::MAX,
    );
    let mut sim = Sim::new((), limits);
    let id = sim.add(station);
    sim.schedule(SimTime::ZERO, id, StationEvent::Arrival);
    let stop_reason = sim.run();
    let station = sim.entity(id);
    MmcReport {
        events: sim.events_executed(),
        mean_wait_secs: station.mean_wait_secs(),
        mean_wait_standard_error: station.mean_wait_standard_error(),
        digest: sim.digest(),
        stop_reason,
        end: sim.now(),
        queue_length_max: station.queue_length_max(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erlang_c_matches_known_values() {
        // c = 1 reduces to ρ.
        assert!((erlang_c(1, 0.9) - 0.9).abs() < 1e-12);
        // A classic table value: c = 2, a = 1 gives 1/3.
        assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
        assert!((mmc_mean_wait(1, 0.9, 1.0) - mm1_mean_wait(0.9, 1.0)).abs() < 1e-12);
    }

    #[test]
    fn pollaczek_khinchine_erlang_b_and_mm1k_match_known_values() {
        // Exponential work has E[S²] = 2/μ²: M/G/1 is then M/M/1.
        assert!((mg1_mean_wait(0.8, 1.0, 2.0) - mm1_mean_wait(0.8, 1.0)).abs() < 1e-12);
        // Constant work waits half as long.
        assert!((md1_mean_wait(0.8, 1.0) - mm1_mean_wait(0.8, 1.0) / 2.0).abs() < 1e-12);
        // B(1, a) = a / (1 + a); B(2, 1) = 1/5; a table value: B(10, 5) = 0.018385.
        assert!((erlang_b(1, 3.0) - 0.75).abs() < 1e-12);
        assert!((erlang_b(2, 1.0) - 0.2).abs() < 1e-12);
        assert!((erlang_b(10, 5.0) - 0.018385).abs() < 1e-6);
        // M/M/1/1 is Erlang B with one server.
        assert!((mm1k_blocking(3.0, 1.0, 1) - erlang_b(1, 3.0)).abs() < 1e-12);
        assert!((mm1k_blocking(1.0, 1.0, 4) - 0.2).abs() < 1e-12);
        // A deep bounded queue behaves like an unbounded one.
        assert!(mm1k_blocking(0.5, 1.0, 60) < 1e-17);
        assert!((mm1k_mean_wait(0.5, 1.0, 60) - mm1_mean_wait(0.5, 1.0)).abs() < 1e-9);
        // At K = 1 nobody waits.
        assert!(mm1k_mean_wait(0.9, 1.0, 1).abs() < 1e-12);
        // Near ρ = 1 the formula is continuous with its limit.
        let near = mm1k_mean_wait(1.0 - 1e-6, 1.0, 5);
        assert!((near - mm1k_mean_wait(1.0, 1.0, 5)).abs() < 1e-3, "{near}");
    }

    #[test]
    fn first_refusal_matches_its_mean_and_small_cases() {
        // K = 1 from empty: the first arrival enters; the refusal is the next arrival before
        // its service ends, and the chain is a two-state race: mean (1 + μ/λ)/λ + 1/λ.
        let (l, m) = (2.0, 3.0);
        let mean = mm1k_first_refusal_mean(l, m, 1);
        assert!(
            (mean - (1.0 / l + (1.0 + m / l) / l)).abs() < 1e-12,
            "{mean}"
        );
        // The distribution is proper and its mean is the integral of its survival function
        // (Simpson's rule over 40 means, where what is left is below 1e-9).
        for (l, m, k) in [(2.0, 3.0, 1), (0.5, 1.0, 4), (0.9, 1.0, 6)] {
            let mean = mm1k_first_refusal_mean(l, m, k);
            let (steps, end) = (400, 40.0 * mean);
            let h = end / f64::from(steps);
            let survival = |i: u32| 1.0 - mm1k_first_refusal_by(l, m, k, h * f64::from(i));
            let integral: f64 = (0..steps / 2)
                .map(|i| {
                    (survival(2 * i) + 4.0 * survival(2 * i + 1) + survival(2 * i + 2)) * h / 3.0
                })
                .sum();
            assert!(
                (integral / mean - 1.0).abs() < 1e-3,
                "{l} {m} {k}: {integral} vs {mean}"
            );
            assert!(mm1k_first_refusal_by(l, m, k, end) > 1.0 - 1e-9);
        }
        // Nothing can be refused before K + 1 arrivals, so at t → 0 the probability is of
        // order t^(K+1): tiny, never negative.
        let early = mm1k_first_refusal_by(0.5, 1.0, 4, 1e-3);
        assert!((0.0..1e-15).contains(&early), "{early}");
        // A rare refusal keeps its digits: once the chain has forgotten its empty start (its
        // relaxation time here is about 6), refusals come at the rate 1/mean, so between two
        // horizons far below the mean the probability grows by their distance over the mean.
        let (l, m, k) = (1.0, 2.0, 20);
        let mean = mm1k_first_refusal_mean(l, m, k);
        let grown = mm1k_first_refusal_by(l, m, k, 200.0) - mm1k_first_refusal_by(l, m, k, 100.0);
        assert!(
            (grown * mean / 100.0 - 1.0).abs() < 0.01,
            "{grown} over {mean}"
        );
    }

    #[test]
    fn small_run_serves_everyone_and_is_reproducible() {
        let a = run_mmc(MmcParams::mm1(10_000, 1));
        assert_eq!(a.events, 20_000);
        assert_eq!(a.stop_reason, StopReason::Idle);
        assert_eq!(a, run_mmc(MmcParams::mm1(10_000, 1)));
        assert_ne!(a.digest, run_mmc(MmcParams::mm1(10_000, 2)).digest);
    }
}
