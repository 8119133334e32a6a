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
//! A gather holds each leaf's key and id (16 bytes a leaf), so a fan-out of thousands costs
//! its calls and little more; the event loop pays nothing for a scenario without one.

use super::call::Owner;
use super::outcome::{Outcome, Reason};
use super::{C, CallKey, World};

/// The leaves of one fan-out call.
#[derive(Debug)]
pub struct Gather {
    /// The shell's run-wide id.
    id: u64,
    /// Each leaf's key and id (a cancelled leaf's key may be reused by another call).
    leaves: Vec<(CallKey, u64)>,
    /// Leaves started.
    n: u32,
    /// Successes needed.
    need: u32,
    ok: u32,
    failed: u32,
    /// Why the last leaf failed, for the shell's failure.
    last: Reason,
}

impl World {
    /// Starts the leaves of fan-out call `shell`.
    pub(super) fn start_gather(&mut self, ctx: C, shell: CallKey, n: u32, need: u32) {
        let (site, deadline, id) = {
            let c = &self.calls[shell];
            (c.site, c.deadline, c.id)
        };
        self.gathers.insert(
            shell,
            Gather {
                id,
                leaves: Vec::with_capacity(n as usize),
                n,
                need,
                ok: 0,
                failed: 0,
                last: Reason::Dependency,
            },
        );
        for _ in 0..n {
            // A leaf that fails at once may decide the gather before the others start.
            if !self.gather_live(shell, id) {
                return;
            }
            let leaf_id = self.next_call_id + 1;
            let leaf = self.start_call(ctx, site, Owner::Leaf { shell }, deadline);
            if self.calls.get(leaf).is_some_and(|c| c.id == leaf_id)
                && let Some(g) = self.gathers.get_mut(shell)
            {
                g.leaves.push((leaf, leaf_id));
            }
        }
    }

    fn gather_live(&self, shell: CallKey, id: u64) -> bool {
        self.gathers.get(shell).is_some_and(|g| g.id == id)
    }

    /// A leaf of `shell` ended with `outcome`.
    pub(super) fn leaf_done(&mut self, ctx: C, shell: CallKey, outcome: Outcome) {
        let Some(g) = self.gathers.get_mut(shell) else {
            return;
        };
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
    pub(super) fn end_gather(&mut self, ctx: C, shell: CallKey) {
        let Some(g) = self.gathers.remove(shell) else {
            return;
        };
        for (leaf, id) in g.leaves {
            if self.calls.get(leaf).is_some_and(|c| c.id == id) {
                self.cancel_call(ctx, leaf);
            }
        }
    }
}
