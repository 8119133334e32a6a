//! What travels: [`Delivery`] (the event payload the world's message type wraps) and
//! [`Arrived`] (what a handler gets when a message is handed over).

use crate::{LinkId, NodeId};
use sim_core::SimTime;

/// The id of a message, unique within a network; both copies of a duplicated message share
/// it. Ids are handed out in send order, so they are part of the replayed history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PacketId(pub u64);

/// One copy of a message on its way.
#[derive(Clone, Debug)]
pub(crate) struct Packet<P> {
    pub id: PacketId,
    pub link: LinkId,
    pub sent_at: SimTime,
    /// The incarnations of both ends when it was sent: a crash in between bumps them, so
    /// the copy is recognised as lost when it arrives.
    pub source_incarnation: u32,
    pub target_incarnation: u32,
    pub size: u32,
    /// True for the extra copy of a duplicated message.
    pub duplicate: bool,
    pub payload: P,
}

/// A network event: a message copy reaching the end of its link, or the network's own
/// wake-up to hand over held messages. The world's message type wraps it
/// (`impl From<Delivery<P>> for Msg`) and hands it back to [`crate::receive`] unopened.
#[derive(Clone, Debug)]
pub struct Delivery<P>(pub(crate) Inner<P>);

#[derive(Clone, Debug)]
pub(crate) enum Inner<P> {
    Packet(Packet<P>),
    Release(LinkId),
}

/// Tags that keep network words in the digest apart from the model's own.
const KIND_PACKET: u64 = 0x6e65_7400_0000_0000;
const KIND_RELEASE: u64 = 0x6e65_7401_0000_0000;

impl<P> Delivery<P> {
    /// The word this event contributes to the run digest (for the world's
    /// [`sim_core::Message::kind`]): it names the message and the copy, so two runs that
    /// deliver different messages at the same instants still differ.
    pub fn kind(&self) -> u64 {
        match &self.0 {
            Inner::Packet(p) => {
                KIND_PACKET ^ (p.id.0 << 1) ^ u64::from(p.duplicate) ^ (u64::from(p.link.0) << 40)
            }
            Inner::Release(link) => KIND_RELEASE ^ u64::from(link.0),
        }
    }

    /// What the copy carries, to describe the event (a trace); `None` for the network's
    /// wake-up to release held messages. Whether the copy is handed over is still
    /// [`crate::receive`]'s decision.
    pub fn payload(&self) -> Option<&P> {
        match &self.0 {
            Inner::Packet(p) => Some(&p.payload),
            Inner::Release(_) => None,
        }
    }
}

/// A message handed over to its target.
#[derive(Clone, Debug, PartialEq)]
pub struct Arrived<P> {
    /// The message's id (shared by both copies of a duplicate).
    pub id: PacketId,
    /// The node that sent it.
    pub source: NodeId,
    /// The node that receives it.
    pub target: NodeId,
    /// When it was sent.
    pub sent_at: SimTime,
    /// Its size in bytes.
    pub size: u32,
    /// True for the extra copy of a duplicated message.
    pub duplicate: bool,
    /// What it carries.
    pub payload: P,
}

/// What [`crate::receive`] made of a network event.
#[derive(Clone, Debug, PartialEq)]
pub enum Inbound<P> {
    /// The message is handed over: the handler should act on it.
    Delivered(Arrived<P>),
    /// The copy was lost on arrival (crash or partition since it was sent).
    Dropped {
        /// The message's id.
        id: PacketId,
        /// Why.
        reason: crate::DropReason,
    },
    /// The copy waits at the end of its link (clog, paused target, or messages ahead of
    /// it waiting); the network hands it over later with an event of its own.
    Held {
        /// The message's id.
        id: PacketId,
    },
    /// A network wake-up that had nothing to hand over.
    Idle,
}

impl<P> Inbound<P> {
    /// The handed-over message, if this is one.
    pub fn delivered(self) -> Option<Arrived<P>> {
        match self {
            Inbound::Delivered(a) => Some(a),
            _ => None,
        }
    }
}
