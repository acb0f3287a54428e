"""The finmath_docker sandbox: correctness, isolation, attacks, container lifetime.

Needs a reachable Docker engine and the sandbox image (or a base image to build it
on): ``bash scripts/docker-setup.sh``. Otherwise every test that needs them is
skipped with the reason. Every attack is followed by a program whose correct
result proves the worker is still sound.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from finmath_tasks.sandbox import RUNNER_ARGV
from finmath_tasks.sandbox import docker as backend

pytestmark = pytest.mark.docker

REPO_ROOT = Path(__file__).resolve().parents[2]
SANDBOX_DIR = REPO_ROOT / "src" / "finmath_tasks" / "sandbox"
T = TypeVar("T")

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

# Lists the processes a program can see, other than pid 1, the worker and itself.
STRAYS = """
import os

def solution():
    me, worker = os.getpid(), os.getppid()
    others = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (1, me, worker):
            try:
                with open(f"/proc/{name}/stat") as fh:
                    state = fh.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state not in ("Z", "X"):
                others.append(int(name))
    print(others)
    return len(others)
"""


# --------------------------------------------------------------------------- #
# fixtures
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="module")
def engine() -> str:
    """Skip (with the reason) unless an engine answers and the image is there or buildable."""
    ok, reason = backend.docker_available(refresh=True)
    if not ok:
        print(f"docker tests skipped: {reason}")
        pytest.skip(f"Docker unavailable: {reason}")
    try:
        image = backend.ensure_image(backend.docker_client(), log=lambda _line: None)
    except backend.DockerSandboxError as exc:
        print(f"docker tests skipped: {exc}")
        pytest.skip(f"no sandbox image: {exc}")
    return str(image)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    event_loop = asyncio.new_event_loop()
    yield event_loop
    event_loop.close()


@pytest.fixture(scope="module")
def worker(engine: str, loop: asyncio.AbstractEventLoop) -> Iterator[backend.DockerWorker]:
    """One warm container for the module, as in a task run."""
    w = backend.DockerWorker(backend.DockerOptions(image=engine), task_name="pytest-docker")
    loop.run_until_complete(w.start())
    yield w
    loop.run_until_complete(w.close())


@pytest.fixture
def run(
    worker: backend.DockerWorker, loop: asyncio.AbstractEventLoop
) -> Callable[..., dict[str, Any]]:
    def _run(code: str, timeout: float = 3.0, max_output: int = 8192) -> dict[str, Any]:
        request = {"code": code, "entry": "solution", "timeout": timeout, "max_output": max_output}
        return loop.run_until_complete(worker.run(request))

    return _run


@pytest.fixture
def healthy(run: Callable[..., dict[str, Any]], worker: backend.DockerWorker) -> Callable[[], None]:
    """Assert the next program gets the correct result and leaves nothing behind."""

    def _check() -> None:
        result = run(PROBE)
        assert result["ok"], result
        assert result["value"] == pytest.approx(PROBE_VALUE, abs=1e-9)
        strays = run(STRAYS)
        assert strays["ok"] and strays["value"] == 0, strays
        assert worker.container_id is not None

    return _check


def _run_in(loop: asyncio.AbstractEventLoop, coro: Awaitable[T]) -> T:
    return loop.run_until_complete(coro)


def _our_containers(task: str | None = None) -> list[dict[str, Any]]:
    client = backend.docker_client()
    found = client.api.containers(all=True, filters={"label": backend.LABEL})
    if task is not None:
        found = [c for c in found if (c.get("Labels") or {}).get(backend.LABEL_TASK) == task]
    return list(found)


def _wait_gone(container_id: str, seconds: float = 20.0) -> bool:
    client = backend.docker_client()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            client.api.inspect_container(container_id)
        except Exception as exc:
            if type(exc).__name__ == "NotFound":
                return True
        time.sleep(0.2)
    return False


# --------------------------------------------------------------------------- #
# files shipped for Inspect's built-in docker sandbox (no engine needed)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("name", ["compose.yaml", "Dockerfile"])
def test_shipped_as_package_data(name: str) -> None:
    assert (SANDBOX_DIR / name).is_file()


def test_compose_file_is_hardened_and_portable() -> None:
    from inspect_ai.util import parse_compose_yaml

    config = parse_compose_yaml(str(SANDBOX_DIR / "compose.yaml"))
    service = config.services["default"]
    assert service.build is not None and not isinstance(service.build, str)
    assert service.build.dockerfile == "Dockerfile"
    assert service.network_mode == "none"
    assert service.read_only is True
    assert service.cap_drop == ["ALL"]
    assert service.security_opt and "no-new-privileges" in service.security_opt[0]
    assert service.user is not None and service.user.split(":")[0] not in ("0", "root")
    assert service.tmpfs and any(t.startswith("/tmp:") and "size=" in t for t in service.tmpfs)
    assert service.pids_limit and service.mem_limit and service.cpus
    assert service.working_dir == "/tmp"


def test_dockerfile_pins_the_full_dependency_closure() -> None:
    text = (SANDBOX_DIR / "Dockerfile").read_text()
    assert "ARG BASE_IMAGE=python:3.11-slim" in text
    pins = text.split('FINMATH_PIP_PACKAGES="', 1)[1].split('"', 1)[0].split()
    names = {pin.split("==")[0] for pin in pins}
    assert names == {"numpy", "scipy", "sympy", "mpmath", "numpy-financial"}
    assert all("==" in pin for pin in pins)
    assert "COPY runner.py /opt/finmath/runner.py" in text


def test_unreachable_engine_is_reported_quickly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/finmath-docker.sock")
    started = time.monotonic()
    ok, reason = backend.docker_available(refresh=True)
    monkeypatch.undo()
    backend.docker_available(refresh=True)
    assert not ok
    assert "no Docker engine answers" in reason
    assert time.monotonic() - started < 10


# --------------------------------------------------------------------------- #
# results and hardening
# --------------------------------------------------------------------------- #


def test_simple_program_gives_the_right_value(run: Callable[..., dict[str, Any]]) -> None:
    result = run(PROBE)
    assert result["ok"], result
    assert result["value"] == pytest.approx(PROBE_VALUE, abs=1e-9)
    assert result["error"] is None
    assert result["worker_seq"] >= 1


def test_program_errors_are_reported(
    run: Callable[..., dict[str, Any]], healthy: Callable[[], None]
) -> None:
    result = run("def solution():\n    return 1 / 0\n")
    assert not result["ok"] and result["error"].startswith("ZeroDivisionError")
    assert "ZeroDivisionError" in result["stderr"]
    result = run("def solution(:\n")
    assert not result["ok"] and "SyntaxError" in result["error"]
    healthy()


def test_container_is_locked_down(worker: backend.DockerWorker) -> None:
    info = worker.client.api.inspect_container(worker.container_id)
    host = info["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert info["Config"]["NetworkDisabled"] is True
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert sorted(host["CapAdd"]) == sorted(backend.WORKER_CAPS)
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["PidsLimit"] == worker.options.pids
    assert host["Memory"] == worker.options.container_memory_mb << 20
    assert host["MemorySwap"] == host["Memory"]
    assert host["NanoCpus"] == int(worker.options.cpus * 1e9)
    assert host["IpcMode"] == "none"
    assert host["Privileged"] is False
    assert host["Binds"] in (None, []) and not info["Mounts"]
    assert set(host["Tmpfs"]) == {backend.RUN_DIR}
    assert info["Config"]["Labels"][backend.LABEL] == "worker"
    assert info["Config"]["Labels"][backend.LABEL_OWNER] == backend.owner_token()


def test_program_runs_unprivileged_without_network(run: Callable[..., dict[str, Any]]) -> None:
    code = """
import os, socket

def solution():
    status = open("/proc/self/status").read()
    caps = [l.split()[1] for l in status.splitlines() if l.startswith(("CapEff", "CapPrm", "CapBnd"))]
    nnp = [l.split()[1] for l in status.splitlines() if l.startswith("NoNewPrivs")]
    interfaces = sorted(name for _, name in socket.if_nameindex())
    try:
        socket.create_connection(("192.0.2.1", 80), timeout=2)  # TEST-NET-1, never routed
        connected = True
    except OSError:
        connected = False
    try:
        socket.getaddrinfo("pypi.org", 443)
        resolved = True
    except OSError:
        resolved = False
    print(os.getuid(), os.geteuid(), os.getgid(), caps, nnp, interfaces, connected, resolved)
    ok = (os.getuid() == os.geteuid() == os.getgid() == 65534 and caps[:2] == ["0000000000000000"] * 2
          and nnp == ["1"] and interfaces == ["lo"] and not connected and not resolved)
    return 1 if ok else 0
"""
    result = run(code, timeout=10)
    assert result["ok"] and result["value"] == 1, result


def test_filesystem_is_read_only_outside_the_program_dir(
    run: Callable[..., dict[str, Any]],
) -> None:
    code = """
import os

def solution():
    denied = 0
    targets = ["/tmp/x", "/etc/passwd", "/opt/finmath/runner.py", "/run/finmath/x",
               "/x", "/usr/lib/python3/dist-packages/x.py", "/proc/sys/kernel/hostname",
               "/dev/shm/x", "/var/tmp/x"]
    for path in targets:
        try:
            with open(path, "a") as fh:
                fh.write("x")
        except OSError:
            denied += 1
    with open("scratch.txt", "w") as fh:  # the program's own directory is writable
        fh.write("ok")
    assert open("scratch.txt").read() == "ok"
    assert os.getcwd().startswith("/run/finmath/prog-")
    print(denied, len(targets))
    return 1 if denied == len(targets) else 0
"""
    result = run(code)
    assert result["ok"] and result["value"] == 1, result


def test_host_loopback_is_unreachable(
    run: Callable[..., dict[str, Any]], healthy: Callable[[], None]
) -> None:
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
        result = run(code)
        assert result["ok"] and result["value"] == errno.ECONNREFUSED, result
        with pytest.raises(socket.timeout):
            server.accept()  # nothing from the container arrived
    finally:
        server.close()
    healthy()


def test_host_files_are_invisible(
    run: Callable[..., dict[str, Any]], tmp_path: Path, healthy: Callable[[], None]
) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("host secret")
    paths = [str(canary), str(REPO_ROOT / "pyproject.toml"), str(Path.home() / ".bashrc"),
             "/etc/shadow", "/var/run/docker.sock", "/run/docker.sock"]  # fmt: skip
    assert canary.exists() and (REPO_ROOT / "pyproject.toml").exists()  # control
    code = (
        "import os\n"
        f"PATHS = {paths!r}\n"
        "def solution():\n"
        "    seen = [p for p in PATHS if os.path.exists(p) and os.access(p, os.R_OK)]\n"
        "    print(seen)\n"
        "    return len(seen)\n"
    )
    result = run(code)
    assert result["ok"] and result["value"] == 0, result
    healthy()


def test_memory_limit_leaves_room_for_real_work(run: Callable[..., dict[str, Any]]) -> None:
    code = (
        "import numpy as np, scipy.stats as st, sympy\n"
        "def solution():\n"
        "    a = np.ones(25_000_000)  # 200 MB\n"
        "    return float(a.sum()) + st.norm.ppf(0.5) + float(sympy.Integer(1))\n"
    )
    result = run(code, timeout=10.0)
    assert result["ok"] and result["value"] == 25_000_001.0, result


# --------------------------------------------------------------------------- #
# attacks, each followed by a correct next result
# --------------------------------------------------------------------------- #


def test_host_environment_does_not_leak(
    engine: str, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = "finmath-canary-" + os.urandom(8).hex()
    monkeypatch.setenv("FINMATH_TEST_SECRET", canary)
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    w = backend.DockerWorker(backend.DockerOptions(image=engine), task_name="pytest-canary")
    try:
        code = f"""
import os

def solution():
    seen = repr(dict(os.environ))
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                seen += open(f"/proc/{{pid}}/environ", "rb").read().decode("latin-1")
            except OSError:
                pass
    return 1 if {canary!r} in seen else 0
"""
        result = _run_in(loop, w.run({"code": code, "timeout": 5.0}))
        assert result["ok"] and result["value"] == 0, result
        status, out, _, _ = _run_in(loop, w.exec(["env"]))
        assert status == 0 and canary not in out.decode()
    finally:
        _run_in(loop, w.close())


def test_fork_bomb(run: Callable[..., dict[str, Any]], healthy: Callable[[], None]) -> None:
    code = """
import os

def solution():
    while True:
        try:
            os.fork()
        except OSError:
            pass
"""
    started = time.monotonic()
    result = run(code, timeout=2.0)
    assert not result["ok"], result
    assert time.monotonic() - started < 15
    healthy()


def test_memory_bomb(run: Callable[..., dict[str, Any]], healthy: Callable[[], None]) -> None:
    code = """
def solution():
    blocks = []
    while True:
        blocks.append(bytearray(64 << 20))
"""
    result = run(code, timeout=10.0)
    assert not result["ok"] and "MemoryError" in result["error"], result
    healthy()


def test_cpu_loop_and_sleep_are_stopped_at_the_timeout(
    run: Callable[..., dict[str, Any]], healthy: Callable[[], None]
) -> None:
    for code in (
        "def solution():\n    while True:\n        pass\n",
        "import time\ndef solution():\n    time.sleep(60)\n",
    ):
        started = time.monotonic()
        result = run(code, timeout=1.0)
        elapsed = time.monotonic() - started
        assert not result["ok"] and ("timeout" in result["error"] or "CPU" in result["error"])
        assert elapsed < 5, elapsed
        healthy()


def test_output_flood_is_capped(
    run: Callable[..., dict[str, Any]], healthy: Callable[[], None]
) -> None:
    code = """
import sys

def solution():
    chunk = "x" * (1 << 20)
    for _ in range(200):
        sys.stdout.write(chunk)
        sys.stderr.write(chunk)
    return 7
"""
    result = run(code, timeout=20.0, max_output=4096)
    assert result["ok"] and result["value"] == 7, result["error"]
    assert len(result["stdout"]) < 8192 and "truncated" in result["stdout"]
    assert len(result["stderr"]) < 8192
    healthy()


def test_double_forked_daemon_does_not_survive(
    run: Callable[..., dict[str, Any]], healthy: Callable[[], None]
) -> None:
    code = """
import os, time

def solution():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                time.sleep(0.1)
        os._exit(0)
    time.sleep(0.3)
    return 1
"""
    result = run(code)
    assert result["ok"] and result["value"] == 1, result
    healthy()  # includes: no stray process left


def test_kill_everything_cannot_touch_the_worker_or_pid1(
    run: Callable[..., dict[str, Any]], worker: backend.DockerWorker, healthy: Callable[[], None]
) -> None:
    starts, container_id = worker.starts, worker.container_id
    code = """
import os, signal

def solution():
    for target in (1, os.getppid()):
        for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP):
            try:
                os.kill(target, sig)
            except OSError:
                pass
    os.kill(-1, signal.SIGKILL)
    return 1
"""
    result = run(code)
    assert result["ok"] and result["value"] == 1, result  # kill(-1) spares only the caller
    healthy()
    assert worker.starts == starts, "the worker had to be restarted"
    assert worker.container_id == container_id, "the container had to be replaced"


def test_worker_cannot_be_spied_on_or_impersonated(
    run: Callable[..., dict[str, Any]], healthy: Callable[[], None]
) -> None:
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
    result = run(code)
    assert result["ok"] and result["value"] == 0, result
    healthy()


def test_segfault(run: Callable[..., dict[str, Any]], healthy: Callable[[], None]) -> None:
    result = run("import ctypes\ndef solution():\n    return ctypes.string_at(0)\n")
    assert not result["ok"] and "SIGSEGV" in result["error"], result
    healthy()


def test_fill_disk(run: Callable[..., dict[str, Any]], healthy: Callable[[], None]) -> None:
    code = """
def solution():
    written = 0
    for i in range(64):
        try:
            with open(f"fill{i}", "wb") as fh:
                for _ in range(16):
                    fh.write(b"\\0" * (1 << 20))
                    written += 1
        except OSError:
            continue
    return written
"""
    result = run(code, timeout=20.0)
    assert not result["ok"] or result["value"] < 64 * 16, result  # the tmpfs filled up
    after = run(
        "def solution():\n"
        "    with open('big', 'wb') as fh:\n"
        "        fh.write(b'1' * (8 << 20))\n"
        "    return len(open('big', 'rb').read())\n"
    )
    assert after["ok"] and after["value"] == 8 << 20, after
    healthy()


def test_patched_builtins_and_modules_do_not_reach_the_next_program(
    run: Callable[..., dict[str, Any]], healthy: Callable[[], None]
) -> None:
    code = """
import builtins, math, sys
import numpy as np
import numpy_financial as npf

def solution():
    builtins.abs = lambda x: 1000
    builtins.sum = lambda *a, **k: 1000
    builtins.float = lambda *a: 1000.0
    math.sqrt = lambda x: 1000
    npf.pmt = lambda *a, **k: 1000
    np.round = lambda *a, **k: 1000
    sys.modules["numpy_financial"] = None
    return 1
"""
    assert run(code)["value"] == 1
    healthy()


def test_malicious_return_values_are_refused(
    run: Callable[..., dict[str, Any]], healthy: Callable[[], None]
) -> None:
    codes = [
        "class F:\n    def __float__(self):\n        raise SystemExit(0)\n"
        "def solution():\n    return F()\n",
        "import os\nclass R(float):\n    def __reduce__(self):\n        return (os.system, ('id',))\n"
        "    def __float__(self):\n        return 666.0\n"
        "def solution():\n    return R(1.0)\n",
        "class I(int):\n    def __index__(self):\n        return 666\n"
        "def solution():\n    return I(3)\n",
        "def solution():\n    return float('nan')\n",
        "def solution():\n    return '42'\n",
    ]
    for code in codes:
        result = run(code)
        assert not result["ok"], (code, result)
        assert result["value"] is None
    healthy()


def test_stopped_worker_is_replaced_after_the_guard(
    engine: str, loop: asyncio.AbstractEventLoop
) -> None:
    # The host-side guard: a worker that does not answer is killed and restarted.
    w = backend.DockerWorker(
        backend.DockerOptions(image=engine, host_margin=1.0), task_name="pytest-guard"
    )
    try:
        _run_in(loop, w.start())
        pid = w._worker_pid
        code, _, _, _ = _run_in(loop, w.exec(["true"]))
        assert code == 0
        # SIGSTOP the worker from the host side (programs cannot: see above)
        w._exec_simple(["python3", "-c", f"import os; os.kill({pid}, 19)"], user="0")
        started = time.monotonic()
        result = _run_in(loop, w.run({"code": PROBE, "timeout": 1.0}))
        assert not result["ok"] and "did not answer" in result["error"], result
        assert time.monotonic() - started < 10
        result = _run_in(loop, w.run({"code": PROBE, "timeout": 3.0}))
        assert result["ok"] and result["value"] == pytest.approx(PROBE_VALUE), result
        assert w.starts == 2
    finally:
        _run_in(loop, w.close())


def test_worker_recycles_after_n_programs(engine: str, loop: asyncio.AbstractEventLoop) -> None:
    w = backend.DockerWorker(
        backend.DockerOptions(image=engine, recycle_after=3), task_name="pytest-recycle"
    )
    try:
        results = [_run_in(loop, w.run({"code": PROBE})) for _ in range(5)]
        assert all(r["ok"] and r["value"] == pytest.approx(PROBE_VALUE) for r in results)
        assert [r["worker_seq"] for r in results] == [1, 2, 3, 1, 2]
        assert w.starts == 2 and w.container_starts == 1
    finally:
        _run_in(loop, w.close())


# --------------------------------------------------------------------------- #
# Inspect sandbox interface and container lifetime
# --------------------------------------------------------------------------- #


def test_sandbox_environment_lifecycle(engine: str, loop: asyncio.AbstractEventLoop) -> None:
    env_cls = backend.FinmathDockerSandboxEnvironment
    config = backend.FinmathDockerConfig(image=engine)
    task = f"pytest-lifecycle-{os.getpid()}"

    async def scenario() -> None:
        await env_cls.task_init(task, config)
        envs = await env_cls.sample_init(task, config, {})
        sandbox = envs["default"]
        request = json.dumps({"code": PROBE, "timeout": 3.0})
        result = await sandbox.exec(list(RUNNER_ARGV), input=request)
        assert result.success and result.returncode == 0
        response = json.loads(result.stdout)
        assert response["ok"] and response["value"] == pytest.approx(PROBE_VALUE)

        await sandbox.write_file("sub/data.txt", "héllo\r\n")
        assert await sandbox.read_file("sub/data.txt") == "héllo\r\n"
        assert await sandbox.read_file("sub/data.txt", text=False) == "héllo\r\n".encode()
        listing = await sandbox.exec(["python3", "-c", "import os; print(os.listdir('sub'))"])
        assert listing.success and "data.txt" in listing.stdout
        who = await sandbox.exec(["id", "-u"])
        assert who.stdout.strip() == "65534"
        piped = await sandbox.exec(["cat"], input="from stdin")
        assert piped.stdout == "from stdin"
        failing = await sandbox.exec(["python3", "-c", "import sys; sys.exit(3)"])
        assert not failing.success and failing.returncode == 3
        with pytest.raises(FileNotFoundError):
            await sandbox.read_file("missing.txt")
        with pytest.raises(IsADirectoryError):
            await sandbox.read_file("sub")
        with pytest.raises(PermissionError):
            await sandbox.write_file("/etc/evil", "x")
        with pytest.raises(TimeoutError):
            await sandbox.exec(["sleep", "30"], timeout=1)
        from inspect_ai.util import SandboxUserUnsupportedError

        with pytest.raises(SandboxUserUnsupportedError):
            await sandbox.exec(["id"], user="root")
        await env_cls.sample_cleanup(task, config, envs, False)
        assert len(_our_containers(task)) == 1
        await env_cls.task_cleanup(task, config, True)

    _run_in(loop, scenario())
    assert _our_containers(task) == []


def test_inspect_finds_the_sandbox_by_name() -> None:
    from inspect_ai.util._sandbox.registry import registry_find_sandboxenv

    assert registry_find_sandboxenv("finmath_docker") is backend.FinmathDockerSandboxEnvironment


def test_run_program_inside_an_inspect_eval(engine: str, tmp_path: Path) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import Score, Target, accuracy, scorer
    from inspect_ai.solver import Generate, TaskState, solver
    from inspect_ai.util import SandboxEnvironmentSpec

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
            return Score(value=1 if program["value"] == pytest.approx(float(target.text)) else 0)

        return score

    samples = [
        Sample(input=PROBE, target=repr(PROBE_VALUE)),
        Sample(input="def solution():\n    return 'x'", target="error"),
        Sample(
            input="import sympy\ndef solution():\n    return sympy.Rational(1, 4)", target="0.25"
        ),
        Sample(input="import os\ndef solution():\n    os.kill(-1, 9)\n    return 2", target="2"),
        Sample(input="import time\ndef solution():\n    time.sleep(30)", target="error"),
    ]
    task_name = f"pytest_eval_{uuid.uuid4().hex[:8]}"
    sandbox = SandboxEnvironmentSpec("finmath_docker", backend.FinmathDockerConfig(image=engine))
    task = Task(
        dataset=samples, solver=execute(), scorer=matches(), sandbox=sandbox, name=task_name
    )

    def mine() -> set[str]:  # containers owned by this process (tests may run in parallel)
        me = backend.owner_token()
        return {c["Id"] for c in _our_containers() if c["Labels"].get(backend.LABEL_OWNER) == me}

    before = mine()
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    assert log.status == "success", log.error
    assert log.results is not None
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    assert mine() <= before  # the eval's container was removed at its end


_CHILD = """
import asyncio, sys, time
from finmath_tasks.sandbox.docker import DockerOptions, DockerWorker

async def main():
    w = DockerWorker(DockerOptions(image=sys.argv[1]), task_name=sys.argv[2])
    await w.start()
    print(w.container_id, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def _start_owner(engine: str, task: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, engine, task],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    container_id = proc.stdout.readline().strip()
    assert container_id, "the child did not start a container"
    assert _our_containers(task), "container not visible"
    return proc, container_id


@pytest.mark.parametrize(
    "sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM], ids=lambda s: str(s.name)
)
def test_container_removed_when_the_run_is_interrupted(engine: str, sig: signal.Signals) -> None:
    task = f"pytest-interrupt-{sig.name}-{os.getpid()}"
    proc, container_id = _start_owner(engine, task)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert _wait_gone(container_id), f"container of a {sig.name}ed run is still there"


def test_leftover_of_a_dead_owner_is_removed_on_next_start(
    engine: str, loop: asyncio.AbstractEventLoop
) -> None:
    # A leftover whose watchdog did not fire (e.g. the engine kept the attach open):
    # made by hand, labelled as owned by a process that no longer exists.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    client = backend.docker_client()
    created = client.api.create_container(
        engine,
        command=["sleep", "600"],
        labels={
            backend.LABEL: "worker",
            backend.LABEL_OWNER: backend.owner_token(os.getpid()).replace(
                f"|{os.getpid()}|", f"|{dead.pid}|"
            ),
            backend.LABEL_TASK: "pytest-leftover",
        },
        host_config=client.api.create_host_config(network_mode="none"),
    )
    client.api.start(created["Id"])
    w = backend.DockerWorker(backend.DockerOptions(image=engine), task_name="pytest-next")
    try:
        _run_in(loop, w.start())
        assert _wait_gone(created["Id"], 5)
    finally:
        _run_in(loop, w.close())
        backend.remove_containers(client, created["Id"])


def test_cli_cleanup_removes_running_containers(
    engine: str, loop: asyncio.AbstractEventLoop
) -> None:
    task = f"pytest-cli-cleanup-{os.getpid()}"
    proc, container_id = _start_owner(engine, task)
    try:
        _run_in(loop, backend.FinmathDockerSandboxEnvironment.cli_cleanup(task))
        assert _wait_gone(container_id, 5)
    finally:
        proc.kill()
        proc.wait()


def test_setup_script_is_idempotent_when_everything_exists(engine: str) -> None:
    started = time.monotonic()
    proc = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "docker-setup.sh")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHON": sys.executable},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "engine already answering" in proc.stdout
    assert textwrap.dedent(proc.stdout).strip().splitlines()[-1].startswith("[docker-setup] done")
    assert time.monotonic() - started < 60
