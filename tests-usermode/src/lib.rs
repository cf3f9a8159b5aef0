//! User-mode host of the vcdirect engine.

pub mod bench;
pub mod host;
