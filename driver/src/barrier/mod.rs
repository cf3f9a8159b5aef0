//! barrier (under construction).
