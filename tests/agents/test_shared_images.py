"""Tasks that split the same images (digits and 1k/digits) never start from or combine each
other's paths: a path of one has trained on test images of the other."""

from munet.agents import singlepath
from munet.agents.shared_images import saw_test_images_of
from munet.agents.subpath_choice import may_draw
from munet.tasks.overlap import share_images


def test_digits_and_its_1k_version_share_images_and_other_pairs_do_not():
    assert share_images("digits", "1k/digits") and share_images("1k/digits", "digits")
    assert not share_images("digits", "digits")
    assert not share_images("digits", "synth/shape")
    assert not share_images("1k/synth-clutter", "synth/shape")
    assert saw_test_images_of("VitCpu~digits", "1k/digits")
    assert not saw_test_images_of("VitCpu~root_model~pretrained", "1k/digits")
    assert not saw_test_images_of("VitCpu~synth~color", "1k/digits")


def test_a_multipath_agent_does_not_draw_a_subpath_that_saw_its_test_images():
    assert may_draw("VitCpu~digits", "VitCpu", False, "synth/color")
    assert not may_draw("VitCpu~digits", "VitCpu", False, "1k/digits")
    assert may_draw("VitCpu~synth~color", "VitCpu", False, "1k/digits")
    # The seed's rule stays: agents ending in ~1k are never drawn.
    assert not may_draw("VitCpu~cifar100~1k", "VitCpu", False, "digits")


def _parent_candidates(state, config, task, monkeypatch):
    """Runs a singlepath agent for ``task`` one cycle; the paths of every random-parent draw."""
    drawn_from = []
    original = singlepath.select_parent

    def recording(own_paths, system_paths, *args, **kwargs):
        drawn_from.append(list(system_paths))
        return original(own_paths, system_paths, *args, **kwargs)

    monkeypatch.setattr(singlepath, "select_parent", recording)
    agent = singlepath.SinglepathAgent(config, task, state, progress=False, echo=lambda _: None)
    agent.run(1)
    return agent, drawn_from


def _agents(path):
    return {path.agent_id} | {c.agent_id for c in path.leaf_components()}


def test_a_singlepath_agent_never_starts_from_a_path_that_saw_its_test_images(
    state, tiny_config, monkeypatch
):
    # `state`: a random-init root, then digits and synth/color agents, one cycle each
    # (synth/color's path may share digits' frozen components: it is then left out too).
    agent, drawn_from = _parent_candidates(state, tiny_config, "1k/digits", monkeypatch)
    assert drawn_from
    for candidates in drawn_from:
        assert "VitCpu~root_model~random_init" in {p.agent_id for p in candidates}
        assert all("VitCpu~digits" not in _agents(p) for p in candidates)
    best = agent.store.load(agent.agent_id).population.get_best_path()
    assert "VitCpu~digits" not in _agents(best)


def test_other_tasks_still_start_from_digits_paths(state, tiny_config, monkeypatch):
    _, drawn_from = _parent_candidates(state, tiny_config, "synth/shape", monkeypatch)
    assert "VitCpu~digits" in {p.agent_id for p in drawn_from[0]}


def test_a_multipath_agent_never_combines_a_path_that_saw_its_test_images(
    state, tiny_config, mp_config
):
    from munet.agents.reports import AgentError
    from tests.agents.multipath_helpers import agent_for

    singlepath.SinglepathAgent(
        tiny_config, "1k/digits", state, progress=False, echo=lambda _: None
    ).run(1)
    agent = agent_for(mp_config, state, task="1k/digits")
    try:
        agent.run(1)
    except AgentError as err:
        # Every other path holds digits' components: the error says so.
        assert "left out: the paths of VitCpu~digits" in str(err)
        return
    best = agent.store.load(agent.agent_id).population.get_best_path()
    assert "VitCpu~digits" not in _agents(best)
