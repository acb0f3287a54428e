"""KnowledgeFMATH's dry-run counting (``finmath grid knowledgefmath --dry-run``), from the
records and the prompt templates: no retrieval model, no sandbox, no model call.

Per sample, in o200k tokens: the system prompt and the rendered user prompt
(exact); with a knowledge setting the knowledge block before it:

- ``oracle`` and ``bm25``: exact (the annotated terms; the BM25 ranking, which is cheap).
- ``dense``: bounds, the top_n shortest and the top_n longest passages of the bank.
- ``llm_kb``: two calls; the first (the model writes the terms) exact, the second
  between no knowledge (an empty reply) and a reply of the generation limit.
- ``rerank``: two calls; the first (the model picks top_n of 3 x top_n BM25
  candidates) exact, the second between the top_n shortest and longest candidates
  (with dense candidates, ``retriever=dense``: both bounded by the bank's passages).
- ``instructed``: two calls; the first as llm_kb, the second between the top_n
  shortest and longest passages of the bank.

The first-turn prompt of a two-call setting is its first call's prompt.

The answer extractor (:func:`grader`, ``-T extractor=model`` with a text solver): the
verdicts ask it for the final number of every reply, and again while it answers "None"
(once more for ``financemath``, up to 3 times for ``knowledgefmath2023``), so 1 up to 4
calls per sample (the bound used: every sample asked 4 times). Each prompt holds the
instruction and the question (exact) and the reply: between none and a reply of the
generation limit (+2 tokens where it joins the template). Its output is at most the
first ask's token limit, then the re-asks' limit. It runs on the ``grader`` role, else
on the evaluated model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from finmath_tasks.cli.cost import GraderCount, GraderLoad, SampleLoad, count_tokens
from finmath_tasks.retrieval.passages import render_passages
from finmath_tasks.retrieval.rerank import rerank_prompt
from finmath_tasks.tasks.knowledgefmath.dataset import (
    COT_SYSTEM_PROMPT,
    DATASET_REVISION,
    POT_SYSTEM_PROMPT,
    PromptStyle,
    load_dataset,
    render_prompt,
)
from finmath_tasks.tasks.knowledgefmath.knowledge import (
    KNOWLEDGE_TEMPLATE,
    LLM_KB_MAX_TERMS,
    LLM_KB_PROMPT,
    RERANK_POOL,
    KnowledgeBase,
    load_bank,
    load_oracle,
)
from finmath_tasks.tasks.knowledgefmath.scoring import answer_extraction
from finmath_tasks.tasks.knowledgefmath.task import CODE_SOLVERS, GENERATE_CONFIG

STYLES: dict[str, PromptStyle] = {"cot": "cot", "pot": "pot", "oracle": "cot", "oracle_pot": "pot"}
SYSTEM = {"cot": COT_SYSTEM_PROMPT, "pot": POT_SYSTEM_PROMPT}
MODEL_FREE = ("oracle", "oracle_pot")
"""Solvers that call no model."""


@lru_cache(maxsize=8)
def _records(split: str, data_dir: str | None, revision: str | None) -> tuple[Any, ...]:
    return tuple(load_dataset(split, data_dir, revision))


@lru_cache(maxsize=4)
def _base(bank: str | None) -> KnowledgeBase:
    return KnowledgeBase(load_bank(bank), load_oracle())


@lru_cache(maxsize=4)
def _passage_tokens(bank: str | None) -> tuple[int, ...]:
    """Every bank passage's tokens, ascending."""
    return tuple(sorted(count_tokens(t.passage()) for t in _base(bank).terms))


def _question_text(meta: Mapping[str, Any]) -> str:
    tables = meta.get("tables") or []
    question = str(meta["question"])
    return "\n\n".join([*tables, question]) if tables else question


def _with(prompt: str, passages: Sequence[str]) -> int:
    return count_tokens(render_passages(KNOWLEDGE_TEMPLATE, prompt, list(passages)))


def _block(sizes: Sequence[int]) -> int:
    """Tokens of a knowledge block of passages with these sizes, less the prompt (approx.)."""
    if not sizes:
        return 0
    return (
        count_tokens(render_passages(KNOWLEDGE_TEMPLATE, "", ["x"])) - 1 + sum(sizes) + len(sizes)
    )


def loads(args: Mapping[str, Any], max_tokens: int | None) -> list[SampleLoad]:
    solver = str(args.get("solver", "cot"))
    knowledge = str(args.get("knowledge", "none"))
    top_n = int(args.get("top_n", 3))
    bank = args.get("knowledge_bank")
    retriever = str(args.get("retriever", "bm25"))  # rerank's candidates: bm25 or dense
    style = STYLES[solver]
    system = count_tokens(SYSTEM[style]) if solver not in MODEL_FREE else 0
    records = _records(
        str(args.get("split", "validation")),
        args.get("data_dir"),
        args.get("revision", DATASET_REVISION),
    )
    out: list[SampleLoad] = []
    for sample in records:
        meta = sample.metadata
        user = render_prompt(meta["question"], meta.get("tables") or [], style)
        if solver in MODEL_FREE:
            out.append(SampleLoad(0, 0, 0, 0, 0))
            continue
        if knowledge == "none":
            out.append(SampleLoad(system + count_tokens(user)))
            continue
        base = _base(bank)
        if knowledge == "oracle":
            needed = base.oracle.get(str(meta["question_id"])) or []
            found = [base.by_name[n.casefold()] for n in needed if n.casefold() in base.by_name]
            out.append(SampleLoad(system + _with(user, [base.terms[i].passage() for i in found])))
        elif knowledge == "bm25":
            hits = base.bm25.search(_question_text(meta), top_n)
            out.append(
                SampleLoad(system + _with(user, [base.terms[h.index].passage() for h in hits]))
            )
        elif knowledge == "dense":
            sizes = _passage_tokens(bank)
            plain = system + count_tokens(user)
            low, high = plain + _block(sizes[:top_n]), plain + _block(sizes[-top_n:])
            out.append(SampleLoad(low, 1, 1, low, high))
        else:
            plain = system + count_tokens(user)
            if knowledge == "rerank" and retriever == "dense":
                # the dense candidates are not computed here: both calls bounded by the bank
                query = _question_text(meta)
                pool = RERANK_POOL * top_n
                bank_sizes = _passage_tokens(bank)
                empty = count_tokens(rerank_prompt(query, [""] * pool, top_n))
                first = empty + sum(bank_sizes[:pool])
                first_high = empty + sum(bank_sizes[-pool:]) + pool
                low = first + plain + _block(bank_sizes[:top_n])
                high = first_high + plain + _block(bank_sizes[-top_n:])
                out.append(SampleLoad(first, 2, 2, low, high))
                continue
            if knowledge == "rerank":
                query = _question_text(meta)
                hits = base.bm25.search(query, RERANK_POOL * top_n)
                candidates = [base.terms[h.index].passage() for h in hits]
                first = count_tokens(rerank_prompt(query, candidates, min(top_n, len(candidates))))
                sizes = tuple(sorted(count_tokens(c) for c in candidates))
                second = (plain + _block(sizes[:top_n]), plain + _block(sizes[-top_n:]))
            else:  # llm_kb, instructed: the model first writes the terms it needs
                first = count_tokens(
                    LLM_KB_PROMPT.format(max_terms=LLM_KB_MAX_TERMS, question=_question_text(meta))
                )
                if knowledge == "llm_kb":
                    second = (plain, plain + _block([max_tokens or 0]))
                else:
                    sizes = _passage_tokens(bank)
                    second = (plain + _block(sizes[:top_n]), plain + _block(sizes[-top_n:]))
            out.append(SampleLoad(first, 2, 2, first + second[0], first + second[1]))
    return out


def max_tokens(args: Mapping[str, Any]) -> int | None:
    return GENERATE_CONFIG.max_tokens


def note(args: Mapping[str, Any]) -> str:
    knowledge = str(args.get("knowledge", "none"))
    if knowledge in ("none", "oracle", "bm25"):
        return ""
    if knowledge == "dense":
        return "dense: input between the top_n shortest and longest bank passages"
    if knowledge == "rerank" and args.get("retriever") == "dense":
        return "rerank over dense candidates: 2 calls; both bounded by the bank's passages"
    return f"{knowledge}: 2 calls; the second call's knowledge bounded"


JOIN = 2
"""Tokens allowed where the reply joins the extractor's template."""


def grader(args: Mapping[str, Any], max_tokens: int | None, role_given: bool) -> GraderCount | None:
    """The extractor's calls per sample (see the module docstring); None when the verdict
    asks no model (``extractor=rules``, or a program's result is read)."""
    solver = str(args.get("solver", "cot"))
    if str(args.get("extractor", "rules")) != "model" or solver in CODE_SOLVERS:
        return None
    spec = answer_extraction(args.get("extractor_messages", "reference"))
    calls = 1 + max(0, spec.retries_on_none) + max(0, spec.further_retries_on_none)
    output = spec.max_tokens + (calls - 1) * (spec.retry_max_tokens or spec.max_tokens)
    instruction = count_tokens(spec.instruction) if spec.instruction else 0
    records = _records(
        str(args.get("split", "validation")),
        args.get("data_dir"),
        args.get("revision", DATASET_REVISION),
    )
    reply = max_tokens or 0
    loads = []
    for sample in records:
        empty = instruction + count_tokens(spec.template.format(question=sample.input, solution=""))
        loads.append(GraderLoad(1, calls, empty, calls * (empty + reply + JOIN), output))
    bound = f"1 per sample, up to {calls} when it answers None; the bound counts {calls}"
    return GraderCount("extractor", bound, loads)
