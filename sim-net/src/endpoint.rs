//! The glue between a [`Network`] in a world's shared state and a handler's [`Ctx`]:
//! [`send`], [`receive`], and the fault controls that may release held messages.
//!
//! Each function lends the network's spare [`Outbox`] to the network call, then applies
//! the actions in order (schedule with [`Ctx::send_at`], fold notes with
//! [`Ctx::digest_note`]) and hands the outbox back, so the hot path allocates nothing.

use crate::fault::FaultId;
use crate::network::{Action, Network, NodeId, Outbox, SendOutcome};
use crate::packet::{Delivery, Inbound};
use sim_core::Ctx;

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

fn lend<M, S: NetworkHost>(ctx: &mut Ctx<'_, M, S>) -> Outbox<S::Payload> {
    std::mem::take(&mut ctx.shared.network().spare)
}

fn apply<M, S>(ctx: &mut Ctx<'_, M, S>, mut out: Outbox<S::Payload>)
where
    S: NetworkHost,
    M: From<Delivery<S::Payload>>,
{
    for action in out.drain() {
        match action {
            Action::Schedule {
                target,
                at,
                delivery,
            } => ctx.send_at(target, at, M::from(delivery)),
            Action::Note(word) => ctx.digest_note(word),
        }
    }
    ctx.shared.network().spare = out;
}

/// Sends `payload` (of `size` bytes) from `source` to `target` at `ctx.now()`; see
/// [`Network::transmit`].
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
    let now = ctx.now();
    let mut out = lend(ctx);
    let outcome = ctx
        .shared
        .network()
        .transmit(now, source, target, size, payload, &mut out);
    apply(ctx, out);
    outcome
}

/// Opens a network event addressed to this handler; see [`Network::arrive`]. Act on
/// [`Inbound::Delivered`]; everything else is the network's business (the digest already
/// has it).
pub fn receive<M, S>(ctx: &mut Ctx<'_, M, S>, delivery: Delivery<S::Payload>) -> Inbound<S::Payload>
where
    S: NetworkHost,
    M: From<Delivery<S::Payload>>,
{
    let now = ctx.now();
    let mut out = lend(ctx);
    let inbound = ctx.shared.network().arrive(now, delivery, &mut out);
    apply(ctx, out);
    inbound
}

/// Ends fault `id` now (a pending fault never starts) and releases what it held.
pub fn end_fault<M, S>(ctx: &mut Ctx<'_, M, S>, id: FaultId) -> bool
where
    S: NetworkHost,
    M: From<Delivery<S::Payload>>,
{
    let now = ctx.now();
    let mut out = lend(ctx);
    let ended = ctx.shared.network().end_fault(now, id, &mut out);
    apply(ctx, out);
    ended
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
    let now = ctx.now();
    let mut out = lend(ctx);
    let restarted = ctx.shared.network().restart(now, node, &mut out);
    apply(ctx, out);
    restarted
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
    let now = ctx.now();
    let mut out = lend(ctx);
    let resumed = ctx.shared.network().resume(now, node, &mut out);
    apply(ctx, out);
    resumed
}
