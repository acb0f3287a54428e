"""Attacks on a warm sandbox worker, shared by the bwrap and the docker tests.

Every backend is attacked by the same list, :data:`ATTACKS`: ``test_attack``
in ``test_bwrap_security.py`` and in ``test_docker_backend.py`` runs each one
on that backend's module-wide warm worker and then checks, the same way for
every attack, that no program process is left in the sandbox, that the worker
was neither restarted nor replaced, and that the NEXT program on it returns the
right value.

An attack runs one or more programs through a :class:`Sandbox` and asserts what
must happen: the call returns a result (``ok=False`` with a clear reason, or
``ok=True`` where the attack is harmless) and the host is unchanged. Where a
property could be missing silently, there is a control (e.g. the host itself
can reach the socket the sandbox must not reach). Where the backends
legitimately differ (the programs' directory, Docker's image having its own
/etc, Docker's pid 1 running as the sandbox user), the attack asks the Sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import importlib.util
import io
import json
import os
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from finmath_tasks.sandbox import RUNNER_PATH_IN_SANDBOX, runner_source_path

GOLD = "def solution():\n    x = 57000 * (1-0.2)**3\n    return 21000 - x"
GOLD_VALUE = 21000 - 57000 * (1 - 0.2) ** 3

# A program whose result depends on numpy, numpy_financial, math and builtins:
# any leftover tampering from a previous program shows up as a wrong value.
PROBE = """
import math
import numpy as np
import numpy_financial as npf

def solution():
    payment = npf.pmt(0.05 / 12, 360, 200000)
    return float(np.round(payment, 2)) + math.sqrt(16) + abs(-1) + float(sum([1, 2]))
"""
PROBE_VALUE = round(-1073.6432460242797, 2) + 4.0 + 1 + 3.0

CANARY_ENV = "FINMATH_CANARY_SECRET"
CANARY_VALUE = f"canary-{uuid.uuid4().hex}"
CANARY_ENVIRON = {CANARY_ENV: CANARY_VALUE, "OPENAI_API_KEY": CANARY_VALUE}
"""Variables of the evaluating process that must not reach the sandbox."""

PROGRAM_ENV = ["HOME", "LANG", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PATH"]
"""The whole environment of a program (names)."""


@contextlib.contextmanager
def canary_environment() -> Iterator[None]:
    """Set :data:`CANARY_ENVIRON` in the evaluating process (restored afterwards).

    Start the sandbox inside it: if the environment leaked, the sandbox would see it.
    """
    saved = {key: os.environ.get(key) for key in CANARY_ENVIRON}
    os.environ.update(CANARY_ENVIRON)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


ONE_REQUEST_WORKER = """
import json, os, sys
print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
request = json.loads(sys.stdin.readline())
print(json.dumps({"ok": True, "value": float(len(request["code"])), "value_type": "float",
                  "error": None, "stdout": os.urandom(8).hex(), "stderr": "",
                  "duration_ms": 0.0, "worker_seq": 1}), flush=True)
sys.exit(75)
"""
"""Stand-in for ``runner.py --worker`` (stdlib only) that answers one request
(value: the length of its code; stdout: a token of this process) and then exits
with status 75, as the runner does when it could not clean up after a program."""


class Sandbox(Protocol):
    """A backend's warm worker, as the attacks see it."""

    program_dir: str
    """Where the runner makes each program's working directory (``prog-*``)."""
    own_system_files: bool
    """The sandbox has a root filesystem of its own (Docker's image: /etc, /home,
    /root/.bashrc exist there, the image's, not the host's); else nothing of the
    host but the bound directories exists at all (bwrap)."""
    pid1_is_sandbox_user: bool
    """pid 1 runs as the programs' uid (Docker's reaper): programs may signal it, and
    the kernel ignores the signal (a namespace's init); bwrap's pid 1 is root."""
    program_uid: int
    """uid and gid of programs: 65534 in bwrap's own user namespace; in Docker, the
    container's own uid (no other container and no host user has it)."""
    work_timeout: float
    """Timeout of programs that touch about 1 GB of memory: 3 s for bwrap, 10 s in
    Docker's container (1 CPU)."""

    def run(self, code: str, timeout: float = 3.0, **extra: Any) -> dict[str, Any]:
        """Run one program on the warm worker (the module's, started inside
        :func:`canary_environment`)."""
        ...

    def assert_no_program_processes(self) -> None:
        """No process of a program is left in the sandbox (once the worker has
        cleaned up after the last one)."""
        ...


class LoopHarness:
    """A backend's warm worker (its ``run(request)`` coroutine) driven from a
    private event loop; a backend's :class:`Sandbox` adds its facts."""

    program_uid = 65534

    def __init__(self, worker: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.worker = worker
        self.loop = loop

    def run(self, code: str, timeout: float = 3.0, **extra: Any) -> dict[str, Any]:
        request = {"code": code, "timeout": timeout, **extra}
        result: dict[str, Any] = self.loop.run_until_complete(self.worker.run(request))
        return result


@dataclass(frozen=True)
class Attack:
    name: str
    fn: Callable[..., None]
    params: tuple[tuple[str, Any], ...] = ()

    def __call__(self, sandbox: Sandbox) -> None:
        self.fn(sandbox, **dict(self.params))

    def __str__(self) -> str:
        return self.name


ATTACKS: list[Attack] = []


def attack(fn: Callable[[Sandbox], None]) -> Callable[[Sandbox], None]:
    ATTACKS.append(Attack(fn.__name__, fn))
    return fn


def attack_variants(
    variants: dict[str, dict[str, Any]],
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def register(fn: Callable[..., None]) -> Callable[..., None]:
        for suffix, params in variants.items():
            ATTACKS.append(Attack(f"{fn.__name__}-{suffix}", fn, tuple(params.items())))
        return fn

    return register


def succeeds(sb: Sandbox, code: str, value: Any, **extra: Any) -> dict[str, Any]:
    """Run ``code``: it must succeed with ``value`` (a number or a ``pytest.approx``)."""
    resp = sb.run(code, **extra)
    assert resp["ok"] is True and resp["value"] == value, resp
    return resp


def fails(sb: Sandbox, code: str, error: str | None = None, **extra: Any) -> dict[str, Any]:
    """Run ``code``: it must fail (no value), with exactly ``error`` when given."""
    resp = sb.run(code, **extra)
    assert resp["ok"] is False and resp["value"] is None, resp
    if error is not None:
        assert resp["error"] == error, resp
    return resp


def cmdline(pid: int) -> str:
    """A host process's command line ("" if it is gone)."""
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def host_processes_with(marker: str) -> list[int]:
    """Host pids (any namespace) whose command line contains ``marker``."""
    pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    return [p for p in pids if marker in cmdline(p) and p != os.getpid()]


# --------------------------------------------------------------------------- #
# network
# --------------------------------------------------------------------------- #


@attack
def no_network(sb: Sandbox) -> None:
    code = (
        "import json, socket\n"
        "def solution():\n"
        "    errors = []\n"
        "    for address in (('1.1.1.1', 53), ('192.0.2.1', 80)):  # 192.0.2.1: TEST-NET-1\n"
        "        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
        "        s.settimeout(2)\n"
        "        try:\n"
        "            s.connect(address)\n"
        "            errors.append(0)\n"
        "        except OSError as exc:\n"
        "            errors.append(exc.errno or -1)\n"
        "    try:\n"
        "        socket.getaddrinfo('pypi.org', 443)\n"
        "        resolved = True\n"
        "    except OSError:\n"
        "        resolved = False\n"
        "    names = sorted(name for _, name in socket.if_nameindex())\n"
        "    print(json.dumps([errors, resolved, names]))\n"
        "    return 1\n"
    )
    errors, resolved, names = json.loads(succeeds(sb, code, 1.0)["stdout"])
    # ENETUNREACH: the sandbox has no route at all (the host would time out or connect)
    assert errors == [errno.ENETUNREACH, errno.ENETUNREACH], errors
    assert resolved is False
    assert names == ["lo"]  # only a private loopback


@attack
def host_loopback_is_unreachable(sb: Sandbox) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # control: host can
        server.accept()[0].close()
        code = (
            "import socket\n"
            "def solution():\n"
            "    try:\n"
            f"        socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "    except OSError as exc:\n"
            "        return exc.errno or -1\n"
            "    return 0\n"
        )
        succeeds(sb, code, errno.ECONNREFUSED)
        with pytest.raises(socket.timeout):
            server.accept()  # nothing from the sandbox arrived
    finally:
        server.close()


# --------------------------------------------------------------------------- #
# host files, environment, privileges
# --------------------------------------------------------------------------- #

_REPO_ROOT = Path(__file__).resolve().parents[2]


@attack
def host_files_are_invisible(sb: Sandbox) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        canary = Path(tmp) / "canary.txt"
        canary.write_text("host secret")
        root_canary = Path("/root") / f".finmath-canary-{uuid.uuid4().hex}"
        root_canary.write_text("root secret")
        try:
            host_only = [str(canary), str(root_canary), str(Path.cwd() / "pyproject.toml"),
                         str(_REPO_ROOT / "pyproject.toml"), "/work/main/pyproject.toml",
                         "/var/run/docker.sock", "/run/docker.sock"]  # fmt: skip
            secrets = ["/etc/shadow", str(Path.home() / ".bashrc"), "/root/.bashrc"]
            system = ["/etc/passwd", "/home"]
            assert canary.exists() and root_canary.exists()  # control
            assert (_REPO_ROOT / "pyproject.toml").exists()  # control
            code = (
                "import json, os\n"
                f"PATHS = {host_only + secrets + system!r}\n"
                "def solution():\n"
                "    seen = {p: [os.path.exists(p), os.access(p, os.R_OK)] for p in PATHS}\n"
                "    print(json.dumps([seen, sorted(os.listdir('/'))]))\n"
                "    return 1\n"
            )
            seen, top = json.loads(succeeds(sb, code, 1.0)["stdout"])
        finally:
            root_canary.unlink()
    assert [p for p in host_only if seen[p][0]] == []
    if sb.own_system_files:  # the image's own files: none of its secrets is readable
        assert [p for p in secrets if seen[p][1]] == []
    else:  # nothing of the host exists but the bound directories
        assert [p for p in secrets + system if seen[p][0]] == []
        assert "home" not in top and "etc" not in top and "srv" not in top


@attack
def environment_of_the_evaluator_does_not_leak(sb: Sandbox) -> None:
    for key, value in CANARY_ENVIRON.items():  # control: set in the evaluating process
        assert os.environ[key] == value
    code = (
        "import os\n"
        "def solution():\n"
        f"    hits = [k for k, v in os.environ.items() if {CANARY_VALUE!r} in v or k in {sorted(CANARY_ENVIRON)!r}]\n"
        "    readable = 0\n"
        "    for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
        "        try:\n"
        "            data = open(f'/proc/{pid}/environ', 'rb').read()\n"
        "        except OSError:\n"
        "            continue\n"
        "        readable += 1\n"
        f"        hits += [pid] if {CANARY_VALUE.encode()!r} in data else []\n"
        "    print(sorted(os.environ), readable)\n"
        "    return len(hits)\n"
    )
    stdout = succeeds(sb, code, 0.0)["stdout"]
    names = json.loads(stdout.rsplit("]", 1)[0].replace("'", '"') + "]")
    assert names == sorted(PROGRAM_ENV)


@attack
def programs_run_unprivileged(sb: Sandbox) -> None:
    code = (
        "import os, json\n"
        "def solution():\n"
        "    st = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())\n"
        "    info = {k: st[k].strip() for k in ('Uid', 'Gid', 'Groups', 'CapEff', 'CapPrm', "
        "'CapAmb', 'NoNewPrivs')}\n"
        "    for attempt in (lambda: os.setuid(0), lambda: os.setgid(0),\n"
        "                    lambda: open('/proc/sys/kernel/hostname', 'w').write('x'),\n"
        "                    lambda: os.chroot('/')):\n"
        "        try:\n"
        "            attempt()\n"
        "            info.setdefault('succeeded', []).append(1)\n"
        "        except OSError:\n"
        "            pass\n"
        "    print(json.dumps(info))\n"
        "    return os.getuid()\n"
    )
    info = json.loads(succeeds(sb, code, float(sb.program_uid))["stdout"])
    uid = str(sb.program_uid)
    assert info["Uid"].split() == [uid] * 4 and info["Gid"].split() == [uid] * 4
    assert info["Groups"] == ""
    assert int(info["CapEff"], 16) == int(info["CapPrm"], 16) == int(info["CapAmb"], 16) == 0
    assert info["NoNewPrivs"] == "1" and "succeeded" not in info


@attack
def cannot_write_outside_the_program_dir(sb: Sandbox) -> None:
    spec = importlib.util.find_spec("numpy")
    assert spec is not None and spec.origin
    numpy_init = Path(spec.origin).resolve()  # the host's (bound into the bwrap sandbox)
    runner_digest = hashlib.sha256(runner_source_path().read_bytes()).hexdigest()
    numpy_mtime = numpy_init.stat().st_mtime_ns
    with tempfile.TemporaryDirectory() as tmp:
        host_target = Path(tmp) / "pwned"
        targets = [str(host_target), str(numpy_init), RUNNER_PATH_IN_SANDBOX,
                   "/usr/lib/pwned", "/usr/lib/python3/dist-packages/pwned.py", "/tmp/pwned",
                   "/pwned", "/dev/shm/pwned", "/proc/pwned", "/proc/sys/kernel/hostname",
                   "/etc/passwd", "/run/finmath/pwned", "/var/tmp/pwned"]  # fmt: skip
        code = (
            "import json, os, numpy\n"
            f"TARGETS = {targets!r} + [numpy.__file__]  # + the sandbox's own numpy\n"
            "def solution():\n"
            "    written = []\n"
            "    for path in TARGETS:\n"
            "        try:\n"
            "            with open(path, 'a') as fh:\n"
            "                fh.write('pwned')\n"
            "            written.append(path)\n"
            "        except OSError:\n"
            "            pass\n"
            "    with open('scratch.txt', 'w') as fh:  # the program's own directory is writable\n"
            "        fh.write('ok')\n"
            "    print(json.dumps([written, open('scratch.txt').read(), os.getcwd()]))\n"
            "    return len(written)\n"
        )
        written, scratch, cwd = json.loads(succeeds(sb, code, 0.0)["stdout"])
        assert written == [] and scratch == "ok"
        assert cwd.startswith(f"{sb.program_dir}/prog-"), cwd
        assert not host_target.exists()
    assert numpy_init.stat().st_mtime_ns == numpy_mtime
    assert hashlib.sha256(runner_source_path().read_bytes()).hexdigest() == runner_digest


# --------------------------------------------------------------------------- #
# resources
# --------------------------------------------------------------------------- #


@attack
def fork_bomb(sb: Sandbox) -> None:
    bomb = (
        "import os\n"
        "def solution():\n"
        "    while True:\n"
        "        try:\n"
        "            os.fork()\n"
        "        except OSError:\n"
        "            pass\n"
    )
    t0 = time.monotonic()
    fails(sb, bomb, "timeout after 1.0s", timeout=1.0)
    assert time.monotonic() - t0 < 4
    sb.assert_no_program_processes()
    # RLIMIT_NPROC really bounds it: count how many children one program gets
    counted = (
        "import os, time\n"
        "def solution():\n"
        "    kids = 0\n"
        "    for _ in range(500):\n"
        "        try:\n"
        "            pid = os.fork()\n"
        "        except OSError:\n"
        "            break\n"
        "        if pid == 0:\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        "        kids += 1\n"
        "    return kids\n"
    )
    resp = sb.run(counted)
    assert resp["ok"] is True and 1 <= resp["value"] < 16, resp


@attack_variants(
    {
        "one-allocation": {"code": "def solution():\n    x = bytearray(8 << 30)\n    return 1"},
        "gradual": {
            "code": "def solution():\n    keep = []\n    while True:\n"
            "        keep.append(bytearray(64 << 20))"
        },
        "numpy": {
            "code": "import numpy as np\ndef solution():\n    return float(np.ones(1 << 31).sum())"
        },
    }
)
def memory_bomb(sb: Sandbox, code: str) -> None:
    resp = fails(sb, code, timeout=sb.work_timeout)
    assert resp["error"].startswith("memory limit exceeded"), resp
    assert "MemoryError" in resp["error"], resp


@attack
def memory_limit_leaves_room_for_real_work(sb: Sandbox) -> None:
    code = (
        "import numpy as np, scipy.stats as st, sympy\n"
        "def solution():\n"
        "    a = np.ones(25_000_000)  # 200 MB\n"
        "    return float(a.sum()) + st.norm.ppf(0.5) + float(sympy.Integer(1))\n"
    )
    succeeds(sb, code, 25_000_001.0, timeout=sb.work_timeout)


@attack_variants(
    {
        "cpu-loop": {"code": "def solution():\n    while True:\n        pass", "timeout": 1.0},
        "sleep": {"code": "import time\ndef solution():\n    time.sleep(30)\n    return 1",
                  "timeout": 0.5},
        "ignores-signals": {
            "code": "import signal\ndef solution():\n"
            "    for s in (signal.SIGTERM, signal.SIGXCPU, signal.SIGINT):\n"
            "        signal.signal(s, signal.SIG_IGN)\n"
            "    while True:\n        pass",
            "timeout": 1.0,
        },
    }
)  # fmt: skip
def time_limit(sb: Sandbox, code: str, timeout: float) -> None:
    t0 = time.monotonic()
    fails(sb, code, f"timeout after {timeout}s", timeout=timeout)
    elapsed = time.monotonic() - t0
    assert timeout <= elapsed < timeout + 1.5


@attack
def output_flood(sb: Sandbox) -> None:
    flood = "def solution():\n    print('x' * 100_000_000)\n    return 1"
    resp = succeeds(sb, flood, 1.0, max_output=1000)
    head, _, tail = resp["stdout"].partition("\n")
    assert head == f"[... {100_000_001 - 1000} bytes truncated ...]"
    assert tail == "x" * 999 + "\n"
    endless = "import sys\ndef solution():\n    while True:\n        sys.stderr.write('y' * 65536)"
    resp = fails(sb, endless, "timeout after 1.0s", timeout=1.0, max_output=1000)
    assert resp["stderr"].startswith("[... ") and len(resp["stderr"]) < 1100
    both = (
        "import sys\n"
        "def solution():\n"
        "    chunk = 'x' * (1 << 20)\n"
        "    for _ in range(200):\n"
        "        sys.stdout.write(chunk)\n"
        "        sys.stderr.write(chunk)\n"
        "    return 7\n"
    )
    resp = succeeds(sb, both, 7, timeout=20.0, max_output=4096)
    assert len(resp["stdout"]) < 8192 and "truncated" in resp["stdout"]
    assert len(resp["stderr"]) < 8192


@attack
def filling_the_disk(sb: Sandbox) -> None:
    one_file = "def solution():\n    open('big', 'wb').write(b'0' * (32 << 20))\n    return 1"
    fails(sb, one_file, "file size limit exceeded (killed by SIGXFSZ)")
    many = (
        "def solution():\n"
        "    i = 0\n"
        "    while True:\n"
        "        try:\n"
        "            with open(f'f{i}', 'wb') as fh:\n"
        "                fh.write(b'0' * (8 << 20))\n"
        "        except OSError as exc:\n"
        "            return exc.errno\n"
        "        i += 1\n"
    )
    succeeds(sb, many, errno.ENOSPC)
    # the space came back: the next program can write 15 MiB again
    again = "import os\ndef solution():\n    open('f', 'wb').write(b'1' * (15 << 20))\n    return os.path.getsize('f')"
    succeeds(sb, again, 15 << 20)
    spread = (
        "def solution():\n"
        "    written = 0\n"
        "    for i in range(64):\n"
        "        try:\n"
        "            with open(f'fill{i}', 'wb') as fh:\n"
        "                for _ in range(16):\n"
        "                    fh.write(b'\\0' * (1 << 20))\n"
        "                    written += 1\n"
        "        except OSError:\n"
        "            continue\n"
        "    return written\n"
    )
    resp = sb.run(spread, timeout=20.0)
    assert not resp["ok"] or resp["value"] < 64 * 16, resp  # the tmpfs filled up
    after = (
        "def solution():\n"
        "    with open('big', 'wb') as fh:\n"
        "        fh.write(b'1' * (8 << 20))\n"
        "    return len(open('big', 'rb').read())\n"
    )
    succeeds(sb, after, 8 << 20)


# --------------------------------------------------------------------------- #
# processes
# --------------------------------------------------------------------------- #


@attack
def double_forked_daemon_does_not_survive(sb: Sandbox) -> None:
    marker = f"finmath-daemon-{uuid.uuid4().hex}"
    code = (
        "import os, sys, time\n"
        "def solution():\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        f"            os.execv('/bin/sleep', [{marker!r}, '300'])\n"
        "        if os.fork() == 0:\n"
        "            os.execv(sys.executable, [sys.executable, '-c', "
        f"'import time; time.sleep(300)', {marker!r}])\n"
        "        if os.fork() == 0:\n"
        "            while True:\n"
        "                time.sleep(0.1)\n"
        "        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "    time.sleep(0.3)\n"
        "    return 1\n"
    )
    succeeds(sb, code, 1.0)
    deadline = time.monotonic() + 3
    while host_processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert host_processes_with(marker) == []
    sb.assert_no_program_processes()
    succeeds(sb, GOLD, GOLD_VALUE)
    assert host_processes_with(marker) == []


@attack
def killing_the_worker_or_everything_fails(sb: Sandbox) -> None:
    code = (
        "import json, os, signal\n"
        "def solution():\n"
        "    denied = {'worker': 0, 'pid1': 0}\n"
        "    for name, target in (('worker', os.getppid()), ('pid1', 1)):\n"
        "        for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP):\n"
        "            try:\n"
        "                os.kill(target, sig)\n"
        "            except PermissionError:\n"
        "                denied[name] += 1\n"
        "    os.kill(-1, signal.SIGKILL)\n"
        "    print(json.dumps(denied))\n"
        "    return 1\n"
    )
    denied = json.loads(succeeds(sb, code, 1.0)["stdout"])  # kill(-1) spares only the caller
    # the worker is root: EPERM; bwrap's pid 1 is root too, Docker's is the sandbox
    # user, whose signals the kernel drops (it is the namespace's init)
    assert denied == {"worker": 3, "pid1": 0 if sb.pid1_is_sandbox_user else 3}, denied
    # kill(0, SIGTERM) (own process group) terminates the program itself
    own_group = "import os, signal\ndef solution():\n    os.kill(0, signal.SIGTERM)\n    return 1"
    fails(sb, own_group, "killed by signal SIGTERM")


@attack
def worker_cannot_be_spied_on_or_impersonated(sb: Sandbox) -> None:
    # Writing a forged response line into the worker's protocol pipe, reading its
    # memory or ptrace-attaching to it would let a program set the next results.
    code = """
import ctypes, os

def solution():
    worker = os.getppid()
    breaches = []
    for fd in range(0, 8):
        try:
            with open(f"/proc/{worker}/fd/{fd}", "wb") as fh:
                fh.write(b'{"ok": true, "value": 666.0}\\n')
            breaches.append(f"fd{fd}")
        except OSError:
            pass
    for name in ("mem", "environ", "maps"):
        try:
            open(f"/proc/{worker}/{name}", "rb").read(16)
            breaches.append(name)
        except OSError:
            pass
    libc = ctypes.CDLL(None, use_errno=True)
    for pid in (worker, 1):
        if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
            breaches.append(f"ptrace {pid}")
    print(breaches)
    return len(breaches)
"""
    succeeds(sb, code, 0)


@attack
def segfault(sb: Sandbox) -> None:
    segv = "import ctypes\ndef solution():\n    return ctypes.string_at(0)"
    fails(sb, segv, "killed by signal SIGSEGV")


# --------------------------------------------------------------------------- #
# interpreter state and returned values
# --------------------------------------------------------------------------- #


@attack
def patches_do_not_reach_the_next_program(sb: Sandbox) -> None:
    patcher = (
        "import builtins, math, sys, json, numpy\n"
        "def solution():\n"
        "    builtins.abs = lambda x: 42\n"
        "    numpy.sum = lambda *a, **k: 42\n"
        "    math.pi = 3\n"
        "    sys.modules['numpy_financial'] = None\n"
        "    json.dumps = None\n"
        "    return abs(-1) + numpy.sum([0]) + math.pi\n"
    )
    succeeds(sb, patcher, 87.0)  # the patches worked inside
    more = (
        "import builtins, math, sys\n"
        "import numpy as np\n"
        "import numpy_financial as npf\n"
        "def solution():\n"
        "    builtins.abs = lambda x: 1000\n"
        "    builtins.sum = lambda *a, **k: 1000\n"
        "    builtins.float = lambda *a: 1000.0\n"
        "    math.sqrt = lambda x: 1000\n"
        "    npf.pmt = lambda *a, **k: 1000\n"
        "    np.round = lambda *a, **k: 1000\n"
        "    sys.modules['numpy_financial'] = None\n"
        "    return 1\n"
    )
    succeeds(sb, more, 1)
    victim = (
        "import math, numpy, numpy_financial as npf\n"
        "def solution():\n"
        "    return abs(-2) + numpy.sum([1, 2]) + math.pi + npf.fv(0, 1, 0, -1)\n"
    )
    succeeds(sb, victim, pytest.approx(2 + 3 + 3.141592653589793 + 1))
    succeeds(sb, PROBE, pytest.approx(PROBE_VALUE, abs=1e-9))


@attack
def malicious_return_objects(sb: Sandbox) -> None:
    code = (
        "import os\n"
        "class Evil:\n"
        "    def __float__(self): print('CALLED __float__'); return 1.0\n"
        "    def __index__(self): print('CALLED __index__'); return 1\n"
        "    def __int__(self): print('CALLED __int__'); return 1\n"
        "    def __reduce__(self): print('CALLED __reduce__'); return (os.system, ('id',))\n"
        "    def __repr__(self): print('CALLED __repr__'); return '1.0'\n"
        "    def __eq__(self, other): print('CALLED __eq__'); return True\n"
        "    __hash__ = None\n"
        "class F(float):\n"
        "    def __float__(self): print('CALLED F.__float__'); return 1.0\n"
        "def solution():\n"
        "    return KIND\n"
    )
    for kind, name in [("Evil()", "Evil"), ("F(2.0)", "F"), ("[Evil()]", "list")]:
        resp = fails(sb, code.replace("KIND", kind))
        assert f"returned {name}" in resp["error"] and "not a number" in resp["error"]
        assert "CALLED" not in resp["stdout"]
    others = [
        "class F:\n    def __float__(self):\n        raise SystemExit(0)\n"
        "def solution():\n    return F()\n",
        "import os\nclass R(float):\n    def __reduce__(self):\n        return (os.system, ('id',))\n"
        "    def __float__(self):\n        return 666.0\n"
        "def solution():\n    return R(1.0)\n",
        "class I(int):\n    def __index__(self):\n        return 666\n"
        "def solution():\n    return I(3)\n",
        "def solution():\n    return float('nan')\n",
        "def solution():\n    return '42'\n",
        # a forged result on the child's result pipe
        "import os\ndef solution():\n"
        '    os.write(3, b\'{"ok": true, "value": 1e999}\')\n'
        "    os._exit(0)\n",
    ]
    for other in others:
        fails(sb, other)


# --------------------------------------------------------------------------- #
# kernel objects and per-user state
# --------------------------------------------------------------------------- #

_KERNEL_OBJECTS = """
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
KEY, NAME = {key}, {name!r}
SYS_KEYCTL = {{"x86_64": 250, "aarch64": 219}}[os.uname().machine]
SYS_ADD_KEY = {{"x86_64": 248, "aarch64": 217}}[os.uname().machine]

def found():
    seen = []
    if libc.shmget(KEY, 0, 0) != -1:
        seen.append("shm")
    if libc.msgget(KEY, 0) != -1:
        seen.append("msg")
    if libc.semget(KEY, 0, 0) != -1:
        seen.append("sem")
    if libc.mq_open(("/" + NAME).encode(), os.O_RDONLY) != -1:
        seen.append("mqueue")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\\0" + NAME)
        seen.append("abstract socket")
    except OSError:
        pass
    for keyring, label in ((-4, "user key"), (-3, "session key")):
        if libc.syscall(SYS_KEYCTL, 10, keyring, b"user", (NAME + label).encode(), 0) > 0:
            seen.append(label)
    return seen

def create():
    shm = libc.shmget(KEY, 64 << 20, 0o1600)  # IPC_CREAT | 0600, 64 MiB
    if shm != -1:
        addr = libc.shmat(shm, None, 0)
        ctypes.memset(addr, 1, 64 << 20)  # touched: retained memory if it survived
        libc.shmdt(ctypes.c_void_p(addr))
    libc.msgget(KEY, 0o1600)
    libc.semget(KEY, 1, 0o1600)
    libc.mq_open(("/" + NAME).encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\\0" + NAME)
    listener.listen()
    a, b = socket.socketpair()  # a cycle: b's queue holds b and the listener
    socket.send_fds(a, [b"x"], [b.fileno(), listener.fileno()])
    for keyring, label in ((-4, "user key"), (-3, "session key")):
        libc.syscall(SYS_ADD_KEY, b"user", (NAME + label).encode(), b"secret", 6, keyring)
"""


@attack
def kernel_objects_do_not_reach_the_next_program(sb: Sandbox) -> None:
    """SysV shared memory, message queues and semaphores, POSIX message queues,
    abstract UNIX sockets (alive through an SCM_RIGHTS cycle) and keys made by one
    program: none is left for the next one (nor for the host's ``nobody``)."""
    name = f"finmath-{uuid.uuid4().hex[:12]}"
    source = _KERNEL_OBJECTS.format(key=int(uuid.uuid4().int % 2**30) + 1, name=name)
    maker = source + "def solution():\n    create()\n    print(found())\n    return 1\n"
    made = json.loads(succeeds(sb, maker, 1.0)["stdout"].replace("'", '"'))
    # control: the objects exist while their program runs (the backend's seccomp
    # may forbid keys altogether)
    assert {"shm", "msg", "sem", "mqueue", "abstract socket"} <= set(made), made
    time.sleep(0.2)
    finder = source + "def solution():\n    print(found())\n    return 1\n"
    left = json.loads(succeeds(sb, finder, 1.0)["stdout"].replace("'", '"'))
    assert left == [], left
    # the host's nobody does not share the sandbox's user keyring either
    host = _run_as_nobody(source + "print(found())\n")
    assert [k for k in json.loads(host.replace("'", '"')) if "key" in k] == []


def _run_as_nobody(code: str) -> str:
    """What ``code`` prints when run on the host as uid 65534 (in a forked child)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(code, {})
            os.write(write, out.getvalue().encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return data.decode()


@attack
def process_counts_are_not_shared_with_the_host(sb: Sandbox) -> None:
    """RLIMIT_NPROC counts processes per user: the sandbox's user must not be the
    host's ``nobody``, or the host's (or another sandbox's) processes would make an
    innocent program fail to start a thread."""
    import subprocess

    sleepers = [subprocess.Popen(["sleep", "60"], user=65534, group=65534, extra_groups=[])
                for _ in range(16)]  # fmt: skip
    try:
        code = (
            "import threading\n"
            "def solution():\n"
            "    threads = [threading.Thread(target=lambda: None) for _ in range(4)]\n"
            "    for t in threads:\n"
            "        t.start()\n"
            "    for t in threads:\n"
            "        t.join()\n"
            "    return len(threads)\n"
        )
        succeeds(sb, code, 4)
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()


@attack
def patched_builtin_number_types_do_not_fool_the_value_check(sb: Sandbox) -> None:
    """A subclass of float/int bound to ``builtins.float``/``builtins.int``: its
    instances are refused (they are not the real types), and none of its methods runs."""
    for base in ("float", "int"):
        code = (
            "import builtins\n"
            f"class Fake({base}):\n"
            "    def __float__(self): print('CALLED __float__'); return 666.0\n"
            "    def __index__(self): print('CALLED __index__'); return 666\n"
            "    def __int__(self): print('CALLED __int__'); return 666\n"
            "    def __repr__(self): print('CALLED __repr__'); return '666'\n"
            f"builtins.{base} = Fake\n"
            "def solution():\n"
            "    return Fake(2)\n"
        )
        resp = fails(sb, code)
        assert "returned Fake (defined by the program), not a number" in resp["error"], resp
        assert "CALLED" not in resp["stdout"], resp


@attack
def hard_links_do_not_delay_the_next_program(sb: Sandbox) -> None:
    """Hundreds of thousands of hard links (cheap to make, slow to delete one by
    one) must not make the clean-up before the next program take seconds."""
    code = (
        "import os\n"
        "def solution():\n"
        "    open('f', 'w').close()\n"
        "    os.mkdir('d')\n"
        "    n = 0\n"
        "    try:\n"
        "        while n < 400_000:\n"
        "            os.link('f', f'd/{n}')\n"
        "            n += 1\n"
        "    except OSError:\n"
        "        pass\n"
        "    return n\n"
    )
    assert sb.run(code, timeout=20.0)["value"] is not None
    t0 = time.monotonic()
    succeeds(sb, GOLD, GOLD_VALUE)
    assert time.monotonic() - t0 < 1.0  # measured: 0.03 s; 4.4 s when deleted link by link
