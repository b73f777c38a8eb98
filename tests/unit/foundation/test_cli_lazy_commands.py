"""`mnemo COMMAND` imports only the module that registers COMMAND, and the map saying which module
that is stays equal to what the modules register."""

from __future__ import annotations

import argparse
import importlib

from mnemo_cli.main import COMMAND_MODULE_OF, COMMAND_MODULES, build_parser


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def test_every_command_maps_to_the_module_that_registers_it() -> None:
    registered: dict[str, str] = {}
    for name in COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        importlib.import_module(f"mnemo_cli.commands.{name}").register(parser.add_subparsers())
        registered.update(dict.fromkeys(_commands(parser), name))
    assert registered == COMMAND_MODULE_OF


def test_a_known_command_builds_only_its_module_and_anything_else_builds_all() -> None:
    assert _commands(build_parser("retrieve")) == {"navigate", "retrieve"}
    assert _commands(build_parser("token")) == {"token"}
    everything = set(COMMAND_MODULE_OF)
    assert _commands(build_parser(None)) == everything
    assert _commands(build_parser("--help")) == everything
    assert _commands(build_parser("no-such-command")) == everything
