"""Tasks built from the same images: a model trained on one of them has seen images of the
other's test split, so neither may start from or combine the other's paths.

``digits`` and ``1k/digits`` both split scikit-learn's 1,797 digits (differently), so each one's
training images include test images of the other. The seed knew this case as VTAB-1k tasks
next to their full versions and kept ``~1k`` agents out of the multipath draws; munet's suite
tasks are drawn among themselves (the benchmark's system holds only them), so the rule here is
the pairs that really share images. Which agents' paths that concerns: munet.agents.shared_images.
"""

from __future__ import annotations

#: Groups of tasks whose splits share images.
SHARED_IMAGES: tuple[frozenset[str], ...] = (frozenset({"digits", "1k/digits"}),)


def share_images(task_a: str, task_b: str) -> bool:
    """Whether two different tasks split the same images."""
    return task_a != task_b and any(task_a in group and task_b in group for group in SHARED_IMAGES)
