//! [`ConcurrencyLimiter`]: in-flight accounting around one of the limit algorithms.

use super::config::{
    AimdConfig, ConcurrencyConfig, EnvoyGradientConfig, Gradient2Config, VegasConfig,
};
use crate::ConfigError;
use rand_core::Rng;
use sim_core::sample::unit_f64;
use sim_core::{SimDuration, SimTime};

/// Latencies kept per Envoy sampling window; later ones in the same window are not used.
pub const ENVOY_WINDOW_SAMPLES_MAX: usize = 4096;

/// Netflix's `Log10RootIntFunction`, the step of every Vegas threshold: `max(1, ⌊log10 n⌋)`.
///
/// The older `Log10RootFunction` returned `⌊√n⌋` from 1000 on (31 at 1000 instead of 3), a
/// fault upstream has since fixed; Vegas uses the fixed function, and so does this one.
pub fn log10_root(n: u32) -> u32 {
    n.checked_ilog10().unwrap_or(0).max(1)
}

/// An exponential average with a plain-average warm-up (Netflix `ExpAvgMeasurement`).
#[derive(Debug, Clone)]
struct ExpAverage {
    value: f64,
    sum: f64,
    count: u32,
    window: u32,
    warmup: u32,
}

impl ExpAverage {
    fn add(&mut self, sample: f64) -> f64 {
        if self.count < self.warmup {
            self.count += 1;
            self.sum += sample;
            self.value = self.sum / f64::from(self.count);
        } else {
            let factor = 2.0 / (f64::from(self.window) + 1.0);
            self.value = self.value * (1.0 - factor) + sample * factor;
        }
        self.value
    }
}

#[derive(Debug, Clone)]
enum EnvoyPhase {
    /// Measuring minRTT at `min_concurrency`.
    MinRtt { samples: Vec<u64> },
    /// Adjusting the limit every update interval.
    Normal,
}

#[derive(Debug, Clone)]
enum Algorithm {
    Fixed {
        limit: u32,
    },
    Aimd {
        config: AimdConfig,
        limit: u32,
    },
    Vegas {
        config: VegasConfig,
        estimated: f64,
        rtt_noload: u64,
        probe_count: u64,
        probe_jitter: Option<f64>,
    },
    Gradient2 {
        config: Gradient2Config,
        estimated: f64,
        long_rtt: ExpAverage,
    },
    Envoy {
        config: EnvoyGradientConfig,
        phase: EnvoyPhase,
        /// The limit outside measurements (Envoy's `deferred_limit_value_` while measuring).
        limit: u32,
        min_rtt: u64,
        window: Vec<u64>,
        window_start: SimTime,
        next_min_rtt_at: SimTime,
        /// When the current (or last) minRTT measurement began: calls sent earlier are never
        /// sampled (Envoy's `min_rtt_epoch_`).
        min_rtt_epoch: SimTime,
        /// Windows in a row that took the limit from the minimum to the minimum.
        at_min_windows: u32,
    },
}

/// Proof of admission, handed back with the outcome. Not `Clone`: it is consumed once.
#[derive(Debug, PartialEq, Eq)]
pub struct ConcurrencyToken {
    started_at: SimTime,
    /// Calls in flight when this one was admitted, itself included.
    inflight: u32,
}

impl ConcurrencyToken {
    /// The same token, for a copy of the limit that issued it (a world cloned mid-run):
    /// each copy hands it back to its own limit. Handing both this and the original back to
    /// one limit is the double release the type prevents; hence a named method, not
    /// `Clone`.
    pub fn clone_with_machine(&self) -> ConcurrencyToken {
        ConcurrencyToken {
            started_at: self.started_at,
            inflight: self.inflight,
        }
    }
}

/// A refusal: the limit is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConcurrencyRejection {
    /// The limit at the time.
    pub limit: u32,
    /// Calls in flight at the time.
    pub inflight: u32,
}

/// A concurrency limiter: admits while fewer than `limit()` calls are in flight, and feeds each
/// completed call's round-trip time to the algorithm, which moves the limit.
///
/// `try_acquire(now)` admits or refuses; `on_success(now, token, rng)` and
/// `on_dropped(now, token, rng)` report a sample (a drop is a timeout or an overload signal);
/// `on_ignored(now, token)` frees the slot without a sample. The RNG is used only by Vegas
/// (probe jitter) and the Envoy controller (minRTT jitter).
#[derive(Debug, Clone)]
pub struct ConcurrencyLimiter {
    algorithm: Algorithm,
    inflight: u32,
    last: SimTime,
}

impl ConcurrencyLimiter {
    /// A limiter with nothing in flight; fails if the config does not validate.
    pub fn new(config: &ConcurrencyConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let algorithm = match config {
            ConcurrencyConfig::Fixed { limit } => Algorithm::Fixed { limit: *limit },
            ConcurrencyConfig::Aimd(c) => Algorithm::Aimd {
                config: c.clone(),
                limit: c.initial_limit,
            },
            ConcurrencyConfig::Vegas(c) => Algorithm::Vegas {
                config: c.clone(),
                estimated: f64::from(c.initial_limit),
                rtt_noload: 0,
                probe_count: 0,
                probe_jitter: None,
            },
            ConcurrencyConfig::Gradient2(c) => Algorithm::Gradient2 {
                config: c.clone(),
                estimated: f64::from(c.initial_limit),
                long_rtt: ExpAverage {
                    value: 0.0,
                    sum: 0.0,
                    count: 0,
                    window: c.long_window,
                    warmup: 10,
                },
            },
            ConcurrencyConfig::EnvoyGradient(c) => Algorithm::Envoy {
                config: c.clone(),
                phase: EnvoyPhase::MinRtt {
                    samples: Vec::new(),
                },
                limit: c.min_concurrency,
                min_rtt: 0,
                window: Vec::new(),
                window_start: SimTime::ZERO,
                next_min_rtt_at: SimTime::MAX,
                min_rtt_epoch: SimTime::ZERO,
                at_min_windows: 0,
            },
        };
        Ok(ConcurrencyLimiter {
            algorithm,
            inflight: 0,
            last: SimTime::ZERO,
        })
    }

    /// The current limit.
    pub fn limit(&self) -> u32 {
        match &self.algorithm {
            Algorithm::Fixed { limit } | Algorithm::Aimd { limit, .. } => *limit,
            Algorithm::Vegas { estimated, .. } | Algorithm::Gradient2 { estimated, .. } => {
                *estimated as u32
            }
            Algorithm::Envoy {
                config,
                phase,
                limit,
                ..
            } => match phase {
                EnvoyPhase::MinRtt { .. } => config.min_concurrency,
                EnvoyPhase::Normal => *limit,
            },
        }
    }

    /// Calls in flight.
    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    fn clock(&mut self, now: SimTime) -> SimTime {
        self.last = self.last.max(now);
        self.last
    }

    /// Apply time-driven changes (Envoy's periodic update and minRTT schedule).
    pub fn advance(&mut self, now: SimTime) {
        let now = self.clock(now);
        if let Algorithm::Envoy {
            config,
            phase,
            limit,
            min_rtt,
            window,
            window_start,
            next_min_rtt_at,
            min_rtt_epoch,
            at_min_windows,
        } = &mut self.algorithm
        {
            if !matches!(phase, EnvoyPhase::Normal) {
                return;
            }
            if now >= *next_min_rtt_at {
                enter_min_rtt(phase, window, min_rtt_epoch, at_min_windows, now);
                return;
            }
            if now < window_start.saturating_add(config.concurrency_update_interval) {
                return;
            }
            *window_start = now;
            if window.is_empty() {
                return;
            }
            let sample_rtt = percentile(window, config.sample_aggregate_percentile).max(1);
            window.clear();
            let allowed = *min_rtt as f64 * (1.0 + config.min_rtt_buffer_percent / 100.0);
            let gradient = (allowed / sample_rtt as f64).clamp(0.5, 2.0);
            let scaled = f64::from(*limit) * gradient;
            let next = (scaled + libm::sqrt(scaled)).clamp(
                f64::from(config.min_concurrency),
                f64::from(config.max_concurrency_limit),
            ) as u32;
            // Stuck at the floor for five windows: the minRTT is probably stale. Envoy counts
            // only windows that go from the minimum to the minimum, so the window that first
            // reaches it does not count (`updateConcurrencyLimit`).
            let floor = config.min_concurrency;
            if *limit == floor && next == floor {
                *at_min_windows += 1;
            } else {
                *at_min_windows = 0;
            }
            *limit = next;
            if *at_min_windows >= 5 {
                enter_min_rtt(phase, window, min_rtt_epoch, at_min_windows, now);
            }
        }
    }

    /// Ask to start a call at `now`.
    pub fn try_acquire(&mut self, now: SimTime) -> Result<ConcurrencyToken, ConcurrencyRejection> {
        self.advance(now);
        let limit = self.limit();
        if self.inflight >= limit {
            return Err(ConcurrencyRejection {
                limit,
                inflight: self.inflight,
            });
        }
        self.inflight += 1;
        Ok(ConcurrencyToken {
            started_at: self.last,
            inflight: self.inflight,
        })
    }

    /// The call succeeded at `now`.
    pub fn on_success<R: Rng + ?Sized>(
        &mut self,
        now: SimTime,
        token: ConcurrencyToken,
        rng: &mut R,
    ) {
        self.sample(now, token, false, rng);
    }

    /// The call was dropped (timed out, or refused for overload) at `now`.
    pub fn on_dropped<R: Rng + ?Sized>(
        &mut self,
        now: SimTime,
        token: ConcurrencyToken,
        rng: &mut R,
    ) {
        self.sample(now, token, true, rng);
    }

    /// The call ended without a sample worth learning from (e.g. a client error).
    pub fn on_ignored(&mut self, now: SimTime, token: ConcurrencyToken) {
        self.clock(now);
        self.release(&token);
    }

    fn release(&mut self, _token: &ConcurrencyToken) {
        assert!(self.inflight > 0, "released a call that was not in flight");
        self.inflight -= 1;
    }

    fn sample<R: Rng + ?Sized>(
        &mut self,
        now: SimTime,
        token: ConcurrencyToken,
        dropped: bool,
        rng: &mut R,
    ) {
        self.advance(now);
        let now = self.last;
        self.release(&token);
        let rtt = now
            .saturating_duration_since(token.started_at)
            .as_nanos()
            .max(1);
        let inflight = token.inflight;
        match &mut self.algorithm {
            Algorithm::Fixed { .. } => {}
            Algorithm::Aimd { config, limit } => {
                let mut next = *limit;
                if dropped || SimDuration::from_nanos(rtt) > config.timeout {
                    next = (f64::from(*limit) * config.backoff_ratio) as u32;
                } else if u64::from(inflight) * 2 >= u64::from(*limit) {
                    next = limit.saturating_add(1);
                }
                *limit = next.clamp(config.min_limit, config.max_limit);
            }
            Algorithm::Vegas {
                config,
                estimated,
                rtt_noload,
                probe_count,
                probe_jitter,
            } => {
                *probe_count += 1;
                let jitter = *probe_jitter.get_or_insert_with(|| 0.5 + 0.5 * unit_f64(rng));
                if jitter * f64::from(config.probe_multiplier) * *estimated <= *probe_count as f64 {
                    *probe_jitter = Some(0.5 + 0.5 * unit_f64(rng));
                    *probe_count = 0;
                    *rtt_noload = rtt;
                    return;
                }
                if *rtt_noload == 0 || rtt < *rtt_noload {
                    *rtt_noload = rtt;
                    return;
                }
                let est = *estimated;
                let step = f64::from(log10_root(est as u32));
                let queue = libm::ceil(est * (1.0 - *rtt_noload as f64 / rtt as f64));
                let next = if dropped {
                    est - step
                } else if f64::from(inflight) * 2.0 < est {
                    return;
                } else if queue <= step {
                    est + 6.0 * step
                } else if queue < 3.0 * step {
                    est + step
                } else if queue > 6.0 * step {
                    est - step
                } else {
                    return;
                };
                let next = next.clamp(1.0, f64::from(config.max_limit));
                *estimated = (1.0 - config.smoothing_ratio) * est + config.smoothing_ratio * next;
            }
            Algorithm::Gradient2 {
                config,
                estimated,
                long_rtt,
            } => {
                // Gradient2 learns from latency only; a drop is not a signal to it. The steps
                // are `Gradient2Limit._update`'s, in its order: the decay changes the average
                // kept for later samples, not the `long` this one is judged against.
                let short = rtt as f64;
                let long = long_rtt.add(short);
                if long / short > 2.0 {
                    long_rtt.value *= 0.95;
                }
                let est = *estimated;
                if f64::from(inflight) < est / 2.0 {
                    return;
                }
                let gradient = (config.rtt_tolerance * long / short).clamp(0.5, 1.0);
                let next = est * gradient + f64::from(config.queue_size);
                let next = est * (1.0 - config.smoothing_ratio) + next * config.smoothing_ratio;
                *estimated = next.clamp(f64::from(config.min_limit), f64::from(config.max_limit));
            }
            Algorithm::Envoy {
                config,
                phase,
                min_rtt,
                window,
                window_start,
                next_min_rtt_at,
                min_rtt_epoch,
                ..
            } => match phase {
                // A call sent before the current measurement began ran at the earlier, higher
                // concurrency: its latency says nothing about minRTT, nor about the windows
                // after it (Envoy's `recordLatencySample` drops it the same way).
                _ if token.started_at < *min_rtt_epoch => {}
                EnvoyPhase::MinRtt { samples } => {
                    samples.push(rtt);
                    if samples.len() >= config.min_rtt_calc_request_count as usize {
                        *min_rtt = percentile(samples, config.sample_aggregate_percentile).max(1);
                        *phase = EnvoyPhase::Normal;
                        *window_start = now;
                        window.clear();
                        let jitter = config
                            .min_rtt_calc_interval
                            .mul_f64(config.min_rtt_calc_jitter_percent / 100.0 * unit_f64(rng));
                        *next_min_rtt_at = now
                            .saturating_add(config.min_rtt_calc_interval)
                            .saturating_add(jitter);
                    }
                }
                EnvoyPhase::Normal => {
                    if window.len() < ENVOY_WINDOW_SAMPLES_MAX {
                        window.push(rtt);
                    }
                }
            },
        }
        self.check_invariants();
    }

    /// An adaptive limit stays within `[min, max]` widened to take in its initial limit, which
    /// upstream lets lie outside the bounds until the first update moves it in.
    fn check_invariants(&self) {
        let (limit, low, high) = match &self.algorithm {
            Algorithm::Fixed { .. } => return,
            Algorithm::Aimd { config, limit } => (*limit, config.min_limit, config.max_limit),
            Algorithm::Vegas {
                config, estimated, ..
            } => (*estimated as u32, 1, config.max_limit),
            Algorithm::Gradient2 {
                config, estimated, ..
            } => (*estimated as u32, config.min_limit, config.max_limit),
            Algorithm::Envoy { config, limit, .. } => {
                (*limit, config.min_concurrency, config.max_concurrency_limit)
            }
        };
        let initial = match &self.algorithm {
            Algorithm::Aimd { config, .. } => config.initial_limit,
            Algorithm::Vegas { config, .. } => config.initial_limit,
            Algorithm::Gradient2 { config, .. } => config.initial_limit,
            _ => low,
        };
        assert!(
            limit >= low.min(initial) && limit <= high.max(initial),
            "concurrency limit {limit} outside [{low}, {high}] (initial {initial})"
        );
    }
}

/// Start a minRTT measurement at `now` (Envoy's `enterMinRTTSamplingWindow`): the limit drops
/// to `min_concurrency` until enough calls sent from now on have reported.
fn enter_min_rtt(
    phase: &mut EnvoyPhase,
    window: &mut Vec<u64>,
    min_rtt_epoch: &mut SimTime,
    at_min_windows: &mut u32,
    now: SimTime,
) {
    *phase = EnvoyPhase::MinRtt {
        samples: Vec::new(),
    };
    window.clear();
    *min_rtt_epoch = now;
    *at_min_windows = 0;
}

/// The `p`-th percentile (nearest rank) of `values`, which must not be empty.
fn percentile(values: &mut [u64], p: f64) -> u64 {
    values.sort_unstable();
    let rank = libm::ceil(p / 100.0 * values.len() as f64) as usize;
    values[rank.clamp(1, values.len()) - 1]
}
