"""No evaluation record leaks into a text the package ships to a model.

The shipped texts are found systematically (:mod:`leak_scan`): every package data file
under ``src/finmath_tasks`` (prompt and template files, the FinQA and SARA exemplar
files, the knowledge bank, the oracle annotations, the demo split; JSON files item by
item; not the user READMEs), every string literal of 20 or more characters in the
package's modules (prompt constants, answer-format instructions, judge and grader
prompts; not docstrings), every string global of the imported modules (strings built at
import time), and the FinQA few-shot turns rendered as the model sees them (train
records + our explanations).

They are checked against every evaluation record in the shared data: TAT-QA dev and
test (one record per document: table, paragraphs, questions, answers, derivations),
FinQA dev and test, FinanceMath validation and test, the SARA test cases
(``splits/test``), and MathHay's questions (with their documents) and document pools, of
both releases (``March-2024-to-September-2024`` and ``v1``).

A leak is a shipped text that shares with ONE record at least 3 distinctive numbers or
a run of at least 12 consecutive normalised words; "distinctive" is defined precisely
in :mod:`leak_scan`'s docstring: at least 3 significant digits after normalising
``1,202.9``/``1202.9``/``(1,202.90)``, not a multiple of 100, not an integer below 1000,
not a year (1900..2100) and not part of a month-name date.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import leak_scan as L
from finmath_tasks.loading import DatasetError

PACKAGE_DIR = Path(L.__file__).resolve().parents[1] / "src" / "finmath_tasks"


# --------------------------------------------------------------------------- the detector


def test_three_shared_distinctive_numbers_leak_whatever_their_writing() -> None:
    record = "Total sales were $1,202.9 million in 2018 and 1,496.5 in 2019; Other was (44.1)."
    text = "revenue grew from 1202.9 to 1496.50 while other fell by -44.1"
    assert L.shared_numbers(text, record) == {"1202.9", "1496.5", "44.1"}
    assert L.leaks(text, record)
    assert not L.leaks("revenue grew from 1202.9 to 1496.5", record)  # two are not enough


def test_years_round_numbers_small_integers_and_dates_are_not_distinctive() -> None:
    record = (
        "In 2017, 2018 and 2019 the company sold 1,500, 12,300 and 250,000 units, "
        "ranked 111th, 156th and 682nd, at 1.5, 2.5 and 0.05 percent, "
        "as of december 31, 2009, december 312010 and Dec. 31 2011."
    )
    text = (
        "2017 2018 2019 1500 12300 250000 111 156 682 1.5 2.5 0.05 312009 312010 312011 3120 2009"
    )
    assert L.shared_numbers(text, record) == set()
    assert not L.leaks(text, record)
    # the scan's own path (record side read number by number) drops the same dates
    dates = L.Record("finqa: r", ("december 312009 | december 312010 | Dec. 31 2011 |",))
    assert not L.scan([L.Text("t", "312009 312010 312011")], [dates]).findings
    assert L.scan([L.Text("t", "312009 312010 312011")], [L.Record("r", (text,))]).findings
    assert L.distinctive_numbers("12.5% of 0.125 and 1,234 and 12,345.0") == {
        "12.5",
        "0.125",
        "1234",
        "12345",
    }


def test_a_copied_sentence_leaks_and_a_shorter_run_does_not() -> None:
    record = (
        "Sales included in Other contract types represent cost plus and time and "
        "material type contracts, the company said."
    )
    copied = "NOTE: sales included in OTHER contract types represent cost-plus and time and"
    assert L.copied_run(copied, record) is not None
    assert L.leaks(copied, record)
    eleven = "sales included in other contract types represent cost plus and time"
    assert len(L.tokens(eleven)) == 11
    assert not L.leaks(eleven, record)


def test_scan_names_the_text_the_record_and_the_texts_sharing_its_figures() -> None:
    texts = [
        L.Text("prompts.py:EXAMPLE", "from 1,202.9 to 1,496.5; the average of 44.1 and 56.7"),
        L.Text("task.py:FORMAT", "for a table in millions, 1496.5 means $1,496.5 million"),
        L.Text("judge.txt", "Reply yes or no."),
        L.Text("bank.json[3]", "the returns 0.0525, 0.0613 and 0.0718 average 0.0619"),
    ]
    records = [
        L.Record("dev.json: doc-a", ("1,202.9", "1,496.5", "44.1 56.7 70.8")),
        L.Record("dev.json: doc-b", ("1496.5 only", "and 2019")),
        L.Record("test.json: q7", ("What is the average of the returns 0.0525 and 0.0613?",)),
    ]
    result = L.scan(texts, records)
    assert (result.texts, result.records) == (4, 3)
    [finding] = result.findings
    assert (finding.text, finding.record, finding.kind) == (
        "prompts.py:EXAMPLE",
        "dev.json: doc-a",
        "numbers",
    )
    assert finding.evidence == "44.1, 56.7, 1202.9, 1496.5"
    assert finding.companions == ["task.py:FORMAT (1496.5)"]


def test_scan_finds_a_copied_sentence_in_a_long_record() -> None:
    sentence = "the fund's expense ratio is charged on the average net assets of each month"
    filler = " ".join(f"word{i}" for i in range(5000))
    records = [
        L.Record(
            "pool.json: Doc_7",
            (
                filler + " The Fund's expense-ratio is charged on "
                "the average net assets of each month. " + filler,
            ),
        )
    ]
    result = L.scan([L.Text("bank.json[0]", sentence)], records)
    assert [(f.text, f.record, f.kind) for f in result.findings] == [
        ("bank.json[0]", "pool.json: Doc_7", "sentence")
    ]


@given(st.text())
def test_the_detectors_never_raise(text: str) -> None:
    assert all(L.is_distinctive(n) for n in L.distinctive_numbers(text))
    L.shingles(text)
    L.scan([L.Text("t", text)], [L.Record("r", (text, text[::-1]))])


# --------------------------------------------------------------------------- collection


def shipped_texts(data_dir: Path | None) -> list[L.Text]:
    texts = [
        *L.data_file_texts(PACKAGE_DIR),
        *L.source_constant_texts(PACKAGE_DIR),
        *L.module_global_texts(),
    ]
    if data_dir is not None:
        try:
            texts += L.finqa_rendered_exemplars(data_dir)
        except DatasetError as e:  # the shipped pieces (ids, explanations) are still read
            warnings.warn(f"leak scan: FinQA exemplars not rendered: {e}", stacklevel=1)
    return L.dedupe(texts)


def test_collection_reaches_every_kind_of_shipped_text() -> None:
    names = {t.name for t in shipped_texts(None)}
    expected = [
        "solvers/agents/prompts.py:CALCULATOR_EXTRACT",
        "solvers/agents/prompts.py:ANALYST_COT",
        "tasks/tatqa/task.py:ARITHMETIC_INSTRUCTION",
        "tasks/finqa/task.py:ANSWER_INSTRUCTION",
        "tasks/mathhay/prompts/judge.txt",
        "tasks/knowledgefmath/prompts/answer_extraction.txt",
        "tasks/finqa/prompts/rag_cot_system.txt",
    ]
    missing = [name for name in expected if name not in names]
    assert not missing, f"not collected: {missing}"
    prefixes = {
        "tasks/knowledgefmath/data/knowledge_bank.json[": 400,
        "tasks/sara/data/exemplars.json[": 8,
        "tasks/finqa/data/exemplars.json[": 12,
        "tasks/knowledgefmath/data/demo.json[": 15,
    }
    for prefix, least in prefixes.items():
        assert sum(n.startswith(prefix) for n in names) >= least, prefix
    assert not any(n.endswith("README.md") for n in names)


# --------------------------------------------------------------------------- the real scan


def _missing_sources(data_dir: Path) -> list[str]:
    return [
        path
        for paths in L.EXPECTED_SOURCES.values()
        for path in paths
        if not (data_dir / path).exists()
    ]


def _planted(records: list[L.Record]) -> list[L.Text]:
    """Two texts that copy the first record with 3 distinctive numbers and 12 words."""
    for record in records:
        numbers = sorted(set().union(*(L.distinctive_numbers(p) for p in record.parts)))
        words = max((L.tokens(p) for p in record.parts), key=len, default=[])
        if len(numbers) >= L.MIN_SHARED_NUMBERS and len(words) >= L.SHINGLE_WORDS:
            return [
                L.Text("PLANTED numbers", "figures: " + ", ".join(numbers[:3])),
                L.Text("PLANTED sentence", " ".join(words[: L.SHINGLE_WORDS])),
            ]
    return []


@pytest.mark.slow
@pytest.mark.realdata
def test_no_shipped_text_leaks_an_evaluation_record(session_data_dir: Path) -> None:
    started, cpu = time.perf_counter(), time.process_time()
    missing = _missing_sources(session_data_dir)
    if len(missing) == sum(len(p) for p in L.EXPECTED_SOURCES.values()):
        pytest.skip(f"no evaluation data under {session_data_dir}: {', '.join(missing)}")
    if missing:
        warnings.warn(f"leak scan: absent, not checked: {', '.join(missing)}", stacklevel=1)
    texts = shipped_texts(session_data_dir)
    records = list(L.evaluation_records(session_data_dir))
    # the scan must find a copy of a real record (else it would pass by checking nothing)
    planted = _planted(records)
    result = L.scan(texts + planted, records)
    found = [f for f in result.findings if not f.text.startswith("PLANTED")]
    caught = {f.text for f in result.findings if f.text.startswith("PLANTED")}
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(
        f"\nleak scan: {len(texts)} shipped texts, {result.records} evaluation records, "
        f"{len(found)} leaks, {elapsed:.1f} s ({cpu:.1f} s CPU)"
    )
    for finding in found:
        print(finding)
    assert planted and caught == {t.name for t in planted}, "missed a planted copy of a record"
    assert not found, (
        f"{len(found)} shipped text(s) carry an evaluation record's figures or sentences "
        "(a prompt's exemplar or example must come from a training split or be made up):\n"
        + "\n".join(str(f) for f in found)
    )
