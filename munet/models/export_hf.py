"""A singlepath export as a Hugging Face transformers `ViTForImageClassification` folder.

`save_hf(MUNET_EXPORT, OUT)` writes what `save_pretrained` would:

    OUT/config.json              a `ViTConfig` (model_type "vit") for munet's ViT
    OUT/model.safetensors        the tensors under transformers' `save_pretrained` names
    OUT/preprocessor_config.json a stock `ViTImageProcessor` (resize to the image size, x/255,
                                 (x - 0.5) / 0.5, i.e. munet's x / 127.5 - 1) whose `auto_map`
                                 names munet's own processor, and the task's `storage_size`
    OUT/image_processing_munet.py that processor (a copy of munet/models/export_hf_processor.py)
    OUT/README.md                the model card (Hugging Face front matter + munet's metrics)

so `ViTForImageClassification.from_pretrained(OUT)` computes munet's logits to float32
rounding. The inverse of `munet.models.checkpoints.huggingface`'s key map (block i):

    embedding.{weight,bias}        -> vit.embeddings.patch_embeddings.projection.{weight,bias}
    cls.token                      -> vit.embeddings.cls_token
    posembed_input.pos_embedding   -> vit.embeddings.position_embeddings
    encoderblock_i.norm1           -> vit.encoder.layer.i.layernorm_before
    encoderblock_i.attn.qkv        -> vit.encoder.layer.i.attention.attention.{query,key,value}
                                      (the fused rows q|k|v split in three)
    encoderblock_i.attn.proj       -> vit.encoder.layer.i.attention.output.dense
    encoderblock_i.norm2           -> vit.encoder.layer.i.layernorm_after
    encoderblock_i.mlp.fc1 / fc2   -> vit.encoder.layer.i.intermediate.dense / output.dense
    encoder_norm                   -> vit.layernorm
    head                           -> classifier

What makes transformers compute munet's function: `hidden_act: gelu_pytorch_tanh` (munet's
Flax GELU is the tanh form; transformers' default is the exact one), `layer_norm_eps: 1e-6`
(transformers' default is 1e-12), dropout 0, `qkv_bias: true`, and the classifier reading the
final LayerNorm's cls token (what `ViTForImageClassification` does; it has no pooler).

Preprocessing: munet evaluates an image by resizing it (PIL bilinear) to the task's storage
size, then to the image size (`tf.image.resize`: bilinear, no antialiasing). A stock image
processor has one resize, so it gives munet's input only when the storage size is the image
size (`stock_processor_is_exact`). `AutoImageProcessor.from_pretrained(OUT,
trust_remote_code=True)` loads `image_processing_munet.MunetImageProcessor` instead, which does
munet's two steps, so transformers then predicts like `munet predict` on any image
(`munet.models.export_check` measures both).

Writing needs no transformers (JSON and safetensors); loading the folder does.

A hybrid ViT (a convolutional ResNet stem before the patch embedding: R+Ti/16, R50+B/16, ...)
has no transformers form: transformers 5.x has no ViT-hybrid class (`ViTHybrid*` was
deprecated in 4.x and removed), so it is refused (`hf_refusal`) before anything is written;
`--format onnx` and munet's own folder export it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path as FsPath
from typing import Any

import torch

from munet.models.export_tree import ExportError
from munet.models.vit import LAYER_NORM_EPS, VisionTransformer

__all__ = [
    "HF_ACTIVATION",
    "PROCESSOR_MODULE",
    "hf_config",
    "hf_preprocessor_config",
    "hf_refusal",
    "hf_state_dict",
    "save_hf",
    "stock_processor_is_exact",
]

# transformers' name for the GELU munet computes (torch's tanh approximation).
HF_ACTIVATION = "gelu_pytorch_tanh"
_PIL_BILINEAR = 2  # PIL.Image.Resampling.BILINEAR, as transformers stores `resample`
# The module `trust_remote_code=True` loads: munet/models/export_hf_processor.py, copied.
PROCESSOR_MODULE = "image_processing_munet"
_PROCESSOR_SOURCE = FsPath(__file__).with_name("export_hf_processor.py")
_BLOCK_MODULES = {
    "norm1": "layernorm_before",
    "attn.proj": "attention.output.dense",
    "norm2": "layernorm_after",
    "mlp.fc1": "intermediate.dense",
    "mlp.fc2": "output.dense",
}
_TOP = {
    "embedding.weight": "vit.embeddings.patch_embeddings.projection.weight",
    "embedding.bias": "vit.embeddings.patch_embeddings.projection.bias",
    "cls.token": "vit.embeddings.cls_token",
    "posembed_input.pos_embedding": "vit.embeddings.position_embeddings",
    "encoder_norm.weight": "vit.layernorm.weight",
    "encoder_norm.bias": "vit.layernorm.bias",
    "head.weight": "classifier.weight",
    "head.bias": "classifier.bias",
}


def singlepath_vit(module: torch.nn.Module, where: str) -> VisionTransformer:
    """The module as a ViT with a head, or a clear error for what other formats cannot hold.

    Raises:
        ExportError: a multipath model, or a headless ViT.
    """
    if not isinstance(module, VisionTransformer):
        raise ExportError(
            f"{where}: a {type(module).__name__} (a multipath path: several ViTs, a router and "
            "connectors) has no single-ViT form; --format hf and --format onnx export "
            "singlepath paths only. Export it with --format munet (the default)"
        )
    if module.head is None:
        raise ExportError(f"{where}: a headless ViT has no classifier to export")
    return module


def hf_refusal(node: Mapping[str, Any], where: str) -> str | None:
    """Why a model tree (munet.models.export_tree) has no transformers form, as an error
    message naming `where`; None when it may have one (what only a model tree tells: a hybrid
    ViT; `singlepath_vit` refuses multipath and headless models on the built module).

    Checked before anything is written (`munet export --format hf` checks the path's tree
    before it writes the intermediate munet folder).
    """
    if node.get("type") != "vit" or not (node.get("arch") or {}).get("stem"):
        return None
    return (
        f"{where}: a hybrid ViT (a convolutional ResNet stem, components stem_root, "
        "stem_block1, ..., before the patch embedding) has no transformers form: "
        "transformers 5.x has no ViT-hybrid class (ViTHybridForImageClassification was "
        "removed), so --format hf exports plain ViTs only. Export it with --format onnx "
        "(onnxruntime) or --format munet (the default: munet predict, munet.load_exported)"
    )


def described(module: torch.nn.Module, folder: str | os.PathLike[str]) -> str:
    """What an error names: the exported path (`agent:id`) when the export says, else the
    folder."""
    provenance = getattr(module, "munet_config", {}).get("provenance") or {}
    return f"path {provenance['full_id']}" if provenance.get("full_id") else str(folder)


def hf_state_dict(module: VisionTransformer) -> dict[str, torch.Tensor]:
    """munet's ViT tensors under transformers' `save_pretrained` names (float32 copies)."""
    out: dict[str, torch.Tensor] = {}
    for name, tensor in module.state_dict().items():
        tensor = tensor.detach().to("cpu", torch.float32).contiguous().clone()
        if name in _TOP:
            out[_TOP[name]] = tensor
            continue
        block, _, rest = name.partition(".")
        index = int(block.removeprefix("encoderblock_"))
        prefix = f"vit.encoder.layer.{index}."
        module_name, _, kind = rest.rpartition(".")
        if module_name == "attn.qkv":
            # Fused rows q|k|v (heads contiguous within each part), as the reader fuses them.
            for part, chunk in zip(("query", "key", "value"), tensor.chunk(3), strict=True):
                out[f"{prefix}attention.attention.{part}.{kind}"] = chunk.contiguous().clone()
        else:
            out[f"{prefix}{_BLOCK_MODULES[module_name]}.{kind}"] = tensor
    return out


def hf_config(module: VisionTransformer, class_names: list[str] | None) -> dict[str, Any]:
    """The `ViTConfig` (as a `config.json` dict) under which transformers computes munet's ViT."""
    arch = module.arch
    names = class_names or [f"LABEL_{i}" for i in range(arch.num_classes)]
    return {
        "architectures": ["ViTForImageClassification"],
        "model_type": "vit",
        "hidden_size": arch.width,
        "num_hidden_layers": arch.num_layers,
        "num_attention_heads": arch.num_heads,
        "intermediate_size": arch.mlp_dim,
        "hidden_act": HF_ACTIVATION,
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
        "initializer_range": 0.02,
        "layer_norm_eps": LAYER_NORM_EPS,
        "image_size": int(module.image_size),
        "patch_size": arch.patch_size,
        "num_channels": 3,
        "qkv_bias": True,
        "encoder_stride": arch.patch_size,
        "id2label": {str(i): name for i, name in enumerate(names)},
        "label2id": {name: i for i, name in enumerate(names)},
        "dtype": "float32",
    }


def hf_preprocessor_config(
    image_size: int, storage_size: tuple[int, int] | list[int] | None = None
) -> dict[str, Any]:
    """`preprocessor_config.json`: a stock `ViTImageProcessor` (one PIL bilinear resize to
    `image_size`, then x / 255 normalised with mean 0.5 and std 0.5, i.e. munet's x / 127.5 - 1)
    whose `auto_map` names the folder's `image_processing_munet.MunetImageProcessor`, munet's
    own two-step resize through `storage_size`, for `trust_remote_code=True`."""
    return {
        "image_processor_type": "ViTImageProcessor",
        "auto_map": {"AutoImageProcessor": f"{PROCESSOR_MODULE}.MunetImageProcessor"},
        "do_convert_rgb": True,
        "do_resize": True,
        "size": {"height": int(image_size), "width": int(image_size)},
        "resample": _PIL_BILINEAR,
        "do_rescale": True,
        "rescale_factor": 1 / 255,
        "do_normalize": True,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "storage_size": [int(s) for s in storage_size] if storage_size else None,
    }


def stock_processor_is_exact(image_size: int, storage_size: Sequence[int] | None) -> bool:
    """Whether the stock `ViTImageProcessor` gives munet's input for every opaque image: when
    munet's second resize (storage size to image size) never runs, both are one PIL bilinear
    resize to the image size."""
    return storage_size is not None and tuple(storage_size) == (image_size, image_size)


def hf_card(config: Mapping[str, Any], munet_card: str) -> str:
    """munet's model card under Hugging Face front matter, with transformers usage."""
    front = "\n".join(
        [
            "---",
            "library_name: transformers",
            "pipeline_tag: image-classification",
            "tags:",
            "- munet",
            "- vision-transformer",
            "---",
            "",
        ]
    )
    preprocessing = config["preprocessing"]
    size, storage = preprocessing["image_size"], preprocessing.get("storage_size")
    if stock_processor_is_exact(size, storage):
        stock = (
            f"this model's task stored its images at its image size ({size} px), so the stock "
            "processor also gives munet's input, for every image without transparent pixels "
            "(transformers composites those onto white; munet drops the alpha channel)."
        )
    else:
        if storage:
            munet_way = (
                f"to the task's storage size ({storage[0]} x {storage[1]}), then to {size} px "
                "without antialiasing"
            )
        else:  # the export could not read the task's data
            munet_way = f"straight to {size} px without antialiasing"
        stock = (
            f"it resizes once to {size} px (PIL bilinear, antialiased), where munet resizes "
            f"{munet_way}, so its predictions differ from munet's on some images "
            "(docs/export.md gives measured figures)."
        )
    use = "\n".join(
        [
            "## Use with transformers",
            "",
            "```python",
            "from PIL import Image",
            "from transformers import AutoImageProcessor, ViTForImageClassification",
            "",
            "processor = AutoImageProcessor.from_pretrained('THIS_FOLDER', trust_remote_code=True)",
            "model = ViTForImageClassification.from_pretrained('THIS_FOLDER').eval()",
            "inputs = processor(images=[Image.open('cat.png')], return_tensors='pt')",
            "label = model.config.id2label[model(**inputs).logits.argmax(-1).item()]",
            "```",
            "",
            f"`trust_remote_code=True` runs this folder's `{PROCESSOR_MODULE}.py` (one short "
            "file, read it first; it imports Pillow, numpy, torch and transformers): munet's "
            "own preprocessing, RGB, a PIL "
            "bilinear resize to the task's storage size, a bilinear resize to the image size "
            "without antialiasing, x / 127.5 - 1. With it the logits are `munet predict`'s "
            "for any image, to float32 rounding.",
            "",
            "Without it transformers uses the stock `ViTImageProcessor` "
            "`preprocessor_config.json` also describes: " + stock,
            "",
        ]
    )
    body = munet_card.split("\n## Use\n", 1)[0].rstrip() + "\n\n"
    return front + body + use


def save_hf(munet_folder: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> FsPath:
    """Writes a transformers `ViTForImageClassification` folder from a munet export folder.

    Args:
        munet_folder: a folder written by `munet.models.export.save_exported`.
        out_dir: the folder to create; it must not exist, or be empty.

    Returns:
        The folder.

    Raises:
        ExportError: a multipath, headless or hybrid model, a damaged export, `out_dir` not
            empty; nothing is written then.
    """
    from munet.files import save_safetensors_file
    from munet.models.export import load_exported, model_card

    module, preprocessing = load_exported(munet_folder)
    where = described(module, munet_folder)
    refusal = hf_refusal(module.munet_config["model"], where)
    if refusal is not None:
        raise ExportError(refusal)
    vit = singlepath_vit(module, where)
    if not isinstance(preprocessing.image_size, int):
        raise ExportError(f"{munet_folder}: image size {preprocessing.image_size}: expected one")
    out = new_folder(out_dir)
    config = module.munet_config
    names = list(module.class_names) if module.class_names else None
    work = out.parent / f".{out.name}.tmp-{secrets.token_hex(4)}"
    work.mkdir()
    try:
        save_safetensors_file(hf_state_dict(vit), work / "model.safetensors", {"format": "pt"})
        (work / "config.json").write_text(json.dumps(hf_config(vit, names), indent=2))
        processor = hf_preprocessor_config(preprocessing.image_size, preprocessing.storage_size)
        (work / "preprocessor_config.json").write_text(json.dumps(processor, indent=2))
        shutil.copyfile(_PROCESSOR_SOURCE, work / f"{PROCESSOR_MODULE}.py")
        (work / "README.md").write_text(hf_card(config, model_card(config)))
        move_into_place(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return out


def new_folder(out_dir: str | os.PathLike[str], create_parent: bool = True) -> FsPath:
    """`out_dir` as a path, checked to be new or empty (its parent is created unless
    `create_parent` is False: a check that writes nothing).

    Raises:
        ExportError: it exists and holds files, or is a file.
    """
    out = FsPath(out_dir).expanduser()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"export folder {str(out)!r} exists and is not empty; choose another")
    if create_parent:
        out.parent.mkdir(parents=True, exist_ok=True)
    return out


def move_into_place(work: FsPath, out: FsPath) -> None:
    """Renames a finished temporary folder to `out` (an empty `out` is replaced)."""
    if out.exists():
        out.rmdir()  # empty, checked by new_folder
    os.replace(work, out)
