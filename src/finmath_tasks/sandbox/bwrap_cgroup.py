"""Memory and pids cgroups for the ``finmath_bwrap`` backend's sandboxes (best effort).

Memory: besides each program's RLIMIT_AS, every worker sandbox is put in its
own memory+pids cgroup (``memory_mb + tmpfs_mb + 512`` MiB, 64 tasks) when the
host's cgroups are writable (cgroup v2 with delegated controllers, or v1);
program processes are the OOM killer's first choice (``oom_score_adj`` 1000).

Each group is a child of the evaluating process's own cgroup, named with
:data:`NAME_PREFIX`, its owner's pid and a random suffix; groups whose owner is
gone are removed when the next one is made and by ``cli_cleanup``
(:func:`remove_stale_cgroups`).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

NAME_PREFIX = "finmath-bwrap-"
"""Prefix of what the backend makes on the host: cgroups and scratch directories."""


def _own_cgroups() -> dict[str, str]:
    """controller ("memory", "pids", or "" for cgroup v2) -> our cgroup path."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                paths[controller] = path
    return paths


def _cgroup_mounts() -> dict[str, str]:
    """controller ("memory", "pids", or "" for cgroup v2) -> mount point."""
    mounts: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) < 4:
                continue
            if fields[2] == "cgroup2":
                mounts.setdefault("", fields[1])
            elif fields[2] == "cgroup":
                for option in fields[3].split(","):
                    if option in ("memory", "pids"):
                        mounts.setdefault(option, fields[1])
    return mounts


CGROUP_JOIN_FAILED = 125
_CGROUP_JOIN = (
    'while [ "$1" != -- ]; do echo 0 > "$1/cgroup.procs" || exit 125; shift; done; shift; exec "$@"'
)


class Cgroup:
    """Memory and pids limits for one sandbox, in a child of our own cgroup.

    A shell joins it and then execs bwrap (:meth:`wrap`), so every process of the
    sandbox is inside. cgroup v2 is used when our cgroup delegates the memory and pids
    controllers, else cgroup v1's memory (+ pids) hierarchies.
    """

    def __init__(self, memory_bytes: int, pids: int) -> None:
        self.memory_bytes = memory_bytes
        self.pids = pids
        self.dirs: list[Path] = []
        self.reason = ""

    @staticmethod
    def _parent(mounts: dict[str, str], own: dict[str, str], key: str) -> Path | None:
        if key not in mounts:
            return None
        mount = Path(mounts[key])
        nested = mount / own.get(key, "/").lstrip("/")
        return nested if nested.is_dir() else mount

    @staticmethod
    def _remove_stale(parent: Path) -> None:
        """Remove empty groups left by processes that exited without closing."""
        with contextlib.suppress(OSError):
            for group in parent.glob(f"{NAME_PREFIX}*"):
                owner = group.name[len(NAME_PREFIX) :].split("-", 1)[0]
                if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                    with contextlib.suppress(OSError):
                        group.rmdir()  # fails (and is kept) if not empty

    def create(self) -> bool:
        name = f"{NAME_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
        mounts, own = _cgroup_mounts(), _own_cgroups()
        for key in ("", "memory", "pids"):
            parent = self._parent(mounts, own, key)
            if parent is not None:
                self._remove_stale(parent)
        try:
            v2 = self._parent(mounts, own, "")
            delegated = ""
            if v2 is not None:
                with contextlib.suppress(OSError):
                    delegated = (v2 / "cgroup.subtree_control").read_text()
            if v2 is not None and {"memory", "pids"} <= set(delegated.split()):
                group = v2 / name
                group.mkdir()
                self.dirs.append(group)
                (group / "memory.max").write_text(str(self.memory_bytes))
                (group / "pids.max").write_text(str(self.pids))
                with contextlib.suppress(OSError):
                    (group / "memory.swap.max").write_text("0")
                return True
            memory = self._parent(mounts, own, "memory")
            if memory is None:
                self.reason = "no writable memory cgroup"
                return False
            group = memory / name
            group.mkdir()
            self.dirs.append(group)
            (group / "memory.limit_in_bytes").write_text(str(self.memory_bytes))
            with contextlib.suppress(OSError):
                (group / "memory.memsw.limit_in_bytes").write_text(str(self.memory_bytes))
            pids = self._parent(mounts, own, "pids")
            if pids is not None:
                group = pids / name
                group.mkdir()
                self.dirs.append(group)
                (group / "pids.max").write_text(str(self.pids))
            return True
        except OSError as exc:
            self.reason = f"cannot set up a cgroup: {exc}"
            self.remove()
            return False

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run by a shell that first moves itself into the group, then execs
        it (exit status :data:`CGROUP_JOIN_FAILED` if it cannot join). Not a
        ``preexec_fn``: that runs Python in a fork of the whole evaluating process
        (threads and all), where a lock held by another thread at the fork deadlocks
        the child before exec, and ``Popen`` (called in the event loop's thread by
        asyncio) then waits for that exec forever, freezing the whole run."""
        return ["/bin/sh", "-c", _CGROUP_JOIN, "finmath-cgroup-join", *map(str, self.dirs),
                "--", *argv]  # fmt: skip

    def remove(self, wait: float = 2.0) -> None:
        """Remove the group (retrying while its last processes are exiting)."""
        deadline = time.monotonic() + wait
        for group in reversed(self.dirs):
            while True:
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
        self.dirs = []


def remove_stale_cgroups() -> None:
    """Remove the empty groups of processes that exited without closing their sandboxes."""
    mounts, own = _cgroup_mounts(), _own_cgroups()
    for key in ("", "memory", "pids"):
        parent = Cgroup._parent(mounts, own, key)
        if parent is not None:
            Cgroup._remove_stale(parent)
