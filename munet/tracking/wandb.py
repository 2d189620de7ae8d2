"""Weights & Biases logging (`--wandb`; needs `munet-evolve[wandb]`).

One W&B run per agent: project ``--wandb-project`` (default ``munet-<state dir name>``), run
name the agent id, group the state dir name, and a run id stable for (state dir, agent), so
a rerun of the agent resumes its run online. ``WANDB_MODE=offline`` writes the run under
``LOG_DIR/<agent id>/wandb/`` (with ``--log-dir``; else W&B's default ``./wandb`` or
``WANDB_DIR``) for a later ``wandb sync``.

The keys are the TensorBoard tags (munet.tracking.tensorboard; a path's curves, a TensorBoard
sub-run each, are keyed by the path here), each curve on its own x axis
(`define_metric`): ``TASK/path_ID/train_loss`` and ``.../val_quality`` over
``TASK/path_ID/step``; ``TASK/generation/best_quality|best_score|num_improved`` over
``TASK/generation_index``; ``TASK/cycle/best_quality|best_score|test_quality`` over
``TASK/cycle_index``. The paths' hparams, qualities and scores form the table
``TASK/paths``, logged at the end of every cycle and at close.
"""

from __future__ import annotations

import math
import os
from typing import Any

from munet.tracking.base import CyclePoint, GenerationPoint, PathCurve, path_tag, scalar_hparams


def import_wandb():
    """The `wandb` module.

    Raises:
        ImportError: naming the extra to install.
    """
    try:
        import wandb
    except ImportError as error:
        raise ImportError(
            "--wandb needs the optional package 'wandb' (pip install 'munet-evolve[wandb]')"
        ) from error
    return wandb


def _finite(values: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v for k, v in values.items() if not isinstance(v, float) or math.isfinite(v)
    }


class WandbTracker:
    """Logs an agent's events to one W&B run."""

    def __init__(
        self,
        project: str,
        run_name: str,
        run_id: str,
        group: str | None = None,
        directory: str | None = None,
        config: dict[str, Any] | None = None,
        quiet: bool = False,
    ) -> None:
        self._wandb = import_wandb()
        # quiet: none of W&B's ~30 start/sync/summary lines (as WANDB_SILENT=true).
        settings = self._wandb.Settings(silent=True, quiet=True) if quiet else None
        if directory is not None:
            os.makedirs(directory, exist_ok=True)
        self.run = self._wandb.init(
            project=project,
            name=run_name,
            id=run_id,
            group=group,
            dir=directory,
            config=config or {},
            resume="allow",
            reinit="create_new",  # several agents in one process (the demo, the Python API)
            settings=settings,
        )
        self._defined: set[str] = set()
        self._rows: dict[str, list[list[Any]]] = {}
        self._columns: dict[str, list[str]] = {}
        self._new_rows = False

    def _define(self, pattern: str, step: str) -> None:
        if pattern not in self._defined:
            self.run.define_metric(step, hidden=True)
            self.run.define_metric(pattern, step_metric=step)
            self._defined.add(pattern)

    def path_trained(self, curve: PathCurve) -> None:
        prefix = path_tag(curve)
        for key in ("train_loss", "val_quality"):
            self._define(f"{prefix}/{key}", f"{prefix}/step")
        for step, loss, quality in zip(
            curve.eval_steps, curve.train_losses, curve.evals, strict=True
        ):
            self.run.log(
                _finite(
                    {
                        f"{prefix}/step": int(step),
                        f"{prefix}/train_loss": float(loss),
                        f"{prefix}/val_quality": float(quality),
                    }
                )
            )
        hparams = scalar_hparams(curve.hparams)
        row = {
            "path_id": curve.path_id,
            "cycle": curve.cycle,
            "generation": curve.generation,
            "quality": float(curve.quality),
            "score": float(curve.score),
            "improved": bool(curve.improved),
            **{f"hparams.{k}": v if isinstance(v, str) else str(v) for k, v in hparams.items()},
        }
        columns = self._columns.setdefault(curve.task, list(row))
        columns.extend(k for k in row if k not in columns)
        self._rows.setdefault(curve.task, []).append([row.get(c) for c in columns])
        self._new_rows = True

    def generation_done(self, point: GenerationPoint) -> None:
        prefix = f"{point.task}/generation"
        step = f"{point.task}/generation_index"
        self._define(f"{prefix}/*", step)
        self.run.log(
            _finite(
                {
                    step: point.index,
                    f"{prefix}/best_quality": float(point.best_quality),
                    f"{prefix}/best_score": float(point.best_score),
                    f"{prefix}/num_improved": point.num_improved,
                }
            )
        )

    def cycle_done(self, point: CyclePoint) -> None:
        prefix = f"{point.task}/cycle"
        step = f"{point.task}/cycle_index"
        self._define(f"{prefix}/*", step)
        self.run.log(
            _finite(
                {
                    step: point.cycle,
                    f"{prefix}/best_quality": float(point.best_quality),
                    f"{prefix}/best_score": float(point.best_score),
                    f"{prefix}/test_quality": float(point.test_quality),
                }
            )
        )
        self._log_tables()

    def _log_tables(self) -> None:
        if not self._new_rows:
            return
        self._new_rows = False
        for task, rows in self._rows.items():
            columns = self._columns[task]
            padded = [row + [None] * (len(columns) - len(row)) for row in rows]
            self.run.log({f"{task}/paths": self._wandb.Table(columns=columns, data=padded)})

    def close(self) -> None:
        self._log_tables()
        self.run.finish()
