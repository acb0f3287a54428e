"""MathHay: the reference's recorded GPT-4o results replayed through `mathhay`.

    python benchmarks/mathhay_replay.py [data_dir]
    # default data_dir: $FINMATH_DATA_DIR, else ../shared/data

``<data_dir>/mathhay/reference_results/March-2024-to-September-2024/`` holds the
reference's (SalesforceAIResearch/MathHay at 7ac339c) recorded results of GPT-4o on
the release of that name: one file per task type, length and placement
(``full_gpt-4o_<type>_<length>_<placement>.json``), each record with the question, the
model's answer and reasoning, the exact match (``correct``) and the judge's reply
(``llm_judge`` Yes/No and ``judge_reasoning``). The reference's verdict is
``correct`` OR ``llm_judge`` containing "yes".

Each file becomes a real Inspect eval of the ``mathhay`` task (that release, type,
length and placement; haystacks built as in any run) on the recorded questions. The
evaluated model (scripted) replies with the recorded answer, as the JSON object the
solving prompt asks for (``reasoning``, ``answer``); a record whose answer the
reference could not read (its placeholder ``-inf``, reasoning ``None``) replies
without one. The ``grader`` role (scripted) replies with the recorded judge reply as
the judge's JSON (``reasoning``, ``output``). Our official verdict (the ``mathhay``
score) must equal the reference's on every record.

The records' ``index`` is not the question's place in the release's question file
(at 64K the files hold a subset, renumbered from 0), so records are mapped to our
samples by question text (unique within each task type).

``replay(data_dir)`` returns one :class:`Row` per file (also used by
``benchmarks/leaderboard_replay.py``); ``main()`` prints them, a line per length and
a summary line, and exits 1 on any disagreement.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import eval
from inspect_ai.model import ChatMessage, Model, ModelOutput, get_model

from finmath_tasks.tasks.mathhay import mathhay

RELEASE = "March-2024-to-September-2024"
RESULTS = Path("mathhay") / "reference_results" / RELEASE
FILE = re.compile(
    r"full_(?P<model>.+)_(?P<type>[a-z0-9]+)_(?P<length>\d+)_(?P<placement>[a-z-]+)\.json"
)
SOLVER = "mockllm/gpt-4o"
JUDGE = "mockllm/judge"
QUESTION = re.compile(r"Question:\n(.*?)\n\nReply with one JSON object", re.DOTALL)


@dataclass
class Row:
    """One recorded results file replayed."""

    file: str
    model: str
    task_type: str
    length: int
    placement: str
    records: int
    agreeing: int
    judged: int
    """Samples our scorer asked the judge about (the others were exact matches or unreadable)."""
    exact_agreeing: int = 0
    """Records whose exact match (our ``exact_match``) equals the reference's ``correct``."""
    disagreements: list[str] = field(default_factory=list)
    """One line per record whose verdicts differ: the question's sample id and both verdicts."""


def reference_verdict(record: dict[str, Any]) -> bool:
    """``correct`` OR the judge's reply containing "yes" (any case), as the reference reads it."""
    return bool(record["correct"]) or "yes" in str(record["llm_judge"]).lower()


def solver_reply(record: dict[str, Any]) -> str:
    """The recorded answer as the JSON reply the solving prompt asks for."""
    answer = record["pred_answer"]
    if not isinstance(answer, int | float) or not math.isfinite(answer):
        # the reference's placeholder for a reply it could not read: a reply without an answer
        return str(record["pred_reasoning"])
    return json.dumps({"reasoning": record["pred_reasoning"], "answer": answer})


def judge_reply(record: dict[str, Any]) -> str:
    """The recorded judge reply as the judge's JSON object."""
    return json.dumps({"reasoning": record["judge_reasoning"], "output": record["llm_judge"]})


def _text(messages: list[ChatMessage]) -> str:
    return "\n".join(m.text for m in messages)


def scripted_models(records: list[dict[str, Any]]) -> tuple[Model, Model, list[str]]:
    """The evaluated model (answers by the question in its prompt) and the judge (replies by
    the model's reasoning in its prompt); the third value collects the judged questions."""
    by_question = {r["question"]: r for r in records}
    judged: list[str] = []

    def solve(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        found = QUESTION.findall(_text(messages))
        record = by_question[found[-1]]  # KeyError: a prompt of a question not recorded
        return ModelOutput.from_content(SOLVER, solver_reply(record))

    def judge(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        text = _text(messages)
        matching = [r for r in records if f"Solution 2:\n{r['pred_reasoning']}\nAnswer2: " in text]
        if len(matching) != 1:
            raise ValueError(f"the judge prompt matches {len(matching)} recorded answers")
        judged.append(matching[0]["question"])
        return ModelOutput.from_content(JUDGE, judge_reply(matching[0]))

    solve_fn: Callable[..., ModelOutput] = solve
    judge_fn: Callable[..., ModelOutput] = judge
    return (
        get_model(SOLVER, custom_outputs=solve_fn),
        get_model(JUDGE, custom_outputs=judge_fn),
        judged,
    )


def replay_file(path: Path, data_dir: Path, log_dir: str) -> Row:
    found = FILE.fullmatch(path.name)
    if found is None:
        raise ValueError(f"{path}: not a full_<model>_<type>_<length>_<placement>.json file")
    task_type: Any = found["type"]  # checked by the task (one of its task types)
    length, placement = int(found["length"]), found["placement"]
    records = json.loads(path.read_text(encoding="utf-8"))
    task = mathhay(release=RELEASE, task_type=task_type, length=length, placement=placement,
                   data_dir=str(data_dir))  # fmt: skip
    by_question: dict[str, str] = {}
    for item in task.dataset:
        question = str(item.input)
        if question in by_question:
            raise ValueError(f"{path.name}: question of {item.id} is not unique in the release")
        by_question[question] = str(item.id)
    missing = [r for r in records if r["question"] not in by_question]
    if missing:
        raise ValueError(f"{path.name}: {len(missing)} recorded questions are not in the release")
    ids = [by_question[r["question"]] for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path.name}: a question is recorded twice")
    solver, judge, judged = scripted_models(records)
    [log] = eval(task, model=solver, model_roles={"grader": judge}, sample_id=ids,
                 log_dir=log_dir, display="none")  # fmt: skip
    if log.status != "success" or log.samples is None:
        raise RuntimeError(f"{path.name}: the eval ended with status {log.status}: {log.error}")
    ours: dict[str, Any] = {}
    exact: dict[str, Any] = {}
    for sample in log.samples:
        scores = sample.scores or {}
        ours[str(sample.id)] = scores["mathhay"].value if "mathhay" in scores else None
        exact[str(sample.id)] = scores["exact_match"].value if "exact_match" in scores else None
    row = Row(path.name, found["model"], task_type, length, placement, len(records), 0,
              len(judged))  # fmt: skip
    for record, sample_id in zip(records, ids, strict=True):
        theirs = reference_verdict(record)
        mine = ours.get(sample_id)
        if mine in (0.0, 1.0) and bool(mine) == theirs:
            row.agreeing += 1
        else:
            row.disagreements.append(f"{sample_id}: ours {mine}, reference {float(theirs)}")
        if exact.get(sample_id) in (0.0, 1.0) and bool(exact[sample_id]) == record["correct"]:
            row.exact_agreeing += 1
    return row


def replay(data_dir: str | Path) -> list[Row]:
    """Every recorded results file of the release, replayed (one :class:`Row` per file)."""
    root = Path(data_dir) / RESULTS
    files = sorted(root.glob("full_*.json"))
    if not files:
        raise FileNotFoundError(f"no recorded results (full_*.json) in {root}")
    with tempfile.TemporaryDirectory() as logs:
        return [replay_file(path, Path(data_dir), logs) for path in files]


def run(data_dir: str | Path) -> int:
    """Replay, print the table and the summary; returns the number of records that disagree
    (``benchmarks/leaderboard_replay.py`` calls this after the FinanceMath replay)."""
    rows = replay(data_dir)
    print(f"{'model':8} {'type':5} {'length':>7} {'placement':13} {'records':>7} "
          f"{'agreeing':>8} {'judged':>6} {'exact agreeing':>14}")  # fmt: skip
    for row in rows:
        print(f"{row.model:8} {row.task_type:5} {row.length:>7} {row.placement:13} "
              f"{row.records:>7} {row.agreeing:>8} {row.judged:>6} "
              f"{row.exact_agreeing:>14}")  # fmt: skip
        for line in row.disagreements:
            print(f"    disagrees: {line}")
    for length in sorted({r.length for r in rows}):
        at = [r for r in rows if r.length == length]
        print(f"{length}: {sum(r.agreeing for r in at)}/{sum(r.records for r in at)} records agree "
              f"({len(at)} files)")  # fmt: skip
    total = sum(r.records for r in rows)
    agreeing = sum(r.agreeing for r in rows)
    print(f"MathHay replay: {agreeing}/{total} recorded verdicts equal ours "
          f"({total - agreeing} disagree)")  # fmt: skip
    return total - agreeing


def main() -> None:
    default = os.environ.get("FINMATH_DATA_DIR") or str(
        Path(__file__).resolve().parents[1].parent / "shared" / "data"
    )
    data_dir = sys.argv[1] if len(sys.argv) > 1 else default
    sys.exit(0 if run(data_dir) == 0 else 1)


if __name__ == "__main__":
    main()
