"""Expected failures of the `munet` command: one line each, with a distinct exit code.

A failure the user can act on (a bad value, a locked agent, a read-only or full disk, a
damaged state) prints `munet: error: WHAT. WHAT TO DO` on stderr and exits with the code of its
kind below; the traceback appears only with `--debug`. Anything else is a bug: one line that
says so, exit code 1, and the traceback with `--debug`.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback

# Exit codes, one per kind of expected failure (2 is also argparse's usage error).
EXIT_BUG = 1
EXIT_BAD_INPUT = 2
EXIT_LOCKED = 3
EXIT_STATE_EXISTS = 4
EXIT_DAMAGED_STATE = 5
EXIT_UNSAFE_PATH = 6
EXIT_NO_PERMISSION = 7
EXIT_DISK_FULL = 8
EXIT_OS_ERROR = 9
EXIT_QUALITY_MISMATCH = 10
EXIT_AGENTS_FAILED = 11
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process SIGTERM killed

EXIT_CODES = {
    "bug": EXIT_BUG,
    "bad input": EXIT_BAD_INPUT,
    "agent locked": EXIT_LOCKED,
    "state exists": EXIT_STATE_EXISTS,
    "damaged state": EXIT_DAMAGED_STATE,
    "link in the state dir": EXIT_UNSAFE_PATH,
    "read-only or no permission": EXIT_NO_PERMISSION,
    "disk full": EXIT_DISK_FULL,
    "other OS error": EXIT_OS_ERROR,
    "test quality mismatch": EXIT_QUALITY_MISMATCH,
    "launched agents failed": EXIT_AGENTS_FAILED,
    "interrupted": EXIT_INTERRUPTED,
    "terminated": EXIT_TERMINATED,
}


def _inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies under it (local paths; URLs compare as text)."""
    if "://" in folder:
        return path.startswith(folder)
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _os_error(err: OSError, state_dir: str | None, out: str | None) -> tuple[int, str]:
    filename = os.fsdecode(err.filename) if err.filename else ""
    where = f" ({filename})" if filename else ""
    # What the failed file belongs to: the state dir, else the --out target (the file or
    # folder itself, or a temporary file beside it), else neither.
    in_state = bool(state_dir and filename and _inside(filename, state_dir))
    out_target = False
    if out and filename and not in_state:
        beside = out if "://" in out else os.path.dirname(os.path.abspath(out))
        out_target = _inside(filename, beside)
    if err.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        if out_target:
            return EXIT_DISK_FULL, (
                f"no space left on the device{where} writing --out {out}: free some space or "
                "choose another --out"
            )
        return EXIT_DISK_FULL, (
            f"no space left on the device{where}; the last committed state is intact: free "
            "some space and rerun the same command to resume"
        )
    if err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        reason = "read-only file system" if err.errno == errno.EROFS else "permission denied"
        if out_target:
            return EXIT_NO_PERMISSION, (
                f"{reason}{where}: cannot write --out {out}; choose a writable --out or fix "
                "its permissions"
            )
        if in_state or not filename:
            return EXIT_NO_PERMISSION, (
                f"{reason}{where}: munet needs to write the state dir; choose a writable "
                "--state-dir or fix its permissions"
            )
        return EXIT_NO_PERMISSION, f"{reason}{where}: choose a writable path or fix its permissions"
    if out_target:
        # Somewhere that takes no files (e.g. /proc: "No such file or directory" for a file
        # beside --out): the user's choice of --out, as for permission denied.
        return EXIT_NO_PERMISSION, (
            f"cannot write --out {out}: {err.strerror or err}{where}; choose a writable --out"
        )
    return EXIT_OS_ERROR, f"{err.strerror or err}{where}"


def classify(
    err: BaseException, state_dir: str | None = None, out: str | None = None
) -> tuple[int, str] | None:
    """The exit code and the one-line message of an expected failure, or None for a bug.

    Args:
        err: what went wrong.
        state_dir: the command's state dir (an OS error inside it says so).
        out: the command's `--out` target (an OS error writing it names it).
    """
    from munet.interrupts import Terminated
    from munet.system.errors import (
        AgentLockedError,
        CorruptStateError,
        StateExistsError,
        StateRemovedError,
        StoreUnavailableError,
        SystemStateError,
        UnsafePathError,
    )

    doctor = f"munet doctor -d {state_dir}" if state_dir else "munet doctor -d STATE_DIR"
    if isinstance(err, Terminated):
        return EXIT_TERMINATED, "terminated (SIGTERM); the last committed state is intact"
    if isinstance(err, KeyboardInterrupt):
        return EXIT_INTERRUPTED, "interrupted"
    if isinstance(err, AgentLockedError):
        return EXIT_LOCKED, str(err)
    if isinstance(err, StateExistsError):
        return EXIT_STATE_EXISTS, (
            f"{err}; another process wrote it first: rerun to continue from it"
        )
    if isinstance(err, UnsafePathError):
        return EXIT_UNSAFE_PATH, str(err)
    if isinstance(err, CorruptStateError):
        return EXIT_DAMAGED_STATE, (
            f"{err}. `{doctor}` lists damaged states and `{doctor} --quarantine` moves them "
            "aside (the agent then resumes from its previous good state)"
        )
    if isinstance(err, StateRemovedError):
        # Removed by its owner after it was read (a reader racing a commit): rerun, not damage.
        return EXIT_OS_ERROR, f"{err}; rerun the command"
    if isinstance(err, StoreUnavailableError):
        # An outage (names the endpoint and the failed operation), not a bug.
        return EXIT_OS_ERROR, str(err)
    if isinstance(err, SystemStateError):
        return EXIT_BAD_INPUT, str(err)
    if isinstance(err, OSError):
        return _os_error(err, state_dir, out)
    if isinstance(err, (ValueError, ImportError)):
        # ConfigError, AgentError, unknown tasks, missing optional dependencies.
        return EXIT_BAD_INPUT, str(err)
    return None


def report_failure(
    err: BaseException, debug: bool, state_dir: str | None = None, out: str | None = None
) -> int:
    """Print one line about `err` (and its traceback with `debug`); return the exit code."""
    if debug:
        traceback.print_exception(err, file=sys.stderr)
    known = classify(err, state_dir, out)
    if known is None:
        hint = "" if debug else " (rerun with --debug for the traceback)"
        print(
            f"munet: internal error: {type(err).__name__}: {err}{hint}; please report it",
            file=sys.stderr,
        )
        return EXIT_BUG
    code, message = known
    print(f"munet: error: {message}", file=sys.stderr)
    return code
