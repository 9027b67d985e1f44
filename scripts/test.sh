#!/usr/bin/env bash
# The whole test suite, as a newcomer and CI run it: it installs what the tests need (Debian
# packages for the headless desktop and the browser, when missing, root needed for that; the
# MCP reference servers with npm and the Python mcp client with pip, under target/test-deps),
# starts a private headless desktop session (Xvfb + D-Bus + AT-SPI2 + a window manager), then
# runs formatting, lints, and every test of the workspace: unit, property,
# integration tests that drive the real `ufo` binary, live tests on gnome-calculator and
# mousepad, the headless-browser check of the HTML report, and sessions with a real model
# (llama.cpp's server on loopback, crates/ufo/tests/real_model.rs). No test may skip: the
# UFO_*_TESTS switches below make a missing peer a failure, not a silent pass.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is not installed; install the Rust toolchain (rustup) first" >&2
  exit 2
fi

# shellcheck source=scripts/test-deps.sh
source scripts/test-deps.sh
echo "== test dependencies (Tesseract and libclang for the build, Chromium, the MCP reference servers, the Python mcp client)"
install_sight
install_chromium
install_libreoffice
install_apps
install_help
install_mcp_servers
install_python_mcp
install_python_playwright
install_slurm
install_python_k8s_validate
install_wayland
# the knowledge store's in-process embedding model (its tests fail without it here)
UFO_EMBED_MODEL_DIR="$(install_embed_model)"
export UFO_EMBED_MODEL_DIR
# llama.cpp's server, built from source once into a cache outside the clone (7.5 CPU-minutes:
# 22 minutes measured on 2 busy cores, about 4 expected on free ones), and SmolLM2-135M-Instruct
# (94 MB), for the real-model tests
install_llama
# named for the tests, since the desktop session below gives them another HOME and cache
UFO_LLAMA_DIR="$(_ufo_llama_dir)"
export UFO_LLAMA_DIR

echo "== disk"
# A whole run's builds (three feature sets of the workspace, some sixty test binaries) fill
# target/ with about 11 GiB (10.9 measured); a disk that runs out fails a link step with a cryptic error
# minutes in. Said here, before anything is built, with what to do.
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
mkdir -p "$TARGET_DIR"
need_mib=$((12 * 1024 - $(du -sm "$TARGET_DIR" | cut -f1)))
free_mib="$(df -Pm "$TARGET_DIR" | awk 'NR == 2 { print $4 }')"
echo "$free_mib MiB free where $TARGET_DIR is; the builds still need about $((need_mib > 0 ? need_mib : 0)) MiB"
if (( free_mib < need_mib )); then
  echo "not enough disk for the test builds: free $((need_mib - free_mib)) MiB more (or set CARGO_TARGET_DIR to a larger disk)" >&2
  exit 2
fi

echo "== headless desktop session"
# A private session for this run (its own display, bus and HOME), stopped when the run ends,
# so the suite neither depends on nor disturbs any other session on the machine.
UFO_SESSION_DIR="$(mktemp -d /tmp/ufo-test-session.XXXXXX)"
export UFO_SESSION_DIR
UFO_WAYLAND_DIR="$(mktemp -d /tmp/ufo-test-wayland.XXXXXX)"
export UFO_WAYLAND_DIR
trap 'scripts/desktop-session.sh down >/dev/null 2>&1 || true; scripts/wayland-session.sh down >/dev/null 2>&1 || true; rm -rf "$UFO_SESSION_DIR" "$UFO_WAYLAND_DIR"' EXIT
scripts/desktop-session.sh up >/dev/null
# shellcheck disable=SC1091
source "$UFO_SESSION_DIR/env"
export UFO_LIVE_TESTS=1 UFO_BROWSER_TESTS=1 UFO_PEER_TESTS=1 UFO_HELP_TESTS=1 UFO_EMBED_TESTS=1 \
  UFO_MODEL_TESTS=1
# Debian's libtesseract uses OpenMP, which reads this only when a process starts: without it
# text detection runs 3-4 times slower on a busy machine (docs/sight.md).
export OMP_THREAD_LIMIT=1

# KWin's screencast is built and tested (the `pipewire` feature of ufo-linux and ufo)
PIPEWIRE="ufo-linux/pipewire,ufo/pipewire"

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings
# and with KWin's screencast (the `pipewire` feature; scripts/test-deps.sh install_wayland)
cargo clippy --workspace --all-targets --locked --features "$PIPEWIRE" -- -D warnings
# the engine and the worker behind ufo-vision's `tesseract` feature (docs/sight.md)
cargo clippy -p ufo-vision --all-targets --features tesseract --locked -- -D warnings

echo "== cargo test"
# the text detection worker, next to target/debug/ufo where ufo looks for it first
cargo build -p ufo-vision --features tesseract --bin ufo-sight --locked
cargo test --workspace --locked --features "$PIPEWIRE"
cargo test -p ufo-vision --features tesseract --locked

echo "== Wayland live tests (sway headless, then KWin virtual; one session at a time)"
# A compositor as an unprivileged user with its own session bus; the tests, apart from the X
# session's environment, reach it through its socket (docs/desktop.md, "Wayland"). On KWin
# they run as the session's user (cargo's runner): KWin grants its input and captures by the
# executable, which it reads only for its own user's processes.
scripts/wayland-session.sh up sway >/dev/null
# That user runs programs and scripts of this checkout: a folder above it that others may not
# enter (a clone under /root) is opened to them for the run, and closed again at the end.
reach_checkout() {
  local dir="$PWD" mode
  while [ "$dir" != / ]; do
    mode="$(stat -c %a "$dir")"
    if (( (8#$mode & 8#001) == 0 )); then
      chmod o+x "$dir"
      REOPENED+=("$dir")
    fi
    dir="$(dirname "$dir")"
  done
}
REOPENED=()
trap 'for d in "${REOPENED[@]}"; do chmod o-x "$d" || true; done; scripts/desktop-session.sh down >/dev/null 2>&1 || true; scripts/wayland-session.sh down >/dev/null 2>&1 || true; rm -rf "$UFO_SESSION_DIR" "$UFO_WAYLAND_DIR"' EXIT
if [ "$(id -u)" -eq 0 ]; then reach_checkout; fi
( # shellcheck disable=SC1091
  source "$UFO_WAYLAND_DIR/env" && UFO_WAYLAND_TESTS=1 cargo test -p ufo-linux --locked --features pipewire --test wayland \
    && UFO_WAYLAND_TESTS=1 cargo test -p ufo --locked --features pipewire --test wayland -- --test-threads=1 --skip private_kwin --skip private_gnome )
# (the ufo tests also start private sway desktops of their own, as the session's user, which
# `up` created: UFO_WAYLAND_USER in the env file; the private KWin ones run with KWin's session)
scripts/wayland-session.sh down >/dev/null
scripts/wayland-session.sh up kwin >/dev/null
( # shellcheck disable=SC1091
  source "$UFO_WAYLAND_DIR/env" \
  && CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="$PWD/scripts/wayland-session.sh exec" \
     UFO_WAYLAND_TESTS=1 cargo test -p ufo-linux --locked --features pipewire --test wayland \
  && UFO_WAYLAND_TESTS=1 cargo test -p ufo --locked --features pipewire --test wayland -- --test-threads=1 private_kwin kwin_captures kwin_watch )
# (private:kwin desktops of ufo's own, as root: they start the cap-less KWin copy the session
# made, UFO_KWIN_BIN in the env file)
scripts/wayland-session.sh down >/dev/null

echo "== GNOME live tests (a headless GNOME Shell, driven through Mutter's own interfaces and through the portals)"
# The ufo-linux tests in a session of `up gnome` (its env file names it a private GNOME desktop);
# then the private:gnome ones, with no outer session: each test's ufo starts its own shell,
# buses, PipeWire and WirePlumber as the Wayland sessions' user (UFO_WAYLAND_USER, default
# ufotest, created by `up` above)
scripts/wayland-session.sh up gnome >/dev/null
( # shellcheck disable=SC1091
  source "$UFO_WAYLAND_DIR/env" \
  && UFO_WAYLAND_TESTS=1 cargo test -p ufo-linux --locked --features pipewire --test wayland -- --test-threads=1 --skip gnome_portal \
  && CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="$PWD/scripts/wayland-session.sh exec" \
     UFO_WAYLAND_TESTS=1 cargo test -p ufo-linux --locked --features pipewire --test wayland -- --test-threads=1 gnome_portal )
# (the portal test as the session's user: xdg-desktop-portal refuses a caller whose /proc entry
# it cannot read; the session bus starts the portals, the test answers GNOME's consent dialog
# through pyatspi, UFO_GNOME_PORTAL=1 takes the portals' path on this shell ufo knows)
scripts/wayland-session.sh down >/dev/null
UFO_WAYLAND_TESTS=1 cargo test -p ufo --locked --features pipewire --test wayland -- --test-threads=1 private_gnome

echo "== bounded fuzz run (about a minute; docs/security.md: how to run a long campaign)"
# More cases than `cargo test` runs by default, of the parser fuzz tests (proptest).
UFO_FUZZ_CASES=3000 cargo test --workspace --locked --test fuzz_parsers --test fuzz_task --test fuzz_shard
UFO_FUZZ_CASES=10000 cargo test --workspace --locked --lib keys::fuzz
UFO_FUZZ_CASES=400 cargo test --workspace --locked --test fuzz_scenario
UFO_FUZZ_CASES=3000 cargo test -p ufo-core --locked --test fuzz_shell_gate
