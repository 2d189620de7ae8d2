"""The defaults every `--help` states are the ones the code uses (issue 53 item 4).

Two kinds: an option whose argparse default is the value (the stated one must be that value),
and an option left None on the command line and resolved in the library, whose help names the
library's value in words (`--val-split`'s split sizes, `--seed`'s preset seed, ...): each of
those is read here from the module that decides it. The help texts themselves import no torch
(tests/cli/test_help_imports.py), so where the deciding module imports torch the help writes
the value out and this file keeps the two equal.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
from collections.abc import Iterator

import pytest

from munet.cli import build_parser


def _parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """("run", parser), ("config show", parser), ... for every command, and "" for munet."""

    def walk(parser, prefix):
        yield " ".join(prefix), parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, (*prefix, name))

    seen = set()
    for name, parser in walk(build_parser(), ()):
        if id(parser) not in seen:  # aliases
            seen.add(id(parser))
            yield name, parser


PARSERS = dict(_parsers())


def _option_help(command: str, option: str) -> str:
    """The help of one option as `--help` prints it (%(default)s expanded), on one line."""
    parser = PARSERS[command]
    for action in parser._actions:
        if option in action.option_strings or option == action.dest:
            text = parser._get_formatter()._expand_help(action)
            return " ".join(text.split())
    raise AssertionError(f"munet {command} has no option {option}")


def _stated(value) -> str:
    """A default as the help texts write it."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# `CHOICE (default...`: the choice named before is the default (`table (default: the summary`).
NAMED_CHOICE = re.compile(r"([\w.-]+) \(default\b")
# `(default 8)`, `(default: state, ...)`, `default 1: ...`, `(default: pes,tes)`: the value
# after the word.
STATED_VALUE = re.compile(r"\bdefault:? ([^\s;:()][^\s;:)]*)")


def _stated_argparse_defaults() -> Iterator[tuple[str, str, object, str]]:
    for command, parser in PARSERS.items():
        for action in parser._actions:
            if action.default in (None, argparse.SUPPRESS) or not action.help:
                continue
            text = " ".join(parser._get_formatter()._expand_help(action).split())
            value = STATED_VALUE.search(text)
            stated = value.group(1).rstrip(",") if value else None
            named = NAMED_CHOICE.search(text)
            choices = action.choices or ()
            if named and named.group(1) in choices and stated not in choices:
                stated = named.group(1)
            if stated is not None:
                yield command, action.option_strings[0], action.default, stated


STATED = list(_stated_argparse_defaults())


def test_the_walk_finds_the_stated_defaults():
    # The regular expressions see the helps that state a default (a few of them, by name).
    found = {(command, option) for command, option, _, _ in STATED}
    assert {("run", "-d"), ("report", "--out"), ("search", "--eps"),
            ("export", "--format"), ("pretrain", "--precision")} <= found  # fmt: skip
    assert len(STATED) >= 30


@pytest.mark.parametrize(("command", "option", "default", "stated"), STATED,
                         ids=[f"{c} {o}" for c, o, _, _ in STATED])  # fmt: skip
def test_a_stated_default_is_the_argparse_default(command, option, default, stated):
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        assert float(stated) == float(default), f"munet {command} {option}"
    else:
        assert stated == _stated(default), f"munet {command} {option}"


def test_split_options_state_the_split_rules_sizes():
    from munet.cli.options import OWN_DATA_SIZE, SEED_SHARE
    from munet.tasks.registry import OWN_DATA_SCHEMES, default_split_rule
    from munet.tasks.sources.base import OWN_DATA_SPLIT_RULE
    from munet.tasks.splits import (
        DEFAULT_SHARE,
        OWN_DATA_MAX_SHARE,
        OWN_DATA_MIN_EXAMPLES,
        OWN_DATA_SHARE,
        own_data_split_size,
    )

    assert SEED_SHARE == f"{DEFAULT_SHARE:.0%}"
    assert OWN_DATA_SIZE == (
        f"max({OWN_DATA_SHARE:.0%}, {OWN_DATA_MIN_EXAMPLES} examples), at most "
        f"{OWN_DATA_MAX_SHARE:.0%},"
    )
    # The rule as the help words it, on pools of several sizes.
    for pool in (1_000, 1_500, 2_000, 10_000):
        stated = min(max(round(0.10 * pool), 200), round(0.20 * pool))
        assert own_data_split_size(pool) == stated
    for flag, split in (("--val-split", "validation"), ("--test-split", "test")):
        text = _option_help("run", flag)
        assert f"the data's own {split} split" in text
        assert f"a stratified {OWN_DATA_SIZE} of the pool" in text
        sources = ", ".join(f"{scheme}:" for scheme in OWN_DATA_SCHEMES[:-1])
        assert f"--data {sources} or {OWN_DATA_SCHEMES[-1]}: (the own-data rule)" in text
        assert f"the seed's {SEED_SHARE} slice for munet's tasks and tfds:" in text
        assert text.endswith(f"a stratified {SEED_SHARE})")
    for scheme in OWN_DATA_SCHEMES:
        assert default_split_rule(f"{scheme}:x") == OWN_DATA_SPLIT_RULE
    assert default_split_rule("tfds:cifar10") != OWN_DATA_SPLIT_RULE
    assert default_split_rule("digits") != OWN_DATA_SPLIT_RULE


def test_seed_states_every_presets_seed():
    from munet.config import get_preset, preset_names

    (seed,) = {get_preset(name).seed for name in preset_names()}  # one seed for all presets
    for command in ("root", "run", "demo", "launch", "config show"):
        assert f"default: the preset's, {seed})" in _option_help(command, "--seed")


def test_root_names_the_presets_that_start_from_their_builtin_root():
    from munet.agents.root import default_root_kind
    from munet.config import get_preset, preset_names

    pretrained = [n for n in preset_names() if default_root_kind(get_preset(n)) == "pretrained"]
    text = _option_help("root", "--root")
    stated = re.search(r"the default of ([\w ,]+), which ship one", text)
    assert stated, text
    assert sorted(re.split(r", | and ", stated.group(1))) == sorted(pretrained)


def test_demo_states_the_demos_defaults():
    from munet.agents.demo import run_demo
    from munet.config import DEFAULT_DEMO_CYCLES, DEMO_MULTIPATH_TASKS, DEMO_TASKS

    parameters = inspect.signature(run_demo).parameters
    assert parameters["cycles"].default == DEFAULT_DEMO_CYCLES
    assert parameters["multipath_tasks"].default == DEMO_MULTIPATH_TASKS
    assert tuple(parameters["tasks"].default) == DEMO_TASKS
    assert f"default: {', '.join(DEMO_TASKS)})" in _option_help("demo", "--task")
    assert f"(default {DEFAULT_DEMO_CYCLES})" in _option_help("demo", "--cycles")
    assert f"(default {DEMO_MULTIPATH_TASKS};" in _option_help("demo", "--multipath-tasks")


def test_launch_states_the_resources_and_lease_it_uses():
    from munet.cluster.specs import agent_specs
    from munet.system.lease_claims import DEFAULT_LEASE_TTL, LEASE_TTL_ENV

    spec = agent_specs(["VitCpu"], ["digits"])[0]
    assert f"(default {_stated(spec.num_cpus)})" in _option_help("launch", "--cpus-per-agent")
    assert f"(default {_stated(spec.num_gpus)})" in _option_help("launch", "--gpus-per-agent")
    stated = f"(default: ${LEASE_TTL_ENV} or {_stated(DEFAULT_LEASE_TTL)})"
    assert stated in _option_help("launch", "--lease-ttl")


def test_tasks_show_states_the_sizing_it_uses():
    from munet.cli.tasks import SHOW_DEFAULTS
    from munet.config import get_preset

    seed_ti3 = get_preset("VitT3")  # "the seed's ViT-Ti/3 values"
    for key, value in SHOW_DEFAULTS.items():
        assert getattr(seed_ti3, key) == value
        option = "--" + key.replace("_", "-")
        assert _option_help("tasks show", option) == f"(default: {value})"


def test_benchmark_states_the_plans_defaults():
    from munet.benchmark.plan import DEFAULT_SEEDS, DEFAULT_STEPS, METHODS, PRESET, QUICK_STEPS

    assert f"(default {','.join(map(str, DEFAULT_SEEDS))})" in _option_help("benchmark", "--seeds")
    assert f"(default {DEFAULT_STEPS}; --quick {QUICK_STEPS})" in _option_help(
        "benchmark", "--steps"
    )
    assert f"(default: {','.join(METHODS)})" in _option_help("benchmark", "--methods")
    assert f"(default {PRESET};" in _option_help("benchmark", "--agent")


def test_es_lr_states_its_default_grid():
    from munet.es.experiments import default_lr_grid

    grid = default_lr_grid()
    steps = {round(b - a, 6) for a, b in zip(grid, grid[1:], strict=False)}
    assert len(steps) == 1
    stated = f"(default {grid[0]:g} to {grid[-1]:g} by {steps.pop():g})"
    assert stated in _option_help("es lr", "--grid")


def test_pretrain_states_its_specs_defaults():
    from munet.cli.pretrain import SPEC_OPTIONS
    from munet.pretrain.spec import PretrainSpec

    defaults = {field.name: field.default for field in dataclasses.fields(PretrainSpec)}
    for flag, field, _ in SPEC_OPTIONS:
        value = str(defaults[field])
        text = _option_help("pretrain", flag)
        # `(100)`, `(0: off, the default`, `(0.1, the default`, or `fractal (the default`.
        stated = re.search(rf"\({re.escape(value)}[:,)]", text) or (
            f"{value} (the default" in text
        )
        assert stated, f"munet pretrain {flag}: {text!r} does not state {value}"
