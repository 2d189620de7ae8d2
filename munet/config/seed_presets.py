"""The seed's ViT presets (``Vit``, ``VitB``, ``VitT3``: the µNet notebook's values) and the
published hybrid R+ViT presets built on the same search space (``VitRTi``, ``VitR26S``,
``VitR50L``); munet.config.presets holds the table of every preset."""

from __future__ import annotations

from typing import Any

from munet.config.fields import AgentConfig


def common_vit_config(**fields: Any) -> AgentConfig:
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
    return common_vit_config(
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
    return common_vit_config(
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
    native bf16 (CUDA GPUs of compute capability 8+, CPUs with AVX512-BF16/AMX), fp32 elsewhere:
    emulated bf16 trains at 0.14x and evaluates at 0.45x fp32's speed on an AVX2-only CPU, and
    native bf16 trains at 1.95-2.14x and evaluates at 1.59-2.48x on the 2-vCPU Intel Xeon with
    AMX, 1.42-1.67x and 1.11-1.55x on the AMD EPYC with AVX-512
    (``benchmarks/train_throughput.py --precisions fp32,bf16``). At these defaults munet trains
    2.3-3.7x (Xeon) and 1.82-2.44x (EPYC) and evaluates 1.6-2.8x and 1.49-1.77x as fast as the
    seed's own jitted JAX step on the same model (``benchmarks/jax_step.py``).
    ``num_threads=0``: the usable cores, with passive OpenMP waiting; on the Xeon two threads
    trained 1.19-1.60x as fast as one with two competing busy processes
    (``benchmarks/train_threads.py``).
    """
    return common_vit_config(
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
    return common_vit_config(
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
