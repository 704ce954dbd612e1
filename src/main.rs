//! The `memdir` binary: parse arguments, run, map the result to an exit code.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(memdir::cli::main());
}
