"""Agent configs: typed dataclasses, named presets with the seed's values, dotted overrides.

A preset is a function returning a fresh :class:`AgentConfig`; its docstring says what it is for
and how to run it. The preset's name is also the agent's class name in its id
(``VitT3~digits``). Every value can be overridden from the command line with
``--set key=value`` (see :func:`apply_overrides`) and the full config is saved as JSON with every
committed state (:meth:`AgentConfig.to_json`).

Values of ``Vit``, ``VitB`` and ``VitT3`` are those of the µNet notebook (seed 000:
``get_common_config_vit``, ``get_config_vit_large``, ``get_config_vit_base``,
``get_config_vit_ti3``) and pinned by ``tests/test_config.py``.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

# Numeric precisions of training and evaluation (munet.training.precision.PRECISIONS; repeated
# here so this module stays free of torch).
PRECISIONS = ("fp32", "bf16", "auto")

# Hyperparameters whose name starts with this prefix shape the data pipeline; they are shared
# by all paths trained side by side in one generation (they read the same batches).
DATASET_HPARAMS_PREFIX = "ds_"


class ConfigError(ValueError):
    """A config value, key or preset name is invalid."""


@dataclass
class ScorerConfig:
    """Constants of the ScorerDecay score (see munet.system).

    ``score = quality * scale_factor ** (accounted_params / base_accounted_params)
    * scale_factor ** (flops / base_flops)``; a base of 0 disables that factor.
    """

    scale_factor: float = 0.99
    base_accounted_params: float = 2_200_000_000
    base_flops: float = 3_800_000_000_000


@dataclass
class AgentConfig:
    """Everything that defines how a singlepath agent evolves paths for its task.

    Attributes:
        name: preset name; also the agent class name in agent ids (``VitT3~digits``).
        model: ViT architecture name in munet.models (``L/16``, ``B/16``, ``Ti/16``, ...).
        augreg_checkpoint: file stem of the Google augreg checkpoint the preset's root model
            comes from (the file ``{augreg_checkpoint}.npz`` of munet.models' checkpoint
            registry, `munet checkpoint fetch NAME`); informative, the file is read from
            ``checkpoint_path``.
        checkpoint_path: local checkpoint file (augreg .npz or safetensors) used by
            ``root_model/checkpoint`` and for position embeddings of new image sizes; empty
            means none (position embeddings are then resized from the root path's).
        batch_size: train and validation batch size.
        num_train_examples_between_validations_max: cap on train examples between two
            validations (the task's train split size is the other bound).
        num_validations_per_path_training: validations per path training (the training
            budget is this times the batches between validations).
        num_validation_examples_max: cap on validation examples per validation.
        num_samples_per_cycle: paths sampled per cycle (one per device per generation).
        max_task_population_size: the agent's population is pruned to this after each
            generation.
        force_mutations: mutation names that always fire (e.g. ``clone:encoder_norm``).
        scorer: score constants.
        hparams_defaults: hyperparameter defaults (root paths and the first generation).
        hparams_mutation_ranges: ordered value lists incremental mutations move along.
        test_immutability: re-run the test evaluation of the best path at each cycle start
            and check it matches the published test quality.
        immutability_rtol: relative tolerance of that check.
        seed: seed of the agent's random generators (mutation, selection, init, data order).
        max_devices: use at most this many local devices (0: all).
        eval_batch_size: batch size of validation and test passes (0: ``batch_size``); the
            accuracy does not depend on it, only the speed and memory of evaluation do.
        num_threads: CPU threads of the process's PyTorch ops, set when the agent runs (0:
            the cores this process may use, its CPU affinity capped by a cgroup quota; see
            munet.training.threads, which also sets the OpenMP wait policy).
        precision: numeric precision of training and evaluation: ``fp32``, ``bf16``
            (autocast; float32 master weights, gradients, loss and optimizer) or ``auto``
            (``bf16`` where the device computes it natively, else ``fp32``); see
            munet.training.precision.
        data: the source a named task reads (``munet run --task flowers --data
            folder:/data/flowers``), stored with every state so a rerun, a resume or another
            reader of the state dir needs no ``--data``; empty for munet's own task names.
        data_split: the split rule of ``data`` (``"default"``: the seed's 5% slices of train
            for the splits the data lacks; see ``munet.tasks.SPLIT_RULES``).
        singlepath_agent: empty for a singlepath agent; for a multipath agent, the singlepath
            agent class whose paths it combines (``VitT3`` for ``MultiVitT3``).
        path_output_cache_mb: multipath agents on CPU: memory (MB) for reusing the frozen
            subpaths' outputs across the steps of a generation trained without augmentation
            (0: recompute them at every step).
    """

    name: str
    model: str
    augreg_checkpoint: str
    batch_size: int
    hparams_defaults: dict[str, Any]
    hparams_mutation_ranges: dict[str, list[Any]]
    checkpoint_path: str = ""
    num_train_examples_between_validations_max: int = 300_000
    num_validations_per_path_training: int = 4
    num_validation_examples_max: int = 10_000
    num_samples_per_cycle: int = 16
    max_task_population_size: int = 5
    # Force finetuning of the last layer norm: technically it belongs to the head.
    force_mutations: list[str] = field(default_factory=lambda: ["clone:encoder_norm"])
    scorer: ScorerConfig = field(default_factory=ScorerConfig)
    test_immutability: bool = False
    immutability_rtol: float = 0.001
    seed: int = 0
    max_devices: int = 0
    eval_batch_size: int = 0
    num_threads: int = 0
    precision: str = "fp32"
    data: str = ""
    data_split: str = ""
    singlepath_agent: str = ""
    path_output_cache_mb: int = 512

    def validate(self) -> AgentConfig:
        """Checks the config is consistent (the seed's ``config_validate`` and more).

        Returns:
            self, for chaining.

        Raises:
            ConfigError: a field or hparam of the wrong type or out of range (naming the field,
                the value and what is allowed), a default outside its mutation range, a
                mutation range without a default, or an unknown model.
        """
        from munet.config_rules import check_config
        from munet.models.arch import vit_sizes

        # Types and ranges of every field and hparam (munet.config_rules), then the rest.
        check_config(self)
        if self.model not in vit_sizes():
            raise ConfigError(f"unknown model {self.model!r}; known: {', '.join(vit_sizes())}")
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"unknown precision {self.precision!r}; known: {', '.join(PRECISIONS)}"
            )
        if self.singlepath_agent:
            for key in MULTIPATH_HPARAMS:
                if key not in self.hparams_defaults:
                    raise ConfigError(
                        f"multipath agent {self.name!r} needs hparams_defaults.{key}"
                    )
            if self.hparams_defaults["num_paths"] < 2:
                raise ConfigError(
                    f"hparams_defaults.num_paths={self.hparams_defaults['num_paths']!r}: a "
                    "multipath model combines at least 2 paths"
                )
            if not 0.0 < self.hparams_defaults["router_init_main_path_weight"] < 1.0:
                raise ConfigError(
                    "hparams_defaults.router_init_main_path_weight="
                    f"{self.hparams_defaults['router_init_main_path_weight']!r}: expected a "
                    "weight in (0, 1)"
                )
        return self

    @property
    def is_multipath(self) -> bool:
        """Whether the agent combines whole paths of its singlepath class (``MultiVit*``)."""
        return bool(self.singlepath_agent)

    def to_dict(self) -> dict[str, Any]:
        """All fields as plain JSON-compatible data."""
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentConfig:
        """Builds a validated config from :meth:`to_dict` output (e.g. a stored state's).

        Raises:
            ConfigError: unknown or missing keys, or a value of the wrong type or range.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown config keys {unknown}; known: {', '.join(sorted(known))}")
        values = dict(data)
        scorer = values.get("scorer", {})
        if isinstance(scorer, dict):
            scorer_known = {f.name for f in dataclasses.fields(ScorerConfig)}
            bad = sorted(set(scorer) - scorer_known)
            if bad:
                raise ConfigError(
                    f"unknown scorer keys {bad}; known: {', '.join(sorted(scorer_known))}"
                )
            try:
                values["scorer"] = ScorerConfig(**scorer)
            except TypeError as err:
                raise ConfigError(f"invalid scorer config: {err}") from None
        try:
            config = cls(**values)
        except TypeError as err:
            raise ConfigError(f"invalid config: {err}") from None
        return config.validate()

    @classmethod
    def from_json(cls, text: str) -> AgentConfig:
        return cls.from_dict(json.loads(text))


def _common_vit_config(**fields: Any) -> AgentConfig:
    """The seed's ``get_common_config_vit`` values completed by preset-specific fields."""
    hparams_defaults: dict[str, Any] = {
        "_mu_": 0.2,
        "opt_lr": 0.02,
        "opt_lr_schedule": "cosine",
        "opt_lr_warmup_ratio": 0.02,
        "opt_momentum": 0.8,
        "opt_nesterov": True,
        "ds_area_range_min": 1.0,
        "ds_aspect_ratio_range_min": 1.0,
        "ds_flip_left_right": False,
        "ds_brightness_delta": 0.0,
        "ds_contrast_delta": 0.0,
        "ds_saturation_delta": 0.0,
        "ds_hue_delta": 0.0,
        "ds_quality_delta": 0.0,
    }
    deltas = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2]
    hparams_mutation_ranges: dict[str, list[Any]] = {
        "_mu_": [
            0.02,
            0.04,
            0.06,
            0.08,
            0.10,
            0.12,
            0.14,
            0.16,
            0.18,
            0.20,
            0.22,
            0.24,
            0.26,
            0.28,
            0.30,
        ],  # fmt: skip
        "opt_lr": [
            0.0001,
            0.0002,
            0.0005,
            0.001,
            0.002,
            0.005,
            0.01,
            0.02,
            0.05,
            0.1,
            0.2,
            0.5,
            1.0,
        ],  # fmt: skip
        "opt_lr_warmup_ratio": [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3],
        "opt_momentum": [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99],
        "opt_nesterov": [True, False],
        "ds_area_range_min": [0.05, 0.5, 0.95, 1.0],
        "ds_aspect_ratio_range_min": [0.5, 0.75, 1.0],
        "ds_flip_left_right": [True, False],
        "ds_brightness_delta": list(deltas),
        "ds_contrast_delta": list(deltas),
        "ds_saturation_delta": list(deltas),
        "ds_hue_delta": list(deltas),
        "ds_quality_delta": list(deltas),
    }
    extra_defaults = fields.pop("extra_defaults", {})
    extra_ranges = fields.pop("extra_ranges", {})
    hparams_defaults.update(extra_defaults)
    hparams_mutation_ranges.update(extra_ranges)
    return AgentConfig(
        hparams_defaults=hparams_defaults, hparams_mutation_ranges=hparams_mutation_ranges, **fields
    )


def _small_image_sizes() -> list[int]:
    # The seed's `[16*i for i in range(1, 1+int(112/16))]`.
    return [16 * i for i in range(1, 1 + 112 // 16)]


def vit_large() -> AgentConfig:
    """``Vit``: the paper's singlepath agent on a ViT-L/16 root (i21k augreg), 384px images.

    Run (needs an accelerator; the root checkpoint is a local augreg file)::

        munet root --agent Vit --root checkpoint --set checkpoint_path=L_16-....npz -d state
        munet run --agent Vit --task cifar100 --cycles 1 -d state

    A cycle trains 16 paths of up to 4 x 300k examples each: hours per cycle on a TPU/GPU host.
    """
    return _common_vit_config(
        name="Vit",
        model="L/16",
        augreg_checkpoint="L_16-i21k-300ep-lr_0.001-aug_medium2-wd_0.03-do_0.1-sd_0.1",
        batch_size=16,
        precision="auto",
        # 24 layers in L/16; the range allows exceeding the root model's layers by 1.
        extra_defaults={"num_layers": 24, "ds_image_size": 384},
        extra_ranges={"num_layers": list(range(24 + 2)), "ds_image_size": [224, 384]},
    )


def vit_base() -> AgentConfig:
    """``VitB``: singlepath agent on a ViT-B/16 root (i21k augreg), 80px images.

    Run::

        munet root --agent VitB --root checkpoint --set checkpoint_path=B_16-....npz -d state
        munet run --agent VitB --task cifar10 --cycles 1 -d state

    Sized for one GPU: minutes to an hour per cycle depending on the task.
    """
    return _common_vit_config(
        name="VitB",
        model="B/16",
        augreg_checkpoint="B_16-i21k-300ep-lr_0.001-aug_medium1-wd_0.1-do_0.0-sd_0.0",
        batch_size=256,
        precision="auto",
        extra_defaults={"num_layers": 12, "ds_image_size": 80},
        extra_ranges={"num_layers": list(range(12 + 1)), "ds_image_size": _small_image_sizes()},
    )


def vit_ti3() -> AgentConfig:
    """``VitT3``: singlepath agent on a ViT-Ti/16 root capped to 3 layers, 32px images.

    Run::

        munet root --agent VitT3 --root checkpoint --set checkpoint_path=Ti_16-....npz -d state
        munet run --agent VitT3 --task digits --cycles 2 -d state

    The cheapest of the paper's presets; still sized for a GPU (batch 512, 300k examples
    between validations).

    Speed settings (docs/speed.md): ``precision="auto"``, bf16 autocast where the device has
    native bf16 (CUDA GPUs of compute capability 8+, CPUs with AVX512-BF16/AMX), fp32 elsewhere
    (emulated bf16 ran at 0.14x fp32 training and 0.45x evaluation on an AVX2-only CPU). On a
    2-vCPU Xeon with AMX (2026-11-25, load average 3-6 from other work) bf16 trained at
    1.95-2.14x and evaluated at 1.59-2.48x fp32's speed, and munet at these defaults trained
    2.3-3.7x and evaluated 1.6-2.8x as fast as the seed's own jitted JAX step on the same
    model (``benchmarks/jax_step.py``). ``num_threads=0``: the usable cores, with passive
    OpenMP waiting; there two threads trained 1.19-1.60x as fast as one with two competing
    busy processes (``benchmarks/train_threads.py``).
    """
    return _common_vit_config(
        name="VitT3",
        model="Ti/16",
        augreg_checkpoint="Ti_16-i21k-300ep-lr_0.001-aug_light1-wd_0.1-do_0.0-sd_0.0",
        batch_size=512,
        precision="auto",
        extra_defaults={"num_layers": 3, "ds_image_size": 32},
        extra_ranges={"num_layers": list(range(3 + 1)), "ds_image_size": _small_image_sizes()},
    )


def vit_cpu() -> AgentConfig:
    """``VitCpu``: a tiny ViT for quick runs on a laptop CPU (the demo and the tests).

    Same algorithm and hyperparameter search space as the paper's presets, scaled down: the
    4-block, 64-wide ``mu/4`` ViT (4x4 patches) on 8-24 px images (default 16), batches of 32,
    8 paths per cycle of 4 x 32 train steps each, 256 validation examples, population 3.

    Run::

        munet root --agent VitCpu --state-dir state/cpu
        munet run --agent VitCpu --task digits --cycles 2 --state-dir state/cpu

    Expect about 30 s per ``digits`` cycle on one CPU core (the preset runs PyTorch on one
    thread) and a test accuracy of 0.956 on ``digits`` after two cycles from a random-init
    root (seed 0; seeds 1 and 2 give 0.969 and 0.972). ``munet demo`` runs this preset on
    four tasks in about 4 minutes on 2 cores (measured: 234 s on a shared 2-core machine).

    Speed settings (docs/speed.md): ``precision="fp32"``: at this size bf16 trains slower even
    on a CPU with native bf16 (0.46-0.48x fp32 on a Xeon with AMX, 2026-11-25; evaluation 1.6x,
    a small share of a cycle), and runs at 0.18x where it is emulated (AVX2-only CPU).
    ``num_threads=1``: never slower than one thread by construction; two threads with passive
    OpenMP waiting trained at 0.62x one thread on that Xeon with two busy processes (4.3x on
    the AVX2 machine under heavier load, 0.81x there without the busy processes), so one
    thread stays the default (``--set num_threads=0`` for all cores).
    """
    config = _common_vit_config(
        name="VitCpu",
        model="mu/4",
        augreg_checkpoint="",
        batch_size=32,
        num_train_examples_between_validations_max=1_024,
        num_validations_per_path_training=4,
        num_validation_examples_max=256,
        num_samples_per_cycle=8,
        max_task_population_size=3,
        eval_batch_size=512,
        num_threads=1,
        precision="fp32",
        # Bases scaled to the tiny model: the paper's system held ~2.2B params and paths of
        # ~3.8 TFLOPs; the same 1% discount per base unit applies here at the tiny scale.
        scorer=ScorerConfig(scale_factor=0.99, base_accounted_params=2_000_000, base_flops=1e9),
        extra_defaults={"num_layers": 4, "ds_image_size": 16},
        extra_ranges={"num_layers": list(range(4 + 2)), "ds_image_size": [8, 12, 16, 24]},
    )
    # A from-scratch tiny model needs a larger step than a finetuned large one.
    config.hparams_defaults["opt_lr"] = 0.1
    return config


# Hparams every multipath config defines (the seed's `set_multivit_common_config`).
MULTIPATH_HPARAMS = ("router_init_main_path_weight", "router_lr_mult", "num_paths")


def multipath_config(singlepath: AgentConfig) -> AgentConfig:
    """The multipath preset derived from a singlepath one (the seed's
    ``set_multivit_common_config``): named ``Multi<name>``; no forced mutations; the neutral
    scorer (score = quality); the architecture hparams (``num_layers``, ``ds_image_size``)
    removed, since a multipath model takes them from its subpaths; and the router hparams
    added: ``router_init_main_path_weight`` 0.8, ``router_lr_mult`` 0.05 mutated over
    [0.01 .. 1], ``num_paths`` 2 mutated over [2, 3].
    """
    config = copy.deepcopy(singlepath)
    config.name = f"Multi{singlepath.name}"
    config.singlepath_agent = singlepath.name
    config.force_mutations = []
    config.scorer = ScorerConfig(scale_factor=1.0, base_accounted_params=0, base_flops=0)
    for key in ("num_layers", "ds_image_size"):
        del config.hparams_defaults[key]
        del config.hparams_mutation_ranges[key]
    config.hparams_defaults["router_init_main_path_weight"] = 0.8
    config.hparams_defaults["router_lr_mult"] = 0.05
    config.hparams_defaults["num_paths"] = 2
    config.hparams_mutation_ranges["router_lr_mult"] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1]
    config.hparams_mutation_ranges["num_paths"] = [2, 3]
    return config


def multi_vit_large() -> AgentConfig:
    """``MultiVit``: the paper's multipath agent over ``Vit`` (ViT-L/16) paths.

    Run after ``Vit`` agents have grown the system (one of them on the same task)::

        munet run --agent MultiVit --task cifar100 --cycles 1 -d state
    """
    return multipath_config(vit_large())


def multi_vit_base() -> AgentConfig:
    """``MultiVitB``: multipath agent over ``VitB`` (ViT-B/16) paths."""
    return multipath_config(vit_base())


def multi_vit_ti3() -> AgentConfig:
    """``MultiVitT3``: multipath agent over ``VitT3`` (ViT-Ti/16, 3 layers) paths."""
    return multipath_config(vit_ti3())


def multi_vit_cpu() -> AgentConfig:
    """``MultiVitCpu``: multipath agent over ``VitCpu`` paths, for CPU runs (demo, tests).

    Run on a system grown by ``VitCpu`` agents, one of them on the same task::

        munet run --agent VitCpu --task synth/color --cycles 2 -d state/cpu
        munet run --agent VitCpu --task synth/shape --cycles 2 -d state/cpu
        munet run --agent MultiVitCpu --task synth/shape --cycles 1 -d state/cpu

    Only the router and the connectors train (a few hundred parameters), so a cycle costs
    little more than the forward passes of its 2-3 paths.
    """
    return multipath_config(vit_cpu())


# `munet demo`: the VitCpu preset on these tasks, cycle by cycle (see munet.agents.demo).
DEMO_AGENT = "VitCpu"
DEMO_TASKS = ("digits", "synth/shape", "synth/color", "synth/count")
DEFAULT_DEMO_STATE_DIR = "state/demo"
DEFAULT_DEMO_CYCLES = 2
# Then MultiVitCpu agents on the demo's weakest tasks (lowest singlepath validation quality).
DEMO_MULTIPATH_AGENT = "MultiVitCpu"
DEMO_MULTIPATH_TASKS = 2
DEMO_MULTIPATH_CYCLES = 1

PRESETS: dict[str, Callable[[], AgentConfig]] = {
    "Vit": vit_large,
    "VitB": vit_base,
    "VitT3": vit_ti3,
    "VitCpu": vit_cpu,
    "MultiVit": multi_vit_large,
    "MultiVitB": multi_vit_base,
    "MultiVitT3": multi_vit_ti3,
    "MultiVitCpu": multi_vit_cpu,
}


def preset_names() -> list[str]:
    return list(PRESETS)


def get_preset(name: str) -> AgentConfig:
    """A fresh, validated config of the named preset.

    Raises:
        ConfigError: unknown preset name (the message lists the known ones).
    """
    if name not in PRESETS:
        close = difflib.get_close_matches(name, PRESETS, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(f"unknown agent {name!r}{hint}; known: {', '.join(PRESETS)}")
    return PRESETS[name]().validate()


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
    keys = [f.name for f in dataclasses.fields(config) if f.name != "scorer"]
    keys += [f"scorer.{f.name}" for f in dataclasses.fields(config.scorer)]
    keys += [f"hparams_defaults.{k}" for k in config.hparams_defaults]
    keys += [f"hparams_mutation_ranges.{k}" for k in config.hparams_mutation_ranges]
    keys += list(config.hparams_defaults)  # Shorthand: `opt_lr` for `hparams_defaults.opt_lr`.
    return keys


def apply_overrides(config: AgentConfig, overrides: Iterable[str]) -> AgentConfig:
    """Returns a copy of ``config`` with ``key=value`` overrides applied and validated.

    Keys are field names (``batch_size``), dotted (``scorer.scale_factor``,
    ``hparams_defaults.opt_lr``, ``hparams_mutation_ranges.opt_lr``) or a bare hparam name as
    shorthand for its default (``opt_lr=0.05``). Values are parsed to the type of the value
    they replace.

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
    if not dot and key in config.hparams_defaults:
        current = config.hparams_defaults[key]
        config.hparams_defaults[key] = parse_value(text, current, key)
        return
    known = _all_keys(config)
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ConfigError(f"unknown config key {key!r}{hint} (known: {', '.join(known)})")
