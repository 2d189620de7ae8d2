"""Resized position embeddings come from the lineage's own root (issue 17, item 10): with two
roots of one agent class in the system, a child of the second root's lineage must not get the
first root's embedding from a cache keyed by image size only."""

import torch

from munet.agents.singlepath import SinglepathAgent, model_arch
from munet.models import init_components, resize_posembed
from munet.system import Population, SystemStore

SECOND_ROOT = "VitCpu~root_model~second"


def add_second_root(config, state_dir) -> None:
    hparams = dict(config.hparams_defaults, num_classes=0)
    arch = model_arch(config, hparams)
    generator = torch.Generator().manual_seed(1234)  # Another init than the first root's.
    tensors = init_components(arch, int(hparams["ds_image_size"]), generator)
    store = SystemStore(state_dir)
    with store.lock(SECOND_ROOT):
        pop = Population(SECOND_ROOT, task_name="root_model/second")
        components = [
            pop.new_component(n, t, train_locks=[SECOND_ROOT]) for n, t in tensors.items()
        ]
        pop.add_path(pop.new_path(hparams, components, parent=None))
        store.save_state(pop, 0, 0, config.to_dict())


def test_each_lineage_gets_its_own_roots_resized_embedding(tiny_config, state_dir):
    add_second_root(tiny_config, state_dir)
    agent = SinglepathAgent(tiny_config, "digits", state_dir, progress=False, echo=lambda _: None)
    population, _, _ = agent.load_population()
    roots = sorted(
        (p for p in population.all_paths() if p.parent is None), key=lambda p: p.agent_id
    )
    assert [r.agent_id for r in roots] == ["VitCpu~root_model~random_init", SECOND_ROOT]
    new_size = 16  # The roots hold 8 px (2x2 grid) embeddings.
    arch = model_arch(tiny_config, dict(roots[0].hparams, num_classes=10))
    for root in roots + roots:  # Twice: the second round is served from the cache.
        got = agent._root_posembed(arch, new_size, root)["pos_embedding"]
        source = root.component("posembed_input").tensors["pos_embedding"]
        assert torch.equal(got, resize_posembed(source, arch.grid_size(new_size)))
    first = agent._root_posembed(arch, new_size, roots[0])["pos_embedding"]
    second = agent._root_posembed(arch, new_size, roots[1])["pos_embedding"]
    assert not torch.equal(first, second)
