#!/usr/bin/env bash
# A headless Wayland session for ufo-rs's Wayland tests: a compositor (sway, headless, pixman
# rendering; or KWin, virtual, llvmpipe) running as an unprivileged user with its own 0700 XDG_RUNTIME_DIR and its own
# session bus (dbus-run-session; the accessibility bus comes on demand). Compositors refuse to
# run as root, and the tests run as root: they reach the compositor through its socket and
# the user's session bus (which this script lets root join), and start applications as the
# user with `exec`.
#
#   scripts/wayland-session.sh up sway     start it (as root: creates the user and its runtime
#                                          folder first; packages: scripts/test-deps.sh wayland)
#   scripts/wayland-session.sh up kwin     the same with KWin (kwin_wayland --virtual), run from
#                                          a copy without the packaged file capability; with
#                                          PipeWire and WirePlumber when installed
#   scripts/wayland-session.sh up gnome    a headless GNOME Shell (gnome-shell --headless), with a
#                                          stand-in system bus, PipeWire and WirePlumber, out of
#                                          its overview: what ufo's private:gnome starts, for the
#                                          bench (UFO_PRIVATE_KIND=private:gnome in the env file:
#                                          ufo drives it through Mutter's own interfaces)
#   scripts/wayland-session.sh grant EXE   let the executable EXE use KWin's fake input, its
#                                          screencast and ScreenShot2: a .desktop file in the user's
#                                          ~/.local/share/applications (KWin matches the
#                                          canonical executable path; see docs/desktop.md)
#   scripts/wayland-session.sh env         print the environment of the running session
#   scripts/wayland-session.sh exec CMD…   run CMD as the session's user in the session (also
#                                          cargo's test runner for KWin: it grants by executable,
#                                          and reads only its own user's processes' executables)
#   scripts/wayland-session.sh down        stop everything it started
#   scripts/wayland-session.sh status      exit 0 when the session is up
#
# The environment (WAYLAND_DISPLAY as a path, SWAYSOCK on sway, DBUS_SESSION_BUS_ADDRESS,
# UFO_WAYLAND_USER, on KWin UFO_KWIN_BIN: the cap-less copy, DISPLAY unset) is written to
# "$UFO_WAYLAND_DIR/env" (default /tmp/ufo-wayland-session/env); source it in a subshell,
# apart from the X session's:
#   scripts/wayland-session.sh up sway && ( source /tmp/ufo-wayland-session/env && cargo test … )
# Variables: UFO_WAYLAND_DIR (state folder), UFO_WAYLAND_USER (default ufotest),
# UFO_WAYLAND_SIZE (default 1280x800).
set -euo pipefail

STATE="${UFO_WAYLAND_DIR:-/tmp/ufo-wayland-session}"
ENV_FILE="$STATE/env"
USER_NAME="${UFO_WAYLAND_USER:-ufotest}"
SIZE="${UFO_WAYLAND_SIZE:-1280x800}"

log() { echo "wayland-session: $*" >&2; }
die() { log "$*"; exit 1; }

need_root() {
    [ "$(id -u)" -eq 0 ] || die "run as root: it creates the user $USER_NAME and runs the compositor as that user"
}

ensure_user() {
    if ! id -u "$USER_NAME" >/dev/null 2>&1; then
        log "creating the user $USER_NAME"
        useradd -m -s /bin/bash "$USER_NAME" || die "useradd $USER_NAME failed"
    fi
}

runtime_dir() { echo "/tmp/ufo-xdg-$(id -u "$USER_NAME")"; }

# the user's XDG_RUNTIME_DIR: owned by it, 0700 (Wayland and D-Bus refuse anything looser)
ensure_runtime_dir() {
    local dir
    dir="$(runtime_dir)"
    install -d -o "$USER_NAME" -g "$(id -gn "$USER_NAME")" -m 700 "$dir"
    # sockets left by a session that was killed would be taken for the new one's
    find "$dir" -mindepth 1 -maxdepth 1 \( -name 'wayland-*' -o -name 'sway-ipc.*' -o -name 'system_bus_socket' \
        -o -name 'pipewire-0*' \) -delete
}

# the user's session bus, joinable by root (the tests), with the standard session services
write_bus_config() {
    cat >"$STATE/session-bus.conf" <<'EOF'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <include>/usr/share/dbus-1/session.conf</include>
  <policy context="default">
    <allow user="root"/>
  </policy>
</busconfig>
EOF
}

# the output at 240 Hz, as ufo's own private sway: a toolkit draws its next frame once the
# compositor showed the last, so the refresh bounds how soon an action's result is drawn
write_sway() {
    cat >"$STATE/sway.conf" <<EOF
output HEADLESS-1 resolution $SIZE@240Hz position 0 0 bg #335577 solid_color
default_border normal 2
focus_follows_mouse no
seat seat0 fallback true
EOF
    # runs as the user inside dbus-run-session: sway, then the environment once its sockets exist
    cat >"$STATE/inner.sh" <<'EOF'
#!/bin/bash
set -u
export WLR_BACKENDS=headless WLR_RENDERER=pixman WLR_LIBINPUT_NO_DEVICES=1 XDG_SESSION_TYPE=wayland
unset DISPLAY WAYLAND_DISPLAY
sway -c "$STATE/sway.conf" >"$XDG_RUNTIME_DIR/sway.log" 2>&1 &
pid=$!
for _ in $(seq 1 500); do
    sock="$(ls "$XDG_RUNTIME_DIR"/sway-ipc.*."$pid".sock 2>/dev/null | head -n1 || true)"
    if [ -n "$sock" ]; then
        way="$(ls "$XDG_RUNTIME_DIR"/wayland-[0-9] 2>/dev/null | head -n1 || true)"
        [ -n "$way" ] && [ -S "$way" ] && break
    fi
    kill -0 "$pid" 2>/dev/null || exit 1
    sleep 0.02
done
{
    echo "export WAYLAND_DISPLAY=$way"
    echo "export SWAYSOCK=$sock"
    echo "export DBUS_SESSION_BUS_ADDRESS=$DBUS_SESSION_BUS_ADDRESS"
} >"$XDG_RUNTIME_DIR/ufo-session.env"
wait "$pid"
EOF
    chmod 755 "$STATE/inner.sh"
}

# KWin: the packaged kwin_wayland carries a file capability (cap_sys_resource) that a
# container's bounding set may lack, and exec then fails; a copy has none (cp drops it)
write_kwin() {
    local bin="$STATE/kwin/kwin_wayland" width height
    mkdir -p "$STATE/kwin"
    cp /usr/bin/kwin_wayland "$bin"
    chmod 755 "$STATE/kwin" "$bin"
    IFS=x read -r width height <<<"$SIZE"
    # runs as the user inside dbus-run-session: KWin, then the environment once it is on the bus
    cat >"$STATE/inner.sh" <<EOF
#!/bin/bash
set -u
export XDG_SESSION_TYPE=wayland QT_QPA_PLATFORM=wayland
unset DISPLAY WAYLAND_DISPLAY
# KWin's screencast (ufo's fast looks, docs/desktop.md "KWin") streams through PipeWire, and
# WirePlumber links the streams: started first when installed (without them ufo captures
# through ScreenShot2 only)
if command -v pipewire >/dev/null && command -v wireplumber >/dev/null; then
    pipewire >"\$XDG_RUNTIME_DIR/pipewire.log" 2>&1 &
    for _ in \$(seq 1 250); do [ -S "\$XDG_RUNTIME_DIR/pipewire-0" ] && break; sleep 0.02; done
    wireplumber >"\$XDG_RUNTIME_DIR/wireplumber.log" 2>&1 &
fi
"$bin" --virtual --width $width --height $height --no-lockscreen --socket wayland-kwin \\
    >"\$XDG_RUNTIME_DIR/kwin.log" 2>&1 &
pid=\$!
way="\$XDG_RUNTIME_DIR/wayland-kwin"
for _ in \$(seq 1 1000); do
    if [ -S "\$way" ] && dbus-send --session --print-reply --dest=org.freedesktop.DBus / \\
        org.freedesktop.DBus.NameHasOwner string:org.kde.KWin 2>/dev/null | grep -q true; then
        break
    fi
    kill -0 "\$pid" 2>/dev/null || exit 1
    sleep 0.02
done
{
    echo "export WAYLAND_DISPLAY=\$way"
    echo "export DBUS_SESSION_BUS_ADDRESS=\$DBUS_SESSION_BUS_ADDRESS"
} >"\$XDG_RUNTIME_DIR/ufo-session.env"
wait "\$pid"
EOF
    chmod 755 "$STATE/inner.sh"
}

# GNOME Shell: a stand-in system bus first (the shell exits without one; a plain dbus-daemon
# with an allow-all policy, in the user's 0700 runtime folder), PipeWire and WirePlumber
# (Mutter's pointer and captures need its stream), the shell, then out of its overview
write_gnome() {
    local rt
    rt="$(runtime_dir)"
    cat >"$STATE/system-bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$rt/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*"/>
    <allow own="*"/>
    <allow receive_sender="*"/>
    <allow send_type="method_call"/>
    <allow receive_type="signal"/>
  </policy>
</busconfig>
CONF
    mkdir -p "$STATE/gnome"
    chmod 755 "$STATE/gnome"
    local d
    for d in config data state cache; do
        install -d -o "$USER_NAME" -g "$(id -gn "$USER_NAME")" -m 700 "$STATE/gnome/$d"
    done
    # runs as the user inside dbus-run-session: the buses, media, the shell, then the environment
    cat >"$STATE/inner.sh" <<INNER
#!/bin/bash
set -u
export XDG_SESSION_TYPE=wayland XDG_CURRENT_DESKTOP=GNOME WAYLAND_DISPLAY=wayland-gnome GDK_BACKEND=wayland
export XDG_CONFIG_HOME=$STATE/gnome/config XDG_DATA_HOME=$STATE/gnome/data
export XDG_STATE_HOME=$STATE/gnome/state XDG_CACHE_HOME=$STATE/gnome/cache
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$rt/system_bus_socket
unset DISPLAY
dbus-daemon --config-file="$STATE/system-bus.conf" --nofork --nopidfile >"$rt/system-bus.log" 2>&1 &
for _ in \$(seq 1 250); do [ -S "$rt/system_bus_socket" ] && break; sleep 0.02; done
# the session bus's activated services (portals, GTK's) need the display's name
dbus-update-activation-environment WAYLAND_DISPLAY XDG_CURRENT_DESKTOP GDK_BACKEND 2>/dev/null || true
pipewire >"$rt/pipewire.log" 2>&1 &
for _ in \$(seq 1 250); do [ -S "$rt/pipewire-0" ] && break; sleep 0.02; done
wireplumber >"$rt/wireplumber.log" 2>&1 &
gnome-shell --headless --wayland --no-x11 --wayland-display=wayland-gnome --virtual-monitor $SIZE \\
    >"$rt/gnome.log" 2>&1 &
pid=\$!
overview() {
    dbus-send --session --print-reply --reply-timeout=500 --dest=org.gnome.Shell /org/gnome/Shell \\
        org.freedesktop.DBus.Properties.Get string:org.gnome.Shell string:OverviewActive 2>/dev/null \\
        | grep -o 'boolean [a-z]*' | cut -d' ' -f2
}
# GNOME Shell 43 forks ibus-daemon with a JavaScript function run in the copy before its exec;
# a GLib lock held by another thread at the fork leaves the copy, and the shell with it, stuck
# for ever (docs/desktop.md, "Private Wayland desktops"): a child that is still a copy of the
# shell after 2 s is ended, and the shell goes on
declare -A copies=()
unwedge() {
    local c shell
    shell="\$(readlink /proc/\$pid/exe)"
    for c in \$(cat /proc/\$pid/task/*/children 2>/dev/null); do
        [ "\$(readlink /proc/\$c/exe)" = "\$shell" ] || continue
        if [ -z "\${copies[\$c]:-}" ]; then
            copies[\$c]=\$SECONDS
        elif (( SECONDS - copies[\$c] >= 3 )); then
            echo "ended GNOME Shell's copy \$c, stuck before its exec" >&2
            kill -KILL "\$c" 2>/dev/null
        fi
    done
}
# the shell shows its overview at the end of its start: wait for it, then leave it
for _ in \$(seq 1 750); do
    [ "\$(overview)" = true ] && break
    kill -0 "\$pid" 2>/dev/null || exit 1
    unwedge
    sleep 0.02
done
for _ in \$(seq 1 50); do
    dbus-send --session --print-reply --dest=org.gnome.Shell /org/gnome/Shell \\
        org.freedesktop.DBus.Properties.Set string:org.gnome.Shell string:OverviewActive \\
        variant:boolean:false >/dev/null 2>&1
    sleep 0.1
    [ "\$(overview)" = false ] && break
done
{
    echo "export WAYLAND_DISPLAY=$rt/wayland-gnome"
    echo "export DBUS_SESSION_BUS_ADDRESS=\$DBUS_SESSION_BUS_ADDRESS"
    echo "export PIPEWIRE_REMOTE=$rt/pipewire-0"
    echo "export UFO_PRIVATE_KIND=private:gnome"
} >"$rt/ufo-session.env"
wait "\$pid"
INNER
    chmod 755 "$STATE/inner.sh"
}

session_up() {
    [ -f "$ENV_FILE" ] || return 1
    # shellcheck disable=SC1090
    ( source "$ENV_FILE" && [ -S "$WAYLAND_DISPLAY" ] && { [ -z "${SWAYSOCK:-}" ] || [ -S "$SWAYSOCK" ]; } \
        && kill -0 "$(cat "$STATE/pgid")" 2>/dev/null )
}

up() {
    local compositor="${1:-sway}"
    case "$compositor" in
        sway|kwin|gnome) ;;
        *) die "unknown compositor $compositor: sway, kwin or gnome" ;;
    esac
    need_root
    if session_up; then
        log "already up"
        cat "$ENV_FILE"
        return 0
    fi
    case "$compositor" in
        sway) command -v sway >/dev/null || die "sway is not installed: run scripts/test-deps.sh wayland" ;;
        kwin) [ -x /usr/bin/kwin_wayland ] || die "kwin_wayland is not installed: run scripts/test-deps.sh wayland" ;;
        gnome) command -v gnome-shell >/dev/null || die "gnome-shell is not installed: run scripts/test-deps.sh wayland" ;;
    esac
    command -v dbus-run-session >/dev/null || die "dbus-run-session is missing: install dbus"
    ensure_user
    ensure_runtime_dir
    mkdir -p "$STATE"
    chmod 755 "$STATE"
    rm -f "$ENV_FILE"
    write_bus_config
    case "$compositor" in
        kwin) write_kwin ;;
        gnome) write_gnome ;;
        *) write_sway ;;
    esac
    local rt
    rt="$(runtime_dir)"
    rm -f "$rt/ufo-session.env"
    # its own process group (setsid), so that `down` ends the compositor, the buses and all
    setsid setpriv --reuid="$USER_NAME" --regid="$USER_NAME" --init-groups --reset-env \
        env HOME="$(getent passwd "$USER_NAME" | cut -d: -f6)" USER="$USER_NAME" \
        PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR="$rt" STATE="$STATE" \
        dbus-run-session --config-file="$STATE/session-bus.conf" -- "$STATE/inner.sh" \
        >"$STATE/session.log" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$STATE/pgid"
    for _ in $(seq 1 1000); do
        [ -f "$rt/ufo-session.env" ] && break
        kill -0 "$pid" 2>/dev/null || die "the session ended at once; see $STATE/session.log and $rt/sway.log"
        sleep 0.02
    done
    [ -f "$rt/ufo-session.env" ] || { down; die "$compositor did not come up within 20 s; see $rt/$compositor.log"; }
    {
        echo "# ufo-rs Wayland session ($compositor), made by scripts/wayland-session.sh"
        echo "unset DISPLAY"
        cat "$rt/ufo-session.env"
        echo "export UFO_WAYLAND_USER=$USER_NAME"
        echo "export UFO_WAYLAND_RUNTIME=$rt"
        echo "export UFO_WAYLAND_COMPOSITOR=$compositor"
        echo "export UFO_WAYLAND_DIR=$STATE"
        # ufo's own private KWin desktops (--desktop private:kwin) start this cap-less copy
        if [ "$compositor" = kwin ]; then echo "export UFO_KWIN_BIN=$STATE/kwin/kwin_wayland"; fi
    } >"$ENV_FILE"
    log "up: $compositor as $USER_NAME; source $ENV_FILE"
    cat "$ENV_FILE"
}

# run a command as the session's user, in the session (its own HOME, buses and Wayland socket);
# the test switches pass through (cargo runs KWin's test binaries through this as their runner)
run_as_user() {
    session_up || die "the session is not up: run scripts/wayland-session.sh up sway|kwin"
    # shellcheck disable=SC1090
    source "$ENV_FILE"
    local vars=(HOME="$(getent passwd "$USER_NAME" | cut -d: -f6)" USER="$USER_NAME"
        PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR="$UFO_WAYLAND_RUNTIME"
        WAYLAND_DISPLAY="$WAYLAND_DISPLAY" DBUS_SESSION_BUS_ADDRESS="$DBUS_SESSION_BUS_ADDRESS"
        GDK_BACKEND=wayland QT_QPA_PLATFORM=wayland QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1
        NO_AT_BRIDGE=0 UFO_WAYLAND_DIR="$STATE" UFO_WAYLAND_USER="$USER_NAME"
        UFO_WAYLAND_RUNTIME="$UFO_WAYLAND_RUNTIME" UFO_WAYLAND_COMPOSITOR="$UFO_WAYLAND_COMPOSITOR"
        UFO_WAYLAND_TESTS="${UFO_WAYLAND_TESTS:-}" UFO_WAYLAND_TYPE_RUNS="${UFO_WAYLAND_TYPE_RUNS:-}"
        RUST_BACKTRACE="${RUST_BACKTRACE:-}" RUST_LOG="${RUST_LOG:-}")
    [ -n "${SWAYSOCK:-}" ] && vars+=(SWAYSOCK="$SWAYSOCK")
    if [ "$(id -u)" -eq "$(id -u "$USER_NAME")" ]; then
        exec env -i "${vars[@]}" "$@"
    fi
    exec setpriv --reuid="$USER_NAME" --regid="$USER_NAME" --init-groups --reset-env \
        env "${vars[@]}" "$@"
}

# a .desktop file granting EXE KWin's fake input, screencast and ScreenShot2, in the user's applications
# folder (KWin reads new files there at once), named by the executable: one per program
grant() {
    local exe="${1:-}"
    [ -n "$exe" ] && [ -x "$exe" ] || die "usage: $0 grant EXECUTABLE (an executable file)"
    exe="$(readlink -f "$exe")"
    local home dir file
    home="$(getent passwd "$USER_NAME" | cut -d: -f6)"
    dir="$home/.local/share/applications"
    file="$dir/ufo-grant-$(printf %s "$exe" | sha256sum | cut -c1-16).desktop"
    if [ "$(id -u)" -eq 0 ]; then
        install -d -o "$USER_NAME" -g "$(id -gn "$USER_NAME")" "$home/.local" "$home/.local/share" "$dir"
    else
        mkdir -p "$dir"
    fi
    cat >"$file.tmp" <<EOF
[Desktop Entry]
Type=Application
Name=ufo test ($(basename "$exe"))
Exec=$exe
NoDisplay=true
X-KDE-Wayland-Interfaces=org_kde_kwin_fake_input,zkde_screencast_unstable_v1
X-KDE-DBUS-Restricted-Interfaces=org.kde.KWin.ScreenShot2
EOF
    mv "$file.tmp" "$file"
    if [ "$(id -u)" -eq 0 ]; then chown "$USER_NAME:" "$file"; fi
    echo "$file"
}

down() {
    if [ -f "$STATE/pgid" ]; then
        local pgid
        pgid="$(cat "$STATE/pgid")"
        kill -TERM -- "-$pgid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 -- "-$pgid" 2>/dev/null || break
            sleep 0.03
        done
        kill -KILL -- "-$pgid" 2>/dev/null || true
        rm -f "$STATE/pgid"
    fi
    rm -f "$ENV_FILE"
    log "down"
}

case "${1:-}" in
    up) shift; up "$@" ;;
    env) session_up || die "not up"; cat "$ENV_FILE" ;;
    exec) shift; run_as_user "$@" ;;
    grant) shift; grant "$@" ;;
    down) down ;;
    status) session_up ;;
    *) die "usage: $0 up sway|kwin|gnome | env | exec CMD… | grant EXE | down | status" ;;
esac
