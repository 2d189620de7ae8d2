"""A singlepath export as an ONNX model, for onnxruntime and every runtime that reads ONNX.

`save_onnx(MUNET_EXPORT, OUT)` writes

    OUT/model.onnx    input `pixel_values` float32 (batch, 3, S, S) in [-1, 1], output
                      `logits` float32 (batch, classes); the batch size is free. Its metadata
                      (`metadata_props`) holds `class_names` and `preprocessing` as JSON.
    OUT/config.json   munet's export config (model tree, classes, preprocessing, provenance,
                      metrics) without the tensor table, format `munet-onnx-model`
    OUT/README.md     the model card

The graph is traced from munet's module (`torch.onnx.export`, TorchScript exporter, opset
17), so onnxruntime computes munet's logits to float32 rounding. Inputs are what munet's
preprocessing makes (`munet.load_exported(...)[1]`, or x / 127.5 - 1 for an image already
at the image size). Writing needs the `onnx` package (the `export` extra).

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
    config = {k: v for k, v in module.munet_config.items() if k != "tensors"}
    config["format"] = ONNX_FORMAT
    config["onnx"] = {"file": "model.onnx", "opset": ONNX_OPSET, "input": INPUT_NAME,
                      "output": OUTPUT_NAME}  # fmt: skip
    work = out.parent / f".{out.name}.tmp-{secrets.token_hex(4)}"
    work.mkdir()
    try:
        onnx_file = work / "model.onnx"
        example = torch.zeros(2, 3, size, size)
        with warnings.catch_warnings():
            # The TorchScript exporter's deprecation notice and the tracer's note on the
            # patch-grid check (a constant for a fixed image size) say nothing to a user.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                vit,
                (example,),
                str(onnx_file),
                dynamo=False,
                input_names=[INPUT_NAME],
                output_names=[OUTPUT_NAME],
                dynamic_axes={INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}},
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
        (work / CARD_FILE).write_text(card + "\n\n" + _USE.replace("SIZE", str(size)))
        move_into_place(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return out


_USE = """## Use with onnxruntime

```python
import numpy as np, onnxruntime
from PIL import Image

session = onnxruntime.InferenceSession('THIS_FOLDER/model.onnx')
image = np.asarray(Image.open('cat.png').convert('RGB').resize((SIZE, SIZE), Image.BILINEAR))
pixel_values = (image.astype(np.float32) / 127.5 - 1).transpose(2, 0, 1)[None]
logits = session.run(['logits'], {'pixel_values': pixel_values})[0]
```

munet's own preprocessing (`munet.load_exported` on the munet export) resizes in two steps
as the task pipeline did; for images already at SIZE px both give the same input.
"""
