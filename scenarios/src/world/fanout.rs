//! Fan-out calls (scatter-gather): a shell call that its owner sees, and `n` leaf calls to
//! the target, each through the whole stack (hedging included), gathered until `quorum` of
//! them succeed or too many failed for the quorum to be reached.
//!
//! ```text
//!  shell ──► leaf 1 ──► ok ─┐
//!        ├─► leaf 2 ──► ok ─┼─► quorum reached: the shell succeeds, leaves still out are
//!        ├─► ...            │   cancelled
//!        └─► leaf n ──► fail┘   more than n − quorum failed: the shell fails
//! ```
//!
//! The shell carries its gather ([`Carries::Gather`]), which holds each leaf's key and id
//! (16 bytes a leaf), so a fan-out of thousands costs its calls and little more, and the
//! gather ends with the shell; a scenario without fan-outs pays nothing for them.

use super::call::{Call, Carries, Owner};
use super::outcome::{Outcome, Reason};
use super::{C, CallKey, World};

/// The leaves of one fan-out call, carried by its shell ([`Carries::Gather`]).
#[derive(Debug, Clone)]
pub struct Gather {
    /// Each leaf's key and id (a cancelled leaf's key may be reused by another call).
    leaves: Vec<(CallKey, u64)>,
    /// Leaves to start.
    n: u32,
    /// Leaves started so far.
    started: u32,
    /// Successes needed.
    need: u32,
    ok: u32,
    failed: u32,
    /// Why the last leaf failed, for the shell's failure.
    last: Reason,
}

impl Gather {
    /// The heap bytes of its list of leaves.
    pub fn leaves_bytes(&self) -> usize {
        self.leaves.capacity() * std::mem::size_of::<(CallKey, u64)>()
    }
}

impl World {
    /// Starts the leaves of fan-out call `shell`.
    pub(super) fn start_gather(&mut self, ctx: C, shell: CallKey, n: u32, need: u32) {
        let (site, deadline, id) = {
            let c = &self.calls[shell];
            (c.site, c.deadline, c.id)
        };
        let gather = Gather {
            leaves: Vec::with_capacity(n as usize),
            n,
            started: 0,
            need,
            ok: 0,
            failed: 0,
            last: Reason::Dependency,
        };
        self.carry(shell, Carries::Gather(Box::new(gather)));
        for _ in 0..n {
            // A leaf that fails at once may decide the gather before the others start.
            let Some(g) = self.gather(shell, id) else {
                return;
            };
            g.started += 1;
            let leaf_id = self.next_call_id + 1;
            let leaf = self.start_call(ctx, site, Owner::Leaf { shell }, deadline);
            if self.calls.get(leaf).is_some_and(|c| c.id == leaf_id)
                && let Some(g) = self.gather(shell, id)
            {
                g.leaves.push((leaf, leaf_id));
            }
        }
    }

    /// The gather of shell `shell`, if the call with id `id` still is that shell.
    fn gather(&mut self, shell: CallKey, id: u64) -> Option<&mut Gather> {
        match self.calls.get_mut(shell) {
            Some(Call {
                carries: Carries::Gather(g),
                id: live,
                ..
            }) if *live == id => Some(g),
            _ => None,
        }
    }

    /// A leaf of `shell` ended with `outcome`.
    pub(super) fn leaf_done(&mut self, ctx: C, shell: CallKey, outcome: Outcome) {
        let Some(Call {
            carries: Carries::Gather(g),
            ..
        }) = self.calls.get_mut(shell)
        else {
            return;
        };
        assert!(
            g.ok + g.failed < g.started,
            "a gather hears from each leaf it started once"
        );
        match outcome {
            Outcome::Ok => g.ok += 1,
            Outcome::Fail(r) => {
                g.failed += 1;
                g.last = r;
            }
        }
        if g.ok >= g.need {
            self.finish_call(ctx, shell, Outcome::Ok, false);
        } else if g.failed > g.n - g.need {
            let last = g.last;
            self.finish_call(ctx, shell, Outcome::Fail(last), false);
        }
    }

    /// Ends the gather of a shell that is gone: leaves still out are cancelled.
    pub(super) fn end_gather(&mut self, ctx: C, gather: Gather) {
        debug_assert!(gather.leaves.len() as u32 <= gather.started);
        for (leaf, id) in gather.leaves {
            if self.calls.get(leaf).is_some_and(|c| c.id == id) {
                self.cancel_call(ctx, leaf);
            }
        }
    }
}
