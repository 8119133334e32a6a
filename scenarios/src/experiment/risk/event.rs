//! The event `resim risk` estimates the probability of (`--event`), and the importance
//! function that measures how close a run is to it (`--importance`), as the command line
//! writes them and as they are checked against the scenario.
//!
//! | form | event |
//! |---|---|
//! | `REASON:SERVICE` | the first attempt a service refuses or fails for that reason (`queue_full:api`) |
//! | `REASON:CLIENT` | the first request of a client that fails for that reason (`timeout:users`) |
//! | `queue:SERVICE>=DEPTH` | a service's queue, summed over its replicas, reaching a depth |
//! | `expectation:N` | the file's expectation `expectations[N]` (from 0, as `shrink --expectation` counts) failing, judged at the horizon |
//! | `metastable` | with a trigger on the timeline (a fault, a spike), the metastability verdict not a recovery, judged at the horizon; without one, a spontaneous collapse: a client unhealthy for the verdict's `sustain` in a row (see [`Event::Collapse`]) |
//!
//! A failure, a queue depth and a spontaneous collapse end a run when they happen (first
//! passage); an expectation and the verdict after a trigger are judged on the whole run. An importance function is a count the world keeps, read after every event
//! in constant time: `queue:SERVICE` (jobs waiting, over its replicas) or `queued` (over
//! every service). Each event has a default (see [`Event::default_importance`]).

use crate::figures::{REASONS, Reason};
use crate::format::schema::Scenario;
use crate::format::verdict::triggers;
use std::fmt;

/// Where a failure is counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Component {
    /// A service: the attempts it refused or failed.
    Service(String),
    /// A client: its requests that failed.
    Client(String),
}

/// What `resim risk` estimates the probability of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The first failure of `reason` at a component.
    Failure {
        /// Why it failed.
        reason: Reason,
        /// Where it is counted.
        at: Component,
    },
    /// A service's queue, summed over its replicas, reaching `depth`.
    Queue {
        /// The service.
        service: String,
        /// The depth.
        depth: u64,
    },
    /// The file's expectation at this index (`expectations[N]`) failing at the horizon.
    Expectation(usize),
    /// The metastability verdict not a recovery, in a scenario with a trigger.
    Metastable,
    /// `metastable` in a scenario without a trigger: a spontaneous collapse, watched as the
    /// run goes. The verdict's rule with the baseline a perfect one (nothing came before to
    /// measure it on): a client is unhealthy in a report bucket when fewer than
    /// `verdict.healthy_ratio` of its requests that ended in the bucket succeeded (a bucket
    /// where none ended says nothing), and the run has collapsed once a client has been
    /// unhealthy for `verdict.sustain` (in whole buckets) in a row.
    Collapse,
}

/// A count that measures how close a run is to the event; higher is closer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Importance {
    /// Jobs waiting at a service, over its replicas.
    Queue(String),
    /// Jobs waiting at every service.
    Queued,
}

/// Whether `name` is a service or a client of `scenario` (a service first: names are unique
/// within each map, and a service is where most events are counted).
fn component(scenario: &Scenario, name: &str) -> Option<Component> {
    if scenario.services.contains_key(name) {
        Some(Component::Service(name.to_string()))
    } else if scenario.clients.contains_key(name) {
        Some(Component::Client(name.to_string()))
    } else {
        None
    }
}

/// The names a user could have meant, for an error message.
fn names(scenario: &Scenario) -> String {
    let services: Vec<&str> = scenario.services.keys().map(String::as_str).collect();
    let clients: Vec<&str> = scenario.clients.keys().map(String::as_str).collect();
    format!(
        "its services are {} and its clients {}",
        list(&services),
        list(&clients)
    )
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

fn service(scenario: &Scenario, name: &str, flag: &str, text: &str) -> Result<String, String> {
    if scenario.services.contains_key(name) {
        Ok(name.to_string())
    } else {
        Err(format!(
            "{flag} {text:?}: the scenario has no service {name:?}; {}",
            names(scenario)
        ))
    }
}

const EVENT_FORMS: &str = "REASON:SERVICE or REASON:CLIENT (queue_full:api, timeout:users), \
     queue:SERVICE>=DEPTH, expectation:N or metastable";

impl Event {
    /// Reads `text` (the value of `--event`) against `scenario`; the error is one line in the
    /// user's words.
    pub fn parse(text: &str, scenario: &Scenario) -> Result<Event, String> {
        let text_trimmed = text.trim();
        if text_trimmed == "metastable" {
            return Ok(if triggers(scenario).is_empty() {
                Event::Collapse
            } else {
                Event::Metastable
            });
        }
        let Some((head, tail)) = text_trimmed.split_once(':') else {
            return Err(format!("--event {text:?}: expected {EVENT_FORMS}"));
        };
        match head {
            "expectation" => {
                let count = scenario.expectations.len();
                match tail.parse::<usize>() {
                    Ok(n) if n < count => Ok(Event::Expectation(n)),
                    _ if count == 0 => Err(format!(
                        "--event {text:?}: the scenario has no expectations; name a failure \
                         (queue_full:SERVICE) or a queue depth (queue:SERVICE>=DEPTH) instead"
                    )),
                    _ => Err(format!(
                        "--event {text:?}: expected the index of one of the scenario's {count} \
                         expectations, from 0 to {}",
                        count - 1
                    )),
                }
            }
            "queue" => {
                let Some((name, depth)) = tail.split_once(">=") else {
                    return Err(format!(
                        "--event {text:?}: a queue event is queue:SERVICE>=DEPTH, e.g. queue:api>=400"
                    ));
                };
                let service = service(scenario, name.trim(), "--event", text)?;
                match depth.trim().parse::<u64>() {
                    Ok(depth) if depth >= 1 => Ok(Event::Queue { service, depth }),
                    _ => Err(format!(
                        "--event {text:?}: expected a depth of at least 1 after >=, got {:?}",
                        depth.trim()
                    )),
                }
            }
            reason => {
                let Some(&reason) = REASONS.iter().find(|r| r.name() == reason) else {
                    let known: Vec<&str> = REASONS.iter().map(|r| r.name()).collect();
                    return Err(format!(
                        "--event {text:?}: {reason:?} is neither a failure reason nor queue, \
                         expectation or metastable; the reasons are {}",
                        known.join(", ")
                    ));
                };
                let name = tail.trim();
                let at = component(scenario, name).ok_or_else(|| {
                    format!(
                        "--event {text:?}: the scenario has no service or client {name:?}; {}",
                        names(scenario)
                    )
                })?;
                Ok(Event::Failure { reason, at })
            }
        }
    }

    /// Whether the event ends a run when it happens (a first passage) rather than being
    /// judged on the whole run at its horizon.
    pub fn is_first_passage(&self) -> bool {
        matches!(
            self,
            Event::Failure { .. } | Event::Queue { .. } | Event::Collapse
        )
    }

    /// The importance function used when `--importance` is not given: the queue of the
    /// service the event is at; for a client's failure and an event judged on the whole run,
    /// the jobs waiting everywhere (a request that waits longer anywhere on its path is closer
    /// to a timeout, and a retry storm fills queues).
    pub fn default_importance(&self) -> Importance {
        match self {
            Event::Failure {
                at: Component::Service(s),
                ..
            }
            | Event::Queue { service: s, .. } => Importance::Queue(s.clone()),
            Event::Failure {
                at: Component::Client(_),
                ..
            }
            | Event::Expectation(_)
            | Event::Metastable
            | Event::Collapse => Importance::Queued,
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Failure {
                reason,
                at: Component::Service(s) | Component::Client(s),
            } => write!(f, "{}:{s}", reason.name()),
            Event::Queue { service, depth } => write!(f, "queue:{service}>={depth}"),
            Event::Expectation(i) => write!(f, "expectation:{i}"),
            Event::Metastable | Event::Collapse => f.write_str("metastable"),
        }
    }
}

impl Importance {
    /// Reads `text` (the value of `--importance`) against `scenario`.
    pub fn parse(text: &str, scenario: &Scenario) -> Result<Importance, String> {
        let t = text.trim();
        match t.split_once(':') {
            None if t == "queued" => Ok(Importance::Queued),
            Some(("queue", name)) => Ok(Importance::Queue(service(
                scenario,
                name.trim(),
                "--importance",
                text,
            )?)),
            _ => Err(format!(
                "--importance {text:?}: expected queue:SERVICE or queued"
            )),
        }
    }
}

impl fmt::Display for Importance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Importance::Queue(s) => write!(f, "queue:{s}"),
            Importance::Queued => f.write_str("queued"),
        }
    }
}
