//! The `memdir` binary: parse arguments, run, map the result to an exit code.

mod cli;
#[cfg(feature = "mcp")]
mod mcp;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // The builtin embedding model (candle) embeds a query faster on one thread than
    // spread over the cores the ranking also uses, and without RAYON_NUM_THREADS it
    // counts the processors again for every matrix product (spec/decisions.md).
    #[cfg(feature = "embed-builtin")]
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        // SAFETY: the first statement of `main`: no other thread exists to read the
        // environment while it changes.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", "1") };
    }
    std::process::exit(cli::main());
}
