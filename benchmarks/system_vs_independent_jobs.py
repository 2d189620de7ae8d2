"""The worker of benchmarks/system_vs_independent.py's baselines, in a module of its own: a
spawned worker process imports it by name (a function of the script itself is importable only
when the script runs as ``__main__``, not when a test loads it). The script prints the `ratio:`
lines."""

from __future__ import annotations

import time
from typing import Any


def baseline_job(job: dict[str, Any]) -> dict[str, Any]:
    """Worker: one task's independent model (``trials`` 0; a linear probe of the root with
    ``linear_probe``) or random search, from the root model of kind ``root_kind``."""
    from munet.agents import IndependentAgent, default_hparams
    from munet.config import AgentConfig

    config = AgentConfig.from_dict(job["config"])
    agent = IndependentAgent(
        config,
        job["task"],
        job["state_dir"],
        progress=False,
        echo=lambda _: None,
        root_kind=job.get("root_kind", "random_init"),
    )
    start = time.perf_counter()
    if job["trials"] == 0:
        hparams = default_hparams(config)
        path = agent.train_alone(hparams, job["steps"], linear_probe=job.get("linear_probe", False))
        trials = []
    else:
        path, trials = agent.random_search(job["steps"], job["trials"])
    return {
        "task": job["task"],
        "test_quality": float(path.metrics["test_quality"]),
        "quality": float(path.metrics["quality"]),
        # What the task adds: its own components (a linear probe shares the root's).
        "params_added": int(path.metrics["params_trained"]),
        "params_shared": path.num_params() - int(path.metrics["params_trained"]),
        "steps": sum(int(t.metrics["steps"]) for t in trials) if trials else path.metrics["steps"],
        "seconds": time.perf_counter() - start,
        "hparams": {k: v for k, v in path.hparams.items() if not k.startswith("_mu_")},
        "trial_qualities": [float(t.metrics["quality"]) for t in trials],
    }
