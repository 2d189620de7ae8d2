"""A path as a standalone model folder: `model.safetensors` + `config.json` + `README.md`.

The folder needs no state dir and no pickle to use: `load_exported(DIR)` returns a plain
`torch.nn.Module` and the preprocessing its inputs need. Layout:

    DIR/model.safetensors   every tensor of the path, frozen shared ones included, named
                            `<component>.<tensor>`; a multipath path's subpaths under their
                            slot (`path_0.encoderblock_0.attn.qkv.weight`)
    DIR/config.json         format, the model tree, classes and their names, preprocessing,
                            provenance (agent, path id, test quality, ...) and a sha256 per
                            tensor, so a changed file is refused with the tensor it concerns
    DIR/README.md           a model card with the metrics

The model tree describes the path generically over its components:

    {"type": "vit", "arch": VitArch.to_dict(), "image_size": S}
        a `VisionTransformer`; its state-dict names are the component names.
    {"type": "multipath", "router_lr_mult": m, "paths": {"path_0": <vit node>, ...}}
        the seed's multipath model (`munet.models.multipath`): the subpaths by slot, plus the
        `multipath_router` and `head_adapter_path_k` components.

Preprocessing (the evaluation pipeline of `munet.tasks`): an image is converted to RGB, resized
(PIL bilinear) to the *storage size* its task's source kept images at, then resized to
`image_size` with `tf.image.resize` semantics and mapped to [-1, 1]. Both steps are the ones the
system ran, so an image file of the task's test split gets the very tensor the agent tested on.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any

import numpy as np
import torch
from torch import nn

from munet.models.arch import VitArch
from munet.models.multipath import ROUTER, MultipathVit, head_adapter_name
from munet.models.vit import LAYER_NORM_EPS, VisionTransformer

EXPORT_FORMAT = "munet-exported-model"
EXPORT_VERSION = 1
MODEL_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
CARD_FILE = "README.md"


class ExportError(ValueError):
    """An export folder is missing, malformed, or its tensors do not match its config."""


# Model tree -> module -----------------------------------------------------------------------
class _Router(nn.Module):
    """The multipath router's tensors as a module: `norm` (LayerNorm) and `dense` (Linear)."""

    def __init__(self, num_classes: int, num_paths: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(num_classes, eps=LAYER_NORM_EPS)
        self.dense = nn.Linear(num_classes, num_paths)


class MultipathModule(nn.Module):
    """A multipath model as a plain module: subpaths by slot, router and connectors.

    The forward is `munet.models.multipath.MultipathVit` run on this module's parameters, so
    the logits are those of the system's multipath model to the last bit.

    Args:
        paths: {slot: module}, `path_0` the main path (with a head), the others headless.
        router_lr_mult: the router's gradient scale (kept for fine-tuning; no effect on values).
    """

    def __init__(self, paths: Mapping[str, VisionTransformer], router_lr_mult: float) -> None:
        super().__init__()
        self.slots = sorted(paths, key=_slot_index)
        if not self.slots or self.slots[0] != "path_0":
            raise ExportError(f"multipath slots {self.slots}: expected path_0, path_1, ...")
        for slot in self.slots:
            self.add_module(slot, paths[slot])
        main = paths["path_0"]
        num_classes = main.arch.num_classes
        self.add_module(ROUTER, _Router(num_classes, len(self.slots)))
        for index, slot in enumerate(self.slots[1:], 1):
            width = paths[slot].arch.width
            self.add_module(head_adapter_name(index), nn.Linear(width, num_classes))
        self.router_lr_mult = float(router_lr_mult)

    def forward(self, images: torch.Tensor | Mapping[int, torch.Tensor]) -> torch.Tensor:
        """Args: (B, 3, S, S) images, or {image size: images} when subpaths differ in size.
        Returns logits (B, C)."""
        router = getattr(self, ROUTER)
        model = MultipathVit(
            [getattr(self, slot) for slot in self.slots],
            {
                "norm.weight": router.norm.weight,
                "norm.bias": router.norm.bias,
                "dense.weight": router.dense.weight,
                "dense.bias": router.dense.bias,
            },
            [
                {"weight": adapter.weight, "bias": adapter.bias}
                for adapter in (
                    getattr(self, head_adapter_name(i)) for i in range(1, len(self.slots))
                )
            ],
            self.router_lr_mult,
        )
        return model(images)


def _slot_index(slot: str) -> int:
    prefix, _, number = slot.rpartition("_")
    if prefix != "path" or not number.isdigit():
        raise ExportError(f"multipath slot {slot!r}: expected path_<k>")
    return int(number)


def build_module(node: Mapping[str, Any]) -> nn.Module:
    """An untrained module of a model tree node (see the module docstring).

    Raises:
        ExportError: an unknown node type or a malformed node.
    """
    kind = node.get("type")
    try:
        if kind == "vit":
            return VisionTransformer(VitArch.from_dict(node["arch"]), int(node["image_size"]))
        if kind == "multipath":
            paths = {}
            for slot, sub in node["paths"].items():
                if sub.get("type") != "vit":
                    raise ExportError(f"multipath slot {slot!r}: a subpath must be a vit node")
                paths[slot] = build_module(sub)
            return MultipathModule(paths, float(node["router_lr_mult"]))
    except (KeyError, TypeError, ValueError) as error:
        if isinstance(error, ExportError):
            raise
        raise ExportError(f"malformed model node {kind!r}: {error!r}") from None
    raise ExportError(f"unknown model node type {kind!r}; known: vit, multipath")


def model_input_sizes(node: Mapping[str, Any]) -> list[int]:
    """The image sizes a model tree reads, in slot order (one for a ViT)."""
    if node["type"] == "vit":
        return [int(node["image_size"])]
    sizes: list[int] = []
    for slot in sorted(node["paths"], key=_slot_index):
        sizes += model_input_sizes(node["paths"][slot])
    return list(dict.fromkeys(sizes))


# Preprocessing --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Preprocessing:
    """Turns images into the model's input, exactly as the task pipeline evaluated them.

    Attributes:
        image_size: the `ds_image_size` hparam: an int, or a list of sizes (the model then
            takes {size: images}).
        storage_size: (H, W) the task's source stored images at; inputs of another size are
            first resized to it (PIL bilinear), as the source did. None: no such step.
    """

    image_size: int | list[int]
    storage_size: tuple[int, int] | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "image_size": self.image_size,
            "storage_size": list(self.storage_size) if self.storage_size else None,
            "steps": [
                "convert to RGB (grey repeated, alpha dropped, palette expanded)",
                "resize to storage_size (H, W), PIL bilinear, when the size differs",
                "resize to image_size: bilinear, half-pixel centres, no antialiasing "
                "(tf.image.resize)",
                "x / 127.5 - 1, clipped to [-1, 1]",
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Preprocessing:
        size = data["image_size"]
        storage = data.get("storage_size")
        return cls(
            image_size=[int(s) for s in size] if isinstance(size, list) else int(size),
            storage_size=(int(storage[0]), int(storage[1])) if storage else None,
        )

    def load_image(self, image: Any) -> np.ndarray:
        """One image (a PIL image, a file path, or an (H, W[, C]) uint8 array) as an
        (H, W, 3) uint8 array at the storage size.

        Raises:
            ValueError: the image cannot be read, naming it.
        """
        from munet.tasks.sources.decoded import decode_to_storage

        return decode_to_storage(image, self.storage_size, where=_describe(image))

    def __call__(self, images: Sequence[Any] | torch.Tensor) -> torch.Tensor | dict:
        """A batch of model inputs.

        Args:
            images: PIL images, file paths or uint8 arrays (each of any size and mode), or a
                uint8 (N, C, H, W) tensor already at the storage size.

        Returns:
            float32 (N, 3, S, S) in [-1, 1], or {S: ...} for a list `image_size`.
        """
        from munet.tasks.augment import AugmentConfig, preprocess

        if isinstance(images, torch.Tensor):
            batch = images
        else:
            arrays = [self.load_image(image) for image in images]
            if not arrays:
                raise ValueError("no images to preprocess")
            shapes = {a.shape for a in arrays}
            if len(shapes) > 1:
                raise ValueError(
                    f"images of several sizes {sorted(shapes)} without a storage size; "
                    "preprocess them one at a time"
                )
            batch = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2)
        config = AugmentConfig.from_hparams({"ds_image_size": self.image_size})
        return preprocess(batch, config, train=False)


def _describe(image: Any) -> str:
    if isinstance(image, (str, os.PathLike)):
        return str(image)
    return type(image).__name__


# Writing ------------------------------------------------------------------------------------
def tensor_sha256(tensor: torch.Tensor) -> str:
    """sha256 of a tensor's dtype, shape and bytes."""
    tensor = tensor.detach().to("cpu").contiguous()
    digest = hashlib.sha256(f"{tensor.dtype}|{tuple(tensor.shape)}|".encode())
    if tensor.numel():
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().data)
    return digest.hexdigest()


def save_exported(
    out_dir: str | os.PathLike[str],
    model: Mapping[str, Any],
    tensors: Mapping[str, torch.Tensor],
    *,
    preprocessing: Preprocessing,
    class_names: Sequence[str] | None,
    provenance: Mapping[str, Any],
    metrics: Mapping[str, Any],
) -> FsPath:
    """Writes an export folder (see the module docstring), atomically.

    The tensors are checked against the model tree (a module is built and loaded strictly)
    before anything is written. The folder is written under a temporary name beside `out_dir`
    and renamed into place, so an interrupted export leaves no half folder.

    Args:
        out_dir: the folder to create; it must not exist, or be empty.
        model: the model tree.
        tensors: {flat name: tensor}, the module's state-dict names.
        preprocessing: what inputs need.
        class_names: one name per class, or None.
        provenance: where the model comes from (agent, path id, task, source, state, ...).
        metrics: the path's metrics to report (test quality, quality, score, ...).

    Returns:
        The folder.

    Raises:
        ExportError: `out_dir` holds files, or the tensors do not fit the model tree.
    """
    out = FsPath(out_dir).expanduser()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"export folder {str(out)!r} exists and is not empty; choose another")
    module = build_module(model)
    # Copies: subpaths of a multipath path share frozen tensors, and a safetensors file holds
    # each tensor on its own.
    flat = {name: t.detach().to("cpu", torch.float32).clone() for name, t in tensors.items()}
    _load_strict(module, flat, str(out))
    num_classes = _num_classes(module)
    if class_names is not None and len(class_names) != num_classes:
        raise ExportError(f"{len(class_names)} class names for a model of {num_classes} classes")
    config = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "model": dict(model),
        "num_classes": num_classes,
        "class_names": list(class_names) if class_names is not None else None,
        "preprocessing": preprocessing.to_dict(),
        "provenance": dict(provenance),
        "metrics": dict(metrics),
        "num_params": sum(t.numel() for t in flat.values()),
        "tensors": {
            name: {
                "shape": list(t.shape),
                "dtype": str(t.dtype).removeprefix("torch."),
                "sha256": tensor_sha256(t),
            }
            for name, t in sorted(flat.items())
        },  # fmt: skip
    }
    from safetensors.torch import save_file

    out.parent.mkdir(parents=True, exist_ok=True)
    work = out.parent / f".{out.name}.tmp-{secrets.token_hex(4)}"
    work.mkdir()
    try:
        save_file(flat, str(work / MODEL_FILE), metadata={"format": EXPORT_FORMAT})
        (work / CONFIG_FILE).write_text(json.dumps(config, indent=1, default=_json_default))
        (work / CARD_FILE).write_text(model_card(config))
        if out.exists():
            out.rmdir()  # empty, checked above
        os.replace(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return out


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"value {value!r} is not JSON-serializable")


def _num_classes(module: nn.Module) -> int:
    main = module.path_0 if isinstance(module, MultipathModule) else module
    return int(main.arch.num_classes)


def _load_strict(module: nn.Module, flat: Mapping[str, torch.Tensor], where: str) -> None:
    expected = {name: tuple(p.shape) for name, p in module.state_dict().items()}
    missing = sorted(set(expected) - set(flat))
    unexpected = sorted(set(flat) - set(expected))
    if missing or unexpected:
        raise ExportError(
            f"{where}: tensors do not fit the model: missing {missing[:5]}"
            f"{' ...' if len(missing) > 5 else ''}, unexpected {unexpected[:5]}"
            f"{' ...' if len(unexpected) > 5 else ''}"
        )
    for name, shape in expected.items():
        if tuple(flat[name].shape) != shape:
            raise ExportError(
                f"{where}: tensor {name!r} has shape {tuple(flat[name].shape)}, the model "
                f"expects {shape}"
            )
    module.load_state_dict(dict(flat), strict=True)


def model_card(config: Mapping[str, Any]) -> str:
    """The README.md of an export folder: what the model is, its metrics, how to use it."""
    provenance = config.get("provenance", {})
    metrics = config.get("metrics", {})
    names = config.get("class_names")
    classes = ", ".join(names) if names else f"{config['num_classes']} (unnamed)"
    preprocessing = config["preprocessing"]
    lines = [
        f"# {provenance.get('task_name', 'munet model')}: {provenance.get('full_id', '')}",
        "",
        "An image classifier grown by munet (a PyTorch µNet), exported as a standalone model.",
        "",
        "| | |",
        "|---|---|",
        f"| task | {provenance.get('task_name', '-')} |",
        f"| data | {provenance.get('source') or '-'} "
        f"(split rule: {provenance.get('split_rule') or '-'}) |",
        f"| agent / path | {provenance.get('agent_id', '-')} / {provenance.get('path_id', '-')} |",
        f"| state | {provenance.get('state', '-')} |",
        f"| model | {config['model']['type']}, {config['num_params']} parameters |",
        f"| input | image size {preprocessing['image_size']}, storage size "
        f"{preprocessing.get('storage_size')} |",
        f"| classes | {classes} |",
        "",
        "## Metrics",
        "",
        "| metric | value |",
        "|---|---|",
    ]
    for key in ("test_quality", "quality", "score", "accounted_params", "flops", "num_cycles"):
        value = metrics.get(key)
        if value is not None:
            shown = f"{value:.4f}" if isinstance(value, float) and abs(value) < 10 else value
            lines.append(f"| {key} | {shown} |")
    lines += [
        "",
        "test_quality is the accuracy on the task's test split, quality the validation accuracy",
        "the agent selected the path by, score the quality discounted by parameters and FLOPs.",
        "",
        "## Use",
        "",
        "```",
        "munet predict THIS_FOLDER images/ --top-k 3",
        "```",
        "",
        "```python",
        "import munet",
        "model, preprocess = munet.load_exported('THIS_FOLDER')",
        "probabilities = model(preprocess(['cat.png'])).softmax(-1)",
        "```",
        "",
    ]
    return "\n".join(lines)


# Reading ------------------------------------------------------------------------------------
def read_export_config(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The parsed `config.json` of an export folder, checked for format and version.

    Raises:
        ExportError: a missing folder or file, bad JSON, another format or version.
    """
    folder = FsPath(folder).expanduser()
    if not folder.is_dir():
        raise ExportError(f"export folder {str(folder)!r} does not exist")
    path = folder / CONFIG_FILE
    try:
        config = json.loads(path.read_text())
    except FileNotFoundError:
        raise ExportError(f"export folder {str(folder)!r} has no {CONFIG_FILE}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ExportError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(config, dict) or config.get("format") != EXPORT_FORMAT:
        raise ExportError(f"{path}: not a munet export (format {EXPORT_FORMAT!r} expected)")
    if config.get("version") != EXPORT_VERSION:
        raise ExportError(
            f"{path}: export version {config.get('version')!r}; this munet reads "
            f"version {EXPORT_VERSION}"
        )
    return config


def load_exported(folder: str | os.PathLike[str]) -> tuple[nn.Module, Preprocessing]:
    """Loads an export folder: a plain module in eval mode and its preprocessing.

    No state dir and no pickle: the config is JSON, the tensors safetensors. Every tensor is
    checked against the shape and sha256 recorded in `config.json`.

    The module carries `module.munet_config` (the parsed config) and `module.class_names`.

    Example::

        model, preprocess = munet.load_exported("exports/flowers")
        logits = model(preprocess(["rose.jpg", "tulip.png"]))

    Raises:
        ExportError: a missing or malformed file, a tensor missing, extra, reshaped or
            changed (naming it).
    """
    folder = FsPath(folder).expanduser()
    config = read_export_config(folder)
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    weights = folder / MODEL_FILE
    if not weights.is_file():
        raise ExportError(f"export folder {str(folder)!r} has no {MODEL_FILE}")
    try:
        flat = load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as error:
        raise ExportError(f"{weights}: unreadable safetensors file ({error})") from None
    try:
        recorded = config["tensors"]
        missing = sorted(set(recorded) - set(flat))
        extra = sorted(set(flat) - set(recorded))
        if missing or extra:
            raise ExportError(
                f"{weights}: tensors differ from {CONFIG_FILE}: missing {missing}, "
                f"unexpected {extra}"
            )
        for name, entry in recorded.items():
            tensor = flat[name]
            if list(tensor.shape) != list(entry["shape"]):
                raise ExportError(
                    f"{weights}: tensor {name!r} has shape {list(tensor.shape)}, {CONFIG_FILE} "
                    f"records {entry['shape']}"
                )
            if tensor_sha256(tensor) != entry["sha256"]:
                raise ExportError(
                    f"{weights}: tensor {name!r} does not match its sha256 in {CONFIG_FILE} "
                    "(the file was changed after export)"
                )
        module = build_module(config["model"])
        preprocessing = Preprocessing.from_dict(config["preprocessing"])
    except (KeyError, TypeError) as error:
        raise ExportError(f"{folder / CONFIG_FILE}: malformed ({error!r})") from None
    _load_strict(module, flat, str(weights))
    module.eval()
    module.requires_grad_(False)
    module.munet_config = config
    names = config.get("class_names")
    module.class_names = tuple(names) if names else None
    return module, preprocessing
