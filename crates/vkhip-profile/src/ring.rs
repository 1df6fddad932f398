//! The slot ring behind every GPU track: Vulkan timestamp queries and CUDA stamp slots are
//! handed out in order, two per scope, and come back in any order once their results were read.
//! A slot is reused only after every older slot came back too (`oldest` only moves forward), so
//! a slot's next user never sees a result of its previous one: the caller resets (Vulkan) or
//! zeroes (CUDA) the slots a release frees. Pure: tested without a device.

use std::ops::Range;

/// Slots are numbered by a counter that only grows; slot `c` lives at index `c % capacity`.
#[derive(Clone, Debug)]
pub(crate) struct Ring {
    capacity: u32,
    /// The counter of the next slot handed out.
    next: u64,
    /// The oldest slot not yet free again.
    oldest: u64,
    /// Per index: released, but an older slot is still out.
    released: Vec<bool>,
}

impl Ring {
    pub(crate) fn new(capacity: u32) -> Self {
        Ring {
            capacity: capacity.max(2),
            next: 0,
            oldest: 0,
            released: vec![false; capacity.max(2) as usize],
        }
    }

    /// `n` consecutive slots (the counter of the first), or `None` while fewer are free.
    pub(crate) fn alloc(&mut self, n: u32) -> Option<u64> {
        if self.next + u64::from(n) - self.oldest > u64::from(self.capacity) {
            return None;
        }
        let first = self.next;
        self.next += u64::from(n);
        Some(first)
    }

    /// The index of slot `c`.
    pub(crate) fn index(&self, c: u64) -> u32 {
        (c % u64::from(self.capacity)) as u32
    }

    /// Give slot `c` back. Returns the counters that are free again (empty while an older slot
    /// is out): the caller resets those indices before they are handed out again.
    pub(crate) fn release(&mut self, c: u64) -> Range<u64> {
        if c < self.oldest || c >= self.next {
            return self.oldest..self.oldest;
        }
        let i = self.index(c) as usize;
        self.released[i] = true;
        let from = self.oldest;
        while self.oldest < self.next && self.released[self.index(self.oldest) as usize] {
            let i = self.index(self.oldest) as usize;
            self.released[i] = false;
            self.oldest += 1;
        }
        from..self.oldest
    }

    /// The slots handed out and not yet free, as counters.
    pub(crate) fn out(&self) -> Range<u64> {
        self.oldest..self.next
    }

    /// `counters` as runs of consecutive indices (at most two: a run wraps once), for calls that
    /// take a first index and a count.
    pub(crate) fn index_runs(&self, counters: Range<u64>) -> impl Iterator<Item = (u32, u32)> {
        let cap = u64::from(self.capacity);
        let (start, len) = (counters.start, counters.end.saturating_sub(counters.start).min(cap));
        let first = (start % cap) as u32;
        let head = (len.min(cap - u64::from(first))) as u32;
        let tail = (len - u64::from(head)) as u32;
        [(first, head), (0, tail)].into_iter().filter(|&(_, n)| n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_come_back_in_any_order_and_are_reused_in_order() {
        let mut r = Ring::new(4);
        let a = r.alloc(2).unwrap();
        let b = r.alloc(2).unwrap();
        assert_eq!((a, b), (0, 2));
        assert_eq!(r.alloc(1), None, "full");
        // b's slots come back first: nothing is free until a's do.
        assert_eq!(r.release(2), 0..0);
        assert_eq!(r.release(3), 0..0);
        assert_eq!(r.alloc(1), None);
        assert_eq!(r.release(1), 0..0);
        assert_eq!(r.release(0), 0..4);
        assert_eq!(r.out(), 4..4);
        // The counter keeps growing; indices wrap.
        let c = r.alloc(3).unwrap();
        assert_eq!((c, r.index(c), r.index(c + 2)), (4, 0, 2));
        assert_eq!(r.release(99), 4..4, "a slot never handed out");
    }

    #[test]
    fn index_runs_split_at_the_wrap() {
        let r = Ring::new(8);
        assert_eq!(r.index_runs(3..6).collect::<Vec<_>>(), [(3, 3)]);
        assert_eq!(r.index_runs(6..11).collect::<Vec<_>>(), [(6, 2), (0, 3)]);
        assert_eq!(r.index_runs(16..24).collect::<Vec<_>>(), [(0, 8)]);
        assert_eq!(r.index_runs(5..5).count(), 0);
    }
}
