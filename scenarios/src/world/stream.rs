//! A random stream derived from the run seed and its name on its first draw, as sim-net's
//! links' are: the name alone fixes the numbers (see `sim_core::Seed::stream`), so a stream
//! derived late yields the same ones as one derived with the world, and a component that
//! never draws from it holds a few words instead of a ChaCha state (304 bytes).

use sim_core::{RngStream, Seed};
use std::sync::Arc;

/// A stream named `{prefix}/{purpose}` (indexed by `index`, when there is one), not derived
/// until its first draw.
#[derive(Debug, Clone)]
pub struct LazyStream {
    seed: Seed,
    /// Shared by the streams of one component (a call site's path).
    prefix: Arc<str>,
    purpose: &'static str,
    /// The member of a group it belongs to (the replica of a calling service).
    index: Option<u32>,
    stream: Option<Box<RngStream>>,
}

impl LazyStream {
    /// The stream `{prefix}/{purpose}` of `seed`, indexed by `index` if given.
    pub fn new(seed: Seed, prefix: Arc<str>, purpose: &'static str, index: Option<u32>) -> Self {
        LazyStream {
            seed,
            prefix,
            purpose,
            index,
            stream: None,
        }
    }

    /// The stream, derived now if this is its first draw.
    #[inline]
    pub fn get(&mut self) -> &mut RngStream {
        let LazyStream {
            seed,
            prefix,
            purpose,
            index,
            stream,
        } = self;
        stream.get_or_insert_with(|| {
            let name = format!("{prefix}/{purpose}");
            Box::new(match index {
                None => seed.stream(&name),
                Some(i) => seed.indexed_stream(&name, u64::from(*i)),
            })
        })
    }

    /// Takes `seed` (a branch's): the stream reseeded if it was drawn from, else derived
    /// from `seed` on its first draw, which gives the same numbers.
    pub fn reseed(&mut self, seed: Seed) {
        self.seed = seed;
        if let Some(stream) = &mut self.stream {
            stream.reseed(seed);
        }
    }
}
