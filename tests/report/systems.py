"""Small systems for the report tests, written through the store API (tiny tensors).

`build_system` makes a root model, singlepath agents over a few cycles (one admitted and one
rejected candidate per generation, audit metrics as the singlepath agent records them), a
damaged-free multipath agent routing through two tasks, and returns the expectations.
"""

from __future__ import annotations

import json

import torch

from munet.system import Population, SystemStore
from munet.system.component import PathComponent

ROOT = "VitCpu~root_model~random_init"
SLOTS = ("embedding", "cls", "encoderblock_0", "encoder_norm", "head")


def _tensors(name: str, width: int = 4) -> dict[str, torch.Tensor]:
    size = {"embedding": 12, "cls": 4, "encoderblock_0": 40, "encoder_norm": 8, "head": 10}
    return {"w": torch.zeros(size.get(name, width))}


def _root(store: SystemStore) -> None:
    with store.lock(ROOT):
        pop = Population(ROOT)
        comps = [pop.new_component(n, _tensors(n), train_locks=[ROOT]) for n in SLOTS]
        root = pop.new_path({"num_layers": 1}, comps, None)
        root.metrics["quality"] = None
        pop.add_path(root)
        store.save_state(pop, 0, 0)


# The agent config the fixture agents store (what the report reads of it).
CONFIG = {
    "batch_size": 8,
    "num_train_examples_between_validations_max": 32,  # 4 steps between validations.
    "force_mutations": ["clone:encoder_norm"],
    "data": "",
}


def grow_agent(
    store: SystemStore, agent: str, cycles: int, quality0: float, curves: bool = False
) -> None:
    """Cycles of a singlepath-like agent: per generation, one admitted child (better) and one
    rejected child. The first parent is another agent's best path when there is one (else the
    root): its frozen `encoderblock_0` is shared, its head replaced, the rest cloned.

    Every path records `evals` (3 validations ending at its quality); with `curves` also
    `eval_steps` (5 train steps apart) and `train_losses`, as newer states do."""
    quality = quality0
    for _ in range(cycles):
        with store.lock(agent):
            loaded = store.load(agent)
            pop, cycle = loaded.population, loaded.cycle
            pop.start_cycle()
            for generation in range(2):
                others = [p for a, ps in sorted(pop.paths.items()) if a not in (agent, ROOT)
                          for p in ps]  # fmt: skip
                parent = pop.get_best_path() or (others or pop.paths[ROOT])[0]
                for admitted in (True, False):
                    comps, reuse = [], {}
                    for c in parent.components:
                        if c.name == "head" and parent.agent_id != agent:
                            comps.append(pop.new_component("head", _tensors("head")))
                            reuse.setdefault("fresh", []).append(c.name)
                        elif c.name == "encoderblock_0" and c.agent_id != agent:
                            comps.append(c)
                            reuse.setdefault(f"shared from {c.agent_id}", []).append(c.name)
                        else:
                            comps.append(pop.clone_component(c))
                            reuse.setdefault(f"cloned from {c.agent_id}", []).append(c.name)
                    path = pop.new_path({"num_layers": 1, "num_classes": 10}, comps, parent)
                    quality = quality + 0.05 if admitted else quality - 0.1
                    evals = [quality - 0.04, quality - 0.02, quality]
                    if curves:
                        path.metrics["eval_steps"] = json.dumps([5, 10, 15])
                        path.metrics["train_losses"] = json.dumps([2.0 - q for q in evals])
                    path.metrics.update(
                        evals=json.dumps(evals),
                        cycle_id=cycle,
                        generation_id=generation,
                        quality=quality,
                        improved=admitted,
                        mutations=[
                            f"parent candidate {parent.full_id} (score 0.5): p = 1 --> selected",
                            "opt_lr : 0.1 --- (incremental, p=0.2) --> 0.05",
                            "clone:encoder_norm : fired (forced)",
                            *(["clone:cls : fired (p=0.2)"] if admitted else []),
                            "num_layers : 1 (kept, p=0.2)",
                        ],
                        reuse="; ".join(f"{k}: {', '.join(v)}" for k, v in reuse.items()),
                    )
                    pop.score(path)
                    if admitted:
                        pop.add_path(path)
                    else:
                        quality += 0.1
                if generation == 0:
                    pop.prune_population()
                    store.save_state(pop, cycle, generation + 1, CONFIG)
            best = pop.end_cycle()
            best.metrics["test_quality"] = best.metrics["quality"] - 0.01
            store.save_state(pop, cycle + 1, 0, CONFIG)


def add_multipath(store: SystemStore, agent: str, routes: list[str]) -> None:
    """A multipath agent whose one path routes through the best paths of `routes`."""
    with store.lock(agent):
        pop = store.load(agent).population
        subpaths = [max(pop.paths[a], key=lambda p: p.metrics["quality"]) for a in routes]
        comps = [PathComponent(f"path_{k}", p) for k, p in enumerate(subpaths)]
        comps.append(pop.new_component("multipath_router", {"w": torch.zeros(6)}))
        for k in range(1, len(subpaths)):
            comps.append(pop.new_component(f"head_adapter_path_{k}", {"w": torch.zeros(5)}))
        path = pop.new_path({"num_paths": len(subpaths), "num_classes": 10}, comps, None)
        path.metrics.update(quality=0.9, score=0.89, test_quality=0.88, cycle_id=0,
                            generation_id=0, improved=True, mutations=[])  # fmt: skip
        pop.add_path(path)
        store.save_state(pop, 1, 0, {**CONFIG, "singlepath_agent": "VitCpu"}, published=[path])


def build_system(root, multipath: bool = True) -> SystemStore:
    """Root, two singlepath agents (2 and 1 cycles), and (`multipath`) one multipath agent
    over both."""
    store = SystemStore(str(root))
    _root(store)
    grow_agent(store, "VitCpu~digits", 2, 0.3, curves=True)
    grow_agent(store, "VitCpu~synth~shape", 1, 0.2)
    if multipath:
        add_multipath(store, "MultiVitCpu~synth~shape", ["VitCpu~synth~shape", "VitCpu~digits"])
    return store
