//! Following requests: every call made for one, each attempt's journey and each caller's
//! decision, recorded as [`Step`]s (`figures::Followed`) for `resim why --request` (one
//! request) and the explorer (the requests it sampled, followed in a second run of the same
//! seed); and the first failed requests of each bucket by reason, the examples `resim why`
//! names and the explorer samples.
//!
//! The world records only when asked ([`World::follow`]): without it, each place that could
//! record pays one `Option` check (`self.follow.is_some()`) and nothing else. Recording reads
//! the world and never changes it: it schedules nothing, draws no random number and touches
//! no figure, so a followed run has the digest of the same run unfollowed.
//!
//! Requests can also be followed as they come ([`World::sample_requests`], `resim run
//! --spans`): a request is chosen when its client offers it, by its trace id
//! ([`Sampling`]), and its record is handed over ([`World::take_ended`]) as soon as nothing
//! of it is left in flight (every call ended, every job ended at its replica, which can be
//! after the client gave up). What the world holds is then the records of the requests in
//! flight, however long the run.

use super::call::Owner;
use super::job::{Ending, Job};
use super::outcome::Outcome;
use super::{CallKey, JobKey, World};
use crate::figures::sampling::Sampling;
use crate::figures::{
    Attempt, Decision, EXAMPLES_PER_BUCKET, FailedExample, Followed, JobEnd, Maker, REASONS,
    Reason, SLOW_PER_BUCKET, SlowExample, Step, What,
};
use patterns::retry::{GiveUpReason, RetryDecision};
use sim_core::{SimDuration, SimTime};
use std::collections::BTreeMap;

/// The most steps recorded for one request: a request fans out to at most a few thousand
/// calls, and a recording past this is cut (`Followed::steps_left_out` counts what was left out).
pub const FOLLOW_STEPS_MAX: usize = 100_000;

/// What the world records while it follows a request or collects examples.
#[derive(Debug, Clone, Default)]
pub struct Follow {
    /// The request asked for alone (`why --request`), if one is.
    request: Option<u64>,
    /// Every request followed and its record, by id (the one asked for among them).
    records: BTreeMap<u64, Record>,
    /// Which requests to follow as their clients offer them, when sampling.
    sampling: Option<Sampling>,
    /// The records of sampled requests with nothing left in flight, for `take_ended`.
    ended: Vec<Followed>,
    /// The request the last `following` found.
    current: u64,
    /// Requests the clients offered, and the smallest and largest id, for every record.
    offered: (u64, Option<(u64, u64)>),
    /// The followed request's jobs, with their attempts: a job outlives its call when the
    /// caller gives up, and the steps still name the call.
    jobs: BTreeMap<JobKey, Attempt>,
    /// The followed requests' jobs in a queue, with what their replica's counts were when
    /// they arrived.
    watches: BTreeMap<JobKey, Watch>,
    /// Per replica that had a followed job queued (service, replica): the jobs its workers
    /// took from its queue since, and of those the ones whose callers had already given up.
    /// A watched job's counts are the difference, so a dequeue costs one look-up however
    /// many followed jobs wait (a run following every request queues thousands).
    taken: BTreeMap<(usize, usize), (u64, u64)>,
    /// Whether failed requests are kept as examples, and how many of each reason per bucket.
    examples: Option<Vec<[u8; REASONS.len()]>>,
    failed: Vec<FailedExample>,
    /// With examples: the slowest successes of each bucket, the slowest first (the first
    /// to succeed among equals).
    slowest: Vec<[Option<(SimDuration, u64)>; SLOW_PER_BUCKET]>,
}

/// A followed request's record, and its calls and jobs in flight.
#[derive(Debug, Clone, Default)]
struct Record {
    followed: Followed,
    /// Calls started and not ended, jobs sent and not ended.
    open: u32,
}

/// A followed job waiting in its replica's queue: its replica's counts of jobs taken (and
/// of those whose callers were gone) when it arrived.
#[derive(Debug, Clone)]
struct Watch {
    taken: u64,
    gone: u64,
}

impl Follow {
    /// The attempt of a job of the followed request.
    fn attempt_of(&self, job: JobKey) -> Attempt {
        *self
            .jobs
            .get(&job)
            .expect("the followed request's jobs are noted when sent")
    }

    /// Records a step of the request `following` found last.
    fn push(&mut self, at: SimTime, call: u64, what: What) {
        let record = &mut self.record().followed;
        if record.steps.len() < FOLLOW_STEPS_MAX {
            record.steps.push(Step { at, call, what });
        } else {
            record.steps_left_out += 1;
        }
    }

    /// The record of the request `following` found last.
    fn record(&mut self) -> &mut Record {
        self.records
            .get_mut(&self.current)
            .expect("found by `following`")
    }

    /// A call or job of the request `following` found last started.
    fn opened(&mut self) {
        self.record().open += 1;
    }

    /// A call or job of the request `following` found last ended: a sampled request with
    /// nothing left in flight is done.
    fn closed(&mut self) {
        let record = self.record();
        assert!(record.open > 0, "a call or job ends once, after it started");
        record.open -= 1;
        if record.open == 0 && self.sampling.is_some() {
            let done = self
                .records
                .remove(&self.current)
                .expect("found by `following`");
            self.ended.push(done.followed);
        }
    }

    /// The request asked for alone, every followed request (in increasing id order; when
    /// sampling, those still in flight), the failed examples and the slowest successes, for
    /// the figures.
    pub fn finish(
        self,
    ) -> (
        Option<Followed>,
        Vec<Followed>,
        Vec<FailedExample>,
        Vec<SlowExample>,
    ) {
        let mut records: Vec<Followed> = self.records.into_values().map(|r| r.followed).collect();
        for r in &mut records {
            (r.offered, r.ids) = self.offered;
        }
        let alone = self.request.map(|id| {
            let i = records
                .binary_search_by_key(&id, |r| r.request)
                .expect("asked for, so followed");
            records[i].clone()
        });
        let slow = self
            .slowest
            .iter()
            .enumerate()
            .flat_map(|(bucket, kept)| {
                kept.iter()
                    .flatten()
                    .map(move |&(latency, request)| SlowExample {
                        bucket,
                        request,
                        latency,
                    })
            })
            .collect();
        (alone, records, self.failed, slow)
    }
}

fn reason_of(outcome: Outcome) -> Option<Reason> {
    match outcome {
        Outcome::Ok => None,
        Outcome::Fail(r) => Some(r),
    }
}

/// A retry policy's decision in the figures' words.
pub(super) fn decision_of(decision: &RetryDecision) -> Decision {
    match *decision {
        RetryDecision::Retry { after, .. } => Decision::Retry(after),
        RetryDecision::GiveUp { reason } => match reason {
            GiveUpReason::NotRetryable { .. } | GiveUpReason::Finished => Decision::NotRetryable,
            GiveUpReason::NotIdempotent => Decision::NotIdempotent,
            GiveUpReason::AttemptsExhausted { attempts } => Decision::AttemptsExhausted(attempts),
            GiveUpReason::RetryAfterTooLong { requested } => Decision::RetryAfterTooLong(requested),
            GiveUpReason::DeadlineExceeded { .. } => Decision::Deadline,
            GiveUpReason::BudgetExhausted => Decision::BudgetExhausted,
        },
    }
}

impl World {
    /// Follows client request `request` (its id, `request #N` in a trace) and the requests
    /// `more`, and, with `examples`, keeps the first failed requests of each bucket by
    /// reason.
    pub fn follow(&mut self, request: Option<u64>, more: &[u64], examples: bool) {
        let records = request
            .into_iter()
            .chain(more.iter().copied())
            .map(|id| {
                let followed = Followed {
                    request: id,
                    ..Followed::default()
                };
                (id, Record { followed, open: 0 })
            })
            .collect();
        self.follow = Some(Box::new(Follow {
            request,
            records,
            examples: examples.then(Vec::new),
            ..Follow::default()
        }));
    }

    /// Follows, whole, the requests `sampling` keeps, as their clients offer them; each
    /// request's record waits for [`World::take_ended`] once nothing of it is in flight.
    pub fn sample_requests(&mut self, sampling: Sampling) {
        if self.follow.is_none() {
            self.follow(None, &[], false);
        }
        let f = self.follow.as_deref_mut().expect("just made");
        f.sampling = Some(sampling);
    }

    /// The records of the sampled requests that ended since the last call, in the order
    /// they ended.
    pub fn take_ended(&mut self) -> Vec<Followed> {
        self.follow
            .as_deref_mut()
            .map(|f| std::mem::take(&mut f.ended))
            .unwrap_or_default()
    }

    /// The follow record, when `request` is one of those followed (its record the one
    /// `push` writes to).
    fn following(&mut self, request: u64) -> Option<&mut Follow> {
        let f = self.follow.as_deref_mut()?;
        f.records.contains_key(&request).then_some(())?;
        f.current = request;
        Some(f)
    }

    /// Call `key` started (counted among the offered requests when a client made it).
    pub(super) fn note_call(&mut self, now: SimTime, key: CallKey) {
        let c = &self.calls[key];
        let (id, request, owner, site) = (c.id, c.request, c.owner, c.site as usize);
        let deadline = (c.deadline != SimTime::MAX).then_some(c.deadline);
        let f = self.follow.as_deref_mut().expect("checked by the caller");
        if matches!(owner, Owner::Client { .. }) {
            f.offered.0 += 1;
            let ids = f.offered.1.get_or_insert((id, id));
            ids.1 = id;
            if f.sampling.is_some_and(|s| s.keeps(id)) {
                let followed = Followed {
                    request: id,
                    ..Followed::default()
                };
                f.records.insert(id, Record { followed, open: 0 });
            }
        } else if let Some(r) = f.records.get_mut(&id) {
            r.followed.call_of = Some(request);
        }
        if self.following(request).is_none() {
            return;
        }
        let what = What::Call {
            maker: self.maker(owner),
            path: self.sites[site].path().to_string(),
            target: self.services[self.sites[site].target()].name().to_string(),
            deadline,
        };
        let f = self.following(request).expect("checked above");
        f.push(now, id, what);
        f.opened();
    }

    /// Who made a call of `owner`.
    fn maker(&self, owner: Owner) -> Maker {
        let id = |call: CallKey| self.calls.get(call).map_or(0, |c| c.id);
        let of_job = |job: JobKey| {
            let j = &self.jobs[job];
            Attempt {
                call: id(j.call()),
                attempt: j.attempt(),
            }
        };
        match owner {
            Owner::Client { .. } => Maker::Client,
            Owner::Job { job, .. } => Maker::Job(of_job(job)),
            Owner::Hedge { shell, attempt } => Maker::Hedge(Attempt {
                call: id(shell),
                attempt,
            }),
            Owner::Leaf { shell } => Maker::Leaf(id(shell)),
            // A lease is for the replica: it follows no request.
            Owner::Store { job, .. } if self.jobs.contains_key(job) => Maker::Limiter(of_job(job)),
            Owner::Store { .. } => Maker::Client,
        }
    }

    /// The attempt of `key` left for `replica` of `service` as `job`.
    pub(super) fn note_sent(&mut self, now: SimTime, key: CallKey, job: JobKey) {
        let c = &self.calls[key];
        let (call, request, attempt) = (c.id, c.request, c.attempt_no);
        let j = &self.jobs[job];
        let service = self.services[j.service()].name().to_string();
        let (replica, deadline) = (j.replica() as u32, j.deadline());
        if let Some(f) = self.following(request) {
            f.jobs.insert(job, Attempt { call, attempt });
            let what = What::Sent {
                attempt,
                service,
                replica,
                timeout_at: (deadline != SimTime::MAX).then_some(deadline),
            };
            f.push(now, call, what);
            f.opened();
        }
    }

    /// `job` waits in its replica's queue behind `depth` jobs.
    pub(super) fn note_queued(&mut self, now: SimTime, job: JobKey, depth: usize) {
        let j = &self.jobs[job];
        let (service, replica) = (j.service(), j.replica());
        if let Some(f) = self.following(j.request()) {
            let Attempt { call, attempt } = f.attempt_of(job);
            let (taken, gone) = *f.taken.entry((service, replica)).or_default();
            f.watches.insert(job, Watch { taken, gone });
            let depth = depth as u64;
            f.push(now, call, What::Queued { attempt, depth });
        }
    }

    /// A worker of its replica takes `job` from the queue, where it waited since `since`.
    pub(super) fn note_dequeued(&mut self, now: SimTime, job: JobKey, since: SimTime) {
        let j = &self.jobs[job];
        let (service, replica, request) = (j.service(), j.replica(), j.request());
        let gone = self.nobody_waits(j);
        let f = self.follow.as_deref_mut().expect("checked by the caller");
        let counts = f.taken.get_mut(&(service, replica));
        let Some((taken, gone_taken)) = counts.map(|c| *c) else {
            // No followed job ever queued here: nothing to count for.
            return;
        };
        if let Some(w) = f.watches.remove(&job) {
            assert!(
                f.records.contains_key(&request),
                "a watched job's request is followed"
            );
            f.current = request;
            let Attempt { call, attempt } = f.attempt_of(job);
            let what = What::Started {
                attempt,
                waited: now - since,
                taken: taken - w.taken,
                gone: gone_taken - w.gone,
            };
            f.push(now, call, what);
        }
        let c = f.taken.get_mut(&(service, replica)).expect("found above");
        c.0 += 1;
        c.1 += u64::from(gone);
    }

    /// Job `j` (removed from its table) ends at its replica.
    pub(super) fn note_job_end(&mut self, now: SimTime, key: JobKey, j: &Job, ending: Ending) {
        let gone = self.nobody_waits(j);
        let worked = j.worker_since().map(|since| now - since);
        let Some(f) = self.following(j.request()) else {
            return;
        };
        let Attempt { call, attempt } = f.attempt_of(key);
        f.jobs.remove(&key);
        f.watches.remove(&key);
        let end = match ending {
            Ending::Answered(o) => JobEnd::Answered(reason_of(o)),
            Ending::Cancelled => JobEnd::Cancelled,
            Ending::Lost => JobEnd::Lost,
        };
        let what = What::Ended {
            attempt,
            end,
            worked,
            gone,
        };
        f.push(now, call, what);
        f.closed();
    }

    /// The current attempt of `key` ended with `outcome`, and its caller decided.
    pub(super) fn note_attempt(
        &mut self,
        now: SimTime,
        key: CallKey,
        outcome: Outcome,
        sent: bool,
        decision: Option<Decision>,
    ) {
        let c = &self.calls[key];
        let (call, attempt) = (c.id, c.attempt_no);
        if let Some(f) = self.following(c.request) {
            let what = What::Attempted {
                attempt,
                outcome: reason_of(outcome),
                sent,
                decision,
            };
            f.push(now, call, what);
        }
    }

    /// The id and request of call `key`, when the world records something.
    pub(super) fn followed_call(&self, key: CallKey) -> Option<(u64, u64)> {
        self.follow.as_ref()?;
        self.calls.get(key).map(|c| (c.id, c.request))
    }

    /// Call `call` of `request` ended with `outcome`.
    pub(super) fn note_finished(
        &mut self,
        now: SimTime,
        (call, request): (u64, u64),
        outcome: Outcome,
        fell_back: bool,
    ) {
        if let Some(f) = self.following(request) {
            let outcome = reason_of(outcome);
            f.push(now, call, What::Finished { outcome, fell_back });
            f.closed();
        }
    }

    /// Call `call` of `request` was dropped by its owner.
    pub(super) fn note_cancelled(&mut self, now: SimTime, (call, request): (u64, u64)) {
        if let Some(f) = self.following(request) {
            f.push(now, call, What::Cancelled);
            f.closed();
        }
    }

    /// Client request `request`, offered in `bucket`, failed with `reason`.
    pub(super) fn note_failed(&mut self, bucket: usize, reason: Reason, request: u64) {
        let f = self.follow.as_deref_mut().expect("checked by the caller");
        let Some(counts) = &mut f.examples else {
            return;
        };
        if counts.len() <= bucket {
            counts.resize(bucket + 1, [0; REASONS.len()]);
        }
        let kept = &mut counts[bucket][reason as usize];
        if usize::from(*kept) < EXAMPLES_PER_BUCKET {
            *kept += 1;
            f.failed.push(FailedExample {
                bucket,
                reason,
                request,
            });
        }
    }

    /// Client request `request`, offered in `bucket`, succeeded after `latency`: kept when it
    /// is among the slowest of its bucket.
    pub(super) fn note_succeeded(&mut self, bucket: usize, request: u64, latency: SimDuration) {
        let f = self.follow.as_deref_mut().expect("checked by the caller");
        if f.examples.is_none() {
            return;
        }
        if f.slowest.len() <= bucket {
            f.slowest.resize(bucket + 1, [None; SLOW_PER_BUCKET]);
        }
        let kept = &mut f.slowest[bucket];
        // Insertion into a list of two, the slowest first; a tie keeps the earlier one.
        let mut new = Some((latency, request));
        for slot in kept.iter_mut() {
            match (*slot, new) {
                (None, _) => {
                    *slot = new.take();
                    break;
                }
                (Some((l, _)), Some((n, _))) if n > l => {
                    new = std::mem::replace(slot, new);
                }
                _ => {}
            }
        }
    }
}
