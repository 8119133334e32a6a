//! What a request carries ([`Attrs`]: class, priority level, cost, tenant, retry safety),
//! how a client draws it ([`Mix`]), and the per-class and per-tenant figures it feeds.
//!
//! A client without classes has no `Mix`: its requests carry [`Attrs::DEFAULT`] and it draws
//! nothing, so its random streams, and its runs, are those it had before classes existed.
//!
//! # Decisions
//!
//! A request's `Attrs` (12 bytes) are drawn once, when the client offers it, and copied onto
//! every call and job that serves it, so a service's downstream calls inherit them without a
//! lookup. A client without classes has no `Mix` and draws nothing: its requests carry
//! `Attrs::DEFAULT` (`Critical`, cost 1, tenant 0) and every digest of a scenario without
//! classes is what it was before classes existed. Class and tenant draws come from streams of
//! their own (`clients/NAME/classes`, `clients/NAME/classes/CLASS/tenants`). Per-tenant figures
//! are bounded: a class reports its `reported` most popular keys by rank (at most 100) and sums
//! the rest as `others`, so a Zipf over a million keys keeps a hundred and two histograms; the
//! Zipf table (8 bytes per key) and the per-tenant limiters (`max_keys`) are estimated at
//! validation. A service's admission `Limiter` and `RateLimit` layers are shared by its
//! replicas (one per service); limiters on a call's stack are one per calling replica.

use super::client::bucket_mut;
use crate::figures::{ClassFigures, TenantFigures, TrafficFigures};
use crate::format::schema::traffic::{Popularity, RequestClass};
use sim_core::sample::{uniform_below, unit_f64};
use sim_core::{RngStream, Seed, SimDuration};

/// The attributes a request carries through every hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attrs {
    /// The index of its class among its client's classes (0 without classes).
    pub class: u16,
    /// Its priority level, 0 the least important.
    pub level: u8,
    /// Whether it may be retried and hedged.
    pub retry: bool,
    /// The tokens it takes from each rate limiter.
    pub cost: u32,
    /// Its tenant key.
    pub tenant: u32,
}

impl Attrs {
    /// What a request of a client without classes carries: `Critical`, cost 1, tenant 0,
    /// retries allowed.
    pub const DEFAULT: Attrs = Attrs {
        class: 0,
        level: 2,
        retry: true,
        cost: 1,
        tenant: 0,
    };
}

/// How one class draws its tenant key.
#[derive(Debug, Clone)]
enum KeyDraw {
    /// Every request from tenant 0.
    None,
    /// Uniform over `keys` keys from `first`.
    Uniform { first: u32, keys: u32 },
    /// Zipf over the keys from `first`: `cumulative[i]` is the total weight of ranks 0..=i.
    Zipf { first: u32, cumulative: Vec<f64> },
}

#[derive(Debug, Clone)]
struct Class {
    attrs: Attrs,
    keys: KeyDraw,
    rng: Option<RngStream>,
}

/// A client's classes: the pick of a class by share, and of a tenant within it.
#[derive(Debug, Clone)]
pub struct Mix {
    /// `cumulative[i]` is the total share of classes 0..=i.
    cumulative: Vec<f64>,
    rng: RngStream,
    classes: Vec<Class>,
}

impl Mix {
    /// The mix of client `client`'s `classes` (validated), or `None` without classes.
    pub fn new(client: &str, classes: &[RequestClass], seed: Seed) -> Option<Box<Mix>> {
        if classes.is_empty() {
            return None;
        }
        let mut total = 0.0;
        let cumulative = classes
            .iter()
            .map(|c| {
                total += c.share;
                total
            })
            .collect();
        let classes = classes
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let keys = match &c.tenants {
                    None => KeyDraw::None,
                    Some(t) => match t.popularity {
                        Popularity::Uniform => KeyDraw::Uniform {
                            first: t.first,
                            keys: t.keys,
                        },
                        Popularity::Zipf { exponent } => {
                            let mut sum = 0.0;
                            let cumulative = (0..t.keys)
                                .map(|rank| {
                                    sum += libm::pow(f64::from(rank) + 1.0, -exponent);
                                    sum
                                })
                                .collect();
                            KeyDraw::Zipf {
                                first: t.first,
                                cumulative,
                            }
                        }
                    },
                };
                let rng = c
                    .tenants
                    .as_ref()
                    .map(|_| seed.stream(&format!("clients/{client}/classes/{}/tenants", c.name)));
                Class {
                    attrs: Attrs {
                        class: i as u16,
                        level: c.priority.level(),
                        retry: c.retry,
                        cost: c.cost,
                        tenant: 0,
                    },
                    keys,
                    rng,
                }
            })
            .collect();
        Some(Box::new(Mix {
            cumulative,
            rng: seed.stream(&format!("clients/{client}/classes")),
            classes,
        }))
    }

    /// Gives its class and tenant draws fresh randomness from `seed` (a branch's).
    pub fn reseed(&mut self, seed: Seed) {
        self.rng.reseed(seed);
        for rng in self.classes.iter_mut().filter_map(|c| c.rng.as_mut()) {
            rng.reseed(seed);
        }
    }

    /// The attributes of the next request: a class in proportion to the shares, then a
    /// tenant of that class.
    pub fn draw(&mut self) -> Attrs {
        let total = *self.cumulative.last().expect("a mix has classes");
        let u = unit_f64(&mut self.rng) * total;
        let i = self
            .cumulative
            .partition_point(|&c| c <= u)
            .min(self.classes.len() - 1);
        let class = &mut self.classes[i];
        let mut attrs = class.attrs;
        attrs.tenant = match &class.keys {
            KeyDraw::None => 0,
            KeyDraw::Uniform { first, keys } => {
                let rng = class
                    .rng
                    .as_mut()
                    .expect("a class with tenants has a stream");
                first + uniform_below(rng, u64::from(*keys)) as u32
            }
            KeyDraw::Zipf { first, cumulative } => {
                let rng = class
                    .rng
                    .as_mut()
                    .expect("a class with tenants has a stream");
                let total = *cumulative.last().expect("at least one key");
                let u = unit_f64(rng) * total;
                let rank = cumulative
                    .partition_point(|&c| c <= u)
                    .min(cumulative.len() - 1);
                first + rank as u32
            }
        };
        attrs
    }
}

/// The empty figures of `classes`.
pub fn class_figures(classes: &[RequestClass]) -> Vec<ClassFigures> {
    classes
        .iter()
        .map(|c| ClassFigures {
            name: c.name.clone(),
            priority: c.priority.level(),
            cost: c.cost,
            total: TrafficFigures::default(),
            tenants: c.tenants.as_ref().map(|t| TenantFigures {
                first: t.first,
                keys: t.keys,
                ranked: (0..t.reported.min(t.keys))
                    .map(|_| TrafficFigures::default())
                    .collect(),
                others: TrafficFigures::default(),
            }),
            buckets: Vec::new(),
        })
        .collect()
}

/// The figures of `attrs`'s class, and of its tenant when the class has tenants.
fn entries(
    classes: &mut [ClassFigures],
    attrs: Attrs,
) -> (&mut TrafficFigures, Option<&mut TrafficFigures>) {
    let c = &mut classes[usize::from(attrs.class)];
    let tenant = c.tenants.as_mut().map(|t| {
        let rank = attrs.tenant - t.first;
        match t.ranked.get_mut(rank as usize) {
            Some(f) => f,
            None => &mut t.others,
        }
    });
    (&mut c.total, tenant)
}

/// Counts a request of `attrs` offered in report bucket `bucket`.
pub fn record_offer(classes: &mut [ClassFigures], attrs: Attrs, bucket: usize) {
    bucket_mut(&mut classes[usize::from(attrs.class)].buckets, bucket).offered += 1;
    let (class, tenant) = entries(classes, attrs);
    class.offered += 1;
    if let Some(t) = tenant {
        t.offered += 1;
    }
}

/// Counts the outcome of a request of `attrs` offered in report bucket `offered_in` (`None`:
/// success) after `latency`.
pub fn record_outcome(
    classes: &mut [ClassFigures],
    attrs: Attrs,
    offered_in: usize,
    failed: Option<crate::figures::Reason>,
    latency: SimDuration,
) {
    if failed.is_none() {
        bucket_mut(&mut classes[usize::from(attrs.class)].buckets, offered_in).successes += 1;
    }
    let (class, tenant) = entries(classes, attrs);
    for f in std::iter::once(class).chain(tenant) {
        match failed {
            None => {
                f.successes += 1;
                f.latency.record(latency);
            }
            Some(r) => f.failed.add(r),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes(text: &str) -> Vec<RequestClass> {
        ron::Options::default()
            .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
            .from_str(text)
            .unwrap()
    }

    #[test]
    fn a_zipf_class_draws_its_heavy_keys_most() {
        let c = classes(
            r#"[(name: "a", share: 1, tenants: (keys: 100, first: 1000, popularity: Zipf(exponent: 1.0)))]"#,
        );
        let mut mix = Mix::new("c", &c, Seed(3)).unwrap();
        let mut counts = [0u32; 100];
        for _ in 0..100_000 {
            let a = mix.draw();
            counts[(a.tenant - 1000) as usize] += 1;
        }
        // Rank 0 weighs 1 / H(100) ≈ 19.3% of the draws, rank 1 half of it.
        let share0 = f64::from(counts[0]) / 100_000.0;
        assert!((share0 - 0.1928).abs() < 0.005, "{share0}");
        let ratio = f64::from(counts[0]) / f64::from(counts[1]);
        assert!((ratio - 2.0).abs() < 0.1, "{ratio}");
    }

    #[test]
    fn shares_split_the_requests_and_a_zero_share_gets_none() {
        let c = classes(
            r#"[(name: "a", share: 3), (name: "z", share: 0), (name: "b", share: 1, priority: Sheddable, cost: 5, retry: false)]"#,
        );
        let mut mix = Mix::new("c", &c, Seed(1)).unwrap();
        let mut counts = [0u32; 3];
        for _ in 0..40_000 {
            let a = mix.draw();
            counts[usize::from(a.class)] += 1;
            if a.class == 2 {
                assert_eq!((a.level, a.cost, a.retry), (0, 5, false));
            }
        }
        assert_eq!(counts[1], 0);
        let share_a = f64::from(counts[0]) / 40_000.0;
        assert!((share_a - 0.75).abs() < 0.01, "{share_a}");
    }
}
