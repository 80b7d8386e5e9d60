//! The `skerry` binary: a thin wrapper over `skerry_server::run_from_args`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(skerry_server::main_from_args(std::env::args_os()));
}
