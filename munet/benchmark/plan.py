"""What a benchmark run is: its settings (methods, tasks, seeds, budget) and each task's
train-step budget, which every method spends in full.

The budget: ``--steps`` train steps per task, rounded to whole agent paths. A path (the CPU
presets' path shape) trains ``num_validations_per_path_training`` intervals of ``I`` steps
(``I``: the task's train batches between validations), ``P`` steps in all; a task's budget is
``N * P`` with ``N = max(2, round(steps / P))``. Fine-tuning, the linear probe, adapters and
the CNN train ``N * P`` steps, validating every ``I`` steps. The system samples ``S = K * N``
paths for the task: ``S - M`` singlepath paths (one cycle of its ``--agent`` agent,
:data:`PRESET` by default) and ``M = max(1, S // 4)`` multipath paths (one cycle of its
``Multi`` agent), ``P`` steps each. ``K`` (``--system-budget``) is 1 for the papers' comparison
at equal steps; a larger ``K`` gives the system ``K`` times the baselines' steps, as the µNet
papers' evolved systems spent more compute per task than their fine-tuning baselines.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from munet.hints import did_you_mean

METHODS = ("system", "finetune", "linear", "adapters", "cnn")
BASELINE = "finetune"
# The default agent: munet's CPU preset (the hybrid ViT with AdamW; chosen on validation,
# experiments/hybrid_cpu/README.md). VitCpu, the patchify preset, stays available by name.
PRESET = "VitCpuHybrid"
# The path shape every agent runs at in the benchmark: VitCpu's own (batch 32, 4 validations of
# up to 1,024 examples a path, 256 validation examples, population 3, one thread, finalists
# rescored; VitCpuHybrid's by construction), read from its preset so the two cannot drift apart.
CPU_PATH_SHAPE_PRESET = "VitCpu"
PATH_SHAPE_KEYS = (
    "batch_size",
    "num_train_examples_between_validations_max",
    "num_validations_per_path_training",
    "num_validation_examples_max",
    "num_samples_per_cycle",
    "max_task_population_size",
    "eval_batch_size",
    "num_threads",
    "rescore_finalists",
)


def _path_shape() -> tuple[str, ...]:
    from munet.config import get_preset

    cpu = get_preset(CPU_PATH_SHAPE_PRESET)
    return tuple(f"{key}={json.dumps(getattr(cpu, key))}" for key in PATH_SHAPE_KEYS)


class _MadeOnFirstRead(Mapping[str, tuple[str, ...]]):
    """A mapping whose keys are known and whose values are made the first time they are read:
    VitT3's overrides read VitCpu's preset, and a preset's validation imports torch, which
    importing this module (for `munet --help`) must not."""

    def __init__(self, makers: dict[str, Callable[[], tuple[str, ...]]]) -> None:
        self._makers = makers
        self._made: dict[str, tuple[str, ...]] = {}

    def __getitem__(self, key: str) -> tuple[str, ...]:
        if key not in self._made:
            self._made[key] = self._makers[key]()
        return self._made[key]

    def __contains__(self, key: object) -> bool:
        return key in self._makers

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)


# The agents a benchmark can run (``--agent``), each with the overrides that give it the
# benchmark's path shape. VitT3 is the paper's smallest preset, shaped for a GPU (batch 512,
# 300k examples between validations); at 32 px its forward costs 14.5 MFLOPs an image against
# VitCpu's 16.2 at 24 px, so at VitCpu's path shape it runs on a CPU. Its scorer's params base
# is VitCpu's (2M) times the ratio of their root params (1.49M / 0.206M = 7.2), the same
# discount per share of the model; its FLOPs base stays VitCpu's 1e9, the paths costing about
# the same. Its lr stays the seed's 0.02 (a pretrained root); VitCpu's 0.1 was set for
# training from scratch.
AGENT_OVERRIDES: Mapping[str, tuple[str, ...]] = _MadeOnFirstRead({
    "VitCpu": lambda: (),
    # VitCpu's path shape by construction (munet.config.presets.vit_cpu_hybrid).
    "VitCpuHybrid": lambda: (),
    "VitT3": lambda: (
        *_path_shape(),
        "scorer.base_accounted_params=14400000",
        "scorer.base_flops=1000000000",
    ),
})  # fmt: skip
ROOT_KIND = "pretrained"
DEFAULT_STEPS = 1024
DEFAULT_SEEDS = (0, 1, 2)
QUICK_STEPS = 256
DEFAULT_ADAPTER_BOTTLENECK = 8
DEFAULT_SYSTEM_BUDGET = 1
# The CNN's optimizer (as benchmarks/own_data_vs_cnn.py: Adam, random flips).
CNN_LR = 3e-3
CNN_MIN_IMAGE_SIZE = 16


class BenchmarkError(ValueError):
    """A bad benchmark request (unknown method or task, bad seeds, a mismatched --out)."""


@dataclass(frozen=True)
class Settings:
    """Everything that decides a benchmark's results (``--workers`` does not).

    Attributes:
        methods: which methods run (of :data:`METHODS`).
        tasks: the suite's task names, in the order the system's agents run them.
        seeds: one result per (method, task, seed).
        steps: the requested train steps per task (see the module docstring for rounding).
        quick: the CI-sized run.
        overrides: ``--set`` config overrides for every method's config (after the agent's
            :data:`AGENT_OVERRIDES`).
        adapter_bottleneck: hidden width of each adapter.
        preset: the singlepath agent (``--agent``; its multipath agent is ``Multi<preset>``).
        system_budget: the system's train steps per task, in task budgets (1: equal steps).
        root: what every method starts from: ``pretrained`` (the agent's built-in root) or
            the absolute path of a root checkpoint (``--root FILE``: a candidate root from
            ``munet pretrain``, or any checkpoint munet loads).
        root_sha256: that file's sha256 ("" for the built-in root): a resumed run refuses a
            file that changed.
    """

    methods: tuple[str, ...] = METHODS
    tasks: tuple[str, ...] = ()
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    steps: int = DEFAULT_STEPS
    quick: bool = False
    overrides: tuple[str, ...] = ()
    adapter_bottleneck: int = DEFAULT_ADAPTER_BOTTLENECK
    preset: str = PRESET
    root: str = ROOT_KIND
    system_budget: int = DEFAULT_SYSTEM_BUDGET
    root_sha256: str = ""

    @property
    def multipath_preset(self) -> str:
        from munet.config.presets import multipath_name

        return multipath_name(self.preset)

    @property
    def root_kind(self) -> str:
        """The root model kind every method starts from (munet.agents.create_root_model)."""
        return ROOT_KIND if self.root == ROOT_KIND else "checkpoint"

    @property
    def root_overrides(self) -> list[str]:
        """The config override that points a ``checkpoint`` root at the ``--root`` file."""
        return [] if self.root == ROOT_KIND else [f"checkpoint_path={self.root}"]

    @property
    def agent_overrides(self) -> list[str]:
        """The agent's path-shape overrides, then ``--set``'s, then the root's."""
        return [*AGENT_OVERRIDES[self.preset], *self.overrides, *self.root_overrides]

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Settings:
        return Settings(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


@dataclass(frozen=True)
class TaskBudget:
    """A task's train-step budget (see the module docstring)."""

    task: str
    interval: int  # I: train steps between validations.
    path_steps: int  # P: train steps of one agent path.
    num_paths: int  # N: paths of a task budget (the baselines train N * P steps).
    multipath_paths: int  # M of the system's paths are multipath.
    num_classes: int = 0
    sizes: dict[str, int] = field(default_factory=dict)
    system_budget: int = DEFAULT_SYSTEM_BUDGET  # K: the system samples K * N paths.

    @property
    def steps(self) -> int:
        return self.num_paths * self.path_steps

    @property
    def num_validations(self) -> int:
        return self.steps // self.interval

    @property
    def system_paths(self) -> int:
        return self.system_budget * self.num_paths

    @property
    def singlepath_paths(self) -> int:
        return self.system_paths - self.multipath_paths


def task_budget(
    task: str,
    interval: int,
    validations_per_path: int,
    steps: int,
    system_budget: int = DEFAULT_SYSTEM_BUDGET,
) -> TaskBudget:
    """The budget of ``task`` (see the module docstring).

    Raises:
        BenchmarkError: a non-positive ``steps`` or ``system_budget``.
    """
    if steps <= 0:
        raise BenchmarkError(f"--steps {steps!r}: expected a positive number of train steps")
    _check_system_budget(system_budget)
    path_steps = interval * validations_per_path
    num_paths = max(2, round(steps / path_steps))
    multipath_paths = max(1, system_budget * num_paths // 4)
    return TaskBudget(
        task, interval, path_steps, num_paths, multipath_paths, system_budget=system_budget
    )


def _check_system_budget(system_budget: Any) -> None:
    if not isinstance(system_budget, int) or isinstance(system_budget, bool) or system_budget < 1:
        raise BenchmarkError(
            f"--system-budget {system_budget!r}: expected a whole number of task budgets, "
            "at least 1 (1: the same steps as every other method)"
        )


def make_settings(
    methods: list[str] | None = None,
    tasks: list[str] | None = None,
    seeds: list[int] | None = None,
    steps: int | None = None,
    quick: bool = False,
    overrides: list[str] | None = None,
    adapter_bottleneck: int = DEFAULT_ADAPTER_BOTTLENECK,
    system_budget: int = DEFAULT_SYSTEM_BUDGET,
    preset: str = PRESET,
    root: str | None = None,
) -> Settings:
    """Checked settings; None picks the default (the suite, or the quick suite with ``quick``;
    the agent's built-in root).

    Raises:
        BenchmarkError: an unknown method, task or agent, no or repeated seeds, a negative
            seed, a non-positive ``steps``, bottleneck or system budget, a ``root`` that is
            not a file.
    """
    from munet.tasks.registry import is_known_task_name, known_task_names
    from munet.tasks.suite import QUICK_SUITE_TASKS, SUITE_TASKS

    methods = list(methods or METHODS)
    for method in methods:
        if method not in METHODS:
            raise BenchmarkError(
                f"unknown method {method!r}{did_you_mean(method, METHODS)}; "
                f"known: {', '.join(METHODS)}"
            )
    if len(set(methods)) != len(methods):
        raise BenchmarkError(f"a method appears twice in --methods: {','.join(methods)}")
    tasks = list(tasks or (QUICK_SUITE_TASKS if quick else SUITE_TASKS))
    for task in tasks:
        if not is_known_task_name(task):
            names = known_task_names()
            raise BenchmarkError(
                f"unknown task {task!r}{did_you_mean(task, names)}; "
                f"the suite: {', '.join(SUITE_TASKS)}"
            )
    if len(set(tasks)) != len(tasks):
        raise BenchmarkError(f"a task appears twice in --tasks: {','.join(tasks)}")
    seeds = list(DEFAULT_SEEDS if seeds is None else seeds)
    if not seeds:
        raise BenchmarkError("--seeds is empty: expected at least one seed, e.g. 0,1,2")
    if any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise BenchmarkError(
            f"--seeds {','.join(map(str, seeds))}: expected distinct non-negative integers"
        )
    steps = (QUICK_STEPS if quick else DEFAULT_STEPS) if steps is None else steps
    if steps <= 0:
        raise BenchmarkError(f"--steps {steps!r}: expected a positive number of train steps")
    if adapter_bottleneck <= 0:
        raise BenchmarkError(
            f"adapter bottleneck {adapter_bottleneck!r}: expected a positive width"
        )
    _check_system_budget(system_budget)
    if preset not in AGENT_OVERRIDES:
        raise BenchmarkError(
            f"--agent {preset!r}{did_you_mean(preset, AGENT_OVERRIDES)}: expected one of "
            f"{', '.join(AGENT_OVERRIDES)} (the agents with a CPU-sized benchmark path shape)"
        )
    return Settings(
        methods=tuple(methods),
        tasks=tuple(tasks),
        seeds=tuple(seeds),
        steps=steps,
        quick=quick,
        overrides=tuple(overrides or ()),
        adapter_bottleneck=adapter_bottleneck,
        system_budget=system_budget,
        preset=preset,
        **_root_settings(root),
    )


def root_size_note(settings: Settings, config: Any) -> str | None:
    """A line saying the ``--root`` file's card was pretrained at another image size than the
    agents read (None when it matches, or there is no readable card beside the file)."""
    from munet.pretrain.card import card_beside

    card = None if settings.root == ROOT_KIND else card_beside(settings.root)
    if card is None:
        return None
    try:
        size = int(json.loads(card.read_text())["recipe"]["image_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    used = int(config.hparams_defaults["ds_image_size"])
    if size == used:
        return None
    sizes = sorted({*config.hparams_mutation_ranges["ds_image_size"], size})
    return (
        f"note: the root was pretrained at {size} px (its card, {card}); the agents start at "
        f"{used} px and resize its position embedding. To read {size} px images: --set "
        f"'hparams_mutation_ranges.ds_image_size={json.dumps(sizes)}' --set "
        f"hparams_defaults.ds_image_size={size}"
    )


def _root_settings(root: str | None) -> dict[str, str]:
    if root is None:
        return {}
    from munet.pretrain.roots import sha256_file

    path = Path(root)
    if not path.is_file():
        raise BenchmarkError(
            f"--root {root!r}: no such file; expected a root checkpoint (a munet pretrain "
            "OUT/root.safetensors, or any checkpoint munet loads)"
        )
    return {"root": str(path.resolve()), "root_sha256": sha256_file(path)}




def settings_mismatch(stored: dict[str, Any], wanted: dict[str, Any]) -> str | None:
    """Names what differs between two settings dicts (None when they agree); a key a
    settings file predates reads as its default."""
    defaults = Settings().to_dict()
    stored, wanted = {**defaults, **stored}, {**defaults, **wanted}
    differences = [
        f"{key} {stored.get(key)!r} there, {wanted.get(key)!r} now"
        for key in sorted(set(stored) | set(wanted))
        if stored.get(key) != wanted.get(key)
    ]
    return "; ".join(differences) or None
