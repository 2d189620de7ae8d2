"""Which paths of other tasks a multipath child combines (seed 000's subpath rules): the
parent's subpaths where they are still loaded and allowed, else distinct draws among the
other agents of the singlepath class (not VTAB-1k tasks; not a random-init root unless
``multipath_random_root``).

:class:`SubpathChooser`, held by :class:`munet.agents.multipath.MultipathAgent`, applies them;
apart so that the rules of the draw read in one place.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from munet.agents.reports import AgentError
from munet.agents.shared_images import path_saw_test_images_of, saw_test_images_of
from munet.system import Path, Population, format_agent_id
from munet.system.naming import ROOT_MODEL_TASK_PREFIX

MAIN_PATH = "path_0"
# VTAB-1k tasks are left out of the subpaths drawn at random (the seed's rule).
EXCLUDED_TASK_SUFFIX = "~1k"


def random_root_id(singlepath_class: str) -> str:
    """The agent id of ``singlepath_class``'s ``random_init`` root model."""
    return format_agent_id(singlepath_class, f"{ROOT_MODEL_TASK_PREFIX}random_init")


def may_draw(
    agent_id: str, singlepath_class: str, random_root_allowed: bool, task_name: str = ""
) -> bool:
    """Whether a path of ``agent_id`` may be drawn as a multipath subpath for ``task_name``:
    another agent of the singlepath class, not a VTAB-1k task, not a random-init root unless
    allowed, not a task that shares images with ``task_name`` (munet.tasks.overlap)."""
    return (
        agent_id.startswith(f"{singlepath_class}~")
        and not agent_id.endswith(EXCLUDED_TASK_SUFFIX)
        and (random_root_allowed or agent_id != random_root_id(singlepath_class))
        and not saw_test_images_of(agent_id, task_name)
    )


def slot_name(index: int) -> str:
    """``path_{index}``: the component slot of a multipath model's ``index``-th path."""
    return f"path_{index}"


def canonical(paths: Sequence[Path]) -> list[Path]:
    """Paths in a fixed order (agent id, then path id) for random draws."""
    return sorted(paths, key=lambda p: (p.agent_id, p.id))


class SubpathChooser:
    """Chooses a multipath child's subpaths for one agent (``select``), by the rules above.

    Args:
        agent_id: the multipath agent.
        task_name: its task (paths that saw its test images are never drawn).
        singlepath_class: the agent class whose paths are combined.
        random_root_allowed: ``multipath_random_root``: a random-init root may be a subpath.
        state_root: the state dir, for the error when nothing can be combined.
    """

    def __init__(
        self,
        agent_id: str,
        task_name: str,
        singlepath_class: str,
        random_root_allowed: bool,
        state_root: Any,
    ) -> None:
        self.agent_id = agent_id
        self.task_name = task_name
        self.singlepath_class = singlepath_class
        self.random_root_allowed = random_root_allowed
        self.state_root = state_root

    @property
    def main_agent_id(self) -> str:
        """The same task's singlepath agent (where ``path_0`` comes from)."""
        return format_agent_id(self.singlepath_class, self.task_name)

    def select(
        self,
        population: Population,
        hparams: dict[str, Any],
        parent: Path,
        selected: dict[str, Path],
        rng: random.Random,
    ) -> list[str]:
        """Fills ``selected`` with ``path_1 ..`` (in place, slots numbered without gaps);
        returns the log lines."""
        lines: list[str] = []
        wanted = int(hparams["num_paths"])
        slots = [slot_name(index) for index in range(1, wanted)]
        inherited = self._inherited_subpaths(population, parent, slots, lines)
        chosen: list[Path] = []
        for slot in slots:
            if slot in inherited:
                chosen.append(inherited[slot])
                lines.append(f"{slot} from the parent: {inherited[slot].full_id}")
                continue
            # Distinct agents across every slot, the parent's later subpaths included.
            used = {p.agent_id for p in [*selected.values(), *chosen, *inherited.values()]}
            eligible = canonical(
                [
                    p
                    for agent_id, paths in population.paths.items()
                    if agent_id not in used and self._may_draw(agent_id)
                    for p in paths
                    if not path_saw_test_images_of(p, self.task_name)
                ]
            )
            if not eligible:
                continue
            chosen.append(rng.choice(eligible))
            lines.append(f"{slot} drawn at random: {chosen[-1].full_id}")
        if not chosen:
            leaky = sorted(
                {p.agent_id for p in population.all_paths()
                 if path_saw_test_images_of(p, self.task_name)}
            )  # fmt: skip
            left_out = (
                f" (left out: the paths of {', '.join(leaky)}, which hold components trained "
                f"on images of {self.task_name}'s test split)"
                if leaky
                else ""
            )
            raise AgentError(
                f"{self.agent_id} needs paths of another {self.singlepath_class} agent "
                f"besides {self.main_agent_id}{self._root_hint()}; the system at "
                f"{self.state_root} has none{left_out}: run a {self.singlepath_class} agent on "
                f"another task{self._root_command_hint()}"
            )
        if len(chosen) < len(slots):
            lines.append(
                f"num_paths {wanted} wanted but only {len(chosen)} other path(s) can be "
                f"combined: using {len(chosen) + 1} paths"
            )
        for index, path in enumerate(chosen, start=1):
            selected[slot_name(index)] = path
        return lines

    def _inherited_subpaths(
        self, population: Population, parent: Path, slots: list[str], lines: list[str]
    ) -> dict[str, Path]:
        """{slot: the parent's subpath in that slot} for the slots wanted, when it is loaded
        (and, unless ``multipath_random_root``, is not a random-init root); the rest are
        logged and drawn again."""
        refs = parent.hparams.get("paths") or {}
        inherited: dict[str, Path] = {}
        for slot in slots:
            ref = refs.get(slot)
            if ref is None:
                continue
            try:
                path = population.get_path(ref["agent_id"], int(ref["id"]))
            except KeyError:
                lines.append(
                    f"{slot}: the parent's {ref['agent_id']}:{ref['id']} is not loaded; "
                    "drawing another"
                )
                continue
            if self._is_excluded_root(path.agent_id):
                lines.append(
                    f"{slot}: the parent's {path.full_id} is an untrained random_init root "
                    "(multipath_random_root=false); drawing another"
                )
                continue
            inherited[slot] = path
        return inherited

    def _is_excluded_root(self, agent_id: str) -> bool:
        return agent_id == random_root_id(self.singlepath_class) and not self.random_root_allowed

    def _may_draw(self, agent_id: str) -> bool:
        return may_draw(agent_id, self.singlepath_class, self.random_root_allowed, self.task_name)

    def _root_hint(self) -> str:
        if self.random_root_allowed:
            return " (or its root model)"
        return " (or a root model made from a checkpoint)"

    def _root_command_hint(self) -> str:
        if self.random_root_allowed:
            return f", or `munet root --agent {self.singlepath_class}`"
        return (
            f", or `munet root --agent {self.singlepath_class} --root checkpoint --set "
            "checkpoint_path=FILE`; `--set multipath_random_root=true` routes through a "
            "random_init root as the seed does"
        )
