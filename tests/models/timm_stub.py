"""Makes `import timm` work without torchvision, for tests that build real timm models.

timm declares torchvision a dependency, but the tests only build timm ViTs (no data
pipeline, no torchvision ops), and PyPI's torchvision wheels are built against CUDA torch:
beside constraints.txt's CPU torch they fail at import ("operator torchvision::nms does not
exist"). So the test setup installs timm with `--no-deps` (Makefile) and, when no torchvision
is installed, `import_timm()` imports timm with a stub package in `sys.modules` holding
exactly the names `import timm` reads at import time (found by importing timm 1.0.31 and
creating its hybrid ViTs), then takes the stub out of `sys.modules` again, so no other test
(nor transformers' checks for an installed torchvision) sees a torchvision:

- `torchvision.ops.misc.FrozenBatchNorm2d` (timm.layers: a norm-layer registry entry and
  isinstance checks);
- `torchvision.transforms.ToTensor` (timm.data subclasses it) and
  `torchvision.transforms.functional.InterpolationMode` (an enum timm.data maps to names);
- `torchvision.datasets.{CIFAR10, CIFAR100, MNIST, KMNIST, FashionMNIST, ImageFolder}`
  (timm.data.dataset_factory; its other dataset imports are optional).

Every stub class raises if it is instantiated, so a test that reaches torchvision for real
fails loudly instead of computing something else. `torchvision.models.feature_extraction`
is left out on purpose: timm imports it under `try/except ImportError` (feature extraction
is then unavailable). A real torchvision, when installed, is used instead of the stub.
"""

from __future__ import annotations

import enum
import importlib.util
import sys
import types

_DATASETS = ("CIFAR10", "CIFAR100", "MNIST", "KMNIST", "FashionMNIST", "ImageFolder")


class InterpolationMode(enum.Enum):
    """torchvision's interpolation modes (the values torchvision gives them)."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def _unavailable(name: str) -> type:
    def __init__(self, *args, **kwargs):  # noqa: N807  (a method of the class made below)
        raise RuntimeError(f"torchvision is a stub in munet's tests: {name} is unavailable")

    return type(name, (), {"__init__": __init__, "__module__": "torchvision (stub)"})


def _module(name: str, **attributes: object) -> types.ModuleType:
    module = types.ModuleType(name, "munet's test stub of torchvision (tests/models/timm_stub.py)")
    module.__path__ = []  # a package, so its submodules import
    module.__dict__.update(attributes)
    sys.modules[name] = module
    return module


def import_timm() -> types.ModuleType:
    """`import timm` (with its hybrid ViTs), over the stub unless a torchvision is importable.

    Raises:
        ImportError: timm is not installed.
    """
    if importlib.util.find_spec("timm") is None:
        raise ImportError("timm is not installed (make test installs it: see the Makefile)")
    if "timm" in sys.modules or importlib.util.find_spec("torchvision") is not None:
        import timm.models.vision_transformer_hybrid  # noqa: F401

        return sys.modules["timm"]
    before = set(sys.modules)
    _install()
    try:
        import timm.models.vision_transformer_hybrid  # noqa: F401
    finally:
        for name in [name for name in set(sys.modules) - before if name.startswith("torchvision")]:
            del sys.modules[name]
    return sys.modules["timm"]


def _install() -> None:
    torchvision = _module("torchvision", __version__="0.0+munet.stub")
    torchvision.ops = _module("torchvision.ops")
    torchvision.ops.misc = _module(
        "torchvision.ops.misc", FrozenBatchNorm2d=_unavailable("FrozenBatchNorm2d")
    )
    torchvision.transforms = _module("torchvision.transforms", ToTensor=_unavailable("ToTensor"))
    torchvision.transforms.functional = _module(
        "torchvision.transforms.functional", InterpolationMode=InterpolationMode
    )
    torchvision.datasets = _module(
        "torchvision.datasets", **{name: _unavailable(name) for name in _DATASETS}
    )
