"""``python -m finmath_tasks.cli``: the ``finmath`` command."""

from finmath_tasks.cli.main import entry

entry()
