"""Text from logs and arguments as literal Markdown: ``report.md`` is pasted into pull
requests and wikis, where raw HTML and Markdown in a model name, a task argument, a model
role or an alias would render (a ``<script>``, an ``<img src=...>``, a link, a table cell
cut by ``|``, a code span opened by a backtick). ``report.html`` escapes the same text
with :func:`html.escape`.

What is escaped: HTML (``<``, ``>`` and an ``&`` opening an entity, as entities, which
Markdown shows as the characters), the backslash, backticks, ``|``, the openings of images and links (``![``,
``](``, ``]:``) and a ``#`` opening a line; a line break becomes a space. Emphasis marks
(``*``, ``_``) are left: they can only change how text looks, and they occur in real values
(``rag_cot``; a published cell's ``*`` marker)."""

from __future__ import annotations

import re

_ESCAPES = str.maketrans(
    {
        "<": "&lt;",
        ">": "&gt;",
        "\\": "\\\\",
        "`": "\\`",
        "|": "\\|",
        "\r": " ",
        "\n": " ",
    }
)


_ENTITY = re.compile(r"&(?=#?[0-9A-Za-z]+;)")
"""An ``&`` that opens an entity (``&lt;``, ``&#60;``): a bare ``&`` shows as itself."""


def md_text(text: object) -> str:
    """``text`` on one line, shown as it is by any Markdown renderer (no HTML, no link,
    no image, no code span, no table cell boundary, no heading)."""
    out = _ENTITY.sub("&amp;", str(text)).translate(_ESCAPES)
    out = out.replace("![", "!\\[").replace("](", "]\\(").replace("]:", "]\\:")
    if out.startswith("#"):
        out = "\\" + out
    return out


def md_code(text: object) -> str:
    """``text`` as a Markdown code span (a path, a command): fenced with more backticks
    than any run of them inside, on one line. Nothing inside a code span renders."""
    flat = " ".join(str(text).splitlines())
    longest = run = 0
    for char in flat:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]")


def file_name(*parts: object, suffix: str = ".png") -> str:
    """A file name for ``--out`` made of names from logs (a task, a score, a benchmark):
    every character but ``A-Za-z0-9._=-`` becomes ``_`` and a leading dot ``_``, so that
    a score named ``a/b`` or ``../x`` names a file inside the folder, never another
    folder or a hidden file."""
    stem = _UNSAFE.sub("_", "_".join(str(p) for p in parts)) or "_"
    if stem.startswith("."):
        stem = "_" + stem[1:]
    return stem + suffix
