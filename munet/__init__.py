"""munet: evolve modular multitask ML systems (a PyTorch re-implementation of µNet).

One import path for users::

    import munet

    store = munet.SystemStore("state/mine")
    config = munet.get_preset("VitCpuHybrid")  # munet's CPU preset
    munet.create_root_model(config, store)  # its built-in pretrained root, as `munet root`
    munet.SinglepathAgent(config, "digits", store).run(num_cycles=2)

Everything else is importable from its subpackage (`munet.models`, `munet.tasks`,
`munet.system`, `munet.agents`, `munet.training`, `munet.search`, `munet.nasbench`, `munet.es`)
but internal. Names resolve lazily, so `import munet` (and the `munet` command's start-up)
does not pay for torch until a name that needs it is used.
"""

import importlib as _importlib

__version__ = "0.1.0"

# Public name -> the subpackage that defines it.
_EXPORTS: dict[str, str] = {
    # configuration and agents
    "AgentConfig": "munet.config",
    "get_preset": "munet.config",
    "preset_names": "munet.config",
    "apply_overrides": "munet.config",
    "SinglepathAgent": "munet.agents",
    "MultipathAgent": "munet.agents",
    "make_agent": "munet.agents",
    "RunOptions": "munet.agents",
    "create_root_model": "munet.agents",
    "default_root_kind": "munet.agents",
    "run_demo": "munet.agents",
    "leaderboard_rows": "munet.agents",
    # the system state
    "SystemStore": "munet.system",
    "Component": "munet.system",
    "Path": "munet.system",
    "Population": "munet.system",
    "ScorerDecay": "munet.system",
    # models
    "VitArch": "munet.models",
    "VisionTransformer": "munet.models",
    "AssembledVit": "munet.models",
    "init_components": "munet.models",
    "load_checkpoint": "munet.models",
    "count_flops": "munet.models",
    "count_params": "munet.models",
    "load_exported": "munet.models.export",
    # tasks
    "get_task": "munet.tasks",
    "Task": "munet.tasks",
    "Batch": "munet.tasks",
    "split_rule": "munet.tasks",
    # experiment tracking (TensorBoard, W&B)
    "TrackingSettings": "munet.tracking",
    # search strategies and NAS-Bench-101
    "make_strategy": "munet.search",
    "Strategy": "munet.search",
    "SearchSpace": "munet.search",
    "NASBench": "munet.nasbench",
    "ModelSpec": "munet.nasbench",
    # evolution-strategies gradient estimators
    "FullEpisodeES": "munet.es",
    "TruncatedES": "munet.es",
    "TruncatedPES": "munet.es",
    "TruncatedBackprop": "munet.es",
    "MetaOptimizer": "munet.es",
    "MetaTrainer": "munet.es",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'munet' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # resolve once
    return value


def __dir__() -> list[str]:
    # The public API only: not the helpers above, nor the subpackages that importing a name
    # binds here (they stay importable as `munet.models`, ...).
    return sorted([*__all__, "__version__"])
