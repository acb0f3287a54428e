#!/usr/bin/env bash
# Make the finmath_docker sandbox usable on this machine, from scratch and idempotently.
#
#   bash scripts/docker-setup.sh        (CI: .ci/run fails when this does)
#
# Phases (each one is skipped when its result is already there, and timed):
#   1. apt        install docker.io (and debootstrap, only if the base image must be built)
#   2. dockerd    start an engine in the background when none answers
#   3. cache      load the local base image from the cache directory, if saved there
#      debootstrap + import
#                 else build it (no image registry is reachable here): a minimal Debian
#                 rootfs from the same mirror apt uses, `docker import`ed (the slowest
#                 phase, ~4 minutes, paid once per cache)
#      save       save the base image to the cache directory when it is not there yet
#   4. image      build the sandbox image from src/finmath_tasks/sandbox/Dockerfile on top
#                 of the base image (python -m finmath_tasks.sandbox.docker build)
#
# Exits non-zero with a one-line reason on stderr when any phase fails.
#
# Environment knobs:
#   FINMATH_SANDBOX_BASE_IMAGE  base image for the Dockerfile (default finmath-tasks/base:bookworm;
#                               any other name is used as is and must already exist or be pullable)
#   FINMATH_DEBIAN_MIRROR       mirror for debootstrap (default: the one apt uses for bookworm/main)
#   FINMATH_BASE_PACKAGES       Debian packages in the base (default python3,python3-pip,ca-certificates)
#   FINMATH_DOCKERD_FLAGS       flags for dockerd (default below)
#   FINMATH_DOCKERD_LOG         dockerd log file (default /var/log/finmath-dockerd.log)
#   FINMATH_DOCKERD_WAIT        seconds to wait for a started dockerd (default 60)
#   FINMATH_DOCKER_CACHE        directory where the built base image is saved and loaded from
#                               (default /var/cache/finmath-docker; empty: no cache)
#   PYTHON                      interpreter with the `docker` SDK (default: repo .venv, else python3)
#   FINMATH_SKIP_SANDBOX_IMAGE=1  stop after the base image
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE_IMAGE="${FINMATH_SANDBOX_BASE_IMAGE:-finmath-tasks/base:bookworm}"
LOCAL_BASE_PREFIX="finmath-tasks/base:"
SUITE="bookworm"
BASE_PACKAGES="${FINMATH_BASE_PACKAGES:-python3,python3-pip,ca-certificates}"
# No bridge, no iptables rules, no forwarding/masquerading: sandbox containers run with
# network_mode=none and image builds use the host network, so dockerd never needs to touch
# the host firewall (its defaults set the FORWARD policy to DROP, which breaks other
# network-namespace tests on the same machine).
DOCKERD_FLAGS="${FINMATH_DOCKERD_FLAGS:---bridge=none --iptables=false --ip-forward=false --ip-masq=false}"
DOCKERD_LOG="${FINMATH_DOCKERD_LOG:-/var/log/finmath-dockerd.log}"
DOCKERD_WAIT="${FINMATH_DOCKERD_WAIT:-60}"
CACHE_DIR="${FINMATH_DOCKER_CACHE-/var/cache/finmath-docker}"
CACHE_FILE="${CACHE_DIR:+$CACHE_DIR/$(printf '%s' "$BASE_IMAGE" | tr '/:' '__').tar}"

SCRIPT_T0=$(date +%s.%N)
PHASE=""
PHASE_T0=""
ROOTFS_DIR=""

log() { printf '[docker-setup] %s\n' "$*"; }
die() {
    printf 'docker-setup: ERROR%s: %s\n' "${PHASE:+ in phase $PHASE}" "$*" >&2
    exit 1
}
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
phase_start() {
    PHASE="$1"
    PHASE_T0=$(date +%s.%N)
}
phase_end() {
    printf '[docker-setup] %-12s %7ss  %s\n' "$PHASE" "$(elapsed "$PHASE_T0")" "$1"
    PHASE=""
}

cleanup_rootfs() {
    local dir="$ROOTFS_DIR"
    [ -n "$dir" ] && [ -d "$dir" ] || return 0
    # debootstrap mounts proc/sys inside the target; never recurse into a live mount.
    local m
    awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
        umount -l "$m" 2>/dev/null || true
    done
    rm -rf --one-file-system "$dir" || true
    ROOTFS_DIR=""
}
trap cleanup_rootfs EXIT
trap 'die "interrupted"' INT TERM

engine_answers() { timeout 15 docker info >/dev/null 2>&1; }
image_exists() { timeout 30 docker image inspect "$1" >/dev/null 2>&1; }

is_root() { [ "$(id -u)" -eq 0 ]; }

apt_install() {
    is_root || die "need root to apt-get install $*"
    command -v apt-get >/dev/null || die "apt-get not found; install $* by hand"
    # Another apt run (e.g. a colleague's) may hold the dpkg lock: wait for it.
    local apt_opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=600)
    if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -print -quit 2>/dev/null)" ]; then
        apt-get -q -o DPkg::Lock::Timeout=600 update >/dev/null || die "apt-get update failed"
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" "$@" >/tmp/finmath-docker-setup-apt.log 2>&1 \
        || die "apt-get install $* failed (see /tmp/finmath-docker-setup-apt.log)"
}

load_cached_base() {
    [ -n "$CACHE_FILE" ] && [ -s "$CACHE_FILE" ] || return 1
    phase_start cache
    if timeout 600 docker load -i "$CACHE_FILE" >/dev/null 2>&1 && image_exists "$BASE_IMAGE"; then
        phase_end "loaded $BASE_IMAGE from $CACHE_FILE"
        return 0
    fi
    phase_end "$CACHE_FILE is unusable: building the base image"
    return 1
}

# Only one setup at a time per machine (CI and a developer, or two test sessions).
if is_root; then
    exec 9>/var/lock/finmath-docker-setup.lock
    flock -w 1800 9 || die "another docker-setup.sh held the lock for 30 minutes"
fi

# ---------------------------------------------------------------- 1. apt
phase_start apt
need=()
command -v docker >/dev/null || need+=(docker.io)
if ! engine_answers && ! command -v dockerd >/dev/null; then
    need+=(docker.io)
fi
if [ "${#need[@]}" -gt 0 ]; then
    apt_install docker.io
    phase_end "installed docker.io ($(dockerd --version 2>/dev/null || echo '?'))"
else
    phase_end "docker already installed"
fi

# ---------------------------------------------------------------- 2. dockerd
phase_start dockerd
if engine_answers; then
    phase_end "engine already answering"
else
    [ -z "${DOCKER_HOST:-}" ] || die "DOCKER_HOST=$DOCKER_HOST does not answer (docker info failed)"
    is_root || die "no Docker engine answers and starting dockerd needs root"
    command -v dockerd >/dev/null || die "dockerd not found after installing docker.io"
    running_pid=""
    if [ -s /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
        running_pid="$(cat /var/run/docker.pid)"
        log "dockerd (pid $running_pid) is running but not answering yet; waiting for it"
    elif [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
        systemctl start docker || die "systemctl start docker failed (journalctl -u docker)"
    else
        mkdir -p "$(dirname "$DOCKERD_LOG")"
        # shellcheck disable=SC2086  # flags are a word list on purpose
        # 9>&-: the daemon must not inherit (and so hold forever) this script's lock
        setsid nohup dockerd $DOCKERD_FLAGS >>"$DOCKERD_LOG" 2>&1 </dev/null 9>&- &
        running_pid=$!
        log "started dockerd (pid $running_pid) $DOCKERD_FLAGS; log: $DOCKERD_LOG"
    fi
    deadline=$(($(date +%s) + DOCKERD_WAIT))
    until engine_answers; do
        if [ -n "$running_pid" ] && ! kill -0 "$running_pid" 2>/dev/null; then
            tail -n 15 "$DOCKERD_LOG" >&2 2>/dev/null || true
            die "dockerd exited during start-up (log: $DOCKERD_LOG)"
        fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
            tail -n 15 "$DOCKERD_LOG" >&2 2>/dev/null || true
            die "dockerd did not answer within ${DOCKERD_WAIT}s (log: $DOCKERD_LOG)"
        fi
        sleep 0.5
    done
    phase_end "engine up: $(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?')"
fi

# ---------------------------------------------------------------- 3. base image
if image_exists "$BASE_IMAGE"; then
    log "base image $BASE_IMAGE already present"
elif [[ "$BASE_IMAGE" == "$LOCAL_BASE_PREFIX"* ]] && load_cached_base; then
    :
elif [[ "$BASE_IMAGE" != "$LOCAL_BASE_PREFIX"* ]]; then
    phase_start pull
    timeout 600 docker pull "$BASE_IMAGE" >/dev/null 2>&1 \
        || die "base image $BASE_IMAGE is missing and cannot be pulled (no registry?); unset FINMATH_SANDBOX_BASE_IMAGE to build the local Debian base"
    phase_end "pulled $BASE_IMAGE"
else
    is_root || die "building the base image needs root (debootstrap)"
    phase_start apt
    if command -v debootstrap >/dev/null; then
        phase_end "debootstrap already installed"
    else
        apt_install debootstrap
        phase_end "installed debootstrap"
    fi

    phase_start debootstrap
    mirror="${FINMATH_DEBIAN_MIRROR:-}"
    if [ -z "$mirror" ]; then
        # The mirror apt itself uses for <suite>/main (works with sources.list and deb822).
        mirror="$(apt-cache policy 2>/dev/null \
            | awk -v s="$SUITE/main" '$3 == s && $2 ~ /^(https?|file):/ { print $2; exit }')"
    fi
    [ -n "$mirror" ] || die "cannot find the Debian mirror apt uses for $SUITE/main (run apt-get update, or set FINMATH_DEBIAN_MIRROR)"
    ROOTFS_DIR="$(mktemp -d /var/tmp/finmath-rootfs.XXXXXX)"
    chmod 0755 "$ROOTFS_DIR"
    if ! debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$ROOTFS_DIR" "$mirror" \
        >/tmp/finmath-debootstrap.log 2>&1; then
        tail -n 15 /tmp/finmath-debootstrap.log >&2 || true
        die "debootstrap $SUITE from $mirror failed (log: /tmp/finmath-debootstrap.log)"
    fi
    # Slim it down and drop host-specific files debootstrap copied in.
    rm -rf "${ROOTFS_DIR:?}"/var/cache/apt/archives/*.deb "${ROOTFS_DIR:?}"/var/lib/apt/lists/* \
        "${ROOTFS_DIR:?}"/usr/share/doc/* "${ROOTFS_DIR:?}"/usr/share/man/* \
        "${ROOTFS_DIR:?}"/usr/share/info/* "${ROOTFS_DIR:?}"/var/log/*.log "${ROOTFS_DIR:?}"/var/log/apt/*
    : >"$ROOTFS_DIR/etc/resolv.conf"
    echo "finmath-sandbox" >"$ROOTFS_DIR/etc/hostname"
    phase_end "$SUITE minbase from $mirror: $(du -sh --one-file-system "$ROOTFS_DIR" | cut -f1)"

    phase_start import
    tar --numeric-owner --one-file-system -C "$ROOTFS_DIR" -cf - . \
        | docker import \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'ENV LANG=C.UTF-8' \
            --change 'CMD ["/bin/bash"]' \
            --message "debootstrap --variant=minbase $SUITE + $BASE_PACKAGES" \
            - "$BASE_IMAGE" >/dev/null \
        || die "docker import of the rootfs failed"
    cleanup_rootfs
    phase_end "imported $BASE_IMAGE"
fi
if [ -n "$CACHE_FILE" ] && [[ "$BASE_IMAGE" == "$LOCAL_BASE_PREFIX"* ]] && [ ! -s "$CACHE_FILE" ]; then
    phase_start save
    if mkdir -p "$CACHE_DIR" && timeout 600 docker save -o "$CACHE_FILE.part" "$BASE_IMAGE" \
        && mv -f "$CACHE_FILE.part" "$CACHE_FILE"; then
        phase_end "saved $BASE_IMAGE to $CACHE_FILE"
    else
        rm -f "$CACHE_FILE.part"
        phase_end "could not save $BASE_IMAGE to $CACHE_FILE (not cached)"
    fi
fi

# ---------------------------------------------------------------- 4. sandbox image
if [ "${FINMATH_SKIP_SANDBOX_IMAGE:-0}" = 1 ]; then
    log "FINMATH_SKIP_SANDBOX_IMAGE=1: not building the sandbox image"
else
    phase_start image
    py="${PYTHON:-}"
    if [ -z "$py" ]; then
        if [ -x "$REPO_ROOT/.venv/bin/python" ]; then py="$REPO_ROOT/.venv/bin/python"; else py=python3; fi
    fi
    "$py" -c 'import docker' 2>/dev/null || die "$py cannot import the docker SDK (pip install docker)"
    tag="$(FINMATH_SANDBOX_BASE_IMAGE="$BASE_IMAGE" PYTHONPATH="$REPO_ROOT/src${PYTHONPATH:+:$PYTHONPATH}" \
        "$py" -m finmath_tasks.sandbox.docker build --quiet)" || die "sandbox image build failed (see above)"
    phase_end "$tag"
fi

log "done in $(elapsed "$SCRIPT_T0")s"
