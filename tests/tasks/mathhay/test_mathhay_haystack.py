"""Haystack construction: the reference definition, exactly, on synthetic and real files."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finmath_tasks.tasks.mathhay.dataset import RELEASES, load_data
from finmath_tasks.tasks.mathhay.haystack import (
    TokenPool,
    _materialize,
    haystack_budget,
    irrelevant_order,
    placement_offsets,
    pool_order,
    reference_build,
    splice,
)
from finmath_tasks.tasks.mathhay.task import placement_for, prompt_for

ENC = tiktoken.get_encoding("o200k_base")


def encode(text: str) -> list[int]:
    return list(ENC.encode(text, disallowed_special=()))


def test_pool_order_is_pythons_seeded_shuffle() -> None:
    expected = list(range(30))
    random.seed(2024)
    random.shuffle(expected)
    assert pool_order(30) == expected
    assert irrelevant_order(30, ["Doc_3", "Doc_7"], "Doc_") == [
        i for i in expected if i not in (3, 7)
    ]


def test_budget_and_offsets() -> None:
    assert haystack_budget(128000) == 126000
    assert haystack_budget(64000) == 64000 and haystack_budget(127999) == 127999
    assert placement_offsets(["first", "middle", "last", "p1", "p9"], 1234) == [
        0, 617, 1234, 123, 1107,
    ]  # fmt: skip


def test_splice_keeps_order_at_one_offset_and_appends_past_the_end() -> None:
    out, starts = splice(list(range(10)), [[100, 101], [200]], [4, 4])
    assert list(out) == [0, 1, 2, 3, 100, 101, 200, 4, 5, 6, 7, 8, 9] and starts == [4, 6]
    out, starts = splice(list(range(10)), [[100], [200], [300]], [0, 5, 10])
    assert list(out) == [100, 0, 1, 2, 3, 4, 200, 5, 6, 7, 8, 9, 300] and starts == [0, 6, 12]
    # an offset beyond the (short) list appends, the reference's slice semantics
    out, starts = splice([1, 2], [[7], [8]], [50, 1])
    assert list(out) == [1, 8, 2, 7] and starts == [3, 1]


# texts whose edges stress the pre-tokenizer: leading/trailing whitespace, slashes,
# punctuation that absorbs newlines, digits, contractions, non-ASCII, very short texts
PIECES = st.sampled_from(
    ["Hello", " world", "\n", "\n\n", "  ", "/", "./", "'s", "123456", "!", "é", "日本",
     "\t", " \n ", "don't", "A", "B2", "--", "{x}", "\r\n", "😀", "end."]
)  # fmt: skip
TEXTS = st.lists(PIECES, min_size=1, max_size=40).map("".join)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TEXTS, min_size=1, max_size=6), st.sampled_from(["\n\n", ""]), st.data())
def test_joined_tokens_equal_tokenizing_the_join(
    texts: list[str], separator: str, data: st.DataObject
) -> None:
    pool = TokenPool(dict(enumerate(texts)), len(texts))
    docs = [pool.document(t) for t in texts]
    expected = encode(separator.join(texts))
    segments, _, exhausted = pool.join_documents(docs, None, separator)
    assert list(_materialize(segments)) == expected and exhausted
    limit = data.draw(st.integers(0, len(expected)))
    cut, _, _ = pool.join_documents(docs, limit, separator)
    assert list(_materialize(cut)) == expected[:limit]
    # text straight from the documents' bytes, as tiktoken decodes (cuts may split a character)
    assert pool.decode(cut) == ENC.decode(expected[:limit])


def long_texts(seed: int) -> list[str]:
    rng = random.Random(seed)
    words = ["alpha", "Beta", " 2024", "3.5%", "$1,200", "\n", "\n\n", "  ", "/path", "x.",
             "naïve", "—", "don't", "(12)", "\t"]  # fmt: skip
    return ["".join(rng.choice(words) for _ in range(rng.randint(1, 400))) for _ in range(12)]


@pytest.mark.parametrize("seed", range(6))
def test_long_joins_and_cuts_are_exact(seed: int) -> None:
    texts = long_texts(seed)
    pool = TokenPool(dict(enumerate(texts)), len(texts) + 2)  # two missing entries
    order = list(range(len(texts) + 2))
    random.Random(seed).shuffle(order)
    full = encode("\n\n".join(texts[i] for i in order if i < len(texts)))
    tokens, _, _ = pool.joined_tokens(order)
    assert list(tokens) == full
    for limit in (0, 1, 57, len(full) // 2, len(full)):
        cut, _, _ = pool.joined_tokens(order, limit)
        assert list(cut) == full[:limit]


# ---- the real files -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def march(session_data_dir: Path) -> tuple:
    root = session_data_dir
    if not (root / "mathhay").is_dir():
        pytest.skip("real MathHay files not found (FINMATH_DATA_DIR or ../shared/data)")
    data = load_data(str(root), "March-2024-to-September-2024", "full",
                     ["sssd", "2ssd", "3ssd", "ss2d", "2s2d", "3s2d", "3s3d"])  # fmt: skip
    pool = TokenPool(data.pool_documents, data.pool_size)
    return data, pool


@pytest.mark.realdata
@pytest.mark.parametrize("release", list(RELEASES))
def test_stored_orders_are_the_seeded_shuffle_without_own_documents(
    data_dir: Path, release: str
) -> None:
    types = ["sssd", "2ssd", "3ssd", "ss2d", "2s2d", "3s2d", "3s3d"]
    if release == "v1":
        types.remove("ss2d")  # no full ss2d file upstream
    data = load_data(str(data_dir), release, "full", types)
    assert len(data.questions) == (602 if release != "v1" else 585)
    prefix = RELEASES[release].id_prefix
    for q in data.questions.values():
        assert q.order == tuple(irrelevant_order(data.pool_size, q.document_ids, prefix))


def pick(data: object, per_type: int) -> list[str]:
    keys: dict[str, list[str]] = {}
    for key in data.questions:  # type: ignore[attr-defined]
        keys.setdefault(key.split("-")[0], []).append(key)
    return [
        k
        for ks in keys.values()
        for k in (ks[:1] + ks[-(per_type - 1) :] if per_type > 1 else ks[:1])
    ]


def check(
    data: object,
    pool: TokenPool,
    key: str,
    lengths: list[int],
    specs: list[str | None],
    reserve: int = 2000,
) -> None:
    q = data.questions[key]  # type: ignore[attr-defined]
    order = data.order(key)  # type: ignore[attr-defined]
    texts = data.pool_documents  # type: ignore[attr-defined]
    join = encode("\n\n".join(texts[i] for i in order if i in texts))  # the reference's way
    relevant = len(encode("".join(q.documents)))  # concatenated without separator
    own = [encode(d) for d in q.documents]
    prompt = len(encode(prompt_for(q.question, "")))
    for length in lengths:
        for spec in specs:
            _, where = placement_for(spec, len(q.documents))
            hay = pool.build(order, q.documents, where, length, prompt, reserve)
            rest = max(0, haystack_budget(length, reserve) - relevant - prompt)
            expected = join[:rest]
            offsets = placement_offsets(where, rest)
            for k in range(len(own) - 1, -1, -1):
                expected[offsets[k] : offsets[k]] = own[k]
            assert ENC.decode(expected) == hay.text, (key, length, spec)
            assert hay.rest == rest and hay.relevant_tokens == relevant
            assert hay.tokens == len(expected) == rest + sum(len(t) for t in own)
            starts = [offsets[k] + sum(len(t) for t in own[:k]) for k in range(len(own))]
            assert hay.positions == starts
            for start, doc in zip(starts, own, strict=True):
                assert expected[start : start + len(doc)] == doc


@pytest.mark.slow
@pytest.mark.realdata
def test_real_haystacks_match_the_definition_exactly(march: tuple) -> None:
    data, pool = march
    for key in pick(data, 1):
        check(data, pool, key, [32000, 128000], [None, "p3"])


@pytest.mark.slow
@pytest.mark.realdata
def test_paper_set_haystacks_with_the_o1_reserve(data_dir: Path) -> None:
    """v1 verified (Table 3's set), one question per file, 128K with the 2000 and 20000 reserves."""
    data = load_data(str(data_dir), "v1", "verified", ["sssd", "ss2d", "3s3d"])
    pool = TokenPool(data.pool_documents, data.pool_size)
    for key in pick(data, 1):
        for reserve in (2000, 20000):
            check(data, pool, key, [128000], [None], reserve)
        hay = pool.build(data.order(key), data.questions[key].documents,
                         placement_for(None, len(data.questions[key].documents))[1],
                         128000, 300, 20000)  # fmt: skip
        assert hay.budget == 108000 and not hay.too_short


EXHAUSTIVE_ENV = "FINMATH_EXHAUSTIVE"
"""Set to 1 to check every real question (602 full re-tokenizations of the pool, about
8.5 min on 2 cores; passed on 2026-11-23). By default a spread of questions per task type."""


@pytest.mark.realdata
@pytest.mark.slow
def test_real_questions_at_every_paper_length(march: tuple) -> None:
    data, pool = march
    every = os.environ.get(EXHAUSTIVE_ENV) == "1"
    keys = list(data.questions) if every else spread(data, 5)
    for key in keys:
        check(data, pool, key, [32000, 64000, 128000], [None, "first", "last", "p7"])


def spread(data: object, per_type: int) -> list[str]:
    """``per_type`` questions of each task type, evenly spaced through its file."""
    keys: dict[str, list[str]] = {}
    for key in data.questions:  # type: ignore[attr-defined]
        keys.setdefault(key.split("-")[0], []).append(key)
    return [ks[i * len(ks) // per_type] for ks in keys.values() for i in range(per_type)]


@pytest.mark.realdata
def test_reference_build_helper_agrees(march: tuple) -> None:
    data, pool = march
    key = pick(data, 1)[-1]  # a three-document question
    q = data.questions[key]
    order = data.order(key)
    where = ["first", "middle", "last"]
    ref = reference_build(data.pool_documents, order, q.documents, where, 64000, 400, encode)
    assert ENC.decode(ref) == pool.build(order, q.documents, where, 64000, 400).text


@pytest.mark.realdata
def test_missing_pool_entries_are_skipped_and_counted(march: tuple) -> None:
    data, pool = march
    assert data.missing_pool_entries == 199 and data.pool_size == 552
    key = pick(data, 1)[0]
    order = data.order(key)
    hay = pool.build(order, data.questions[key].documents, ["middle"], 128000, 300)
    tokens, missing, _ = pool.joined_tokens(order, hay.rest)
    used = set()
    n = 0
    for i in order:  # walk the order as the builder does, up to the cut
        if n >= len(tokens):
            break
        if i in data.pool_documents:
            used.add(i)
            n = len(encode("\n\n".join(data.pool_documents[j] for j in order if j in used)))
    skipped = [i for i in order[: order.index(max(used, key=order.index)) + 1]
               if i not in data.pool_documents]  # fmt: skip
    assert hay.missing_pool_documents == missing == len(skipped) > 0


def test_reconstructed_pool_file_shape(tmp_path: Path) -> None:
    from finmath_tasks.tasks.mathhay.dataset import load_pool

    (tmp_path / "documents_reconstructed.json").write_text(json.dumps({
        "pool_size_inferred": 5, "missing_indices": [1, 3],
        "documents": [{"index": i, "Document": f"doc {i}"} for i in (0, 2, 4)],
    }))  # fmt: skip
    docs, size, _, missing = load_pool(tmp_path)
    assert docs == {0: "doc 0", 2: "doc 2", 4: "doc 4"} and size == 5 and missing == 2


def test_default_placements_per_number_of_documents() -> None:
    assert placement_for(None, 1) == ("middle", ["middle"])
    assert placement_for(None, 2) == ("first-middle", ["first", "middle"])
    # the paper (section 3.4): first-first-first for three documents
    assert placement_for(None, 3) == ("first-first-first", ["first", "first", "first"])
    assert placement_for("p4", 3) == ("p4", ["p4", "p4", "p4"])


@pytest.mark.parametrize(
    ("offsets", "irrelevant_len"), [([4, 4], 10), ([0, 10], 10), ([50, 1], 2), ([3, 7], 10)]
)
def test_splice_segments_equals_splice(offsets: list[int], irrelevant_len: int) -> None:
    from finmath_tasks.tasks.mathhay.haystack import splice_segments

    texts = ["one two three four five six seven eight nine ten", "alpha beta gamma", "x"]
    pool = TokenPool(dict(enumerate(texts)), 3)
    tokens = encode("\n\n".join(texts))[:irrelevant_len]
    segments, _, _ = pool.joined_segments([0, 1, 2], irrelevant_len)
    docs = [pool.document("Doc A text."), pool.document("Doc B")]
    out, starts = splice_segments(segments, docs, offsets)
    expected, expected_starts = splice(tokens, [list(d.tokens) for d in docs], offsets)
    assert list(_materialize(out)) == list(expected) and starts == expected_starts
