"""How FinanceMath cuts a program out of a model's output (the reference's rules).

The first ```python block, else the first ``` block. Without a complete block,
the output is the continuation of the PoT prompt, which ends inside
``def solution():``: text before a lone closing fence is taken, and the
signature is prepended when the output lacks it.

With ``repair`` (``-T program_repair=true``; not in the reference, off by
default), code without ``def solution():`` -- typically a fenced function
body, which the reference's rules turn into an indentation error -- is
dedented and wrapped in the signature instead.
"""

from __future__ import annotations

import textwrap

from finmath_tasks.solvers.pot import fenced_code

ENTRY_POINT = "solution"
SIGNATURE = f"def {ENTRY_POINT}():"


def extract_program(output: str, repair: bool = False) -> str:
    """The program in a model output, by the reference's rules (see the module docstring)."""
    if not output:
        return ""
    code, fenced = fenced_code(output)
    if repair and SIGNATURE not in code:
        body = textwrap.dedent(code).strip("\n")
        return f"{SIGNATURE}\n{textwrap.indent(body, '    ')}"
    if fenced or SIGNATURE in output:
        return code.strip()
    if code.startswith("    "):
        return f"{SIGNATURE}\n{code}".strip()
    return f"{SIGNATURE}\n    {code}".strip()


def extract_repaired_program(output: str) -> str:
    return extract_program(output, repair=True)
