//! vcbench.
