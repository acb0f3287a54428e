"""Lifecycle and clean-up of the ``finmath_docker`` backend's containers.

Who owns a container, which uid it has, and how it is removed in every way the
evaluating process can end.

A uid per container: the engine here has no user namespace per container (and
its seccomp profile forbids ``unshare``), so a uid in the container is the same
uid on the host, and the kernel's per-uid state (RLIMIT_NPROC's process count,
the user keyring) is host-wide. Each container therefore gets a uid (= gid) of
its own, drawn at random from ``[UID_BASE, UID_BASE + UID_SPAN)``, that no host
user or group has nor the host's ``/etc/subuid``/``/etc/subgid`` delegate
(:func:`candidate_uid`), labelled ``LABEL_UID`` and checked once the container
exists (``docker_worker.DockerWorker._create_container``): if another of our
containers has it, ours is removed and another is drawn. Not covered: a remote
engine's host users (the check reads this host's databases) and containers of
other tools that run as that uid.

Ownership: every container is labelled with ``LABEL_OWNER``, the host, boot id,
pid and start time of the process that created it (:func:`owner_token`), so a
later run can tell a leftover (owner gone) from a live one.

Lifetime: the container is removed at ``task_cleanup``, by ``cli_cleanup``
(``inspect sandbox cleanup finmath_docker``), at interpreter exit (atexit) and on
SIGTERM/SIGHUP (:func:`install_safety_net`, for every container registered with
:func:`register_live`); containers whose owning process is gone are removed when
the next one starts (:func:`remove_stale_containers`); and pid 1's stdin watchdog
(``docker_exec.PID1_SOURCE``) covers SIGKILL.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import secrets
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from finmath_tasks.sandbox.docker_image import (
    LABEL,
    DockerSandboxError,
    is_not_found,
    short_exc,
)

logger = logging.getLogger(__name__)

LABEL_OWNER = "finmath-tasks.owner"
"""``host|boot id|pid|process start time`` of the process that owns a container."""
LABEL_TASK = "finmath-tasks.task"
LABEL_UID = "finmath-tasks.uid"
"""The container's own uid (and gid) for its programs: no other live container has it."""

UID_BASE = 2_000_000_000
UID_SPAN = 1_000_000_000
"""Each container's uid is drawn at random from ``[UID_BASE, UID_BASE + UID_SPAN)``."""


def _known_to_host(uid: int) -> bool:
    """Does the host use ``uid`` as a user or group id (NSS: /etc/passwd, /etc/group,
    ...), or delegate it to user namespaces (/etc/subuid, /etc/subgid)?"""
    import grp
    import pwd

    for lookup in (pwd.getpwuid, grp.getgrgid):
        with contextlib.suppress(KeyError):
            lookup(uid)
            return True
    for path in ("/etc/subuid", "/etc/subgid"):
        with contextlib.suppress(OSError):
            for line in Path(path).read_text().splitlines():
                with contextlib.suppress(ValueError):
                    _, start, count = line.split(":")
                    if int(start) <= uid < int(start) + int(count):
                        return True
    return False


def candidate_uid() -> int:
    """A random uid (and gid) from the sandbox range that the host does not use."""
    while True:
        uid = UID_BASE + secrets.randbelow(UID_SPAN)
        if not _known_to_host(uid):
            return uid


@functools.lru_cache(maxsize=1)
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "?"


def _process_start(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
        return raw[raw.rfind(b")") + 2 :].split()[19].decode()
    except (OSError, IndexError):
        return "?"


def owner_token(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}|{_boot_id()}|{pid}|{_process_start(pid)}"


def _owner_alive(token: str) -> bool | None:
    """Is the owning process alive? None when it cannot be told (another host)."""
    try:
        host, boot, pid_text, start = token.split("|")
        pid = int(pid_text)
    except ValueError:
        return None
    if host != socket.gethostname():
        return None
    if boot != _boot_id():
        return False  # the machine rebooted since
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return start == "?" or _process_start(pid) == start


def _our_containers(client: Any) -> list[dict[str, Any]]:
    return list(client.api.containers(all=True, filters={"label": LABEL}))


def remove_container(client: Any, container_id: str, wait: float = 10.0) -> None:
    """Force-remove a container and wait until it is gone (auto-remove may race)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            client.api.remove_container(container_id, force=True)
        except Exception as exc:
            if is_not_found(exc):
                return
        try:
            client.api.inspect_container(container_id)
        except Exception as exc:
            if is_not_found(exc):
                return
        if time.monotonic() >= deadline:
            raise DockerSandboxError(f"container {container_id[:12]} could not be removed")
        time.sleep(0.1)


def remove_stale_containers(client: Any) -> list[str]:
    """Remove our containers whose owning process is gone (or that are not running)."""
    removed = []
    for info in _our_containers(client):
        labels = info.get("Labels") or {}
        alive = _owner_alive(labels.get(LABEL_OWNER, ""))
        if alive is False or (alive is None and info.get("State") not in ("running", "created")):
            with contextlib.suppress(Exception):
                remove_container(client, info["Id"])
                removed.append(info["Id"])
    if removed:
        logger.info(f"removed {len(removed)} leftover finmath sandbox container(s)")
    return removed


def remove_containers(client: Any, id: str | None = None) -> list[str]:
    """Remove all our containers (or those whose id, name or task starts with ``id``)."""
    removed = []
    for info in _our_containers(client):
        names = [n.lstrip("/") for n in info.get("Names") or ()]
        task = (info.get("Labels") or {}).get(LABEL_TASK, "")
        if id is None or any(s.startswith(id) for s in (info["Id"], task, *names)):
            with contextlib.suppress(Exception):
                remove_container(client, info["Id"])
                removed.append(info["Id"])
    return removed


class LiveContainer(Protocol):
    """What the exit safety net needs of a live container's owner (a ``DockerWorker``)."""

    def remove_at_exit(self) -> None:
        """Stop its worker and remove its container without waiting on a stuck thread."""


_LIVE: dict[str, LiveContainer] = {}
"""Containers created by this process that are not removed yet (id -> owner)."""
_LIVE_LOCK = threading.Lock()


def register_live(container_id: str, owner: LiveContainer) -> None:
    with _LIVE_LOCK:
        _LIVE[container_id] = owner
    install_safety_net()


def unregister_live(container_id: str) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(container_id, None)


def remove_live_containers() -> None:
    """Remove every container this process still has (atexit / signal handler)."""
    with _LIVE_LOCK:
        owners = list(_LIVE.values())
    for owner in owners:
        try:
            owner.remove_at_exit()
        except Exception as exc:  # best effort at exit
            logger.warning(f"could not remove sandbox container: {short_exc(exc)}")


_SAFETY_NET_INSTALLED = False
_PREVIOUS_HANDLERS: dict[int, Any] = {}


def _on_signal(signum: int, frame: Any) -> None:
    remove_live_containers()
    previous = _PREVIOUS_HANDLERS.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
    elif previous != signal.SIG_IGN:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def install_safety_net() -> None:
    """Once per process: remove the live containers at interpreter exit and on
    SIGTERM/SIGHUP (then hand the signal to the handler that was there before)."""
    global _SAFETY_NET_INSTALLED
    if _SAFETY_NET_INSTALLED:
        return
    _SAFETY_NET_INSTALLED = True
    atexit.register(remove_live_containers)
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread
    for signum in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            _PREVIOUS_HANDLERS[signum] = signal.getsignal(signum)
            signal.signal(signum, _on_signal)
