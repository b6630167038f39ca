#!/usr/bin/env bash
# Installs what fuzzing needs (a nightly toolchain and cargo-fuzz) on a
# machine that has only rustup and the pinned toolchain. Fuzzing is not
# part of CI; the fuzz commands are in docs/testing.md and docs/protocol.md.
set -euo pipefail
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
echo "ready: cargo +nightly fuzz run <target> (see docs/testing.md)"
