"""The finmath_docker sandbox: correctness, isolation, attacks, container lifetime.

Needs a reachable Docker engine and the sandbox image (or a base image to build it
on): ``bash scripts/docker-setup.sh``. Otherwise every test that needs them is
skipped with the reason. The attacks on the isolation properties both backends
share are the list in ``attacks.py``, run here by :func:`test_attack` on the
module's warm container (the bwrap tests run the same list); every attack is
followed by a program whose correct result proves the worker is still sound, a
check that no process of a program is left, and a check that neither the worker
nor the container had to be replaced. Here too: Docker's own mechanisms (the
container's configuration, the image, one-off commands, the container's
lifetime).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from attacks import (
    ATTACKS,
    CANARY_ENVIRON,
    ONE_REQUEST_WORKER,
    PROBE,
    PROBE_VALUE,
    Attack,
    LoopHarness,
    canary_environment,
)
from eval_programs import eval_programs

from finmath_tasks.sandbox import docker as backend
from finmath_tasks.sandbox import (
    docker_containers,
    docker_exec,
    docker_image,
    docker_worker,
    runner_source_path,
)

pytestmark = pytest.mark.docker

REPO_ROOT = Path(__file__).resolve().parents[2]
SANDBOX_DIR = REPO_ROOT / "src" / "finmath_tasks" / "sandbox"
RUN_DIR = docker_exec.RUN_DIR
T = TypeVar("T")

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
        image = docker_image.ensure_image(docker_image.docker_client(), log=lambda _line: None)
    except docker_image.DockerSandboxError as exc:
        print(f"docker tests skipped: {exc}")
        pytest.skip(f"no sandbox image: {exc}")
    return str(image)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    event_loop = asyncio.new_event_loop()
    yield event_loop
    event_loop.close()


@pytest.fixture(scope="module")
def worker(engine: str, loop: asyncio.AbstractEventLoop) -> Iterator[docker_worker.DockerWorker]:
    """One warm container for the module, as in a task run."""
    w = docker_worker.DockerWorker(
        docker_worker.DockerOptions(image=engine), task_name="pytest-docker"
    )
    with canary_environment():  # if the environment leaked, the sandbox would see it
        loop.run_until_complete(w.start())
        yield w
        loop.run_until_complete(w.close())


class Harness(LoopHarness):
    """The module's warm worker as the attacks see it (an :class:`attacks.Sandbox`)."""

    program_dir = RUN_DIR
    own_system_files = True
    pid1_is_sandbox_user = True
    work_timeout = 10.0

    @property
    def program_uid(self) -> int:  # type: ignore[override]
        uid: int = self.worker.uid
        return uid

    def assert_no_program_processes(self) -> None:
        """As seen by a program: nothing but pid 1, the worker and itself."""
        strays = self.run(STRAYS)
        assert strays["ok"] and strays["value"] == 0, strays


@pytest.fixture
def sb(worker: docker_worker.DockerWorker, loop: asyncio.AbstractEventLoop) -> Harness:
    return Harness(worker, loop)


@pytest.fixture
def run(sb: Harness) -> Callable[..., dict[str, Any]]:
    return sb.run


@pytest.fixture
def healthy(
    sb: Harness, run: Callable[..., dict[str, Any]], worker: docker_worker.DockerWorker
) -> Callable[[], None]:
    """Assert the next program gets the correct result and leaves nothing behind."""

    def _check() -> None:
        result = run(PROBE)
        assert result["ok"], result
        assert result["value"] == pytest.approx(PROBE_VALUE, abs=1e-9)
        sb.assert_no_program_processes()
        assert worker.container_id is not None

    return _check


def _run_in(loop: asyncio.AbstractEventLoop, coro: Awaitable[T]) -> T:
    return loop.run_until_complete(coro)


def _our_containers(task: str | None = None) -> list[dict[str, Any]]:
    client = docker_image.docker_client()
    found = client.api.containers(all=True, filters={"label": docker_image.LABEL})
    if task is not None:
        found = [
            c for c in found if (c.get("Labels") or {}).get(docker_containers.LABEL_TASK) == task
        ]
    return list(found)


def _containers_with_uid(uid: int) -> list[dict[str, Any]]:
    client = docker_image.docker_client()
    return list(
        client.api.containers(all=True, filters={"label": f"{docker_containers.LABEL_UID}={uid}"})
    )


def _wait_gone(container_id: str, seconds: float = 20.0) -> bool:
    client = docker_image.docker_client()
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


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's wheel, built from a copy of the sources (as pip would)."""
    import shutil

    tree = tmp_path_factory.mktemp("tree")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (REPO_ROOT / name).exists():
            shutil.copy(REPO_ROOT / name, tree / name)
    shutil.copytree(REPO_ROOT / "src", tree / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))  # fmt: skip
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                    str(tree)], check=True, capture_output=True, timeout=600)  # fmt: skip
    (wheel,) = out.glob("finmath_tasks-*.whl")
    return wheel


@pytest.mark.slow
@pytest.mark.parametrize("name", ["compose.yaml", "Dockerfile", "runner.py"])
def test_shipped_as_package_data(built_wheel: Path, name: str) -> None:
    """What the docker backends build from is in the wheel users install, unchanged."""
    import zipfile

    with zipfile.ZipFile(built_wheel) as wheel:
        shipped = wheel.read(f"finmath_tasks/sandbox/{name}")
    assert shipped == (SANDBOX_DIR / name).read_bytes()


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


@pytest.mark.slow
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


def test_container_is_locked_down(worker: docker_worker.DockerWorker) -> None:
    info = worker.client.api.inspect_container(worker.container_id)
    host = info["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert info["Config"]["NetworkDisabled"] is True
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert sorted(host["CapAdd"]) == sorted(docker_worker.WORKER_CAPS)
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["PidsLimit"] == worker.options.pids
    assert host["Memory"] == worker.options.container_memory_mb << 20
    assert host["MemorySwap"] == host["Memory"]
    assert host["NanoCpus"] == int(worker.options.cpus * 1e9)
    assert host["IpcMode"] == "none"
    assert host["Privileged"] is False
    assert host["Binds"] in (None, []) and not info["Mounts"]
    assert set(host["Tmpfs"]) == {docker_exec.RUN_DIR}
    assert info["Config"]["Labels"][docker_image.LABEL] == "worker"
    assert (
        info["Config"]["Labels"][docker_containers.LABEL_OWNER] == docker_containers.owner_token()
    )
    # a uid of its own: not the host's nobody, no host user or group, no other container's
    uid = worker.uid
    assert (
        uid is not None
        and docker_containers.UID_BASE
        <= uid
        < docker_containers.UID_BASE + docker_containers.UID_SPAN
    )
    assert info["Config"]["Labels"][docker_containers.LABEL_UID] == str(uid)
    assert not docker_containers._known_to_host(uid)
    assert [c["Id"] for c in _containers_with_uid(uid)] == [worker.container_id]


# --------------------------------------------------------------------------- #
# the shared attacks (attacks.py), each followed by a correct next result
# --------------------------------------------------------------------------- #


@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACKS, ids=str)
def test_attack(
    sb: Harness, worker: docker_worker.DockerWorker, healthy: Callable[[], None], attack: Attack
) -> None:
    starts, container_id = worker.starts, worker.container_id
    attack(sb)
    healthy()  # includes: no stray process left
    assert worker.starts == starts, "the worker had to be restarted"
    assert worker.container_id == container_id, "the container had to be replaced"


# --------------------------------------------------------------------------- #
# each container has a uid of its own
# --------------------------------------------------------------------------- #

FORK_TO_THE_LIMIT = """
import os, time

def solution():
    n = 0
    try:
        while n < 64:
            if os.fork() == 0:
                time.sleep(6)
                os._exit(0)
            n += 1
    except OSError:
        pass  # RLIMIT_NPROC reached
    time.sleep(6)
    return n
"""

START_THREADS = """
import os, threading

def solution():
    threads = [threading.Thread(target=lambda: None) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return os.getuid()
"""


def test_uids_known_to_the_host_are_never_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = iter([0, 65534, 1_234_567_890])  # root, nobody/nogroup, then a free one
    monkeypatch.setattr(docker_containers, "UID_BASE", 0)
    monkeypatch.setattr(docker_containers.secrets, "randbelow", lambda _n: next(draws))
    assert docker_containers.candidate_uid() == 1_234_567_890


@pytest.mark.skipif(os.geteuid() != 0, reason="the runner drops privileges only as root")
def test_runner_drops_to_the_uid_it_is_given() -> None:
    runner = [sys.executable, "-I", str(runner_source_path()), "--exec", "--require-drop"]
    shown = "id -u; id -g; id -G"
    out = subprocess.run([*runner, "--uid=2000000123", "--", "sh", "-c", shown], cwd="/tmp",
                         capture_output=True, text=True, timeout=60, check=True).stdout  # fmt: skip
    assert out.split() == ["2000000123"] * 3
    for bad in ("0", "-1", str(2**32 - 1)):
        refused = subprocess.run([*runner, f"--uid={bad}", "--", "id", "-u"], cwd="/tmp",
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
        assert refused.returncode != 0 and "not an unprivileged uid" in refused.stderr


@pytest.mark.slow
def test_two_live_containers_never_share_a_uid(
    engine: str, worker: docker_worker.DockerWorker, loop: asyncio.AbstractEventLoop,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Even when the second container draws the live one's uid first (forced here)."""
    assert worker.uid is not None
    draws = iter([worker.uid, worker.uid + 1])
    monkeypatch.setattr(docker_worker, "candidate_uid", lambda: next(draws))
    other = docker_worker.DockerWorker(
        docker_worker.DockerOptions(image=engine), task_name="pytest-uid"
    )
    try:
        _run_in(loop, other.start())
        assert other.uid == worker.uid + 1
        assert [c["Id"] for c in _containers_with_uid(worker.uid)] == [worker.container_id]
        assert [c["Id"] for c in _containers_with_uid(other.uid)] == [other.container_id]
        for w in (worker, other):  # programs, one-off commands and pid 1 run as it
            result = _run_in(loop, w.run({"code": START_THREADS}))
            assert result["ok"] and result["value"] == w.uid, result
            code, out, _, _ = _run_in(
                loop, w.exec(["sh", "-c", "id -u; id -g; grep ^Uid: /proc/1/status | cut -f2"])
            )
            assert code == 0 and out.split() == [str(w.uid).encode()] * 3
    finally:
        _run_in(loop, other.close())


@pytest.mark.slow
def test_a_program_at_its_process_limit_does_not_hurt_another_container(
    engine: str, worker: docker_worker.DockerWorker, loop: asyncio.AbstractEventLoop
) -> None:
    """RLIMIT_NPROC counts per uid host-wide: with a shared uid, a program that forks
    to the limit in one container made a concurrent program in another one fail."""
    other = docker_worker.DockerWorker(
        docker_worker.DockerOptions(image=engine), task_name="pytest-nproc"
    )

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        await other.start()
        forker = asyncio.ensure_future(worker.run({"code": FORK_TO_THE_LIMIT, "timeout": 10.0}))
        await asyncio.sleep(2.5)  # the forker is at its limit (sleeping) for about 6 s
        innocent = await other.run({"code": START_THREADS})
        return await forker, innocent

    try:
        forker, innocent = _run_in(loop, scenario())
    finally:
        _run_in(loop, other.close())
    assert forker["ok"] and 0 < forker["value"] < 64, forker  # it did reach the limit
    assert innocent["ok"] and innocent["value"] == other.uid, innocent


def test_one_off_commands_do_not_see_the_evaluator_environment(
    worker: docker_worker.DockerWorker, loop: asyncio.AbstractEventLoop
) -> None:
    for key, value in CANARY_ENVIRON.items():  # control: the worker started with these set
        assert os.environ[key] == value
    status, out, _, _ = _run_in(loop, worker.exec(["env"]))
    assert status == 0 and out.strip()
    assert not any(value in out.decode() for value in CANARY_ENVIRON.values())
    assert not any(key in out.decode() for key in CANARY_ENVIRON)


# --------------------------------------------------------------------------- #
# the worker: replaced when hung, recycled, resent to
# --------------------------------------------------------------------------- #


@pytest.mark.slow
def test_stopped_worker_is_replaced_after_the_guard(
    engine: str, loop: asyncio.AbstractEventLoop
) -> None:
    # The host-side guard: a worker that does not answer is killed and restarted.
    w = docker_worker.DockerWorker(
        docker_worker.DockerOptions(image=engine, host_margin=1.0), task_name="pytest-guard"
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


@pytest.mark.slow
def test_worker_recycles_after_n_programs(engine: str, loop: asyncio.AbstractEventLoop) -> None:
    w = docker_worker.DockerWorker(
        docker_worker.DockerOptions(image=engine, recycle_after=3), task_name="pytest-recycle"
    )
    try:
        results = [_run_in(loop, w.run({"code": PROBE})) for _ in range(5)]
        assert all(r["ok"] and r["value"] == pytest.approx(PROBE_VALUE) for r in results)
        assert [r["worker_seq"] for r in results] == [1, 2, 3, 1, 2]
        assert w.starts == 2 and w.container_starts == 1
    finally:
        _run_in(loop, w.close())


def test_worker_that_exits_between_requests_gets_the_request_again(
    engine: str, loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exit status 75 (a clean-up failed): the next request goes to a fresh worker."""
    monkeypatch.setattr(
        docker_worker, "worker_argv", lambda options: ["python3", "-c", ONE_REQUEST_WORKER]
    )
    w = docker_worker.DockerWorker(
        docker_worker.DockerOptions(image=engine), task_name="pytest-resend"
    )
    try:
        first = _run_in(loop, w.run({"code": "a"}))
        second = _run_in(loop, w.run({"code": "bb"}))
        assert first["ok"] and first["value"] == 1.0, first
        assert second["ok"] and second["value"] == 2.0, second
        assert first["stdout"] != second["stdout"]  # answered by two worker processes
        assert w.starts == 2 and w.container_starts == 1
    finally:
        _run_in(loop, w.close())


# --------------------------------------------------------------------------- #
# Inspect sandbox interface and container lifetime
# --------------------------------------------------------------------------- #


@pytest.mark.slow
def test_sandbox_environment_lifecycle(engine: str, loop: asyncio.AbstractEventLoop) -> None:
    env_cls = backend.FinmathDockerSandboxEnvironment
    config = backend.FinmathDockerConfig(image=engine)
    task = f"pytest-lifecycle-{os.getpid()}"

    async def scenario() -> None:
        await env_cls.task_init(task, config)
        envs = await env_cls.sample_init(task, config, {})
        sandbox = envs["default"]
        response = await sandbox.run_request({"code": PROBE, "timeout": 3.0})
        assert response["ok"] and response["value"] == pytest.approx(PROBE_VALUE)

        await sandbox.write_file("sub/data.txt", "héllo\r\n")
        assert await sandbox.read_file("sub/data.txt") == "héllo\r\n"
        assert await sandbox.read_file("sub/data.txt", text=False) == "héllo\r\n".encode()
        listing = await sandbox.exec(["python3", "-c", "import os; print(os.listdir('sub'))"])
        assert listing.success and "data.txt" in listing.stdout
        who = await sandbox.exec(["sh", "-c", "id -u; id -g"])
        uid = sandbox._worker.uid  # the sample's home container
        assert who.stdout.split() == [str(uid)] * 2 and uid != 65534
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
    from finmath_tasks._inspect_private import registry_find_sandboxenv

    assert registry_find_sandboxenv("finmath_docker") is backend.FinmathDockerSandboxEnvironment


@pytest.mark.slow
def test_run_program_inside_an_inspect_eval(engine: str, tmp_path: Path) -> None:
    from inspect_ai.util import SandboxEnvironmentSpec

    samples = [
        (PROBE, repr(PROBE_VALUE)),
        ("def solution():\n    return 'x'", "error"),
        ("import sympy\ndef solution():\n    return sympy.Rational(1, 4)", "0.25"),
        ("import os\ndef solution():\n    os.kill(-1, 9)\n    return 2", "2"),
        ("import time\ndef solution():\n    time.sleep(30)", "error"),
    ]
    task_name = f"pytest_eval_{uuid.uuid4().hex[:8]}"
    sandbox = SandboxEnvironmentSpec("finmath_docker", backend.FinmathDockerConfig(image=engine))

    def mine() -> set[str]:  # containers owned by this process (tests may run in parallel)
        me = docker_containers.owner_token()
        return {
            c["Id"]
            for c in _our_containers()
            if c["Labels"].get(docker_containers.LABEL_OWNER) == me
        }

    before = mine()
    eval_programs(samples, sandbox, tmp_path, approx=True, name=task_name)
    assert mine() <= before  # the eval's container was removed at its end


_CHILD = """
import asyncio, sys, time
from finmath_tasks.sandbox.docker_worker import DockerOptions, DockerWorker

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


@pytest.mark.slow
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
    client = docker_image.docker_client()
    created = client.api.create_container(
        engine,
        command=["sleep", "600"],
        labels={
            docker_image.LABEL: "worker",
            docker_containers.LABEL_OWNER: docker_containers.owner_token(os.getpid()).replace(
                f"|{os.getpid()}|", f"|{dead.pid}|"
            ),
            docker_containers.LABEL_TASK: "pytest-leftover",
        },
        host_config=client.api.create_host_config(network_mode="none"),
    )
    client.api.start(created["Id"])
    w = docker_worker.DockerWorker(
        docker_worker.DockerOptions(image=engine), task_name="pytest-next"
    )
    try:
        _run_in(loop, w.start())
        assert _wait_gone(created["Id"], 5)
    finally:
        _run_in(loop, w.close())
        docker_containers.remove_containers(client, created["Id"])


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_base_image_that_cannot_be_pulled_is_one_message_not_a_traceback(
    tmp_path: Path,
) -> None:
    """``inspect eval`` with a base image no registry has: exit 1 and the message naming the
    image and what to do, with no traceback (the SDK's or ours)."""
    env = {
        **os.environ,
        "FINMATH_SANDBOX_BASE_IMAGE": f"finmath-no-such-{uuid.uuid4().hex[:8]}.invalid/base:1",
    }
    inspect = str(Path(sys.executable).with_name("inspect"))
    done = subprocess.run(
        [
            inspect, "eval", "finmath_tasks/knowledgefmath", "-T", "split=demo",
            "-T", "solver=oracle_pot", "--sandbox", "finmath_docker", "--limit", "1",
            "--model", "mockllm/model", "--log-dir", str(tmp_path), "--display", "plain",
        ],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    shown = done.stdout + done.stderr
    assert done.returncode != 0, shown[-2000:]
    assert "Traceback" not in shown, shown[-3000:]
    assert "cannot be pulled" in shown and "docker-setup.sh" in shown
