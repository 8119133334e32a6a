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
        let i = self.bucket_of(now);
        let c = &mut self.clients[client];
        bucket_mut(&mut c.stats.buckets, i).offered += 1;
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
        let offered_in = self.bucket_of(offered_at);
        let completed_in = self.bucket_of(now);
        let c = &mut self.clients[client as usize];
        match o {
            Outcome::Ok => {
                let latency = now - offered_at;
                c.stats.latency.record(latency);
                let b = bucket_mut(&mut c.stats.buckets, offered_in);
                b.successes += 1;
                b.latency_sum_ns += latency.as_nanos();
                bucket_mut(&mut c.stats.buckets, completed_in).completed_ok += 1;
                self.latency.record(latency);
                bucket_mut(&mut self.run_buckets, offered_in)
                    .latency
                    .record(latency);
            }
            Outcome::Fail(r) => {
                bucket_mut(&mut c.stats.buckets, offered_in).failures += 1;
                c.stats.failed.add(r);
            }
        }
        let c = &mut self.clients[client as usize];
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

/// The entry of bucket `i`, growing the list to reach it.
pub(super) fn bucket_mut<T: Default>(buckets: &mut Vec<T>, i: usize) -> &mut T {
    if i >= buckets.len() {
        buckets.resize_with(i + 1, T::default);
    }
    &mut buckets[i]
}
