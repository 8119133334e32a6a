//! The glue between a [`Network`] in a world's shared state and a handler's [`Ctx`]:
//! [`send`], [`receive`], and the fault controls that may release held messages.
//!
//! Each function splits the context into the shared state and its [`Scheduler`], and hands
//! the network a [`Sink`] that schedules each delivery straight into the event queue (with
//! [`Scheduler::send_at`]) and folds each note into the digest, in the order the network
//! decides them: nothing is buffered, so the hot path neither allocates nor moves a message
//! more than once.

use crate::fault::FaultId;
use crate::network::{Network, NodeId, SendOutcome, Sink};
use crate::packet::{Delivery, Inbound};
use sim_core::{Ctx, EntityId, Scheduler, SimTime};

/// A world's shared state that holds a network. A [`Network`] is one itself, for worlds
/// whose only shared state is the network.
pub trait NetworkHost {
    /// What the world's messages carry.
    type Payload;
    /// The network.
    fn network(&mut self) -> &mut Network<Self::Payload>;
}

impl<P> NetworkHost for Network<P> {
    type Payload = P;
    fn network(&mut self) -> &mut Network<P> {
        self
    }
}

/// The event queue as a [`Sink`]: deliveries become the world's messages at once.
struct Direct<'a, 'b, M>(&'a mut Scheduler<'b, M>);

impl<P, M: From<Delivery<P>>> Sink<P> for Direct<'_, '_, M> {
    #[inline]
    fn schedule(&mut self, target: EntityId, at: SimTime, delivery: Delivery<P>) {
        self.0.send_at(target, at, M::from(delivery));
    }

    #[inline]
    fn note(&mut self, word: u64) {
        self.0.digest_note(word);
    }
}

/// Runs `f` on the network with a sink into `ctx`'s event queue.
#[inline]
fn with_network<M, S, R>(
    ctx: &mut Ctx<'_, M, S>,
    f: impl FnOnce(&mut Network<S::Payload>, SimTime, &mut Direct<'_, '_, M>) -> R,
) -> R
where
    S: NetworkHost,
    M: From<Delivery<S::Payload>>,
{
    let now = ctx.now();
    let (shared, mut scheduler) = ctx.split();
    f(shared.network(), now, &mut Direct(&mut scheduler))
}

/// Sends `payload` (of `size` bytes) from `source` to `target` at `ctx.now()`; see
/// [`Network::transmit`].
#[inline]
pub fn send<M, S>(
    ctx: &mut Ctx<'_, M, S>,
    source: NodeId,
    target: NodeId,
    size: u32,
    payload: S::Payload,
) -> SendOutcome
where
    S: NetworkHost,
    S::Payload: Clone,
    M: From<Delivery<S::Payload>>,
{
    with_network(ctx, |net, now, out| {
        net.transmit(now, source, target, size, payload, out)
    })
}

/// Opens a network event addressed to this handler; see [`Network::arrive`]. Act on
/// [`Inbound::Delivered`]; everything else is the network's business (the digest already
/// has it).
#[inline]
pub fn receive<M, S>(ctx: &mut Ctx<'_, M, S>, delivery: Delivery<S::Payload>) -> Inbound<S::Payload>
where
    S: NetworkHost,
    M: From<Delivery<S::Payload>>,
{
    with_network(ctx, |net, now, out| net.arrive(now, delivery, out))
}

/// Ends fault `id` now (a pending fault never starts) and releases what it held.
pub fn end_fault<M, S>(ctx: &mut Ctx<'_, M, S>, id: FaultId) -> bool
where
    S: NetworkHost,
    M: From<Delivery<S::Payload>>,
{
    with_network(ctx, |net, now, out| net.end_fault(now, id, out))
}

/// Crashes `node` now, until [`restart`].
pub fn crash<M, S: NetworkHost>(ctx: &mut Ctx<'_, M, S>, node: NodeId) -> FaultId {
    let now = ctx.now();
    ctx.shared.network().crash(now, node)
}

/// Restarts `node` now; false if it was up.
pub fn restart<M, S>(ctx: &mut Ctx<'_, M, S>, node: NodeId) -> bool
where
    S: NetworkHost,
    M: From<Delivery<S::Payload>>,
{
    with_network(ctx, |net, now, out| net.restart(now, node, out))
}

/// Pauses `node` now, until [`resume`].
pub fn pause<M, S: NetworkHost>(ctx: &mut Ctx<'_, M, S>, node: NodeId) -> FaultId {
    let now = ctx.now();
    ctx.shared.network().pause(now, node)
}

/// Resumes `node` now and hands over what it held; false if it was not paused.
pub fn resume<M, S>(ctx: &mut Ctx<'_, M, S>, node: NodeId) -> bool
where
    S: NetworkHost,
    M: From<Delivery<S::Payload>>,
{
    with_network(ctx, |net, now, out| net.resume(now, node, out))
}
