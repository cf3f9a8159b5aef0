//! User-mode host of the vcdirect engine: the std platform (real threads), the test request
//! and buffer types, the deterministic simulator, and the tools (`vcbench`, `vcsim`).
#![deny(unsafe_code)]

pub mod request;
pub mod sim;
pub mod std_platform;
