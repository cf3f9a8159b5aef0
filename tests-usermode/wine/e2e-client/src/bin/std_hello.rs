//! Prints a line, builds a HashMap (whose random seed std takes from ProcessPrng) and a thread:
//! if this runs under Wine, std programs run there.

use std::collections::HashMap;

fn main() {
    let mut m = HashMap::new();
    m.insert("wine", 8);
    let joined = std::thread::spawn(move || m["wine"]).join().unwrap_or(0);
    println!("std-hello: PASS (std program ran, HashMap seeded, thread joined: {joined})");
}
