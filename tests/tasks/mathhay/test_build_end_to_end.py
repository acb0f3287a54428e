"""A whole ``finmath mathhay build`` offline (scripted models, a local folder of documents),
then the built release evaluated by the ``mathhay`` task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval
from inspect_ai.util import SandboxEnvironmentSpec

from eval_helpers import metrics, scripted
from finmath_tasks.cli.main import main as finmath
from finmath_tasks.sandbox.bwrap import bwrap_available
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.mathhay.build.filter import Thresholds
from finmath_tasks.tasks.mathhay.build.layout import BuildError, Layout
from finmath_tasks.tasks.mathhay.build.pipeline import BuildOptions, run_build
from finmath_tasks.tasks.mathhay.build.questions import document_groups
from finmath_tasks.tasks.mathhay.task import in_files_order

PERIOD = "January-2026-to-June-2026"
_OK, _REASON = bwrap_available()
COMPANIES = ["Acme", "Borealis", "Cobalt", "Dynamo", "Everest", "Fjord"]
NO_SPACY = Thresholds(min_entities=0)


def document(k: int, name: str) -> str:
    base = 100 * (k + 1)
    numbers = ", ".join(str(base + 7 * i) for i in range(14))
    return (
        f"{name} Holdings quarterly report. {name} reported revenue of {base + 11} million "
        f"dollars in the first quarter of 2026. {name} costs were {base - 13} million dollars. "
        f"The {name} group employed {base * 3} people across {k + 12} regional offices. "
        f"Monthly unit sales of {name} were {numbers} units. "
        f"Analysts expect {name} margins to widen by {k + 2}.5% next year while the market "
        "for its products keeps growing at a steady pace across every region it serves. "
        f"The board of {name} approved a dividend and a share buyback programme. "
        "Management said that demand from retail customers, industrial buyers and public "
        "agencies had held up well through the winter, that new plants would open on "
        "schedule, and that the company would keep investing in training, research and "
        "the modernisation of its logistics network over the coming seasons."
    )


def write_documents(folder: Path) -> None:
    folder.mkdir()
    for k, name in enumerate(COMPANIES):
        (folder / f"{name.lower()}.txt").write_text(document(k, name))
    (folder / "logo.md").write_bytes(b"\x89PNG\r\n\x1a\n\0\0binary")
    (folder / "empty.md").write_text("   \n")
    (folder / "notes.pdf").write_bytes(b"%PDF-1.4")


def topics_reply() -> str:
    return json.dumps({"topics": ["Company Results", "Regional Offices"]})


def queries_reply(pairs: list[tuple[str, str]]) -> str:
    return json.dumps(
        {
            "subtopics": [
                {
                    "subtopic": f"{a} and {b}",
                    "queries": [
                        {
                            "decomposable_query": f"How did {a} and {b} compare in 2026?",
                            "atomic_queries": [f"{a} Holdings revenue", f"{b} Holdings revenue"],
                        }
                    ],
                }
                for a, b in pairs
            ]
        }
    )


def revenue(text: str) -> int:
    return int(text.split("revenue of ")[1].split(" ")[0])


def question_reply(group: dict[str, Any], k: int) -> str:
    docs = [group["document"]] if k == 1 else group["document"]
    values = [revenue(d) for d in docs] if k > 1 else [revenue(docs[0]), revenue(docs[0])]
    cell = [{"object": "revenue", "numerical_value": values[0], "date": "Q1 2026", "location": "",
             "context": "million dollars"}]  # fmt: skip
    cells: Any = cell if k == 1 else {"Document1": cell, "Document2": cell}
    task = {
        "relevant_quantity_cells"
        if k == 1
        else "relevant_quantity_cells_from_two_documents": cells,
        "question": f"What is the total of {values[0]} and {values[1]} million dollars of revenue?",
        "solution": f"def solve():\n    a = {values[0]}\n    b = {values[1]}\n    return a + b",
        "steps": 1,
        "answer": str(sum(values)),
    }
    return json.dumps({"tasks": [task, {"question": "missing fields"}]})


def qc_reply(answer: float) -> str:
    code = f"def solve():\n    answer = {answer}\n    return answer"
    return json.dumps({"reasoning": "add them", "python_solution": code, "answer": answer})


def answer_reply(answer: Any) -> str:
    body = json.dumps({"relevant_quantities": ["revenue"], "reasoning": "sum", "answer": answer})
    return f"```json\n{body}\n```"


@pytest.mark.skipif(not _OK, reason=f"bubblewrap unavailable: {_REASON}")
@pytest.mark.bwrap
@pytest.mark.slow
def test_a_whole_build_then_the_mathhay_task(tmp_path: Path) -> None:
    docs, out = tmp_path / "docs", tmp_path / "out"
    write_documents(docs)
    layout = Layout(out, PERIOD)
    common: dict[str, Any] = {"out": out, "period": PERIOD, "documents": docs, "topics": 2,
                              "thresholds": NO_SPACY, "task_types": ("sssd", "ss2d"),
                              "max_samples": 1, "sandbox": SandboxEnvironmentSpec("finmath_bwrap")}  # fmt: skip
    # topics -> queries -> documents -> filter (the generator: 1 + 2 calls)
    generator = scripted(
        [
            topics_reply(),
            queries_reply([("Acme", "Borealis"), ("Cobalt", "Dynamo")]),
            queries_reply([("Everest", "Fjord"), ("Acme", "Zzyzx")]),
        ]
    )
    rows = run_build(
        BuildOptions(**common, model=generator, stages=("topics", "queries", "documents", "filter"))
    )
    assert json.loads(layout.topics.read_text()) == ["Company Results", "Regional Offices"]
    by_stage = {r.stage: r for r in rows}
    assert by_stage["topics"].calls == 1 and by_stage["queries"].calls == 2
    assert "binary (not UTF-8 text): 1" in by_stage["documents"].dropped
    assert "empty: 1" in by_stage["documents"].dropped
    # "Zzyzx Holdings revenue" shares only words every document has: no BM25 result
    assert "7 of 8 atomic queries found one" in by_stage["documents"].counts
    assert by_stage["filter"].dropped == "no search result: 1"
    pool = json.loads(layout.pool.read_text())
    assert [d["Document_ID"] for d in pool] == [f"Doc_{i}" for i in range(len(pool))]
    # Acme's report is in the pool twice: found for two queries (as with web search)
    assert len(pool) == 7 and pool[0]["Document"] == pool[6]["Document"]
    filtered = json.loads(layout.filtered.read_text())
    # questions: one call per document group (7 single documents, 3 pairs)
    single, pairs = document_groups(filtered, 1), document_groups(filtered, 2)
    assert (len(single), len(pairs)) == (7, 3)
    generator = scripted(
        [question_reply(g, 1) for g in single] + [question_reply(g, 2) for g in pairs]
    )
    [row] = run_build(BuildOptions(**common, model=generator, stages=("questions",)))
    assert row.calls == 10 and "missing the field" not in row.dropped
    assert "the reply misses the field 'solution'" in row.dropped  # one per reply
    generated = json.loads(layout.generated("sssd").read_text())
    assert generated[0]["doc_id"] == "Doc_0" and len(generated[0]["tasks"]) == 1
    # quality control: the second solution agrees except for the first sssd task
    answers = [float(t["answer"]) for t in [*_tasks(layout, "sssd"), *_tasks(layout, "ss2d")]]
    replies = [qc_reply(a + (1 if i == 0 else 0)) for i, a in enumerate(answers)]
    rows = run_build(
        BuildOptions(
            **common, model="mockllm/model", roles={"qc": scripted(replies)},
            stages=("qc", "haystack"),
        )
    )  # fmt: skip
    qc, hay = rows
    assert qc.counts == "sssd 6 of 7, ss2d 3 of 3" and "the answers differ: 1" in qc.dropped
    assert hay.counts == "sssd 6, ss2d 3"
    report = layout.report.read_text()
    assert "| qc | sssd 6 of 7, ss2d 3 of 3 |" in report and "Wall time" in report
    # the report covers every stage built so far, across the three runs
    stages = [line.split(" | ")[0].strip("| ") for line in report.splitlines()[6:13]]
    assert stages == ["topics", "queries", "documents", "filter", "questions", "qc", "haystack"]
    # a finished stage is not overwritten silently
    with pytest.raises(BuildError, match=r"exists.*--overwrite"):
        run_build(BuildOptions(**common, stages=("haystack",)))
    # the built release under the mathhay task: a model answering the gold answers
    gold = [
        t["Task"]["answer"]
        for tt in ("sssd", "ss2d")
        for t in json.loads(layout.haystack(tt).read_text())
    ]
    [log] = eval(
        # the scripted answers follow the files' order
        in_files_order(mathhay(data_dir=str(out), release=PERIOD, length=3000)),
        model=scripted([answer_reply(g) for g in gold]),
        model_roles={"grader": scripted(["unused"] * 20)},
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    assert len(log.samples or []) == 9
    assert metrics(log, "exact_match")["accuracy"] == 1.0
    assert metrics(log, "mathhay")["accuracy"] == 1.0


def _tasks(layout: Layout, task_type: str) -> list[dict[str, Any]]:
    return [t for g in json.loads(layout.generated(task_type).read_text()) for t in g["tasks"]]


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for period in ("a/b", "..", "x/../y", ""):
        assert finmath(["mathhay", "build", "--period", period, "--out", str(out)]) == 2
    with pytest.raises(BuildError, match="--model is needed"):
        run_build(BuildOptions(out=out, period="P", stages=("topics",)))
    with pytest.raises(BuildError, match="needs --documents"):
        run_build(BuildOptions(out=out, period="P", stages=("documents",)))
    with pytest.raises(BuildError, match="--stages"):
        run_build(BuildOptions(out=out, period="P", stages=("search",)))
    with pytest.raises(BuildError, match="--task-types"):
        run_build(BuildOptions(out=out, period="P", task_types=("4s4d",), stages=("haystack",)))
    # an empty or binary document folder
    (tmp_path / "empty").mkdir()
    layout = Layout(out, "P")
    layout.folder.mkdir(parents=True)
    layout.queries.write_text(json.dumps({"T": [{"subtopic": "s", "Queries": [
        {"decomposable_query": "d", "atomic_queries": ["a"]}]}]}))  # fmt: skip
    opts = {"out": out, "period": "P", "stages": ("documents",)}
    with pytest.raises(BuildError, match=r"no readable document.*the folder is empty"):
        run_build(BuildOptions(**opts, documents=tmp_path / "empty"))  # type: ignore[arg-type]
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "a.txt").write_bytes(b"\xff\xfe\0\0")
    with pytest.raises(BuildError, match=r"no readable document.*a\.txt: binary"):
        run_build(BuildOptions(**opts, documents=tmp_path / "bin"))  # type: ignore[arg-type]
    # a document over the size limit is skipped with its reason, not read
    big = tmp_path / "big"
    big.mkdir()
    (big / "huge.txt").write_bytes(b"word " * (11 * 1024 * 1024 // 5))
    (big / "small.txt").write_text("a revenue report")
    [row] = run_build(BuildOptions(**opts, documents=big))  # type: ignore[arg-type]
    assert "larger than --max-document-mb 10: 1" in row.dropped
    # an output folder holding another period's build
    (layout.state / "build.json").write_text(json.dumps({"period": "Other-Period"}))
    with pytest.raises(BuildError, match="holds a build of period 'Other-Period'"):
        run_build(BuildOptions(**opts, documents=big, overwrite=True))  # type: ignore[arg-type]
