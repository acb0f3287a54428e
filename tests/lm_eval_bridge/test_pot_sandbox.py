"""Program of thought under lm_eval runs in our sandbox only: attacks driven from lm_eval.

The sandbox's own attack programs (tests/sandbox/attacks.py) are sent as a model's reply
to the lm_eval task ``finmath_knowledgefmath_pot`` (the packaged demo split, the bwrap
sandbox), through lm_eval's evaluator: the program runs where the Inspect task runs it,
and every attack must be contained. After each, a correct program must still score."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "lm_eval", reason='lm-evaluation-harness is not installed (the "lm-eval" extra)'
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sandbox"))

from attacks import ATTACKS, GOLD, GOLD_VALUE, Attack, canary_environment
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
from scripted_lm import ScriptedLM, task_manager

from finmath_tasks.lm_eval.task import FinmathTask
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.solvers.pot import PROGRAM_RESULT_KEY

pytestmark = [pytest.mark.bwrap, pytest.mark.slow]

OK, REASON = bwrap_available()

TASK = "finmath_knowledgefmath_pot"
# every attack that is whole programs run with the task's settings (3 s, the runner's
# default output limit); the others (fork bomb, time limits, output flood, filling the
# disk, hard links) set their own timeout or output limit, which a task's reply cannot:
# they stay in the backends' own attack tests (tests/sandbox)
DRIVEN = (
    "no_network",
    "host_loopback_is_unreachable",
    "host_files_are_invisible",
    "environment_of_the_evaluator_does_not_leak",
    "programs_run_unprivileged",
    "cannot_write_outside_the_program_dir",
    "malicious_return_objects",
    "patched_builtin_number_types_do_not_fool_the_value_check",
    "memory_bomb-one-allocation",
    "memory_bomb-gradual",
    "memory_bomb-numpy",
    "memory_limit_leaves_room_for_real_work",
    "segfault",
    "double_forked_daemon_does_not_survive",
    "worker_cannot_be_spied_on_or_impersonated",
    "patches_do_not_reach_the_next_program",
    "kernel_objects_do_not_reach_the_next_program",
    "process_counts_are_not_shared_with_the_host",
    "killing_the_worker_or_everything_fails",
)


class LmEvalSandbox:
    """The attacks' :class:`attacks.Sandbox`: each program is the scripted model's reply to
    the lm_eval PoT task; the result is the program run the bridge recorded."""

    program_dir = "/tmp"
    own_system_files = False
    pid1_is_sandbox_user = False
    program_uid = 65534
    work_timeout = 3.0

    def __init__(self, task: FinmathTask, manager: TaskManager) -> None:
        self.task = task
        self.manager = manager
        self.scores: dict[str, float] = {}

    def run(self, code: str, timeout: float = 3.0, **extra: Any) -> dict[str, Any]:
        assert timeout == 3.0 and not extra, "the task runs programs with its own settings"
        reply = f"```python\n{code}\n```"
        results = simple_evaluate(
            model=ScriptedLM(lambda doc: reply),
            tasks=[self.task],
            limit=1,
            apply_chat_template=True,
            log_samples=True,
            bootstrap_iters=0,
            confirm_run_unsafe_code=True,  # the task is marked unsafe_code
            task_manager=self.manager,  # else lm_eval indexes its own tasks on every call
        )
        assert results is not None
        [sample] = results["samples"][TASK]
        self.scores = {k: sample[k] for k in ("financemath", "execution_rate")}
        state = self.task.bridge.last_state
        assert state is not None and state.output.completion == reply
        record: dict[str, Any] = state.store.get(PROGRAM_RESULT_KEY)
        assert record["program"] == code.strip()
        return record

    def assert_no_program_processes(self) -> None:
        pass  # checked by the backend's own attack tests, on its worker


@pytest.fixture(scope="module")
def sandbox() -> Iterator[LmEvalSandbox]:
    if not OK:
        pytest.skip(f"bubblewrap is not usable here: {REASON}")
    # the sandbox starts inside: if the environment leaked, programs would see it
    with canary_environment():
        # the packaged demo split: no benchmark data needed
        manager = task_manager({"sandbox": "bwrap", "split": "demo"})
        loaded = manager.load([TASK])["tasks"]
        task = loaded[TASK]
        assert isinstance(task, FinmathTask)
        yield LmEvalSandbox(task, manager)


def test_the_task_runs_programs_in_bwrap(sandbox: LmEvalSandbox) -> None:
    assert sandbox.task.bridge.task.sandbox is not None
    assert sandbox.task.bridge.task.sandbox.type == "finmath_bwrap"
    assert sandbox.task.bridge.args["split"] == "demo"


@pytest.mark.parametrize("attack", [a for a in ATTACKS if a.name in DRIVEN], ids=str)
def test_attack_is_contained(sandbox: LmEvalSandbox, attack: Attack) -> None:
    attack(sandbox)
    # the next program runs normally, and lm_eval's verdict reads its value
    resp = sandbox.run(GOLD)
    assert resp["ok"] is True and resp["value"] == GOLD_VALUE, resp
    assert sandbox.scores["execution_rate"] == 1.0


def test_every_driven_attack_exists() -> None:
    assert set(DRIVEN) <= {a.name for a in ATTACKS}
