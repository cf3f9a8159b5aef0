//! User-mode host of the vcdirect engine.
