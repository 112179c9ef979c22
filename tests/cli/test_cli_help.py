"""Every subcommand's --help: a description, an example, and the default of each option."""

from __future__ import annotations

import argparse

import pytest
from pybmq.cli.main import build_parser


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_help_has_description_example_and_defaults(name: str) -> None:
    sub = subcommands()[name]
    assert sub.description, f"{name}: no description"
    assert "example:" in sub.format_help(), f"{name}: no example"
    assert "``" not in sub.format_help(), f"{name}: raw markup in the help"
    for action in sub._actions:
        quiet_default = (
            action.default in (None, False, 0, argparse.SUPPRESS) or not action.option_strings
        )
        if quiet_default or isinstance(action, argparse._HelpAction):
            continue
        assert (
            action.help and "default" in action.help
        ), f"{name} {action.option_strings}: no default"
