"""Which trackers an agent opens, and where they write (picklable, for worker processes)."""

from __future__ import annotations

import os
import re
import zlib
from dataclasses import dataclass
from typing import Any

from munet.tracking.base import MultiTracker, NullTracker, Tracker


@dataclass(frozen=True)
class TrackingSettings:
    """Tracking asked for by `--log-dir`, `--wandb`, `--wandb-project`.

    Attributes:
        log_dir: TensorBoard event files go to ``log_dir/<agent id>/`` (one subdir per agent,
            so TensorBoard shows each agent as a run); None: no TensorBoard. A local path is
            made absolute, so Ray workers write where the driver meant.
        wandb: log to Weights & Biases too, one W&B run per agent (``WANDB_MODE=offline``
            writes the runs locally, for ``wandb sync`` later).
        wandb_project: the W&B project (default ``munet-<state dir name>``).
        state_dir: the system state (names the W&B project and group, seeds the run ids).
        quiet: W&B writes no console lines (``munet run -q``); its warnings and errors show.
    """

    log_dir: str | None = None
    wandb: bool = False
    wandb_project: str | None = None
    state_dir: str = ""
    quiet: bool = False

    def __post_init__(self) -> None:
        if self.log_dir is not None and "://" not in self.log_dir:
            object.__setattr__(self, "log_dir", os.path.abspath(os.path.expanduser(self.log_dir)))

    @property
    def enabled(self) -> bool:
        return self.log_dir is not None or self.wandb

    def check_available(self) -> None:
        """Raises ImportError, naming the extra, when a backend's package is missing (call it
        before any work starts)."""
        if self.log_dir is not None:
            from munet.tracking.tensorboard import import_summary_writer

            import_summary_writer()
        if self.wandb:
            from munet.tracking.wandb import import_wandb

            import_wandb()

    def agent_log_dir(self, agent_id: str) -> str | None:
        """Where one agent's files go: ``log_dir/<agent id>`` (None without a log dir)."""
        return None if self.log_dir is None else os.path.join(self.log_dir, agent_id)

    def project(self) -> str:
        """The W&B project: the one asked for, else ``munet-<state dir name>``."""
        if self.wandb_project:
            return self.wandb_project
        name = os.path.basename(self.state_dir.rstrip("/")) or "state"
        return "munet-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", name)

    def run_id(self, agent_id: str) -> str:
        """A W&B run id stable for (state dir, agent): a rerun or a resumed agent continues
        its run (online); different state dirs never share one."""
        where = self.state_dir if "://" in self.state_dir else os.path.abspath(self.state_dir)
        digest = zlib.crc32(f"{where}|{agent_id}".encode())
        return re.sub(r"[^A-Za-z0-9_-]+", "-", agent_id) + f"-{digest:08x}"

    def open(self, agent_id: str, config: dict[str, Any] | None = None) -> Tracker:
        """The trackers of one agent (a `NullTracker` when nothing is asked for).

        Args:
            agent_id: the agent (names its log subdir and W&B run).
            config: the agent's config (the W&B run's config).

        Raises:
            ImportError: a backend's package is missing, naming the extra to install.
        """
        trackers: list[Tracker] = []
        if self.log_dir is not None:
            from munet.tracking.tensorboard import TensorBoardTracker

            trackers.append(TensorBoardTracker(self.agent_log_dir(agent_id)))
        if self.wandb:
            from munet.tracking.wandb import WandbTracker

            trackers.append(
                WandbTracker(
                    project=self.project(),
                    run_name=agent_id,
                    run_id=self.run_id(agent_id),
                    group=os.path.basename(self.state_dir.rstrip("/")) or None,
                    directory=self.agent_log_dir(agent_id),
                    config=config,
                    quiet=self.quiet,
                )
            )
        if not trackers:
            return NullTracker()
        return trackers[0] if len(trackers) == 1 else MultiTracker(trackers)
