//! [`LevelQueue`]: a bounded queue served by priority level, that makes room for the more
//! important by evicting the less important.

use sim_core::SimTime;
use std::collections::VecDeque;

/// What an arrival at a [`LevelQueue`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enqueued<T> {
    /// It waits in the queue.
    Queued,
    /// It waits in the queue, in the place of this request: the newest of the least important
    /// level, evicted because the queue was full and the arrival is more important.
    Evicted(T),
    /// The queue was full of requests at least as important: it is handed back.
    Refused(T),
}

/// A bounded queue of requests with a priority level each (0 is the least important):
/// a dequeue takes the oldest request of the highest level waiting (FIFO within a level),
/// and an arrival at a full queue evicts the newest request of the lowest level waiting if
/// that level is below its own, else is refused. Under overload the least important wait
/// longest and go first, and an important request never waits behind a less important one.
///
/// ```text
///   arrival (level L) ──▶ room? ── yes ──▶ QUEUED at the back of level L
///                           │ no
///                           ▼
///        lowest level waiting < L? ── yes ──▶ its newest is EVICTED, the arrival QUEUED
///                           │ no
///                           ▼
///                        REFUSED
///
///   dequeue ──▶ the front of the highest level waiting
/// ```
///
/// Each operation costs O(levels in use) (at most 256, a few in practice) plus, for
/// [`LevelQueue::remove`], a scan of the item's level.
#[derive(Debug, Clone)]
pub struct LevelQueue<T> {
    /// One FIFO per level in use, by level, lowest first; a level's FIFO stays (empty) once
    /// it has been used, so the list is bounded by the levels the traffic has.
    levels: Vec<(u8, VecDeque<(SimTime, T)>)>,
    len: usize,
    capacity: usize,
}

impl<T: PartialEq> LevelQueue<T> {
    /// An empty queue that holds at most `capacity` requests (`usize::MAX`: unbounded).
    ///
    /// # Panics
    ///
    /// If `capacity` is 0: a queue must hold at least one request.
    pub fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "a level queue holds at least one request");
        LevelQueue {
            levels: Vec::new(),
            len: 0,
            capacity,
        }
    }

    /// Requests waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Requests waiting at `level`.
    pub fn len_at(&self, level: u8) -> usize {
        self.levels
            .iter()
            .find(|(l, _)| *l == level)
            .map_or(0, |(_, q)| q.len())
    }

    /// When the request that has waited longest (at any level) was queued.
    pub fn oldest(&self) -> Option<SimTime> {
        self.levels
            .iter()
            .filter_map(|(_, q)| q.front().map(|(t, _)| *t))
            .min()
    }

    /// Queues `item` of priority `level` at `now`, evicting a less important request if the
    /// queue is full.
    pub fn enqueue(&mut self, now: SimTime, level: u8, item: T) -> Enqueued<T> {
        let mut answer = Enqueued::Queued;
        if self.len >= self.capacity {
            // The lowest level with a request waiting: the levels are sorted.
            let lowest = self.levels.iter_mut().find(|(_, q)| !q.is_empty());
            match lowest {
                Some((l, q)) if *l < level => {
                    let (_, victim) = q.pop_back().expect("the level has a request");
                    self.len -= 1;
                    answer = Enqueued::Evicted(victim);
                }
                _ => return Enqueued::Refused(item),
            }
        }
        let i = match self.levels.binary_search_by_key(&level, |(l, _)| *l) {
            Ok(i) => i,
            Err(i) => {
                self.levels.insert(i, (level, VecDeque::new()));
                i
            }
        };
        self.levels[i].1.push_back((now, item));
        self.len += 1;
        assert!(self.len <= self.capacity, "level queue above its capacity");
        answer
    }

    /// Takes the oldest request of the highest level waiting, with its enqueue time.
    pub fn dequeue(&mut self) -> Option<(T, SimTime)> {
        let (_, q) = self.levels.iter_mut().rev().find(|(_, q)| !q.is_empty())?;
        let (t, item) = q.pop_front().expect("the level has a request");
        self.len -= 1;
        Some((item, t))
    }

    /// Takes `item` out wherever it waits (its caller gave up); false if it was not queued.
    pub fn remove(&mut self, item: &T) -> bool {
        for (_, q) in &mut self.levels {
            if let Some(i) = q.iter().position(|(_, x)| x == item) {
                q.remove(i);
                self.len -= 1;
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> SimTime {
        SimTime::from_millis(ms)
    }

    #[test]
    fn serves_highest_level_first_and_fifo_within_a_level() {
        let mut q = LevelQueue::new(10);
        q.enqueue(t(0), 0, "batch-a");
        q.enqueue(t(1), 2, "user-a");
        q.enqueue(t(2), 0, "batch-b");
        q.enqueue(t(3), 2, "user-b");
        q.enqueue(t(4), 3, "admin");
        assert_eq!(q.oldest(), Some(t(0)));
        let order: Vec<_> = std::iter::from_fn(|| q.dequeue().map(|(x, _)| x)).collect();
        assert_eq!(order, ["admin", "user-a", "user-b", "batch-a", "batch-b"]);
        assert!(q.is_empty());
        assert_eq!(q.oldest(), None);
    }

    #[test]
    fn a_full_queue_evicts_the_newest_of_the_lowest_level_below_the_arrival() {
        let mut q = LevelQueue::new(3);
        assert_eq!(q.enqueue(t(0), 1, "mid"), Enqueued::Queued);
        assert_eq!(q.enqueue(t(1), 0, "low-old"), Enqueued::Queued);
        assert_eq!(q.enqueue(t(2), 0, "low-new"), Enqueued::Queued);
        // Level 0 is the lowest waiting; its newest goes.
        assert_eq!(q.enqueue(t(3), 2, "high"), Enqueued::Evicted("low-new"));
        assert_eq!(q.enqueue(t(4), 1, "mid-2"), Enqueued::Evicted("low-old"));
        // Only levels 1 and 2 wait now: an arrival of level 1 finds nothing below it.
        assert_eq!(q.enqueue(t(5), 1, "mid-3"), Enqueued::Refused("mid-3"));
        assert_eq!(q.enqueue(t(5), 0, "low"), Enqueued::Refused("low"));
        assert_eq!(q.enqueue(t(6), 3, "top"), Enqueued::Evicted("mid-2"));
        assert_eq!(q.len(), 3);
        assert_eq!((q.len_at(0), q.len_at(1), q.len_at(2)), (0, 1, 1));
        let order: Vec<_> = std::iter::from_fn(|| q.dequeue().map(|(x, _)| x)).collect();
        assert_eq!(order, ["top", "high", "mid"]);
    }

    #[test]
    fn remove_takes_an_item_out_of_its_level() {
        let mut q = LevelQueue::new(usize::MAX);
        q.enqueue(t(0), 5, 1u32);
        q.enqueue(t(1), 7, 2u32);
        q.enqueue(t(2), 5, 3u32);
        assert!(q.remove(&1));
        assert!(!q.remove(&1));
        assert_eq!(q.len(), 2);
        assert_eq!(q.oldest(), Some(t(1)));
        assert_eq!(q.dequeue(), Some((2, t(1))));
        assert_eq!(q.dequeue(), Some((3, t(2))));
        assert_eq!(q.dequeue(), None);
    }
}
