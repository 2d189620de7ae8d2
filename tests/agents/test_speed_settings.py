"""An agent trains and evaluates at its config's precision, on its config's threads."""

import torch

from munet.agents import path_training
from munet.agents.singlepath import SinglepathAgent
from munet.config import apply_overrides
from munet.system import SystemStore


def test_agent_runs_at_the_configured_precision_and_threads(tiny_config, state_dir, monkeypatch):
    config = apply_overrides(tiny_config, ["precision=bf16", "num_threads=1"])
    seen = {"train": set(), "eval": []}
    original_train = path_training.train_candidates
    original_eval = path_training.evaluate_accuracy

    def train_candidates(candidates, *args, **kwargs):
        seen["train"].update(c.precision for c in candidates)
        seen["threads"] = torch.get_num_threads()
        return original_train(candidates, *args, **kwargs)

    def evaluate_accuracy(model, batches, device, precision="fp32"):
        seen["eval"].append(precision)
        return original_eval(model, batches, device, precision)

    monkeypatch.setattr(path_training, "train_candidates", train_candidates)
    monkeypatch.setattr(path_training, "evaluate_accuracy", evaluate_accuracy)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        report = SinglepathAgent(config, "digits", state_dir, progress=False, echo=print).run(1)
    finally:
        torch.set_num_threads(before)
    assert seen["train"] == {"bf16"}
    # The finalists' re-scoring on the whole validation split (VitCpu's rescore_finalists),
    # then the test evaluation, all at the configured precision.
    assert seen["eval"] and set(seen["eval"]) == {"bf16"}
    assert seen["threads"] == 1
    assert 0.0 <= report.best.metrics["test_quality"] <= 1.0
    # The precision is saved with the state.
    store = SystemStore(str(state_dir))
    loaded = store.load(report.agent_id, ["VitCpu"])
    assert loaded.config["precision"] == "bf16"
