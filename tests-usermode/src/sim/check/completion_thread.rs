//! docs/review.md R1: an upper completion never runs on an engine thread (they are named `vc-...`;
//! completions run on system workers).

/// The violation, if the running (simulated) thread `name` is an engine thread.
pub(crate) fn check_completion_thread(name: &str) -> Option<String> {
    name.starts_with("vc-")
        .then(|| format!("R1: upper completion ran on engine thread {name}"))
}
