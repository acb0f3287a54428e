"""The knowledge settings of knowledgefmath end to end with a scripted model, for cot and pot.

Each test runs a real Inspect eval on two demo questions (our own problems)
and checks the exact prompts the model received, the knowledge placed before
the question in the final prompt, what the sample's metadata records and the
score.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from inspect_ai import eval
from inspect_ai.event import ModelEvent
from inspect_ai.log import EvalLog, EvalSample, resolve_sample_attachments

from eval_helpers import metric, scripted, whole_score
from finmath_tasks.retrieval import dense as dense_module
from finmath_tasks.retrieval.rerank import rerank_prompt
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.knowledgefmath.dataset import (
    COT_SYSTEM_PROMPT,
    POT_SYSTEM_PROMPT,
    load_dataset,
    render_prompt,
)
from finmath_tasks.tasks.knowledgefmath.knowledge import (
    KNOWLEDGE_HEADER,
    LLM_KB_PROMPT,
    KnowledgeBase,
    load_bank,
    load_oracle,
)

DEMO = {s.id: s for s in load_dataset("demo")}
IDS = ["demo-11", "demo-14"]  # Sharpe ratio; quick ratio (with a table)
BANK = load_bank()
BY_NAME = {t.term: t for t in BANK}
ORACLE = load_oracle()
SYSTEM = {"cot": COT_SYSTEM_PROMPT, "pot": POT_SYSTEM_PROMPT}


def gold(sample_id: str) -> float:
    return float(DEMO[sample_id].target)  # type: ignore[arg-type]


def question(sample_id: str) -> str:
    """The question with its tables, as written by hand here (the retrieval query)."""
    meta = DEMO[sample_id].metadata or {}
    return "\n\n".join([*meta["tables"], meta["question"]])


def base_prompt(sample_id: str, style: str) -> str:
    meta = DEMO[sample_id].metadata or {}
    return render_prompt(meta["question"], meta["tables"], style)  # type: ignore[arg-type]


def with_knowledge(sample_id: str, style: str, passages: list[str]) -> str:
    return KNOWLEDGE_HEADER + "\n\n".join(passages) + "\n\n" + base_prompt(sample_id, style)


def answer(style: str, value: float) -> str:
    if style == "cot":
        return f"Step by step. Therefore, the answer is {value}."
    return f"```python\ndef solution():\n    return {value!r}\n```"


def run(
    tmp_path: Path, style: str, outputs: list[str], **params: Any
) -> tuple[EvalLog, dict[str, EvalSample]]:
    task = knowledgefmath(split="demo", solver=style, **params)
    task.dataset = task.dataset.filter(lambda s: s.id in IDS)
    [log] = eval(
        task,
        model=scripted(outputs),
        sandbox="local" if style == "pot" else None,  # the gold-like programs are ours
        log_dir=str(tmp_path),
        display="none",
        max_samples=1,
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    return log, {str(s.id): resolve_sample_attachments(s, "full") for s in log.samples}


def prompts(sample: EvalSample) -> list[list[tuple[str, str]]]:
    """Every model call of the sample: its input messages as (role, text)."""
    return [
        [(m.role, m.text) for m in event.input]
        for event in sample.events
        if isinstance(event, ModelEvent)
    ]


def check_score(log: EvalLog, style: str) -> None:
    # first question answered correctly, second wrongly
    assert metric(log, "tolerant") == pytest.approx(0.5)
    assert metric(log, "financemath") == pytest.approx(0.5)
    if style == "pot":
        assert metric(log, "execution_rate") == 1.0


def check_recall(log: EvalLog, samples: dict[str, EvalSample]) -> None:
    """The retrieval recall metric averages the recall recorded per sample."""
    recalls = [(s.metadata or {})["knowledge"]["recall"] for s in samples.values()]
    assert metric(log, "retrieval_recall", "mean") == pytest.approx(sum(recalls) / len(recalls))
    for sample in samples.values():
        score = whole_score(sample)
        assert score.value["retrieval_recall"] == (sample.metadata or {})["knowledge"]["recall"]  # type: ignore[index]


def no_recall_metric(log: EvalLog) -> None:
    assert log.results is not None
    assert "retrieval_recall" not in {s.name for s in log.results.scores}


STYLES = ["cot", "pot"]


@pytest.mark.parametrize("style", STYLES)
def test_none_is_unchanged(tmp_path: Path, style: str) -> None:
    outputs = [answer(style, gold(IDS[0])), answer(style, -1.0)]
    log, samples = run(tmp_path, style, outputs)
    check_score(log, style)
    no_recall_metric(log)
    for sample_id in IDS:
        assert prompts(samples[sample_id]) == [
            [("system", SYSTEM[style]), ("user", base_prompt(sample_id, style))]
        ]
        assert "knowledge" not in (samples[sample_id].metadata or {})
    assert "knowledge" not in log.eval.metadata  # type: ignore[operator]


@pytest.mark.parametrize("style", STYLES)
def test_oracle(tmp_path: Path, style: str) -> None:
    outputs = [answer(style, gold(IDS[0])), answer(style, -1.0)]
    log, samples = run(tmp_path, style, outputs, knowledge="oracle")
    check_score(log, style)
    no_recall_metric(log)  # always 1 by construction
    for sample_id, needed in (("demo-11", ["Sharpe ratio"]), ("demo-14", ["Quick ratio"])):
        assert ORACLE[sample_id] == needed
        passages = [BY_NAME[n].passage() for n in needed]
        assert prompts(samples[sample_id]) == [
            [("system", SYSTEM[style]), ("user", with_knowledge(sample_id, style, passages))]
        ]
        record = (samples[sample_id].metadata or {})["knowledge"]
        assert record["terms"] == needed and record["recall"] == 1.0
    final = samples["demo-11"].messages[1].text
    # the definition and the formula function come before the question
    assert final.index("Sharpe ratio: Excess return") < final.index("def sharpe_ratio(")
    assert final.index("def sharpe_ratio(") < final.index("Question:")


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("top_n", [3, 5])
def test_bm25(tmp_path: Path, style: str, top_n: int) -> None:
    outputs = [answer(style, gold(IDS[0])), answer(style, -1.0)]
    log, samples = run(tmp_path, style, outputs, knowledge="bm25", top_n=top_n)
    check_score(log, style)
    check_recall(log, samples)
    assert log.eval.metadata is not None and log.eval.metadata["top_n"] == top_n
    index = KnowledgeBase(BANK).bm25
    for sample_id in IDS:
        record = (samples[sample_id].metadata or {})["knowledge"]
        hits = index.search(question(sample_id), top_n)
        expected_terms = [BANK[h.index].term for h in hits]
        assert record["terms"] == expected_terms
        assert record["ranks"] == list(range(1, top_n + 1))
        assert record["scores"] == sorted(record["scores"], reverse=True)
        passages = [BY_NAME[t].passage() for t in expected_terms]
        assert prompts(samples[sample_id]) == [
            [("system", SYSTEM[style]), ("user", with_knowledge(sample_id, style, passages))]
        ]
    # BM25 finds the needed term for these two questions
    assert (samples["demo-11"].metadata or {})["knowledge"]["needed_retrieved"] == {
        "Sharpe ratio": True
    }
    assert (samples["demo-14"].metadata or {})["knowledge"]["recall"] == 1.0


WRITTEN = [
    "Sharpe ratio: excess return of a portfolio divided by its standard deviation\n"
    "Risk-free rate: the return on a riskless asset",
    "1. **Quick ratio**: liquid current assets over current liabilities\n"
    "2. Marketable securities: short-term investments that can be sold quickly",
]


@pytest.mark.parametrize("style", STYLES)
def test_llm_kb(tmp_path: Path, style: str) -> None:
    outputs = [WRITTEN[0], answer(style, gold(IDS[0])), WRITTEN[1], answer(style, -1.0)]
    log, samples = run(tmp_path, style, outputs, knowledge="llm_kb")
    check_score(log, style)
    no_recall_metric(log)
    for sample_id, written in zip(IDS, WRITTEN, strict=True):
        kb_prompt = LLM_KB_PROMPT.format(max_terms=5, question=question(sample_id))
        assert prompts(samples[sample_id]) == [
            [("user", kb_prompt)],
            [("system", SYSTEM[style]), ("user", with_knowledge(sample_id, style, [written]))],
        ]
    assert (samples["demo-14"].metadata or {})["knowledge"]["terms"] == [
        "Quick ratio",
        "Marketable securities",
    ]
    # what the model is asked to do first: name terms and definitions, not answer
    assert "do not answer it" in LLM_KB_PROMPT and "its name, a colon" in LLM_KB_PROMPT


@pytest.mark.slow
@pytest.mark.parametrize("style", STYLES)
def test_rerank(tmp_path: Path, style: str) -> None:
    outputs = [
        "3, 1, 7",
        answer(style, gold(IDS[0])),
        "The most useful are [2] and 2 again, then 99 and 5.",  # repeats and out of range
        answer(style, -1.0),
    ]
    log, samples = run(tmp_path, style, outputs, knowledge="rerank", top_n=3)
    check_score(log, style)
    check_recall(log, samples)
    index = KnowledgeBase(BANK).bm25
    for sample_id, chosen in (("demo-11", [2, 0, 6]), ("demo-14", [1, 4, 0])):
        candidates = [BANK[h.index] for h in index.search(question(sample_id), 9)]
        record = (samples[sample_id].metadata or {})["knowledge"]
        assert record["candidates"] == [t.term for t in candidates]
        assert record["terms"] == [candidates[i].term for i in chosen]
        passages = [candidates[i].passage() for i in chosen]
        assert prompts(samples[sample_id]) == [
            [("user", rerank_prompt(question(sample_id), [t.passage() for t in candidates], 3))],
            [("system", SYSTEM[style]), ("user", with_knowledge(sample_id, style, passages))],
        ]
    # the second reply named two usable candidates; the retriever's order filled the third
    assert (samples["demo-14"].metadata or {})["knowledge"]["chosen_by_model"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("style", STYLES)
def test_instructed(tmp_path: Path, style: str) -> None:
    outputs = [WRITTEN[0], answer(style, gold(IDS[0])), WRITTEN[1], answer(style, -1.0)]
    log, samples = run(tmp_path, style, outputs, knowledge="instructed", top_n=3)
    check_score(log, style)
    check_recall(log, samples)
    index = KnowledgeBase(BANK).bm25
    queries = {
        "demo-11": [
            "Sharpe ratio: excess return of a portfolio divided by its standard deviation",
            "Risk-free rate: the return on a riskless asset",
        ],
        "demo-14": [
            "Quick ratio: liquid current assets over current liabilities",
            "Marketable securities: short-term investments that can be sold quickly",
        ],
    }
    for sample_id in IDS:
        record = (samples[sample_id].metadata or {})["knowledge"]
        assert record["queries"] == queries[sample_id]
        first, second = (index.search(q, 3) for q in queries[sample_id])
        # round robin: best of each query, then the second of each, without repeats
        merged: list[int] = []
        for hit in (first[0], second[0], first[1], second[1], first[2], second[2]):
            if hit.index not in merged:
                merged.append(hit.index)
        expected = [BANK[i] for i in merged[:3]]
        assert record["terms"] == [t.term for t in expected]
        kb_prompt = LLM_KB_PROMPT.format(max_terms=5, question=question(sample_id))
        assert prompts(samples[sample_id]) == [
            [("user", kb_prompt)],
            [
                ("system", SYSTEM[style]),
                ("user", with_knowledge(sample_id, style, [t.passage() for t in expected])),
            ],
        ]
    assert "Sharpe ratio" in (samples["demo-11"].metadata or {})["knowledge"]["terms"]
    assert "Quick ratio" in (samples["demo-14"].metadata or {})["knowledge"]["terms"]


def hashing_encoder(texts: list[str]) -> Any:
    """A tiny deterministic stand-in for a sentence encoder: hashed bag of words."""
    from finmath_tasks.retrieval import tokenize

    vectors = np.zeros((len(texts), 256), dtype=np.float32)
    for row, text in enumerate(texts):
        for token in tokenize(text):
            vectors[row, sum(map(ord, token)) * 31 % 256] += 1.0
    return vectors


@pytest.mark.parametrize("style", STYLES)
def test_dense_with_a_stand_in_encoder(
    tmp_path: Path, style: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    models: list[str] = []

    def fake(model: str) -> Any:
        models.append(model)
        return hashing_encoder

    monkeypatch.setattr(dense_module, "sentence_transformer_encoder", fake)
    monkeypatch.setenv("FINMATH_CACHE_DIR", str(tmp_path / "cache"))
    outputs = [answer(style, gold(IDS[0])), answer(style, -1.0)]
    log, samples = run(
        tmp_path, style, outputs, knowledge="dense", embedding_model="my/model", top_n=3
    )
    check_score(log, style)
    check_recall(log, samples)
    assert models == ["my/model"]
    assert log.eval.metadata is not None and log.eval.metadata["embedding_model"] == "my/model"
    embeddings = hashing_encoder([t.index_text() for t in BANK])
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    for sample_id in IDS:
        query = hashing_encoder([question(sample_id)])[0]
        ranking = np.argsort(-(embeddings @ (query / np.linalg.norm(query))), kind="stable")[:3]
        expected = [BANK[i] for i in ranking]
        record = (samples[sample_id].metadata or {})["knowledge"]
        assert record["terms"] == [t.term for t in expected]
        assert prompts(samples[sample_id])[-1][-1] == (
            "user",
            with_knowledge(sample_id, style, [t.passage() for t in expected]),
        )
    assert len(list((tmp_path / "cache" / "embeddings").glob("*.npy"))) == 1


@pytest.mark.parametrize("setting", ["rerank", "instructed"])
def test_llm_aided_settings_over_the_dense_retriever(
    tmp_path: Path, setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the paper's Table 5 runs the re-ranker and instructed retrieval over Ada embeddings too
    monkeypatch.setattr(dense_module, "sentence_transformer_encoder", lambda _: hashing_encoder)
    monkeypatch.setenv("FINMATH_CACHE_DIR", str(tmp_path / "cache"))
    first = "1, 2" if setting == "rerank" else WRITTEN[0]
    second = "2, 1" if setting == "rerank" else WRITTEN[1]
    outputs = [first, answer("cot", gold(IDS[0])), second, answer("cot", -1.0)]
    log, samples = run(tmp_path, "cot", outputs, knowledge=setting, top_n=2, retriever="dense")
    check_score(log, "cot")
    assert log.eval.task_args["retriever"] == "dense"
    dense_index = KnowledgeBase(BANK, dense=True, encoder=hashing_encoder).dense
    bm25_index = KnowledgeBase(BANK).bm25
    assert dense_index is not None
    for sample_id in IDS:
        record = (samples[sample_id].metadata or {})["knowledge"]
        assert record["retriever"] == "dense"
        if setting == "rerank":  # 3 x top_n candidates from the dense index
            candidates = [BANK[h.index].term for h in dense_index.search(question(sample_id), 6)]
            assert record["candidates"] == candidates
            assert candidates != [
                BANK[h.index].term for h in bm25_index.search(question(sample_id), 6)
            ]
        else:  # each written line queries the dense index
            firsts = [BANK[dense_index.search(q, 2)[0].index].term for q in record["queries"]]
            assert record["terms"][: len(set(firsts))] == list(dict.fromkeys(firsts))[:2]


def test_dense_without_the_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(
        Exception, match=r"pip install sentence-transformers .*pip install -e '\.\[dense\]'"
    ):
        knowledgefmath(split="demo", knowledge="dense")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"knowledge": "wiki"}, "knowledgefmath: -T knowledge='wiki' is not one of none, oracle"),
        ({"knowledge": "bm25", "top_n": 0}, "-T top_n=0 must be an integer from 1 to 20"),
        ({"knowledge": "bm25", "top_n": 21}, "-T top_n=21 must be an integer from 1 to 20"),
        ({"knowledge": "bm25", "top_n": "3"}, "-T top_n='3' must be an integer from 1 to 20"),
        ({"knowledge": "bm25", "top_n": True}, "-T top_n=True must be an integer"),
        ({"knowledge": "bm25", "knowledge_bank": 7}, "-T knowledge_bank=7 must be a string"),
        (
            {"knowledge": "oracle", "split": "test", "data_dir": "."},
            "knowledge=oracle needs the oracle annotations",
        ),
        ({"knowledge": "rerank", "retriever": "ada"}, "-T retriever='ada' is not one of"),
        (
            {"knowledge": "bm25", "retriever": "dense"},
            "-T retriever=.dense. applies only to knowledge=rerank or instructed",
        ),
    ],
)
def test_parameter_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        knowledgefmath(**{"split": "demo", **kwargs})


def test_user_bank_is_used(tmp_path: Path) -> None:
    bank = tmp_path / "bank.json"
    bank.write_text(
        json.dumps(
            [
                {"term": "Alpha", "topic": "x", "definition": "Sharpe ratio explained."},
                {"term": "Beta", "topic": "x", "definition": "Unrelated words."},
            ]
        )
    )
    outputs = [answer("cot", gold(IDS[0])), answer("cot", -1.0)]
    _, samples = run(tmp_path, "cot", outputs, knowledge="bm25", top_n=1, knowledge_bank=str(bank))
    record = (samples["demo-11"].metadata or {})["knowledge"]
    assert record["terms"] == ["Alpha"]
    # the oracle names a term this bank lacks: recall says so
    assert record["needed_retrieved"] == {"Sharpe ratio": False} and record["recall"] == 0.0
    assert (
        samples["demo-11"]
        .messages[1]
        .text.startswith(KNOWLEDGE_HEADER + "Alpha: Sharpe ratio explained.\n\nQuestion:")
    )


def test_oracle_terms_missing_from_a_user_bank_are_recorded(tmp_path: Path) -> None:
    bank = tmp_path / "bank.json"
    bank.write_text(json.dumps([{"term": "Alpha", "topic": "x", "definition": "Something."}]))
    outputs = [answer("cot", gold(IDS[0])), answer("cot", -1.0)]
    _, samples = run(tmp_path, "cot", outputs, knowledge="oracle", knowledge_bank=str(bank))
    record = (samples["demo-11"].metadata or {})["knowledge"]
    assert record["missing_from_bank"] == ["Sharpe ratio"] and record["terms"] == []
    assert samples["demo-11"].messages[1].text == base_prompt("demo-11", "cot")


def test_task_metadata_names_the_bank(tmp_path: Path) -> None:
    from finmath_tasks.tasks.knowledgefmath.knowledge import bank_hash

    task = knowledgefmath(split="demo", knowledge="bm25", top_n=5)
    assert task.metadata is not None
    assert task.metadata["knowledge"] == "bm25" and task.metadata["top_n"] == 5
    assert task.metadata["knowledge_bank"] == "packaged"
    assert task.metadata["knowledge_bank_hash"] == bank_hash(BANK)


@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.parametrize("top_n", [3, 5])
def test_bm25_recall_on_real_validation(data_dir: Path, tmp_path: Path, top_n: int) -> None:
    # the oracle solver answers; the knowledge step retrieves for all 200 questions
    task = knowledgefmath(
        split="validation", solver="oracle", knowledge="bm25", top_n=top_n, data_dir=str(data_dir)
    )
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    assert log.status == "success" and log.results is not None
    assert log.results.total_samples == 200
    assert metric(log, "tolerant") == 1.0
    index = KnowledgeBase(BANK).bm25
    recalls = []
    for sample in load_dataset("validation", data_dir=str(data_dir)):
        meta = sample.metadata or {}
        query = "\n\n".join([*meta["tables"], meta["question"]])
        found = {BANK[h.index].term for h in index.search(query, top_n)}
        needed = ORACLE[str(sample.id)]
        recalls.append(sum(n in found for n in needed) / len(needed))
    assert metric(log, "retrieval_recall", "mean") == pytest.approx(sum(recalls) / 200)
