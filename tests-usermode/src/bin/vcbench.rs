//! vcbench: see `vcdirect_usermode::bench` and `vcbench --help`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(vcdirect_usermode::bench::main_with(
        &args,
        vcdirect_usermode::bench::engine::engine_factory,
    ));
}
