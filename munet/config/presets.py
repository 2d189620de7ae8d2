"""The table of named presets: the seed's and the published hybrids' (munet.config.seed_presets),
munet's CPU presets (`VitCpu`, `VitCpuHybrid`), the multipath presets derived from them and the
demo's settings; `get_preset` builds one by name."""

from __future__ import annotations

import copy
from collections.abc import Callable

from munet.config.fields import AgentConfig, ConfigError, ScorerConfig
from munet.config.seed_presets import (
    common_vit_config,
    vit_base,
    vit_large,
    vit_r26_s,
    vit_r50_l,
    vit_r_ti,
    vit_ti3,
)
from munet.hints import did_you_mean


def vit_cpu() -> AgentConfig:
    """``VitCpu``: a tiny patchify ViT for quick runs on a laptop CPU (the tests; ``VitCpuHybrid``
    is munet's CPU default).

    Same algorithm and hyperparameter search space as the paper's presets, scaled down: the
    4-block, 64-wide ``mu/4`` ViT (4x4 patches) on 8-24 px images (default 24), batches of 32,
    8 paths per cycle of 4 x 32 train steps each, 256 validation examples, population 3.

    Image size: munet's own choice, made on validation data (docs/agents.md, "VitCpu's image
    size"): starting at 24 px rather than 16 selected models 4.1 points better on validation
    (0.875 vs 0.834, 2 seeds of the own-data task of benchmarks/own_data_split_rule.py) at the
    same train steps, for 2.3x the FLOPs per image. The timings and accuracies below were
    measured with the former 16 px default.

    Run::

        munet root --agent VitCpu --state-dir state/cpu
        munet run --agent VitCpu --task digits --cycles 2 --state-dir state/cpu

    Expect about 30 s per ``digits`` cycle on one CPU core (the preset runs PyTorch on one
    thread) and a test accuracy of 0.956 on ``digits`` after two cycles from a random-init
    root (seed 0; seeds 1 and 2 give 0.969 and 0.972). ``munet demo`` runs this preset on
    four tasks in about 4 minutes on 2 cores (measured: 234 s on a shared 2-core machine).

    Speed settings (docs/speed.md): ``precision="fp32"``: at this size bf16 trains slower even
    on a CPU with native bf16 (0.46-0.48x fp32 on a Xeon with AMX; evaluation 1.6x,
    a small share of a cycle), and runs at 0.18x where it is emulated (AVX2-only CPU).
    ``num_threads=1``: never slower than one thread by construction; two threads with passive
    OpenMP waiting trained at 0.62x one thread on that Xeon with two busy processes (4.3x on
    the AVX2 machine under heavier load, 0.81x there without the busy processes), so one
    thread stays the default (``--set num_threads=0`` for all cores).
    """
    config = common_vit_config(
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
        # munet's option, on for munet's own preset (the seed's presets keep it off): on own
        # data of 3,500 images it lifted new-image accuracy 0.872 -> 0.894 (3 seeds) and cut
        # the validation / new-image gap 0.024 -> 0.004 (docs/agents.md).
        rescore_finalists=True,
        # Bases scaled to the tiny model: the paper's system held ~2.2B params and paths of
        # ~3.8 TFLOPs; the same 1% discount per base unit applies here at the tiny scale.
        scorer=ScorerConfig(scale_factor=0.99, base_accounted_params=2_000_000, base_flops=1e9),
        # 24, not 16: measured on validation data (docs/agents.md, "VitCpu's image size").
        extra_defaults={"num_layers": 4, "ds_image_size": 24},
        extra_ranges={"num_layers": list(range(4 + 2)), "ds_image_size": [8, 12, 16, 24]},
    )
    # A from-scratch tiny model needs a larger step than a finetuned large one.
    config.hparams_defaults["opt_lr"] = 0.1
    return config


def vit_cpu_hybrid() -> AgentConfig:
    """``VitCpuHybrid``: ``VitCpu``'s agent on a hybrid ViT with munet's AdamW.

    The model is ``R2+mu/8`` (munet.models.arch): ``mu/4``'s transformer on a small ResNet-v2
    stem (vit_jax's hybrid R+ViT family: weight-standardised convolutions with group norm, so
    a frozen stem is shared between tasks like an encoder block), image stride 8, on 16-48 px
    images (default 32). It trains with AdamW (``opt_optimizer="adamw"``, lr 0.002, decoupled
    weight decay 0.05) instead of the seed's SGD. Everything else (path shape, budgets,
    population, scorer) is ``VitCpu``'s. How it compares: docs/results.md.

    Run::

        munet root --agent VitCpuHybrid --state-dir state/hybrid
        munet run --agent VitCpuHybrid --task digits --cycles 2 --state-dir state/hybrid
    """
    config = vit_cpu()
    config.name = "VitCpuHybrid"
    config.model = "R2+mu/8"
    config.hparams_defaults.update(
        {"ds_image_size": 32, "opt_optimizer": "adamw", "opt_lr": 0.002, "opt_weight_decay": 0.05}
    )
    config.hparams_mutation_ranges["ds_image_size"] = [16, 24, 32, 40, 48]
    config.hparams_mutation_ranges["opt_weight_decay"] = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2]
    return config


# Hparams every multipath config defines (the seed's `set_multivit_common_config`).


def multipath_name(singlepath: str) -> str:
    """The multipath preset over a singlepath one: ``VitCpu`` -> ``MultiVitCpu``."""
    return f"Multi{singlepath}"


def multipath_config(singlepath: AgentConfig) -> AgentConfig:
    """The multipath preset derived from a singlepath one (the seed's
    ``set_multivit_common_config``): named ``Multi<name>``; no forced mutations; the neutral
    scorer (score = quality); the architecture hparams (``num_layers``, ``ds_image_size``)
    removed, since a multipath model takes them from its subpaths; and the router hparams
    added: ``router_init_main_path_weight`` 0.8, ``router_lr_mult`` 0.05 mutated over
    [0.01 .. 1], ``num_paths`` 2 mutated over [2, 3]. ``multipath_random_root`` stays False
    (munet's default: a ``random_init`` root is never a subpath; the seed's rule is True).
    """
    config = copy.deepcopy(singlepath)
    config.name = multipath_name(singlepath.name)
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


def multi_vit_cpu_hybrid() -> AgentConfig:
    """``MultiVitCpuHybrid``: multipath agent over ``VitCpuHybrid`` paths.

    Its router and connectors train with the seed's SGD at ``VitCpu``'s lr: the router's
    ``router_lr_mult`` scales its gradient, which Adam's normalisation would cancel.
    """
    config = multipath_config(vit_cpu_hybrid())
    config.hparams_defaults.update(
        {"opt_optimizer": "sgd", "opt_lr": vit_cpu().hparams_defaults["opt_lr"]}
    )
    del config.hparams_defaults["opt_weight_decay"]
    del config.hparams_mutation_ranges["opt_weight_decay"]
    return config


def multi_vit_cpu() -> AgentConfig:
    """``MultiVitCpu``: multipath agent over ``VitCpu`` paths, for CPU runs (tests).

    Run on a system grown by ``VitCpu`` agents, one of them on the same task::

        munet run --agent VitCpu --task synth/color --cycles 2 -d state/cpu
        munet run --agent VitCpu --task synth/shape --cycles 2 -d state/cpu
        munet run --agent MultiVitCpu --task synth/shape --cycles 1 -d state/cpu

    Only the router and the connectors train (a few hundred parameters), so a cycle costs
    little more than the forward passes of its 2-3 paths.
    """
    return multipath_config(vit_cpu())


# `munet demo`: munet's CPU preset on these tasks, cycle by cycle (see munet.agents.demo): the
# hybrid, chosen over VitCpu on validation (experiments/hybrid_cpu/README.md).
DEMO_AGENT = "VitCpuHybrid"
DEMO_TASKS = ("digits", "synth/shape", "synth/color", "synth/count")
DEFAULT_DEMO_STATE_DIR = "state/demo"
DEFAULT_DEMO_CYCLES = 2
# Then multipath agents over its paths (Multi<DEMO_AGENT>) on the demo's weakest tasks (lowest
# singlepath validation quality).
DEMO_MULTIPATH_TASKS = 2
DEMO_MULTIPATH_CYCLES = 1

PRESETS: dict[str, Callable[[], AgentConfig]] = {
    "Vit": vit_large,
    "VitB": vit_base,
    "VitT3": vit_ti3,
    "VitCpu": vit_cpu,
    "VitCpuHybrid": vit_cpu_hybrid,
    "VitRTi": vit_r_ti,
    "VitR26S": vit_r26_s,
    "VitR50L": vit_r50_l,
    "MultiVit": multi_vit_large,
    "MultiVitB": multi_vit_base,
    "MultiVitT3": multi_vit_ti3,
    "MultiVitCpu": multi_vit_cpu,
    "MultiVitCpuHybrid": multi_vit_cpu_hybrid,
    "MultiVitRTi": lambda: multipath_config(vit_r_ti()),
    "MultiVitR26S": lambda: multipath_config(vit_r26_s()),
    "MultiVitR50L": lambda: multipath_config(vit_r50_l()),
}


def preset_names() -> list[str]:
    return list(PRESETS)


def get_preset(name: str) -> AgentConfig:
    """A fresh, validated config of the named preset.

    Raises:
        ConfigError: unknown preset name (the message lists the known ones).
    """
    if name not in PRESETS:
        hint = did_you_mean(name, PRESETS)
        raise ConfigError(f"unknown agent {name!r}{hint}; known: {', '.join(PRESETS)}")
    return PRESETS[name]().validate()
