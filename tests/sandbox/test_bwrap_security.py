"""Attacks on the bwrap sandbox: one test per isolation property.

The attacks on the properties both backends share (network, host files and
environment, privileges, resources, processes, interpreter state, returned
values) are the list in ``attacks.py``, run here by :func:`test_attack` on the
warm bwrap worker; the docker tests run the same list. Every attack checks that
the call returns a result (``ok=False`` with a clear reason, or ``ok=True``
where the attack is harmless) and that the host is unchanged; after each one,
``test_attack`` checks that no program process survives in the sandbox (host
view of its PID namespace), that the worker was not restarted, and that the NEXT
program on the same worker returns the right value. Each test also has a control
that would make it fail if the property were missing (e.g. the host itself can
reach the socket the sandbox must not reach).

Here too: bwrap's own mechanisms (the cgroup, the host process tree, the
worker's restart, recycling and resending, the pool, one-off commands and files
of the Inspect sandbox).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from attacks import (
    ATTACKS,
    CANARY_ENV,
    GOLD,
    GOLD_VALUE,
    ONE_REQUEST_WORKER,
    Attack,
    LoopHarness,
    canary_environment,
    cmdline,
)
from eval_programs import eval_programs

from finmath_tasks.sandbox import bwrap_command, bwrap_worker
from finmath_tasks.sandbox.bwrap import (
    FinmathBwrapConfig,
    FinmathBwrapSandboxEnvironment,
)
from finmath_tasks.sandbox.bwrap_command import BwrapOptions
from finmath_tasks.sandbox.bwrap_worker import BwrapWorker
from finmath_tasks.sandbox.worker import WorkerStartError

pytestmark = pytest.mark.bwrap

# --------------------------------------------------------------------------- #
# fixtures and host-side inspection helpers
# --------------------------------------------------------------------------- #


class Harness(LoopHarness):
    """A warm worker on a private event loop, with helpers for the checks
    (the :class:`attacks.Sandbox` of the bwrap backend)."""

    worker: BwrapWorker
    program_dir = "/tmp"
    own_system_files = False
    pid1_is_sandbox_user = False
    work_timeout = 3.0

    def assert_no_program_processes(self) -> None:
        wait_no_program_processes(self.worker)

    def assert_next_program_works(self, starts: int | None = None) -> None:
        """The following program runs normally, on the same worker process."""
        before = self.worker.host_pid
        resp = self.run(GOLD)
        assert resp["ok"] is True and resp["value"] == GOLD_VALUE, resp
        if starts is not None:
            assert self.worker.starts == starts, "the worker was restarted"
            assert self.worker.host_pid == before


@contextlib.contextmanager
def started(options: BwrapOptions | None = None) -> Iterator[Harness]:
    """A started worker on its own event loop, closed afterwards."""
    loop = asyncio.new_event_loop()
    worker = BwrapWorker(options)
    try:
        loop.run_until_complete(worker.start())
        yield Harness(worker, loop)
    finally:
        loop.run_until_complete(worker.close())
        loop.close()


@pytest.fixture(scope="module")
def sb() -> Iterator[Harness]:
    # started inside: if the environment leaked, the sandbox would see it
    with canary_environment(), started() as harness:
        yield harness


def _proc_ids() -> list[int]:
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def _status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


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
             "cmdline": cmdline(pid)}
        )  # fmt: skip
    return procs


def wait_no_program_processes(worker: BwrapWorker, within: float = 3.0) -> None:
    """No process of uid 65534 (a program's) survives in the sandbox.

    (The worker cleans up after answering: for a moment, its clean-up helper runs
    as 65534 too.)
    """
    deadline = time.monotonic() + within
    while True:
        procs = sandbox_processes(worker)
        left = [p for p in procs if p["uid"] != 0]
        if (not left and len(procs) <= 3) or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert left == [], f"program processes survived: {left}"
    # what is left: bwrap's init, the worker and the (root) process for the next program
    assert len(procs) <= 3, procs


# --------------------------------------------------------------------------- #
# the shared attacks (attacks.py)
# --------------------------------------------------------------------------- #


@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACKS, ids=str)
def test_attack(sb: Harness, attack: Attack) -> None:
    starts = sb.worker.starts
    attack(sb)
    sb.assert_no_program_processes()
    sb.assert_next_program_works(starts)


# --------------------------------------------------------------------------- #
# resources: the sandbox's cgroup
# --------------------------------------------------------------------------- #


@pytest.mark.slow
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
            "import os, signal, time\n"
            "def solution():\n"
            "    kids = []\n"
            "    for _ in range(3):\n"
            "        pid = os.fork()\n"
            "        if pid == 0:\n"
            "            block = bytes([1]) * (200 << 20)  # touched, 600 MB in all\n"
            "            time.sleep(3)  # held together: none may exit before the last allocates\n"
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
    with started(BwrapOptions(host_margin=1.0, recycle_after=3)) as harness:
        yield harness


def _worker_process(worker: BwrapWorker) -> int:
    inner = str(worker.ready_info["pid"])
    return next(p["pid"] for p in sandbox_processes(worker) if p["nspid"] == inner)


@pytest.mark.slow
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


@pytest.mark.slow
def test_hung_worker_is_killed_by_the_host_guard(fragile: Harness) -> None:
    os.kill(_worker_process(fragile.worker), signal.SIGSTOP)
    t0 = time.monotonic()
    resp = fragile.run(GOLD, timeout=0.5)
    assert resp["ok"] is False and "did not answer within 1.5s" in resp["error"], resp
    assert time.monotonic() - t0 < 3
    fragile.assert_next_program_works()
    assert fragile.worker.starts == 2


@pytest.mark.slow
def test_worker_recycles_after_n_programs(fragile: Harness) -> None:
    seqs = [fragile.run(GOLD)["worker_seq"] for _ in range(5)]
    assert seqs == [1, 2, 3, 1, 2]  # recycle_after=3
    assert fragile.worker.starts == 2


def _gone(pid: int) -> bool:
    return _status(pid).get("State", "Z").startswith(("Z", "X"))


@pytest.mark.slow
def test_close_leaves_nothing_behind(fragile: Harness) -> None:
    fragile.assert_next_program_works()
    deadline = time.monotonic() + 3
    while len(procs := sandbox_processes(fragile.worker)) != 3 and time.monotonic() < deadline:
        # the process for the next program is forked after the answer, and the one that
        # ran the program may not have been reaped yet: wait for the worker at rest
        time.sleep(0.01)
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


@pytest.mark.slow
def test_pool_spreads_concurrent_requests() -> None:
    from finmath_tasks.sandbox.bwrap_worker import BwrapPool

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


def test_worker_that_exits_between_requests_gets_the_request_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Exit status 75 (a clean-up failed): the next request goes to a fresh worker."""
    monkeypatch.setattr(
        bwrap_worker,
        "worker_argv",
        lambda options: [
            *bwrap_command.bwrap_base_argv(options, bwrap_command.WORKER_CAPS),
            "--",
            bwrap_command.sandbox_python_argv()[0],
            "-c",
            ONE_REQUEST_WORKER,
        ],
    )

    async def scenario() -> list[dict[str, Any]]:
        worker = BwrapWorker(BwrapOptions(cgroup=False))
        try:
            first = await worker.run({"code": "a"})
            second = await worker.run({"code": "bb"})
            assert worker.starts == 2
            return [first, second]
        finally:
            await worker.close()

    first, second = asyncio.run(scenario())
    assert first["ok"] and first["value"] == 1.0, first
    assert second["ok"] and second["value"] == 2.0, second
    assert first["stdout"] != second["stdout"]  # answered by two worker processes


# --------------------------------------------------------------------------- #
# the Inspect sandbox environment
# --------------------------------------------------------------------------- #


@pytest.mark.slow
def test_inspect_sandboxenv(tmp_path: Path) -> None:
    from inspect_ai.util import SandboxUserUnsupportedError

    from finmath_tasks._inspect_private import registry_find_sandboxenv

    assert registry_find_sandboxenv("finmath_bwrap") is FinmathBwrapSandboxEnvironment
    env_cls = FinmathBwrapSandboxEnvironment

    async def scenario() -> None:
        await env_cls.task_init("sec-task", None)
        envs = await env_cls.sample_init("sec-task", None, {})
        env = envs["default"]
        assert isinstance(env, env_cls)
        # requests go to the warm pool
        response = await env.run_request({"code": GOLD})
        assert response["value"] == GOLD_VALUE
        response = await env.run_request("not json")
        assert response["error"].startswith("bad request")
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

    with canary_environment():
        asyncio.run(scenario())


@pytest.mark.slow
def test_run_program_inside_an_inspect_eval(tmp_path: Path) -> None:
    samples = [
        (GOLD, repr(GOLD_VALUE)),
        ("def solution():\n    return 'x'", "error"),
        ("import sympy\ndef solution():\n    return sympy.Rational(1, 4)", "0.25"),
    ]
    eval_programs(samples, "finmath_bwrap", tmp_path)
    # task_init's pool served the samples and task_cleanup closed it
    assert not FinmathBwrapSandboxEnvironment._pools


# --------------------------------------------------------------------------- #
# the libraries programs are promised, wherever the environment lives
# --------------------------------------------------------------------------- #

_UNDER_TMP_SCRIPT = """
import asyncio, json, sys
import numpy_financial
from finmath_tasks.sandbox.bwrap_command import python_binds
from finmath_tasks.sandbox.bwrap_worker import BwrapWorker

async def main():
    worker = BwrapWorker()
    try:
        return await worker.run({"code": sys.argv[1]})
    finally:
        await worker.close()

print(json.dumps([numpy_financial.__file__, python_binds().pythonpath, asyncio.run(main())]))
"""


@pytest.mark.slow
def test_an_environment_under_tmp_keeps_its_libraries(tmp_path: Path) -> None:
    """A venv under /tmp (CI clone, tox): the sandbox's private /tmp must not hide it."""
    import shutil
    import subprocess
    import sys
    import sysconfig

    import numpy_financial

    venv = Path("/tmp") / tmp_path.relative_to("/tmp") / "venv"  # under /tmp, whatever TMPDIR
    base = os.path.realpath(sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip())  # fmt: skip
    # numpy_financial lives only in this environment under /tmp; the rest (numpy,
    # finmath_tasks...) comes from ours, appended after it on sys.path
    shutil.copytree(Path(numpy_financial.__file__).parent, site / "numpy_financial")
    ours = [sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    (site / "zz-ours.pth").write_text(
        "".join(f"import site; site.addsitedir({d!r})\n" for d in dict.fromkeys(ours))
    )
    probe = (
        "import numpy_financial as npf\n"
        "def solution():\n    print(npf.__file__)\n    return npf.fv(0, 1, 0, -1)"
    )
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", _UNDER_TMP_SCRIPT, probe],
                          capture_output=True, text=True, timeout=300, env={"PATH": os.environ["PATH"]})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    origin, pythonpath, resp = json.loads(proc.stdout.splitlines()[-1])
    assert origin.startswith(f"{site}/"), origin  # control: the library is under /tmp
    assert str(site) in pythonpath
    assert resp["ok"] is True and resp["value"] == 1.0, resp
    assert resp["stdout"] == f"{origin}\n"  # the environment's own copy, not another one


@pytest.mark.slow
def test_a_library_that_does_not_import_fails_the_task_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker imports every promised library at start: a broken one stops the
    task there, with its name, instead of failing every program later."""
    shadow = tmp_path / "shadow"
    (shadow / "numpy_financial").mkdir(parents=True)
    (shadow / "numpy_financial" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'numpy_financial'\")\n"
    )
    view = bwrap_command.python_binds()
    shadowed = dataclasses.replace(
        view,
        sites=((str(shadow), ("numpy_financial",)), *view.sites),
        pythonpath=(str(shadow), *view.pythonpath),
    )
    monkeypatch.setattr(bwrap_command, "python_binds", lambda: shadowed)
    config = FinmathBwrapConfig(pool_size=1, recycle_after=7)  # a pool of its own
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(WorkerStartError) as info:
            loop.run_until_complete(FinmathBwrapSandboxEnvironment.task_init("t", config))
        assert "cannot import numpy_financial (ModuleNotFoundError" in str(info.value)
    finally:
        loop.run_until_complete(FinmathBwrapSandboxEnvironment.task_cleanup("t", config, True))
        loop.close()


# --------------------------------------------------------------------------- #
# files of the Inspect sandbox: never through a link
# --------------------------------------------------------------------------- #

_SWAPPER = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs("d", exist_ok=True)
open("d/f", "w").write("sandbox")
os.symlink(sys.argv[1], "l")
end = time.monotonic() + float(sys.argv[2])
swaps = 0
while time.monotonic() < end:  # d <-> l: "d" is a directory, then a link to the host
    swaps += libc.renameat2(-100, b"d", -100, b"l", 2) == 0  # RENAME_EXCHANGE
print(swaps)
"""


@pytest.mark.slow
def test_write_and_read_file_never_follow_a_link_swapped_in(tmp_path: Path) -> None:
    """A command in the sandbox swaps a directory for a symbolic link to a host
    directory, in a loop, while write_file/read_file run: no host file is ever
    written, created, chowned or read."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "f").write_text("host secret")
    before = {p.name: (p.read_text(), p.stat().st_uid) for p in host.iterdir()}
    host_stat = host.stat()
    env_cls = FinmathBwrapSandboxEnvironment

    async def scenario() -> tuple[int, set[str], int]:
        await env_cls.task_init("io-task", None)
        env = (await env_cls.sample_init("io-task", None, {}))["default"]
        try:
            swapper = asyncio.ensure_future(
                env.exec(["python3", "-c", _SWAPPER, str(host), "6"], timeout=30)
            )
            await asyncio.sleep(1.0)  # the loop is running
            seen: set[str] = set()
            calls = 0
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline:
                for call in (env.write_file("d/f", "from the host"), env.read_file("d/f"),
                             env.write_file("d/new/g", "x")):  # fmt: skip
                    calls += 1
                    with contextlib.suppress(OSError):
                        if isinstance(result := await call, str):
                            seen.add(result)
            result = await swapper
            assert result.success, result.stderr
            return int(result.stdout), seen, calls
        finally:
            await env_cls.sample_cleanup("io-task", None, {"default": env}, False)
            await env_cls.task_cleanup("io-task", None, True)

    swaps, seen, calls = asyncio.run(scenario())
    assert swaps > 1000 and calls > 100, (swaps, calls)  # control: it really raced
    assert "host secret" not in seen
    assert {p.name: (p.read_text(), p.stat().st_uid) for p in host.iterdir()} == before
    assert (host.stat().st_uid, host.stat().st_mode) == (host_stat.st_uid, host_stat.st_mode)
