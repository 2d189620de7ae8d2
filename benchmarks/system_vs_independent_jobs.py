"""The worker of benchmarks/system_vs_independent.py's baselines, in a module of its own: a
spawned worker process imports it by name (a function of the script itself is importable only
when the script runs as ``__main__``, not when a test loads it). The script prints the `ratio:`
lines."""

from __future__ import annotations

import time
from typing import Any


def baseline_job(job: dict[str, Any]) -> dict[str, Any]:
    """Worker: one task's independent model (``trials`` 0) or random search."""
    from munet.agents import IndependentAgent, default_hparams
    from munet.config import AgentConfig

    config = AgentConfig.from_dict(job["config"])
    agent = IndependentAgent(
        config, job["task"], job["state_dir"], progress=False, echo=lambda _: None
    )
    start = time.perf_counter()
    if job["trials"] == 0:
        path, trials = agent.train_alone(default_hparams(config), job["steps"]), []
    else:
        path, trials = agent.random_search(job["steps"], job["trials"])
    return {
        "task": job["task"],
        "test_quality": float(path.metrics["test_quality"]),
        "quality": float(path.metrics["quality"]),
        "params_added": path.num_params(),
        "steps": sum(int(t.metrics["steps"]) for t in trials) if trials else path.metrics["steps"],
        "seconds": time.perf_counter() - start,
        "hparams": {k: v for k, v in path.hparams.items() if not k.startswith("_mu_")},
        "trial_qualities": [float(t.metrics["quality"]) for t in trials],
    }
