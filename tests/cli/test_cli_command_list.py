"""The command list at the top of ``cli/main.py`` names every command the parser has, and
every grid flag (the module's docstring is the reference a reader opens first)."""

from __future__ import annotations

import argparse

from finmath_tasks.cli import main


def test_the_docstring_lists_every_command_and_grid_flag() -> None:
    parser = main._parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    doc = main.__doc__ or ""
    for name, command in sub.choices.items():
        if name in main.declarations():  # a benchmark's own commands: `finmath <benchmark>`
            continue
        assert f"finmath {name}" in doc, f"`finmath {name}` is missing from cli/main.py's list"
        assert f"``{name}``" in doc.split("\n\n")[0], name
        if name == "grid":
            flags = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
            missing = [f for f in flags if f not in doc and f != "--help"]
            assert not missing, missing
