"""Entry point module for Inspect (``[project.entry-points.inspect_ai]``).

Inspect imports this module in every ``inspect eval``, whatever task is run,
so it only imports the modules that define ``@task``/``@solver``/``@scorer``/
``@sandboxenv`` objects, and those keep heavy imports (sympy, docker, scipy)
inside functions. It has no side effects. One line per benchmark.
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
