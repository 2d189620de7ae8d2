"""TensorBoard event files (`--log-dir DIR`; needs `munet-evolve[tensorboard]`).

Tags, per agent run directory ``DIR/<agent id>/``:

- ``TASK/paths/train_loss`` and ``TASK/paths/val_quality`` over the path's train steps, in one
  sub-run per path, ``DIR/<agent id>/paths/TASK/path_ID/``: TensorBoard draws one chart per
  metric with every path (candidate) a line in it, as ``add_scalars`` would, instead of one
  chart per path (hundreds over a long run); the sub-run holds the path's hparams too;
- ``TASK/generation/best_quality``, ``.../best_score``, ``.../num_improved`` over the
  generation index of the run (cycle * generations per cycle + generation);
- ``TASK/cycle/best_quality``, ``.../best_score``, ``.../test_quality`` over completed cycles;
- each path's hparams with its quality, score and admission, in the HParams dashboard (in the
  path's sub-run, so a session there links to its curves).

Non-finite values (a failed path's NaN) are left out of the curves.
"""

from __future__ import annotations

import math

from munet.tracking.base import (
    CyclePoint,
    GenerationPoint,
    PathCurve,
    path_run,
    scalar_hparams,
    tag_prefix,
)


def import_summary_writer():
    """torch's SummaryWriter; it needs the `tensorboard` package.

    Raises:
        ImportError: naming the extra to install.
    """
    try:
        import tensorboard  # noqa: F401 - torch.utils.tensorboard needs it
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as error:
        raise ImportError(
            "--log-dir (TensorBoard) needs the optional package 'tensorboard' "
            "(pip install 'munet-evolve[tensorboard]')"
        ) from error
    return SummaryWriter


class TensorBoardTracker:
    """Writes an agent's events as TensorBoard scalars and hparams under ``log_dir``."""

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        self._writer_class = import_summary_writer()
        self.writer = self._writer_class(log_dir=log_dir)

    def _scalar(self, tag: str, value: float, step: int) -> None:
        if value is not None and math.isfinite(float(value)):
            self.writer.add_scalar(tag, float(value), int(step))

    def path_trained(self, curve: PathCurve) -> None:
        run = path_run(curve)
        tag = f"{tag_prefix(curve.task)}/paths"
        # The path's sub-run, written whole and closed (a long run has hundreds of paths).
        with self._writer_class(log_dir=f"{self.log_dir}/{run}") as writer:
            for step, loss, quality in zip(
                curve.eval_steps, curve.train_losses, curve.evals, strict=True
            ):
                for name, value in (("train_loss", loss), ("val_quality", quality)):
                    if value is not None and math.isfinite(float(value)):
                        writer.add_scalar(f"{tag}/{name}", float(value), int(step))
        hparams = {"cycle": curve.cycle, "generation": curve.generation}
        hparams.update(scalar_hparams(curve.hparams))
        metrics = {
            "hparam/quality": curve.quality,
            "hparam/score": curve.score,
            "hparam/improved": float(curve.improved),
        }
        metrics = {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}
        self.writer.add_hparams(hparams, metrics, run_name=run)

    def generation_done(self, point: GenerationPoint) -> None:
        prefix = f"{point.task}/generation"
        self._scalar(f"{prefix}/best_quality", point.best_quality, point.index)
        self._scalar(f"{prefix}/best_score", point.best_score, point.index)
        self._scalar(f"{prefix}/num_improved", point.num_improved, point.index)
        self.writer.flush()

    def cycle_done(self, point: CyclePoint) -> None:
        prefix = f"{point.task}/cycle"
        self._scalar(f"{prefix}/best_quality", point.best_quality, point.cycle)
        self._scalar(f"{prefix}/best_score", point.best_score, point.cycle)
        self._scalar(f"{prefix}/test_quality", point.test_quality, point.cycle)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
