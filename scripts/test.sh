#!/usr/bin/env bash
# The whole test suite, as a newcomer and CI run it: formatting, lints, then every test of
# the workspace (unit, property, and integration tests that drive the real `ufo` binary).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is not installed; install the Rust toolchain (rustup) first" >&2
  exit 2
fi

# In CI, install the browser the report test opens the HTML report in, and require that test.
if [ "${CI:-}" = "true" ]; then
  # shellcheck source=scripts/test-deps.sh
  source scripts/test-deps.sh
  echo "== install test dependencies (chromium)"
  install_chromium
  export UFO_BROWSER_TESTS=1
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked
