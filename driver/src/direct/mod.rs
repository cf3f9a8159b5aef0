//! direct (under construction).
