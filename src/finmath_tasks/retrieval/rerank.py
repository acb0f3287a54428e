"""LLM re-ranking: the model reads numbered candidate passages and names the best ones.

The reply is read leniently (any integers in range, in the order given, repeats
dropped); when it names fewer than asked, the retriever's order fills the rest
and the result says so, so a sloppy reply never ends the sample.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from inspect_ai.model import ChatMessageUser, GenerateConfig, Model

RERANK_PROMPT = """\
Below is a question, followed by {count} numbered passages that may contain knowledge useful \
for answering it.

Question:
{query}

Passages:
{passages}

Choose the {n} passages that are most useful for answering the question, the most useful \
first. Reply with their numbers only, separated by commas (for example: {example})."""

_INTEGER = re.compile(r"\d+")


@dataclass(frozen=True)
class Reranked:
    order: list[int]
    """0-based indexes into the candidates, best first (exactly ``n`` of them, or all)."""
    reply: str
    chosen_by_model: int
    """How many of ``order`` the model named (the rest came from the retriever's order)."""


def rerank_prompt(query: str, candidates: Sequence[str], n: int) -> str:
    passages = "\n".join(f"[{i}] {text}" for i, text in enumerate(candidates, 1))
    example = ", ".join(str(i) for i in range(1, min(n, len(candidates)) + 1))
    return RERANK_PROMPT.format(
        count=len(candidates), query=query, passages=passages, n=n, example=example
    )


def parse_choice(reply: str, count: int, n: int) -> list[int]:
    """0-based indexes named in ``reply`` (1-based numbers in 1..count), first ``n``, no repeats."""
    chosen: list[int] = []
    for match in _INTEGER.finditer(reply):
        number = int(match.group())
        if 1 <= number <= count and number - 1 not in chosen:
            chosen.append(number - 1)
        if len(chosen) == n:
            break
    return chosen


async def rerank(
    model: Model,
    query: str,
    candidates: Sequence[str],
    n: int,
    config: GenerateConfig | None = None,
) -> Reranked:
    """Ask ``model`` for the ``n`` best of ``candidates`` (given in the retriever's order)."""
    n = min(n, len(candidates))
    output = await model.generate(
        [ChatMessageUser(content=rerank_prompt(query, candidates, n))],
        config=config or GenerateConfig(),
    )
    reply = output.completion
    chosen = parse_choice(reply, len(candidates), n)
    fill = [i for i in range(len(candidates)) if i not in chosen][: n - len(chosen)]
    return Reranked(order=chosen + fill, reply=reply, chosen_by_model=len(chosen))
