//! volume (under construction).
