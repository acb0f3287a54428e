"""Docker backend: warm, isolated Python workers, one container each, per eval run.

Host side of the program executor for Docker (the in-sandbox side is
``runner.py``); the counterpart of ``bwrap.py``, with which it shares the
host-side protocol, request policy and Inspect dispatch (``worker.py``). It
talks to the engine through the ``docker`` Python SDK (never the compose CLI),
imported lazily: this module is imported by the package's Inspect registry and
must stay cheap.

A :class:`DockerWorker` owns one container and the ``runner.py --worker`` process
inside it, which it starts with ``docker exec`` and talks to over the exec's
hijacked socket (JSON lines, demultiplexed from Docker's stream framing). The
Inspect sandbox ``finmath_docker`` (:class:`FinmathDockerSandboxEnvironment`)
shares a :class:`DockerPool` of such workers (``pool_size``, by default one per
available CPU) between all samples of an eval run (per sandbox config), routes
each runner command to an idle one (each worker runs one request at a time; the
wait for a worker is bounded apart from the program's timeout, see
``worker.WorkerPool``) and runs any other command with ``docker exec`` in the
sample's home container. (One worker per container, not several: a worker that
must be killed kills every process of the sandbox user in its container.)

Isolation of the container (see :meth:`DockerWorker._create_container`)
----------------------------------------------------------------------
* Network: ``network_mode="none"`` (only a private loopback).
* Filesystem: read-only root (the image); the only writable place is a
  size-limited tmpfs at ``/run/finmath`` (root-owned, mode 0711, nosuid, nodev,
  noexec, ``RUN_DIR_INODES`` inodes, so that hard links cannot make the clean-up
  slow) where the runner makes each program's private working directory;
  ``/tmp`` and the rest are read-only, so one program cannot leave files for the
  next. No ``/dev/shm`` (``ipc_mode="none"``). Nothing of the host is mounted.
* Privileges: ``cap_drop=ALL`` with only CHOWN, SETUID, SETGID and KILL added
  back, ``no-new-privileges``. Programs, one-off commands and pid 1 run as the
  container's own uid (next point) with no capabilities. Only the warm worker runs
  as uid 0 (of the container, with those four capabilities): like the bwrap worker
  it must switch each program's process to that uid and kill its leftovers; a
  program therefore cannot signal, ptrace or read the memory or pipes of the
  worker, whatever it does. (The container's configured user is 0 because Docker
  grants an exec'd process capabilities only then; pid 1 drops to the container's
  uid as its first action and every exec names its user.)
* A uid per container: the engine here has no user namespace per container (and
  its seccomp profile forbids ``unshare``), so a uid in the container is the same
  uid on the host, and the kernel's per-uid state (RLIMIT_NPROC's process count,
  the user keyring) is host-wide. Each container therefore gets a uid (= gid) of
  its own, drawn at random from ``[UID_BASE, UID_BASE + UID_SPAN)``, that no host
  user or group has nor the host's ``/etc/subuid``/``/etc/subgid`` delegate
  (:func:`_candidate_uid`), labelled ``LABEL_UID`` and checked once the container
  exists: if another of our containers has it, ours is removed and another is
  drawn (checking after creation means two containers created at once cannot
  both keep it). A program that forks to its limit so never makes a program of
  another sandbox, or a host process, fail. It has no name in the image (no
  ``/etc/passwd`` entry; ``HOME`` is ``/tmp``). Not covered: a remote engine's
  host users (the check reads this host's databases) and containers of other
  tools that run as that uid.
* Resources: ``mem_limit``/``memswap_limit`` (no swap), ``nano_cpus``,
  ``pids_limit``, core dumps off; per program the runner adds rlimits (CPU, address
  space, file size, open files, processes) and a wall-clock timeout.
* pid 1 is a tiny reaper (:data:`PID1_SOURCE`): it reaps orphans, ignores every
  signal sent from inside the container (the kernel shields a namespace's init)
  and is not dumpable, so ``kill(-1, SIGKILL)`` from a program cannot stop the
  container. It exits when its stdin reaches EOF: the host keeps an attach
  connection to that stdin (``StdinOnce``) for the container's whole life, so when
  the evaluating process dies, even by SIGKILL, the engine closes it, pid 1
  exits, and the container (``auto_remove``) is removed.
* Host side (``worker.WarmWorker``): a wall-clock guard per request (timeout +
  margin); a worker that hangs, dies, or answers garbage or out of sequence is
  killed together with every process of the sandbox user and transparently
  restarted (that request gets an error result, the next one a fresh worker); a
  worker that exits with status 75 between requests (it could not clean up
  after a program; its exit status is the exec's) gets the request resent to a
  fresh worker, after every process of the sandbox user has been killed.

Lifetime: the container is removed at ``task_cleanup``, by ``cli_cleanup``
(``inspect sandbox cleanup finmath_docker``), at interpreter exit (atexit) and on
SIGTERM/SIGHUP; containers whose owning process is gone are removed when the
next one starts; and the stdin watchdog above covers SIGKILL.

Image: built from the package's ``Dockerfile`` (context: this directory) on top of
a base image and tagged ``finmath-tasks/sandbox:<hash of Dockerfile, runner.py and
the base image id>``, so edited sources or a new base lead to a rebuild. Base image:
``FINMATH_SANDBOX_BASE_IMAGE`` or the config's ``base_image``, else the local
``finmath-tasks/base:bookworm`` (``scripts/docker-setup.sh`` builds it) when present,
else ``python:3.11-slim``. ``FINMATH_SANDBOX_IMAGE`` (or ``image``) uses a prebuilt
image as is. The build runs on the host network; behind a TLS-intercepting proxy
the proxy's CA bundle (``FINMATH_SANDBOX_BUILD_CA``, else pip's ``cert`` setting)
goes into the build's first stage only and never into the image.

Known limits: programs share the container's IPC and network namespaces (the
engine's default seccomp profile forbids the per-program ``unshare`` the bwrap
backend uses): the runner removes every SysV IPC object and POSIX message queue
after each program instead, and keys are out of reach (the profile forbids the
keyring calls); an abstract UNIX socket kept alive by an SCM_RIGHTS cycle lives
until the kernel's garbage collector frees it.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import configparser
import contextlib
import functools
import hashlib
import io
import logging
import os
import secrets
import signal
import socket
import struct
import sys
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    sandboxenv,
)
from pydantic import Field

from finmath_tasks.sandbox import (
    HIDE_SANDBOXES_ENV,
    RUNNER_PATH_IN_SANDBOX,
    hidden_sandbox,
    runner_source_path,
)
from finmath_tasks.sandbox.worker import (
    DEFAULT_QUEUE_TIMEOUT,
    SANDBOX_ENV,
    WarmWorker,
    WorkerConfig,
    WorkerOptions,
    WorkerPool,
    WorkerSandboxEnvironment,
    config_model,
    read_limit_exceeded,
)
from finmath_tasks.sandbox.worker import WorkerStartError as BaseWorkerStartError

logger = logging.getLogger(__name__)

SANDBOX_DIR = Path(__file__).resolve().parent
DOCKERFILE = SANDBOX_DIR / "Dockerfile"

IMAGE_REPOSITORY = "finmath-tasks/sandbox"
LOCAL_BASE_IMAGE = "finmath-tasks/base:bookworm"
"""Debian base built locally by ``scripts/docker-setup.sh`` (no registry needed)."""
DEFAULT_BASE_IMAGE = "python:3.11-slim"
"""The Dockerfile's own default base, for engines that can pull from Docker Hub."""

LABEL = "finmath-tasks.sandbox"
"""Label on every container (value ``worker``) and image (``image``) we create."""
LABEL_OWNER = "finmath-tasks.owner"
"""``host|boot id|pid|process start time`` of the process that owns a container."""
LABEL_TASK = "finmath-tasks.task"
LABEL_SOURCE = "finmath-tasks.source-hash"
LABEL_UID = "finmath-tasks.uid"
"""The container's own uid (and gid) for its programs: no other live container has it."""

UID_BASE = 2_000_000_000
UID_SPAN = 1_000_000_000
"""Each container's uid is drawn at random from ``[UID_BASE, UID_BASE + UID_SPAN)``."""
WORKER_CAPS = ("CHOWN", "SETUID", "SETGID", "KILL")
"""Capabilities left in the container; only the worker (uid 0) ever holds them."""
RUN_DIR = "/run/finmath"
"""The container's only writable directory (tmpfs): program and scratch dirs."""
RUN_DIR_INODES = 8192
"""Files, directories and hard links in RUN_DIR, all programs and scratch dirs together."""
SCRATCH_PREFIX = "work-"
CONTAINER_NAME_PREFIX = "finmath-sandbox-"
_PYTHON = ("python3", "-I", "-B")
_RESPONSE_LIMIT = 32 << 20
_STDERR_TAIL = 4000

PID1_SOURCE = """\
import ctypes, os, signal, sys, threading, time
signal.signal(signal.SIGINT, signal.SIG_DFL)
if os.getuid() == 0:  # started as root only so that docker exec can grant the worker caps
    uid = int(sys.argv[1])  # the container's own uid
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE=0: no ptrace by same-uid programs
def watch():
    while True:
        try:
            if not os.read(0, 4096):
                break
        except OSError:
            break
    os._exit(0)  # the host's attach connection is gone: stop (and so remove) the container
threading.Thread(target=watch, daemon=True).start()
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        time.sleep(1)
"""
"""Program of the container's pid 1 (argument: its uid): reaper + host-liveness watchdog."""

_KILL_ALL_SOURCE = (
    "import os, signal\n"
    "try:\n"
    "    os.kill(-1, signal.SIGKILL)\n"
    "except ProcessLookupError:\n"
    "    pass\n"
)
"""Run as the container's uid: kills every process of that uid but itself and pid 1."""

_WRITE_SOURCE = """\
import os, sys
path = sys.argv[1]
if os.path.isdir(path):
    sys.exit(3)
try:
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(sys.stdin.buffer.read())
except FileNotFoundError:
    sys.exit(2)
except IsADirectoryError:
    sys.exit(3)
except OSError as exc:
    sys.stderr.write(str(exc))
    sys.exit(4)
"""

_READ_SOURCE = """\
import os, sys
path, limit = sys.argv[1], int(sys.argv[2])
try:
    if os.path.isdir(path):
        sys.exit(3)
    if os.path.getsize(path) > limit:
        sys.exit(5)
    with open(path, "rb") as fh:
        sys.stdout.buffer.write(fh.read())
except FileNotFoundError:
    sys.exit(2)
except OSError as exc:
    sys.stderr.write(str(exc))
    sys.exit(4)
"""


_REMOVE_SCRATCH_SOURCE = f"""\
import os, shutil, sys
path, uid = sys.argv[1], int(sys.argv[2])
pid = os.fork()
if pid == 0:  # the contents belong to the container's uid: remove them as that uid
    code = 1
    try:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        for entry in os.scandir(path):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        code = 0
    finally:
        os._exit(code)
os.waitpid(pid, 0)
os.rmdir(path)  # the directory itself sits in the root-owned {RUN_DIR}
"""
"""Run as uid 0 (in the container): removes one sample's scratch directory."""


class DockerSandboxError(RuntimeError):
    """The Docker sandbox cannot be set up (engine, image or container problem)."""


class WorkerStartError(DockerSandboxError, BaseWorkerStartError):
    """The warm worker could not be started (message includes its stderr)."""


@dataclass(frozen=True)
class DockerOptions(WorkerOptions):
    """Limits of a Docker sandbox (``tmpfs_mb``: program and scratch dirs)."""

    container_memory_mb: int = 2048
    """Memory cgroup limit of the whole container (worker + program + pid 1), no swap."""
    cpus: float = 1.0
    pids: int = 128
    """pids cgroup limit of the whole container."""
    image: str | None = None
    """Use this prebuilt image as is (else build/reuse from the Dockerfile)."""
    base_image: str | None = None
    build_network: str | None = "host"
    """Network of the image build (``None``: the engine's default)."""

    def runner_args(self) -> list[str]:
        return [*super().runner_args(), f"--tmp-root={RUN_DIR}"]


def worker_argv(options: DockerOptions) -> list[str]:
    """Command of the warm worker inside the container (run as uid 0 there; the
    container's uid for programs is appended as ``--uid``)."""
    return [*_PYTHON, RUNNER_PATH_IN_SANDBOX, *options.worker_args()]


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


def _candidate_uid() -> int:
    """A random uid (and gid) from the sandbox range that the host does not use."""
    while True:
        uid = UID_BASE + secrets.randbelow(UID_SPAN)
        if not _known_to_host(uid):
            return uid


# --------------------------------------------------------------------------- #
# engine and images
# --------------------------------------------------------------------------- #


def docker_client(timeout: float = 120.0) -> Any:
    """A ``docker.DockerClient`` from the environment (DOCKER_HOST etc.)."""
    try:
        import docker
    except ImportError as exc:  # pragma: no cover - docker is a dependency
        raise DockerSandboxError(
            "the docker Python SDK is not installed (pip install docker)"
        ) from exc
    if hidden_sandbox("docker"):
        raise DockerSandboxError(f"cannot reach a Docker engine: hidden by {HIDE_SANDBOXES_ENV}")
    try:
        return docker.from_env(timeout=int(max(1, timeout)))
    except Exception as exc:
        raise DockerSandboxError(f"cannot reach a Docker engine: {_short_exc(exc)}") from exc


def _short_exc(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).strip().replace("\n", " ") or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_not_found(exc: BaseException) -> bool:
    return type(exc).__name__ in ("NotFound", "ImageNotFound")


def _image_id(client: Any, name: str) -> str | None:
    try:
        return str(client.api.inspect_image(name)["Id"])
    except Exception as exc:
        if _is_not_found(exc):
            return None
        raise


def _pull(client: Any, name: str) -> None:
    repo, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "")
    try:
        client.api.pull(repo, tag=tag or "latest")
    except Exception as exc:
        raise DockerSandboxError(
            f"image {name} is not present and cannot be pulled ({_short_exc(exc)}); without "
            "registry access run scripts/docker-setup.sh, which builds the local base image "
            f"{LOCAL_BASE_IMAGE}"
        ) from exc


def resolve_base_image(client: Any, requested: str | None = None, *, pull: bool = True) -> str:
    """The base image to build on (see module doc for the order); pulled if needed."""
    name = requested or os.environ.get("FINMATH_SANDBOX_BASE_IMAGE") or None
    if name is None:
        name = LOCAL_BASE_IMAGE if _image_id(client, LOCAL_BASE_IMAGE) else DEFAULT_BASE_IMAGE
    if _image_id(client, name) is None:
        if not pull:
            raise DockerSandboxError(f"base image {name} is not present")
        _pull(client, name)
    return name


def source_hash(base_image_id: str) -> str:
    """Hash of what the sandbox image is made of (tag of the image)."""
    digest = hashlib.sha256()
    for part in (
        DOCKERFILE.read_bytes(),
        runner_source_path().read_bytes(),
        base_image_id.encode(),
    ):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()[:16]


def _pip_config_cert() -> str | None:
    """The ``cert`` setting of pip's configuration files, if any."""
    files = [
        "/etc/pip.conf",
        "/etc/xdg/pip/pip.conf",
        os.path.expanduser("~/.pip/pip.conf"),
        os.path.expanduser("~/.config/pip/pip.conf"),
        os.path.join(sys.prefix, "pip.conf"),
    ]
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(os.environ["PIP_CONFIG_FILE"])
    found = None
    for path in files:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path)
        except configparser.Error:
            continue
        for section in ("global", "install"):
            if parser.has_option(section, "cert"):
                found = parser.get(section, "cert").strip() or found
    return found


def find_build_ca() -> Path | None:
    """CA bundle for pip inside the image build (None: pip's own certificates).

    ``FINMATH_SANDBOX_BUILD_CA`` (a file, or ``none``), else the host's pip
    settings (``PIP_CERT``, pip.conf ``cert``), else ``REQUESTS_CA_BUNDLE``.
    """
    explicit = os.environ.get("FINMATH_SANDBOX_BUILD_CA")
    if explicit is not None:
        if explicit.strip().lower() in ("", "none"):
            return None
        path = Path(explicit)
        if not path.is_file():
            raise DockerSandboxError(f"FINMATH_SANDBOX_BUILD_CA={explicit} is not a file")
        return path
    for candidate in (
        os.environ.get("PIP_CERT"),
        _pip_config_cert(),
        os.environ.get("REQUESTS_CA_BUNDLE"),
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def build_context(ca_bundle: Path | None = None) -> io.BytesIO:
    """The build context as a tar: Dockerfile, runner.py (+ build-ca.pem)."""
    files = [
        ("Dockerfile", DOCKERFILE.read_bytes()),
        ("runner.py", runner_source_path().read_bytes()),
    ]
    if ca_bundle is not None:
        files.append(("build-ca.pem", ca_bundle.read_bytes()))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def ensure_image(
    client: Any,
    *,
    image: str | None = None,
    base_image: str | None = None,
    rebuild: bool = False,
    build_network: str | None = "host",
    log: Callable[[str], None] | None = None,
) -> str:
    """Name of a sandbox image that is present, building it if needed."""
    explicit = image or os.environ.get("FINMATH_SANDBOX_IMAGE") or None
    if explicit:
        if _image_id(client, explicit) is None:
            _pull(client, explicit)
        return explicit
    base = resolve_base_image(client, base_image)
    base_id = _image_id(client, base) or base
    digest = source_hash(base_id)
    tag = f"{IMAGE_REPOSITORY}:{digest}"
    if not rebuild and _image_id(client, tag) is not None:
        return tag
    emit = log or logger.info
    emit(f"building the sandbox image {tag} from {DOCKERFILE} on {base}")
    started = time.monotonic()
    ca = find_build_ca()
    lines: list[str] = []
    try:
        events = client.api.build(
            fileobj=build_context(ca),
            custom_context=True,
            tag=tag,
            buildargs={"BASE_IMAGE": base},
            network_mode=build_network or None,
            labels={LABEL: "image", LABEL_SOURCE: digest},
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
        )
        for event in events:
            if "error" in event:
                detail = event.get("errorDetail", {}).get("message") or event["error"]
                tail = "".join(lines[-15:])
                raise DockerSandboxError(f"building {tag} failed: {detail.strip()}\n{tail}")
            text = event.get("stream")
            if text:
                lines.append(text)
                if text.strip():
                    emit(text.rstrip())
    except DockerSandboxError:
        raise
    except Exception as exc:
        raise DockerSandboxError(f"building {tag} failed: {_short_exc(exc, 1000)}") from exc
    if _image_id(client, tag) is None:
        raise DockerSandboxError(f"building {tag} reported success but the image is missing")
    with contextlib.suppress(Exception):
        client.api.tag(tag, IMAGE_REPOSITORY, "latest")
    _remove_stale_images(client, keep=tag)
    emit(f"built {tag} in {time.monotonic() - started:.1f}s (CA bundle: {ca or 'none'})")
    return tag


def _remove_stale_images(client: Any, keep: str) -> None:
    """Untag older builds of the sandbox image (ignored while a container uses them)."""
    try:
        images = client.api.images(name=IMAGE_REPOSITORY)
    except Exception:
        return
    for info in images:
        for ref in info.get("RepoTags") or ():
            if ref not in (keep, f"{IMAGE_REPOSITORY}:latest"):
                with contextlib.suppress(Exception):
                    client.api.remove_image(ref)


# --------------------------------------------------------------------------- #
# container ownership and leftovers
# --------------------------------------------------------------------------- #


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


def _remove_container(client: Any, container_id: str, wait: float = 10.0) -> None:
    """Force-remove a container and wait until it is gone (auto-remove may race)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            client.api.remove_container(container_id, force=True)
        except Exception as exc:
            if _is_not_found(exc):
                return
        try:
            client.api.inspect_container(container_id)
        except Exception as exc:
            if _is_not_found(exc):
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
                _remove_container(client, info["Id"])
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
                _remove_container(client, info["Id"])
                removed.append(info["Id"])
    return removed


# --------------------------------------------------------------------------- #
# exec connections
# --------------------------------------------------------------------------- #


class _ExecStream:
    """A hijacked ``docker exec`` connection: stdin writes, demultiplexed reads.

    Docker frames a non-TTY exec's output as ``[stream, 0, 0, 0, size (u32 BE)]``
    headers each followed by ``size`` bytes of stdout (1) or stderr (2).
    """

    def __init__(self, sock: Any) -> None:
        self._holder = sock  # keeps the HTTP response (and so the connection) alive
        self.sock: socket.socket = getattr(sock, "_sock", sock)
        self._buf = bytearray()
        self.closed = False

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close_stdin(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)

    def _fill(self, size: int, deadline: float | None) -> bool:
        while len(self._buf) < size:
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("no answer from the container in time")
                self.sock.settimeout(remaining)
            else:
                self.sock.settimeout(None)
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError as exc:
                raise TimeoutError("no answer from the container in time") from exc
            if not chunk:
                return False
            self._buf += chunk
        return True

    def read_frame(self, deadline: float | None) -> tuple[int, bytes] | None:
        """Next (stream, payload); None at end of stream."""
        if not self._fill(8, deadline):
            return None
        kind = self._buf[0]
        (size,) = struct.unpack(">I", bytes(self._buf[4:8]))
        if not self._fill(8 + size, deadline):
            return None
        payload = bytes(self._buf[8 : 8 + size])
        del self._buf[: 8 + size]
        return kind, payload

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(Exception):
            self._holder.close()


class _Collector:
    """Bounded capture of one exec stream (keeps the head up to ``limit``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    @property
    def overflow(self) -> bool:
        return self.total > self.limit


# --------------------------------------------------------------------------- #
# the worker container
# --------------------------------------------------------------------------- #

_LIVE: dict[str, DockerWorker] = {}
"""Containers created by this process that are not removed yet (id -> worker)."""
_LIVE_LOCK = threading.Lock()


class DockerWorker(WarmWorker):
    """One container with a warm ``runner.py --worker``; one request at a time.

    The request policy (guard, restarts, recycling) is :class:`WarmWorker`'s;
    this class provides the container and the worker's exec connection. Its
    async methods run the blocking SDK calls in a thread. Requests and one-off
    commands are serialised by an asyncio.Lock (re-created if used from another
    event loop) and, underneath, a threading.Lock, so an abandoned (cancelled)
    call cannot overlap with the next one. ``start()`` also builds or finds the
    image and starts the container.
    """

    start_error = WorkerStartError

    def __init__(self, options: DockerOptions | None = None, task_name: str = "") -> None:
        self.options: DockerOptions = options or DockerOptions()
        super().__init__(self.options)
        self.task_name = task_name
        self.image: str | None = None
        self.container_id: str | None = None
        self.container_name: str | None = None
        self.uid: int | None = None
        """The container's own uid (and gid) for pid 1, programs and one-off commands."""
        self.container_starts = 0
        self._client: Any = None
        self._attach: Any = None
        self._worker: _ExecStream | None = None
        self._worker_exec: str | None = None
        self._worker_pid: int | None = None
        self._out = bytearray()
        self._stderr = bytearray()
        self._sync_lock = threading.RLock()
        _install_safety_net()  # here: usually the main thread, where signals can be set

    # ------------------------------------------------------------- async API

    async def exec(
        self,
        cmd: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float | None = None,
        output_limit: int | None = None,
    ) -> tuple[int, bytes, bytes, bool]:
        """Run a one-off command as the container's uid: (exit code, stdout, stderr, truncated)."""
        data = input.encode("utf-8") if isinstance(input, str) else input
        async with self._bind_loop():
            return await self._call(self._exec_sync, cmd, data, cwd, env, timeout, output_limit)

    async def make_scratch(self) -> str:
        """A fresh private directory (the container's uid's, unguessable name) for one sample."""
        async with self._bind_loop():
            return await self._call(self._make_scratch_sync)

    async def remove_scratch(self, path: str) -> None:
        async with self._bind_loop():
            await self._call(self._remove_scratch_sync, path)

    async def close(self) -> None:
        """Stop the worker and remove the container (waits until it is gone)."""
        await asyncio.to_thread(self.kill)

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return await asyncio.to_thread(fn, *args)
        except BaseException as exc:
            if not isinstance(exc, Exception):  # cancelled mid-call: state unknown
                self._abandon()
            raise

    # ------------------------------------------------- the WarmWorker transport

    async def _ensure_started(self) -> None:
        try:
            await self._call(self._ensure_worker_sync)
        except WorkerStartError:
            raise
        except DockerSandboxError as exc:  # no image or container: no worker either
            raise WorkerStartError(str(exc)) from exc

    async def _roundtrip(self, payload: bytes, guard: float) -> bytes:
        line: bytes = await self._call(self._roundtrip_sync, payload, guard)
        return line

    async def _exit_status(self) -> int | None:
        status: int | None = await self._call(self._exit_status_sync)
        return status

    async def _discard(self) -> None:
        await self._call(functools.partial(self._stop_worker_sync, kill=True))

    def _abandon(self) -> None:
        """Make the thread's I/O fail fast; that thread then kills the worker."""
        stream = self._worker
        if stream is not None:
            stream.close()

    # ------------------------------------------------------------ sync parts

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = docker_client()
        return self._client

    def _create_container(self) -> None:
        from docker.types import Ulimit

        client = self.client
        api = client.api
        remove_stale_containers(client)
        if self.image is None:
            self.image = ensure_image(
                client,
                image=self.options.image,
                base_image=self.options.base_image,
                build_network=self.options.build_network,
            )
        o = self.options
        host_config = api.create_host_config(
            network_mode="none",
            read_only=True,
            # few inodes (hard links count): what a program leaves is quick to delete
            tmpfs={
                RUN_DIR: f"rw,nosuid,nodev,noexec,size={o.tmpfs_mb}m,nr_inodes={RUN_DIR_INODES},mode=0711"
            },
            cap_drop=["ALL"],
            cap_add=list(WORKER_CAPS),
            security_opt=["no-new-privileges"],
            pids_limit=o.pids,
            mem_limit=f"{o.container_memory_mb}m",
            memswap_limit=f"{o.container_memory_mb}m",
            nano_cpus=int(o.cpus * 1e9),
            ipc_mode="none",
            ulimits=[Ulimit(name="core", soft=0, hard=0)],
            auto_remove=True,
            init=False,
        )
        for _attempt in range(8):
            uid = _candidate_uid()
            name = f"{CONTAINER_NAME_PREFIX}{secrets.token_hex(6)}"
            labels = {LABEL: "worker", LABEL_OWNER: owner_token(),
                      LABEL_TASK: self.task_name[:200], LABEL_UID: str(uid)}  # fmt: skip
            try:
                created = api.create_container(
                    self.image,
                    command=[*_PYTHON, "-c", PID1_SOURCE, str(uid)],
                    # Docker (>= 20.10) gives an exec'd process capabilities only when the
                    # container's user is root; pid 1 drops to the container's uid at once,
                    # every exec names its user, and only the worker keeps uid 0 (module doc).
                    user="0:0",
                    working_dir="/tmp",
                    hostname="finmath-sandbox",
                    environment=SANDBOX_ENV,
                    labels=labels,
                    stdin_open=True,  # with detach=False this also sets StdinOnce
                    network_disabled=True,
                    host_config=host_config,
                    name=name,
                )
            except Exception as exc:
                raise DockerSandboxError(
                    f"cannot create the sandbox container: {_short_exc(exc)}"
                ) from exc
            container_id = str(created["Id"])
            _register_live(container_id, self)
            self.container_id, self.container_name, self.uid = container_id, name, uid
            # Checked once created (labelled): of two containers created at once with
            # the same uid, the later one's check always sees the earlier one.
            try:
                same = api.containers(all=True, filters={"label": f"{LABEL_UID}={uid}"})
            except Exception as exc:
                self._remove_container_sync()
                raise DockerSandboxError(f"cannot list containers: {_short_exc(exc)}") from exc
            if all(info["Id"] == container_id for info in same):
                break
            self._remove_container_sync()  # another live container has this uid: draw again
        else:
            raise DockerSandboxError("found no uid unused by other containers")
        try:
            self._attach = api.attach_socket(container_id, params={"stdin": 1, "stream": 1})
            api.start(container_id)
        except Exception as exc:
            self._remove_container_sync()
            raise DockerSandboxError(
                f"cannot start the sandbox container: {_short_exc(exc)}"
            ) from exc
        self.container_starts += 1
        logger.info(f"started sandbox container {name} ({self.image})")

    @property
    def _user(self) -> str:
        return f"{self.uid}:{self.uid}"

    def _container_running(self) -> bool:
        if self.container_id is None:
            return False
        try:
            state = self.client.api.inspect_container(self.container_id)["State"]
        except Exception:
            return False
        return bool(state.get("Running"))

    def _exec_start(
        self,
        cmd: list[str],
        *,
        user: str,
        stdin: bool,
        workdir: str = "/tmp",
        env: dict[str, str] | None = None,
    ) -> tuple[str, _ExecStream]:
        api = self.client.api
        assert self.container_id is not None
        exec_id = api.exec_create(
            self.container_id, cmd, stdin=stdin, stdout=True, stderr=True, tty=False,
            user=user, workdir=workdir, environment=env,
        )["Id"]  # fmt: skip
        return exec_id, _ExecStream(api.exec_start(exec_id, socket=True))

    def _exec_simple(self, cmd: list[str], user: str, timeout: float = 30.0) -> int:
        """Run a helper command to completion, discarding output; its exit code."""
        exec_id, stream = self._exec_start(cmd, user=user, stdin=False)
        deadline = time.monotonic() + timeout
        try:
            while stream.read_frame(deadline) is not None:
                pass
        finally:
            stream.close()
        code = self.client.api.exec_inspect(exec_id).get("ExitCode")
        return -1 if code is None else int(code)

    def _read_line(self, stream: _ExecStream, deadline: float) -> bytes | None:
        """Next stdout line of the worker; None at EOF (stderr goes to a tail)."""
        while True:
            newline = self._out.find(b"\n")
            if newline >= 0:
                line = bytes(self._out[: newline + 1])
                del self._out[: newline + 1]
                return line
            if len(self._out) > _RESPONSE_LIMIT:
                raise ValueError("response too large")
            frame = stream.read_frame(deadline)
            if frame is None:
                return None
            kind, payload = frame
            if kind == 2:
                self._stderr += payload
                del self._stderr[:-_STDERR_TAIL]
            else:
                self._out += payload

    def _stderr_tail(self, limit: int = 1000) -> str:
        return bytes(self._stderr[-limit:]).decode("utf-8", "replace").strip()

    def _start_worker_exec(self) -> tuple[str, _ExecStream]:
        argv = [*worker_argv(self.options), f"--uid={self.uid}"]
        return self._exec_start(argv, user="0", stdin=True)

    def _ensure_container_sync(self) -> None:
        if self.container_id is not None and self._container_running():
            return
        if self.container_id is not None:
            logger.warning("the sandbox container is gone; starting a new one")
            self._remove_container_sync()
        self._create_container()

    def _ensure_worker_sync(self) -> None:
        with self._sync_lock:
            if self._worker is not None and not self._recycle_pending:
                return
            self._stop_worker_sync()
            self._ensure_container_sync()
            self._stderr.clear()
            self._out.clear()
            try:
                exec_id, stream = self._start_worker_exec()
            except Exception as exc:
                # the container may have died between the check and the exec: once more
                self._remove_container_sync()
                self._create_container()
                try:
                    exec_id, stream = self._start_worker_exec()
                except Exception as exc2:
                    raise WorkerStartError(f"cannot exec the worker: {_short_exc(exc2)}") from exc
            self.starts += 1
            try:
                line = self._read_line(stream, time.monotonic() + self.options.startup_timeout)
                problem = self._accept_ready(line)
            except (TimeoutError, ValueError) as exc:
                problem = type(exc).__name__
            if problem is not None:
                error = self._start_failure(problem)
                stream.close()
                raise error
            self._worker, self._worker_exec = stream, exec_id
            self._worker_pid = int(self.ready_info.get("pid", 0))

    def _kill_sandbox_processes(self) -> None:
        """SIGKILL every process of the sandbox user (programs, leftovers, one-offs)."""
        with contextlib.suppress(Exception):
            self._exec_simple([*_PYTHON, "-c", _KILL_ALL_SOURCE], user=self._user, timeout=15)

    def _stop_worker_sync(self, *, kill: bool = False) -> None:
        """Close the worker's connection (it exits at EOF); ``kill``: SIGKILL it too."""
        stream, pid = self._worker, self._worker_pid
        self._worker, self._worker_exec, self._worker_pid = None, None, None
        self._out.clear()
        if stream is not None:
            stream.close()
        if kill and pid and self.container_id is not None:
            with contextlib.suppress(Exception):
                self._exec_simple(
                    [*_PYTHON, "-c", f"import os; os.kill({pid}, 9)"], user="0", timeout=15
                )
            self._kill_sandbox_processes()

    def _roundtrip_sync(self, payload: bytes, guard: float) -> bytes:
        with self._sync_lock:
            stream = self._worker
            if stream is None:
                return b""
            try:
                deadline = time.monotonic() + guard
                stream.sock.settimeout(guard)  # a stuck worker must not block the send either
                stream.send(payload)
                return self._read_line(stream, deadline) or b""
            except TimeoutError:
                raise
            except (OSError, ValueError):  # broken connection or oversized line
                return b""
            finally:
                if stream.closed:  # abandoned by a cancelled request: nobody else cleans up
                    self._stop_worker_sync(kill=True)

    def _exit_status_sync(self, wait: float = 2.0) -> int | None:
        """Exit status of the worker's exec once it has stopped (None if it runs on)."""
        with self._sync_lock:
            exec_id = self._worker_exec
            if exec_id is None:
                return None
            deadline = time.monotonic() + wait
            while True:
                try:
                    info = self.client.api.exec_inspect(exec_id)
                except Exception:
                    return None
                if not info.get("Running"):
                    code = info.get("ExitCode")
                    return None if code is None else int(code)
                if time.monotonic() >= deadline:
                    return None
                time.sleep(0.02)

    def _exec_sync(
        self,
        cmd: list[str],
        data: bytes | None,
        cwd: str | None,
        env: dict[str, str] | None,
        timeout: float | None,
        output_limit: int | None,
    ) -> tuple[int, bytes, bytes, bool]:
        if not cmd:
            raise ValueError("empty command")
        with self._sync_lock:
            self._ensure_container_sync()
            limit = output_limit or SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
            launcher = [*_PYTHON, RUNNER_PATH_IN_SANDBOX, "--exec", *self.options.runner_args(),
                        f"--uid={self.uid}"]  # fmt: skip
            argv = [*launcher, "--", *cmd]
            if timeout is not None:
                argv = ["/usr/bin/timeout", "-s", "KILL", f"{timeout:g}",
                        *launcher, f"--exec-timeout={timeout:g}", "--", *cmd]  # fmt: skip
            # uid 0 only for the launcher, which drops to the container's uid before cmd
            exec_id, stream = self._exec_start(
                argv, user="0", stdin=data is not None, workdir=cwd or "/tmp", env=env
            )
            out, err = _Collector(limit), _Collector(limit)
            started = time.monotonic()
            deadline = None if timeout is None else started + timeout + 10
            timed_out = False
            try:
                if data is not None:
                    with contextlib.suppress(OSError):
                        stream.send(data)
                    stream.close_stdin()
                while True:
                    frame = stream.read_frame(deadline)
                    if frame is None:
                        break
                    (err if frame[0] == 2 else out).add(frame[1])
            except TimeoutError:
                timed_out = True
            finally:
                stream.close()
            code = self.client.api.exec_inspect(exec_id).get("ExitCode")
            self._kill_sandbox_processes()  # nothing a one-off command started survives it
            killed_at_limit = (
                timeout is not None and code == 137 and time.monotonic() - started >= timeout
            )
            if timed_out or killed_at_limit:
                raise TimeoutError(f"command timed out after {timeout}s: {cmd[0]}")
            return (
                (-1 if code is None else int(code)),
                bytes(out.data),
                bytes(err.data),
                (out.overflow or err.overflow),
            )

    def _make_scratch_sync(self) -> str:
        with self._sync_lock:
            self._ensure_container_sync()
            path = f"{RUN_DIR}/{SCRATCH_PREFIX}{secrets.token_hex(16)}"
            code = self._exec_simple(
                [*_PYTHON, "-c",
                 f"import os; os.mkdir({path!r}, 0o700); os.chown({path!r}, {self.uid}, {self.uid})"],
                user="0",
            )  # fmt: skip
            if code != 0:
                raise DockerSandboxError(f"cannot create the scratch directory {path}")
            return path

    def _remove_scratch_sync(self, path: str) -> None:
        if not path.startswith(f"{RUN_DIR}/{SCRATCH_PREFIX}"):
            raise ValueError(f"not a scratch directory: {path}")
        with self._sync_lock:
            if self.container_id is None or not self._container_running():
                return
            with contextlib.suppress(Exception):
                self._exec_simple(
                    [*_PYTHON, "-c", _REMOVE_SCRATCH_SOURCE, path, str(self.uid)], user="0"
                )

    def _remove_container_sync(self) -> None:
        container_id = self.container_id
        self.container_id = None
        if self._attach is not None:
            with contextlib.suppress(Exception):
                getattr(self._attach, "_sock", self._attach).close()
            with contextlib.suppress(Exception):
                self._attach.close()
            self._attach = None
        if container_id is not None:
            try:
                _remove_container(self.client, container_id)
            finally:
                _unregister_live(container_id)

    def kill(self) -> None:
        """Synchronous hard stop: close the worker and remove the container."""
        with self._sync_lock:
            self._stop_worker_sync()
            self._remove_container_sync()


def _register_live(container_id: str, worker: DockerWorker) -> None:
    with _LIVE_LOCK:
        _LIVE[container_id] = worker
    _install_safety_net()


def _unregister_live(container_id: str) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(container_id, None)


def remove_live_containers() -> None:
    """Remove every container this process still has (atexit / signal handler)."""
    with _LIVE_LOCK:
        workers = list(_LIVE.values())
    for worker in workers:
        try:
            # don't wait for a lock held by a thread that may never return
            if worker._sync_lock.acquire(timeout=2):
                try:
                    worker._stop_worker_sync()
                    worker._remove_container_sync()
                finally:
                    worker._sync_lock.release()
            else:
                worker._abandon()
                if worker.container_id is not None:
                    _remove_container(docker_client(timeout=20), worker.container_id)
        except Exception as exc:  # best effort at exit
            logger.warning(f"could not remove sandbox container: {_short_exc(exc)}")


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


def _install_safety_net() -> None:
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


class DockerPool(WorkerPool):
    """``size`` DockerWorkers, each with its own container, shared by concurrent
    programs (see :class:`worker.WorkerPool`). Only the first is started by
    :meth:`start`; the others start when first used. Each sample's one-off commands
    and files live in one of the containers (:meth:`home`, in turn)."""

    workers: list[DockerWorker]  # type: ignore[assignment]

    def __init__(
        self,
        size: int,
        options: DockerOptions,
        task_name: str = "",
        queue_timeout: float = DEFAULT_QUEUE_TIMEOUT,
    ) -> None:
        super().__init__([DockerWorker(options, task_name) for _ in range(size)], queue_timeout)
        self._homes = 0

    def home(self) -> DockerWorker:
        """The container for a new sample's scratch directory and one-off commands."""
        self._homes += 1
        return self.workers[(self._homes - 1) % len(self.workers)]

    async def close(self) -> None:
        """Stop every worker and remove every container (waits until they are gone)."""
        await asyncio.gather(*(w.close() for w in self.workers))


# --------------------------------------------------------------------------- #
# availability
# --------------------------------------------------------------------------- #


@functools.lru_cache(maxsize=1)
def _docker_check() -> tuple[bool, str]:
    try:
        import docker
    except ImportError:
        return False, "the docker Python SDK is not installed (pip install docker)"
    if hidden_sandbox("docker"):
        return False, f"no Docker engine answers (hidden by {HIDE_SANDBOXES_ENV})"
    try:
        client = docker.from_env(timeout=5)
        client.ping()
        version = client.version().get("Version", "?")
    except Exception as exc:
        return False, f"no Docker engine answers ({_short_exc(exc, 200)})"
    try:
        explicit = os.environ.get("FINMATH_SANDBOX_IMAGE")
        if explicit:
            if _image_id(client, explicit) is None:
                return (
                    False,
                    f"Docker Engine {version}, but FINMATH_SANDBOX_IMAGE={explicit} is missing",
                )
            return True, f"Docker Engine {version}, image {explicit}"
        try:
            base = resolve_base_image(client, pull=False)
        except DockerSandboxError as exc:
            return False, (
                f"Docker Engine {version}, but {exc} (run scripts/docker-setup.sh to build one)"
            )
        tag = f"{IMAGE_REPOSITORY}:{source_hash(_image_id(client, base) or base)}"
        if _image_id(client, tag) is not None:
            return True, f"Docker Engine {version}, image {tag}"
        return True, f"Docker Engine {version}; the sandbox image will be built on {base}"
    except Exception as exc:
        return False, f"Docker Engine {version}, but inspecting images failed: {_short_exc(exc)}"


def docker_available(refresh: bool = False) -> tuple[bool, str]:
    """Cheap check: does an engine answer (5 s timeout) and is an image (or base) there?"""
    if refresh:
        _docker_check.cache_clear()
    return _docker_check()


# --------------------------------------------------------------------------- #
# Inspect sandbox environment
# --------------------------------------------------------------------------- #


class FinmathDockerConfig(WorkerConfig, frozen=True):
    """Configuration of the ``finmath_docker`` sandbox (all optional)."""

    image: str | None = None
    base_image: str | None = None
    container_memory_mb: int = Field(default=2048, ge=256)
    cpus: float = Field(default=1.0, gt=0)
    pids: int = Field(default=128, ge=16)

    def options(self) -> DockerOptions:
        return DockerOptions(
            memory_mb=self.memory_mb,
            container_memory_mb=self.container_memory_mb,
            cpus=self.cpus,
            pids=self.pids,
            tmpfs_mb=self.tmpfs_mb,
            recycle_after=self.recycle_after,
            image=self.image,
            base_image=self.base_image,
        )


def _config_model(config: SandboxEnvironmentConfigType | None) -> FinmathDockerConfig:
    return config_model(config, FinmathDockerConfig, "finmath_docker")


@sandboxenv(name="finmath_docker")
class FinmathDockerSandboxEnvironment(WorkerSandboxEnvironment):
    """Inspect sandbox: a pool of containers with a warm worker each per eval run
    (and config; ``pool_size`` containers, by default one per available CPU).

    ``run_request(request)`` goes to an idle worker of the pool
    and returns the runner's response. Every command (the runner's included)
    runs with ``docker exec`` in the sample's home container as the container's
    own uid (with the runner's limits), in the sample's private scratch directory (its cwd,
    created on first use); ``write_file``/``read_file`` resolve relative paths
    against it. Only that directory is writable.
    """

    sandbox_name = "finmath_docker"
    config_class = FinmathDockerConfig

    _pools: ClassVar[dict[FinmathDockerConfig, DockerPool]] = {}
    """One pool per configuration. Keyed by config only: Inspect calls
    ``task_init("startup", ...)`` and ``task_cleanup("shutdown", ...)`` once per eval
    run with placeholder names, and ``sample_init`` with the real task name."""

    def __init__(self, pool: DockerPool) -> None:
        super().__init__()
        self._pool = pool
        self._worker = pool.home()
        self._scratch: str | None = None

    @classmethod
    def _pool_for(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> DockerPool:
        model = _config_model(config)
        pool = cls._pools.get(model)
        if pool is None:
            pool = cls._pools[model] = DockerPool(
                model.pool_size, model.options(), task_name, model.queue_timeout
            )
        return pool

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        pool = cls._pool_for(task_name, config)
        try:
            await pool.start(1)
        except DockerSandboxError as exc:
            raise RuntimeError(f"the finmath_docker sandbox is not usable here: {exc}") from exc

    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        return {"default": cls(cls._pool_for(task_name, config))}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            if isinstance(environment, cls) and environment._scratch is not None:
                with contextlib.suppress(Exception):
                    await environment._worker.remove_scratch(environment._scratch)
                environment._scratch = None

    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        pool = cls._pools.pop(_config_model(config), None)
        if pool is None:
            return
        if cleanup:
            await pool.close()
            return
        for worker in pool.workers:
            if worker.container_name:
                print(
                    f"finmath_docker: container {worker.container_name} left running (no cleanup)"
                )

    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        for pool in list(cls._pools.values()):
            with contextlib.suppress(Exception):
                await pool.close()
        cls._pools.clear()

        def remove() -> list[str]:
            return remove_containers(docker_client(timeout=30), id)

        try:
            removed = await asyncio.to_thread(remove)
        except DockerSandboxError as exc:
            print(f"finmath_docker: nothing cleaned up: {exc}")
            return
        print(f"finmath_docker: removed {len(removed)} container(s)")

    async def _scratch_dir(self) -> str:
        if self._scratch is None:
            self._scratch = await self._worker.make_scratch()
        return self._scratch

    async def _resolve(self, path: str) -> str:
        if path.startswith("/"):
            return path
        return (
            f"{await self._scratch_dir()}/{path}"
            if path not in ("", ".")
            else await self._scratch_dir()
        )

    async def _run_request(self, request: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        return await self._pool.run(request, timeout)

    async def _exec_command(
        self,
        cmd: list[str],
        input: str | bytes | None,
        cwd: str | None,
        env: dict[str, str] | None,
        timeout: int | None,
    ) -> ExecResult[str]:
        workdir = await self._resolve(cwd or "")
        limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
        code, out, err, truncated = await self._worker.exec(
            cmd, input=input, cwd=workdir, env=env, timeout=timeout, output_limit=limit
        )
        stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        if truncated:
            raise OutputLimitExceededError(
                limit_str=SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR,
                truncated_output=stdout,
            )
        return ExecResult(success=code == 0, returncode=code, stdout=stdout, stderr=stderr)

    async def _write_bytes(self, file: str, data: bytes) -> None:
        path = await self._resolve(file)
        code, _, err, _ = await self._worker.exec(
            [*_PYTHON, "-c", _WRITE_SOURCE, path], input=data, cwd=await self._scratch_dir()
        )
        _raise_for_file_code(code, file, err)

    async def _read_bytes(self, file: str) -> bytes:
        path = await self._resolve(file)
        limit = SandboxEnvironmentLimits.MAX_READ_FILE_SIZE
        code, out, err, _ = await self._worker.exec(
            [*_PYTHON, "-c", _READ_SOURCE, path, str(limit)],
            cwd=await self._scratch_dir(),
            output_limit=limit + 1,
        )
        if code == 5:
            raise read_limit_exceeded()
        _raise_for_file_code(code, file, err)
        return out


def _raise_for_file_code(code: int, file: str, err: bytes) -> None:
    if code == 0:
        return
    detail = err.decode("utf-8", "replace").strip()
    if code == 2:
        raise FileNotFoundError(f"{file}: no such file or directory")
    if code == 3:
        raise IsADirectoryError(f"{file} is a directory")
    if code == 4:
        raise PermissionError(f"{file}: {detail or 'permission denied'}")
    raise RuntimeError(f"file operation on {file} failed (exit {code}): {detail}")


# --------------------------------------------------------------------------- #
# command line: python -m finmath_tasks.sandbox.docker build|check|cleanup
# --------------------------------------------------------------------------- #


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m finmath_tasks.sandbox.docker",
        description="Manage the finmath_docker sandbox image and containers.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the sandbox image if missing; print its tag")
    build.add_argument("--base-image", default=None)
    build.add_argument("--rebuild", action="store_true")
    build.add_argument("--quiet", action="store_true")
    sub.add_parser("check", help="is Docker usable for the sandbox?")
    cleanup = sub.add_parser("cleanup", help="remove sandbox containers")
    cleanup.add_argument("id", nargs="?", default=None)
    cleanup.add_argument("--stale", action="store_true", help="only those whose owner is gone")
    args = parser.parse_args(argv)

    def log(text: str) -> None:
        if not getattr(args, "quiet", False):
            print(text, file=sys.stderr, flush=True)

    try:
        if args.command == "check":
            ok, reason = docker_available()
            print(reason)
            return 0 if ok else 1
        client = docker_client()
        if args.command == "build":
            network = os.environ.get("FINMATH_SANDBOX_BUILD_NETWORK", "host")
            tag = ensure_image(
                client,
                base_image=args.base_image,
                rebuild=args.rebuild,
                build_network=None if network in ("", "default") else network,
                log=log,
            )
            print(tag)
            return 0
        removed = (
            remove_stale_containers(client) if args.stale else remove_containers(client, args.id)
        )
        print(f"removed {len(removed)} container(s)")
        return 0
    except DockerSandboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
