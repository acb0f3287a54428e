"""MathHay's additions to the shared error classes (:mod:`finmath_tasks.scorers.error_classes`).

The paper's verdict (``mathhay``) is exact match OR the judge's "Yes"; the classes say
where the two disagree and why the judge gave no verdict:

``judge_accepted`` (``exact_match`` only)
    Not an exact match, but the judge said the solutions are equivalent (the paper's
    verdict counts it correct).
``judge_failed`` (``mathhay`` only)
    Not an exact match and the judge's reply could not be read, or its call failed
    (counted "not Yes", as in the reference).

Otherwise: a prompt over the context budget is ``no_answer:over_budget``; a reply
without a JSON answer, or an ``answer`` field that is not a number (for ``mathhay`` and
``exact_match``), ``no_answer:<reason>``; a number ``scale``/``sign`` (accepted by the
key's own check after rescaling or negating: ``math.isclose`` at 1e-9, or ``tolerant``),
``within_1pct``, ``within_10pct`` or ``wrong`` (the shared distances).
"""

from __future__ import annotations

JUDGE_ACCEPTED = "judge_accepted"
JUDGE_FAILED = "judge_failed"
CLASSES = (JUDGE_ACCEPTED, JUDGE_FAILED)
