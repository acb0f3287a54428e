"""Citations of statute units: in a case's question, and inside the statutes.

Question citations are absolute: "Section 7703(a)(1)", "section 151(d)(3)(B)",
"§152(c)", "§ 63". References inside the statutes may also be relative to the
unit that contains them ("subsection (a)" is in the same section, "paragraph
(2)" in the same subsection, "subparagraph (A)" in the same paragraph, "clause
(i)" in the same subparagraph), or qualified ("subparagraph (H) of section
152(d)(2)", "paragraph (2) of subsection (c)"). References to "this section"/"this paragraph" name the unit
itself and are not references; sections outside the release (the Immigration
and Nationality Act's "sections 214(c) and 101(a)(15)(H)") are dropped when
resolved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ENUMS = r"(?:\s?\([A-Za-z0-9]+\))*"
_QUESTION_RE = re.compile(
    rf"(?:\b[Ss]ections?|\bSECTION|§§?|\b[Ss]ec\.)\s*(?P<section>\d+[A-Za-z]?)(?P<path>{_ENUMS})"
)
_ENUM_RE = re.compile(r"\(([A-Za-z0-9]+)\)")

# Depth of the unit a relative reference's first enumerator names
# (1 = subsection of the section, 2 = paragraph, 3 = subparagraph, 4 = clause).
_RELATIVE_DEPTH = {"subsection": 1, "paragraph": 2, "subparagraph": 3, "clause": 4, "subclause": 5}

_QUALIFIED_RE = re.compile(
    r"\b(?P<kind>subsection|paragraph|subparagraph|clause|subclause)s?\s+"
    rf"(?P<inner>\([A-Za-z0-9]+\){_ENUMS})\s+of\s+"
    rf"(?:section\s+(?P<section>\d+[A-Za-z]?)(?P<path>{_ENUMS})"
    rf"|(?P<outer_kind>subsection|paragraph|subparagraph|clause)\s+(?P<outer>\([A-Za-z0-9]+\){_ENUMS}))",
    re.IGNORECASE,
)
_ABSOLUTE_RE = re.compile(
    rf"\bsections?\s+(?P<section>\d+[A-Za-z]?)(?P<path>{_ENUMS})"
    rf"(?P<more>(?:\s*(?:,|or|and)\s*(?:section\s+)?\d+[A-Za-z]?{_ENUMS})*)",
    re.IGNORECASE,
)
_RELATIVE_RE = re.compile(
    r"\b(?P<kind>subsection|paragraph|subparagraph|clause|subclause)s?\s+"
    rf"(?P<first>\([A-Za-z0-9]+\){_ENUMS})"
    rf"(?P<more>(?:\s*(?:,|or|and)\s*\([A-Za-z0-9]+\){_ENUMS})*)",
    re.IGNORECASE,
)
_LIST_ITEM_RE = re.compile(rf"\([A-Za-z0-9]+\){_ENUMS}")
_LIST_SECTION_RE = re.compile(rf"(?P<section>\d+[A-Za-z]?)(?P<path>{_ENUMS})")


@dataclass(frozen=True)
class Citation:
    section: str
    path: tuple[str, ...]
    text: str = ""
    """The citation as written (empty for a reference built from a relative one)."""

    @property
    def label(self) -> str:
        return f"s{self.section}" + "".join(f"({p})" for p in self.path)


def _path(enums: str) -> tuple[str, ...]:
    return tuple(_ENUM_RE.findall(enums))


def extract_citations(text: str) -> list[Citation]:
    """Absolute citations of statute units in ``text`` (a case's question), in order."""
    return [
        Citation(m.group("section"), _path(m.group("path")), m.group(0).strip())
        for m in _QUESTION_RE.finditer(text)
    ]


def statute_references(text: str, where: tuple[str, tuple[str, ...]]) -> list[Citation]:
    """The units ``text`` refers to, read from inside unit ``where`` = (section, path).

    Relative references are completed from ``where``: "paragraph (2)" inside
    s151(d)(3)(B) is s151(d)(2). A relative reference deeper than ``where``
    allows is completed as far as ``where`` goes.
    """
    section, path = where
    found: list[tuple[int, Citation]] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    for m in _QUALIFIED_RE.finditer(text):
        inner = _path(m.group("inner"))
        if m.group("section"):
            target = Citation(m.group("section"), _path(m.group("path")) + inner, m.group(0))
        else:  # "paragraph (2) of subsection (c)": the outer unit is relative to ``where``
            depth = _RELATIVE_DEPTH[m.group("outer_kind").lower()]
            outer = path[: depth - 1] + _path(m.group("outer"))
            target = Citation(section, outer + inner, m.group(0))
        found.append((m.start(), target))
        taken.append(m.span())
    for m in _ABSOLUTE_RE.finditer(text):
        if not free(*m.span()):
            continue
        taken.append(m.span())
        found.append((m.start(), Citation(m.group("section"), _path(m.group("path")), m.group(0))))
        for item in _LIST_SECTION_RE.finditer(m.group("more")):
            found.append(
                (
                    m.start(),
                    Citation(item.group("section"), _path(item.group("path")), item.group(0)),
                )
            )
    for m in _RELATIVE_RE.finditer(text):
        if not free(*m.span()):
            continue
        taken.append(m.span())
        depth = _RELATIVE_DEPTH[m.group("kind").lower()]
        prefix = path[: depth - 1]
        items = [m.group("first"), *_LIST_ITEM_RE.findall(m.group("more"))]
        for item in items:
            found.append((m.start(), Citation(section, prefix + _path(item), m.group(0))))
    return [c for _, c in sorted(found, key=lambda pair: pair[0])]
