"""Attacks on the bwrap sandbox: one test per isolation property.

Every attack checks three things: the call returns a result (``ok=False`` with
a clear reason, or ``ok=True`` where the attack is harmless), the host is
unchanged (files, processes, the worker itself), and the NEXT program on the
same worker returns the right value. Each test also has a control that would
make it fail if the property were missing (e.g. the host itself can reach the
socket the sandbox must not reach).
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import os
import signal
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from finmath_tasks.sandbox import RUNNER_ARGV, runner_source_path
from finmath_tasks.sandbox.bwrap import (
    BwrapOptions,
    BwrapWorker,
    FinmathBwrapSandboxEnvironment,
    bwrap_available,
    python_binds,
)

pytestmark = pytest.mark.bwrap

_OK, _REASON = bwrap_available()
if not _OK:
    pytest.skip(f"bubblewrap is not usable here: {_REASON}", allow_module_level=True)

GOLD = "def solution():\n    x = 57000 * (1-0.2)**3\n    return 21000 - x"
GOLD_VALUE = 21000 - 57000 * (1 - 0.2) ** 3
CANARY_ENV = "FINMATH_CANARY_SECRET"
CANARY_VALUE = f"canary-{uuid.uuid4().hex}"


# --------------------------------------------------------------------------- #
# fixtures and host-side inspection helpers
# --------------------------------------------------------------------------- #


class Harness:
    """A warm worker on a private event loop, with helpers for the checks."""

    def __init__(self, worker: BwrapWorker, loop: asyncio.AbstractEventLoop) -> None:
        self.worker = worker
        self.loop = loop

    def run(self, code: str, timeout: float = 3.0, **extra: Any) -> dict[str, Any]:
        request = {"code": code, "timeout": timeout, **extra}
        return self.loop.run_until_complete(self.worker.run(request))

    def assert_next_program_works(self, starts: int | None = None) -> None:
        """The following program runs normally, on the same worker process."""
        before = self.worker.host_pid
        resp = self.run(GOLD)
        assert resp["ok"] is True and resp["value"] == GOLD_VALUE, resp
        if starts is not None:
            assert self.worker.starts == starts, "the worker was restarted"
            assert self.worker.host_pid == before


@pytest.fixture(scope="module")
def sb() -> Iterator[Harness]:
    # set before the worker starts: if the environment leaked, the sandbox would see it
    os.environ[CANARY_ENV] = CANARY_VALUE
    loop = asyncio.new_event_loop()
    worker = BwrapWorker()
    loop.run_until_complete(worker.start())
    try:
        yield Harness(worker, loop)
    finally:
        loop.run_until_complete(worker.close())
        loop.close()
        os.environ.pop(CANARY_ENV, None)


def _proc_ids() -> list[int]:
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def _status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def sandbox_processes(worker: BwrapWorker) -> list[dict[str, Any]]:
    """Host view of every live process in the worker's PID namespace."""
    host_pid = worker.host_pid
    assert host_pid is not None
    inits = [p for p in _proc_ids() if _status(p).get("PPid") == str(host_pid)]
    assert inits, "bwrap has no child"
    ns = os.readlink(f"/proc/{inits[0]}/ns/pid")
    procs = []
    for pid in _proc_ids():
        try:
            if os.readlink(f"/proc/{pid}/ns/pid") != ns:
                continue
        except OSError:
            continue
        st = _status(pid)
        if not st or st.get("State", "").startswith(("Z", "X")):
            continue
        procs.append(
            {"pid": pid, "uid": int(st["Uid"].split()[0]), "nspid": st["NSpid"].split()[-1],
             "cmdline": _cmdline(pid)}
        )  # fmt: skip
    return procs


def wait_no_program_processes(worker: BwrapWorker, within: float = 3.0) -> None:
    """No process of uid 65534 (a program's) survives in the sandbox."""
    deadline = time.monotonic() + within
    while True:
        left = [p for p in sandbox_processes(worker) if p["uid"] != 0]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert left == [], f"program processes survived: {left}"
    # what is left: bwrap's init, the worker and the (root) process for the next program
    assert len(sandbox_processes(worker)) <= 3


def host_processes_with(marker: str) -> list[int]:
    return [p for p in _proc_ids() if marker in _cmdline(p) and p != os.getpid()]


# --------------------------------------------------------------------------- #
# network
# --------------------------------------------------------------------------- #


def test_no_route_to_the_internet(sb: Harness) -> None:
    code = (
        "import socket\n"
        "def solution():\n"
        "    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
        "    s.settimeout(2)\n"
        "    try:\n"
        "        s.connect(('1.1.1.1', 53))\n"
        "    except OSError as exc:\n"
        "        return exc.errno or -1\n"
        "    return 0\n"
    )
    resp = sb.run(code)
    # ENETUNREACH: the sandbox has no route at all (the host would time out or connect)
    assert resp["ok"] is True and resp["value"] == errno.ENETUNREACH, resp
    code = (
        "import socket\n"
        "def solution():\n"
        "    print(socket.if_nameindex())\n"
        "    try:\n"
        "        socket.getaddrinfo('pypi.org', 443)\n"
        "    except OSError:\n"
        "        return len(socket.if_nameindex())\n"
        "    return -1\n"
    )
    resp = sb.run(code)
    assert resp["ok"] is True and resp["value"] == 1.0, resp  # only a private loopback
    assert "'lo'" in resp["stdout"]
    sb.assert_next_program_works()


def test_host_loopback_is_unreachable(sb: Harness) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    try:
        control = socket.create_connection(("127.0.0.1", port), timeout=2)  # the host can
        control.close()
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
        resp = sb.run(code)
        assert resp["ok"] is True and resp["value"] == errno.ECONNREFUSED, resp
        with pytest.raises(socket.timeout):
            server.accept()  # nothing from the sandbox arrived
    finally:
        server.close()
    sb.assert_next_program_works()


# --------------------------------------------------------------------------- #
# host files, environment, privileges
# --------------------------------------------------------------------------- #


def test_host_files_are_invisible(sb: Harness, tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("host secret")
    root_canary = Path("/root") / f".finmath-canary-{uuid.uuid4().hex}"
    root_canary.write_text("root secret")
    cwd_file = Path.cwd() / "pyproject.toml"
    try:
        paths = [str(canary), str(root_canary), str(cwd_file), "/etc/passwd", "/etc/shadow",
                 "/root/.bashrc", "/work/main/pyproject.toml", "/home"]  # fmt: skip
        assert canary.exists() and root_canary.exists()  # control
        code = (
            "import os\n"
            f"PATHS = {paths!r}\n"
            "def solution():\n"
            "    seen = [p for p in PATHS if os.path.exists(p)]\n"
            "    print(seen, sorted(os.listdir('/')), os.listdir('/root'))\n"
            "    return len(seen)\n"
        )
        resp = sb.run(code)
        assert resp["ok"] is True and resp["value"] == 0.0, resp
        top = json.loads(resp["stdout"].split("] ", 1)[1].split("] ", 1)[0].replace("'", '"') + "]")
        assert "home" not in top and "etc" not in top and "srv" not in top
    finally:
        root_canary.unlink()
    sb.assert_next_program_works()


def test_environment_of_the_evaluator_does_not_leak(sb: Harness) -> None:
    assert os.environ[CANARY_ENV] == CANARY_VALUE  # control: set in the evaluating process
    code = (
        "import os\n"
        "def solution():\n"
        f"    hits = [k for k, v in os.environ.items() if {CANARY_VALUE!r} in v or k == {CANARY_ENV!r}]\n"
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
    resp = sb.run(code)
    assert resp["ok"] is True and resp["value"] == 0.0, resp
    names = json.loads(resp["stdout"].rsplit("]", 1)[0].replace("'", '"') + "]")
    assert names == sorted(["HOME", "LANG", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PATH"])
    sb.assert_next_program_works()


def test_programs_run_unprivileged(sb: Harness) -> None:
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
    resp = sb.run(code)
    assert resp["ok"] is True and resp["value"] == 65534.0, resp
    info = json.loads(resp["stdout"])
    assert info["Uid"].split() == ["65534"] * 4 and info["Gid"].split() == ["65534"] * 4
    assert info["Groups"] == ""
    assert int(info["CapEff"], 16) == int(info["CapPrm"], 16) == int(info["CapAmb"], 16) == 0
    assert info["NoNewPrivs"] == "1" and "succeeded" not in info
    sb.assert_next_program_works()


def test_cannot_write_outside_the_sandbox(sb: Harness, tmp_path: Path) -> None:
    site = python_binds()[1][0]
    numpy_init = Path(site) / "numpy" / "__init__.py"
    runner_digest = hashlib.sha256(runner_source_path().read_bytes()).hexdigest()
    numpy_mtime = numpy_init.stat().st_mtime_ns
    targets = [str(tmp_path / "pwned"), str(numpy_init), "/opt/finmath/runner.py",
               "/usr/lib/pwned", "/tmp/pwned", "/pwned", "/dev/shm/pwned", "/proc/pwned"]  # fmt: skip
    code = (
        f"TARGETS = {targets!r}\n"
        "def solution():\n"
        "    written = []\n"
        "    for path in TARGETS:\n"
        "        try:\n"
        "            with open(path, 'a') as fh:\n"
        "                fh.write('pwned')\n"
        "            written.append(path)\n"
        "        except OSError:\n"
        "            pass\n"
        "    print(written)\n"
        "    return len(written)\n"
    )
    resp = sb.run(code)
    assert resp["ok"] is True and resp["value"] == 0.0, resp
    assert not (tmp_path / "pwned").exists()
    assert numpy_init.stat().st_mtime_ns == numpy_mtime
    assert hashlib.sha256(runner_source_path().read_bytes()).hexdigest() == runner_digest
    sb.assert_next_program_works()


# --------------------------------------------------------------------------- #
# resources
# --------------------------------------------------------------------------- #


def test_fork_bomb(sb: Harness) -> None:
    starts = sb.worker.starts
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
    resp = sb.run(bomb, timeout=1.0)
    assert resp["ok"] is False and resp["error"] == "timeout after 1.0s", resp
    assert time.monotonic() - t0 < 4
    wait_no_program_processes(sb.worker)
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
    wait_no_program_processes(sb.worker)
    sb.assert_next_program_works(starts)


@pytest.mark.parametrize(
    "code",
    [
        "def solution():\n    x = bytearray(8 << 30)\n    return 1",
        "def solution():\n    keep = []\n    while True:\n        keep.append(bytearray(64 << 20))",
        "import numpy as np\ndef solution():\n    return float(np.ones(1 << 31).sum())",
    ],
    ids=["one-allocation", "gradual", "numpy"],
)
def test_memory_bomb(sb: Harness, code: str) -> None:
    starts = sb.worker.starts
    resp = sb.run(code)
    assert resp["ok"] is False, resp
    assert resp["error"].startswith("memory limit exceeded"), resp
    sb.assert_next_program_works(starts)


def test_many_processes_cannot_exhaust_host_memory() -> None:
    """RLIMIT_AS is per process; the sandbox's cgroup caps all of them together."""
    loop = asyncio.new_event_loop()
    worker = BwrapWorker(BwrapOptions(cgroup_memory_mb=450))
    try:
        loop.run_until_complete(worker.start())
        if worker.cgroup is None:
            pytest.skip("no writable cgroup on this host: only RLIMIT_AS/NPROC apply")
        memory_dir = worker.cgroup.dirs[0]
        limit_file = next(f for f in ("memory.max", "memory.limit_in_bytes")
                          if (memory_dir / f).exists())  # fmt: skip
        assert int((memory_dir / limit_file).read_text()) == 450 << 20
        in_group = (Path("/proc") / str(worker.host_pid) / "cgroup").read_text()
        assert memory_dir.name in in_group
        code = (
            "import os, signal\n"
            "def solution():\n"
            "    kids = []\n"
            "    for _ in range(3):\n"
            "        pid = os.fork()\n"
            "        if pid == 0:\n"
            "            block = bytes([1]) * (200 << 20)  # touched, 600 MB in all\n"
            "            os._exit(0)\n"
            "        kids.append(pid)\n"
            "    statuses = [os.waitpid(k, 0)[1] for k in kids]\n"
            "    return sum(os.WIFSIGNALED(s) and os.WTERMSIG(s) == signal.SIGKILL"
            " for s in statuses)\n"
        )
        resp = loop.run_until_complete(worker.run({"code": code, "timeout": 20}))
        # the OOM killer picked programs (oom_score_adj 1000), never the worker
        killed_program = resp["ok"] is False and resp["error"] == "killed by signal SIGKILL"
        assert killed_program or (resp["ok"] is True and resp["value"] >= 1), resp
        resp = loop.run_until_complete(worker.run({"code": GOLD}))
        assert resp["ok"] is True and resp["value"] == GOLD_VALUE
        assert worker.starts == 1
    finally:
        loop.run_until_complete(worker.close())
        loop.close()


def test_memory_limit_leaves_room_for_real_work(sb: Harness) -> None:
    code = (
        "import numpy as np, scipy.stats as st, sympy\n"
        "def solution():\n"
        "    a = np.ones(25_000_000)  # 200 MB\n"
        "    return float(a.sum()) + st.norm.ppf(0.5) + float(sympy.Integer(1))\n"
    )
    resp = sb.run(code)
    assert resp["ok"] is True and resp["value"] == 25_000_001.0, resp


@pytest.mark.parametrize(
    ("code", "timeout"),
    [
        ("def solution():\n    while True:\n        pass", 1.0),
        ("import time\ndef solution():\n    time.sleep(30)\n    return 1", 0.5),
        ("import signal\ndef solution():\n"
         "    for s in (signal.SIGTERM, signal.SIGXCPU, signal.SIGINT):\n"
         "        signal.signal(s, signal.SIG_IGN)\n"
         "    while True:\n        pass", 1.0),
    ],
    ids=["cpu-loop", "sleep", "ignores-signals"],
)  # fmt: skip
def test_timeouts(sb: Harness, code: str, timeout: float) -> None:
    starts = sb.worker.starts
    t0 = time.monotonic()
    resp = sb.run(code, timeout=timeout)
    elapsed = time.monotonic() - t0
    assert resp["ok"] is False and resp["error"] == f"timeout after {timeout}s", resp
    assert timeout <= elapsed < timeout + 1.5
    wait_no_program_processes(sb.worker)
    sb.assert_next_program_works(starts)


def test_output_flood(sb: Harness) -> None:
    starts = sb.worker.starts
    resp = sb.run("def solution():\n    print('x' * 100_000_000)\n    return 1", max_output=1000)
    assert resp["ok"] is True and resp["value"] == 1.0, resp
    head, _, tail = resp["stdout"].partition("\n")
    assert head == f"[... {100_000_001 - 1000} bytes truncated ...]"
    assert tail == "x" * 999 + "\n"
    endless = "import sys\ndef solution():\n    while True:\n        sys.stderr.write('y' * 65536)"
    resp = sb.run(endless, timeout=1.0, max_output=1000)
    assert resp["ok"] is False and resp["error"] == "timeout after 1.0s"
    assert resp["stderr"].startswith("[... ") and len(resp["stderr"]) < 1100
    sb.assert_next_program_works(starts)


def test_filling_the_disk(sb: Harness) -> None:
    starts = sb.worker.starts
    one_file = "def solution():\n    open('big', 'wb').write(b'0' * (32 << 20))\n    return 1"
    resp = sb.run(one_file)
    assert resp["ok"] is False, resp
    assert resp["error"] == "file size limit exceeded (killed by SIGXFSZ)"
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
    resp = sb.run(many)
    assert resp["ok"] is True and resp["value"] == errno.ENOSPC, resp
    # the space came back: the next program can write 15 MiB again
    again = "import os\ndef solution():\n    open('f', 'wb').write(b'1' * (15 << 20))\n    return os.path.getsize('f')"
    resp = sb.run(again)
    assert resp["ok"] is True and resp["value"] == 15 << 20, resp
    sb.assert_next_program_works(starts)


# --------------------------------------------------------------------------- #
# processes
# --------------------------------------------------------------------------- #


def test_double_forked_daemon_does_not_survive(sb: Harness) -> None:
    starts = sb.worker.starts
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
        "        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "    time.sleep(0.2)\n"
        "    return 1\n"
    )
    resp = sb.run(code)
    assert resp["ok"] is True and resp["value"] == 1.0, resp
    deadline = time.monotonic() + 3
    while host_processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert host_processes_with(marker) == []
    wait_no_program_processes(sb.worker)
    sb.assert_next_program_works(starts)
    assert host_processes_with(marker) == []


def test_killing_the_worker_or_everything_fails(sb: Harness) -> None:
    starts, host_pid = sb.worker.starts, sb.worker.host_pid
    code = (
        "import os, signal\n"
        "def solution():\n"
        "    denied = 0\n"
        "    for target in (os.getppid(), 1, -1, 0):\n"
        "        try:\n"
        "            os.kill(target, signal.SIGKILL if target > 0 else signal.SIGTERM)\n"
        "        except PermissionError:\n"
        "            denied += 1\n"
        "    return denied\n"
    )
    resp = sb.run(code)
    # the worker (ppid) and pid 1 are root: EPERM; kill(-1) reaches nobody else;
    # kill(0, SIGTERM) (own process group) terminates the program itself
    assert resp["ok"] is False and resp["error"] == "killed by signal SIGTERM", resp
    code = code.replace("(os.getppid(), 1, -1, 0)", "(os.getppid(), 1, -1)")
    resp = sb.run(code)
    assert resp["ok"] is True and resp["value"] == 2.0, resp
    sb.assert_next_program_works(starts)
    assert sb.worker.host_pid == host_pid


def test_segfault(sb: Harness) -> None:
    starts = sb.worker.starts
    resp = sb.run("import ctypes\ndef solution():\n    return ctypes.string_at(0)")
    assert resp["ok"] is False and resp["error"] == "killed by signal SIGSEGV", resp
    sb.assert_next_program_works(starts)


# --------------------------------------------------------------------------- #
# interpreter state and returned values
# --------------------------------------------------------------------------- #


def test_patches_do_not_reach_the_next_program(sb: Harness) -> None:
    starts = sb.worker.starts
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
    resp = sb.run(patcher)
    assert resp["ok"] is True and resp["value"] == 87.0, resp  # the patches worked inside
    victim = (
        "import math, numpy, numpy_financial as npf\n"
        "def solution():\n"
        "    return abs(-2) + numpy.sum([1, 2]) + math.pi + npf.fv(0, 1, 0, -1)\n"
    )
    resp = sb.run(victim)
    assert resp["ok"] is True and resp["value"] == pytest.approx(2 + 3 + 3.141592653589793 + 1)
    sb.assert_next_program_works(starts)


def test_malicious_return_objects(sb: Harness) -> None:
    starts = sb.worker.starts
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
        resp = sb.run(code.replace("KIND", kind))
        assert resp["ok"] is False, resp
        assert f"returned {name}" in resp["error"] and "not a number" in resp["error"]
        assert "CALLED" not in resp["stdout"]
    forged = (
        "import os\ndef solution():\n"
        '    os.write(3, b\'{"ok": true, "value": 1e999}\')\n'
        "    os._exit(0)\n"
    )
    resp = sb.run(forged)
    assert resp["ok"] is False and resp["value"] is None, resp
    sb.assert_next_program_works(starts)


# --------------------------------------------------------------------------- #
# the worker: warm, restarted when dead or hung, recycled
# --------------------------------------------------------------------------- #


def test_worker_stays_warm(sb: Harness) -> None:
    starts, host_pid = sb.worker.starts, sb.worker.host_pid
    first = sb.run(GOLD)
    second = sb.run("import os\ndef solution():\n    return os.getppid()")
    assert second["worker_seq"] == first["worker_seq"] + 1
    assert sb.worker.host_pid == host_pid and sb.worker.starts == starts
    assert second["value"] == sb.worker.ready_info["pid"]  # forked by that same worker
    assert first["duration_ms"] < 1000  # no cold import of numpy/sympy


@pytest.fixture()
def fragile() -> Iterator[Harness]:
    """A separate worker that the test may kill or freeze."""
    loop = asyncio.new_event_loop()
    worker = BwrapWorker(BwrapOptions(host_margin=1.0, recycle_after=3))
    loop.run_until_complete(worker.start())
    try:
        yield Harness(worker, loop)
    finally:
        loop.run_until_complete(worker.close())
        loop.close()


def _worker_process(worker: BwrapWorker) -> int:
    inner = str(worker.ready_info["pid"])
    return next(p["pid"] for p in sandbox_processes(worker) if p["nspid"] == inner)


def test_dead_worker_is_restarted(fragile: Harness) -> None:
    async def scenario() -> dict[str, Any]:
        task = asyncio.ensure_future(
            fragile.worker.run({"code": "import time\ndef solution():\n    time.sleep(5)"})
        )
        await asyncio.sleep(0.5)
        os.kill(_worker_process(fragile.worker), signal.SIGKILL)
        return await task

    bwrap_pid = fragile.worker.host_pid
    resp = fragile.loop.run_until_complete(scenario())
    assert resp["ok"] is False and resp["error"].startswith("sandbox worker died"), resp
    fragile.assert_next_program_works()
    assert fragile.worker.starts == 2 and fragile.worker.host_pid != bwrap_pid
    assert bwrap_pid is not None and not Path(f"/proc/{bwrap_pid}").exists()


def test_hung_worker_is_killed_by_the_host_guard(fragile: Harness) -> None:
    os.kill(_worker_process(fragile.worker), signal.SIGSTOP)
    t0 = time.monotonic()
    resp = fragile.run(GOLD, timeout=0.5)
    assert resp["ok"] is False and "did not answer within 1.5s" in resp["error"], resp
    assert time.monotonic() - t0 < 3
    fragile.assert_next_program_works()
    assert fragile.worker.starts == 2


def test_worker_recycles_after_n_programs(fragile: Harness) -> None:
    seqs = [fragile.run(GOLD)["worker_seq"] for _ in range(5)]
    assert seqs == [1, 2, 3, 1, 2]  # recycle_after=3
    assert fragile.worker.starts == 2


def _gone(pid: int) -> bool:
    return _status(pid).get("State", "Z").startswith(("Z", "X"))


def test_close_leaves_nothing_behind(fragile: Harness) -> None:
    fragile.assert_next_program_works()
    deadline = time.monotonic() + 3
    while len(procs := sandbox_processes(fragile.worker)) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)  # the process for the next program is forked after the answer
    assert len(procs) == 3  # bwrap's init, the worker, the process for the next program
    bwrap_pid = fragile.worker.host_pid
    assert bwrap_pid is not None
    fragile.loop.run_until_complete(fragile.worker.close())
    deadline = time.monotonic() + 3
    pids = [bwrap_pid] + [p["pid"] for p in procs]
    while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert all(_gone(pid) for pid in pids)
    fragile.assert_next_program_works()  # a closed worker starts again on demand
    assert fragile.worker.starts == 2


def test_pool_spreads_concurrent_requests() -> None:
    from finmath_tasks.sandbox.bwrap import BwrapPool

    async def scenario() -> list[dict[str, Any]]:
        pool = BwrapPool(2)
        try:
            code = "import time\ndef solution():\n    time.sleep(0.3)\n    return 1"
            await pool.start(2)
            t0 = time.monotonic()
            results = await asyncio.gather(*(pool.run({"code": code}) for _ in range(4)))
            assert time.monotonic() - t0 < 1.2  # 2 at a time, not 4 in a row
            assert len({w.host_pid for w in pool.workers}) == 2
            return list(results)
        finally:
            await pool.close()

    assert all(r["ok"] and r["value"] == 1.0 for r in asyncio.run(scenario()))


# --------------------------------------------------------------------------- #
# the Inspect sandbox environment
# --------------------------------------------------------------------------- #


def test_inspect_sandboxenv(tmp_path: Path) -> None:
    from inspect_ai.util import SandboxUserUnsupportedError
    from inspect_ai.util._sandbox.registry import registry_find_sandboxenv

    assert registry_find_sandboxenv("finmath_bwrap") is FinmathBwrapSandboxEnvironment
    env_cls = FinmathBwrapSandboxEnvironment

    async def scenario() -> None:
        os.environ[CANARY_ENV] = CANARY_VALUE
        await env_cls.task_init("sec-task", None)
        envs = await env_cls.sample_init("sec-task", None, {})
        env = envs["default"]
        assert isinstance(env, env_cls)
        # the runner command goes to the warm pool
        res = await env.exec(list(RUNNER_ARGV), input=json.dumps({"code": GOLD}))
        assert res.success and res.returncode == 0
        assert json.loads(res.stdout)["value"] == GOLD_VALUE
        res = await env.exec(list(RUNNER_ARGV), input="not json")
        assert json.loads(res.stdout)["error"].startswith("bad request")
        # anything else: a cold one-off sandbox, same isolation
        probe = (
            "import os, socket, json\n"
            "try:\n socket.create_connection(('1.1.1.1', 53), timeout=1); net = True\n"
            "except OSError:\n net = False\n"
            "print(json.dumps([os.getuid(), os.getcwd(), sorted(os.environ), net,"
            f" os.path.exists({str(tmp_path)!r})]))"
        )
        res = await env.exec(["python3", "-c", probe], env={"EXTRA": "1"})
        assert res.success, res.stderr
        uid, cwd, names, net, sees_host = json.loads(res.stdout)
        assert (uid, cwd, net, sees_host) == (65534, "/tmp/work", False, False)
        assert CANARY_ENV not in names and "EXTRA" in names
        # files: write_file -> command reads it; command writes -> read_file
        await env.write_file("data/in.txt", "hello")
        res = await env.exec(["sh", "-c", "cat data/in.txt && echo done > out.txt"])
        assert res.stdout == "hello"
        assert await env.read_file("out.txt") == "done\n"
        assert await env.read_file("/tmp/work/out.txt", text=False) == b"done\n"
        for bad in ("/etc/passwd", "../escape", "/tmp/work/../../etc/passwd"):
            with pytest.raises(PermissionError):
                await env.read_file(bad)
        with pytest.raises(FileNotFoundError):
            await env.read_file("missing.txt")
        res = await env.exec(["sh", "-c", "echo err >&2; exit 3"])
        assert (res.success, res.returncode, res.stderr) == (False, 3, "err\n")
        with pytest.raises(TimeoutError):
            await env.exec(["sleep", "20"], timeout=1)
        with pytest.raises(SandboxUserUnsupportedError):
            await env.exec(["id"], user="root")
        scratch = Path(env._scratch)
        assert scratch.is_dir()
        await env_cls.sample_cleanup("sec-task", None, envs, False)
        assert not scratch.exists()
        await env_cls.task_cleanup("sec-task", None, True)
        assert not env_cls._pools

    try:
        asyncio.run(scenario())
    finally:
        os.environ.pop(CANARY_ENV, None)


def test_run_program_inside_an_inspect_eval(tmp_path: Path) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import Score, Target, accuracy, scorer
    from inspect_ai.solver import Generate, TaskState, solver

    from finmath_tasks.sandbox.client import run_program

    @solver
    def execute() -> Any:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            result = await run_program(state.input_text, timeout=3.0)
            state.metadata["program"] = result.to_dict()
            return state

        return solve

    @scorer(metrics=[accuracy()])
    def matches() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            program = state.metadata["program"]
            if target.text == "error":
                return Score(value=1 if not program["ok"] else 0)
            return Score(value=1 if program["value"] == float(target.text) else 0)

        return score

    samples = [
        Sample(input=GOLD, target=repr(GOLD_VALUE)),
        Sample(input="def solution():\n    return 'x'", target="error"),
        Sample(
            input="import sympy\ndef solution():\n    return sympy.Rational(1, 4)", target="0.25"
        ),
    ]
    task = Task(dataset=samples, solver=execute(), scorer=matches(), sandbox="finmath_bwrap")
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    assert log.status == "success", log.error
    assert log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    # task_init's pool served the samples and task_cleanup closed it
    assert not FinmathBwrapSandboxEnvironment._pools
