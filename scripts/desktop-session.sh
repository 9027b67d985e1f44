#!/usr/bin/env bash
# A headless Linux desktop session for ufo-rs: Xvfb, a session D-Bus, the AT-SPI2 bus with
# accessibility switched on, and a window manager, under a fresh HOME.
#
#   scripts/desktop-session.sh up     start it (installs the Debian packages first when missing
#                                     and running as root) and print the environment
#   scripts/desktop-session.sh env    print the environment of the running session
#   scripts/desktop-session.sh down   stop everything it started, leaving no processes
#   scripts/desktop-session.sh status exit 0 when the session is up
#
# The environment (DISPLAY, DBUS_SESSION_BUS_ADDRESS, HOME, the accessibility switches of
# GTK 2 and Qt: GTK_MODULES=gail:atk-bridge, QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1, ...) is written to
# "$UFO_SESSION_DIR/env" (default /tmp/ufo-desktop-session/env) as `export` lines, so:
#   scripts/desktop-session.sh up && source /tmp/ufo-desktop-session/env
# Variables: UFO_SESSION_DIR (state folder), UFO_SCREEN (default 1280x1024x24).
set -euo pipefail

STATE="${UFO_SESSION_DIR:-/tmp/ufo-desktop-session}"
ENV_FILE="$STATE/env"
PIDS_FILE="$STATE/pids"
SCREEN_GEOM="${UFO_SCREEN:-1280x1024x24}"
PACKAGES=(xvfb dbus-x11 at-spi2-core openbox xdotool x11-utils xauth gnome-calculator mousepad python3-pyatspi)

log() { echo "desktop-session: $*" >&2; }
die() { log "$*"; exit 1; }

missing_packages() {
    local missing=() p
    for p in "${PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$p")
        fi
    done
    echo "${missing[@]:-}"
}

ensure_packages() {
    local missing
    missing="$(missing_packages)"
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        die "missing Debian packages: $missing; install them (as root: apt-get install -y --no-install-recommends $missing) and run again"
    fi
    log "installing missing packages: $missing"
    export DEBIAN_FRONTEND=noninteractive
    # (waiting up to 10 minutes for another install to release the package lock)
    apt-get -o DPkg::Lock::Timeout=600 update -q >&2 || die "apt-get update failed; check the network access to the Debian archive"
    # shellcheck disable=SC2086
    apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends $missing >&2 \
        || die "apt-get install failed for: $missing"
}

session_up() {
    [ -f "$ENV_FILE" ] || return 1
    # shellcheck disable=SC1090
    ( source "$ENV_FILE" && xprop -root _NET_SUPPORTING_WM_CHECK >/dev/null 2>&1 \
        && dbus-send --session --dest=org.freedesktop.DBus --print-reply / org.freedesktop.DBus.GetId >/dev/null 2>&1 )
}

free_display() {
    local n
    for n in $(seq 99 199); do
        if [ ! -e "/tmp/.X$n-lock" ] && [ ! -e "/tmp/.X11-unix/X$n" ]; then
            echo "$n"; return 0
        fi
    done
    die "no free X display between :99 and :199; remove stale /tmp/.X*-lock files"
}

wait_for() { # wait_for SECONDS command...
    local deadline=$((SECONDS + $1)); shift
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.05
    done
}

remember() { echo "$1" >>"$PIDS_FILE"; }

cmd_up() {
    if session_up; then
        log "already up"; cat "$ENV_FILE"; return 0
    fi
    [ -d "$STATE" ] && cmd_down >/dev/null 2>&1 || true
    ensure_packages
    for tool in Xvfb dbus-daemon dbus-send openbox xprop /usr/libexec/at-spi-bus-launcher; do
        command -v "$tool" >/dev/null 2>&1 || [ -x "$tool" ] || die "$tool is missing; install: ${PACKAGES[*]}"
    done

    rm -rf "$STATE"
    mkdir -p "$STATE/home" "$STATE/runtime"
    chmod 700 "$STATE/runtime"
    : >"$PIDS_FILE"
    local mark="ufo-session-$$-$RANDOM"
    echo "$mark" >"$STATE/mark"

    local display; display=":$(free_display)"
    # keep the caller's toolchains reachable after the env file switches HOME
    local cargo_home="${CARGO_HOME:-$HOME/.cargo}" rustup_home="${RUSTUP_HOME:-$HOME/.rustup}"
    export UFO_SESSION_MARK="$mark"
    export HOME="$STATE/home" XDG_RUNTIME_DIR="$STATE/runtime"
    export XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share" XDG_CACHE_HOME="$HOME/.cache"
    export DISPLAY="$display" GSETTINGS_BACKEND=memory GTK_A11Y=atspi
    # what each toolkit needs to put its applications on the accessibility bus: GTK 2 loads
    # its bridge modules, Qt and older GNOME code paths switch accessibility on
    export GTK_MODULES=gail:atk-bridge QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1 QT_ACCESSIBILITY=1
    export ACCESSIBILITY_ENABLED=1 GNOME_ACCESSIBILITY=1
    unset NO_AT_BRIDGE WAYLAND_DISPLAY SESSION_MANAGER || true

    Xvfb "$display" -screen 0 "$SCREEN_GEOM" -nolisten tcp -noreset >"$STATE/xvfb.log" 2>&1 &
    remember $!
    wait_for 10 xprop -root -display "$display" || die "Xvfb did not start on $display; see $STATE/xvfb.log"

    local out
    out="$(dbus-daemon --session --fork --print-address=1 --print-pid=1)" || die "dbus-daemon --session failed to start"
    export DBUS_SESSION_BUS_ADDRESS; DBUS_SESSION_BUS_ADDRESS="$(echo "$out" | sed -n 1p)"
    remember "$(echo "$out" | sed -n 2p)"

    /usr/libexec/at-spi-bus-launcher --launch-immediately >"$STATE/atspi.log" 2>&1 &
    remember $!
    wait_for 10 dbus-send --session --dest=org.a11y.Bus --print-reply /org/a11y/bus org.a11y.Bus.GetAddress \
        || die "the AT-SPI bus launcher did not come up; see $STATE/atspi.log"
    dbus-send --session --dest=org.a11y.Bus --print-reply /org/a11y/bus org.freedesktop.DBus.Properties.Set \
        string:org.a11y.Status string:IsEnabled variant:boolean:true >/dev/null \
        || die "could not set org.a11y.Status.IsEnabled"

    openbox --sm-disable >"$STATE/openbox.log" 2>&1 &
    remember $!
    wait_for 10 xprop -root _NET_SUPPORTING_WM_CHECK || die "openbox did not start; see $STATE/openbox.log"

    cat >"$ENV_FILE" <<EOF
export DISPLAY='$DISPLAY'
export DBUS_SESSION_BUS_ADDRESS='$DBUS_SESSION_BUS_ADDRESS'
export HOME='$HOME'
export XDG_RUNTIME_DIR='$XDG_RUNTIME_DIR'
export XDG_CONFIG_HOME='$XDG_CONFIG_HOME'
export XDG_DATA_HOME='$XDG_DATA_HOME'
export XDG_CACHE_HOME='$XDG_CACHE_HOME'
export GSETTINGS_BACKEND=memory
export GTK_A11Y=atspi
export GTK_MODULES=gail:atk-bridge
export QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1
export QT_ACCESSIBILITY=1
export ACCESSIBILITY_ENABLED=1
export GNOME_ACCESSIBILITY=1
export UFO_DESKTOP_SESSION='$STATE'
EOF
    [ -d "$cargo_home" ] && echo "export CARGO_HOME='$cargo_home'" >>"$ENV_FILE"
    [ -d "$rustup_home" ] && echo "export RUSTUP_HOME='$rustup_home'" >>"$ENV_FILE"
    cat >>"$ENV_FILE" <<EOF
unset NO_AT_BRIDGE WAYLAND_DISPLAY
EOF
    log "up on $DISPLAY; environment in $ENV_FILE"
    cat "$ENV_FILE"
}

# Every process that carries this session's mark in its environment (the daemons and whatever
# D-Bus activated for them), or that is an X client of this session's display and is not one of
# our own ancestors or a shell (applications launched by tests or the agent).
session_processes() {
    local mark="$1" display="$2" self_chain=" " p pid comm
    p=$$
    while [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != 1 ]; do
        self_chain+="$p "
        p="$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null || true)"
    done
    # our own process group (the pipeline this script runs in: `down | tee log`) is spared;
    # an application started in it dies with the X server anyway
    local own_pgid f
    own_pgid="$(awk '{print $5}' "/proc/$$/stat" 2>/dev/null || true)"
    spare() { # spare PID: ours, an ancestor, or in our process group
        [[ "$self_chain" == *" $1 "* ]] && return 0
        [ -n "$own_pgid" ] && [ "$(awk '{print $5}' "/proc/$1/stat" 2>/dev/null)" = "$own_pgid" ]
    }
    if [ -n "$mark" ]; then
        for f in $(grep -lzx "UFO_SESSION_MARK=$mark" /proc/[0-9]*/environ 2>/dev/null); do
            pid="${f#/proc/}"; pid="${pid%/environ}"
            spare "$pid" || echo "$pid"
        done
    fi
    if [ -n "$display" ]; then
        for f in $(grep -lzx "DISPLAY=$display" /proc/[0-9]*/environ 2>/dev/null); do
            pid="${f#/proc/}"; pid="${pid%/environ}"
            spare "$pid" && continue
            comm="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
            case "$comm" in bash|sh|dash|zsh|fish|cargo|rustc|tmux*|screen|sudo|su|login) continue ;; esac
            echo "$pid"
        done
    fi
}

cmd_down() {
    [ -d "$STATE" ] || { log "no session in $STATE"; return 0; }
    local mark="" display=""
    [ -f "$STATE/mark" ] && mark="$(cat "$STATE/mark")"
    [ -f "$ENV_FILE" ] && display="$(sed -n "s/^export DISPLAY='\(.*\)'$/\1/p" "$ENV_FILE")"
    local pids
    pids="$( { [ -f "$PIDS_FILE" ] && cat "$PIDS_FILE"; session_processes "$mark" "$display"; } | sort -u | tr '\n' ' ')"
    # shellcheck disable=SC2086
    [ -n "${pids// }" ] && kill $pids 2>/dev/null || true
    local deadline=$((SECONDS + 5)) alive
    while :; do
        alive=""
        for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive+="$pid "; done
        [ -z "$alive" ] && break
        if [ "$SECONDS" -ge "$deadline" ]; then
            # shellcheck disable=SC2086
            kill -9 $alive 2>/dev/null || true; break
        fi
        sleep 0.05
    done
    # anything started late (activated while we were stopping)
    pids="$(session_processes "$mark" "$display" | tr '\n' ' ')"
    # shellcheck disable=SC2086
    [ -n "${pids// }" ] && kill -9 $pids 2>/dev/null || true
    if [ -n "$display" ]; then
        rm -f "/tmp/.X${display#:}-lock" "/tmp/.X11-unix/X${display#:}"
    fi
    rm -rf "$STATE"
    log "down"
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    env) [ -f "$ENV_FILE" ] || die "no session; run: $0 up"; cat "$ENV_FILE" ;;
    status) session_up && log "up" || { log "down"; exit 1; } ;;
    *) echo "usage: $0 up|down|env|status" >&2; exit 2 ;;
esac
