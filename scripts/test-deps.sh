#!/usr/bin/env bash
# System packages some tests use. Source this file and call the functions, or run it to
# install everything: `scripts/test-deps.sh`.
#
# install_chromium: Debian's `chromium`, for the headless-browser check of `ufo report`
# (crates/ufo/tests/person.rs, report_in_headless_chromium). Installs only when
# /usr/bin/chromium is missing and we are root; otherwise says why it does nothing.

install_chromium() {
  if [ -x /usr/bin/chromium ]; then
    return 0
  fi
  if [ "$(id -u)" != "0" ]; then
    echo "install_chromium: /usr/bin/chromium is missing and this is not root; run as root: apt-get install chromium" >&2
    return 1
  fi
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  install_chromium
fi
