//! Named random streams: [`Seed`] derives one [`RngStream`] per stable name.
//!
//! Every random number in a run comes from a ChaCha8 stream keyed by the run seed and
//! selected by a hash of a stable name such as `"client/users"`. Because the name, not the
//! order of creation, picks the stream, adding or removing a component leaves the numbers of
//! every other component unchanged. That is what makes a replay exact after an unrelated edit,
//! and what makes an A/B comparison of two policies fair: both runs see the same arrivals and
//! the same work times (common random numbers).
//!
//! The derivation is part of the replay contract: the key is the seed expanded with
//! SplitMix64, the ChaCha stream id is the 64-bit FNV-1a hash of the name. A test pins the first
//! outputs of a few streams, so that a dependency upgrade that changes them fails loudly.
//!
//! **Branches.** A run copied mid-way (a world is a value) can go on with fresh randomness:
//! [`Seed::branch`] derives the seed of branch `index` at `level` from the run seed, and
//! [`RngStream::reseed`] gives a stream that seed's key while keeping its identity (the
//! hash of its name, or its indexed id) and starting it at its first number. A reseeded
//! stream is the stream of the same name derived from the branch seed, so a branched run is
//! replayed from the run seed and its branch points alone, and the streams of one branch
//! stay as independent of each other as those of a run.

use core::convert::Infallible;
use rand_chacha::ChaCha8Rng;
use rand_core::{SeedableRng, TryRng};

/// The seed of a run; hands out the named streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Seed(pub u64);

/// One named, reproducible stream of random numbers (ChaCha8).
#[derive(Clone)]
pub struct RngStream {
    inner: ChaCha8Rng,
}

/// Shows which seed keys the stream (the key's first word: [`Seed::fingerprint`]) and its
/// identity, not its position: enough for a test to find a stream a branch forgot.
impl core::fmt::Debug for RngStream {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let key = self.inner.get_seed();
        let first = u64::from_le_bytes(key[..8].try_into().expect("a key has 32 bytes"));
        write!(
            f,
            "RngStream {{ key: {first:#018x}, stream: {:#018x} }}",
            self.inner.get_stream()
        )
    }
}

/// SplitMix64's output function: a bijective mixer with good avalanche.
pub(crate) const fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// 64-bit FNV-1a over the bytes of `name`.
pub const fn fnv1a64(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

impl Seed {
    /// The 32-byte ChaCha key of this seed.
    fn key(self) -> [u8; 32] {
        let mut key = [0u8; 32];
        let mut state = self.0;
        for chunk in key.chunks_exact_mut(8) {
            state = splitmix64(state);
            chunk.copy_from_slice(&state.to_le_bytes());
        }
        key
    }

    /// The first word of this seed's key, as a stream's `Debug` shows it: a test that
    /// looks for streams still keyed by a seed (a stream a branch forgot) searches for it.
    pub fn fingerprint(self) -> String {
        format!("{:#018x}", splitmix64(self.0))
    }

    /// The stream called `name`. The same (seed, name) always gives the same numbers.
    pub fn stream(self, name: &str) -> RngStream {
        let mut inner = ChaCha8Rng::from_seed(self.key());
        inner.set_stream(fnv1a64(name));
        RngStream { inner }
    }

    /// The stream called `name/index`, for the members of a group (replica 3 of a service,
    /// user 17 of a client) without allocating the composed name.
    pub fn indexed_stream(self, name: &str, index: u64) -> RngStream {
        let mut inner = ChaCha8Rng::from_seed(self.key());
        inner.set_stream(splitmix64(fnv1a64(name) ^ splitmix64(index)));
        RngStream { inner }
    }

    /// A seed derived from this one for the `index`th run of a sweep or batch.
    pub fn derive(self, index: u64) -> Seed {
        Seed(splitmix64(self.0 ^ splitmix64(index.wrapping_add(1))))
    }

    /// The seed of branch `index` at splitting level `level` of a run with this seed. The
    /// same (seed, level, index) always gives the same branch seed; for one level, distinct
    /// indices give distinct seeds (each step is a bijection of the index), and the words
    /// mixed in first set branch seeds apart from [`Seed::derive`]'s.
    pub fn branch(self, level: u32, index: u64) -> Seed {
        let root = splitmix64(self.0 ^ BRANCH_DOMAIN);
        let level = splitmix64(root ^ u64::from(level));
        Seed(splitmix64(level ^ splitmix64(index)))
    }
}

/// Mixed into the run seed before a branch seed is derived from it: "branch" in ASCII.
const BRANCH_DOMAIN: u64 = 0x6272_616e_6368_0000;

impl RngStream {
    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        rand_core::Rng::next_u64(&mut self.inner)
    }

    /// The next 32 random bits.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        rand_core::Rng::next_u32(&mut self.inner)
    }

    /// Takes the key of `seed` and starts over at the first number, keeping this stream's
    /// identity (its name's hash or indexed id): the stream is then the one of the same name
    /// that `seed` hands out. Used to branch a copied run ([`Seed::branch`]).
    pub fn reseed(&mut self, seed: Seed) {
        let stream = self.inner.get_stream();
        self.inner = ChaCha8Rng::from_seed(seed.key());
        self.inner.set_stream(stream);
    }

    /// The raw ChaCha8 generator, for code that wants the `rand_core` traits directly.
    pub fn as_chacha(&mut self) -> &mut ChaCha8Rng {
        &mut self.inner
    }
}

impl TryRng for RngStream {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        self.inner.try_next_u32()
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        self.inner.try_next_u64()
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.inner.try_fill_bytes(dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_name_same_numbers_other_name_other_numbers() {
        let seed = Seed(7);
        let a: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(seed.stream("a"), |r, _| Some(r.next_u64()))
            .collect();
        let a2: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(seed.stream("a"), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(seed.stream("b"), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, a2);
        assert_ne!(a, b);
        let mut other_seed = Seed(8).stream("a");
        assert_ne!(a[0], other_seed.next_u64());
    }

    #[test]
    fn indexed_streams_differ_from_each_other() {
        let seed = Seed(1);
        let firsts: Vec<u64> = (0..16)
            .map(|i| seed.indexed_stream("users", i).next_u64())
            .collect();
        let mut sorted = firsts.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), firsts.len());
    }

    #[test]
    fn a_reseeded_stream_is_the_stream_of_its_name_from_the_new_seed() {
        let first4 = |mut s: RngStream| -> Vec<u64> { (0..4).map(|_| s.next_u64()).collect() };
        let branch = Seed(7).branch(2, 5);
        let mut named = Seed(7).stream("service/api");
        let mut indexed = Seed(7).indexed_stream("client/users", 3);
        for _ in 0..9 {
            named.next_u64();
            indexed.next_u32();
        }
        assert!(format!("{named:?}").contains(&Seed(7).fingerprint()));
        named.reseed(branch);
        indexed.reseed(branch);
        assert!(format!("{named:?}").contains(&branch.fingerprint()));
        assert!(!format!("{indexed:?}").contains(&Seed(7).fingerprint()));
        assert_eq!(first4(named), first4(branch.stream("service/api")));
        assert_eq!(
            first4(indexed),
            first4(branch.indexed_stream("client/users", 3))
        );
        assert_ne!(
            first4(branch.stream("service/api")),
            first4(Seed(7).stream("service/api"))
        );
    }

    #[test]
    fn branch_seeds_are_distinct_and_pinned() {
        let root = Seed(7);
        let mut seeds: Vec<u64> = (0..4u32)
            .flat_map(|level| (0..64).map(move |index| root.branch(level, index).0))
            .chain((0..64).map(|i| root.derive(i).0))
            .chain([root.0])
            .collect();
        let n = seeds.len();
        seeds.sort_unstable();
        seeds.dedup();
        assert_eq!(
            seeds.len(),
            n,
            "branch seeds collide with each other or a derived seed"
        );
        assert_eq!(root.branch(1, 0), Seed(7).branch(1, 0));
        assert_ne!(root.branch(1, 0), Seed(8).branch(1, 0));
        // The replay contract of a branched path: these may change only with a new version.
        let text: String = [(7u64, 0u32, 0u64), (7, 1, 0), (7, 1, 1), (42, 3, 1_000_000)]
            .iter()
            .map(|&(s, l, i)| {
                format!(
                    "seed={s:<2} level={l} index={i:<7} {:016x}\n",
                    Seed(s).branch(l, i).0
                )
            })
            .collect();
        insta::assert_snapshot!("rng__branch_seeds", text);
    }

    #[test]
    fn first_outputs_are_pinned() {
        // The replay contract: these numbers may change only with a new resim version that
        // says so. A change here means every recorded seed replays differently.
        let mut text = String::new();
        for (seed, name) in [
            (0u64, "client/users"),
            (7, "client/users"),
            (7, "service/api"),
        ] {
            let mut s = Seed(seed).stream(name);
            let values: Vec<String> = (0..4).map(|_| format!("{:016x}", s.next_u64())).collect();
            text.push_str(&format!("seed={seed:<2} {name:<13} {}\n", values.join(" ")));
        }
        let mut s = Seed(7).indexed_stream("client/users", 3);
        let values: Vec<String> = (0..4).map(|_| format!("{:016x}", s.next_u64())).collect();
        text.push_str(&format!("seed=7  client/users#3 {}\n", values.join(" ")));
        insta::assert_snapshot!("rng__first_outputs", text);
    }
}
