//! One run of the scenario as `resim risk` follows it: a [`Running`] run stepped one event at
//! a time, with the [`Watch`] that says after each event whether the event happened and how
//! close the run is to it. A [`Path`] is the [`Trajectory`] splitting copies and branches.

use super::Setup;
use super::event::{Component, Event, Importance};
use crate::report::metastability::Verdict;
use crate::run::{Cancel, Probe, RunOptions, Running};
use sim_core::SimTime;
use sim_core::splitting::{Position, Trajectory};

/// What to read of a running world after each event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watch {
    /// A count whose reaching a value is the event (a first passage); `None` for an event
    /// judged at the end of the run.
    pub hit: Option<(Probe, u64)>,
    /// The importance function.
    pub importance: Probe,
    /// How the end of a run is judged, for an event judged at the end.
    pub judge: Judge,
}

/// How the end of a run is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judge {
    /// Not at all: the event is a first passage.
    Never,
    /// The expectation at this index failed.
    Expectation(usize),
    /// The metastability verdict is not a recovery.
    Metastable,
}

impl Watch {
    /// What to read for `event` with `importance`, naming the components by their index in
    /// the world a run of `scenario` builds.
    pub fn of(event: &Event, importance: &Importance, run: &Running) -> Watch {
        let service = |name: &str| {
            run.service_index(name)
                .expect("the event was checked against the scenario")
        };
        let hit = match event {
            Event::Failure {
                reason,
                at: Component::Service(s),
            } => Some((Probe::ServiceFailures(service(s), *reason), 1)),
            Event::Failure {
                reason,
                at: Component::Client(c),
            } => {
                let c = run
                    .client_index(c)
                    .expect("the event was checked against the scenario");
                Some((Probe::ClientFailures(c, *reason), 1))
            }
            Event::Queue { service: s, depth } => Some((Probe::Queue(service(s)), *depth)),
            Event::Expectation(_) | Event::Metastable | Event::Collapse => None,
        };
        let judge = match event {
            Event::Expectation(i) => Judge::Expectation(*i),
            Event::Metastable => Judge::Metastable,
            _ => Judge::Never,
        };
        let importance = match importance {
            Importance::Queue(s) => Probe::Queue(service(s)),
            Importance::Queued => Probe::Queued,
        };
        Watch {
            hit,
            importance,
            judge,
        }
    }
}

/// A spontaneous collapse ([`Event::Collapse`]) watched as a run goes: each client's requests
/// ended and succeeded, read at the first event of each report bucket, and how many buckets
/// in a row it has been unhealthy.
#[derive(Clone, Debug)]
struct Collapse {
    /// The report bucket width, in nanoseconds.
    width: u64,
    /// Unhealthy buckets in a row that make a collapse: the verdict's `sustain`, rounded up
    /// to whole buckets as the verdict rounds it.
    needed: u32,
    /// The least success ratio of a healthy bucket.
    healthy: f64,
    /// When the bucket being counted ends, in nanoseconds.
    next: u64,
    /// Per client.
    clients: Vec<Unhealthy>,
}

/// One client, for [`Collapse`].
#[derive(Clone, Debug)]
struct Unhealthy {
    client: usize,
    /// Its requests ended and succeeded when the bucket being counted began.
    ended: u64,
    succeeded: u64,
    /// Unhealthy buckets in a row, up to the last one closed.
    run: u32,
}

impl Collapse {
    fn new(setup: &Setup, running: &Running) -> Collapse {
        let width = setup.bucket.as_nanos().max(1);
        let sustain = setup.scenario.verdict.sustain.as_nanos();
        let clients = setup
            .scenario
            .clients
            .keys()
            .map(|name| Unhealthy {
                client: running
                    .client_index(name)
                    .expect("every client of the scenario is in its world"),
                ended: 0,
                succeeded: 0,
                run: 0,
            })
            .collect();
        Collapse {
            width,
            needed: sustain.div_ceil(width).max(1) as u32,
            healthy: setup.scenario.verdict.healthy_ratio,
            next: width,
            clients,
        }
    }

    /// After an event: closes the bucket it ended, if any (the requests ended up to this
    /// event count in it), and says whether a client has now been unhealthy long enough.
    fn collapsed(&mut self, running: &Running) -> bool {
        let now = running.now().as_nanos();
        if now < self.next {
            return false;
        }
        self.next = (now / self.width + 1) * self.width;
        let mut collapsed = false;
        for c in &mut self.clients {
            let ended = running.probe(Probe::ClientEnded(c.client));
            let succeeded = running.probe(Probe::ClientSucceeded(c.client));
            let (e, s) = (ended - c.ended, succeeded - c.succeeded);
            (c.ended, c.succeeded) = (ended, succeeded);
            if e == 0 {
                continue;
            }
            if (s as f64) < self.healthy * e as f64 {
                c.run += 1;
            } else {
                c.run = 0;
            }
            collapsed |= c.run >= self.needed;
        }
        collapsed
    }
}

impl Setup {
    /// An error when the estimate was cancelled (a Python caller's Ctrl-C): the message of
    /// [`ScenarioError::Cancelled`](crate::ScenarioError::Cancelled).
    pub fn not_cancelled(&self) -> Result<(), String> {
        match &self.control.cancel {
            Some(c) if c.is_cancelled() => Err(crate::ScenarioError::Cancelled {
                file: self.file.clone(),
            }
            .to_string()),
            _ => Ok(()),
        }
    }
}

/// A run of the scenario followed event by event.
#[derive(Clone)]
pub struct Path<'s> {
    /// The run; `None` once it ended and was judged.
    running: Option<Running<'s>>,
    watch: Watch,
    /// A spontaneous collapse's watch, for that event.
    collapse: Option<Box<Collapse>>,
    /// The run's seed, from which its branches' seeds derive.
    seed: u64,
    /// The events executed and the time when the run ended (read once `running` is gone).
    ended: (u64, SimTime),
    /// The estimate's cancel flag (a Python caller's Ctrl-C), which splitting looks at before
    /// every event ([`Trajectory::stopped`]).
    cancel: Option<&'s Cancel>,
}

impl<'s> Path<'s> {
    /// A fresh run of the estimate's scenario at `seed`, to its horizon.
    pub fn start(setup: &'s Setup, seed: u64) -> Result<Path<'s>, String> {
        setup.not_cancelled()?;
        let options = RunOptions {
            seed: Some(seed),
            duration: Some(setup.horizon),
            ..RunOptions::default()
        };
        let running =
            Running::start(&setup.scenario, &setup.file, &options).map_err(|e| e.to_string())?;
        let watch = Watch::of(&setup.event, &setup.importance, &running);
        let collapse =
            (setup.event == Event::Collapse).then(|| Box::new(Collapse::new(setup, &running)));
        Ok(Path {
            running: Some(running),
            watch,
            collapse,
            seed,
            ended: (0, SimTime::ZERO),
            cancel: setup.control.cancel.as_ref(),
        })
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The importance function's value now.
    pub fn importance(&self) -> u64 {
        self.running().probe(self.watch.importance)
    }

    fn running(&self) -> &Running<'s> {
        self.running
            .as_ref()
            .expect("a path that ended is not read")
    }

    /// Whether the run, now ended, is the event.
    fn judge(running: Running<'s>, judge: Judge) -> bool {
        let report = running.finish().report;
        match judge {
            Judge::Never => false,
            Judge::Expectation(i) => report.expectations.get(i).is_some_and(|e| !e.pass),
            Judge::Metastable => report
                .metastability
                .as_ref()
                .is_some_and(|m| matches!(m.verdict(), Verdict::Metastable | Verdict::Collapsed)),
        }
    }
}

impl Trajectory for Path<'_> {
    fn step(&mut self) -> Position {
        let running = self
            .running
            .as_mut()
            .expect("a path that ended is not stepped");
        if running.step().is_some() {
            self.ended = (running.events(), running.now());
            let running = self.running.take().expect("it was running");
            let reached = Path::judge(running, self.watch.judge);
            return Position::End { reached };
        }
        if let Some((probe, at_least)) = self.watch.hit
            && running.probe(probe) >= at_least
        {
            return Position::Hit;
        }
        if let Some(collapse) = &mut self.collapse
            && collapse.collapsed(running)
        {
            return Position::Hit;
        }
        Position::At(running.probe(self.watch.importance))
    }

    fn events(&self) -> u64 {
        self.running.as_ref().map_or(self.ended.0, Running::events)
    }

    fn time(&self) -> SimTime {
        self.running.as_ref().map_or(self.ended.1, Running::now)
    }

    fn branch(&mut self, level: u32, index: u64) {
        self.running
            .as_mut()
            .expect("a path that ended is not branched")
            .branch(level, index);
    }

    fn stopped(&self) -> bool {
        self.cancel.is_some_and(Cancel::is_cancelled)
    }
}
