"""Prompt prefixes a provider's cache can serve: the rules, a count, and an order that earns them.

Providers keep the computed opening of recent prompts and bill a later prompt
that starts with the same tokens at a fraction of the input price. What is
served depends on the provider's rule (:class:`CacheRule`), on what came
before in the run, and on how close together the sharing prompts are sent.

The rules, as each provider's documentation states them (read through the
project's documentation search, 2026-11; check them before relying on them):

- ``openai`` (OpenAI's automatic prompt caching, "Prompt caching" guide and the
  "Prompt Caching 201" cookbook): automatic, no request option; a prompt of
  1,024 tokens or more can reuse the longest exact prefix of a recently
  processed prompt, in increments of 128 tokens (so 1,024, 1,152, ...); no
  charge for writing; cached input billed at the model's cached-input price; a
  prefix stays for minutes of inactivity (up to an hour).
- ``anthropic`` (Anthropic's prompt caching guide): only at cache points the
  request marks (``cache_control`` on a content block; automatic caching marks
  the last block), at most four per request; a later request reads the longest
  marked prefix that an earlier request wrote, byte for byte, within the lookback
  of its own block boundaries; a prefix shorter than the model's minimum is not
  cached (1,024 tokens for Sonnet and Opus 3.x to 4.1, 2,048 for Haiku 3 and 3.5,
  4,096 for Opus 4.5+ and Haiku 4.5); reads cost a tenth of the input price,
  writes of the 5-minute cache 1.25 times it. Inspect marks, when
  ``cache_prompt`` is not False, the end of the system message, the
  second-to-last content block and (automatic caching) the last one.
- ``slot`` (a llama.cpp-style server with one slot per request in flight, as the
  local model of this project's tests): the prompt reuses its longest common
  prefix with the previous prompt of the slot, token for token, no minimum;
  ``server``: the same with the server's in-memory prompt cache, which holds
  several earlier prompts (the local server measured here behaves so: see
  ``benchmarks/prefix_cache_local.py``).

Counts here are in the tokens given (o200k_base for the package's estimates),
not the provider's own tokenizer: a provider's count differs by its tokenizer
and by a few tokens of message framing.
"""

from __future__ import annotations

import hashlib
import math
from array import array
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import NamedTuple

from inspect_ai.model import GenerateConfig


@dataclass(frozen=True)
class CacheRule:
    """How one provider's prompt cache serves a prefix."""

    name: str
    min_tokens: int
    """A prefix shorter than this is never served (nor written)."""
    block: int
    """Served prefixes are multiples of this many tokens (1: any length)."""
    marked: bool = False
    """Served only at a cache point the request marks (:attr:`Prompt.points`), and only
    when an earlier request marked the same prefix (and so wrote it)."""
    last_only: bool = False
    """The cache holds the previous prompt alone (a server slot)."""
    write_factor: float = 1.0
    """Price of a written (cached) token relative to the input price; 1.0: no surcharge."""
    source: str = ""


OPENAI = CacheRule(
    "openai",
    1024,
    128,
    source="OpenAI prompt caching guide: automatic, >=1,024 tokens, 128-token increments",
)
ANTHROPIC = CacheRule(
    "anthropic", 1024, 1, marked=True, write_factor=1.25,
    source="Anthropic prompt caching guide: marked cache points, minimum 1,024 tokens",
)  # fmt: skip
ANTHROPIC_2048 = CacheRule(
    "anthropic (2,048 minimum)", 2048, 1, marked=True, write_factor=1.25,
    source="Anthropic prompt caching guide: marked cache points, minimum 2,048 tokens",
)  # fmt: skip
ANTHROPIC_4096 = CacheRule(
    "anthropic (4,096 minimum)", 4096, 1, marked=True, write_factor=1.25,
    source="Anthropic prompt caching guide: marked cache points, minimum 4,096 tokens",
)  # fmt: skip
SLOT = CacheRule(
    "slot", 0, 1, last_only=True,
    source="llama.cpp server: the longest common prefix with the slot's previous prompt",
)  # fmt: skip
SERVER = CacheRule(
    "server", 0, 1,
    source="llama.cpp server with a prompt cache in memory: the longest common prefix "
    "with any earlier prompt still held",
)  # fmt: skip

RULES: dict[str, CacheRule] = {
    # bare model-name prefixes (provider route removed); the longest match wins
    "gpt-": OPENAI,
    "o1": OPENAI,
    "o3": OPENAI,
    "o4": OPENAI,
    "claude-3-haiku": ANTHROPIC_2048,
    "claude-3-5-haiku": ANTHROPIC_2048,
    "claude-haiku-4-5": ANTHROPIC_4096,
    "claude-opus-4-5": ANTHROPIC_4096,
    "claude-opus-4-6": ANTHROPIC_4096,
    "claude-sonnet-4-6": ANTHROPIC_2048,
    "claude-": ANTHROPIC,
}


def rule_for(model: str) -> CacheRule | None:
    """The cache rule of ``model`` (``openai/gpt-4o``, ``anthropic/claude-3-5-sonnet-...``);
    None when no rule is known (the model's provider caches nothing we can count)."""
    bare = model.rsplit("/", 1)[-1].lower()
    keys = [k for k in RULES if bare.startswith(k)]
    return RULES[max(keys, key=len)] if keys else None


def cache_config(config: GenerateConfig, readable: bool) -> GenerateConfig:
    """``config`` asking for marked caching only where it can pay.

    ``readable``: a later request can read what one request's marked cache write holds
    (a later turn of the same sample, or an opening every sample shares): ``config``
    unchanged (Inspect's default marks and writes). Otherwise ``cache_prompt=False``: a
    marked write would only add its surcharge (Anthropic's 1.25x). OpenAI's automatic
    caching needs no request and is unaffected.
    """
    return config if readable else config.model_copy(update={"cache_prompt": False})


IN_FLIGHT = 10
"""Requests sent at once when not given (Inspect's default --max-connections)."""
WINDOW = 100
"""A cached prefix's lifetime in requests when not given (see :class:`PrefixCache`)."""

LOOKBACK = 20
"""Block boundaries before its last mark at which a marked request looks for a hit."""


class Prompt(NamedTuple):
    """One request's prompt as tokens, the ends it marks for caching (a marked rule
    writes there), and its block boundaries (a marked rule may read at any of the last
    :data:`LOOKBACK` of them up to its last mark; none given: the marks)."""

    tokens: Sequence[int]
    points: tuple[int, ...] = ()
    blocks: tuple[int, ...] = ()


def message_points(lengths: Sequence[int], roles: Sequence[str]) -> tuple[int, ...]:
    """The cache points Inspect marks in a request of messages with these token lengths:
    the end of the leading system messages, of the second-to-last and of the last
    message (one content block each)."""
    points = set(list(accumulate(lengths))[-2:])
    system = 0
    for n, role in zip(lengths, roles, strict=True):
        if role != "system":
            break
        system += n
    if system:
        points.add(system)
    return tuple(sorted(points))


@dataclass
class Served:
    """What a cache served over a stream of prompts."""

    prompts: int = 0
    tokens: int = 0
    read: int = 0
    """Prompt tokens served from the cache."""
    written: int = 0
    """Prompt tokens written to the cache at a surcharge (marked rules)."""
    per_prompt: list[tuple[int, int]] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.read / self.tokens if self.tokens else 0.0


def _bytes(tokens: Sequence[int]) -> bytes:
    if isinstance(tokens, array) and tokens.typecode == "I":
        return tokens.tobytes()
    return array("I", tokens).tobytes()


def _digest(data: bytes | memoryview, previous: bytes = b"") -> bytes:
    return hashlib.blake2b(data, digest_size=16, key=previous).digest()


class PrefixCache:
    """A provider's cache fed one prompt after another, in the order they are sent.

    ``in_flight``: requests sent at once; a prompt can read only what prompts sent at
    least that many places before it wrote (the ones after are not answered yet).
    ``window``: a cached prefix is dropped when none of the last ``window`` prompts
    used it (a stand-in for the cache's lifetime, counted in requests, renewed by
    each use); None: never dropped. With ``in_flight=1`` and no window, the count
    does not depend on the order (each distinct block of the prompts is computed
    once, whoever sends it first), apart from the minimum length.
    """

    def __init__(self, rule: CacheRule, window: int | None = None, in_flight: int = 1) -> None:
        self.rule = rule
        self.window = window
        self.in_flight = max(1, int(in_flight))
        self.served = Served()
        self._seen: dict[bytes, int] = {}
        self._pending: list[tuple[int, list[bytes], bytes]] = []
        self._previous = b""
        self._index = 0

    def _fresh(self, key: bytes) -> bool:
        last = self._seen.get(key)
        if last is None:
            return False
        return self.window is None or self._index - last <= self.window

    def _answered(self) -> None:
        """Make the prompts sent ``in_flight`` or more places ago visible."""
        while self._pending and self._pending[0][0] <= self._index - self.in_flight:
            index, keys, data = self._pending.pop(0)
            for key in keys:
                self._seen[key] = max(index, self._seen.get(key, index))
            self._previous = data

    def send(self, prompt: Prompt) -> tuple[int, int]:
        """Tokens (read from the cache, written to it) of this prompt."""
        self._answered()
        data = _bytes(prompt.tokens)
        n = len(data) // 4
        rule = self.rule
        keys: list[bytes] = []
        if rule.last_only:
            read = _common_prefix(self._previous, data)
            read = read // rule.block * rule.block
            read = read if read >= rule.min_tokens else 0
            written = 0
        elif rule.marked:
            points = sorted({p for p in prompt.points if rule.min_tokens <= p <= n and p > 0})
            bounds = {p for p in prompt.blocks if points and rule.min_tokens <= p <= points[-1]}
            looked = sorted(bounds | set(points))[-LOOKBACK:]
            prefix = {p: _digest(memoryview(data)[: 4 * p]) for p in {*points, *looked}}
            keys = [prefix[p] for p in points]
            read = 0
            for p in looked:
                if p > read and self._fresh(prefix[p]):
                    read = p
                    self._seen[prefix[p]] = self._index  # a use renews it
            written = points[-1] - read if points and points[-1] > read else 0
        else:
            size = 4 * rule.block
            key = b""
            for start in range(0, size * (n // rule.block), size):
                key = _digest(memoryview(data)[start : start + size], key)
                keys.append(key)
            blocks = 0
            for key in keys:
                if not self._fresh(key):
                    break
                blocks += 1
            read = blocks * rule.block
            read = read if read >= rule.min_tokens else 0
            written = 0
        # a use renews what was read; what the prompt writes is there once it is answered
        for key in keys:
            if self._fresh(key):
                self._seen[key] = self._index
        self._pending.append((self._index, keys, data))
        self._index += 1
        self.served.prompts += 1
        self.served.tokens += n
        self.served.read += read
        self.served.written += written
        self.served.per_prompt.append((read, written))
        return read, written


def _common_prefix(a: bytes, b: bytes) -> int:
    """Tokens (4 bytes each) the two token byte strings share from the start."""
    import numpy as np

    n = min(len(a), len(b)) // 4
    if n == 0:
        return 0
    x = np.frombuffer(a, dtype=np.uint32, count=n)
    y = np.frombuffer(b, dtype=np.uint32, count=n)
    differ = np.flatnonzero(x != y)
    return int(differ[0]) if len(differ) else n


def serve(
    prompts: Iterable[Prompt],
    rules: Sequence[CacheRule],
    window: int | None = None,
    in_flight: int = 1,
) -> list[Served]:
    """Each rule's :class:`Served` over ``prompts`` in the order given (one pass)."""
    caches = [PrefixCache(rule, window, in_flight) for rule in rules]
    for prompt in prompts:
        for cache in caches:
            cache.send(prompt)
    return [c.served for c in caches]


# --- the order --------------------------------------------------------------------------


def prefix_order(keys: Sequence[Sequence[Hashable]], in_flight: int = 1) -> list[int]:
    """An order of the prompts (indices into ``keys``) that sends shared prefixes close
    together.

    ``keys[i]`` describes prompt ``i`` as a sequence of comparable pieces, equal pieces
    meaning equal text (tokens, or spans of a document). Sorting them lists every group
    of prompts that share an opening together, each prompt after the one it shares most
    with (the order of a walk through their prefix tree): with every earlier prompt
    cached, no order serves more. With ``in_flight`` requests running at once, a prompt
    sent right after the one it shares with would go out before that one is answered
    and cached; so the sorted list is cut into ``in_flight`` runs that are dealt out
    in turn, and each prompt is sent ``in_flight`` places after its predecessor in the
    walk. Ties keep the given order; the result depends on the keys alone.
    """
    walk = sorted(range(len(keys)), key=lambda i: (tuple(keys[i]), i))
    strands = max(1, min(int(in_flight), len(walk)))
    if strands == 1:
        return walk
    size = math.ceil(len(walk) / strands)
    runs = [walk[k * size : (k + 1) * size] for k in range(strands)]
    return [run[j] for j in range(size) for run in runs if j < len(run)]
