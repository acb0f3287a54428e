"""SARA's dry-run counting (``finmath grid sara --dry-run``), from the cases and the
prompt templates, as the task's solvers build the conversation: the system prompt,
the exemplar turns (few_shot, cot) and the case's turn with its statutes, each
message counted in o200k tokens (as the generic rendering counts them). One call
per sample; the task sets no generation limit (give ``--max-tokens``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from finmath_tasks.cli.cost import SampleLoad, count_tokens
from finmath_tasks.tasks.sara.dataset import load_data, load_dataset
from finmath_tasks.tasks.sara.prompts import (
    EXEMPLAR_SPECS,
    case_turn,
    exemplar_turns,
    load_exemplars,
    system_prompt,
    with_statutes,
)


@lru_cache(maxsize=2)
def _data(data_dir: str | None) -> Any:
    return load_data(data_dir)


@lru_cache(maxsize=2)
def _exemplars(data_dir: str | None) -> Any:
    return load_exemplars(_data(data_dir))


@lru_cache(maxsize=32)
def _fixed(data_dir: str | None, retrieval: str, prompting: str) -> int:
    """Tokens of the messages every case shares: the system prompt and the exemplar turns."""
    data = _data(data_dir)
    shots = _exemplars(data_dir) if prompting != "zero_shot" else []
    exemplars = exemplar_turns(data.statutes, retrieval, prompting, shots)
    return count_tokens(system_prompt(prompting)) + sum(
        count_tokens(t["content"]) for t in exemplars
    )


def loads(args: Mapping[str, Any], max_tokens: int | None) -> list[SampleLoad]:
    data_dir = args.get("data_dir")
    retrieval = str(args.get("retrieval", "mentioned_only"))
    prompting = str(args.get("prompting", "cot"))
    data = _data(data_dir)
    samples = load_dataset(
        data,
        str(args.get("split", "test")),
        str(args.get("kind", "entailment")),
        frozenset(s.case_id for s in EXEMPLAR_SPECS),
    )
    fixed = _fixed(data_dir, retrieval, prompting)
    out = []
    for sample in samples:
        md = sample.metadata or {}
        turn = case_turn(md["kind"], md["text"], md["question"], prompting)
        if retrieval != "none":
            turn = with_statutes(data.statutes, turn, md["question"], md["kind"], retrieval)
        out.append(SampleLoad(fixed + count_tokens(turn)))
    return out


def max_tokens(args: Mapping[str, Any]) -> int | None:
    return None
