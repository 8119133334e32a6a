//! Clients: open-loop arrivals on a rate schedule, closed-loop users, and what a request's
//! outcome does to its client.

use super::*;

impl World {
    pub(super) fn on_arrival(&mut self, ctx: C, client: usize, emit: bool) {
        let now = ctx.now();
        if emit {
            self.offer(ctx, client, u32::MAX);
        }
        let c = &mut self.clients[client];
        let schedule = c
            .schedule
            .as_ref()
            .expect("arrivals are for open-loop clients");
        let rate = schedule.rate_at(now) * c.spike;
        let i = c.change_points.partition_point(|t| *t <= now);
        let next_change = c.change_points.get(i).copied();
        let client_id = client as u32;
        let next = if rate > 0.0 {
            let gap = SimDuration::from_nanos_f64(exponential(&mut c.rng, 1e9 / rate))
                .max(SimDuration::from_nanos(1));
            let t = now.saturating_add(gap);
            // Memorylessness makes a redraw at each change point exact for piecewise rates.
            match next_change {
                Some(change) if t > change => Some((change, false)),
                _ => Some((t, true)),
            }
        } else {
            next_change.map(|change| (change, false))
        };
        if let Some((t, emit)) = next {
            ctx.send_at(
                ctx.me(),
                t,
                Msg::Arrival {
                    client: client_id,
                    emit,
                },
            );
        }
    }

    pub(super) fn offer(&mut self, ctx: C, client: usize, user: u32) {
        let now = ctx.now();
        let c = &mut self.clients[client];
        c.stats.offered.add(now, 1);
        let spec = c.spec;
        self.start_call(
            ctx,
            spec,
            Owner::Client {
                client: client as u32,
                user,
                offered_at: now,
            },
            SimTime::MAX,
        );
    }

    pub(super) fn client_done(
        &mut self,
        ctx: C,
        client: u32,
        user: u32,
        offered_at: SimTime,
        o: Outcome,
    ) {
        let now = ctx.now();
        let c = &mut self.clients[client as usize];
        match o {
            Outcome::Ok => {
                let latency = now - offered_at;
                c.stats.successes.add(now, 1);
                c.stats.latency.record(latency);
                c.stats.latency_sum_ns.add(now, latency.as_nanos());
                let i = (now.as_nanos() / c.stats.offered.width().as_nanos()) as usize;
                if i >= c.stats.latency_bins.len() {
                    c.stats.latency_bins.resize(i + 1, LatencyBins::default());
                }
                c.stats.latency_bins[i].0[LatencyBins::bin(latency)] += 1;
            }
            Outcome::Fail(r) => {
                c.stats.failures.add(now, 1);
                c.stats.failed[r.index()] += 1;
            }
        }
        if user != u32::MAX {
            let think = c
                .think
                .as_ref()
                .expect("closed-loop clients have a think time")
                .sample(&mut c.rng);
            ctx.send_self(think, Msg::Think { client, user });
        }
    }
}
