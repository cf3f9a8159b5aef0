//! completion (under construction).
