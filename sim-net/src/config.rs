//! What a scenario file says about the network: [`NetworkConfig`], [`LinkConfig`],
//! [`FaultConfig`], and the [`ConfigError`] every `validate()` returns.
//!
//! Configs refer to nodes by name; [`crate::Network::configure`] resolves the names once the
//! world has registered its nodes. Every config can be checked on its own first
//! (`validate()`), which is what `resim check` needs: names are the only thing left to check
//! when the topology is known.

use serde::{Deserialize, Serialize};
use sim_core::{Dist, SimDuration};

/// The error every `validate()` here returns: sim-core's [`ConfigError`], so a scenario
/// prefixes it with [`ConfigError::at`] and it reads `network.links[0].link.loss_ratio: ...`.
pub use sim_core::ConfigError;

/// Checks that a `_ratio` field lies in [0, 1].
pub(crate) fn check_ratio(field: &str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be between 0 and 1, got {value}"),
        ))
    }
}

/// Checks a latency distribution, with the error's field put under `field`.
fn check_dist(field: &str, dist: &Dist) -> Result<(), ConfigError> {
    dist.validate().map_err(|e| e.at(field))
}

/// The behaviour of one directed link (source → target).
///
/// Every field has a default, so a scenario writes only what differs:
///
/// ```ron
/// (latency: LogNormal(median: "2ms", p99: "20ms"), loss_ratio: 0.01)
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkConfig {
    /// Propagation delay of each message (any sim-core distribution). Default: 1ms constant.
    pub latency: Dist,
    /// Share of messages lost on the way, drawn independently per message. Default 0.
    pub loss_ratio: f64,
    /// Share of transmitted messages that arrive twice (the copy draws its own latency).
    /// Default 0.
    pub duplicate_ratio: f64,
    /// Whether a later message may overtake an earlier one. Default:
    /// [`LinkOrder::Independent`], so each message's latency is a draw of `latency` and
    /// nothing else; [`LinkOrder::Fifo`] is the choice "as on one TCP connection".
    pub order: LinkOrder,
    /// Limited bandwidth with a bounded send queue; absent means unlimited. Default: absent.
    pub bandwidth: Option<BandwidthConfig>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            latency: Dist::constant(SimDuration::from_millis(1)),
            loss_ratio: 0.0,
            duplicate_ratio: 0.0,
            order: LinkOrder::Independent,
            bandwidth: None,
        }
    }
}

impl LinkConfig {
    /// A link with the given latency and nothing else (each message draws its own delay, no
    /// loss, unlimited bandwidth).
    pub fn with_latency(latency: Dist) -> Self {
        LinkConfig {
            latency,
            ..LinkConfig::default()
        }
    }

    /// Checks every field; the error names the field and the fix.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_dist("latency", &self.latency)?;
        check_ratio("loss_ratio", self.loss_ratio)?;
        check_ratio("duplicate_ratio", self.duplicate_ratio)?;
        if let LinkOrder::Reorder {
            reordered_ratio,
            extra_delay,
        } = &self.order
        {
            check_ratio("order.reordered_ratio", *reordered_ratio)?;
            check_dist("order.extra_delay", extra_delay)?;
        }
        if let Some(bandwidth) = &self.bandwidth {
            bandwidth.validate().map_err(|e| e.at("bandwidth"))?;
        }
        Ok(())
    }
}

/// Whether messages on a link keep their send order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum LinkOrder {
    /// Messages arrive in the order they were sent: a message whose latency draw would make
    /// it overtake an earlier one waits for it (its arrival is clamped to the link's last
    /// arrival), as on one TCP connection. Under load this is head-of-line blocking: with
    /// many messages in flight each one waits for the slowest earlier draw, so the delivered
    /// latency is much longer than the declared one (with a varying latency only; a constant
    /// one never reorders).
    Fifo,
    /// Each message's latency is drawn on its own and nothing is clamped, so the delivered
    /// latency is the declared distribution, and jitter alone may reorder messages, as with
    /// datagrams or requests spread over many connections. The default.
    Independent,
    /// Like `Independent`, and in addition a share of the messages is held back by an extra
    /// random delay (a route change, a retransmission below us).
    Reorder {
        /// Share of messages that get the extra delay.
        reordered_ratio: f64,
        /// The extra delay of those messages.
        extra_delay: Dist,
    },
}

/// A link with limited bandwidth: each message occupies the link for `size /
/// bytes_per_second` (its serialization delay), and messages that find the link busy wait
/// in a queue of at most `queue_capacity` messages; a message that finds the queue full is
/// dropped (tail drop).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BandwidthConfig {
    /// Bytes the link transmits per second; at least 1.
    pub bytes_per_second: u64,
    /// Messages that may wait or be in transmission at once (the one on the wire counts).
    /// Default 1000, Linux's default `txqueuelen`.
    #[serde(default = "default_queue_capacity")]
    pub queue_capacity: u32,
}

fn default_queue_capacity() -> u32 {
    1000
}

impl BandwidthConfig {
    /// Checks every field; the error names the field and the fix.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.bytes_per_second == 0 {
            return Err(ConfigError::new(
                "bytes_per_second",
                "must be at least 1, got 0 (leave bandwidth out for an unlimited link)",
            ));
        }
        if self.queue_capacity == 0 {
            return Err(ConfigError::new(
                "queue_capacity",
                "must be at least 1, got 0 (the message on the wire counts as one)",
            ));
        }
        Ok(())
    }
}

/// The settings of one link, or of a pair of links, that differ from the default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkOverride {
    /// The source node's name.
    pub from: String,
    /// The target node's name.
    pub to: String,
    /// If true only `from → to` gets these settings; otherwise `to → from` gets them too.
    #[serde(default)]
    pub one_way: bool,
    /// The settings.
    pub link: LinkConfig,
}

/// A fault with a time window: it starts at `start` (since the start of the run) and ends
/// at `end`, or lasts to the end of the run when `end` is absent.
///
/// ```ron
/// (start: "10s", end: "25s", kind: Partition(from: ["api"], to: ["db"]))
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultConfig {
    /// When the fault starts, since the start of the run.
    pub start: SimDuration,
    /// When it ends, since the start of the run; absent means never.
    #[serde(default)]
    pub end: Option<SimDuration>,
    /// What goes wrong.
    pub kind: FaultKind,
}

/// What goes wrong during a fault.
///
/// The link faults (`Partition`, `Degrade`, `Clog`) select links between two groups of
/// nodes: every link from a node in `from` to a node in `to`, and, unless `one_way`, the
/// links back. An empty `to` means every node not in `from`, which isolates `from` from the
/// rest of the network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum FaultKind {
    /// The selected links lose every message: those sent while the partition is active and
    /// those still in flight when it starts.
    Partition {
        /// One side.
        from: Vec<String>,
        /// The other side; empty means every node not in `from`.
        #[serde(default)]
        to: Vec<String>,
        /// Cut only `from → to`.
        #[serde(default)]
        one_way: bool,
    },
    /// The selected links get slower and lossier for messages sent while it is active.
    Degrade {
        /// One side.
        from: Vec<String>,
        /// The other side; empty means every node not in `from`.
        #[serde(default)]
        to: Vec<String>,
        /// Degrade only `from → to`.
        #[serde(default)]
        one_way: bool,
        /// Each latency draw is multiplied by this. Default 1.
        #[serde(default = "one")]
        latency_factor: f64,
        /// Added to each latency draw (after the factor). Default 0s.
        #[serde(default)]
        latency_added: SimDuration,
        /// Extra loss, independent of the link's own. Default 0.
        #[serde(default)]
        loss_ratio: f64,
    },
    /// Messages that reach the end of a selected link are held there, in order, and handed
    /// over when the clog ends (a stalled TCP connection, a full receive buffer). The hold
    /// is unbounded: everything sent over the link while it is clogged waits.
    Clog {
        /// One side.
        from: Vec<String>,
        /// The other side; empty means every node not in `from`.
        #[serde(default)]
        to: Vec<String>,
        /// Clog only `from → to`.
        #[serde(default)]
        one_way: bool,
    },
    /// The node is down from `start` to `end` (its restart): messages in flight to or from
    /// it are lost, messages sent to or by it while it is down are dropped.
    Crash {
        /// The node's name.
        node: String,
    },
    /// The node stops taking messages from `start` to `end` (a long GC pause, SIGSTOP):
    /// messages that reach it are held (unbounded) and handed over, in order, when it
    /// resumes. The node's own timers are the world's business: a world that models the
    /// pause fully checks [`crate::Network::node_status`] before acting.
    Pause {
        /// The node's name.
        node: String,
    },
}

fn one() -> f64 {
    1.0
}

impl FaultConfig {
    /// A fault of `kind` from `start` to `end` (since the start of the run).
    pub fn new(start: SimDuration, end: Option<SimDuration>, kind: FaultKind) -> Self {
        FaultConfig { start, end, kind }
    }

    /// Checks every field except node names; the error names the field and the fix.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(end) = self.end
            && end <= self.start
        {
            return Err(ConfigError::new(
                "end",
                format!(
                    "must be after start ({}), got {end} (leave end out for a fault that lasts to the end of the run)",
                    self.start
                ),
            ));
        }
        self.kind.validate().map_err(|e| e.at("kind"))
    }
}

impl FaultKind {
    /// A symmetric partition between two groups of nodes.
    pub fn partition(from: &[&str], to: &[&str]) -> Self {
        FaultKind::Partition {
            from: names(from),
            to: names(to),
            one_way: false,
        }
    }

    /// A clog of the links between two groups (both ways).
    pub fn clog(from: &[&str], to: &[&str]) -> Self {
        FaultKind::Clog {
            from: names(from),
            to: names(to),
            one_way: false,
        }
    }

    /// A crash of `node` (the fault's end is its restart).
    pub fn crash(node: &str) -> Self {
        FaultKind::Crash {
            node: node.to_string(),
        }
    }

    /// A pause of `node` (the fault's end is its resumption).
    pub fn pause(node: &str) -> Self {
        FaultKind::Pause {
            node: node.to_string(),
        }
    }

    /// Checks every field except node names.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            FaultKind::Partition { from, .. } | FaultKind::Clog { from, .. } => check_from(from),
            FaultKind::Degrade {
                from,
                latency_factor,
                loss_ratio,
                ..
            } => {
                check_from(from)?;
                if !(latency_factor.is_finite() && *latency_factor > 0.0) {
                    return Err(ConfigError::new(
                        "latency_factor",
                        format!("must be a positive finite number, got {latency_factor}"),
                    ));
                }
                check_ratio("loss_ratio", *loss_ratio)
            }
            FaultKind::Crash { node } | FaultKind::Pause { node } => {
                if node.is_empty() {
                    Err(ConfigError::new("node", "must name a node, got \"\""))
                } else {
                    Ok(())
                }
            }
        }
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn check_from(from: &[String]) -> Result<(), ConfigError> {
    if from.is_empty() {
        Err(ConfigError::new(
            "from",
            "must name at least one node (an empty `to` means every other node)",
        ))
    } else {
        Ok(())
    }
}

/// Everything a scenario says about its network.
///
/// ```ron
/// (
///     default_link: (latency: LogNormal(median: "1ms", p99: "10ms")),
///     links: [(from: "api", to: "db", link: (latency: Constant(value: "5ms")))],
///     faults: [(start: "10s", end: "20s", kind: Crash(node: "db"))],
/// )
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkConfig {
    /// The settings of every link not listed in `links`.
    pub default_link: LinkConfig,
    /// Links with their own settings; a later entry overrides an earlier one.
    pub links: Vec<LinkOverride>,
    /// The fault timeline.
    pub faults: Vec<FaultConfig>,
}

impl NetworkConfig {
    /// Checks everything except node names; the error names the field path and the fix.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.default_link
            .validate()
            .map_err(|e| e.at("default_link"))?;
        for (i, link) in self.links.iter().enumerate() {
            link.link
                .validate()
                .map_err(|e| e.at(&format!("links[{i}].link")))?;
        }
        for (i, fault) in self.faults.iter().enumerate() {
            fault
                .validate()
                .map_err(|e| e.at(&format!("faults[{i}]")))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
        ron::Options::default()
            .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
            .from_str(text)
            .map_err(|e| e.to_string())
    }

    fn check(text: &str) -> String {
        match parse::<NetworkConfig>(text) {
            Err(e) => format!("parse: {e}"),
            Ok(config) => match config.validate() {
                Ok(()) => "ok".to_string(),
                Err(e) => e.to_string(),
            },
        }
    }

    #[test]
    fn a_full_config_parses_and_validates() {
        let text = r#"(
            default_link: (latency: LogNormal(median: "1ms", p99: "10ms"), loss_ratio: 0.01),
            links: [(from: "api", to: "db", one_way: true, link: (
                latency: Constant(value: "5ms"),
                duplicate_ratio: 0.001,
                order: Reorder(reordered_ratio: 0.1, extra_delay: Exponential(mean: "3ms")),
                bandwidth: (bytes_per_second: 1250000),
            ))],
            faults: [
                (start: "10s", end: "20s", kind: Partition(from: ["api"], to: ["db"], one_way: true)),
                (start: "1s", kind: Degrade(from: ["api"], latency_factor: 3, loss_ratio: 0.2)),
                (start: "2s", end: "3s", kind: Clog(from: ["a", "b"], to: ["c"])),
                (start: "4s", end: "6s", kind: Crash(node: "db")),
                (start: "5s", end: "5.5s", kind: Pause(node: "api")),
            ],
        )"#;
        assert_eq!(check(text), "ok");
        let config: NetworkConfig = parse(text).unwrap();
        assert_eq!(
            config.links[0]
                .link
                .bandwidth
                .as_ref()
                .unwrap()
                .queue_capacity,
            1000
        );
        assert_eq!(config.faults[1].end, None);
    }

    #[test]
    fn errors_name_the_field_path_and_the_fix() {
        let cases = [
            (
                "(default_link: (loss_ratio: 1.5))",
                "default_link.loss_ratio: must be between 0 and 1, got 1.5",
            ),
            (
                r#"(links: [(from: "a", to: "b", link: (latency: Exponential(mean: "0s")))])"#,
                "links[0].link.latency.mean: must be greater than 0s (use Constant(value: \"0s\") for no delay)",
            ),
            (
                r#"(default_link: (bandwidth: (bytes_per_second: 0)))"#,
                "default_link.bandwidth.bytes_per_second: must be at least 1, got 0 (leave bandwidth out for an unlimited link)",
            ),
            (
                r#"(default_link: (order: Reorder(reordered_ratio: -0.1, extra_delay: Constant(value: "1ms"))))"#,
                "default_link.order.reordered_ratio: must be between 0 and 1, got -0.1",
            ),
            (
                r#"(faults: [(start: "2s", end: "1s", kind: Crash(node: "db"))])"#,
                "faults[0].end: must be after start (2s), got 1s (leave end out for a fault that lasts to the end of the run)",
            ),
            (
                r#"(faults: [(start: "2s", kind: Partition(from: []))])"#,
                "faults[0].kind.from: must name at least one node (an empty `to` means every other node)",
            ),
            (
                r#"(faults: [(start: "2s", kind: Degrade(from: ["a"], latency_factor: 0))])"#,
                "faults[0].kind.latency_factor: must be a positive finite number, got 0",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(check(text), expected, "{text}");
        }
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let out = check("(default_link: (los_ratio: 0.1))");
        assert!(
            out.starts_with("parse:") && out.contains("los_ratio"),
            "{out}"
        );
    }
}
