//! A treap of intervals keyed by (start, id), each node knowing the largest end below it, so
//! the intervals overlapping a range are found in O(log n + k). Nodes are the range lock's
//! entry ids: no allocation after construction.

use alloc::vec::Vec;
use core::ops::Range;

pub(super) const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Node {
    start: u64,
    end: u64,
    max_end: u64,
    priority: u32,
    left: u32,
    right: u32,
}

pub(super) struct IntervalTree {
    nodes: Vec<Node>,
    root: u32,
    len: usize,
}

impl IntervalTree {
    pub(super) fn with_capacity(capacity: usize) -> Self {
        let nodes = (0..capacity as u32)
            .map(|id| Node {
                start: 0,
                end: 0,
                max_end: 0,
                priority: mix(id),
                left: NIL,
                right: NIL,
            })
            .collect();
        IntervalTree {
            nodes,
            root: NIL,
            len: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn insert(&mut self, id: u32, start: u64, end: u64) {
        let n = &mut self.nodes[id as usize];
        n.start = start;
        n.end = end;
        n.max_end = end;
        n.left = NIL;
        n.right = NIL;
        let (l, r) = self.split(self.root, (start, id));
        let lm = self.merge(l, id);
        self.root = self.merge(lm, r);
        self.len += 1;
    }

    pub(super) fn remove(&mut self, id: u32, start: u64) {
        self.root = self.remove_from(self.root, (start, id));
        self.len -= 1;
    }

    /// Appends the ids of all intervals that overlap `range`.
    pub(super) fn overlapping(&self, range: Range<u64>, out: &mut Vec<u32>) {
        if range.start < range.end {
            self.collect(self.root, &range, out);
        }
    }

    fn collect(&self, t: u32, range: &Range<u64>, out: &mut Vec<u32>) {
        if t == NIL {
            return;
        }
        let n = self.nodes[t as usize];
        if n.max_end <= range.start {
            return;
        }
        self.collect(n.left, range, out);
        if n.start < range.end {
            if n.end > range.start {
                out.push(t);
            }
            self.collect(n.right, range, out);
        }
    }

    fn key(&self, t: u32) -> (u64, u32) {
        (self.nodes[t as usize].start, t)
    }

    fn update(&mut self, t: u32) {
        let n = self.nodes[t as usize];
        let mut m = n.end;
        if n.left != NIL {
            m = m.max(self.nodes[n.left as usize].max_end);
        }
        if n.right != NIL {
            m = m.max(self.nodes[n.right as usize].max_end);
        }
        self.nodes[t as usize].max_end = m;
    }

    /// Splits `t` into keys < `key` and keys >= `key`.
    fn split(&mut self, t: u32, key: (u64, u32)) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.key(t) < key {
            let (l, r) = self.split(self.nodes[t as usize].right, key);
            self.nodes[t as usize].right = l;
            self.update(t);
            (t, r)
        } else {
            let (l, r) = self.split(self.nodes[t as usize].left, key);
            self.nodes[t as usize].left = r;
            self.update(t);
            (l, t)
        }
    }

    /// Joins `a` and `b` where every key of `a` is below every key of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].priority > self.nodes[b as usize].priority {
            let r = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = r;
            self.update(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = l;
            self.update(b);
            b
        }
    }

    fn remove_from(&mut self, t: u32, key: (u64, u32)) -> u32 {
        assert!(t != NIL, "removing an interval that is not in the tree");
        let here = self.key(t);
        if here == key {
            let n = self.nodes[t as usize];
            return self.merge(n.left, n.right);
        }
        if key < here {
            let l = self.remove_from(self.nodes[t as usize].left, key);
            self.nodes[t as usize].left = l;
        } else {
            let r = self.remove_from(self.nodes[t as usize].right, key);
            self.nodes[t as usize].right = r;
        }
        self.update(t);
        t
    }
}

/// A fixed pseudo-random priority per id (splitmix-style), so the shape is deterministic.
fn mix(id: u32) -> u32 {
    let mut x = u64::from(id).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (x ^ (x >> 31)) as u32
}
