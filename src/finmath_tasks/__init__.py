"""Inspect tasks for financial and legal numerical reasoning."""

__version__ = "0.1.0"
