"""Loading the lab's scripts as modules, for their tests."""

import importlib.util
import sys
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[1]
REPO = EXPERIMENTS.parent
ROOTS = EXPERIMENTS / "roots"
DIAGNOSIS = EXPERIMENTS / "diagnosis"


def load_script(folder: Path, name: str):
    """The script ``folder/name.py`` as a module (its ``main`` is not run). A script puts its
    own imports' folders on sys.path when it loads."""
    spec = importlib.util.spec_from_file_location(f"lab_{name}", folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
