"""ViT checkpoints in the formats users already have, read into munet's component names.
Nothing here unpickles.

One module per format, over shared parts:

- `augreg_npz`: Google's `.npz` (vit_jax augreg, big_vision; all prefixes and block layouts);
  `augreg_npz_layout` tells those layouts apart; `augreg_npz_writer` writes them (`save_npz`).
- `timm`: timm's state-dict names; `munet_safetensors`: munet's own names (and
  `save_safetensors`, in either).
- `huggingface`: transformers' ViTModel / ViTForImageClassification: `save_pretrained`
  folders (config.json + safetensors or pytorch_model.bin, sharded or not) and their keys.
- `torch_state_dict`: `.pth` / `.pt` / `.bin` files via `torch.load(weights_only=True)`.
- `state_dict`: telling a flat state dict's naming apart by key layout; safetensors files.
- `common`: the error, `RawCheckpoint`, helpers; `loading`: `read_checkpoint` (dispatch on
  the path) and `load_checkpoint` (fit to an architecture: first blocks, position embedding
  resized, head replaced unless the class count matches, every shape checked).
"""

from munet.models.checkpoints.augreg_npz_layout import NPZ_PREFIXES, NpzLayout, detect_npz_layout
from munet.models.checkpoints.augreg_npz_writer import save_npz
from munet.models.checkpoints.common import CheckpointError, RawCheckpoint
from munet.models.checkpoints.loading import load_checkpoint, read_checkpoint
from munet.models.checkpoints.munet_safetensors import save_safetensors

__all__ = [
    "NPZ_PREFIXES",
    "CheckpointError",
    "NpzLayout",
    "RawCheckpoint",
    "detect_npz_layout",
    "load_checkpoint",
    "read_checkpoint",
    "save_npz",
    "save_safetensors",
]
