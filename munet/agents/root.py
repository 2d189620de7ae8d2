"""Root models: the first path of a system (seed 000, ``Vit.load_state`` for ``root_model/*``).

A root model is a path of the pseudo agent ``CLASS~root_model~KIND`` whose components are
locked by it (every agent shares or clones them, none trains them in place):

- ``random_init``: a headless model of the preset's defaults, freshly initialised;
- ``checkpoint``: the preset's defaults loaded from a local checkpoint (``config.checkpoint_path``:
  a Google augreg .npz, a timm / Hugging Face / munet state dict in .safetensors or
  .pth/.pt/.bin, or a Hugging Face ``save_pretrained`` folder), head dropped;
- ``pretrained``: the preset's built-in pretrained root, shipped with munet (made offline by
  ``munet pretrain`` on procedural images; ``munet.pretrain.roots``), checked against its
  card's sha256. :func:`default_root_kind` picks it where the preset has one.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import ExitStack

import torch

from munet.config import AgentConfig
from munet.models import (
    VitArch,
    checkpoint_spec,
    checkpoint_specs,
    default_checkpoint_dir,
    init_components,
    load_checkpoint,
)
from munet.system import AgentLockedError, Path, Population, SystemStore, format_agent_id

log = logging.getLogger("munet.agents")

ROOT_KINDS = ("random_init", "checkpoint", "pretrained")
#: How long a creator of a root model waits for another process holding the root's lock (most
#: likely creating the same root) before it gives up (`AgentLockedError`).
CREATOR_WAIT_SECONDS = 120.0


def _registered_checkpoint_hint(config: AgentConfig) -> str:
    """Where `munet checkpoint fetch` puts the preset's registered checkpoint, if it has one."""
    if config.name not in checkpoint_specs():
        return (
            " (an augreg .npz, a .safetensors or .pth/.bin state dict, or a Hugging Face "
            "save_pretrained folder)"
        )
    spec = checkpoint_spec(config.name)
    return (
        f" (the preset's checkpoint: `munet checkpoint fetch {config.name}` downloads "
        f"{spec.url} to {default_checkpoint_dir() / spec.filename})"
    )


def default_root_kind(config: AgentConfig) -> str:
    """``pretrained`` where the preset ships a built-in root that fits the config (same model
    size, at least its ``num_layers`` blocks) and whose card does not set ``default_root``
    false, else ``random_init``."""
    from munet.pretrain import builtin_root

    if config.is_multipath:
        return "random_init"
    builtin = builtin_root(config.name)
    if builtin is None:
        return "random_init"
    card = builtin.card()
    if not card.get("default_root", True):
        # The card says the root is not good enough to start from by default (it stays
        # available as --root pretrained).
        return "random_init"
    recipe = card.get("recipe", {})
    layers = int(config.hparams_defaults.get("num_layers", 0))
    if recipe.get("model") != config.model or layers > int(recipe.get("num_layers", 0)):
        log.info(
            "the built-in root of %s (%s, %s blocks) does not fit model %s with %d blocks: "
            "random_init root",
            config.name, recipe.get("model"), recipe.get("num_layers"), config.model, layers,
        )  # fmt: skip
        return "random_init"
    return "pretrained"


def existing_root_kind(config: AgentConfig, store: SystemStore | str) -> str | None:
    """The kind of the root model ``config``'s agent class already has in ``store``, if any
    (so a resumed run keeps the root it started from)."""
    store = store if isinstance(store, SystemStore) else SystemStore(str(store))
    for kind in ROOT_KINDS:
        if store.latest_state(root_agent_id(config, kind)) is not None:
            return kind
    return None


def root_agent_id(config: AgentConfig, kind: str) -> str:
    """``CLASS~root_model~KIND``."""
    return format_agent_id(config.name, f"root_model/{kind}")


def create_root_model(
    config: AgentConfig, store: SystemStore | str, kind: str | None = None
) -> Path:
    """Creates and commits the root model of ``config``'s agent class, unless it exists.

    Args:
        config: the agent preset (its ``model``, ``hparams_defaults`` and, for
            ``checkpoint``, ``checkpoint_path``).
        store: the system state (or its dir).
        kind: ``random_init``, ``checkpoint`` or ``pretrained``; None (the default, as
            ``munet root`` and ``munet demo``): the root the state dir already has, else
            :func:`default_root_kind` (the preset's built-in pretrained root where it ships
            one, e.g. VitCpu; ``random_init`` elsewhere).

    Returns:
        The root path (the existing one when the root model was already created).

    Raises:
        ValueError: unknown kind, ``checkpoint`` without an existing ``checkpoint_path``,
            ``pretrained`` for a preset without a built-in root, or a built-in root whose
            file does not match its card's sha256.
    """
    if config.is_multipath:
        raise ValueError(
            f"root models belong to the singlepath agent class: create it with "
            f"`munet root --agent {config.singlepath_agent}` ({config.name} combines its paths)"
        )
    if kind is None:
        kind = existing_root_kind(config, store) or default_root_kind(config)
    if kind not in ROOT_KINDS:
        raise ValueError(f"unknown root model kind {kind!r}; known: {', '.join(ROOT_KINDS)}")
    if kind == "checkpoint":
        if not config.checkpoint_path:
            raise ValueError(
                "root model 'checkpoint' needs a local checkpoint file: "
                f"--set checkpoint_path=FILE{_registered_checkpoint_hint(config)}"
            )
        if not os.path.exists(config.checkpoint_path):
            raise ValueError(f"checkpoint_path {config.checkpoint_path!r} does not exist")
    builtin = None
    if kind == "pretrained":
        from munet.pretrain import builtin_root, builtin_roots, verify_root

        builtin = builtin_root(config.name)
        if builtin is None:
            shipped = ", ".join(builtin_roots()) or "none"
            raise ValueError(
                f"preset {config.name} has no built-in pretrained root (presets with one: "
                f"{shipped}); use --root random_init, or --root checkpoint with a file from "
                f"`munet pretrain --agent {config.name}`"
            )
        verify_root(builtin)
    store = store if isinstance(store, SystemStore) else SystemStore(str(store))
    agent_id = root_agent_id(config, kind)
    existing = store.latest_state(agent_id)
    if existing is not None:
        loaded = store.load(agent_id, [config.name])
        log.info("root model %s already exists (%s)", agent_id, existing.name)
        return loaded.population.own_paths[0]

    hparams = dict(config.hparams_defaults)
    hparams["num_classes"] = 0  # Headless: every task gets its own head.
    arch = VitArch.from_size(config.model, num_layers=int(hparams["num_layers"]), num_classes=0)
    image_size = int(hparams["ds_image_size"])
    if kind == "random_init":
        generator = torch.Generator().manual_seed(config.seed)
        tensors = init_components(arch, image_size, generator)
    elif builtin is not None:
        tensors = load_checkpoint(builtin.file, arch, image_size)
    else:
        tensors = load_checkpoint(config.checkpoint_path, arch, image_size)
    with ExitStack() as locked:
        if not _lock_unless_created(store, agent_id, locked):
            # Another process created it while this one built the tensors (or waited).
            log.info("root model %s already exists (created by another process meanwhile)",
                     agent_id)
            return store.load(agent_id, [config.name]).population.own_paths[0]
        population = Population(agent_id, task_name=f"root_model/{kind}")
        components = [
            population.new_component(name, tensors[name], train_locks=[agent_id])
            for name in tensors
        ]
        path = population.new_path(hparams, components, parent=None)
        population.add_path(path)
        store.save_state(population, 0, 0, config.to_dict())
    source = f" from the built-in pretrained root {builtin.file}" if builtin is not None else ""
    log.info("created root model %s with %d components%s", agent_id, len(components), source)
    return path


def _lock_unless_created(store: SystemStore, agent_id: str, stack: ExitStack) -> bool:
    """Take the root agent's lock (held until `stack` closes) when its root model is still to
    be created; False once another process created it.

    A lock held by another process is most likely another creator of the same root (`munet
    root`s or agents started together): it is waited for, up to `CREATOR_WAIT_SECONDS`, so
    that each loser of the race finds the root made rather than failing as if the agent ran.

    Raises:
        AgentLockedError: the lock is still held, and no root made, after the wait.
    """
    deadline = time.monotonic() + CREATOR_WAIT_SECONDS
    delay = 0.05
    while True:
        if store.latest_state(agent_id) is not None:
            return False
        try:
            stack.enter_context(store.lock(agent_id))
        except AgentLockedError:
            if time.monotonic() + delay > deadline:
                raise
            if delay == 0.05:
                log.info("root model %s: another process holds its lock; waiting (up to %.0f "
                         "s) for it to create the root", agent_id, CREATOR_WAIT_SECONDS)
            time.sleep(delay)
            delay = min(2 * delay, 1.0)
            continue
        if store.latest_state(agent_id) is not None:
            stack.close()  # made by the holder just before: nothing to write
            return False
        return True
