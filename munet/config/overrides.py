"""`--set key=value` overrides: parse a value by the type of the value it replaces, then set it
(dotted keys reach into hparams and nested dicts)."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from munet.config.fields import AgentConfig, ConfigError, ScorerConfig
from munet.config.rules import OPTIONAL_HPARAMS
from munet.hints import did_you_mean


def _parse_bool(text: str, key: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"--set {key}={text!r}: expected a boolean (true/false)")


def parse_value(text: str, current: Any, key: str) -> Any:
    """Parses ``text`` to the type of ``current`` (the value it replaces).

    Lists are JSON (``[0.1, 0.2]``); ``None`` current values accept JSON or a plain string.

    Raises:
        ConfigError: the text does not parse to that type.
    """
    try:
        if isinstance(current, bool):
            return _parse_bool(text, key)
        if isinstance(current, int):
            return int(text)
        if isinstance(current, float):
            return float(text)
        if isinstance(current, str):
            return text
        if isinstance(current, list):
            value = json.loads(text)
            if not isinstance(value, list):
                raise ValueError("not a list")
            return value
    except ValueError as err:
        kind = type(current).__name__
        raise ConfigError(f"--set {key}={text!r}: expected a {kind} ({err})") from None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _all_keys(config: AgentConfig) -> list[str]:
    # The keys --set takes: the tables (scorer, hparams) only key by key.
    tables = ("scorer", "hparams_defaults", "hparams_mutation_ranges")
    keys = [f.name for f in dataclasses.fields(config) if f.name not in tables]
    keys += [f"scorer.{f.name}" for f in dataclasses.fields(config.scorer)]
    keys += [f"hparams_defaults.{k}" for k in config.hparams_defaults]
    keys += [f"hparams_mutation_ranges.{k}" for k in config.hparams_mutation_ranges]
    keys += list(config.hparams_defaults)  # Shorthand: `opt_lr` for `hparams_defaults.opt_lr`.
    keys += [k for k in OPTIONAL_HPARAMS if k not in config.hparams_defaults]
    return keys


def apply_overrides(config: AgentConfig, overrides: Iterable[str]) -> AgentConfig:
    """Returns a copy of ``config`` with ``key=value`` overrides applied and validated.

    Keys are field names (``batch_size``), dotted (``scorer.scale_factor``,
    ``hparams_defaults.opt_lr``, ``hparams_mutation_ranges.opt_lr``) or a bare hparam name as
    shorthand for its default (``opt_lr=0.05``). Values are parsed to the type of the value
    they replace. The known hparams a config may lack (``OPTIONAL_HPARAMS``: ``opt_optimizer``,
    ``opt_weight_decay``) can be added the same ways, typed by their value when absent (a
    mutation range: a JSON list).

    Raises:
        ConfigError: malformed item, unknown key (with close matches), unparsable value, or an
            inconsistent result (e.g. a default outside its mutation range).
    """
    config = copy.deepcopy(config)
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        _set_key(config, key, text)
    return config.validate()


def _set_key(config: AgentConfig, key: str, text: str) -> None:
    head, dot, rest = key.partition(".")
    field_names = {f.name for f in dataclasses.fields(config)}
    if dot and head == "scorer" and rest in {f.name for f in dataclasses.fields(ScorerConfig)}:
        current = getattr(config.scorer, rest)
        value = float(parse_value(text, float(current), key))
        setattr(config.scorer, rest, value)
        return
    if dot and head in ("hparams_defaults", "hparams_mutation_ranges"):
        table = getattr(config, head)
        if rest in table:
            table[rest] = parse_value(text, table[rest], key)
            return
        if rest in OPTIONAL_HPARAMS:  # A known hparam the config lacks (opt_optimizer).
            current = OPTIONAL_HPARAMS[rest] if head == "hparams_defaults" else []
            table[rest] = parse_value(text, current, key)
            return
    if (
        not dot
        and key in field_names
        and key
        not in (
            "scorer",
            "hparams_defaults",
            "hparams_mutation_ranges",
        )
    ):
        setattr(config, key, parse_value(text, getattr(config, key), key))
        return
    if not dot and (key in config.hparams_defaults or key in OPTIONAL_HPARAMS):
        current = config.hparams_defaults.get(key, OPTIONAL_HPARAMS.get(key))
        config.hparams_defaults[key] = parse_value(text, current, key)
        return
    # The ~90 known keys would bury the hint on one line: the nearest three, and where to see
    # them all.
    raise ConfigError(
        f"unknown config key {key!r}{did_you_mean(key, _all_keys(config))}; "
        f"`munet config show --agent {config.name}` shows the config, every key with its value"
    )
