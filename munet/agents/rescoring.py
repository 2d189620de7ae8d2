"""Re-scoring the finalists of a cycle on the whole validation split (munet's option
``rescore_finalists``, beyond the seed).

During a cycle every path is validated on the first ``num_validation_examples_max`` examples of
the validation split (256 for ``VitCpu``), and a path's quality is the best of its
``num_validations_per_path_training`` validations: on a small capped set, the finalist that
looks best is partly the luckiest. Before the cycle publishes, this re-evaluates the agent's own
paths (at most ``max_task_population_size``) on the whole split and lets the population's usual
rule (the oldest path with the best score) pick among them on those qualities. The capped
quality is kept in the path's metrics as ``capped_quality``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from munet.system import Path, Population

log = logging.getLogger("munet.agents")


def rescore_finalists(population: Population, evaluate: Callable[[Path], float]) -> Path | None:
    """Re-evaluates the agent's own paths and returns the best of them on the new qualities.

    Args:
        population: the agent's population at the end of a cycle.
        evaluate: a path's accuracy on the whole validation split.

    Returns:
        The best own path by score on the new qualities (None without own paths). Each own
        path's ``quality`` is replaced by its re-evaluated one (its score follows), the
        previous one kept as ``capped_quality``.
    """
    for path in population.own_paths:
        if "capped_quality" in path.metrics:
            continue  # Already re-scored (a path that survived an earlier cycle).
        capped = path.metrics.get("quality")
        quality = float(evaluate(path))
        path.metrics["capped_quality"] = capped
        path.metrics["quality"] = quality
        log.info("re-scored %s: validation %s (capped) -> %.4f (whole split)",
                 path.full_id, capped, quality)
    return population.get_best_path()
