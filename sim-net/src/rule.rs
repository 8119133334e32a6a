//! The rule hook: [`Rule`]s see each message as it is sent and return a [`Verdict`], for
//! faults the built-in ones do not express ("drop every third request to the primary",
//! "delay responses larger than 1 MB").
//!
//! Rules run in install order after the built-in send checks (crash, partition) and before
//! loss and latency are drawn. The first rule that says [`Verdict::Drop`] wins and the rules
//! after it do not see the message; delays of all the rules that say [`Verdict::Delay`] add
//! up. A rule that needs randomness owns its own stream (`Seed::stream("rule/<name>")`), so
//! installing it does not change the numbers the network draws.
//!
//! A network is a value: cloning it clones its rules ([`CloneRule`], which every `Clone`
//! rule has), and [`crate::Network::reseed`] hands each rule the branch seed through
//! [`Rule::reseed`]. A rule that owns a stream is a type of its own that reseeds it there: a
//! closure cannot, so a closure that draws random numbers would keep drawing the original's
//! numbers in every branch.

use crate::{NodeId, PacketId};
use sim_core::{Seed, SimDuration, SimTime};

/// What a rule decides about one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Let the message go on.
    Pass,
    /// Drop the message ([`crate::DropReason::Rule`]).
    Drop,
    /// Let it go on, arriving this much later than it otherwise would.
    Delay(SimDuration),
}

/// A message as a rule sees it.
#[derive(Debug)]
pub struct MessageView<'a, P> {
    /// The message's id.
    pub id: PacketId,
    /// The sending node.
    pub source: NodeId,
    /// The sending node's name.
    pub source_name: &'a str,
    /// The receiving node.
    pub target: NodeId,
    /// The receiving node's name.
    pub target_name: &'a str,
    /// Its size in bytes.
    pub size: u32,
    /// What it carries.
    pub payload: &'a P,
}

/// A custom fault: sees each message at send time and says pass, drop or delay.
///
/// Any `Clone` `FnMut(SimTime, &MessageView<P>) -> Verdict` closure is a rule (one that
/// draws no random numbers: see [`Rule::reseed`]).
pub trait Rule<P>: CloneRule<P> {
    /// Judges one message sent at `now`.
    fn judge(&mut self, now: SimTime, message: &MessageView<'_, P>) -> Verdict;

    /// Takes fresh randomness for a branch of a copied run: a rule that owns a stream calls
    /// [`sim_core::RngStream::reseed`] on it with `seed`. Rules that draw nothing keep the
    /// default, which does nothing.
    fn reseed(&mut self, seed: Seed) {
        let _ = seed;
    }
}

/// How an installed rule is copied with its network: every `Clone` rule has it. (A method
/// rather than the `dyn-clone` crate: these few lines are the whole of it, with no unsafe.)
pub trait CloneRule<P> {
    /// A boxed copy of this rule.
    fn clone_rule(&self) -> Box<dyn Rule<P>>;
}

impl<P, R> CloneRule<P> for R
where
    R: Rule<P> + Clone + 'static,
{
    fn clone_rule(&self) -> Box<dyn Rule<P>> {
        Box::new(self.clone())
    }
}

impl<P> Clone for Box<dyn Rule<P>> {
    fn clone(&self) -> Self {
        self.clone_rule()
    }
}

impl<P, F> Rule<P> for F
where
    F: FnMut(SimTime, &MessageView<'_, P>) -> Verdict + Clone + 'static,
{
    fn judge(&mut self, now: SimTime, message: &MessageView<'_, P>) -> Verdict {
        self(now, message)
    }
}

/// The handle of an installed rule, for [`crate::Network::remove_rule`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuleId(pub(crate) u32);
