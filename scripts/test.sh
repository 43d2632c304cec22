#!/usr/bin/env bash
# The test command (README, second command; .ci/run calls it): set-up, then formatting, lints,
# the whole test suite (GPU tests are listed as ignored without a device) and the docs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

cargo fmt --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --locked
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked
