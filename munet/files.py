"""Files munet writes get the permissions the user's umask asks for, weights included.

safetensors' ``save_file`` writes through a private temporary file, so its files end up 0600
whatever the umask, while every other file munet writes (manifests, configs, CSVs) follows
the umask: a shared state dir or an exported model handed to a colleague could not be read.
Every safetensors writer goes through :func:`save_safetensors_file`, and the store's local
writer sets the mode of each file it writes with :func:`follow_umask`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

_PROC_STATUS = "/proc/self/status"


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux)."""
    try:
        with open(_PROC_STATUS) as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    # Elsewhere the only way to read it is to set it (briefly; not thread-safe, hence last).
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def umask_mode() -> int:
    """The mode of a new regular file under the current umask (``0o666 & ~umask``)."""
    return 0o666 & ~current_umask()


def follow_umask(target: str | os.PathLike | int) -> None:
    """Sets a file's mode (a path, or an open file descriptor) to :func:`umask_mode`."""
    mode = umask_mode()
    if isinstance(target, int):
        os.fchmod(target, mode)
    else:
        os.chmod(target, mode)


def save_safetensors_file(
    tensors: Mapping[str, Any], path: str | os.PathLike, metadata: dict[str, str] | None = None
) -> None:
    """safetensors' ``save_file``, then the umask's mode instead of its private 0600."""
    from safetensors.torch import save_file

    save_file(dict(tensors), str(path), metadata=metadata)
    follow_umask(path)
