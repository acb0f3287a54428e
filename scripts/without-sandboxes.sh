#!/usr/bin/env bash
# Run a command as on a machine without sandboxes: bubblewrap is not on PATH and no
# Docker engine answers. For CI's run of the quick tests (.ci/run) and for developers:
#     bash scripts/without-sandboxes.sh python -m pytest -m "not slow"
# Every PATH directory that holds bwrap or docker is replaced by a directory of links to
# its other programs; DOCKER_HOST names a socket nothing listens on. Nothing on the
# machine changes (the shared dockerd and bwrap stay as they are for everyone else), and
# FINMATH_HIDE_SANDBOXES is not used: the package finds the sandboxes absent as a
# newcomer's machine does.
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: bash scripts/without-sandboxes.sh COMMAND [ARGS...]" >&2
  exit 2
fi
hidden=(bwrap docker dockerd)
work=$(mktemp -d "${TMPDIR:-/tmp}/finmath-no-sandboxes.XXXXXX")
trap 'rm -rf "$work"' EXIT
# readable by all (mktemp makes it 0700): a test's program that drops to an unprivileged
# uid finds its commands (sh, id) through these links, as through /usr/bin
chmod 0755 "$work"
path=()
IFS=: read -r -a entries <<< "$PATH"
for n in "${!entries[@]}"; do
  entry=${entries[$n]}
  holds=0
  for name in "${hidden[@]}"; do
    if [ -e "$entry/$name" ]; then holds=1; fi
  done
  if [ "$holds" = 0 ]; then
    path+=("$entry")
    continue
  fi
  links="$work/path$n"
  mkdir "$links"
  ln -s "$entry"/* "$links"/
  for name in "${hidden[@]}"; do
    rm -f "$links/$name"
  done
  path+=("$links")
done
PATH=$(IFS=:; echo "${path[*]}")
export PATH
export DOCKER_HOST="unix://$work/no-docker-engine.sock"
unset FINMATH_HIDE_SANDBOXES FINMATH_REQUIRE_SANDBOXES DOCKER_CONTEXT
for name in "${hidden[@]}"; do
  if command -v "$name" >/dev/null; then
    echo "without-sandboxes: $name is still on PATH ($(command -v "$name"))" >&2
    exit 1
  fi
done
status=0
"$@" || status=$?
exit "$status"
