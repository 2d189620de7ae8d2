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

The model tree describes the path generically over its components (munet/models/
export_tree.py): a `vit` node, or a `multipath` node whose slots are `vit` nodes.

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
from pathlib import Path as FsPath
from typing import Any

import torch
from torch import nn

from munet.models.export_preprocessing import Preprocessing
from munet.models.export_tree import ExportError, MultipathModule, build_module

__all__ = [
    "CARD_FILE",
    "CONFIG_FILE",
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "MODEL_FILE",
    "ExportError",
    "MultipathModule",
    "Preprocessing",
    "build_module",
    "load_exported",
    "load_module_tensors",
    "model_card",
    "read_export_config",
    "save_exported",
    "tensor_sha256",
]

EXPORT_FORMAT = "munet-exported-model"
EXPORT_VERSION = 1
MODEL_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
CARD_FILE = "README.md"


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
    class_metrics: Mapping[str, Any] | None = None,
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
        class_metrics: per-class test accuracy, confusion matrix and top-5
            (`munet.models.class_metrics.ClassMetrics.to_dict()`), or None.

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
    load_module_tensors(module, flat, str(out))
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
        "class_metrics": dict(class_metrics) if class_metrics is not None else None,
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
    from munet.files import save_safetensors_file

    out.parent.mkdir(parents=True, exist_ok=True)
    work = out.parent / f".{out.name}.tmp-{secrets.token_hex(4)}"
    work.mkdir()
    try:
        save_safetensors_file(flat, work / MODEL_FILE, metadata={"format": EXPORT_FORMAT})
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


def load_module_tensors(module: nn.Module, flat: Mapping[str, torch.Tensor], where: str) -> None:
    """Loads {flat name: tensor} into a module, refusing missing, extra or reshaped tensors.

    Raises:
        ExportError: naming the tensors (`where` says which file or path they come from).
    """
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
    per_class = config.get("class_metrics")
    if per_class and per_class.get("top5_accuracy") is not None:
        lines.append(f"| test top-5 accuracy | {per_class['top5_accuracy']:.4f} |")
    lines += [
        "",
        "test_quality is the accuracy on the task's test split, quality the validation accuracy",
        "the agent selected the path by, score the quality discounted by parameters and FLOPs.",
        "",
    ]
    if per_class:
        from munet.models.class_metrics import ClassMetrics, class_markdown

        lines += [
            "## Per-class test accuracy",
            "",
            f"On the task's test split ({per_class.get('num_examples')} examples), measured "
            "with this folder's tensors at export.",
            "",
            class_markdown(ClassMetrics.from_dict(per_class)),
            "",
        ]
    lines += [
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
    load_module_tensors(module, flat, str(weights))
    module.eval()
    module.requires_grad_(False)
    module.munet_config = config
    names = config.get("class_names")
    module.class_names = tuple(names) if names else None
    return module, preprocessing
