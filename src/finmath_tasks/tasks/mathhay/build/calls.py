"""Model calls of a stage as an Inspect eval, checkpointed so that none is ever repeated.

Each call is one sample of a small internal task: the model of a role
(``generator`` or ``qc``, resolved by Inspect from ``--model`` and
``--model-role``, with Inspect's retries, concurrency limits and usage
accounting) answers one prompt; the reply is parsed by the stage, and the
parsed value or the reason it was rejected is appended at once to
``<period>/.build/<stage>.jsonl``. A call is identified by its key and a digest
of its prompt, so a rerun (after an interruption, or with ``--overwrite``)
asks only for calls that have not finished with the same prompt. The log of
each stage's eval (``<period>/.build/logs``) holds every prompt, reply and usage.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, Model, get_model
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver

from finmath_tasks.tasks.mathhay.build.layout import BuildError, Layout
from finmath_tasks.tasks.mathhay.build.replies import ReplyError

GENERATOR_ROLE = "generator"

Parser = Callable[[str], Any]
"""Reply text -> the stage's value; raises ReplyError (the call's item is dropped)."""


def digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class Call:
    key: str
    prompt: str

    @property
    def digest(self) -> str:
        return digest(self.key, self.prompt)


def read_checkpoint(path: Path) -> dict[str, dict[str, Any]]:
    """Finished records by key (a torn last line, from an interruption, is ignored)."""
    done: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            done[record["key"]] = record
    return done


class Checkpoint:
    """Append-only JSON lines of finished items (one write and flush per item)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and path.stat().st_size:
            with path.open("rb") as f:
                f.seek(-1, 2)
                torn = f.read(1) != b"\n"
            if torn:  # an interrupted write: end that line so the next record stands alone
                with path.open("a", encoding="utf-8") as g:
                    g.write("\n")

    def add(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            f.flush()


@dataclass
class StageRun:
    """What a stage's calls did (for the build report)."""

    calls: int = 0
    """Calls made in this run."""
    resumed: int = 0
    """Calls found finished in the checkpoint (not made again)."""
    tokens: int = 0
    logs: list[str] = field(default_factory=list)

    def add(self, other: StageRun) -> None:
        self.calls += other.calls
        self.resumed += other.resumed
        self.tokens += other.tokens
        self.logs += other.logs


@solver
def answer_and_record(
    role: str, parse: Parser, checkpoint: Checkpoint, config: GenerateConfig
) -> Any:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model(role=role, default=get_model())
        output = await model.generate(state.input_text, config=config)
        state.output = output
        state.messages.append(output.message)
        meta = state.metadata
        record: dict[str, Any] = {"key": meta["key"], "digest": meta["digest"]}
        try:
            record.update(ok=True, value=parse(output.completion), reason=None)
        except ReplyError as e:
            record.update(ok=False, value=None, reason=str(e))
        meta["record"] = record
        checkpoint.add(record)
        return state

    return solve


@scorer(metrics=[mean()])
def parsed() -> Any:
    async def score(state: TaskState, target: Target) -> Score:
        record = state.metadata.get("record") or {}
        return Score(value=float(bool(record.get("ok"))), explanation=record.get("reason") or "ok")

    return score


def usage_tokens(log: Any) -> int:
    return sum(u.total_tokens for u in (log.stats.model_usage or {}).values())


def run_calls(
    layout: Layout,
    stage: str,
    calls: list[Call],
    parse: Parser,
    *,
    model: str | Model | None,
    roles: dict[str, str | Model] | None = None,
    role: str = GENERATOR_ROLE,
    config: GenerateConfig | None = None,
    max_samples: int | None = None,
    display: str = "none",
) -> tuple[dict[str, dict[str, Any]], StageRun]:
    """Each call's record ``{key, digest, ok, value, reason}``, making only unfinished calls."""
    if len({c.key for c in calls}) != len(calls):
        raise BuildError(f"{stage}: two calls share a key (a bug)")
    path = layout.checkpoint(stage)
    wanted = {c.key: c.digest for c in calls}
    done = {k: r for k, r in read_checkpoint(path).items() if wanted.get(k) == r.get("digest")}
    run = StageRun(resumed=len(done))
    pending = [c for c in calls if c.key not in done]
    if pending:
        checkpoint = Checkpoint(path)
        task = Task(
            dataset=MemoryDataset(
                [
                    Sample(id=c.key, input=c.prompt, metadata={"key": c.key, "digest": c.digest})
                    for c in pending
                ],
                name=f"mathhay-build-{stage}",
            ),
            solver=answer_and_record(role, parse, checkpoint, config or GenerateConfig()),
            scorer=parsed(),
            name=f"mathhay_build_{stage}",
            continue_on_fail=True,
        )
        [log] = eval(
            task,
            model=model,
            model_roles=roles or None,
            log_dir=str(layout.log_dir()),
            display=display,  # type: ignore[arg-type]
            max_samples=max_samples,
            fail_on_error=False,
        )
        run.logs.append(log.location)
        run.tokens += usage_tokens(log)
        done = {k: r for k, r in read_checkpoint(path).items() if wanted.get(k) == r.get("digest")}
        run.calls = sum(1 for c in pending if c.key in done)
    missing = [c.key for c in calls if c.key not in done]
    if missing:
        raise BuildError(
            f"{stage}: {len(missing)} model call(s) did not finish (first: {missing[0]}; see the "
            f"log in {layout.log_dir()}); finished calls are kept in {path}: run the build again "
            "to resume"
        )
    return done, run
