"""The named presets, with the seed's values (`Vit`, `VitB`, `VitT3`), munet's CPU preset and the
multipath presets derived from them; `get_preset` builds one by name."""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable
from typing import Any

from munet.config.fields import AgentConfig, ConfigError, ScorerConfig


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


def _hybrid_preset(name: str, model: str, checkpoint: str, depth: int, batch: int) -> AgentConfig:
    """A singlepath agent on one of vit_jax's published hybrid R+ViT models (augreg i21k
    checkpoint ``checkpoint``), at the published 224 px and VitB's search space otherwise:
    full depth (plus one block), image sizes the hybrids' stride 32 divides."""
    return _common_vit_config(
        name=name,
        model=model,
        augreg_checkpoint=checkpoint,
        batch_size=batch,
        precision="auto",
        extra_defaults={"num_layers": depth, "ds_image_size": 224},
        extra_ranges={"num_layers": list(range(depth + 2)), "ds_image_size": [160, 192, 224]},
    )


def vit_r_ti() -> AgentConfig:
    """``VitRTi``: singlepath agent on the hybrid R+Ti/16 root (a ResNet-v2 root stem before
    Ti/16's transformer, image stride 32; augreg i21k), 224 px. Run as ``VitB``, with its
    checkpoint::

        munet checkpoint fetch VitRTi --dest ckpt
        munet root --agent VitRTi --root checkpoint --set checkpoint_path=ckpt/R_Ti_16-...npz
    """
    return _hybrid_preset(
        "VitRTi", "R+Ti/16", "R_Ti_16-i21k-300ep-lr_0.001-aug_none-wd_0.03-do_0.0-sd_0.0", 12, 256
    )


def vit_r26_s() -> AgentConfig:
    """``VitR26S``: singlepath agent on the hybrid R26+S/32 root (augreg i21k), 224 px."""
    return _hybrid_preset(
        "VitR26S", "R26+S/32", "R26_S_32-i21k-300ep-lr_0.001-aug_light1-wd_0.1-do_0.0-sd_0.0",
        12, 256,
    )  # fmt: skip


def vit_r50_l() -> AgentConfig:
    """``VitR50L``: singlepath agent on the hybrid R50+L/32 root (augreg i21k), 224 px; sized
    for accelerators like ``Vit``."""
    return _hybrid_preset(
        "VitR50L", "R50+L/32", "R50_L_32-i21k-300ep-lr_0.001-aug_medium1-wd_0.1-do_0.1-sd_0.1",
        24, 16,
    )  # fmt: skip


def vit_cpu() -> AgentConfig:
    """``VitCpu``: a tiny ViT for quick runs on a laptop CPU (the demo and the tests).

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
        close = difflib.get_close_matches(name, PRESETS, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(f"unknown agent {name!r}{hint}; known: {', '.join(PRESETS)}")
    return PRESETS[name]().validate()
