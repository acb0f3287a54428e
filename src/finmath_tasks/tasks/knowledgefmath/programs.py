"""How FinanceMath cuts a program out of a model's output.

:func:`extract_program` (ours, the program our stricter reading runs): the
first ```python block, else the first ``` block. Without a complete block,
the output is the continuation of the PoT prompt, which ends inside
``def solution():``: text before a lone closing fence is taken, and the
signature is prepended when the output lacks it.

:func:`reference_program` (the official reading, ``financemath``) follows the
reference's rules of the camera-ready release (yale-nlp/FinanceMath
bdddc58), which differ from ours in a few shapes: an output that mentions
``argparse`` gives no program; with exactly one fence and ``def solution():``
in the text, the WHOLE output is taken (ours: the text before the fence), so a
fence or prose in the middle makes it a syntax error (not executed); and the
cut program loses backticks at both ends. :func:`january_program`
(``knowledgefmath2023``) follows the first release (3166a77), the same rules
without that last trimming of backticks and spaces.

With ``repair`` (``-T program_repair=true``; not in the reference, off by
default), code without ``def solution():`` -- typically a fenced function
body, which the reference's rules turn into an indentation error -- is
dedented and wrapped in the signature instead.
"""

from __future__ import annotations

import re
import textwrap

from finmath_tasks.solvers.pot import fenced_code

ENTRY_POINT = "solution"
SIGNATURE = f"def {ENTRY_POINT}():"
FENCE = "```"
ARGPARSE = "argparse"
INDENT = "    "

_PYTHON_BLOCK = re.compile(r"```python(.*?)```", re.DOTALL)
_ANY_BLOCK = re.compile(r"```(.*?)```", re.DOTALL)


def extract_program(output: str, repair: bool = False) -> str:
    """The program in a model output, by our rules (see the module docstring)."""
    if not output:
        return ""
    code, fenced = fenced_code(output)
    if repair and SIGNATURE not in code:
        body = textwrap.dedent(code).strip("\n")
        return f"{SIGNATURE}\n{textwrap.indent(body, INDENT)}"
    if fenced or SIGNATURE in output:
        return code.strip()
    if code.startswith(INDENT):
        return f"{SIGNATURE}\n{code}".strip()
    return f"{SIGNATURE}\n{INDENT}{code}".strip()


def extract_repaired_program(output: str) -> str:
    return extract_program(output, repair=True)


def _reference_cut(output: str) -> str:
    """The reference's program cut, before its final trimming (both releases)."""
    for pattern in (_PYTHON_BLOCK, _ANY_BLOCK):
        block = pattern.search(output)
        if block:
            return block.group(1).strip("\n")
    if SIGNATURE in output:  # with no fence or one: the whole output, prose included
        return output.strip()
    continued = output.split(FENCE)[0]  # the text before a lone fence, else all of it
    indented = len(output) > len(INDENT) and output.startswith(INDENT)
    return f"{SIGNATURE}\n{continued}" if indented else f"{SIGNATURE}\n{INDENT}{continued}"


def reference_program(output: str) -> str:
    """The program the camera-ready reference (bdddc58) runs for ``output``."""
    if not output or ARGPARSE in output:
        return ""
    return _reference_cut(output).strip("`").strip()


def january_program(output: str) -> str:
    """The program the first release (3166a77, the paper's Tables 4 and 5) runs."""
    if ARGPARSE in output:
        return ""
    return _reference_cut(output)
