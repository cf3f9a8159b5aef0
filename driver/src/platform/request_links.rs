//! The link logic of the engine's request lists, once for every host: a FIFO doubly linked
//! through the requests themselves, with a keyed list's in-line flag.
//!
//! Owns: which link and flag is written when a request is appended, popped, taken out by a
//! search or by its key, and the check of a request's neighbours before an unlink by key.
//! Never: touches a request's memory itself. A host implements [`RequestLinks`] over its own
//! storage (the kernel glue over IRP pointers, `Tail.Overlay.ListEntry` and DriverContext[3];
//! the user-mode hosts over their test requests), and its [`RequestList`] runs
//! [`LinkedRequests`], so the unlink that the kernel's cancel routine runs at DISPATCH_LEVEL
//! is the one the user-mode tests and loom models run.
//!
//! [`RequestList`]: super::RequestList

use crate::faults::{self, Fault};

/// Access to the links and the in-line flag of the requests a [`LinkedRequests`] holds,
/// through a `Copy` handle (the kernel: the IRP's address). The list calls these only for
/// requests it links, unlinks or holds, and (for [`in_line`](RequestLinks::in_line) and the
/// check before an unlink by key) for the request a key names; the implementor's contract is
/// what makes that handle valid for the call (the kernel's: the engine does not complete a
/// request while its cancel routine's unlink by key runs).
pub trait RequestLinks {
    /// A request's handle.
    type Node: Copy + PartialEq;
    /// The request linked after `node` (`None`: the last, or not linked).
    fn next(&self, node: Self::Node) -> Option<Self::Node>;
    /// Sets the request linked after `node`.
    fn set_next(&self, node: Self::Node, next: Option<Self::Node>);
    /// The request linked before `node` (`None`: the first, or not linked).
    fn prev(&self, node: Self::Node) -> Option<Self::Node>;
    /// Sets the request linked before `node`.
    fn set_prev(&self, node: Self::Node, prev: Option<Self::Node>);
    /// The in-line flag of `node`: set while it is linked in a keyed list. Read for any key an
    /// unlink by key is asked for (the kernel: atomically, as other lists write that slot).
    fn in_line(&self, node: Self::Node) -> bool;
    /// Sets or clears the in-line flag of `node` (the kernel: atomically).
    fn set_in_line(&self, node: Self::Node, on: bool);
}

/// What [`LinkedRequests::remove_key`] panics with when the request its key names has the
/// in-line flag but its neighbours do not link it (a stale flag, or corrupted links): the
/// unlink would write through stale links and give the request a second owner. In the kernel
/// the panic handler bugchecks, as RemoveEntryList's check fails fast.
pub const STALE_UNLINK: &str = stale_unlink_message!();

/// [`STALE_UNLINK`]'s text as a literal, so the panic carries it without formatting (the
/// kernel's panic handler prints only a literal message).
macro_rules! stale_unlink_message {
    () => {
        "a cancel unlinked a request no longer in the line: its in-line flag is set but its \
         neighbours do not link it (stale flag or corrupted links); stopped before writing \
         through them"
    };
}
use stale_unlink_message;

/// A FIFO of requests linked through the requests themselves (`next`, `prev`), allocating
/// nothing. A keyed list also keeps each linked request's in-line flag: set as it is appended,
/// cleared as it leaves, so [`remove_key`](Self::remove_key) takes a request out by its handle
/// alone in constant time. Not synchronised: the engine keeps it under its lock.
///
/// # Invariants
/// `head` is the first request linked and `tail` the last (both `None` when empty), `len`
/// their number; each linked request's `prev` names the one before it (`None` for `head`)
/// and its `next` the one after it (`None` for `tail`). In a keyed list every linked request
/// has the in-line flag; a request unlinked from any list has both links `None`.
#[derive(Debug)]
pub struct LinkedRequests<N> {
    head: Option<N>,
    tail: Option<N>,
    len: usize,
    keyed: bool,
}

impl<N: Copy + PartialEq> LinkedRequests<N> {
    /// An empty list; `keyed`: with the in-line flag and the unlink by key.
    pub const fn new(keyed: bool) -> Self {
        LinkedRequests {
            head: None,
            tail: None,
            len: 0,
            keyed,
        }
    }

    /// Number of requests linked.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no request is linked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first request linked (for a walk through `next`).
    pub fn head(&self) -> Option<N> {
        self.head
    }

    /// The last request linked.
    pub fn tail(&self) -> Option<N> {
        self.tail
    }

    /// Appends `node` (not linked in any list), and in a keyed list sets its in-line flag,
    /// after its links: a reader of the flag under the list's lock finds it linked.
    #[inline]
    pub fn push_back<L: RequestLinks<Node = N>>(&mut self, links: &L, node: N) {
        links.set_next(node, None);
        links.set_prev(node, self.tail);
        match self.tail {
            Some(tail) => links.set_next(tail, Some(node)),
            None => self.head = Some(node),
        }
        self.tail = Some(node);
        self.len += 1;
        if self.keyed {
            links.set_in_line(node, true);
        }
    }

    /// Puts `node` (not linked in any list) before every other request, and in a keyed list
    /// sets its in-line flag, after its links (as [`push_back`](Self::push_back)).
    #[inline]
    pub fn push_front<L: RequestLinks<Node = N>>(&mut self, links: &L, node: N) {
        links.set_prev(node, None);
        links.set_next(node, self.head);
        match self.head {
            Some(head) => links.set_prev(head, Some(node)),
            None => self.tail = Some(node),
        }
        self.head = Some(node);
        self.len += 1;
        if self.keyed {
            links.set_in_line(node, true);
        }
    }

    /// Takes the oldest request. The fault switch `VerifyCancelStaleFlag` leaves a keyed
    /// list's in-line flag set on it (test builds only).
    #[inline]
    pub fn pop_front<L: RequestLinks<Node = N>>(&mut self, links: &L) -> Option<N> {
        let node = self.head?;
        self.unlink(links, node);
        if self.keyed && !faults::is_on(Fault::VerifyCancelStaleFlag) {
            links.set_in_line(node, false);
        }
        Some(node)
    }

    /// Takes out the oldest request `pick` selects (a cancel routine's search). Always
    /// inlined, so a caller's `pick` that calls a `dyn FnMut` it was handed inline stays a
    /// direct call (the kernel's cancel path and its stack budget).
    #[inline(always)]
    pub fn remove_first<L: RequestLinks<Node = N>>(
        &mut self,
        links: &L,
        mut pick: impl FnMut(N) -> bool,
    ) -> Option<N> {
        let mut at = self.head;
        while let Some(node) = at {
            let next = links.next(node);
            if pick(node) {
                self.unlink(links, node);
                if self.keyed {
                    links.set_in_line(node, false);
                }
                return Some(node);
            }
            at = next;
        }
        None
    }

    /// A keyed list: takes out `node` when its in-line flag says it is linked here, else
    /// `None` (always `None` on a list that is not keyed). Constant time: unlinked through
    /// its own links after its neighbours are checked to link it (as RemoveEntryList checks:
    /// the one before names it as next, or it is the head; the one after names it as prev, or
    /// it is the tail); a mismatch panics with [`STALE_UNLINK`] before anything is written.
    #[inline]
    pub fn remove_key<L: RequestLinks<Node = N>>(&mut self, links: &L, node: N) -> Option<N> {
        if !self.keyed || !links.in_line(node) {
            return None;
        }
        let prev = links.prev(node);
        let next = links.next(node);
        let prev_links = match prev {
            Some(prev) => links.next(prev) == Some(node),
            None => self.head == Some(node),
        };
        let next_links = match next {
            Some(next) => links.prev(next) == Some(node),
            None => self.tail == Some(node),
        };
        if !(prev_links && next_links) {
            stale_unlink();
        }
        self.unlink(links, node);
        links.set_in_line(node, false);
        Some(node)
    }

    /// Unlinks the linked `node` and clears its links.
    #[inline]
    fn unlink<L: RequestLinks<Node = N>>(&mut self, links: &L, node: N) {
        let prev = links.prev(node);
        let next = links.next(node);
        match prev {
            Some(prev) => links.set_next(prev, next),
            None => self.head = next,
        }
        match next {
            Some(next) => links.set_prev(next, prev),
            None => self.tail = prev,
        }
        links.set_next(node, None);
        links.set_prev(node, None);
        self.len -= 1;
    }
}

/// The neighbour check of [`LinkedRequests::remove_key`] failed. Out of line and cold: a
/// literal message, no formatting (the kernel image carries no Debug formatting).
#[cold]
#[inline(never)]
fn stale_unlink() -> ! {
    panic!(stale_unlink_message!())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::VecDeque;
    use alloc::vec::Vec;
    use core::cell::RefCell;
    use proptest::prelude::*;

    #[derive(Clone, Copy, Default)]
    struct Node {
        next: Option<usize>,
        prev: Option<usize>,
        in_line: bool,
    }

    /// Requests as indices into a table of links.
    struct Table(RefCell<Vec<Node>>);

    impl Table {
        fn new(n: usize) -> Self {
            Table(RefCell::new(alloc::vec![Node::default(); n]))
        }
        fn node(&self, i: usize) -> Node {
            self.0.borrow()[i]
        }
    }

    impl RequestLinks for Table {
        type Node = usize;
        fn next(&self, node: usize) -> Option<usize> {
            self.node(node).next
        }
        fn set_next(&self, node: usize, next: Option<usize>) {
            self.0.borrow_mut()[node].next = next;
        }
        fn prev(&self, node: usize) -> Option<usize> {
            self.node(node).prev
        }
        fn set_prev(&self, node: usize, prev: Option<usize>) {
            self.0.borrow_mut()[node].prev = prev;
        }
        fn in_line(&self, node: usize) -> bool {
            self.node(node).in_line
        }
        fn set_in_line(&self, node: usize, on: bool) {
            self.0.borrow_mut()[node].in_line = on;
        }
    }

    /// Every link, flag and count of `list` against the reference order `model`; requests not
    /// in it have no links and no flag.
    fn check(list: &LinkedRequests<usize>, table: &Table, model: &VecDeque<usize>, step: usize) {
        assert_eq!(list.len(), model.len(), "step {step}: length");
        assert_eq!(list.head(), model.front().copied(), "step {step}: head");
        assert_eq!(list.tail(), model.back().copied(), "step {step}: tail");
        for (i, &node) in model.iter().enumerate() {
            let n = table.node(node);
            let prev = i.checked_sub(1).map(|p| model[p]);
            assert_eq!(n.prev, prev, "step {step}: prev of {node}");
            assert_eq!(
                n.next,
                model.get(i + 1).copied(),
                "step {step}: next of {node}"
            );
            assert_eq!(n.in_line, list.keyed, "step {step}: in-line flag of {node}");
        }
        for node in (0..table.0.borrow().len()).filter(|n| !model.contains(n)) {
            let n = table.node(node);
            assert!(
                n.next.is_none() && n.prev.is_none() && !n.in_line,
                "step {step}: request {node}, not linked, keeps links or its flag"
            );
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Push,
        /// A new request pushed before every other.
        PushFront,
        /// The oldest request taken and put back where it was (a consumer that could not
        /// serve it).
        PopPushFront,
        Pop,
        /// Unlink by key the request at this position (modulo the length; head, middle and
        /// tail all come up), or a request not linked when the list is empty.
        RemoveKey(usize),
        /// A search for the request at this position.
        RemoveFirst(usize),
        /// Unlink by key a request that is not linked (never pushed, or gone).
        RemoveKeyAbsent,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => Just(Op::Push),
            1 => Just(Op::PushFront),
            1 => Just(Op::PopPushFront),
            2 => Just(Op::Pop),
            3 => any::<usize>().prop_map(Op::RemoveKey),
            1 => any::<usize>().prop_map(Op::RemoveFirst),
            1 => Just(Op::RemoveKeyAbsent),
        ]
    }

    fn run(keyed: bool, ops: &[Op]) {
        let table = Table::new(ops.len() + 1);
        let mut list = LinkedRequests::new(keyed);
        let mut model = VecDeque::new();
        let mut fresh = 0;
        for (step, op) in ops.iter().enumerate() {
            match op {
                Op::Push => {
                    list.push_back(&table, fresh);
                    model.push_back(fresh);
                    fresh += 1;
                }
                Op::PushFront => {
                    list.push_front(&table, fresh);
                    model.push_front(fresh);
                    fresh += 1;
                }
                Op::PopPushFront => {
                    let taken = list.pop_front(&table);
                    assert_eq!(taken, model.pop_front(), "step {step}");
                    if let Some(node) = taken {
                        list.push_front(&table, node);
                        model.push_front(node);
                    }
                }
                Op::Pop => assert_eq!(list.pop_front(&table), model.pop_front(), "step {step}"),
                Op::RemoveKey(at) if !model.is_empty() => {
                    let node = model.remove(at % model.len()).unwrap();
                    let got = list.remove_key(&table, node);
                    if keyed {
                        assert_eq!(got, Some(node), "step {step}: remove_key");
                    } else {
                        // Not keyed: never by key; take it out by a search instead.
                        assert_eq!(got, None, "step {step}: remove_key on a plain list");
                        let got = list.remove_first(&table, |n| n == node);
                        assert_eq!(got, Some(node), "step {step}: remove_first");
                    }
                }
                Op::RemoveFirst(at) if !model.is_empty() => {
                    let node = model.remove(at % model.len()).unwrap();
                    let got = list.remove_first(&table, |n| n == node);
                    assert_eq!(got, Some(node), "step {step}: remove_first");
                }
                Op::RemoveKey(_) | Op::RemoveFirst(_) | Op::RemoveKeyAbsent => {
                    // The next fresh request (never pushed) and every popped one: not linked.
                    let absent = (0..=fresh).filter(|n| !model.contains(n));
                    for node in absent {
                        assert_eq!(list.remove_key(&table, node), None, "step {step}");
                    }
                    assert_eq!(list.remove_first(&table, |_| false), None, "step {step}");
                }
            }
            check(&list, &table, &model, step);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// W10: the keyed line (the VERIFYs') against a VecDeque, unlinks by key from the
        /// head, the middle and the tail, with every link and flag checked after each step.
        #[test]
        fn w10_keyed_line_links_match_a_fifo(ops in proptest::collection::vec(op(), 1..80)) {
            run(true, &ops);
        }

        /// The plain lists (no flag, no unlink by key) against a VecDeque.
        #[test]
        fn w10_plain_list_links_match_a_fifo(ops in proptest::collection::vec(op(), 1..80)) {
            run(false, &ops);
        }
    }

    /// W10: the three positions of an unlink by key, each checked.
    #[test]
    fn w10_keyed_line_unlinks_head_middle_and_tail() {
        for order in [[0, 1, 2], [1, 0, 2], [2, 1, 0], [1, 2, 0]] {
            let table = Table::new(3);
            let mut list = LinkedRequests::new(true);
            let mut model: VecDeque<usize> = (0..3).collect();
            for n in 0..3 {
                list.push_back(&table, n);
            }
            for (step, node) in order.into_iter().enumerate() {
                assert_eq!(list.remove_key(&table, node), Some(node));
                model.retain(|n| *n != node);
                check(&list, &table, &model, step);
            }
        }
    }

    /// W10: a request whose in-line flag is set although it left the line (the fault switch
    /// `VerifyCancelStaleFlag` on a pop) stops the unlink by key with its message; nothing of
    /// the line is written.
    #[test]
    fn w10_unlink_by_key_of_a_request_not_linked_panics_before_writing() {
        let table = Table::new(3);
        let mut list = LinkedRequests::new(true);
        for n in 0..3 {
            list.push_back(&table, n);
        }
        assert_eq!(list.pop_front(&table), Some(0));
        table.set_in_line(0, true); // the stale flag
        let before: Vec<_> = (0..3).map(|n| (table.next(n), table.prev(n))).collect();
        let caught =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| list.remove_key(&table, 0)));
        let message = caught.expect_err("the stale unlink was not stopped");
        // A literal: the kernel's panic handler prints only a literal message.
        let message = message.downcast_ref::<&str>().copied().unwrap_or_default();
        assert_eq!(message, STALE_UNLINK);
        let after: Vec<_> = (0..3).map(|n| (table.next(n), table.prev(n))).collect();
        assert_eq!(before, after, "the stopped unlink wrote links");
        assert_eq!(
            (list.head(), list.tail(), list.len()),
            (Some(1), Some(2), 2)
        );
        // A corrupted back link of a linked request: stopped as well.
        table.set_prev(2, Some(0));
        let caught =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| list.remove_key(&table, 2)));
        assert!(
            caught.is_err(),
            "an unlink through a wrong Blink was not stopped"
        );
    }
}
