"""Entry point module for Inspect (``[project.entry-points.inspect_ai]``).

Inspect imports this module in every ``inspect eval``, whatever task is run,
so it only imports the modules that define ``@task``/``@solver``/``@scorer``/
``@sandboxenv`` objects, and those keep heavy imports (sympy, docker, scipy)
inside functions. One line per benchmark.

Importing it registers what those decorators register (our tasks, solvers, scorers and
sandbox types, under ``finmath_tasks/<name>``) and, through
``_inspect_private.register_scorer_name``, each scorer key once more under its bare
name: Inspect records a scorer in the log by its unqualified name and ``inspect score``
looks only that name up, so without the bare entry a log could not be re-scored. Where
the bare name is also Inspect's own scorer (``exact``, ``f1``), Inspect's is built
unless the call gives our ``task`` argument. Should a later Inspect drop the private
name this needs, ``inspect score LOG --scorer finmath_tasks/<key> -S task=<task>`` is
the form that still works. Nothing else happens at import: no file, network or sandbox.
"""

# ruff: noqa: F401

from finmath_tasks.sandbox.bwrap import FinmathBwrapSandboxEnvironment
from finmath_tasks.sandbox.docker import FinmathDockerSandboxEnvironment
from finmath_tasks.sandbox.resolve import UnavailableSandboxEnvironment
from finmath_tasks.scorers.numeric import numeric_answer
from finmath_tasks.solvers.cot import cot
from finmath_tasks.solvers.oracle import oracle, oracle_program
from finmath_tasks.solvers.pot import execute_program, pot
from finmath_tasks.tasks.finqa import finqa
from finmath_tasks.tasks.knowledgefmath import knowledgefmath
from finmath_tasks.tasks.mathhay import mathhay
from finmath_tasks.tasks.sara import sara
from finmath_tasks.tasks.tatqa import tatqa
