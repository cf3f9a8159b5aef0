//! Windows kernel glue (feature `kernel`); see the `sys` build.
