"""Which agents' paths trained on another task's test images (munet.tasks.overlap says which
tasks split the same images): such paths are kept out of that task's parents and multipath
draws."""

from __future__ import annotations

from typing import Any

from munet.system.naming import agent_task_name, is_root_model_agent
from munet.tasks.overlap import SHARED_IMAGES, share_images


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
