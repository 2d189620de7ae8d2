"""Type and range rules of every agent config field and of the known hyperparameters.

`check_config(config)` runs when a config is built from a preset, overridden (`--set`) or loaded
from a state, so a nonsense value (`eval_batch_size=-1`, `_mu_=3`, `opt_lr="fast"`) stops the
command before any work with one line naming the field, the value and what is allowed.

Rules are data: `FIELD_RULES` has one per `AgentConfig` / `ScorerConfig` field and
`HPARAM_RULES` one per known hyperparameter (defaults and every value of its mutation range are
checked). A field without a rule (a new one) is checked against the type of its default, and
`tests/test_config.py` fails until it gets a rule; a hyperparameter without a rule must be a
JSON scalar (finite numbers) or a list of them. Defaults must lie in their mutation ranges.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The lr schedules of munet.training.schedules (not imported: the package pulls in torch).
LR_SCHEDULES = ("constant", "linear", "cosine", "restarts")
# The optimizers of munet.training.optim (`OPTIMIZERS`; the first, the seed's, is the default).
OPTIMIZERS = ("sgd", "adamw")
_CLASS_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Rule:
    """What values a field allows.

    Attributes:
        allowed: the human description used in errors (`an int >= 1`).
        check: returns whether a value is allowed.
    """

    allowed: str
    check: Callable[[Any], bool]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def int_at_least(low: int) -> Rule:
    return Rule(f"an int >= {low}", lambda v: _is_int(v) and v >= low)


def number_in(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> Rule:
    left, right = ("(" if low_open else "["), (")" if high_open else "]")
    high_text = "inf" if math.isinf(high) else f"{high:g}"

    def check(v: Any) -> bool:
        if not _is_number(v):
            return False
        above = v > low if low_open else v >= low
        below = v < high if high_open else v <= high
        return above and below

    return Rule(f"a finite number in {left}{low:g}, {high_text}{right}", check)


def one_of(*choices: Any) -> Rule:
    return Rule(f"one of {', '.join(repr(c) for c in choices)}", lambda v: v in choices)


BOOL = Rule("true or false", lambda v: isinstance(v, bool))
STRING = Rule("a string", lambda v: isinstance(v, str))
PROBABILITY = number_in(0.0, 1.0)
POSITIVE = number_in(0.0, math.inf, low_open=True, high_open=True)
NON_NEGATIVE = number_in(0.0, math.inf, high_open=True)
CLASS_NAME = Rule(
    "a non-empty identifier (letters, digits, '_'; it names the agent class)",
    lambda v: isinstance(v, str) and bool(_CLASS_NAME.match(v)),
)
FORCE_MUTATIONS = Rule(
    "a list of 'hp:KEY' or 'clone:COMPONENT' strings",
    lambda v: (
        isinstance(v, list)
        and all(
            isinstance(x, str)
            and x.split(":", 1)[0] in ("hp", "clone")
            and x.count(":") == 1
            and x.split(":", 1)[1]
            for x in v
        )
    ),
)
IMAGE_SIZE = Rule(
    "an int >= 1, or a non-empty list of them",
    lambda v: (
        (_is_int(v) and v >= 1)
        or (isinstance(v, list) and bool(v) and all(_is_int(x) and x >= 1 for x in v))
    ),
)

# One rule per AgentConfig field (`scorer.*`: ScorerConfig). `model`, `hparams_defaults` and
# `hparams_mutation_ranges` get more checks in `check_config`.
FIELD_RULES: dict[str, Rule] = {
    "name": CLASS_NAME,
    "model": STRING,
    "augreg_checkpoint": STRING,
    "checkpoint_path": STRING,
    "batch_size": int_at_least(1),
    "hparams_defaults": Rule("a dict of hparam name -> value", lambda v: isinstance(v, dict)),
    "hparams_mutation_ranges": Rule(
        "a dict of hparam name -> non-empty list of values", lambda v: isinstance(v, dict)
    ),
    "num_train_examples_between_validations_max": int_at_least(1),
    "num_validations_per_path_training": int_at_least(1),
    "num_validation_examples_max": int_at_least(1),
    "num_samples_per_cycle": int_at_least(1),
    "max_task_population_size": int_at_least(1),
    "force_mutations": FORCE_MUTATIONS,
    "scorer": Rule("a scorer config", lambda v: dataclasses.is_dataclass(v)),
    "scorer.scale_factor": number_in(0.0, 1.0, low_open=True),
    "scorer.base_accounted_params": NON_NEGATIVE,
    "scorer.base_flops": NON_NEGATIVE,
    "test_immutability": BOOL,
    "immutability_rtol": NON_NEGATIVE,
    "seed": int_at_least(0),
    "max_devices": int_at_least(0),
    "eval_batch_size": Rule("an int >= 0 (0: the batch size)", lambda v: _is_int(v) and v >= 0),
    "num_threads": Rule("an int >= 0 (0: the usable cores)", lambda v: _is_int(v) and v >= 0),
    "precision": Rule("one of 'fp32', 'bf16', 'auto'", lambda v: v in _precisions()),
    "data": Rule("a data source string ('' for munet's own tasks)", lambda v: isinstance(v, str)),
    "data_split": Rule(
        "'' (the source's default), 'default' (the seed's rule), 'own-data' (stratified "
        "max(10%, 200)), or 'validation=X,test=Y' with X, Y a fraction in (0, 1) or a count "
        "(either part may be left out)",
        lambda v: isinstance(v, str) and _is_split_rule(v),
    ),
    "path_output_cache_mb": Rule("an int >= 0 (MB)", lambda v: _is_int(v) and v >= 0),
    "multipath_random_root": BOOL,
    "rescore_finalists": BOOL,
    "adapter_mutation_probability": number_in(0.0, 1.0),
    "adapter_bottleneck": int_at_least(1),
    "singlepath_agent": Rule(
        "'' (a singlepath agent) or the agent class whose paths a multipath agent combines",
        lambda v: v == "" or (isinstance(v, str) and bool(_CLASS_NAME.match(v))),
    ),
}

def _is_split_rule(rule: str) -> bool:
    from munet.tasks.splits import parse_split_rule

    try:
        parse_split_rule(rule)
    except ValueError:
        return False
    return True


# Known hyperparameters (their defaults and every value of their mutation ranges).
HPARAM_RULES: dict[str, Rule] = {
    "_mu_": PROBABILITY,
    "opt_lr": POSITIVE,
    "opt_lr_schedule": one_of(*LR_SCHEDULES),
    "opt_lr_warmup_ratio": PROBABILITY,
    "opt_momentum": PROBABILITY,
    "opt_nesterov": BOOL,
    # munet's, absent from the seed's presets (their value when absent: OPTIONAL_HPARAMS).
    "opt_optimizer": one_of(*OPTIMIZERS),
    "opt_weight_decay": NON_NEGATIVE,
    "ds_area_range_min": number_in(0.0, 1.0, low_open=True),
    "ds_aspect_ratio_range_min": number_in(0.0, 1.0, low_open=True),
    "ds_flip_left_right": BOOL,
    "ds_brightness_delta": number_in(0.0, 1.0, high_open=True),
    "ds_contrast_delta": number_in(0.0, 1.0, high_open=True),
    "ds_saturation_delta": number_in(0.0, 1.0, high_open=True),
    "ds_hue_delta": number_in(0.0, 1.0, high_open=True),
    "ds_quality_delta": number_in(0.0, 1.0, high_open=True),
    "ds_image_size": IMAGE_SIZE,
    "num_layers": int_at_least(0),
    "num_classes": int_at_least(0),
    # Multipath agents (seed 000, MultiVit*).
    "num_paths": int_at_least(1),
    "router_lr_mult": POSITIVE,
    "router_init_main_path_weight": PROBABILITY,
}
# Known hparams a config may lack, with the value munet uses for a path without them (the
# seed's behaviour); `--set` may add them to a config (munet.config.overrides).
OPTIONAL_HPARAMS: dict[str, Any] = {"opt_optimizer": OPTIMIZERS[0], "opt_weight_decay": 0.05}
# Self-tuned mutation probabilities stored in hparams (`_mu_|hp:opt_lr`).
MU_PREFIX = "_mu_|"
_PLAIN_VALUE = Rule(
    "a string, bool, finite number or null, or a list of them",
    lambda v: _plain(v) or (isinstance(v, list) and all(_plain(x) for x in v)),
)


def _precisions() -> tuple[str, ...]:
    from munet.config import PRECISIONS

    return tuple(PRECISIONS)


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (str, bool)) or _is_number(value)


def _fail(name: str, value: Any, allowed: str) -> None:
    from munet.config import ConfigError

    raise ConfigError(f"{name}={value!r:.200}: expected {allowed}")


def hparam_rule(key: str) -> Rule:
    """The rule of a hyperparameter (a generic one for unknown keys)."""
    if key.startswith(MU_PREFIX):
        return PROBABILITY
    return HPARAM_RULES.get(key, _PLAIN_VALUE)


def _type_rule(default: Any) -> Rule | None:
    """The fallback rule of a field without one: the type of its default."""
    if isinstance(default, bool):
        return BOOL
    if _is_int(default):
        return Rule("an int", _is_int)
    if isinstance(default, float):
        return Rule("a finite number", _is_number)
    if isinstance(default, str):
        return STRING
    return None


def field_rule(config: Any, name: str, prefix: str = "") -> Rule | None:
    """The rule of a (dataclass) config field: its own, else the type of its default."""
    rule = FIELD_RULES.get(prefix + name)
    if rule is not None:
        return rule
    value_field = {f.name: f for f in dataclasses.fields(config)}[name]
    if value_field.default is not dataclasses.MISSING:
        return _type_rule(value_field.default)
    if value_field.default_factory is not dataclasses.MISSING:
        return _type_rule(value_field.default_factory())
    return None


def check_fields(config: Any, prefix: str = "") -> None:
    """Check every field of a config dataclass (recursing into nested dataclasses)."""
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        rule = field_rule(config, f.name, prefix)
        if rule is not None and not rule.check(value):
            _fail(prefix + f.name, value, rule.allowed)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            check_fields(value, prefix=f"{prefix}{f.name}.")


def check_hparams(defaults: dict[str, Any], ranges: dict[str, Any]) -> None:
    """Check hparam defaults and mutation ranges: types, ranges, defaults inside ranges."""
    for key, value in defaults.items():
        if not isinstance(key, str) or not key:
            _fail("hparams_defaults key", key, "a non-empty string")
        rule = hparam_rule(key)
        if not rule.check(value):
            _fail(f"hparams_defaults.{key}", value, rule.allowed)
    for key, values in ranges.items():
        name = f"hparams_mutation_ranges.{key}"
        if not isinstance(values, list) or not values:
            _fail(name, values, "a non-empty list of values")
        if key not in defaults:
            from munet.config import ConfigError

            raise ConfigError(f"{name} has no default in hparams_defaults")
        rule = hparam_rule(key)
        for value in values:
            if not rule.check(value):
                _fail(f"{name} entry", value, rule.allowed)
        if defaults[key] not in values:
            from munet.config import ConfigError

            raise ConfigError(
                f"hparams_defaults.{key}={defaults[key]!r} is not in its mutation range {values}"
            )


def check_config(config: Any) -> None:
    """Check every field of an AgentConfig (see the module docstring).

    Raises:
        ConfigError: naming the first bad field, its value and what is allowed.
    """
    check_fields(config)
    check_hparams(config.hparams_defaults, config.hparams_mutation_ranges)
