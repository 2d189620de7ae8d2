"""The agent config itself: `AgentConfig` (typed fields, validation, JSON) and its errors."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from munet.hints import did_you_mean

# Numeric precisions of training and evaluation (munet.training.precision.PRECISIONS; repeated
# here so this module stays free of torch).
PRECISIONS = ("fp32", "bf16", "auto")

# Hyperparameters whose name starts with this prefix shape the data pipeline; they are shared
# by all paths trained side by side in one generation (they read the same batches).
DATASET_HPARAMS_PREFIX = "ds_"


# The hparams only multipath agents have (the router and how many paths it mixes).
MULTIPATH_HPARAMS = ("router_init_main_path_weight", "router_lr_mult", "num_paths")


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
        checkpoint_path: local checkpoint (augreg .npz, a .safetensors or .pth/.bin state
            dict, or a Hugging Face save_pretrained folder; docs/models.md) used by
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
        data_split: the split rule of ``data`` (empty: the source's default, ``"own-data"``
            for folder/npz/hf data, else ``"default"``; ``"default"``: the seed's 5% slices of
            train for the splits the data lacks; ``"own-data"``: stratified max(10%, 200)
            slices, at most 20%; ``"validation=X,test=Y"``: a stratified split of the
            train pool, X and Y fractions or counts, from ``--val-split``/``--test-split``; see
            munet.tasks.splits).
        singlepath_agent: empty for a singlepath agent; for a multipath agent, the singlepath
            agent class whose paths it combines (``VitT3`` for ``MultiVitT3``).
        path_output_cache_mb: multipath agents on CPU: memory (MB) for reusing the frozen
            subpaths' outputs across the steps of a generation trained without augmentation
            (0: recompute them at every step).
        multipath_random_root: multipath agents: whether the path of a ``random_init`` root
            model may be a subpath. ``True`` is the seed's rule (the root qualifies like any
            other agent's path); ``False``, the default, leaves it out, since routing through
            it publishes a model with untrained parameters. Roots made from a checkpoint
            qualify either way.
        rescore_finalists: munet's option (beyond the seed): before a cycle publishes,
            evaluate the agent's own paths (its finalists) on the whole validation split,
            not the first ``num_validation_examples_max`` examples, and keep the best on that
            (munet.agents.rescoring). A no-op when the split is not larger than the cap.
            Off here and in the seed's presets; on in munet's ``VitCpu`` (measured).
        adapter_mutation_probability: munet's option (beyond the seed; 0 keeps the seed's
            mutations): the probability that a child puts a residual bottleneck adapter after
            each frozen (shared) encoder block instead of cloning or sharing it alone
            (munet.models.adapters, munet.agents.adapter_mutation).
        adapter_bottleneck: the bottleneck width of those adapters.
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
    multipath_random_root: bool = False
    rescore_finalists: bool = False
    adapter_mutation_probability: float = 0.0
    adapter_bottleneck: int = 8

    def validate(self) -> AgentConfig:
        """Checks the config is consistent (the seed's ``config_validate`` and more).

        Returns:
            self, for chaining.

        Raises:
            ConfigError: a field or hparam of the wrong type or out of range (naming the field,
                the value and what is allowed), a default outside its mutation range, a
                mutation range without a default, or an unknown model.
        """
        from munet.config.rules import check_config
        from munet.models.arch import VitArch, vit_sizes

        # Types and ranges of every field and hparam (munet.config.rules), then the rest.
        check_config(self)
        if self.model not in vit_sizes():
            raise ConfigError(f"unknown model {self.model!r}; known: {', '.join(vit_sizes())}")
        # Every image size a path may take must fill whole patches of the model (for a hybrid,
        # whole cells of its stem's feature map too).
        stride = VitArch.from_size(self.model).stride
        sizes = [("hparams_defaults", self.hparams_defaults.get("ds_image_size"))]
        sizes += [("hparams_mutation_ranges", s)
                  for s in self.hparams_mutation_ranges.get("ds_image_size", [])]  # fmt: skip
        for where, size in sizes:
            if isinstance(size, int) and size % stride:
                raise ConfigError(
                    f"{where}.ds_image_size={size}: expected a multiple of {stride}, the "
                    f"stride of model {self.model!r}"
                )
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
            named = ", ".join(f"{key!r}{did_you_mean(key, known)}" for key in unknown)
            raise ConfigError(
                f"unknown config keys {named}; `munet config show --agent "
                f"{data.get('name') or 'NAME'}` shows the keys this munet knows"
            )
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
