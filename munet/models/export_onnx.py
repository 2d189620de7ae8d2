"""A singlepath export as an ONNX model, for onnxruntime and every runtime that reads ONNX.

`save_onnx(MUNET_EXPORT, OUT)` writes

    OUT/model.onnx    input `pixel_values` float32 (batch, 3, H, W) in [-1, 1], output
                      `logits` float32 (batch, classes); batch, H and W are free. Its metadata
                      (`metadata_props`) holds `class_names` and `preprocessing` as JSON.
    OUT/config.json   munet's export config (model tree, classes, preprocessing, provenance,
                      metrics) without the tensor table, format `munet-onnx-model`
    OUT/README.md     the model card, with the preprocessing as code

The graph begins with munet's second resize: bilinear to the image size S, half-pixel
centres, no antialiasing (ONNX `Resize`, the `tf.image.resize` munet evaluates with; the
identity for an S x S input). So the preprocessing a user writes is the step every image
library has: RGB, PIL bilinear resize to the task's storage size (H, W) when the size differs,
x / 127.5 - 1; onnxruntime then computes munet's logits for any image to float32 rounding
(`munet.models.export_check` measures it). An input already at S x S (what munet's own
preprocessing returns) passes through unchanged.

The graph is traced from munet's module (`torch.onnx.export`, TorchScript exporter, opset
17). Writing needs the `onnx` package (the `export` extra).

A hybrid ViT's stem (weight-standardised convolutions with XLA's "SAME" padding, group norms,
the root's max pool) traces to plain ONNX ops (Conv, Pad, InstanceNormalization, MaxPool), so
hybrids export like plain ViTs (tests/models/test_hybrid_export.py: onnxruntime's logits within
atol 1e-5 of munet's; about 1e-6 measured). `--format hf` refuses them (munet.models.export_hf).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import warnings
from pathlib import Path as FsPath

import torch
import torch.nn.functional as F
from torch import nn

from munet.models.export_hf import described, move_into_place, new_folder, singlepath_vit
from munet.models.export_tree import ExportError

__all__ = ["ONNX_FORMAT", "ONNX_OPSET", "save_onnx"]

ONNX_FORMAT = "munet-onnx-model"
ONNX_OPSET = 17
INPUT_NAME = "pixel_values"
OUTPUT_NAME = "logits"


def save_onnx(munet_folder: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> FsPath:
    """Writes an ONNX folder (see the module docstring) from a munet export folder.

    Args:
        munet_folder: a folder written by `munet.models.export.save_exported`.
        out_dir: the folder to create; it must not exist, or be empty.

    Returns:
        The folder.

    Raises:
        ExportError: a multipath or headless model, a damaged export, `out_dir` not empty.
        ImportError: the `onnx` package is missing (naming the extra).
    """
    from munet.models.export import CARD_FILE, load_exported, model_card

    try:
        import onnx
    except ImportError as error:
        raise ImportError(
            "--format onnx needs the 'onnx' package: pip install 'munet-evolve[export]'"
        ) from error
    module, preprocessing = load_exported(munet_folder)
    vit = singlepath_vit(module, described(module, munet_folder))
    size = preprocessing.image_size
    if not isinstance(size, int):
        raise ExportError(f"{munet_folder}: image size {size}: expected one")
    out = new_folder(out_dir)
    storage = preprocessing.storage_size
    config = {k: v for k, v in module.munet_config.items() if k != "tensors"}
    config["format"] = ONNX_FORMAT
    config["onnx"] = {
        "file": "model.onnx",
        "opset": ONNX_OPSET,
        "input": INPUT_NAME,
        "output": OUTPUT_NAME,
        # What the graph expects: the image at the storage size (any size when None).
        "input_size": list(storage) if storage else None,
        "resized_in_graph_to": size,
    }
    work = out.parent / f".{out.name}.tmp-{secrets.token_hex(4)}"
    work.mkdir()
    try:
        onnx_file = work / "model.onnx"
        # Traced at the storage size, so the example runs the resize the graph carries.
        example = torch.zeros(2, 3, *(storage or (size, size)))
        with warnings.catch_warnings():
            # The TorchScript exporter's deprecation notice and the tracer's note on the
            # patch-grid check (a constant for a fixed image size) say nothing to a user.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                ResizedInput(vit, size).eval(),
                (example,),
                str(onnx_file),
                dynamo=False,
                input_names=[INPUT_NAME],
                output_names=[OUTPUT_NAME],
                dynamic_axes={
                    INPUT_NAME: {0: "batch", 2: "height", 3: "width"},
                    OUTPUT_NAME: {0: "batch"},
                },
                opset_version=ONNX_OPSET,
            )
        graph = onnx.load(str(onnx_file))
        for key, value in (
            ("class_names", json.dumps(config.get("class_names"))),
            ("preprocessing", json.dumps(config["preprocessing"])),
            ("producer", "munet"),
        ):
            entry = graph.metadata_props.add()
            entry.key, entry.value = key, value
        onnx.checker.check_model(graph)
        onnx.save(graph, str(onnx_file))
        (work / "config.json").write_text(json.dumps(config, indent=1))
        card = model_card(module.munet_config).split("\n## Use\n", 1)[0].rstrip()
        (work / CARD_FILE).write_text(card + "\n\n" + onnx_usage(size, storage))
        move_into_place(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return out


class ResizedInput(nn.Module):
    """A ViT behind munet's second evaluation resize: bilinear to (size, size), half-pixel
    centres, no antialiasing, as `munet.tasks.augment.resample` computes it (that resize is
    linear and keeps constants, so it commutes with munet's x / 127.5 - 1)."""

    def __init__(self, vit: nn.Module, size: int) -> None:
        super().__init__()
        self.vit = vit
        self.size = int(size)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        resized = F.interpolate(
            pixel_values, size=(self.size, self.size), mode="bilinear", align_corners=False
        )  # the identity for an input at (size, size)
        return self.vit(resized)


def onnx_usage(size: int, storage: tuple[int, int] | None) -> str:
    """The model card's "Use with onnxruntime" section: the preprocessing as code."""
    if storage:
        height, width = storage
        resize = (
            f"if image.size != ({width}, {height}):  # the storage size (width, height)\n"
            f"    image = image.resize(({width}, {height}), Image.BILINEAR)\n"
        )
        said = (
            f"The image goes in at the task's storage size ({height} x {width}), as munet "
            f"stored the task's images; the graph resizes it to {size} x {size} as munet's "
            "evaluation did, so the logits are `munet predict`'s for any image (float32 "
            "rounding apart)."
        )
    else:
        resize = ""
        said = (
            f"The export had no storage size (the task's data could not be read), so munet "
            f"resizes any image straight to {size} x {size}; the graph does the same."
        )
    return f"""## Use with onnxruntime

```python
import numpy as np, onnxruntime
from PIL import Image

session = onnxruntime.InferenceSession('THIS_FOLDER/model.onnx')
image = Image.open('cat.png').convert('RGB')
{resize}pixel_values = (np.asarray(image, np.float32) / 127.5 - 1).transpose(2, 0, 1)[None]
logits = session.run(['logits'], {{'pixel_values': pixel_values}})[0]
```

{said}
"""
