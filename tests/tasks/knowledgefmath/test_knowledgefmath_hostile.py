"""Every attack on the sandbox, as a model's PoT answer inside a real knowledgefmath eval.

For each hostile program: the evaluation completes, the sample is scored with a
clear explanation, the host is unchanged, no process survives, and the next
sample (a correct program that relies on unpatched builtins and modules) is
scored correct. The executor-level versions of these attacks, with finer
assertions, are in tests/sandbox/attacks.py.
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest
from inspect_ai import eval
from inspect_ai.dataset import MemoryDataset, Sample

from eval_helpers import scripted, whole_score
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.sandbox.docker import docker_available
from finmath_tasks.tasks.knowledgefmath import knowledgefmath

MARKER = "987654321"


def hostile_programs(canary_file: Path, port: int) -> dict[str, str]:
    return {
        "network": "import socket\ndef solution():\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    return 1.0",
        "host_loopback": f"import socket\ndef solution():\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    return 1.0",
        "canary_file": f"def solution():\n    return float(open({str(canary_file)!r}).read())",
        "canary_env": "import os\ndef solution():\n    return float(os.environ['FINMATH_CANARY_SECRET'])",
        "write_outside": f"def solution():\n    open({str(canary_file)!r}, 'w').write('0')\n    open('/etc/finmath-pwned', 'w').write('x')\n    return 1.0",
        "fork_bomb": "import os\ndef solution():\n    while True:\n        os.fork()",
        "memory_bomb": "def solution():\n    blocks = []\n    while True:\n        blocks.append(bytearray(10**8))",
        "cpu_loop": "def solution():\n    while True:\n        pass",
        "sleep": "import time\ndef solution():\n    time.sleep(60)\n    return 1.0",
        "output_flood": "import sys\ndef solution():\n    for _ in range(200):\n        sys.stdout.write('x' * 1_000_000)\n    return -1.0",
        "daemon": (
            "import os\ndef solution():\n    if os.fork() == 0:\n        os.setsid()\n        if os.fork() == 0:\n"
            f"            os.execv('/bin/sleep', ['sleep', '{MARKER}'])\n        os._exit(0)\n    return -1.0"
        ),
        "kill_parent": "import os, signal\ndef solution():\n    os.kill(os.getppid(), signal.SIGKILL)\n    return 1.0",
        "kill_all": "import os, signal\ndef solution():\n    os.kill(-1, signal.SIGKILL)\n    return -1.0",
        "segfault": "import ctypes\ndef solution():\n    return float(ctypes.string_at(0))",
        "fill_disk": "def solution():\n    with open('fill', 'wb') as f:\n        while True:\n            f.write(b'0' * 1_000_000)",
        "patch_builtins": (
            "import builtins, math, numpy\ndef solution():\n    builtins.abs = lambda x: 42\n"
            "    math.pi = 3\n    numpy.sum = lambda *a, **k: 0\n    return -1.0"
        ),
        "malicious_return": (
            "import os\nclass Evil(float):\n    def __reduce__(self):\n        return (os.system, ('touch /tmp/finmath-pwned',))\n"
            "    def __float__(self):\n        return 6.57\ndef solution():\n    return Evil(6.57)"
        ),
    }


def correct_program(gold: float) -> str:
    # relies on builtins.abs, math.pi and numpy.sum being the real ones
    return (
        "import math, numpy\ndef solution():\n"
        f"    return math.copysign(abs({gold!r}), {gold!r}) + (math.pi - 3.141592653589793)"
        " + float(numpy.sum([0.0]))"
    )


def backend_or_skip(name: str) -> str:
    ok, reason = bwrap_available() if name == "bwrap" else docker_available()
    if not ok:
        pytest.skip(f"{name} sandbox unavailable: {reason}")
    return name


def surviving(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if marker in line and "ps -eo" not in line]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_every_attack_in_one_pot_eval(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend_or_skip(backend)
    monkeypatch.setenv("FINMATH_CANARY_SECRET", "3.5")
    canary = tmp_path / "canary.txt"
    canary.write_text("3.5")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0)
    attacks = hostile_programs(canary, listener.getsockname()[1])

    task = knowledgefmath(split="demo", solver="pot")
    base = list(task.dataset)
    samples, outputs = [], []
    for i, (name, program) in enumerate(attacks.items()):
        for kind, code in (("attack", program), ("after", None)):
            source = base[(2 * i + (kind == "after")) % len(base)]
            gold = float(source.target)  # type: ignore[arg-type]
            samples.append(
                Sample(
                    id=f"{i:02d}-{kind}-{name}",
                    input=source.input,
                    target=source.target,
                    metadata=source.metadata,
                )
            )
            outputs.append(f"```python\n{code or correct_program(gold)}\n```")
    task.dataset = MemoryDataset(samples)
    model = scripted(outputs)
    try:
        [log] = eval(
            task,
            model=model,
            # the backend under attack, as `inspect eval --sandbox finmath_<backend>` names it
            sandbox=f"finmath_{backend}",
            log_dir=str(tmp_path / "logs"),
            display="none",
            max_samples=1,
        )
    finally:
        listener.close()

    assert log.status == "success"
    assert log.eval.sandbox is not None and log.eval.sandbox.type == f"finmath_{backend}"
    assert log.samples is not None and len(log.samples) == 2 * len(attacks)
    for sample in log.samples:
        score = whole_score(sample)  # type: ignore[index]
        assert sample.error is None, sample.id
        assert score.explanation, sample.id
        if "-after-" in str(sample.id):
            assert score.value == {
                "financemath": 1.0,
                "knowledgefmath2023": 1.0,
                "tolerant": 1.0,
                "execution_rate": 1.0,
                "strict_execution_rate": 1.0,
            }, (
                sample.id,
                score.explanation,
            )
        else:
            # no attack yields a correct answer; most do not even yield a number
            assert score.value["tolerant"] == 0.0, (sample.id, score.explanation)  # type: ignore[index]
            if not sample.id.endswith(("output_flood", "daemon", "kill_all", "patch_builtins")):  # type: ignore[union-attr]
                assert score.value["strict_execution_rate"] == 0.0, (sample.id, score.explanation)  # type: ignore[index]

    # the host is unchanged and nothing the programs started survives
    assert canary.read_text() == "3.5"
    assert not Path("/etc/finmath-pwned").exists()
    assert not Path("/tmp/finmath-pwned").exists()
    assert surviving(MARKER) == []
