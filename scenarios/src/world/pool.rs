//! Connection pools (see [`crate::format::schema::pool`]): one per calling replica of a pooled call site,
//! their connections idle, in use and opening, their FIFO queues of waiting attempts, and
//! the connections each target holds open over all the pools toward it.
//!
//! ```text
//!  checkout ──► idle connection? ──yes──► in use ──► checkin ──► a waiter? ──yes──► in use
//!                  │ no                                             │ no
//!                  ▼                                                ▼
//!               wait (FIFO) ──► open one if under size          idle ──► idle_timeout ──► closed
//!                  │               │ connect_time
//!                  │               ├─► opened: to the first waiter (or idle)
//!                  │               └─► refused (target at max_connections): the first waiter fails
//!                  └─► checkout_timeout: pool_timeout
//! ```
//!
//! A pool decides and records; what the world must then do (schedule an open's end or an
//! eviction, resume or fail a waiting attempt) is an [`Effect`] in the world's one queue of
//! what an event leaves to do (`world::effects`), acted on after the event. An idle connection is reused last in, first out, so
//! the oldest idle ones are those that time out; a pool keeps at most one eviction pending,
//! for its oldest idle connection. A scenario without pools has an empty [`Pools`] and its
//! hot path pays one emptiness check per attempt sent and ended.
//!
//! # Decisions
//!
//! A pool belongs to a call site instance (one per calling replica), so the pools of one site
//! are summed in its figures as its counters are. An attempt checks a connection out after its
//! inner gates and before it is sent (a worker of the calling job is held meanwhile), and
//! checks it in when the attempt ends at the caller (reply, timeout, cancellation), not when
//! the target finishes. Opens are driven by demand: a pool opens a connection for each waiter
//! no open under way serves, within its size; a new connection goes to the first waiter, and a
//! refused open (the target at `max_connections` over every pool toward it, counted from the
//! start of the open) fails the first waiter with `connection_refused` after the handshake's
//! `connect_time`. Idle connections are reused last in, first out, and one pending eviction per
//! pool closes the oldest at its `idle_timeout`. A pool decides and records; what the world
//! must do (schedule an open's end or an eviction, send or fail a waiting attempt) is an effect
//! acted on after the event, like bulkhead wakes. Pools draw no random numbers; a scenario
//! without any has an empty `Pools`, pays one emptiness check per attempt sent and ended and
//! one per event, and keeps its digest. Crashes do not close a pool's connections (a crashed
//! caller's attempts give theirs back as they are cancelled).

use super::call::Attempt;
use super::effects::{Effect, Effects};
use super::msg::Msg;
use super::outcome::Reason;
use super::{C, CallKey, World};
use crate::figures::{ConnectionFigures, PoolFigures};
use crate::format::schema::Scenario;
use crate::format::schema::pool::Pool;
use sim_core::metrics::{GaugeSeries, LatencyHistogram};
use sim_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// An attempt waiting for a connection.
#[derive(Debug, Clone, Copy)]
struct Waiter {
    call: CallKey,
    attempt: u32,
    since: SimTime,
}

/// One pool: a calling replica's connections toward one target.
#[derive(Debug, Clone)]
struct PoolState {
    /// Its call site instance.
    site: u32,
    /// Its call site (the pools of one site's replicas share it).
    group: u32,
    /// The target service.
    target: u32,
    config: Pool,
    /// Idle connections, by when they became idle (oldest first).
    idle: VecDeque<SimTime>,
    /// Connections in use by an attempt.
    busy: u32,
    /// Opens under way (refused ones included, until the refusal arrives).
    opening: u32,
    waiters: VecDeque<Waiter>,
    /// Whether an eviction is scheduled.
    evict_pending: bool,
}

impl PoolState {
    /// Connections it holds or is opening: never more than its size.
    fn held(&self) -> u32 {
        self.idle.len() as u32 + self.busy + self.opening
    }
}

/// The figures being gathered for one call site's pools.
#[derive(Debug, Clone)]
struct Group {
    path: String,
    figures: PoolFigures,
    /// Connections open now over its pools (opening ones included).
    open: u32,
    gauge: GaugeSeries,
    wait: LatencyHistogram,
}

/// A target's connections over all the pools toward it.
#[derive(Debug, Clone)]
struct Target {
    limit: Option<u32>,
    /// Whether some pool calls it.
    pooled: bool,
    open: u32,
    open_max: u32,
    refused: u64,
    gauge: GaugeSeries,
}

/// Every pool of the world.
#[derive(Debug, Clone, Default)]
pub struct Pools {
    /// In order of their site.
    pools: Vec<PoolState>,
    groups: Vec<Group>,
    /// By service; empty when no pool exists and no service limits its connections.
    targets: Vec<Target>,
}

impl Pools {
    /// The pools of scenario `s`, for its call sites in the order the world numbers them
    /// (`sites`: each service call site instance's number, path, calling replica's target and
    /// the call's pool).
    pub fn new<'a>(
        s: &Scenario,
        sites: impl Iterator<Item = (u32, &'a str, u32, Option<&'a Pool>)>,
        bucket: SimDuration,
    ) -> Self {
        let mut pools = Pools::default();
        for (site, path, target, config) in sites {
            let Some(config) = config else { continue };
            if pools.groups.last().is_none_or(|g| g.path != path) {
                pools.groups.push(Group {
                    path: path.to_string(),
                    figures: PoolFigures {
                        size: config.size,
                        ..PoolFigures::default()
                    },
                    open: 0,
                    gauge: GaugeSeries::new(bucket),
                    wait: LatencyHistogram::compact(),
                });
            }
            let group = pools.groups.len() as u32 - 1;
            pools.groups[group as usize].figures.pools += 1;
            assert!(
                pools.pools.last().is_none_or(|p| p.site < site),
                "pools are built in the order of their sites"
            );
            pools.pools.push(PoolState {
                site,
                group,
                target,
                config: config.clone(),
                idle: VecDeque::new(),
                busy: 0,
                opening: 0,
                waiters: VecDeque::new(),
                evict_pending: false,
            });
        }
        let limited = s.services.values().any(|v| v.max_connections.is_some());
        if !pools.pools.is_empty() || limited {
            pools.targets = s
                .services
                .values()
                .map(|v| Target {
                    limit: v.max_connections,
                    pooled: false,
                    open: 0,
                    open_max: 0,
                    refused: 0,
                    gauge: GaugeSeries::new(bucket),
                })
                .collect();
            for p in &pools.pools {
                pools.targets[p.target as usize].pooled = true;
            }
        }
        pools
    }

    /// Whether the world has no pool.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pools.is_empty()
    }

    /// The pool of call site instance `site`, if it has one.
    fn find(&self, site: u32) -> Option<usize> {
        self.pools.binary_search_by_key(&site, |p| p.site).ok()
    }

    /// The attempt `attempt` of `call` asks the pool `i` for a connection: true when it
    /// gets one at once, false when it waits (and the pool opens one if it may).
    fn checkout(
        &mut self,
        i: usize,
        now: SimTime,
        call: CallKey,
        attempt: u32,
        out: &mut Effects,
    ) -> bool {
        let p = &mut self.pools[i];
        let g = &mut self.groups[p.group as usize];
        g.figures.checkouts += 1;
        if p.idle.pop_back().is_some() {
            p.busy += 1;
            g.wait.record(SimDuration::ZERO);
            return true;
        }
        g.figures.waits += 1;
        p.waiters.push_back(Waiter {
            call,
            attempt,
            since: now,
        });
        self.fill(i, now, out);
        false
    }

    /// Opens connections for the waiters that no open under way serves, within the size.
    fn fill(&mut self, i: usize, now: SimTime, out: &mut Effects) {
        let p = &mut self.pools[i];
        let g = &mut self.groups[p.group as usize];
        let t = &mut self.targets[p.target as usize];
        while p.waiters.len() as u32 > p.opening && p.held() < p.config.size {
            p.opening += 1;
            let refused = t.limit.is_some_and(|limit| t.open >= limit);
            if refused {
                t.refused += 1;
                g.figures.refused_opens += 1;
            } else {
                t.open += 1;
                t.open_max = t.open_max.max(t.open);
                t.gauge.set(now, f64::from(t.open));
                g.open += 1;
                g.figures.opened += 1;
                g.figures.connections_open_max = g.figures.connections_open_max.max(g.open);
                g.gauge.set(now, f64::from(g.open));
            }
            let held = p.held();
            assert!(held <= p.config.size, "a pool holds at most its size");
            g.figures.pool_held_max = g.figures.pool_held_max.max(held);
            if let Some(limit) = t.limit {
                assert!(t.open <= limit, "a target accepts at most max_connections");
            }
            out.push(Effect::Open {
                site: p.site,
                refused,
                after: p.config.connect_time,
            });
        }
    }

    /// An open of the pool of `site` ended: the connection goes to the first waiter (or is
    /// idle), or the refusal fails the first waiter.
    fn opened(&mut self, site: u32, now: SimTime, refused: bool, out: &mut Effects) {
        let i = self.find(site).expect("an open belongs to a pool");
        let p = &mut self.pools[i];
        p.opening -= 1;
        if refused {
            if let Some(w) = p.waiters.pop_front() {
                out.push(Effect::Refuse {
                    call: w.call,
                    attempt: w.attempt,
                });
            }
            self.fill(i, now, out);
        } else {
            p.busy += 1;
            self.checkin(i, now, out);
        }
    }

    /// A connection of pool `i` is free: it goes to the first waiter, or becomes idle.
    fn checkin(&mut self, i: usize, now: SimTime, out: &mut Effects) {
        let p = &mut self.pools[i];
        assert!(p.busy > 0, "a connection is checked in once");
        if let Some(w) = p.waiters.pop_front() {
            self.groups[p.group as usize].wait.record(now - w.since);
            out.push(Effect::Grant {
                site: p.site,
                call: w.call,
                attempt: w.attempt,
            });
            return;
        }
        p.busy -= 1;
        p.idle.push_back(now);
        if !p.evict_pending {
            p.evict_pending = true;
            let at = now.saturating_add(p.config.idle_timeout);
            out.push(Effect::Evict { site: p.site, at });
        }
    }

    /// The attempt of `call` stops waiting at pool `i` (`timed_out`: for its checkout
    /// timeout).
    fn leave(&mut self, i: usize, call: CallKey, timed_out: bool) {
        let p = &mut self.pools[i];
        if let Some(k) = p.waiters.iter().position(|w| w.call == call) {
            p.waiters.remove(k);
            if timed_out {
                self.groups[p.group as usize].figures.checkout_timeouts += 1;
            }
        }
    }

    /// Closes the idle connections of the pool of `site` that reached their idle timeout.
    fn evict(&mut self, site: u32, now: SimTime, out: &mut Effects) {
        let i = self.find(site).expect("an eviction belongs to a pool");
        let p = &mut self.pools[i];
        let g = &mut self.groups[p.group as usize];
        let t = &mut self.targets[p.target as usize];
        p.evict_pending = false;
        let timeout = p.config.idle_timeout;
        while p.idle.front().is_some_and(|&since| since + timeout <= now) {
            p.idle.pop_front();
            t.open -= 1;
            t.gauge.set(now, f64::from(t.open));
            g.open -= 1;
            g.gauge.set(now, f64::from(g.open));
            g.figures.closed_idle += 1;
        }
        if let Some(&oldest) = p.idle.front() {
            p.evict_pending = true;
            let at = oldest.saturating_add(timeout);
            out.push(Effect::Evict { site, at });
        }
    }

    /// The figures of each pooled call site, by path.
    pub fn figures(&mut self, end: SimTime) -> Vec<(String, PoolFigures)> {
        self.groups
            .iter_mut()
            .map(|g| {
                let mut f = g.figures.clone();
                f.wait_p99 = (g.wait.count() > 0).then(|| g.wait.quantile(0.99));
                f.open_by_bucket = g.gauge.finish(end).iter().map(|b| b.max as u32).collect();
                (g.path.clone(), f)
            })
            .collect()
    }

    /// The connections of service `service`, if some pool calls it or it limits them.
    pub fn connections(&mut self, service: usize, end: SimTime) -> Option<ConnectionFigures> {
        let t = self.targets.get_mut(service)?;
        (t.pooled || t.limit.is_some()).then(|| ConnectionFigures {
            max_connections: t.limit,
            open_max: t.open_max,
            refused: t.refused,
            open_by_bucket: t.gauge.finish(end).iter().map(|b| b.max as u32).collect(),
        })
    }
}

impl World {
    /// The attempt of `key` checks a connection out of its site's pool, if the site has one;
    /// true when it must wait for it.
    pub(super) fn checkout(&mut self, ctx: C, key: CallKey) -> bool {
        let call = &self.calls[key];
        let Some(i) = self.pools.find(call.site) else {
            return false;
        };
        let attempt = call.attempt_no;
        if self
            .pools
            .checkout(i, ctx.now(), key, attempt, &mut self.effects)
        {
            return false;
        }
        let timeout = self.pools.pools[i].config.checkout_timeout;
        let timer = ctx.timer_self(timeout, Msg::CheckoutTimeout { call: key, attempt });
        self.calls[key].attempt = Attempt::Checkout { timer };
        true
    }

    /// The connection an attempt of call site instance `site` held is free again.
    pub(super) fn checkin(&mut self, now: SimTime, site: u32) {
        if let Some(i) = self.pools.find(site) {
            self.pools.checkin(i, now, &mut self.effects);
        }
    }

    /// An attempt of `key` waiting at its pool leaves it (its call is cancelled).
    pub(super) fn leave_pool(&mut self, site: u32, key: CallKey) {
        let i = self
            .pools
            .find(site)
            .expect("a call waits at its site's pool");
        self.pools.leave(i, key, false);
    }

    /// An open of the pool of `site` ends.
    pub(super) fn on_pool_opened(&mut self, ctx: C, site: u32, refused: bool) {
        self.pools
            .opened(site, ctx.now(), refused, &mut self.effects);
    }

    /// The pool of `site` closes the idle connections that timed out.
    pub(super) fn on_pool_evict(&mut self, ctx: C, site: u32) {
        self.pools.evict(site, ctx.now(), &mut self.effects);
    }

    /// A waiting attempt's checkout timeout: it fails with `pool_timeout`.
    pub(super) fn on_checkout_timeout(&mut self, ctx: C, key: CallKey, attempt: u32) {
        let Some(call) = self.calls.get(key) else {
            return;
        };
        if call.attempt_no != attempt || !matches!(call.attempt, Attempt::Checkout { .. }) {
            return;
        }
        let i = self
            .pools
            .find(call.site)
            .expect("a waiting call has a pool");
        self.pools.leave(i, key, true);
        self.calls[key].attempt = Attempt::Idle;
        self.fail_unsent(ctx, key, Reason::PoolTimeout);
    }

    /// The checkout timer of the attempt `attempt` of `call`, if it still waits at its pool.
    pub(super) fn waiting(&self, call: CallKey, attempt: u32) -> Option<sim_core::TimerId> {
        let c = self.calls.get(call)?;
        match c.attempt {
            Attempt::Checkout { timer } if c.attempt_no == attempt => Some(timer),
            _ => None,
        }
    }
}
