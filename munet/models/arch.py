"""ViT architectures: named sizes and the hashable `VitArch` a path's model is built from.

A `VitSize` is a family member as published (Ti/16, B/16, R50+B/16, ...): width, depth, heads,
MLP width, patch size and, for a hybrid, its convolutional stem. A `VitArch` is one concrete
model: the size's shapes plus the number of encoder blocks actually used (a path may use fewer
or more than the size's depth) and the number of classes (0 = headless). The image size is not
part of the architecture: the same parameters (all but the position embedding) serve every
image size divisible by the model's stride (the patch size, times the stem's reduction).

A `StemArch` is the ResNet-v2 stem of Google's hybrid R+ViT models (vit_jax's
`models_resnet.ResNet` as used by `models_vit.VisionTransformer`; timm's `vit_*_r*` models):
a weight-standardised root convolution with group norm and ReLU, an optional max pool, then
stages of bottleneck units. The patch embedding then runs over the stem's feature map.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def _check_int(owner: str, field: str, value: Any, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{owner}.{field} must be an int >= {minimum}, got {value!r}")


@dataclass(frozen=True)
class StemArch:
    """The convolutional stem of a hybrid ViT (vit_jax's ResNet-v2 root and stages).

    The root is a `root_kernel` x `root_kernel` weight-standardised convolution of `width`
    channels at stride `root_stride` ("SAME" padding, no bias), group norm, ReLU and, with
    `root_pool`, a 3 x 3 stride-2 "SAME" max pool. Stage `i` (0-based) has `stages[i]`
    bottleneck units of `width * 2**i` features and `4 * width * 2**i` output channels; its
    first unit has stride 1 (stage 0) or 2 (later stages). The published hybrids use
    `StemArch(width=64 * width_factor, stages=...)` with the defaults below.

    Attributes:
        width: root channels (vit_jax: 64 x the width factor).
        stages: bottleneck units per stage; () = the root alone (R+Ti/16).
        root_kernel: the root convolution's kernel side (7 in vit_jax).
        root_stride: the root convolution's stride (2 in vit_jax).
        root_pool: whether a 3 x 3 stride-2 max pool follows the root (vit_jax: yes).
        groups: group-norm groups (32 in vit_jax); must divide every stem channel count.
    """

    width: int = 64
    stages: tuple[int, ...] = ()
    root_kernel: int = 7
    root_stride: int = 2
    root_pool: bool = True
    groups: int = 32

    def __post_init__(self) -> None:
        for field in ("width", "root_kernel", "root_stride", "groups"):
            _check_int("StemArch", field, getattr(self, field), 1)
        if not isinstance(self.root_pool, bool):
            raise ValueError(f"StemArch.root_pool must be a bool, got {self.root_pool!r}")
        if not isinstance(self.stages, tuple):
            # Lists (from JSON) become tuples so the arch stays hashable.
            object.__setattr__(self, "stages", tuple(self.stages))
        for units in self.stages:
            _check_int("StemArch", "stages[]", units, 1)
        for channels in self.channel_counts():
            if channels % self.groups:
                raise ValueError(
                    f"StemArch.groups {self.groups} does not divide the stem's {channels} channels"
                )

    def features(self, stage: int) -> int:
        """Bottleneck (middle) channels of a stage's units."""
        return self.width * 2**stage

    def channel_counts(self) -> list[int]:
        """Every channel count a group norm of the stem sees."""
        counts = [self.width]
        for stage in range(len(self.stages)):
            counts += [self.features(stage), 4 * self.features(stage)]
        return counts

    @property
    def out_channels(self) -> int:
        """Channels of the stem's feature map (what the patch embedding reads)."""
        return 4 * self.features(len(self.stages) - 1) if self.stages else self.width

    @property
    def reduction(self) -> int:
        """How many pixels of the image one feature-map cell spans, per side."""
        pool = 2 if self.root_pool else 1
        return self.root_stride * pool * 2 ** max(len(self.stages) - 1, 0)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["stages"] = list(self.stages)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StemArch:
        """Inverse of `to_dict`.

        Raises:
            ValueError: unknown fields.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown StemArch fields {sorted(unknown)}; known: {sorted(names)}")
        return cls(**{**data, "stages": tuple(data.get("stages", ()))})


@dataclass(frozen=True)
class VitSize:
    """Shapes of a named ViT family member.

    Attributes:
        width: token width D (hidden size).
        depth: number of encoder blocks of the published model.
        num_heads: attention heads H; width must be divisible by it.
        mlp_dim: hidden width M of each block's MLP.
        patch_size: side p of the square patches (the embedding conv's kernel and stride),
            counted in cells of the stem's feature map for a hybrid.
        stem: the convolutional stem of a hybrid; None for a plain ViT.
    """

    width: int
    depth: int
    num_heads: int
    mlp_dim: int
    patch_size: int
    stem: StemArch | None = None


# Standard sizes (Dosovitskiy et al. 2020; Steiner et al. 2021 "augreg") and small CPU sizes.
# "mu/4" and "mu/8" are not published models: they are tiny configs for CPU experiments at
# 16-32 px (digits, generated tasks), where a Ti/16 would see only 1-4 patches.
_SIZES: dict[str, VitSize] = {
    "Ti/16": VitSize(width=192, depth=12, num_heads=3, mlp_dim=768, patch_size=16),
    "S/16": VitSize(width=384, depth=12, num_heads=6, mlp_dim=1536, patch_size=16),
    "B/16": VitSize(width=768, depth=12, num_heads=12, mlp_dim=3072, patch_size=16),
    "L/16": VitSize(width=1024, depth=24, num_heads=16, mlp_dim=4096, patch_size=16),
    "mu/4": VitSize(width=64, depth=4, num_heads=2, mlp_dim=256, patch_size=4),
    "mu/8": VitSize(width=96, depth=4, num_heads=3, mlp_dim=384, patch_size=8),
    # The hybrids of vit_jax's configs/models.py (augreg releases R+Ti/16, R26+S/32, R50+L/32 and
    # the original R50+B/16). The name keeps the publication's; the image stride is the stem's
    # reduction times the patch: 32 for R+Ti/16 (root stride 2, pool 2, 8 x 8 patches).
    "R+Ti/16": VitSize(192, 12, 3, 768, patch_size=8, stem=StemArch(width=64)),
    "R26+S/32": VitSize(384, 12, 6, 1536, patch_size=1, stem=StemArch(64, stages=(2, 2, 2, 2))),
    "R50+B/16": VitSize(768, 12, 12, 3072, patch_size=1, stem=StemArch(64, stages=(3, 4, 9))),
    "R50+L/32": VitSize(1024, 24, 16, 4096, patch_size=1, stem=StemArch(64, stages=(3, 4, 6, 3))),
    # munet's CPU hybrid (the VitCpuHybrid preset): mu/4's transformer (4 blocks of width 64)
    # on a small ResNet-v2 stem: a 3 x 3 stride-2 root of 16 channels (no pool), then two
    # stages of one bottleneck unit (64 and 128 channels, the second at stride 2), and 2 x 2
    # patches over the 128-channel map: image stride 8, so 32 px images give 4 x 4 tokens.
    "R2+mu/8": VitSize(
        64, 4, 2, 256, patch_size=2,
        stem=StemArch(16, stages=(1, 1), root_kernel=3, root_stride=2, root_pool=False, groups=8),
    ),  # fmt: skip
}


def vit_sizes() -> dict[str, VitSize]:
    """Returns a copy of the size registry, {name: VitSize}."""
    return dict(_SIZES)


def vit_size(name: str) -> VitSize:
    """Looks up a named size.

    Raises:
        KeyError: unknown name (the message lists the known ones).
    """
    try:
        return _SIZES[name]
    except KeyError:
        raise KeyError(f"unknown ViT size {name!r}; known: {', '.join(_SIZES)}") from None


def register_vit_size(name: str, size: VitSize, *, overwrite: bool = False) -> None:
    """Adds a custom size to the registry (e.g. for experiments).

    Raises:
        ValueError: the name exists and `overwrite` is False.
    """
    if name in _SIZES and not overwrite and _SIZES[name] != size:
        raise ValueError(f"ViT size {name!r} already registered as {_SIZES[name]}")
    VitArch(size.width, size.depth, size.num_heads, size.mlp_dim, size.patch_size, 0, size.stem)
    _SIZES[name] = size


@dataclass(frozen=True)
class VitArch:
    """One ViT model's architecture (hashable; JSON-serialisable with `to_dict`).

    Attributes:
        width: token width D.
        num_layers: number of encoder blocks used (0 allowed: embedding -> norm -> head).
        num_heads: attention heads H (width % num_heads == 0).
        mlp_dim: MLP hidden width M.
        patch_size: patch side p.
        num_classes: classes of the linear head; 0 = headless (forward returns the normalised
            cls representation, shape (B, D)).
        stem: the convolutional stem of a hybrid ViT (its components come first); None for
            a plain ViT, whose patch embedding reads the image itself.
    """

    width: int
    num_layers: int
    num_heads: int
    mlp_dim: int
    patch_size: int
    num_classes: int = 0
    stem: StemArch | None = None

    def __post_init__(self) -> None:
        for field in ("width", "num_heads", "mlp_dim", "patch_size"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"VitArch.{field} must be a positive int, got {value!r}")
        for field in ("num_layers", "num_classes"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"VitArch.{field} must be an int >= 0, got {value!r}")
        if self.width % self.num_heads:
            raise ValueError(
                f"VitArch.width {self.width} is not divisible by num_heads {self.num_heads}"
            )
        if self.stem is not None and not isinstance(self.stem, StemArch):
            raise ValueError(f"VitArch.stem must be a StemArch or None, got {self.stem!r}")

    @classmethod
    def from_size(
        cls, size: str | VitSize, num_layers: int | None = None, num_classes: int = 0
    ) -> VitArch:
        """Builds the architecture of a named size.

        Args:
            size: a registered size name ("Ti/16", "B/16", "mu/4", ...) or a `VitSize`.
            num_layers: encoder blocks to use, 0..depth+1 (the seed lets a path exceed its
                root model's depth by one block); None = the size's depth.
            num_classes: head classes, 0 for a headless model.

        Raises:
            KeyError: unknown size name.
            ValueError: num_layers out of 0..depth+1.
        """
        spec = vit_size(size) if isinstance(size, str) else size
        layers = spec.depth if num_layers is None else num_layers
        if not isinstance(layers, int) or not 0 <= layers <= spec.depth + 1:
            raise ValueError(
                f"num_layers {layers!r} out of range for size {size!r}: "
                f"expected 0..{spec.depth + 1}"
            )
        return cls(
            spec.width, layers, spec.num_heads, spec.mlp_dim, spec.patch_size, num_classes,
            spec.stem,
        )  # fmt: skip

    @property
    def head_dim(self) -> int:
        """Per-head width D/H."""
        return self.width // self.num_heads

    @property
    def is_hybrid(self) -> bool:
        """Whether a convolutional stem precedes the patch embedding."""
        return self.stem is not None

    @property
    def stride(self) -> int:
        """Image pixels per patch side: the patch size times the stem's reduction."""
        return self.patch_size * (self.stem.reduction if self.stem else 1)

    @property
    def embedding_channels(self) -> int:
        """Input channels of the patch embedding: 3 (RGB) or the stem's output channels."""
        return self.stem.out_channels if self.stem else 3

    def replace(self, **changes: Any) -> VitArch:
        """A copy with some fields changed (e.g. `arch.replace(num_classes=10)`)."""
        return dataclasses.replace(self, **changes)

    def grid_size(self, image_size: int) -> int:
        """Patches per side for square images of `image_size` pixels.

        Raises:
            ValueError: image_size is not a positive multiple of the stride (the patch size,
                times the stem's reduction for a hybrid).
        """
        stride = self.stride
        if not isinstance(image_size, int) or image_size < stride or image_size % stride:
            what = (
                f"the hybrid's stride {stride} (patch {self.patch_size} x stem reduction "
                f"{self.stem.reduction})"
                if self.stem
                else f"the patch size {stride}"
            )
            raise ValueError(f"image size {image_size!r} must be a positive multiple of {what}")
        return image_size // stride

    def num_tokens(self, image_size: int) -> int:
        """Sequence length: patches plus the cls token."""
        return self.grid_size(image_size) ** 2 + 1

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form; `VitArch.from_dict` inverts it. A plain ViT's has no `stem` key,
        so a plain ViT's form (in states and exports) carries no hybrid field."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "stem"}
        if self.stem is not None:
            data["stem"] = self.stem.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VitArch:
        """Inverse of `to_dict`.

        Raises:
            ValueError: missing or unknown fields.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown VitArch fields {sorted(unknown)}; known: {sorted(names)}")
        optional = {"num_classes", "stem"}
        missing = {f.name for f in dataclasses.fields(cls) if f.name not in optional} - set(data)
        if missing:
            raise ValueError(f"missing VitArch fields {sorted(missing)}")
        stem = data.get("stem")
        if stem is not None and not isinstance(stem, StemArch):
            stem = StemArch.from_dict(stem)
        return cls(**{**data, "stem": stem})
