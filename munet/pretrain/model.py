"""A pretraining run's fresh model, its optimizer and its learning-rate schedule."""

from __future__ import annotations

import torch

from munet.models import VitArch, init_components, load_components
from munet.models.vit import VisionTransformer
from munet.pretrain.objectives import head_width
from munet.pretrain.spec import PretrainSpec
from munet.training.schedules import pretrain_schedule


def pretrain_arch(spec: PretrainSpec) -> VitArch:
    """The preset's model with the pretraining head (every active objective's outputs)."""
    return VitArch.from_size(spec.model, num_layers=spec.num_layers, num_classes=head_width(spec))


def new_model(spec: PretrainSpec) -> VisionTransformer:
    """The seed's initialisation of the model, drawn from the spec's seed (the head at zero,
    vit_jax's fresh head)."""
    arch = pretrain_arch(spec)
    model = VisionTransformer(arch, spec.image_size)
    generator = torch.Generator().manual_seed(spec.seed)
    return load_components(model, init_components(arch, spec.image_size, generator))


def new_optimizer(model: VisionTransformer, spec: PretrainSpec) -> torch.optim.AdamW:
    """AdamW; no weight decay on biases, norms, the cls token and the position embedding (1-D
    or embedding-like tensors), the usual ViT setting."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if param.dim() < 2 or name.startswith(("cls.", "posembed")):
            no_decay.append(param)
        else:
            decay.append(param)
    groups = [
        {"params": decay, "weight_decay": spec.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=spec.lr, betas=(0.9, 0.999))


def lr_at(spec: PretrainSpec, step: int, total_steps: int) -> float:
    """Linear warmup, then cosine decay to zero over ``total_steps``
    (munet.training.schedules.pretrain_schedule)."""
    return pretrain_schedule(spec.lr, spec.warmup_ratio, total_steps)(step)
