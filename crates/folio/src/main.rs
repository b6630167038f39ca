//! The one Folio binary: server, administration CLI and load tools.

use clap::Parser;

/// The server allocates many small, short-lived buffers (decoded notes,
/// formula values, index keys) across threads; mimalloc handles that
/// pattern markedly faster than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args = folio::cli::Args::parse();
    folio::cli::init_tracing(&args);
    if let Err(e) = folio::cli::run(args) {
        eprintln!("folio: {e}");
        std::process::exit(1);
    }
}
