"""The Vision Transformer of Google's `vit_jax` (models_vit.VisionTransformer), in PyTorch.

Computation, for the same weights, equals the Flax model the µNet seed uses (classifier
"token", no representation layer, dropout off):

    patches = conv_pxp_stride_p(images)                  # (B, D, g, g)
    x = concat(cls, flatten(patches)) + pos_embedding    # (B, 1+g*g, D)
    for each block:  x = x + Attn(LN(x));  x = x + MLP(LN(x))
    logits = head(LN(x)[:, 0])                           # (B, C), or LN(x)[:, 0] if headless

with LayerNorm eps 1e-6 and GELU in its tanh form (Flax's `nn.gelu` default, which vit_jax
uses; timm uses the exact erf form, so timm and Google differ slightly on the same weights).

Module attribute names are the µNet component names, so every parameter's name is
`"<component>.<tensor>"` (see `munet.models.components`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from munet.models.arch import VitArch
from munet.models.cpu_kernels import tuned_cpu_kernels
from munet.models.dense import dense
from munet.models.stem import StemRoot, StemStage, stem_component_names

LAYER_NORM_EPS = 1e-6


class ClassToken(nn.Module):
    """The learned cls token, parameter `token` of shape (1, 1, D)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.token = nn.Parameter(torch.zeros(1, 1, width))


class PositionEmbedding(nn.Module):
    """Learned position embedding `pos_embedding` of shape (1, 1+N, D), added to all tokens."""

    def __init__(self, num_tokens: int, width: int) -> None:
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.zeros(1, num_tokens, width))


# Up to this many tokens, attention with munet's tuned CPU kernels (munet.models.cpu_kernels:
# the AMD EPYC family) runs as two batched matmuls around a softmax: SDPA's per-(image, head)
# overhead dominates such short sequences there (ViT-Ti/16 x3 at 32 px, 5 tokens: the whole
# model trains 1.15x and evaluates 1.13x as fast in fp32, `python benchmarks/cpu_kernels.py`;
# for the attention op alone the two forms time equal at about 65 tokens and SDPA leads at 197;
# docs/speed.md, CPU kernels). On the Intel Xeon of docs/speed.md an explicit form measured
# slower than SDPA; other CPUs, other devices and longer sequences use SDPA.
EXPLICIT_ATTENTION_MAX_TOKENS = 64


def explicit_attention_preferred(device: torch.device, tokens: int) -> bool:
    """Whether :func:`attention` runs as explicit matmuls for ``tokens`` on ``device``."""
    if device.type != "cpu" or tokens > EXPLICIT_ATTENTION_MAX_TOKENS:
        return False
    return tuned_cpu_kernels()


def attention(qkv: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Multi-head self-attention of packed projections: (B, N, 3D), rows q|k|v -> (B, N, D).

    Scores are scaled by 1/sqrt(Dh), as Flax's dot_product_attention does.
    """
    batch, tokens, three_width = qkv.shape
    width = three_width // 3
    heads = qkv.view(batch, tokens, 3, num_heads, width // num_heads).permute(2, 0, 3, 1, 4)
    if explicit_attention_preferred(qkv.device, tokens):
        # One copy makes q, k and v contiguous, so neither matmul copies its operands.
        q, k, v = heads.contiguous().unbind(0)  # each (B, H, N, Dh)
        scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5  # (B, H, N, N)
        out = scores.softmax(dim=-1) @ v
    else:
        q, k, v = heads.unbind(0)
        out = F.scaled_dot_product_attention(q, k, v)  # (B, H, N, Dh)
    return out.transpose(1, 2).reshape(batch, tokens, width)


class Attention(nn.Module):
    """Multi-head self-attention with fused q/k/v projection (`qkv`, rows q|k|v) and `proj`."""

    def __init__(self, width: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        """Args: x (B, N, D); residual (B, N, D), added to the output. Returns (B, N, D)."""
        out = attention(dense(x, self.qkv.weight, self.qkv.bias), self.num_heads)
        return dense(out, self.proj.weight, self.proj.bias, residual=residual)


class Mlp(nn.Module):
    """Two dense layers with a tanh-approximated GELU between them (`fc1`, `fc2`)."""

    def __init__(self, width: int, mlp_dim: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, mlp_dim)
        self.fc2 = nn.Linear(mlp_dim, width)

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        hidden = dense(x, self.fc1.weight, self.fc1.bias, gelu=True)
        return dense(hidden, self.fc2.weight, self.fc2.bias, residual=residual)


class EncoderBlock(nn.Module):
    """Pre-LayerNorm transformer block: `norm1`, `attn`, `norm2`, `mlp`."""

    def __init__(self, width: int, num_heads: int, mlp_dim: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width, eps=LAYER_NORM_EPS)
        self.attn = Attention(width, num_heads)
        self.norm2 = nn.LayerNorm(width, eps=LAYER_NORM_EPS)
        self.mlp = Mlp(width, mlp_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.attn(self.norm1(x), residual=x)
        return self.mlp(self.norm2(x), residual=x)


def embed_patches(images: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The p x p stride-p patch convolution as one matrix product: (B, C, S, S) -> (B, N, D).

    Equals ``conv2d(images, weight, bias, stride=p).flatten(2).transpose(1, 2)`` (tokens
    row-major over the patch grid, like Flax) up to float rounding. Non-overlapping patches
    make the convolution a plain matmul over flattened patches, faster on a CPU than PyTorch's
    strided convolution: with it VitT3's model (ViT-Ti/16 x3, 32 px, batch 512) trains 2.26x
    (bfloat16) and 1.13x (float32) and evaluates 1.43x and 1.02x as fast on the Intel Xeon of
    docs/speed.md (``python benchmarks/patch_embed.py --rounds 7``); no difference at VitCpu's
    size.
    """
    batch, channels, height, width = images.shape
    width_out, _, patch, _ = weight.shape
    rows, cols = height // patch, width // patch
    if (rows * patch, cols * patch) != (height, width):
        # A stride-p convolution ignores the last pixels that fill no whole patch.
        images = images[:, :, : rows * patch, : cols * patch]
    patches = images.reshape(batch, channels, rows, patch, cols, patch)
    patches = patches.permute(0, 2, 4, 1, 3, 5).reshape(batch, rows * cols, -1)
    return dense(patches, weight.reshape(width_out, -1), bias)


class VisionTransformer(nn.Module):
    """A ViT whose submodules are the µNet components.

    Submodules: for a hybrid, `stem_root` and `stem_block1` .. (munet.models.stem); then
    `embedding` (Conv2d), `cls` (ClassToken), `posembed_input`
    (PositionEmbedding), `encoderblock_0` .. `encoderblock_{L-1}` (EncoderBlock),
    `encoder_norm` (LayerNorm), and `head` (Linear) when `arch.num_classes > 0`.

    Construction leaves PyTorch's default initialisation; call `reset_parameters` for the
    seed's (vit_jax's) initialisation, or load values with `munet.models.load_components`.

    Args:
        arch: the architecture.
        image_size: side of the square input images (fixes the position embedding's length).

    Raises:
        ValueError: image_size not a multiple of the stride (the patch size, times the stem's
            reduction for a hybrid).
    """

    def __init__(self, arch: VitArch, image_size: int) -> None:
        super().__init__()
        self.arch = arch
        self.image_size = image_size
        width = arch.width
        self._stem_names = stem_component_names(arch.stem)
        if arch.stem is not None:
            self.stem_root = StemRoot(arch.stem)
            for index, name in enumerate(self._stem_names[1:]):
                self.add_module(name, StemStage(arch.stem, index))
        patch = arch.patch_size
        self.embedding = nn.Conv2d(arch.embedding_channels, width, kernel_size=patch, stride=patch)
        self.cls = ClassToken(width)
        self.posembed_input = PositionEmbedding(arch.num_tokens(image_size), width)
        for index in range(arch.num_layers):
            block = EncoderBlock(width, arch.num_heads, arch.mlp_dim)
            self.add_module(f"encoderblock_{index}", block)
        self.encoder_norm = nn.LayerNorm(width, eps=LAYER_NORM_EPS)
        self.head = nn.Linear(width, arch.num_classes) if arch.num_classes else None
        self._block_names = [f"encoderblock_{index}" for index in range(arch.num_layers)]

    def reset_parameters(self, generator: torch.Generator | None = None) -> VisionTransformer:
        """Re-initialises every parameter in place like `munet.models.init_components`."""
        from munet.models.components import init_components, load_components

        return load_components(self, init_components(self.arch, self.image_size, generator))

    def embed_tokens(self, images: torch.Tensor) -> torch.Tensor:
        """The encoder's input: (B, 3, S, S) images -> (B, 1+N, D) tokens (a hybrid's stem,
        the patch embedding, the cls token, the position embedding)."""
        x = images
        for name in self._stem_names:
            x = getattr(self, name)(x)  # a hybrid's feature map (B, C', S/r, S/r)
        x = embed_patches(x, self.embedding.weight, self.embedding.bias)  # (B, N, D)
        cls = self.cls.token.expand(x.shape[0], -1, -1)
        return torch.cat([cls, x], dim=1) + self.posembed_input.pos_embedding

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Args: images (B, 3, S, S). Returns logits (B, C), or (B, D) when headless."""
        x = self.embed_tokens(images)
        for name in self._block_names:
            x = getattr(self, name)(x)
        # LayerNorm is per token, so normalising only the cls token equals Flax's
        # "normalise all, then take token 0" and skips N-1 rows of work.
        x = self.encoder_norm(x[:, 0])  # (B, D)
        return x if self.head is None else self.head(x)
