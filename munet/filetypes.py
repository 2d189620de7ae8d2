"""What a file is, by its first bytes: for errors about a file that should be an .npz archive.

NumPy's own errors for such files mislead (a text file "contains pickled data" and gets an
`allow_pickle` hint), so munet's readers ask `describe_non_npz` first and name the file for
what it is. A leaf module: no torch, no munet imports.
"""

from __future__ import annotations

import os

# Known kinds by their first bytes; the zip signatures are what an .npz starts with.
_MAGIC = (
    (b"\x93NUMPY", "a single NumPy array (.npy), not an .npz archive: save with numpy.savez"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x1f\x8b", "a gzip file"),
    (b"\x89HDF", "an HDF5 file"),
    (b"%PDF", "a PDF document"),
    (b"\x80", "a Python pickle (munet reads no pickle)"),
)
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def describe_non_npz(path: str | os.PathLike[str]) -> str | None:
    """None when `path` starts like a zip archive (an .npz); else what it is, in words
    ("a PNG image", "a text file (it starts 'hello')", "empty (0 bytes)", ...)."""
    with open(path, "rb") as file:
        head = file.read(512)
    if head.startswith(ZIP_MAGIC):
        return None
    if not head:
        return "empty (0 bytes)"
    known = next((kind for magic, kind in _MAGIC if head.startswith(magic)), None)
    if known is not None:
        return known
    try:
        text = head.decode("utf-8").strip()
    except UnicodeDecodeError:
        return f"not a zip archive (it starts with bytes {head[:8].hex(' ')})"
    shown = text.splitlines()[0][:40] if text else ""
    return f"a text file (it starts {shown!r})"
