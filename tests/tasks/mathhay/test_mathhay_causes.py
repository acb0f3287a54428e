"""MathHay's error causes: crafted replies for each cause through a real eval (the gold
solve() re-run in the bwrap sandbox against the relevant documents and the haystack), a
correct reply none, a judge answering nonsense `unexplained`; `inspect score` recomputes
them; a misread on a real record; any reply gets one cause or none, never a raise."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inspect_ai import eval
from inspect_ai.log import EvalLog, read_eval_log, write_eval_log
from inspect_ai.model import ModelOutput, get_model
from mathhay_fixtures import RELEASE, RELEVANT, record, write_release

from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.scorers.causes import CAUSES, ERROR_CAUSE_KEY, ERROR_EVIDENCE_KEY, explain
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.mathhay.causes import (
    HAYSTACK_STORE_KEY,
    PROMPT_KEY,
    SPANS_KEY,
    mathhay_causes,
    relevant_spans,
)
from finmath_tasks.tasks.mathhay.task import in_files_order

pytestmark = pytest.mark.skipif(not bwrap_available()[0], reason="needs bubblewrap")

SOLUTION = (
    "def solve():\n"
    "    revenue = 120  # Acme's revenue in 2023, in millions\n"
    "    costs = 80  # Acme's costs in 2023, in millions\n"
    "    profit = revenue - costs\n"
    "    margin = profit / revenue * 100\n"
    "    return margin"
)
GOLD = (120 - 80) / 120 * 100


def reply(answer: Any, reasoning: str) -> str:
    body = json.dumps({"relevant_quantities": [], "reasoning": reasoning, "answer": answer})
    return f"```json\n{body}\n```"


# (reply, the cause of exact_match, evidence it must hold)
CRAFTED: list[tuple[str, str | None, dict[str, Any]]] = [
    (reply(GOLD, "profit = 120 - 80 = 40; margin = 40 / 120 * 100 = 33.33"), None, {}),
    (reply(40, "profit = 120 - 80 = 40"), "partial", {"intermediate": 40.0}),
    (
        reply(96.05, "Revenue was 2023. profit = 2023 - 80 = 1943; 1943 / 2023 * 100 = 96.05"),
        "misread",
        {"input": "120", "number": 2023.0, "document": "relevant"},
    ),
    (
        # 21 is written only in pool document 3, an irrelevant document of the haystack
        reply(82.5, "Costs were 21. profit = 120 - 21 = 99; margin = 99 / 120 * 100 = 82.5"),
        "misread",
        {"input": "80", "number": 21.0, "document": "haystack"},
    ),
    (
        reply(93.33, "profit = 120 - 8 = 112; margin = 112 / 120 * 100 = 93.33"),
        "unit",  # costs / 10, or revenue x 10: the same margin
        {"input": {"80", "120"}, "exponent": {-1, 1}},
    ),
    (
        reply(25, "profit = 120 - 80 = 30; margin = 30 / 120 * 100 = 25"),
        "arithmetic",
        {"step": "120 - 80 = 30"},
    ),
    (
        reply(50, "profit = 120 - 80 = 40; margin = 40 / 80 * 100 = 50"),
        "method",
        {"steps_checked": 2},
    ),
    ("I could not find the figures.", "no_answer", {}),
]


def write_crafted(root: Path) -> str:
    write_release(root)
    records = []
    for i in range(len(CRAFTED)):
        r = record("sssd", [0], f"What was Acme's profit margin in 2023 in percent? ({i})", GOLD, 2)
        r["Task"]["solution"] = SOLUTION
        records.append(r)
    folder = root / "mathhay" / RELEASE
    (folder / "full_haystack_question_sssd.json").write_text(json.dumps(records))
    return str(root)


def run(root: str, outputs: list[ModelOutput], judge: bool, **args: Any) -> EvalLog:
    limit = args.pop("limit", None)
    grader = get_model(
        "mockllm/judge",
        custom_outputs=lambda *_: ModelOutput.from_content("mockllm/judge", "I like turtles"),
    )
    [log] = eval(
        in_files_order(
            mathhay(
                data_dir=root, release=RELEASE, subset="full", task_type="sssd", length=2000,
                judge=judge, **args,
            )
        ),
        model=get_model("mockllm/model", custom_outputs=outputs),
        model_roles={"grader": grader},
        max_samples=1,
        limit=limit,
        display="none",
        log_dir=str(Path(root) / "logs"),
    )  # fmt: skip
    assert log.status == "success", log.error
    return log


def found(log: EvalLog, key: str) -> list[tuple[Any, Any]]:
    out = []
    for sample in log.samples or []:
        meta = (sample.scores or {})[key].metadata or {}
        out.append((meta.get(ERROR_CAUSE_KEY), meta.get(ERROR_EVIDENCE_KEY)))
    return out


def check_crafted(log: EvalLog) -> None:
    assert [c for c, _ in found(log, "exact_match")] == [c for _, c, _ in CRAFTED]
    for (_, evidence), (_, _, wanted) in zip(found(log, "exact_match"), CRAFTED, strict=True):
        for name, value in wanted.items():
            if isinstance(value, set):
                assert evidence[name] in value, (name, evidence)
            else:
                assert evidence[name] == value, (name, evidence)


def test_each_cause_through_a_real_eval_and_inspect_score(tmp_path: Path) -> None:
    root = write_crafted(tmp_path)
    outputs = [ModelOutput.from_content("mockllm/model", text) for text, _, _ in CRAFTED]
    log = run(root, outputs, judge=True)
    check_crafted(log)
    [(_, haystack)] = [
        f for f in found(log, "exact_match") if (f[1] or {}).get("document") == "haystack"
    ]
    assert "number 21" in haystack["context"]
    # the judge answered nonsense: the paper's verdict was not reached, so its key says so
    for (cause, evidence), (_, crafted, _) in zip(found(log, "mathhay"), CRAFTED, strict=True):
        if crafted in (None, "no_answer"):
            assert cause == crafted
        else:
            assert cause == "unexplained" and "judge gave no verdict" in evidence["why"]
    # inspect score rebuilds the scorers and recomputes the causes, here of a log without them
    location = str(log.location)
    stripped = read_eval_log(location)
    for sample in stripped.samples or []:
        for score in (sample.scores or {}).values():
            (score.metadata or {}).pop(ERROR_CAUSE_KEY, None)
    write_eval_log(stripped, location)
    assert {c for c, _ in found(read_eval_log(location), "exact_match")} == {None}
    done = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "score", location, "--action", "overwrite",
         "--overwrite", "--display", "plain"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    rescored = read_eval_log(location)
    assert [c for c, _ in found(rescored, "exact_match")] == [c for _, c, _ in CRAFTED]


def test_truncated_and_over_budget(tmp_path: Path) -> None:
    root = write_crafted(tmp_path)
    cut = ModelOutput.from_content("mockllm/model", '```json\n{"reasoning": "profit = 120 - 80')
    cut.choices[0].stop_reason = "max_tokens"
    outputs = [cut] * len(CRAFTED)
    log = run(root, outputs, judge=False, limit=1)
    assert [c for c, _ in found(log, "mathhay")] == ["truncated"]
    log = run(root, [], judge=False, limit=1, max_prompt_tokens=200)
    assert [c for c, _ in found(log, "exact_match")] == ["over_budget"]
    assert [c for c, _ in found(log, "tolerant")] == ["over_budget"]


# ---- the check itself: exclusivity on any reply, a real record ------------------------

PROMPT = "Documents:\n" + RELEVANT[0] + "\n\nPool document 3. It ends here with number 21.\n"
HAYSTACK = {SPANS_KEY: relevant_spans(PROMPT, [RELEVANT[0]])}
META = {
    "solution": SOLUTION,
    "question": "margin?",
    PROMPT_KEY: PROMPT,
    HAYSTACK_STORE_KEY: HAYSTACK,
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(alphabet=st.sampled_from("0123456789 .=+-*/x%\n()abc"), max_size=80),
    answer=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
    cls=st.sampled_from(["wrong", "within_1pct", "scale", "no_answer:no_number", "judge_failed"]),
)
def test_any_reply_gets_one_cause_or_none_never_a_raise(
    text: str, answer: float | None, cls: str
) -> None:
    classes = {"exact_match": cls}
    causes, evidences = asyncio.run(
        explain(classes, {"exact_match": answer}, output=text, gold=GOLD,
                metadata=META, gold_check=mathhay_causes)
    )  # fmt: skip
    assert set(causes) == {"exact_match"} and causes["exact_match"] in CAUSES
    assert isinstance(evidences["exact_match"].get("why"), str)
    none, _ = asyncio.run(explain({}, {}, output=text, gold=GOLD, metadata=META))
    assert none == {}


def test_without_the_recorded_places_of_the_documents_nothing_is_decided() -> None:
    def cause(meta: dict[str, Any]) -> str:
        causes, _ = asyncio.run(
            explain({"exact_match": "wrong"}, {"exact_match": 40.0}, output="x", gold=GOLD,
                    metadata=meta, gold_check=mathhay_causes)
        )  # fmt: skip
        return causes["exact_match"]

    # 40 is the gold's profit, an intermediate value: found where the documents are known
    assert cause(META) == "partial"
    # a log from before the places were recorded: the relevant text is unknown
    assert cause({**META, HAYSTACK_STORE_KEY: {}}) == "unexplained"


DATA = os.environ.get("FINMATH_DATA_DIR")


@pytest.mark.skipif(not DATA, reason="needs FINMATH_DATA_DIR (the real MathHay release)")
def test_misread_on_a_real_record_names_the_input_and_the_number() -> None:
    from finmath_tasks.tasks.mathhay.dataset import load_data

    data = load_data(DATA, "v1", "verified", ["2ssd"])
    # Tesla's ROIC over 2021-2023 (14%, 23%, 20%), the average: the 2021 ROIC read as the
    # 60% the same document gives for the value Tesla's stock lost since November 2021
    [question] = [q for q in data.questions.values() if "average ROIC for Tesla" in q.question]
    [document] = question.documents
    prompt = f"Documents:\n{document}\n\nQuestion: {question.question}"
    meta = {
        "solution": question.solution,
        "question": question.question,
        PROMPT_KEY: prompt,
        HAYSTACK_STORE_KEY: {SPANS_KEY: relevant_spans(prompt, [document])},
    }
    answer = (60 + 23 + 20) / 3
    text = reply(answer, "ROIC: 60, 23 and 20; (60 + 23 + 20) / 3 = 34.33")
    causes, evidences = asyncio.run(
        explain({"exact_match": "wrong"}, {"exact_match": answer}, output=text,
                gold=question.answer, metadata=meta, gold_check=mathhay_causes)
    )  # fmt: skip
    assert causes == {"exact_match": "misread"}
    found = evidences["exact_match"]
    assert found["input"] == "14" and found["number"] == 60.0 and found["document"] == "relevant"
    assert "60%" in found["context"]


@pytest.mark.skipif(not DATA, reason="needs FINMATH_DATA_DIR (the real MathHay release)")
def test_method_needs_every_input_written_on_a_real_record() -> None:
    from finmath_tasks.tasks.mathhay.dataset import load_data

    data = load_data(DATA, "v1", "verified", ["2ssd"])
    [question] = [q for q in data.questions.values() if "average ROIC for Tesla" in q.question]
    [document] = question.documents
    prompt = f"Documents:\n{document}\n\nQuestion: {question.question}"
    meta = {
        "solution": question.solution,
        "question": question.question,
        PROMPT_KEY: prompt,
        HAYSTACK_STORE_KEY: {SPANS_KEY: relevant_spans(prompt, [document])},
    }

    def cause(reasoning: str, answer: float) -> str:
        causes, _ = asyncio.run(
            explain({"exact_match": "wrong"}, {"exact_match": answer},
                    output=reply(answer, reasoning), gold=question.answer, metadata=meta,
                    gold_check=mathhay_causes)
        )  # fmt: skip
        return causes["exact_match"]

    # a growth rate for an average: every input the document's, the method wrong
    assert cause("(23 - 14) / 14 * 100 = 64.29", 64.29) == "method"
    # 137.5 is written nowhere in the document (only as a sum or ratio of two of its
    # hundreds of numbers, which is no evidence): nothing is decided
    assert cause("(14 + 23 + 137.5) / 3 = 58.17", 58.17) == "unexplained"


def test_precision_and_a_suspect_gold() -> None:
    def cause(meta: dict[str, Any], answer: float, gold: float = GOLD) -> tuple[str, Any]:
        causes, evidences = asyncio.run(
            explain({"exact_match": "within_1pct"}, {"exact_match": answer}, output="x",
                    gold=gold, metadata=meta, gold_check=mathhay_causes)
        )  # fmt: skip
        return causes["exact_match"], evidences["exact_match"]

    # 33 for a gold of 33.33: the gold itself at the answer's written precision
    found, evidence = cause(META, 33.0)
    assert found == "precision" and "fewer digits" in evidence["why"]
    # 1 + 4.56% rounded to 1.05 before compounding: 1630, which the gold (1561.9) is not
    # at the answer's precision; only the gold with its values rounded to 3 digits gives it
    compound = {**META, "solution": "def solve():\n    return 1000 * (1 + 0.0456) ** 10"}
    found, evidence = cause(compound, 1630.0, gold=1000 * 1.0456**10)
    assert found == "precision" and evidence["digits"] == 3, evidence
    # a gold that assumes a tax rate the documents write nowhere
    suspect = {**META, "solution": "def solve():\n    return (120 - 80) * (1 - 0.27)"}
    found, evidence = cause(suspect, 30.0, gold=29.2)
    assert found == "gold_suspect" and evidence["input"] == "0.27"
