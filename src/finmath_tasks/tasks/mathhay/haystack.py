"""MathHay haystacks: exact o200k_base token construction, pool tokenized once per run.

The reference procedure (SalesforceAIResearch/MathHay, ``evaluation/evaluation.py``
and ``bench_generation/haystack_construction/haystack.py``, described here, not
copied) builds each haystack when the question is evaluated:

1. Pool order: ``random.seed(2024); random.shuffle(list(range(len(pool))))``,
   minus the question's own documents (ids ``<prefix><index>``); the files store
   this order per question as ``Irrelevant_Documents_Indexs``.
2. The pool documents in that order are joined with blank lines (``"\\n\\n"``)
   and the whole join is tokenized with o200k_base (``disallowed_special=()``).
3. ``L`` is the haystack length, less a reserve when it is exactly 128000: 2000
   tokens, 20000 for the o1 models (``-T reserve=``).
   ``relevant`` is the token count of the question's documents concatenated
   WITHOUT a separator (one count for all of them), ``prompt`` the token count
   of the solving prompt with an empty context. ``rest = max(0, L - relevant -
   prompt)``; the irrelevant tokens are the first ``rest`` tokens of the join.
4. Each relevant document, tokenized on its own, is spliced into the
   irrelevant tokens at ``first=0``, ``middle=rest//2``, ``last=rest``,
   ``pN=rest//10*N``, inserting the last document first so that documents
   placed at the same offset keep their order. Offsets beyond the end of the
   list append (Python slice semantics), as in the reference.
5. The tokens are decoded (tiktoken's ``errors="replace"``) into the context.

Tokenizing the whole join per question costs about 0.6 s here (1.1 M tokens).
:class:`TokenPool` tokenizes each pool document once per run and assembles the
join's tokens from them. BPE never merges across pre-tokenizer chunks (the
encoding's regex split), so a document's tokens are the join's tokens except
near its two ends: each document keeps a *body* (all but its first and last
``MARGIN_CHUNKS`` chunks) whose tokens are reused, and the text between two
bodies (a tail, the separator, a head) is split with the encoding's own regex
and encoded chunk by chunk. The split is checked to have a chunk boundary
exactly where the next body starts (the scan of the join is then in step with
the document's own scan); if it has not, the next document's body is not used
and its whole text joins the glue. That the bodies' own tokens are the join's
rests on a regex match examining no further than the next chunk, which the
margins cover; it is checked, not assumed: tests compare the result with the
reference's full re-tokenization on every real question and on adversarial
texts (whitespace and punctuation at the edges, short documents, non-ASCII).

A haystack is kept as segments (slices of the documents' token arrays and the
glue tokens) that are cut and spliced without copying tokens; its text is
assembled from the documents' own UTF-8 bytes, only the glue tokens being
decoded, which gives what tiktoken's ``decode`` of the tokens gives.
"""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ENCODING = "o200k_base"
SEPARATOR = "\n\n"
SHUFFLE_SEED = 2024
LONG_LENGTH = 128_000
LONG_LENGTH_RESERVE = 2_000
"""At exactly 128000 tokens the reference leaves 2000 tokens of room ..."""
O1_LONG_LENGTH_RESERVE = 20_000
"""... and 20000 for o1-mini and o1-preview (the reference's evaluation code)."""
MARGIN_CHUNKS = 3
"""Pre-tokenizer chunks at each end of a document that are re-encoded in context."""
LOOKAHEAD_CHUNKS = 3
"""Chunks of the next body appended when splitting the glue, to see past its end."""


def pool_order(size: int, seed: int = SHUFFLE_SEED) -> list[int]:
    """The reference's pool order: ``random.seed(seed); random.shuffle(range(size))``."""
    import random

    order = list(range(size))
    random.Random(seed).shuffle(order)
    return order


def irrelevant_order(size: int, own_ids: Iterable[str], prefix: str) -> list[int]:
    """The pool order without the question's own documents (ids ``prefix + index``)."""
    own = set(own_ids)
    return [i for i in pool_order(size) if f"{prefix}{i}" not in own]


def haystack_budget(length: int, reserve: int = LONG_LENGTH_RESERVE) -> int:
    """Tokens the reference allots to documents + prompt for haystack ``length``.

    ``reserve`` is left free only at exactly 128000 tokens, as in the reference.
    """
    return length - reserve if length == LONG_LENGTH else length


def placement_offsets(placement: Sequence[str], rest: int) -> list[int]:
    """Token offsets (in the irrelevant tokens) for each document's placement."""
    offsets = []
    for where in placement:
        if where == "first":
            offsets.append(0)
        elif where == "middle":
            offsets.append(rest // 2)
        elif where == "last":
            offsets.append(rest)
        elif len(where) == 2 and where[0] == "p" and where[1] in "123456789":
            offsets.append(rest // 10 * int(where[1]))
        else:
            raise ValueError(f"unknown placement {where!r}")
    return offsets


@dataclass
class _Doc:
    text: str
    tokens: array
    body: tuple[int, int, int, int] | None
    """(char_start, char_end, token_start, token_end) of the reusable middle, or None."""
    lookahead: str = ""
    """Text of the body's first LOOKAHEAD_CHUNKS chunks."""
    data: bytes = b""
    """The text in UTF-8."""
    offsets: array = field(default_factory=lambda: array("I"))
    """Byte offset in ``data`` where each token starts (one more entry: the end)."""
    digest: bytes = b""
    """A digest of ``data`` (set on first use as a sort key)."""


Segment = tuple[_Doc | None, int, int, list[int] | None]
"""Part of a token sequence: (doc, start, end, None) is ``doc.tokens[start:end]``;
(None, 0, n, tokens) is a list of n tokens (the glue between document bodies)."""


def _seg_len(segment: Segment) -> int:
    return segment[2] - segment[1]


def _cut(segments: list[Segment], limit: int) -> list[Segment]:
    """The segments of the first ``limit`` tokens."""
    out: list[Segment] = []
    total = 0
    for doc, a, b, tokens in segments:
        if total >= limit:
            break
        take = min(b - a, limit - total)
        if tokens is None:
            out.append((doc, a, a + take, None))
        else:
            out.append((None, 0, take, tokens[:take]))
        total += take
    return out


def _split(segments: list[Segment], at: int) -> tuple[list[Segment], list[Segment]]:
    """Segments before and from token ``at``."""
    total = 0
    for i, (doc, a, b, tokens) in enumerate(segments):
        n = b - a
        if total + n <= at:
            total += n
            continue
        k = at - total
        if k == 0:
            return segments[:i], segments[i:]
        if tokens is None:
            left: Segment = (doc, a, a + k, None)
            right: Segment = (doc, a + k, b, None)
        else:
            left, right = (None, 0, k, tokens[:k]), (None, 0, n - k, tokens[k:])
        return [*segments[:i], left], [right, *segments[i + 1 :]]
    return list(segments), []


def _materialize(segments: list[Segment]) -> array:
    out = array("I")
    for doc, a, b, tokens in segments:
        if tokens is None:
            assert doc is not None
            out.extend(doc.tokens[a:b])
        else:
            out.extend(tokens)
    return out


@dataclass
class Haystack:
    """One built haystack and the facts a log should keep about it."""

    text: str
    tokens: int
    irrelevant_tokens: int
    rest: int
    relevant_tokens: int
    """The reference's count: the relevant documents concatenated without a separator."""
    document_tokens: list[int]
    """Each relevant document's own token count (what is spliced in)."""
    positions: list[int]
    """Token offset of each relevant document in the final haystack."""
    missing_pool_documents: int
    """Pool entries in this question's order that were absent and skipped (up to the cut)."""
    pool_exhausted: bool = False
    """The pool had fewer than ``rest`` tokens (the haystack is shorter than asked)."""
    budget: int = 0
    """Tokens allotted to documents + prompt (the length less the 128K reserve)."""
    needed: int = 0
    """What the question's documents and the prompt take on their own (relevant + prompt)."""

    @property
    def too_short(self) -> bool:
        """The budget cannot hold the question's documents and the prompt (no irrelevant text)."""
        return self.needed > self.budget

    def metadata(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "irrelevant_tokens": self.irrelevant_tokens,
            "rest": self.rest,
            "relevant_tokens": self.relevant_tokens,
            "document_tokens": self.document_tokens,
            "positions": self.positions,
            "missing_pool_documents": self.missing_pool_documents,
            "pool_exhausted": self.pool_exhausted,
            "budget": self.budget,
            "needed": self.needed,
            "too_short": self.too_short,
        }


@dataclass
class TokenPool:
    """The irrelevant-document pool of one release; documents tokenized once, on first use.

    ``documents`` maps a pool index to its text; indices absent from it are
    missing entries (skipped and counted). Thread-safe preparation; the built
    object is shared by every sample of a run.
    """

    documents: Mapping[int, str]
    size: int
    encoding_name: str = ENCODING
    _docs: dict[int, _Doc] = field(default_factory=dict, init=False, repr=False)
    _by_text: dict[str, _Doc] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _ready: bool = field(default=False, init=False, repr=False)
    _encoding: Any = field(default=None, init=False, repr=False)
    _pattern: Any = field(default=None, init=False, repr=False)
    _lengths: Any = field(default=None, init=False, repr=False)

    # ---- tokenizer ---------------------------------------------------------------
    @property
    def encoding(self) -> Any:
        if self._encoding is None:
            from finmath_tasks.tiktoken_offline import get_encoding

            self._encoding = get_encoding(self.encoding_name)
        return self._encoding

    @property
    def pattern(self) -> Any:
        """The encoding's pre-tokenizer regex (chunks BPE never merges across)."""
        if self._pattern is None:
            import regex

            self._pattern = regex.compile(self.encoding._pat_str)
        return self._pattern

    def encode(self, text: str) -> list[int]:
        """The reference's tokenization: ``encode(text, disallowed_special=())``."""
        return list(self.encoding.encode(text, disallowed_special=()))

    # ---- one-time preparation ----------------------------------------------------
    def prepare(self) -> None:
        """Tokenize every pool document (once; later calls return at once)."""
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            indices = sorted(self.documents)
            texts = [self.documents[i] for i in indices]
            docs = self._analyse(texts)
            for i, doc in zip(indices, docs, strict=True):
                self._docs[i] = doc
                self._by_text.setdefault(doc.text, doc)
            self._ready = True

    def _analyse(self, texts: list[str]) -> list[_Doc]:
        import numpy as np

        enc = self.encoding
        pattern = self.pattern
        lengths = self._token_byte_lengths()
        docs = []
        for text in texts:
            # one document at a time, in this thread: tiktoken returns a list of Python ints
            # (about 36 bytes a token), kept only until it is an array (4 bytes a token); a
            # batch would hold the whole pool's lists at once and allocate in 8 threads
            tokens = array("I", enc.encode_ordinary(text))
            starts = [m.start() for m in pattern.finditer(text)]
            body = None
            lookahead = ""
            n = len(starts)
            cum = np.concatenate(
                ([0], np.cumsum(lengths[np.frombuffer(tokens, dtype=np.uint32)]))
            ).astype(np.uint32)
            data = text.encode("utf-8")
            if n >= 2 * MARGIN_CHUNKS + 1:
                c0, c1 = starts[MARGIN_CHUNKS], starts[n - MARGIN_CHUNKS]
                b0 = len(text[:c0].encode("utf-8"))
                b1 = b0 + len(text[c0:c1].encode("utf-8"))
                t0 = int(np.searchsorted(cum, b0))
                t1 = int(np.searchsorted(cum, b1))
                if t0 < len(cum) and t1 < len(cum) and cum[t0] == b0 and cum[t1] == b1:
                    body = (c0, c1, t0, t1)
                    end = min(MARGIN_CHUNKS + LOOKAHEAD_CHUNKS, n - 1)
                    lookahead = text[c0 : starts[end]]
            offsets = array("I")
            offsets.frombytes(cum.tobytes())
            if offsets[-1] != len(data):
                raise ValueError("token byte lengths do not add up to the document's length")
            docs.append(_Doc(text, tokens, body, lookahead, data, offsets))
        return docs

    def _token_byte_lengths(self) -> Any:
        import numpy as np

        if self._lengths is None:
            enc = self.encoding
            lengths = np.zeros(enc.n_vocab, dtype=np.int64)
            for token_bytes, rank in enc._mergeable_ranks.items():
                lengths[rank] = len(token_bytes)
            self._lengths = lengths
        return self._lengths

    def document(self, text: str) -> _Doc:
        """The analysed document with this text (a pool document, else analysed now)."""
        self.prepare()
        doc = self._by_text.get(text)
        if doc is None:
            # a question's document that is not in the pool: analysed once, then kept
            # (bounded by the questions' documents)
            [doc] = self._analyse([text])
            self._by_text.setdefault(text, doc)
        return doc

    # ---- the join ------------------------------------------------------------------
    def _encode_glue(self, glue: str, lookahead: str | None) -> list[int] | None:
        """Tokens of ``glue`` as they are inside the join; None when out of step.

        ``lookahead`` is the text that follows in the join (None: the join ends).
        """
        enc = self.encoding
        if lookahead is None:
            return list(enc.encode_ordinary(glue))
        pattern = self.pattern
        tokens: list[int] = []
        end = len(glue)
        for m in pattern.finditer(glue + lookahead):
            if m.start() >= end:
                break
            if m.end() > end:
                return None
            tokens.extend(enc._encode_single_piece(m.group()))
        return tokens

    def joined_tokens(
        self, order: Sequence[int], limit: int | None = None, separator: str = SEPARATOR
    ) -> tuple[array, int, bool]:
        """The tokens of ``separator.join(documents in order)``, up to ``limit`` of them.

        Returns (tokens, missing entries skipped before the cut, whether the
        join ended before ``limit``).
        """
        segments, missing, exhausted = self.joined_segments(order, limit, separator)
        return _materialize(segments), missing, exhausted

    def joined_segments(
        self, order: Sequence[int], limit: int | None = None, separator: str = SEPARATOR
    ) -> tuple[list[Segment], int, bool]:
        """:meth:`joined_tokens` as segments (no copy of the documents' tokens)."""
        self.prepare()
        docs = []
        present = []
        for index in order:
            doc = self._docs.get(index)
            present.append(doc is not None)
            if doc is not None:
                docs.append(doc)
        segments, used, exhausted = self.join_documents(docs, limit, separator)
        # count the missing entries met before the cut (all of them if the join ran out)
        missing = 0
        seen = 0
        for is_present in present:
            if not exhausted and seen >= used:
                break
            if is_present:
                seen += 1
            else:
                missing += 1
        return segments, missing, exhausted

    def join_documents(
        self, docs: Sequence[_Doc], limit: int | None, separator: str
    ) -> tuple[list[Segment], int, bool]:
        """Segments of the join of ``docs``; (segments, documents used, join exhausted)."""
        out: list[Segment] = []
        total = 0
        glue: list[str] = []
        used = 0

        def add_glue(tokens: list[int]) -> None:
            nonlocal total
            if tokens:
                out.append((None, 0, len(tokens), tokens))
                total += len(tokens)

        for k, doc in enumerate(docs):
            if limit is not None and total >= limit:
                return _cut(out, limit), used, False
            used += 1
            if k:
                glue.append(separator)
            body = doc.body
            if body is not None:
                c0, c1, t0, t1 = body
                glue.append(doc.text[:c0])
                tokens = self._encode_glue("".join(glue), doc.lookahead)
                if tokens is not None:
                    add_glue(tokens)
                    out.append((doc, t0, t1, None))
                    total += t1 - t0
                    glue = [doc.text[c1:]]
                    continue
                glue.pop()
            glue.append(doc.text)
        if glue:
            tail = self._encode_glue("".join(glue), None)
            assert tail is not None
            add_glue(tail)
        if limit is not None and total >= limit:
            return _cut(out, limit), used, False
        return out, used, True

    def decode(self, segments: list[Segment]) -> str:
        """The text of the segments, as tiktoken's ``decode`` gives it (``errors="replace"``).

        Document slices are copied from the document's own UTF-8 bytes (a token
        sequence decodes to the concatenation of its tokens' bytes); only the
        glue tokens are decoded.
        """
        enc = self.encoding
        pieces = []
        for doc, a, b, tokens in segments:
            if tokens is None:
                assert doc is not None
                pieces.append(doc.data[doc.offsets[a] : doc.offsets[b]])
            else:
                pieces.append(enc.decode_bytes(tokens))
        return b"".join(pieces).decode("utf-8", errors="replace")

    # ---- one haystack -----------------------------------------------------------
    def layout(
        self,
        order: Sequence[int],
        relevant: Sequence[str],
        placement: Sequence[str],
        length: int,
        prompt_tokens: int,
        reserve: int = LONG_LENGTH_RESERVE,
        spliced: Sequence[str] | None = None,
    ) -> tuple[list[Segment], Haystack]:
        """The haystack of one question as segments, and its facts (text not decoded).

        ``spliced``: other texts of the relevant documents (a fresh variant's) to insert
        where ``relevant`` would go: the irrelevant tokens and the offsets are those of
        ``relevant`` (and ``prompt_tokens``), so only the documents' text differs."""
        if len(placement) != len(relevant):
            raise ValueError(f"{len(placement)} placements for {len(relevant)} relevant documents")
        if spliced is not None and len(spliced) != len(relevant):
            raise ValueError(f"{len(spliced)} documents to splice for {len(relevant)}")
        self.prepare()
        rel_docs = [self.document(text) for text in relevant]
        inserted = rel_docs if spliced is None else [self.document(text) for text in spliced]
        relevant_count = (
            len(rel_docs[0].tokens)
            if len(rel_docs) == 1
            else sum(map(_seg_len, self.join_documents(rel_docs, None, "")[0]))
        )
        budget = haystack_budget(length, reserve)
        rest = max(0, budget - relevant_count - prompt_tokens)
        irrelevant, missing, exhausted = self.joined_segments(order, rest)
        irrelevant_count = sum(map(_seg_len, irrelevant))
        offsets = placement_offsets(placement, rest)
        segments, positions = splice_segments(irrelevant, inserted, offsets)
        return segments, Haystack(
            text="",
            tokens=sum(map(_seg_len, segments)),
            irrelevant_tokens=irrelevant_count,
            rest=rest,
            relevant_tokens=relevant_count,
            document_tokens=[len(d.tokens) for d in inserted],
            positions=positions,
            missing_pool_documents=missing,
            pool_exhausted=exhausted and irrelevant_count < rest,
            budget=budget,
            needed=relevant_count + prompt_tokens,
        )

    def build(
        self,
        order: Sequence[int],
        relevant: Sequence[str],
        placement: Sequence[str],
        length: int,
        prompt_tokens: int,
        reserve: int = LONG_LENGTH_RESERVE,
    ) -> Haystack:
        """The haystack of one question (see the module docstring for the definition)."""
        segments, haystack = self.layout(order, relevant, placement, length, prompt_tokens, reserve)
        haystack.text = self.decode(segments)
        return haystack

    def tokens(self, segments: list[Segment]) -> array:
        """The haystack's tokens (as built, before decoding)."""
        return _materialize(segments)

    def key(self, segments: list[Segment]) -> tuple[tuple[Any, ...], ...]:
        """The haystack as comparable pieces, equal pieces being equal tokens: a document's
        span by the document's digest and token range, glue by its tokens. Stable across
        processes (for :func:`finmath_tasks.prefix_cache.prefix_order`)."""
        out: list[tuple[Any, ...]] = []
        for doc, a, b, tokens in segments:
            if tokens is None:
                assert doc is not None
                out.append(("d", self._digest(doc), a, b))
            else:
                out.append(("g", tuple(tokens)))
        return tuple(out)

    def _digest(self, doc: _Doc) -> bytes:
        if not doc.digest:
            doc.digest = hashlib.blake2b(doc.data, digest_size=16).digest()
        return doc.digest


def splice(
    irrelevant: Sequence[int], documents: Sequence[Sequence[int]], offsets: Sequence[int]
) -> tuple[array, list[int]]:
    """Insert ``documents`` at ``offsets`` the reference's way: last document first.

    Returns the tokens and each document's start in them. Offsets past the
    current end append (Python slice semantics), as in the reference.
    """
    out = array("I", irrelevant)
    starts: list[int | None] = [None] * len(documents)
    for k in range(len(documents) - 1, -1, -1):
        at = min(offsets[k], len(out))
        out[at:at] = array("I", documents[k])
        for j in range(k + 1, len(documents)):
            start = starts[j]
            if start is not None and start >= at:
                starts[j] = start + len(documents[k])
        starts[k] = at
    return out, [s for s in starts if s is not None]


def splice_segments(
    irrelevant: list[Segment], documents: Sequence[_Doc], offsets: Sequence[int]
) -> tuple[list[Segment], list[int]]:
    """:func:`splice` on segments: the same insertions, positions and append rule."""
    segments = list(irrelevant)
    total = sum(map(_seg_len, segments))
    starts: list[int | None] = [None] * len(documents)
    for k in range(len(documents) - 1, -1, -1):
        n = len(documents[k].tokens)
        at = min(offsets[k], total)
        left, right = _split(segments, at)
        segments = [*left, (documents[k], 0, n, None), *right]
        total += n
        for j in range(k + 1, len(documents)):
            start = starts[j]
            if start is not None and start >= at:
                starts[j] = start + n
        starts[k] = at
    return segments, [s for s in starts if s is not None]


def reference_build(
    pool_texts: Mapping[int, str],
    order: Sequence[int],
    relevant: Sequence[str],
    placement: Sequence[str],
    length: int,
    prompt_tokens: int,
    encode: Any,
    reserve: int = LONG_LENGTH_RESERVE,
) -> list[int]:
    """The reference's way, for tests and the benchmark: re-tokenize the whole join."""
    joined = SEPARATOR.join(pool_texts[i] for i in order if i in pool_texts)
    join_tokens = encode(joined)
    relevant_count = len(encode("".join(relevant)))
    rest = max(0, haystack_budget(length, reserve) - relevant_count - prompt_tokens)
    tokens = join_tokens[:rest]
    offsets = placement_offsets(placement, rest)
    for k in range(len(relevant) - 1, -1, -1):
        tokens[offsets[k] : offsets[k]] = encode(relevant[k])
    return list(tokens)
