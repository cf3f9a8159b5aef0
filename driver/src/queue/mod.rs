//! queue (under construction).
