"""A ViT with a residual bottleneck adapter after each sublayer (Houlsby et al. 2019's
placement; the ``adapters`` baseline of ``munet benchmark``).

In every encoder block, one adapter on the attention sublayer's output and one on the MLP
sublayer's output, each before its residual add::

    x = x + adapter_a(attn(norm1(x)));  x = x + adapter_m(mlp(norm2(x)))

munet's own adapter mutation places one adapter after a whole block instead
(munet.models.adapted_vit); both use `munet.models.adapters.BottleneckAdapter` and count an
adapter's FLOPs with `munet.models.adapted_vit.adapter_flops`.
"""

from __future__ import annotations

import torch
from torch import nn

from munet.models.adapted_vit import adapter_flops
from munet.models.adapters import BottleneckAdapter
from munet.models.flops import count_flops
from munet.models.vit import VisionTransformer


class HoulsbyAdaptedVit(nn.Module):
    """A `VisionTransformer` with a `BottleneckAdapter` after each block's attention and MLP
    sublayers (Houlsby's placement). It leaves the ViT's ``requires_grad`` as it finds them.

    Parameters are ``vit.<component>.<tensor>`` (the ViT's) then ``adapters.<k>.*``, where
    adapter ``2 i`` follows block ``i``'s attention and ``2 i + 1`` its MLP.

    Args:
        vit: the ViT the adapters go into (held, not copied).
        bottleneck: the adapters' hidden width.
    """

    def __init__(self, vit: VisionTransformer, bottleneck: int) -> None:
        super().__init__()
        self.vit = vit
        self.bottleneck = int(bottleneck)
        # A plain list: the blocks are registered once, under ``vit``.
        self.blocks = [getattr(vit, f"encoderblock_{i}") for i in range(vit.arch.num_layers)]
        self.adapters = nn.ModuleList(
            BottleneckAdapter(vit.arch.width, self.bottleneck) for _ in range(2 * len(self.blocks))
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Args: images (B, 3, S, S). Returns logits (B, C), or (B, D) when headless."""
        vit = self.vit
        x = vit.embed_tokens(images)  # (B, 1+N, D), through a hybrid's stem
        for index, block in enumerate(self.blocks):
            x = x + self.adapters[2 * index](block.attn(block.norm1(x)))
            x = x + self.adapters[2 * index + 1](block.mlp(block.norm2(x)))
        x = vit.encoder_norm(x[:, 0])
        return x if vit.head is None else vit.head(x)

    def flops(self) -> int:
        """Forward FLOPs of one image: the ViT's (munet.models.flops.count_flops, attention
        included) plus `adapter_flops` for each adapter."""
        arch, image_size = self.vit.arch, self.vit.image_size
        per_adapter = adapter_flops(arch, image_size, self.bottleneck)
        return count_flops(arch, image_size) + len(self.adapters) * per_adapter
