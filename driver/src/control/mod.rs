//! The control path's decisions that need no kernel (docs/review.md W1, W3, R13).
//!
//! Owns: which volume a forced dismount of every volume (shutdown, Unload) takes next
//! ([`order`]), the mounts between their claim and their publish and the sequence that keeps
//! a host's open and probe outside the control mutex ([`pending`]), shutdown's bounded wait
//! for its own dismount thread ([`shutdown`]), and the wait for the last reference to a
//! volume device before the W1 sequence deletes it ([`last_reference`]).
//! Never: talks to the kernel (the glue, `wdm::control`, implements the traits with its
//! mutexes, table and system threads) or dismounts anything itself.

pub mod last_reference;
pub mod order;
pub mod pending;
pub mod shutdown;
