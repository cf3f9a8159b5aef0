//! A treap of intervals keyed by (start, id), each node knowing the largest end below it, so
//! the intervals overlapping a range are found in O(log n + k). Nodes are the range lock's
//! entry ids: no allocation after construction.
//!
//! No operation recurses: the tree's height is expected to be O(log n) but can reach n (256)
//! for keys that happen to follow the priorities, and these run on the dispatch and cancel
//! paths at DISPATCH_LEVEL, where a kernel stack of 24 KiB cannot hold n frames (W13's stack
//! budget). Each walk keeps its path in `path`, preallocated with one slot per node: a path
//! never holds more nodes than the tree.

use alloc::vec::Vec;
use core::ops::Range;

use crate::io::try_vec;
use crate::Status;

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

/// Where the next subtree of an iterative split or merge is attached.
#[derive(Clone, Copy)]
enum Link {
    Root,
    Left(u32),
    Right(u32),
}

pub(super) struct IntervalTree {
    nodes: Vec<Node>,
    root: u32,
    len: usize,
    /// The nodes a walk passed, deepest last (their `max_end` is fixed up from the end).
    path: Vec<u32>,
}

impl IntervalTree {
    pub(super) fn with_capacity(capacity: usize) -> Result<Self, Status> {
        let mut nodes = try_vec(capacity)?;
        nodes.extend((0..capacity as u32).map(|id| Node {
            start: 0,
            end: 0,
            max_end: 0,
            priority: mix(id),
            left: NIL,
            right: NIL,
        }));
        Ok(IntervalTree {
            nodes,
            root: NIL,
            len: 0,
            path: try_vec(capacity)?,
        })
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
        let key = (start, id);
        self.path.clear();
        let mut parent = Link::Root;
        let mut t = self.root;
        loop {
            // Invariant, not input: only a ticket granted (so inserted) is ever released.
            assert!(t != NIL, "removing an interval that is not in the tree");
            let here = self.key(t);
            if here == key {
                break;
            }
            self.path.push(t);
            if key < here {
                parent = Link::Left(t);
                t = self.nodes[t as usize].left;
            } else {
                parent = Link::Right(t);
                t = self.nodes[t as usize].right;
            }
        }
        let n = self.nodes[t as usize];
        let joined = self.merge(n.left, n.right);
        self.attach(parent, joined);
        self.update_path(0);
        self.len -= 1;
    }

    /// Appends the ids of all intervals that overlap `range`, in key order.
    pub(super) fn overlapping(&mut self, range: Range<u64>, out: &mut Vec<u32>) {
        if range.start >= range.end {
            return;
        }
        // In-order walk; a subtree whose largest end is at or below the start is skipped whole,
        // and nothing right of a node that starts at or after the end can overlap.
        self.path.clear();
        let mut t = self.root;
        loop {
            while t != NIL && self.nodes[t as usize].max_end > range.start {
                self.path.push(t);
                t = self.nodes[t as usize].left;
            }
            let Some(u) = self.path.pop() else {
                return;
            };
            let n = self.nodes[u as usize];
            if n.start >= range.end {
                return;
            }
            if n.end > range.start {
                out.push(u);
            }
            t = n.right;
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

    /// Fixes `max_end` of the path's nodes above position `base`, deepest first, and drops them.
    fn update_path(&mut self, base: usize) {
        while self.path.len() > base {
            if let Some(t) = self.path.pop() {
                self.update(t);
            }
        }
    }

    fn attach(&mut self, link: Link, t: u32) {
        match link {
            Link::Root => self.root = t,
            Link::Left(p) => self.nodes[p as usize].left = t,
            Link::Right(p) => self.nodes[p as usize].right = t,
        }
    }

    /// Splits `t` into keys < `key` and keys >= `key`.
    fn split(&mut self, t: u32, key: (u64, u32)) -> (u32, u32) {
        let base = self.path.len();
        let (mut left_root, mut right_root) = (NIL, NIL);
        // The node whose right (left) child is the open end of the left (right) tree.
        let (mut left_tail, mut right_tail) = (NIL, NIL);
        let mut t = t;
        while t != NIL {
            self.path.push(t);
            if self.key(t) < key {
                if left_tail == NIL {
                    left_root = t;
                } else {
                    self.nodes[left_tail as usize].right = t;
                }
                left_tail = t;
                t = self.nodes[t as usize].right;
            } else {
                if right_tail == NIL {
                    right_root = t;
                } else {
                    self.nodes[right_tail as usize].left = t;
                }
                right_tail = t;
                t = self.nodes[t as usize].left;
            }
        }
        if left_tail != NIL {
            self.nodes[left_tail as usize].right = NIL;
        }
        if right_tail != NIL {
            self.nodes[right_tail as usize].left = NIL;
        }
        // Each node visited later hangs below the ones visited before it.
        self.update_path(base);
        (left_root, right_root)
    }

    /// Joins `a` and `b` where every key of `a` is below every key of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        let base = self.path.len();
        let (mut a, mut b) = (a, b);
        let mut root = NIL;
        let mut link = Link::Root;
        loop {
            let take_a = b == NIL
                || (a != NIL && self.nodes[a as usize].priority > self.nodes[b as usize].priority);
            let next = if take_a { a } else { b };
            match link {
                Link::Root => root = next,
                _ => self.attach(link, next),
            }
            if a == NIL || b == NIL {
                break;
            }
            self.path.push(next);
            if next == a {
                link = Link::Right(a);
                a = self.nodes[a as usize].right;
            } else {
                link = Link::Left(b);
                b = self.nodes[b as usize].left;
            }
        }
        self.update_path(base);
        root
    }
}

/// A fixed pseudo-random priority per id (splitmix-style), so the shape is deterministic.
pub(super) fn mix(id: u32) -> u32 {
    let mut x = u64::from(id).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (x ^ (x >> 31)) as u32
}
