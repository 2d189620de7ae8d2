"""munet.system: components, paths, population, scoring and the crash-safe sharded store.

Public API (names are stable; the agents build on them):

Identity (`naming`)
    format_agent_id(class_name, task_name) -> "Class~task" (the seed's rule, `/` -> `~`)
    validate_agent_id(agent_id), validate_task_name(task_name), agent_class_name(agent_id),
    agent_task_name(agent_id), is_root_model_agent(agent_id), component_key(name, agent, id)

Model pieces
    Component(name, agent_id, component_id, tensors, train_locks=())
        .key "name:agent_id:id", .tensors {tensor name: tensor} (lazy for loaded ones),
        .spec, .num_params, .train_locks (set of agent ids), .is_trainable(),
        .clone(agent_id, component_id), .set_tensors(tensors)
    PathComponent(name, path)       a whole path used as a frozen component (multipath)
    load_tensors(components)        read + verify lazy components ahead of use, in threads
    Path(path_id, agent_id, task_name, hparams, components, parent=None, metrics=None)
        .full_id "agent_id:id", .params() {component: {tensor: tensor}}, .trainable_names(),
        .trainable_params(), .fixed_params(), .update_trainable(trained),
        .accounted_params(scoring_agent_id=None), .comps_only(), .leaf_components()
    ScorerDecay(scale_factor=1.0, base_accounted_params=0, base_flops=0, flops_fn=None)
        .score(path) -> float | None    quality * s**(accounted/base_p) * s**(flops/base_f)
    VIT_SCORER_KWARGS                   the seed's ViT scorer constants (0.99, 2.2e9, 3.8e12)
    Population(agent_id, scorer=None, max_task_population_size=None)
        .paths {agent_id: [Path]}, .new_component(name, tensors), .clone_component(c),
        .new_path(hparams, components, parent), .add_path(path), .get_best_path(),
        .prune_population(), .start_cycle(), .end_cycle(), .garbage_collect_paths(),
        .get_path(agent_id, path_id), .score(path)

Store
    SystemStore(root)               local path or fsspec URL
        with store.lock(agent_id): ...             one process per agent
        store.save_state(population, cycle, generation, config, published=None) -> StateRef
        store.load(agent_id, agent_classes=None, scorer=..., max_task_population_size=...)
            -> LoadedState(population, cycle, generation, config, state, loaded_states)
        store.list_states(agent_id), store.latest_state(agent_id, end_of_cycle=False),
        store.read_manifest(state), store.read_path_history(agent_id), store.verify_state(s)

Typical agent loop (the seed's run_cycles):

    store = SystemStore(state_dir)
    with store.lock(agent_id):
        loaded = store.load(agent_id, ["VitT3"], scorer=ScorerDecay(**VIT_SCORER_KWARGS, ...))
        pop, cycle, generation = loaded.population, loaded.cycle, loaded.generation
        pop.start_cycle()
        ... each generation: new paths via pop.new_path / pop.clone_component, train,
            pop.add_path(improved), pop.prune_population(), generation += 1,
            store.save_state(pop, cycle, generation, config)
        pop.end_cycle(); cycle += 1
        store.save_state(pop, cycle, 0, config)
"""

from munet.system.component import (
    FROZEN_LOCK,
    AnyComponent,
    Component,
    PathComponent,
    load_tensors,
    tensors_checksum,
)
from munet.system.errors import (
    AgentLockedError,
    ComponentCorruptError,
    CorruptStateError,
    InvalidNameError,
    LeaseLostError,
    LockNotHeldError,
    StateExistsError,
    StateRemovedError,
    StoreUnavailableError,
    SystemStateError,
    UnsafePathError,
)
from munet.system.fs import LocalFS, StateFS
from munet.system.fsspec_fs import FsspecFS, open_state_fs
from munet.system.loading import LoadedState
from munet.system.lock import AgentLock
from munet.system.manifest import StateRef, state_dir_name
from munet.system.naming import (
    agent_class_name,
    agent_task_name,
    component_key,
    format_agent_id,
    is_root_model_agent,
    parse_component_key,
    validate_agent_id,
    validate_component_name,
    validate_task_name,
)
from munet.system.path import Path
from munet.system.population import Population
from munet.system.scoring import VIT_SCORER_KWARGS, ScorerDecay
from munet.system.store import SystemStore

__all__ = [
    "FROZEN_LOCK",
    "VIT_SCORER_KWARGS",
    "AgentLock",
    "AgentLockedError",
    "AnyComponent",
    "Component",
    "ComponentCorruptError",
    "CorruptStateError",
    "FsspecFS",
    "InvalidNameError",
    "LeaseLostError",
    "LoadedState",
    "LocalFS",
    "LockNotHeldError",
    "Path",
    "PathComponent",
    "Population",
    "ScorerDecay",
    "StateExistsError",
    "StateFS",
    "StateRef",
    "StateRemovedError",
    "StoreUnavailableError",
    "SystemStateError",
    "UnsafePathError",
    "SystemStore",
    "agent_class_name",
    "agent_task_name",
    "component_key",
    "format_agent_id",
    "is_root_model_agent",
    "load_tensors",
    "open_state_fs",
    "parse_component_key",
    "state_dir_name",
    "tensors_checksum",
    "validate_agent_id",
    "validate_component_name",
    "validate_task_name",
]
