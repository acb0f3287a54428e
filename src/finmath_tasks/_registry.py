"""Entry point module for Inspect (``[project.entry-points.inspect_ai]``).

Inspect imports this module in every ``inspect eval``, whatever task is run,
so it only imports the modules that define ``@task``/``@solver``/``@scorer``/
``@sandboxenv`` objects, and those keep heavy imports (sympy, docker, scipy)
inside functions.
"""

# ruff: noqa: F401

from finmath_tasks._offline import ensure_tiktoken_encodings

ensure_tiktoken_encodings()

from finmath_tasks.sandbox.bwrap import FinmathBwrapSandboxEnvironment  # noqa: E402
from finmath_tasks.sandbox.docker import FinmathDockerSandboxEnvironment  # noqa: E402
from finmath_tasks.scorers.numeric import numeric_answer  # noqa: E402
from finmath_tasks.solvers.cot import cot  # noqa: E402
from finmath_tasks.solvers.oracle import oracle  # noqa: E402
from finmath_tasks.solvers.pot import oracle_pot, pot  # noqa: E402
from finmath_tasks.tasks.knowledgefmath import knowledgefmath  # noqa: E402
