"""Tasks built from the same images: a model trained on one of them has seen images of the
other's test split, so neither may start from or combine the other's paths.

``digits`` and ``1k/digits`` both split scikit-learn's 1,797 digits (differently), so each one's
training images include test images of the other. The seed knew this case as VTAB-1k tasks
next to their full versions and kept ``~1k`` agents out of the multipath draws; munet's suite
tasks are drawn among themselves (the benchmark's system holds only them), so the rule here is
the pairs that really share images.
"""

from __future__ import annotations

from typing import Any

from munet.system.naming import agent_task_name, is_root_model_agent

#: Groups of tasks whose splits share images.
SHARED_IMAGES: tuple[frozenset[str], ...] = (frozenset({"digits", "1k/digits"}),)


def share_images(task_a: str, task_b: str) -> bool:
    """Whether two different tasks split the same images."""
    return task_a != task_b and any(
        task_a in group and task_b in group for group in SHARED_IMAGES
    )


def saw_test_images_of(agent_id: str, task_name: str) -> bool:
    """Whether the paths of ``agent_id`` trained on images of ``task_name``'s test split."""
    return not is_root_model_agent(agent_id) and share_images(agent_task_name(agent_id), task_name)


def path_saw_test_images_of(path: Any, task_name: str) -> bool:
    """Whether ``path`` (a munet.system.Path) holds a component trained on images of
    ``task_name``'s test split: its own agent's, or one it shares frozen from another task."""
    if not any(task_name in group for group in SHARED_IMAGES):
        return False  # Most tasks: no component's agent needs looking at.
    return saw_test_images_of(path.agent_id, task_name) or any(
        saw_test_images_of(c.agent_id, task_name) for c in path.leaf_components()
    )
