//! Deterministic simulator (under construction).
