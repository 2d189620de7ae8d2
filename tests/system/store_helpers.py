"""What the SystemStore tests share: tiny components, a root, and the seed's cycle of
sampling, admitting and committing, run by hand."""

import os

import torch

from munet.system import Path, Population, SystemStore

ROOT = "VitT3~root_model~random_init"
A = "VitT3~cifar10"
B = "VitT3~svhn"
NAMES = ("embedding", "encoderblock_0", "head")


def payload(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"kernel": torch.randn(4, 3, generator=g), "bias": torch.randn(3, generator=g)}


def make_root(store: SystemStore) -> None:
    with store.lock(ROOT):
        pop = Population(ROOT)
        comps = [pop.new_component(n, payload(i), train_locks=[ROOT]) for i, n in enumerate(NAMES)]
        pop.add_path(pop.new_path({"num_layers": 1}, comps, None))
        store.save_state(pop, 0, 0, {"preset": "root"})


def child(pop: Population, parent: Path, quality: float, seed: int) -> Path:
    """Freeze locked components, clone trainable ones and always train an own head."""
    comps = []
    for c in parent.components:
        if c.name == "head" or c.is_trainable():
            clone = pop.clone_component(c)
            clone.set_tensors(payload(seed + len(comps)))
            comps.append(clone)
        else:
            comps.append(c)
    path = pop.new_path(dict(parent.hparams, seed=seed), comps, parent)
    path.metrics["quality"] = quality
    pop.add_path(path)
    pop.prune_population()
    return path


def run_cycle(store, agent, cycle, qualities, seed, stop_after=None):
    """One cycle of an agent, as the seed's run_cycles; returns the population."""
    loaded = store.load(agent, ["VitT3"], max_task_population_size=2)
    pop = loaded.population
    pop.start_cycle()
    for generation, quality in enumerate(qualities[loaded.generation :], loaded.generation):
        parent = pop.get_best_path() or pop.paths[ROOT][0]
        child(pop, parent, quality, seed + 10 * generation)
        if generation + 1 < len(qualities):
            store.save_state(pop, cycle, generation + 1, {"cycle": cycle})
            if stop_after == generation + 1:
                return pop
    pop.end_cycle()
    store.save_state(pop, cycle + 1, 0, {"cycle": cycle})
    return pop


def shard_keys(store, agent, state_name):
    from safetensors import safe_open

    keys = set()
    folder = os.path.join(store.root, agent, state_name)
    for name in os.listdir(folder):
        if name.endswith(".safetensors"):
            with safe_open(os.path.join(folder, name), "pt") as f:
                keys |= {k.rsplit("/", 1)[0] for k in f.keys()}
    return keys
