"""Inspect tasks for financial and legal numerical reasoning."""

from finmath_tasks._inspect_version import check_inspect

__version__ = "0.1.0"

# before any module imports Inspect: an unsupported release gets one clear message
check_inspect()
