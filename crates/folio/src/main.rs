//! The one Folio binary: server, administration CLI and load tools.

use clap::Parser;

fn main() {
    let args = folio::cli::Args::parse();
    folio::cli::init_tracing(&args);
    if let Err(e) = folio::cli::run(args) {
        eprintln!("folio: {e}");
        std::process::exit(1);
    }
}
