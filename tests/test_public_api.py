import subprocess
import sys
from pathlib import Path

import pytest

import munet


@pytest.mark.parametrize("name", munet.__all__)
def test_every_public_name_resolves(name):
    assert getattr(munet, name) is not None


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_thing"):
        munet.no_such_thing  # noqa: B018


def test_import_munet_does_not_import_torch():
    code = "import sys, munet; print('torch' in sys.modules)"
    repo_root = Path(munet.__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=repo_root
    )
    assert out.stdout.strip() == "False"


def test_dir_is_the_public_api_only():
    import munet.models  # noqa: F401  (binds the subpackage as an attribute of munet)

    munet.SystemStore  # noqa: B018  (a resolved name)
    assert dir(munet) == sorted([*munet.__all__, "__version__"])
    for helper in ("Any", "annotations", "importlib", "models", "system"):
        assert helper not in dir(munet)


# Factories whose keyword options depend on another argument, checked by name at call time.
VARIADIC_BY_DESIGN = {"make_strategy"}  # options of the named strategy (unknown ones: error)


@pytest.mark.parametrize("name", munet.__all__)
def test_public_signatures_are_explicit(name):
    import inspect
    from typing import Protocol

    value = getattr(munet, name)
    if name in VARIADIC_BY_DESIGN or (
        inspect.isclass(value) and Protocol in getattr(value, "__mro__", ())
    ):
        return  # a Protocol is never constructed
    target = value.__init__ if inspect.isclass(value) else value
    if not callable(target) or target is object.__init__:
        return
    kinds = {p.kind for p in inspect.signature(target).parameters.values()}
    assert inspect.Parameter.VAR_POSITIONAL not in kinds, f"{name} takes *args"
    assert inspect.Parameter.VAR_KEYWORD not in kinds, f"{name} takes **kwargs"
