//! abi (under construction).
