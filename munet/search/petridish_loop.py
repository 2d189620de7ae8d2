"""Petridish's distributed growth loop (Archai's `SearcherPetridish.search`, seeds/001).

The loop, as the seed runs it, on any executor:

1. Seed models, one per point of the objective's macro grid, are submitted as "seed" jobs
   (trained first).
2. Whenever a job finishes (whichever finishes first):
   - a trained model ("seed" or "train" job) joins the pool (the seed's hull points); a parent
     is sampled from the eps band of the pool's lower convex hull of error vs cost (weights
     favour less-sampled and cheaper points; the parent's sampling count rises and its child
     inherits it) and a "search" job grows it;
   - a grown model ("search" job) gets a "train" job.
3. Stop when the costliest pool model exceeds `max_cost` or the pool holds more than
   `max_pool_size` models (plus optional budgets: trained models, simulated seconds); cancel
   what is still running; write the frontier plot, the frontier's models and the whole pool.

Beyond the seed: the state (pool, jobs in flight with their inputs, random state, counters) is
checkpointed after *every* finished job, atomically, and `resume=True` continues from it by
re-submitting only the jobs that were in flight (the seed restores its hull but no jobs, so its
restored loop would wait forever). A failed job is logged and replaced by a new parent sample,
so the number of jobs in flight stays what the seed keeps; `max_consecutive_failures` stops a
loop that only fails. With the in-process executor jobs run first-in first-out, so a seeded run
(and an interrupted-then-resumed one) replays exactly.

This module is the loop; its settings and stop rule are munet.search.petridish_settings, the
pool's records and parent sampling munet.search.petridish_pool.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from .base import rng_state_from_json, rng_state_to_json
from .executors import Executor
from .frontier import write_outputs
from .jobs import run_objective_job
from .objectives.base import GrowthObjective, cost_text, derived_seed
from .petridish_pool import LoopReport, PoolPoint, sample_parent
from .petridish_settings import EXTENDABLE, PetridishSettings, stop_reason
from .run_state import load_run_state, refuse_existing_state, save_run_state

# The settings and pool records live in .petridish_settings and .petridish_pool; they are
# re-exported here, so importing them from this module works too.
__all__ = [
    "EXTENDABLE",
    "LoopReport",
    "PetridishLoop",
    "PetridishSettings",
    "PoolPoint",
    "run_petridish",
]

logger = logging.getLogger(__name__)


class PetridishLoop:
    """One Petridish run writing into `out_dir` (see the module docstring).

    Args:
        objective: what to train and grow.
        executor: where jobs run (`InProcessExecutor`, `RayExecutor`).
        out_dir: output folder: state.json, models/, frontier.png, frontier.json, pool.json.
        settings: loop settings.
        resume: continue from `out_dir/state.json` (same objective and settings required, but
            for the stop limits: a finished loop resumed with larger ones goes on).
        progress: called with one line per finished job (e.g. `print`).

    Raises:
        ValueError: resume without a state, or a state of another objective or settings;
            a fresh run into a folder that already holds a state.
    """

    def __init__(
        self,
        objective: GrowthObjective,
        executor: Executor,
        out_dir: str | os.PathLike,
        settings: PetridishSettings | None = None,
        *,
        resume: bool = False,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.objective = objective
        self.executor = executor
        self.out_dir = os.path.abspath(out_dir)
        self.settings = settings or PetridishSettings()
        self.progress = progress or (lambda line: None)
        self._uses_weights = bool(getattr(objective, "uses_weights", True))
        self.rng = random.Random(self.settings.seed)
        self.pool: list[PoolPoint] = []
        self.in_flight: dict[int, dict[str, Any]] = {}  # job id -> spec, submission order
        self.finished: list[dict[str, Any]] = []  # one record per finished job
        self.next_job_id = 0
        self.simulated_seconds = 0.0
        self.num_failed = 0
        self.consecutive_failures = 0
        self.stop_reason: str | None = None
        if resume:
            self._load()
        else:
            refuse_existing_state(self.out_dir)
        self._resumed = resume

    # ---------------------------------------------------------------------------- the loop

    def run(self, max_results: int | None = None) -> LoopReport:
        """Run until a stop rule holds (or `max_results` more jobs finished: an interruption).

        Returns:
            The report; outputs are written only when a stop rule ended the loop.
        """
        os.makedirs(os.path.join(self.out_dir, "models"), exist_ok=True)
        if self._resumed:
            for spec in list(self.in_flight.values()):
                self._submit_spec(spec)
            if self.stop_reason is None and not self.in_flight and self.pool:
                # An extended finished loop: as many growth jobs as the seed keeps in flight
                # (one per seed model), from the pool's hull as usual.
                for _ in self.objective.seed_candidates():
                    self._grow_sampled_parent()
                self._checkpoint()
        elif not self.finished and not self.in_flight:
            for candidate in self.objective.seed_candidates():
                self._submit("seed", candidate, None, parent_id=None, sampling_count=0)
            self._checkpoint()
        handled = 0
        while self.stop_reason is None:
            self.stop_reason = self._stop_rule()
            if self.stop_reason is not None:
                break
            if not self.in_flight:
                self.stop_reason = "no job left in flight (every job failed)"
                break
            if max_results is not None and handled >= max_results:
                return self._report({})
            for outcome in self.executor.wait():
                spec = self.in_flight.pop(outcome.job_id)
                self._handle(spec, outcome.result if outcome.ok else None, outcome.error)
                handled += 1
                self._checkpoint()
                if self._stop_rule() is not None:
                    break
        cancelled = self.executor.cancel_all()
        if cancelled:
            self.progress(f"cancelled {len(cancelled)} job(s) still in flight: {cancelled}")
        self.in_flight.clear()
        self._checkpoint()
        outputs = write_outputs(self.out_dir, self.pool, self.settings.eps, self.objective)
        self.progress(f"stopped: {self.stop_reason}")
        return self._report(outputs)

    def _report(self, outputs: dict[str, str]) -> LoopReport:
        return LoopReport(
            pool=list(self.pool),
            stop_reason=self.stop_reason or "interrupted",
            num_jobs=len(self.finished),
            num_failed=self.num_failed,
            simulated_seconds=self.simulated_seconds,
            outputs=outputs,
        )

    def _stop_rule(self) -> str | None:
        """The seed's `_is_search_done`, plus the optional budgets (`stop_reason`)."""
        return stop_reason(
            self.settings,
            [p.cost for p in self.pool],
            self.simulated_seconds,
            self.consecutive_failures,
        )

    def _handle(self, spec: dict[str, Any], result: dict[str, Any] | None, error: str | None):
        stage, job_id = spec["stage"], spec["id"]
        record = {"id": job_id, "stage": stage, "parent_id": spec["parent_id"], "failure": error}
        if result is None:
            self.num_failed += 1
            self.consecutive_failures += 1
            self.finished.append(record)
            self.progress(f"job {job_id} {stage} FAILED: {error}")
            logger.info("petridish job %d (%s) failed: %s", job_id, stage, error)
            # Keep the seed's number of jobs in flight: grow another sampled parent.
            if self.pool:
                self._grow_sampled_parent()
            return
        self.consecutive_failures = 0
        seconds = float(result.get("train_seconds") or 0.0)
        self.simulated_seconds += seconds
        record.update(
            {k: result.get(k) for k in ("candidate", "error", "cost", "train_seconds", "metrics")}
        )
        self.finished.append(record)
        if stage == "search":
            self._submit(
                "train",
                result["candidate"],
                result.get("weights"),
                parent_id=spec["parent_id"],
                sampling_count=spec["sampling_count"],
                search_seconds=seconds,
            )
        else:
            point = PoolPoint(
                id=job_id,
                candidate=result["candidate"],
                error=float(result["error"]),
                cost=float(result["cost"]),
                sampling_count=spec["sampling_count"],
                parent_id=spec["parent_id"],
                stage=stage,
                weights=self._relative(result.get("weights")),
                train_seconds=seconds + float(spec.get("search_seconds", 0.0)),
                metrics=dict(result.get("metrics") or {}),
            )
            self.pool.append(point)
            if self._stop_rule() is None:
                self._grow_sampled_parent()
        self.progress(self._progress_line(spec, result))

    def _grow_sampled_parent(self) -> None:
        """The seed's `sample_from_hull` followed by a search job for the sampled parent."""
        parent = sample_parent(self.pool, self.settings.eps, self.rng)
        self._submit(
            "search",
            parent.candidate,
            self._absolute(parent.weights),
            parent_id=parent.id,
            sampling_count=parent.sampling_count,
        )

    def _submit(self, stage, candidate, init_weights, *, parent_id, sampling_count, **extra):
        job_id = self.next_job_id
        self.next_job_id += 1
        out_weights = None
        if self._uses_weights and stage in ("seed", "search", "train"):
            out_weights = os.path.join("models", f"{job_id:05d}-{stage}.safetensors")
        spec = {
            "id": job_id,
            "stage": stage,
            "candidate": candidate,
            "init_weights": self._relative(init_weights),
            "out_weights": out_weights,
            "seed": derived_seed(self.settings.seed, job_id),
            "parent_id": parent_id,
            "sampling_count": sampling_count,
            **extra,
        }
        self.in_flight[job_id] = spec
        self._submit_spec(spec)

    def _submit_spec(self, spec: dict[str, Any]) -> None:
        payload = {
            "objective": self.objective.to_json(),
            "stage": spec["stage"],
            "candidate": spec["candidate"],
            "init_weights": self._absolute(spec["init_weights"]),
            "out_weights": self._absolute(spec["out_weights"]),
            "seed": spec["seed"],
        }
        self.executor.submit(spec["id"], run_objective_job, payload)

    def _progress_line(self, spec: dict[str, Any], result: dict[str, Any]) -> str:
        error = result.get("error")
        error_text = "   -   " if error is None else f"{error:.4f}"
        return (
            f"job {spec['id']:>4} {spec['stage']:<6} {self.objective.describe(result['candidate'])}"
            f"  error {error_text}"
            f"  cost {cost_text(float(result['cost']), getattr(self.objective, 'cost_unit', ''))}"
            f"  {float(result.get('train_seconds') or 0):.2f}s"
            f"  pool {len(self.pool)}  in flight {len(self.in_flight)}"
        )

    # ------------------------------------------------------------------------ paths, state

    def _relative(self, path: str | None) -> str | None:
        if path is None:
            return None
        return os.path.relpath(path, self.out_dir) if os.path.isabs(path) else path

    def _absolute(self, path: str | None) -> str | None:
        return None if path is None else os.path.join(self.out_dir, path)

    def _identity(self) -> dict[str, Any]:
        return {"objective": self.objective.to_json(), "settings": asdict(self.settings)}

    def _checkpoint(self) -> None:
        save_run_state(
            self.out_dir,
            self._identity(),
            {
                "rng": rng_state_to_json(self.rng),
                "next_job_id": self.next_job_id,
                "pool": [asdict(p) for p in self.pool],
                "in_flight": list(self.in_flight.values()),
                "finished": self.finished,
                "simulated_seconds": self.simulated_seconds,
                "num_failed": self.num_failed,
                "consecutive_failures": self.consecutive_failures,
                "stop_reason": self.stop_reason,
            },
        )

    def _load(self) -> None:
        state = load_run_state(self.out_dir, self._identity(), EXTENDABLE)
        self.rng.setstate(rng_state_from_json(state["rng"]))
        self.next_job_id = int(state["next_job_id"])
        self.pool = [PoolPoint(**p) for p in state["pool"]]
        self.in_flight = {int(spec["id"]): spec for spec in state["in_flight"]}
        self.finished = list(state["finished"])
        self.simulated_seconds = float(state["simulated_seconds"])
        self.num_failed = int(state["num_failed"])
        self.consecutive_failures = int(state["consecutive_failures"])
        self.stop_reason = state.get("stop_reason")
        if self.stop_reason is not None and self._stop_rule() is None and self.pool:
            s = self.settings
            self.progress(
                f"extending a finished run ({self.stop_reason}) to max_pool_size "
                f"{s.max_pool_size}, max_cost {s.max_cost}, max_trained {s.max_trained}, "
                f"time_budget {s.time_budget}"
            )
            self.stop_reason = None


def run_petridish(
    objective: GrowthObjective,
    executor: Executor,
    out_dir: str | os.PathLike,
    settings: PetridishSettings | None = None,
    *,
    resume: bool = False,
    progress: Callable[[str], None] | None = None,
) -> LoopReport:
    """Run (or resume) a Petridish loop to its end; see `PetridishLoop`."""
    loop = PetridishLoop(objective, executor, out_dir, settings, resume=resume, progress=progress)
    return loop.run()
