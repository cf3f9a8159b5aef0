//! vcctl: the command-line tool for VeraCrypt volumes and the vcdirect driver.

fn main() {
    println!("vcctl {}", env!("CARGO_PKG_VERSION"));
}
