//! What travels: [`Delivery`] (the event payload the world's message type wraps) and
//! [`Arrived`] (what a handler gets when a message is handed over).

use crate::{LinkId, NodeId};
use sim_core::SimTime;

/// The id of a message, unique within a network; both copies of a duplicated message share
/// it. Ids are handed out in send order, so they are part of the replayed history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PacketId(pub u64);

/// One copy of a message on its way.
///
/// It travels in every event of the world's message type, which is as large as its largest
/// variant, so it keeps what the arrival needs in as few bytes as it can: the id and the copy
/// share one word, with a 32-byte payload the whole copy is 64 bytes.
#[derive(Clone, Debug)]
pub(crate) struct Packet<P> {
    /// The message's id shifted left by one, and 1 in the low bit for the extra copy of a
    /// duplicated message: the part of the event's digest word that names the copy.
    pub copy: u64,
    pub link: LinkId,
    pub sent_at: SimTime,
    /// The incarnations of both ends when it was sent: a crash in between bumps them, so
    /// the copy is recognised as lost when it arrives.
    pub source_incarnation: u32,
    pub target_incarnation: u32,
    pub size: u32,
    pub payload: P,
}

impl<P> Packet<P> {
    /// The word of `copy` for message `id` (the extra copy of a duplicate if `duplicate`).
    /// Ids count the messages sent, far below the 2^63 a word leaves them.
    #[inline]
    pub fn copy_of(id: PacketId, duplicate: bool) -> u64 {
        debug_assert!(
            id.0 < 1 << 63,
            "packet id {} does not leave room for the copy",
            id.0
        );
        (id.0 << 1) | u64::from(duplicate)
    }

    /// The message's id (shared by both copies of a duplicate).
    #[inline]
    pub fn id(&self) -> PacketId {
        PacketId(self.copy >> 1)
    }

    /// True for the extra copy of a duplicated message.
    #[inline]
    pub fn duplicate(&self) -> bool {
        self.copy & 1 == 1
    }
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
            Inner::Packet(p) => KIND_PACKET ^ p.copy ^ (u64::from(p.link.0) << 40),
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
