"""SARA statutes as trees of labelled units, and their rendering as prompt context.

A statute file of the SARA v1 release (``statutes/source/sectionN``) is plain
text: a title line ``§7703. Determination of marital status``, then
enumerated units indented by four spaces per level. A unit's label is its
section and the path of enumerators down to it: ``s7703``, ``s7703(a)``,
``s7703(a)(1)``. Enumerator styles present in the nine sections: (a), (1), (A),
(i) and (I); two styles may be siblings (``3306(c)`` lists (A), (B), then
(1), (2), ...), so a label is built from the enumerators as written, never
from a style hierarchy.

How a line is read:

- An enumerated line ``(x) ...`` opens a unit under the innermost open unit
  whose enumerator is less indented. Its text is a *heading* ("(a) General
  rule", "(1) In general") when the unit's body follows on its own lines (the
  next line is unenumerated text at the same indentation, or anything more
  indented), the text starts with a capital letter and does not end like a
  clause (``-``, ``,``, ``;``, ``:``, ``.``, "and", "or"); otherwise it is the unit's own text ("(1) the
  determination of whether an individual is married ...").
- An unenumerated line belongs to the innermost open unit whose body sits at
  that indentation. So text that continues after a list belongs to the
  list's parent ("such individual shall not be considered as married." after
  7703(b)(1)-(3) belongs to s7703(b)), and a definition spread over several
  paragraphs stays with its unit.
- Every body line is split into sentences; each sentence belongs to the unit
  that owns its line, the most specific unit containing it.

Rendering keeps the hierarchy: the section title, the headings of every
ancestor of a retrieved unit, then the retrieved text, in statute order and
indented as in the source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

INDENT = 4
"""Spaces per level in the source files (and in rendered context)."""

_TITLE_RE = re.compile(r"^§\s*(?P<number>\d+[A-Za-z]?)\.\s*(?P<title>.+)$")
_ENUM_RE = re.compile(r"^\((?P<enum>\d+[A-Za-z]?|[a-z]{1,5}|[A-Z]{1,5})\)\s*(?P<rest>.*)$")
_SENTENCE_END_RE = re.compile(r'(?<=[.])["\']?\s+(?=["(]?[A-Z])')
_CLAUSE_END_RE = re.compile(r"(?:[-,;:.\u2014]|\band|\bor)$")

LineKind = Literal["title", "heading", "text"]


class StatuteError(ValueError):
    """A statute file that cannot be parsed; the message names the file and line."""


@dataclass(frozen=True)
class Line:
    """One non-blank line of a statute, as rendered: which unit owns it and how."""

    number: int
    """1-based line number in the source file."""
    level: int
    """Indentation level (source spaces // 4)."""
    text: str
    """The line without its indentation (enumerator included)."""
    unit: str
    kind: LineKind


@dataclass
class Unit:
    """A labelled unit of a section: the section itself, a subsection, a paragraph, ..."""

    label: str
    """``s7703(a)(1)``"""
    section: str
    path: tuple[str, ...]
    """Enumerators from the section down: ``("a", "1")``."""
    heading: str | None
    parent: str | None
    children: list[str] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    """The unit's own sentences (not its sub-units'), in order."""

    @property
    def depth(self) -> int:
        return len(self.path)


def unit_label(section: str, path: Iterable[str] = ()) -> str:
    return f"s{section}" + "".join(f"({p})" for p in path)


def split_sentences(text: str) -> list[str]:
    """Sentences of one statute line: split after a full stop followed by a capital."""
    return [s.strip() for s in _SENTENCE_END_RE.split(text) if s.strip()]


@dataclass
class Statute:
    """One section: its units (in statute order) and its lines."""

    section: str
    title: str
    units: dict[str, Unit]
    lines: list[Line]
    source: str = ""

    @property
    def root(self) -> Unit:
        return self.units[unit_label(self.section)]

    def ancestors(self, label: str) -> list[str]:
        """Labels from the section down to ``label``'s parent."""
        chain: list[str] = []
        parent = self.units[label].parent
        while parent is not None:
            chain.append(parent)
            parent = self.units[parent].parent
        return chain[::-1]

    def subtree(self, label: str) -> list[str]:
        """``label`` and every unit below it, in statute order."""
        out = [label]
        for child in self.units[label].children:
            out.extend(self.subtree(child))
        return out

    def resolve(self, path: Iterable[str]) -> tuple[str, bool]:
        """The deepest existing unit along ``path`` and whether all of it exists."""
        label = unit_label(self.section)
        walked: list[str] = []
        for enum in path:
            candidate = unit_label(self.section, [*walked, enum])
            if candidate not in self.units:
                return label, False
            walked.append(enum)
            label = candidate
        return label, True

    def sentences(self) -> Iterator[tuple[str, str]]:
        """(unit label, sentence) for every sentence of the section, in order."""
        for line in self.lines:
            if line.kind == "text":
                for sentence in split_sentences(_line_body(line.text)):
                    yield line.unit, sentence

    def render(self, selected: Iterable[str] | None = None) -> str:
        """The section's text for the ``selected`` units (all when None).

        A selected unit contributes its own lines; every ancestor of a selected
        unit contributes its heading line (the section title always comes
        first). Lines keep their source order and indentation.
        """
        chosen = set(self.units) if selected is None else set(selected)
        unknown = chosen - set(self.units)
        if unknown:
            raise KeyError(f"{self.source or self.section}: no units {sorted(unknown)}")
        headed = {a for label in chosen for a in self.ancestors(label)} | {self.root.label}
        out: list[str] = []
        for line in self.lines:
            if line.unit in chosen or (line.kind != "text" and line.unit in headed):
                out.append(" " * (INDENT * line.level) + line.text)
        return "\n\n".join(out)


def _line_body(text: str) -> str:
    """A line's text without a leading enumerator."""
    m = _ENUM_RE.match(text)
    return m.group("rest") if m else text


def _is_heading(rest: str, level: int, following: tuple[int, str] | None) -> bool:
    if not rest:
        return True
    if following is None or not rest[0].isupper() or _CLAUSE_END_RE.search(rest.rstrip()):
        return False
    next_level, next_text = following
    return next_level > level or (next_level == level and not _ENUM_RE.match(next_text))


def parse_statute(text: str, source: str = "<statute>") -> Statute:
    """Parse one section's text into a :class:`Statute`; errors name ``source`` and the line."""
    raw = [
        (n, line.expandtabs(INDENT).rstrip())
        for n, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]
    if not raw:
        raise StatuteError(f"{source}: empty statute file")
    first_no, first = raw[0]
    title_match = _TITLE_RE.match(first.strip())
    if not title_match:
        raise StatuteError(
            f"{source}: line {first_no}: expected a title line like '§7703. Title', got {first!r}"
        )
    section, title = title_match.group("number"), title_match.group("title").strip()
    root = Unit(unit_label(section), section, (), title, None)
    units = {root.label: root}
    lines = [Line(first_no, 0, first.strip(), root.label, "title")]
    # open units: (unit, level of its enumerator, level of its body)
    stack: list[tuple[Unit, int, int]] = [(root, -1, 0)]
    parsed = []
    for number, line in raw[1:]:
        spaces = len(line) - len(line.lstrip(" "))
        if spaces % INDENT:
            raise StatuteError(
                f"{source}: line {number}: indentation of {spaces} spaces is not a multiple "
                f"of {INDENT}"
            )
        parsed.append((number, spaces // INDENT, line.strip()))
    for i, (number, level, body) in enumerate(parsed):
        following = (parsed[i + 1][1], parsed[i + 1][2]) if i + 1 < len(parsed) else None
        m = _ENUM_RE.match(body)
        if m:
            while stack[-1][1] >= level:
                stack.pop()
            parent = stack[-1][0]
            enum, rest = m.group("enum"), m.group("rest").strip()
            label = unit_label(section, [*parent.path, enum])
            if label in units:
                raise StatuteError(f"{source}: line {number}: unit {label} appears twice")
            heading = _is_heading(rest, level, following)
            unit = Unit(
                label,
                section,
                (*parent.path, enum),
                (rest or None) if heading else None,
                parent.label,
            )
            units[label] = unit
            parent.children.append(label)
            stack.append((unit, level, level))
            if heading:
                lines.append(Line(number, level, body, label, "heading"))
            else:
                lines.append(Line(number, level, body, label, "text"))
                unit.sentences.extend(split_sentences(rest))
        else:
            while len(stack) > 1 and stack[-1][2] > level:
                stack.pop()
            owner = stack[-1][0]
            lines.append(Line(number, level, body, owner.label, "text"))
            owner.sentences.extend(split_sentences(body))
    return Statute(section, title, units, lines, source)


def _section_key(number: str) -> tuple[int, str]:
    digits = re.match(r"\d+", number)
    return (int(digits.group(0)) if digits else 0, number)


@dataclass
class StatuteCode:
    """All sections of a release, by section number, in numeric order."""

    sections: dict[str, Statute]

    def __post_init__(self) -> None:
        self.sections = dict(sorted(self.sections.items(), key=lambda kv: _section_key(kv[0])))

    def statute_of(self, label: str) -> Statute:
        m = re.match(r"^s(\d+[A-Za-z]?)", label)
        if not m or m.group(1) not in self.sections:
            raise KeyError(f"no section for unit {label!r}")
        return self.sections[m.group(1)]

    def has_unit(self, label: str) -> bool:
        try:
            return label in self.statute_of(label).units
        except KeyError:
            return False

    def render(self, selected: Iterable[str] | None = None) -> str:
        """Every section holding a selected unit (all sections when None), in order."""
        if selected is None:
            return "\n\n".join(s.render() for s in self.sections.values())
        by_section: dict[str, list[str]] = {}
        for label in selected:
            by_section.setdefault(self.statute_of(label).section, []).append(label)
        return "\n\n".join(
            statute.render(by_section[number])
            for number, statute in self.sections.items()
            if number in by_section
        )


def load_statutes(directory: Path) -> StatuteCode:
    """Parse every ``section*`` file of ``directory`` (the release's ``statutes/source``)."""
    files = sorted(p for p in directory.glob("section*") if p.is_file())
    if not files:
        raise StatuteError(f"{directory}: no section files (expected statutes/source/sectionN)")
    sections: dict[str, Statute] = {}
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise StatuteError(f"{path}: cannot read ({e})") from e
        statute = parse_statute(text, str(path))
        expected = path.name.removeprefix("section")
        if statute.section != expected:
            raise StatuteError(
                f"{path}: the title names section {statute.section}, the file name {expected}"
            )
        sections[statute.section] = statute
    return StatuteCode(sections)
