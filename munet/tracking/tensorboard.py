"""TensorBoard event files (`--log-dir DIR`; needs `munet[tensorboard]`).

Tags, per agent run directory ``DIR/<agent id>/``:

- ``TASK/path_ID/train_loss`` and ``TASK/path_ID/val_quality`` over the path's train steps;
- ``TASK/generation/best_quality``, ``.../best_score``, ``.../num_improved`` over the
  generation index of the run (cycle * generations per cycle + generation);
- ``TASK/cycle/best_quality``, ``.../best_score``, ``.../test_quality`` over completed cycles;
- each path's hparams with its quality, score and admission, in the HParams dashboard (one
  sub-run ``hparams/TASK/path_ID`` per path, as `SummaryWriter.add_hparams` makes them).

Non-finite values (a failed path's NaN) are left out of the curves.
"""

from __future__ import annotations

import math

from munet.tracking.base import CyclePoint, GenerationPoint, PathCurve, path_tag, scalar_hparams


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
            "(pip install 'munet[tensorboard]')"
        ) from error
    return SummaryWriter


class TensorBoardTracker:
    """Writes an agent's events as TensorBoard scalars and hparams under ``log_dir``."""

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        self.writer = import_summary_writer()(log_dir=log_dir)

    def _scalar(self, tag: str, value: float, step: int) -> None:
        if value is not None and math.isfinite(float(value)):
            self.writer.add_scalar(tag, float(value), int(step))

    def path_trained(self, curve: PathCurve) -> None:
        prefix = path_tag(curve)
        for step, loss, quality in zip(
            curve.eval_steps, curve.train_losses, curve.evals, strict=True
        ):
            self._scalar(f"{prefix}/train_loss", loss, step)
            self._scalar(f"{prefix}/val_quality", quality, step)
        hparams = {"cycle": curve.cycle, "generation": curve.generation}
        hparams.update(scalar_hparams(curve.hparams))
        metrics = {
            "hparam/quality": curve.quality,
            "hparam/score": curve.score,
            "hparam/improved": float(curve.improved),
        }
        metrics = {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}
        self.writer.add_hparams(hparams, metrics, run_name=f"hparams/{prefix}")

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
