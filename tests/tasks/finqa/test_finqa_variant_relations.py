"""FinQA fresh variants keep the relations the independent audit
(:mod:`finmath_tasks.variant_audit`) finds in the original: a figure of the text in millions
that rounds a cell in thousands follows it, a three-number relation is recomputed, a short
ratio is held, a figure that stands for a cell in another unit leaves the question out, a
cell keeps reading as an amount (or a year), and a table larger than any real one is left
out in well under a second. Crafted tables (written by us) and the real records."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from finqa_fixtures import exemplar_train_records
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log

from eval_helpers import metric
from finmath_tasks.tasks.finqa.dataset import load_dataset
from finmath_tasks.tasks.finqa.variant_rules import (
    broken_small,
    ratio_relations,
    three_relations,
    year_shape,
)
from finmath_tasks.tasks.finqa.variants import instantiate, plan
from finmath_tasks.variant_audit import audit_records, audit_split
from finmath_tasks.variants import MAX_TABLE_ROWS, find_numbers

SEEDS = (1, 2, 3, 4, 5)


def _sample(
    table: list[list[str]],
    program: str,
    exe_ans: Any,
    question: str = "what is asked?",
    pre: list[str] | None = None,
    post: list[str] | None = None,
    sid: str = "WDG/2020/page_1.pdf-1",
) -> Sample:
    metadata = {
        "question": question,
        "pre_text": pre or ["widgetco reports in three regions ."],
        "post_text": post or ["amounts are as reported ."],
        "table": table,
        "program": program,
        "exe_ans": exe_ans,
        "gold_inds": {},
        "context": "",
    }
    return Sample(id=sid, input=question, target=str(exe_ans), metadata=metadata)


def _no_real_break(original: Sample, variant: Sample) -> None:
    checked = audit_records("finqa", original.metadata or {}, variant.metadata or {})
    assert checked.shape is None, (variant.id, checked.shape)
    assert checked.real == [], [r.describe() for r in checked.real]


PER_SHARE = [
    ["( in millions except per share )", "2020", "2019"],
    ["net income as reported", "$ 1026", "$ 604"],
    ["earnings per share basic as reported", "$ 3.89", "$ 2.33"],
    ["earnings per share basic pro forma", "$ 3.75", "$ 2.25"],
    ["earnings per share diluted as reported", "$ 3.85", "$ 2.30"],
    ["earnings per share diluted pro forma", "$ 3.71", "$ 2.22"],
]


def test_a_three_number_relation_is_recomputed_in_every_variant() -> None:
    # basic as reported - basic pro forma = diluted as reported - diluted pro forma, in
    # both years: 3.89 + 3.71 = 3.75 + 3.85
    assert ((2, 1), (3, 1), (4, 1), (5, 1)) in three_relations(PER_SHARE)
    original = _sample(PER_SHARE, "subtract(3.75, 3.71), divide(#0, 3.75)", 0.01067)
    made = 0
    for seed in SEEDS:
        result = instantiate([original], seed)
        for v in result.samples:
            made += 1
            table = (v.metadata or {})["table"]
            assert table[2][1] != PER_SHARE[2][1]  # 3.89 follows the drawn 3.75 and 3.71
            assert broken_small(original.metadata or {}, v.metadata or {}) == []
            _no_real_break(original, v)
    assert made >= 3


def test_without_recomputing_it_the_relation_goes_stale() -> None:
    original = _sample(PER_SHARE, "subtract(3.75, 3.71), divide(#0, 3.75)", 0.01067)
    variant = [list(row) for row in PER_SHARE]
    variant[3][1], variant[5][1] = "$ 3.95", "$ 3.61"
    found = broken_small(original.metadata or {}, {"table": variant})
    assert found and "was cell" in found[0]


RATIOS = [
    ["", "2020", "2019"],
    ["net debt", "1,200", "1,100"],
    ["adjusted ebitda", "1,500", "1,400"],
    ["net debt to adjusted ebitda", "0.8", "0.8"],
]


def test_a_short_ratio_is_held_in_every_variant() -> None:
    assert ((3, 1), (1, 1), (2, 1)) in ratio_relations(RATIOS)
    original = _sample(RATIOS, "subtract(1,200, 1,100), divide(#0, 1,100)", 0.09091)
    for seed in SEEDS:
        result = instantiate([original], seed)
        for v in result.samples:
            table = (v.metadata or {})["table"]
            assert table[1][1] != RATIOS[1][1]
            assert broken_small(original.metadata or {}, v.metadata or {}) == []
            _no_real_break(original, v)
        for why in result.left_out.values():
            assert "ratio" in why, why


IN_THOUSANDS = [
    ["( in thousands )", "2020", "2019"],
    ["north america", "$ 460961", "$ 372347"],
    ["emea", "3122", "11763"],
    ["total operating income", "$ 464083", "$ 384110"],
]
SENTENCE = "total operating income was $ 464.1 million in 2020 and $ 384.1 million in 2019 ."


def test_a_figure_of_the_text_in_millions_follows_its_cell_in_thousands() -> None:
    original = _sample(
        IN_THOUSANDS,
        "subtract(3122, 11763), divide(#0, 11763)",
        -0.73459,
        post=[SENTENCE],
    )
    made = 0
    for seed in SEEDS:
        for v in instantiate([original], seed).samples:
            made += 1
            metadata = v.metadata or {}
            total = find_numbers(metadata["table"][3][1])[0].value
            text = [w.value for w in find_numbers(metadata["post_text"][0]) if w.scale > 1]
            assert text[0] == round(total / 1000, 1) != 464.1
            assert text[1] == round(find_numbers(metadata["table"][3][2])[0].value / 1000, 1)
            _no_real_break(original, v)
    assert made >= 3


EQUITIES = [
    ["$ in millions", "year ended december 2017", "year ended december 2016"],
    ["equity securities", "$ 4578", "$ 2573"],
    ["debt securities and loans", "2003", "1507"],
]
INCLUDING = (
    "net revenues in equity securities were $ 4.58 billion , including $ 3.82 billion of net "
    "gains from private equities and $ 762 million in net gains from public equities ."
)


def test_a_sum_its_sentence_writes_follows_the_figure_that_follows_a_cell() -> None:
    original = _sample(
        EQUITIES, "subtract(4578, 2573), divide(#0, 2573)", 0.77925, post=[INCLUDING]
    )
    made = 0
    for seed in SEEDS:
        for v in instantiate([original], seed).samples:
            made += 1
            metadata = v.metadata or {}
            cell = find_numbers(metadata["table"][1][1])[0].value
            total, private, public = [w.value for w in find_numbers(metadata["post_text"][0])]
            assert total == round(cell / 1000, 2) != 4.58
            assert public == 762 and private != 3.82  # the largest free part follows
            assert abs(private + public / 1000 - total) <= 0.005 + 1e-9
            _no_real_break(original, v)
    assert made >= 3


def test_a_figure_standing_for_a_cell_in_another_unit_leaves_the_question_out() -> None:
    table = [["( in millions )", "2008"], ["balance at october 1", "$ 1104"]]
    table += [["accretion", "32"], ["balance at september 30", "$ 1136"]]
    sentence = "the company redeemed the shares at $ 1.136 billion , against $ 1.146 billion ."
    original = _sample(table, "subtract(1.146, 1.136)", 0.01, post=[sentence])
    reason = plan(original.metadata or {}).reason
    assert reason is not None and "stands for the cell 3,1 ('$ 1136')" in reason


def test_a_cell_keeps_reading_as_an_amount_or_as_a_year() -> None:
    before = [["", "leases"], ["2020", "1888"], ["2021", "1901"]]
    assert year_shape(before, [["", "leases"], ["2020", "1800"], ["2021", "1950"]]) is None
    why = year_shape(before, [["", "leases"], ["2020", "1800"], ["2021", "1856"]])
    assert why is not None and "cell 2,1 '1856' reads as a year" in why
    assert year_shape(before, [["", "leases"], ["2020", "1900"], ["2021", "1950"]])


def crafted_record(rows: int) -> dict[str, Any]:
    """A FinQA record whose table has ``rows`` amounts and their total."""
    rng = random.Random(rows)
    body = [(f"item {i}", rng.randint(1000, 99999)) for i in range(rows)]
    table = [["( in millions )", "2020"]] + [[name, str(a)] for name, a in body]
    table.append(["total", str(sum(a for _, a in body))])
    a, b = body[5][1], body[6][1]
    return {
        "id": f"BIG/2020/page_{rows}.pdf-1",
        "filename": f"BIG/2020/page_{rows}.pdf",
        "pre_text": ["the table lists every item ."],
        "post_text": ["amounts are in millions ."],
        "table": table,
        "qa": {
            "question": "what is the ratio of item 5 to item 6?",
            "program": f"divide({a}, {b})",
            "exe_ans": round(a / b, 5),
            "answer": str(round(a / b, 5)),
            "gold_inds": {},
        },
    }


def test_a_table_larger_than_any_real_one_is_refused_in_well_under_a_second(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "finqa"
    folder.mkdir()
    (folder / "test.json").write_text(json.dumps([crafted_record(3000), crafted_record(12)]))
    samples = list(load_dataset("test", str(tmp_path)))
    started = time.monotonic()
    result = instantiate(samples, 1)
    assert time.monotonic() - started < 10  # measured: about 0.1 s
    assert result.left_out == {
        "BIG/2020/page_3000.pdf-1": "table too large to check its totals (3002 rows)"
    }
    assert [s.id for s in result.samples] == ["BIG/2020/page_12.pdf-1"]
    # the bound is above the largest real table (18 rows) with room to spare
    (folder / "test.json").write_text(json.dumps([crafted_record(MAX_TABLE_ROWS - 2)]))
    edge = list(load_dataset("test", str(tmp_path)))
    assert "too large" not in str(instantiate(edge, 1).left_out)


@pytest.mark.slow
def test_inspect_eval_leaves_the_large_table_out_and_scores_the_rest(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "finqa"
    folder.mkdir(parents=True)
    records = [crafted_record(3000), crafted_record(12), crafted_record(20)]
    (folder / "test.json").write_text(json.dumps(records))
    # the oracle replays rag_cot's prompt, whose few-shot exemplars are train records
    (folder / "train.json").write_text(json.dumps(exemplar_train_records()))
    env = {**os.environ, "FINMATH_VARIANT_CACHE": str(tmp_path / "variants")}
    command = [sys.executable, "-m", "inspect_ai", "eval", "finmath_tasks/finqa"]
    command += ["-T", "variant=fresh", "-T", "variant_seed=1", "-T", "solver=oracle"]
    command += ["-T", f"data_dir={tmp_path / 'data'}"]
    command += ["--model", "mockllm/model", "--log-dir", str(tmp_path / "logs")]
    command += ["--display", "plain"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = list((tmp_path / "logs").glob("*.eval"))
    log = read_eval_log(str(path))
    assert log.status == "success", log.error
    assert log.eval.dataset.name == "finqa-test fresh seed 1: 2 of 3 instantiated"
    summary = log.eval.metadata["variant"]  # type: ignore[index]
    assert summary["left_out"] == {
        "BIG/2020/page_3000.pdf-1": "table too large to check its totals (3002 rows)"
    }
    assert log.samples is not None
    assert sorted(str(s.id) for s in log.samples) == [
        "BIG/2020/page_12.pdf-1",
        "BIG/2020/page_20.pdf-1",
    ]
    assert log.results is not None and log.results.total_samples == 2
    for key in ("execution_accuracy", "program_accuracy", "tolerant"):
        assert metric(log, key) == 1.0, key


# --- the real records where the audit found a relation broken before these rules ---------

REAL = {
    "dev": [
        "UAA/2016/page_52.pdf-1",  # text in millions of cells in thousands
        "UAA/2016/page_52.pdf-3",
        "GS/2016/page_77.pdf-2",
        "CME/2017/page_97.pdf-4",  # a 0.6 equal to 0.8 / 1.3 in both columns: held
        "IPG/2008/page_62.pdf-4",  # a three-number relation of a "net" row: left out
        "AAPL/2004/page_36.pdf-1",  # a gross margin drawn to 1900 read as a year
    ],
    "train": [
        "ETR/2009/page_107.pdf-2",
        "DVN/2014/page_88.pdf-1",
        "SWKS/2012/page_116.pdf-2",
        "GS/2017/page_74.pdf-3",
        "UNP/2006/page_55.pdf-3",  # earnings per share: 3.89 + 3.71 = 3.75 + 3.85
        "ABMD/2018/page_112.pdf-3",  # a lease payment of 1901 drawn to 1856
    ],
    "test": ["MRK/2013/page_3.pdf-1", "JPM/2010/page_120.pdf-1", "C/2009/page_45.pdf-2"],
}


@pytest.mark.realdata
@pytest.mark.slow
@pytest.mark.parametrize("split", sorted(REAL))
def test_the_real_records_break_no_relation_the_audit_finds(
    split: str, session_data_dir: Path
) -> None:
    rows = audit_split("finqa", split, SEEDS, str(session_data_dir), ids=REAL[split])
    for row in rows:
        assert row.broken_real == {}, (row.seed, row.broken_real)
        assert row.shape == {}, (row.seed, row.shape)
    assert sum(row.variants for row in rows) >= len(SEEDS) * (len(REAL[split]) - 1)


@pytest.mark.realdata
def test_a_text_figure_in_billions_of_a_cell_in_millions_leaves_the_real_question_out(
    session_data_dir: Path,
) -> None:
    wanted = {"V/2008/page_136.pdf-1": "'1.136'", "JPM/2017/page_144.pdf-2": "'64.1'"}
    samples = [s for s in load_dataset("train", str(session_data_dir)) if s.id in wanted]
    assert len(samples) == len(wanted)
    result = instantiate(samples, 1)
    for sid, figure in wanted.items():
        assert f"the figure {figure} of the text stands for the cell" in result.left_out[sid]
