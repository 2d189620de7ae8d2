"""The adapter mutation (munet's option ``adapter_mutation_probability``, beyond the seed).

After the seed's reuse has settled each component of a child (munet.agents.reuse), each
encoder block the child shares frozen may get a residual bottleneck adapter after it
(munet.models.adapters): a new small component owned by the child's agent, trained with the
child's other trainable components, instead of cloning the whole block. A child keeps its
parent's adapters (after the blocks it still has) by the same reuse rule as any component:
cloned when trainable or when ``clone:adapter_<i>`` fires, else shared frozen.

With the probability 0 (the default) nothing here runs and no random number is drawn, so the
seed's mutations and their random streams stay exactly as they are.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import torch

from munet.agents.reuse import ComponentChoice, component_shapes_of
from munet.models import VitArch
from munet.models.adapted_vit import (
    adapter_block_index,
    adapter_flops,
    adapter_name,
    adapter_shapes,
    init_adapter,
)
from munet.system import Component, Path, Population


def choose_adapters(
    parent: Path,
    arch: VitArch,
    block_choices: Sequence[ComponentChoice],
    probability: float,
    bottleneck: int,
    rng: random.Random,
    decide_clone: Callable[[str], bool],
) -> list[ComponentChoice]:
    """The adapters of a child, one decision per block that gets one.

    Args:
        parent: the child's parent.
        arch: the child's architecture.
        block_choices: the reuse decisions of the child's components (blocks among them).
        probability: the chance that a frozen shared block without an adapter gets a new one.
        bottleneck: the bottleneck width of new adapters.
        rng: the generation's random generator (drawn once per frozen shared block).
        decide_clone: whether the ``clone:NAME`` mutation fires for a frozen inherited adapter.

    Returns:
        ``clone``/``share`` of the parent's adapter, or ``fresh`` for a new one, in block order.
    """
    actions = {c.name: c.action for c in block_choices}
    inherited = {c.name: c for c in parent.comps_only() if adapter_block_index(c.name) is not None}
    out = []
    for index in range(arch.num_layers):
        name = adapter_name(index)
        found = inherited.get(name)
        if found is not None and component_shapes_of(found) == adapter_shapes(
            arch.width, int(found.spec["down.weight"][0][0])
        ):
            if found.is_trainable():
                out.append(ComponentChoice(name, "clone", found, parent.full_id, "trainable"))
            elif decide_clone(name):
                out.append(ComponentChoice(name, "clone", found, parent.full_id, "clone mutation"))
            else:
                out.append(ComponentChoice(name, "share", found, parent.full_id, "frozen"))
            continue
        frozen = actions.get(f"encoderblock_{index}") == "share"
        if frozen and probability > 0 and rng.random() < probability:
            out.append(
                ComponentChoice(name, "fresh", reason=f"adapter after frozen block, b={bottleneck}")
            )
    return out


def materialize_adapters(
    population: Population,
    choices: Sequence[ComponentChoice],
    width: int,
    bottleneck: int,
    generator: torch.Generator,
) -> list[Component]:
    """The components of `choose_adapters`' decisions (new ones owned by the child's agent)."""
    out = []
    for choice in choices:
        if choice.action == "share":
            out.append(choice.source)
        elif choice.action == "clone":
            out.append(population.clone_component(choice.source))
        else:
            out.append(
                population.new_component(choice.name, init_adapter(width, bottleneck, generator))
            )
    return out


def path_adapter_flops(path: Path, arch: VitArch, image_size: int) -> int:
    """Forward FLOPs of one image through the adapters of a path (0 without adapters)."""
    total = 0
    for component in path.comps_only():
        index = adapter_block_index(component.name)
        if index is not None and index < arch.num_layers:
            total += adapter_flops(arch, image_size, int(component.spec["down.weight"][0][0]))
    return total
