"""munet.search: ask/tell search strategies over any search space.

Public API (names are stable; the NAS-Bench-101 runners code against them):

- `SearchSpace` (protocol): `sample(rng)`, `mutate(candidate, rng, mutation_prob)`,
  `key(candidate)`. Candidates are JSON values, or the space also defines `to_json(candidate)`
  and `from_json(obj)`; keys are JSON values (str, int, tuples of them).
- `Trial(id, candidate)`: one proposed evaluation.
- `Strategy`: `ask() -> Trial | None` (None = wait, or done: see `is_done`),
  `tell(trial_id, objective, cost=None)` (objective MAXIMISED, None = failed),
  `best -> (Trial, objective) | None`, `is_done`, `pending`, `num_told`, `num_failed`,
  `num_duplicates`, `state_dict()` / `load_state_dict(state)` (plain JSON; a resumed strategy
  continues exactly like an uninterrupted one).
- `make_strategy(name, space, seed, **options)`, `strategy_names()`, `strategy_options(name)`,
  `strategy_class(name)`, `register_strategy(cls)`.
- Strategies (registry name -> class):
  "random" -> `RandomSearch`: fresh samples, collisions skipped (options: max_trials).
  "regularized_evolution" -> `RegularizedEvolution`: NNI's aging evolution (population_size
  100, sample_size 25, mutation_prob 0.05, on_failure "ignore"|"worst", cycles None).
  "evolution" -> `TournamentEvolution`: the NAS-Bench-101 notebook's operators completed:
  tournament parent, mutation, drop-worst survivors (population_size 50, tournament_size 10,
  mutation_prob 0.05, on_failure).
  "petridish" -> `Petridish`: parents sampled from the eps band of the lower convex hull of
  error vs cost (num_seeds 10, eps 0.025, max_cost None, max_hull_points 100, mutation_prob
  0.05, error_reference 1.0); needs `cost` in every successful `tell`.
  All take `dedup=True` and `dedup_retries=500`.
- `ChoiceSpace(dimensions)`: independent categorical dimensions with NNI's mutation.
- `Individual(trial_id, candidate, objective)`: an evaluated population member;
  `HullPoint`: an evaluated Petridish pool point.
- Pure helpers: `select_best`, `select_random`, `select_tournament`, `drop_worst`
  (the notebook's operators); `lower_convex_hull(costs, errors)`, `eps_band(costs, errors,
  eps)`, `hull_error_at(cost, hull, costs, errors)`, `hull_sampling_weights(counts, costs)`.

Running searches (submodules, imported on their own; only `executors` touches Ray):

- `munet.search.executors`: `InProcessExecutor(num_workers)` (default, first in first out),
  `RayExecutor(num_workers, address=None, num_cpus=1, num_gpus=0, max_retries=3)`,
  `JobOutcome`, `make_executor`.
- `munet.search.driver`: `SearchRun(strategy, objective, executor, out_dir, ...)`: W trials
  in flight, told as they arrive, checkpointed after every result, `resume=True`.
- `munet.search.petridish_loop`: `PetridishLoop` / `run_petridish`, `PetridishSettings`:
  Archai's distributed seed/search/train loop with checkpoint and resume (its settings and
  stop rule live in `petridish_settings`, the pool's records and parent sampling in
  `petridish_pool`; both re-exported from `petridish_loop`).
- `munet.search.objectives`: `NASBenchObjective`, `VitObjective`, `parse_objective`.
- `munet.search.frontier`: `write_outputs` (frontier.png, frontier.json, pool.json).

Typical loop::

    strategy = make_strategy("regularized_evolution", space, seed=0, population_size=50)
    while (trial := strategy.ask()) is not None:
        strategy.tell(trial.id, evaluate(trial.candidate))
"""

from .base import SearchSpace, Strategy, Trial
from .evolution import TournamentEvolution
from .hull import eps_band, hull_error_at, hull_sampling_weights, lower_convex_hull
from .petridish import HullPoint, Petridish
from .population import Individual
from .random_search import RandomSearch
from .registry import (
    make_strategy,
    register_strategy,
    strategy_class,
    strategy_names,
    strategy_options,
)
from .regularized_evolution import RegularizedEvolution
from .selection import drop_worst, select_best, select_random, select_tournament
from .spaces import ChoiceSpace

__all__ = [
    "ChoiceSpace",
    "HullPoint",
    "Individual",
    "Petridish",
    "RandomSearch",
    "RegularizedEvolution",
    "SearchSpace",
    "Strategy",
    "TournamentEvolution",
    "Trial",
    "drop_worst",
    "eps_band",
    "hull_error_at",
    "hull_sampling_weights",
    "lower_convex_hull",
    "make_strategy",
    "register_strategy",
    "select_best",
    "select_random",
    "select_tournament",
    "strategy_class",
    "strategy_names",
    "strategy_options",
]
