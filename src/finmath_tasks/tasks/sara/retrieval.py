"""Structure-aware statute retrieval for SARA cases (the ``retrieval`` task parameter).

Given the units a case's question cites (:mod:`.citations`) and the parsed
statutes (:mod:`.statutes`), each strategy selects units; the selection is
rendered with the section titles and the headings of every ancestor of a
selected unit, in statute order.

- ``mentioned_only``: the cited unit and every unit whose label is a prefix
  of it (its ancestors): for 7703(a)(1) that is s7703, s7703(a), s7703(a)(1).
  A cited unit contributes its full text, i.e. its sub-units too (a citation
  of s152(c)(1) cites the list (A)-(E) that makes up its definition); for a
  citation of a leaf unit this is exactly the prefix rule.
- ``entire_section``: the whole subsection containing the cited unit (for
  7703(a)(1): s7703(a) with (1) and (2)), plus the section's own text; a
  citation of a whole section (``section 3301``) retrieves the section.
- ``references``: ``mentioned_only`` plus every unit cited inside the
  retrieved text, resolved relative to where the reference stands
  ("paragraph (2)" inside s151(d)(3)(B) is s151(d)(2)), each with its full
  text; one hop, the references of referenced units are not followed. A
  reference naming a unit the statutes lack (s63(c)(7)(i)'s "subparagraph
  (B)", which means paragraph (2)'s) or a section outside the release is
  not followed, and is recorded in ``unresolved``.
- ``all_statutes``: all sections (the no-retrieval baseline).
- ``none``: no statutes.

A citation of a unit the statutes lack (the release's s151(d)(5) has no
subparagraph (A)) resolves to its deepest existing ancestor, and this is
recorded. **Tax cases cite no section**; their answer is the tax computed
under §1 and §3301, which draw on every other section, so the citation-based
strategies retrieve all sections for them, exactly as ``all_statutes`` does
(recorded as ``fallback="all_statutes"``). An entailment case whose question
cites nothing resolvable gets the same fallback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from finmath_tasks.tasks.sara.citations import Citation, extract_citations, statute_references
from finmath_tasks.tasks.sara.statutes import StatuteCode, split_sentences

Strategy = Literal["mentioned_only", "entire_section", "references", "all_statutes", "none"]
CITING_STRATEGIES = ("mentioned_only", "entire_section", "references")


@dataclass
class Retrieval:
    strategy: str
    text: str
    units: list[str] = field(default_factory=list)
    """Selected units (their own text is included), in statute order."""
    cited: list[str] = field(default_factory=list)
    """The question's citations, resolved."""
    referenced: list[str] = field(default_factory=list)
    """Units added by ``references`` (resolved)."""
    unresolved: list[str] = field(default_factory=list)
    """Citations naming units the statutes lack (as written, with what they resolved to)."""
    fallback: str | None = None


def resolve_citation(code: StatuteCode, citation: Citation) -> tuple[str | None, bool]:
    """The unit label a citation resolves to (None if its section is not in the release)."""
    statute = code.sections.get(citation.section)
    if statute is None:
        return None, False
    return statute.resolve(citation.path)


def _ordered(code: StatuteCode, labels: set[str]) -> list[str]:
    return [
        label for statute in code.sections.values() for label in statute.units if label in labels
    ]


def _mentioned(code: StatuteCode, label: str) -> set[str]:
    statute = code.statute_of(label)
    return {*statute.ancestors(label), *statute.subtree(label)}


def _entire_section(code: StatuteCode, label: str) -> set[str]:
    statute = code.statute_of(label)
    unit = statute.units[label]
    top = statute.resolve(unit.path[:1])[0]
    return {*statute.ancestors(top), *statute.subtree(top)}


def retrieve(code: StatuteCode, question: str, strategy: str, kind: str) -> Retrieval:
    """The statutes a strategy gives for a case whose question is ``question``."""
    if strategy == "none":
        return Retrieval(strategy, "")
    if strategy == "all_statutes":
        return Retrieval(strategy, code.render(), units=_ordered(code, _all(code)))
    if strategy not in CITING_STRATEGIES:
        raise ValueError(f"unknown retrieval strategy {strategy!r}")
    cited: list[str] = []
    unresolved: list[str] = []
    if kind != "tax":
        for citation in extract_citations(question):
            label, exact = resolve_citation(code, citation)
            if label is None:
                unresolved.append(f"{citation.text} (section not in the statutes)")
                continue
            if not exact:
                unresolved.append(f"{citation.text} -> {label}")
            cited.append(label)
    if not cited:
        return Retrieval(
            strategy,
            code.render(),
            units=_ordered(code, _all(code)),
            unresolved=unresolved,
            fallback="all_statutes",
        )
    selected: set[str] = set()
    for label in cited:
        selected |= (
            _entire_section(code, label)
            if strategy == "entire_section"
            else _mentioned(code, label)
        )
    referenced: list[str] = []
    if strategy == "references":
        added: set[str] = set()
        for label in _ordered(code, selected):
            statute = code.statute_of(label)
            unit = statute.units[label]
            for sentence in unit.sentences:
                for ref in statute_references(sentence, (unit.section, unit.path)):
                    target, exact = resolve_citation(code, ref)
                    if target is None or not exact:
                        note = f"{ref.text} in {label} -> {ref.label} (not in the statutes)"
                        if note not in unresolved:
                            unresolved.append(note)
                        continue
                    if target in added:
                        continue
                    if set(code.statute_of(target).subtree(target)) <= selected:
                        continue  # already retrieved in full
                    added.add(target)
                    referenced.append(target)
        for target in referenced:
            selected |= set(code.statute_of(target).subtree(target))
    units = _ordered(code, selected)
    return Retrieval(
        strategy,
        code.render(units),
        units=units,
        cited=cited,
        referenced=referenced,
        unresolved=unresolved,
    )


def _all(code: StatuteCode) -> set[str]:
    return {label for statute in code.sections.values() for label in statute.units}


def unit_text(code: StatuteCode, label: str) -> list[str]:
    """The sentences of ``label``'s own text (for checks that a context contains a unit)."""
    statute = code.statute_of(label)
    return [
        s
        for line in statute.lines
        if line.unit == label and line.kind == "text"
        for s in split_sentences(line.text)
    ]
