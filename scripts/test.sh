#!/usr/bin/env bash
# The whole test suite, as a newcomer and CI run it: formatting, lints, then every test of
# the workspace (unit, property, and integration tests that drive the real `ufo` binary).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is not installed; install the Rust toolchain (rustup) first" >&2
  exit 2
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

# In CI, install the MCP test peers (npm servers, the Python mcp client) and require their tests.
if [ "${CI:-}" = "true" ]; then
  echo "== install test dependencies (MCP servers, Python mcp)"
  scripts/test-deps.sh install_mcp_servers
  scripts/test-deps.sh install_python_mcp
  export UFO_PEER_TESTS=1
fi

echo "== cargo test"
cargo test --workspace --locked
