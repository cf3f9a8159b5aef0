//! registry (under construction).
