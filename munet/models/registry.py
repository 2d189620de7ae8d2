"""The pretrained checkpoints of the µNet presets and of the augreg hybrids, and fetching them.

The seed picks each preset's root model from Google's augreg index by a query; the entries
below are those queries' files (ImageNet-21k pretraining, 300 epochs, lr 0.001). The hybrid
entries (`R_Ti_16`, `R26_S_32`, `R50_L_32`: R+Ti/16, R26+S/32, R50+L/32, no preset of their
own) are the pre-trained checkpoints vit_jax's README recommends for them (the i21k_300 column
of Table 3 of Steiner et al. 2021, "How to train your ViT?"). Files are looked up in a
directory (`--dest`, `$MUNET_CHECKPOINT_DIR`, or `~/.cache/munet/checkpoints`).
"""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from munet.models.arch import VitArch
from munet.models.checkpoints import load_checkpoint, read_checkpoint
from munet.models.components import Components

AUGREG_BASE_URL = "https://storage.googleapis.com/vit_models/augreg/"
CHECKPOINT_DIR_ENV = "MUNET_CHECKPOINT_DIR"


@dataclass(frozen=True)
class CheckpointSpec:
    """A registered pretrained checkpoint.

    Attributes:
        name: the preset it serves ("Vit", "VitB", "VitT3"; the hybrids' "VitRTi", "VitR26S",
            "VitR50L").
        size: the ViT size name of the file ("L/16", "R+Ti/16", ...).
        filename: the file's name in the augreg bucket.
        query: the augreg index query that selects this file (the seed's, for a preset).
        num_layers: encoder blocks the preset uses (VitT3 caps Ti/16 to 3).
        image_size: the preset's default image size (ds_image_size); the pretraining
            resolution (224) where no preset uses the file.
        num_classes: classes of the head stored in the file (ImageNet-21k).
    """

    name: str
    size: str
    filename: str
    query: str
    num_layers: int
    image_size: int
    num_classes: int = 21843

    @property
    def url(self) -> str:
        return AUGREG_BASE_URL + self.filename

    def arch(self, num_classes: int = 0, num_layers: int | None = None) -> VitArch:
        """The architecture to load this checkpoint into (headless by default)."""
        layers = self.num_layers if num_layers is None else num_layers
        return VitArch.from_size(self.size, num_layers=layers, num_classes=num_classes)


_CHECKPOINTS = {
    spec.name: spec
    for spec in (
        CheckpointSpec(
            name="Vit",
            size="L/16",
            filename="L_16-i21k-300ep-lr_0.001-aug_medium2-wd_0.03-do_0.1-sd_0.1.npz",
            query='name=="L/16" and ds=="i21k" and aug=="medium2" and wd==0.03 and sd==0.1',
            num_layers=24,
            image_size=384,
        ),
        CheckpointSpec(
            name="VitB",
            size="B/16",
            filename="B_16-i21k-300ep-lr_0.001-aug_medium1-wd_0.1-do_0.0-sd_0.0.npz",
            query='name=="B/16" and ds=="i21k" and aug=="medium1" and wd==0.1 and sd==0',
            num_layers=12,
            image_size=80,
        ),
        CheckpointSpec(
            name="VitT3",
            size="Ti/16",
            filename="Ti_16-i21k-300ep-lr_0.001-aug_light1-wd_0.1-do_0.0-sd_0.0.npz",
            query='name=="Ti/16" and ds=="i21k" and aug=="light1" and wd==0.1 and sd==0.0',
            num_layers=3,
            image_size=32,
        ),
        # The hybrids (vit_jax's R+ViT: a ResNet-v2 stem before the patch embedding).
        CheckpointSpec(
            name="VitRTi",
            size="R+Ti/16",
            filename="R_Ti_16-i21k-300ep-lr_0.001-aug_none-wd_0.03-do_0.0-sd_0.0.npz",
            query='name=="R+Ti/16" and ds=="i21k" and aug=="none" and wd==0.03 and sd==0.0',
            num_layers=12,
            image_size=224,
        ),
        CheckpointSpec(
            name="VitR26S",
            size="R26+S/32",
            filename="R26_S_32-i21k-300ep-lr_0.001-aug_light1-wd_0.1-do_0.0-sd_0.0.npz",
            query='name=="R26+S/32" and ds=="i21k" and aug=="light1" and wd==0.1 and sd==0.0',
            num_layers=12,
            image_size=224,
        ),
        CheckpointSpec(
            name="VitR50L",
            size="R50+L/32",
            filename="R50_L_32-i21k-300ep-lr_0.001-aug_medium1-wd_0.1-do_0.1-sd_0.1.npz",
            query='name=="R50+L/32" and ds=="i21k" and aug=="medium1" and wd==0.1 and sd==0.1',
            num_layers=24,
            image_size=224,
        ),
    )
}


class CheckpointUnavailable(RuntimeError):
    """A registered checkpoint is neither on disk nor downloadable."""


def checkpoint_specs() -> dict[str, CheckpointSpec]:
    """{name: spec} of every registered checkpoint."""
    return dict(_CHECKPOINTS)


def checkpoint_spec(name: str) -> CheckpointSpec:
    """Looks up a registered checkpoint.

    Raises:
        KeyError: unknown name (the message lists the known ones).
    """
    try:
        return _CHECKPOINTS[name]
    except KeyError:
        known = ", ".join(_CHECKPOINTS)
        raise KeyError(f"unknown checkpoint {name!r}; known: {known}") from None


def default_checkpoint_dir() -> Path:
    """`$MUNET_CHECKPOINT_DIR` if set, else `~/.cache/munet/checkpoints`."""
    configured = os.environ.get(CHECKPOINT_DIR_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "munet" / "checkpoints"


def find_checkpoint(name: str, directory: str | Path | None = None) -> Path | None:
    """The local file of a registered checkpoint, or None if it is not there."""
    path = Path(directory or default_checkpoint_dir()) / checkpoint_spec(name).filename
    return path if path.is_file() else None


def fetch_checkpoint(name: str, dest: str | Path | None = None, timeout_s: float = 30.0) -> Path:
    """Downloads a registered checkpoint into `dest` unless it is already there.

    The download goes to a hidden `.partial-` file, is checked to be a loadable ViT checkpoint, then
    renamed, so an interrupted download never looks complete.

    Returns:
        The file's path.

    Raises:
        KeyError: unknown name.
        CheckpointUnavailable: the machine cannot reach the URL (the message names the file,
            the URL and where to put a copy made elsewhere), or the download is corrupt.
    """
    spec = checkpoint_spec(name)
    directory = Path(dest or default_checkpoint_dir())
    target = directory / spec.filename
    if target.is_file():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    # Same extension (read_checkpoint dispatches on it), but a name nothing looks up.
    partial = directory / f".partial-{spec.filename}"
    try:
        with urllib.request.urlopen(spec.url, timeout=timeout_s) as response:
            with open(partial, "wb") as out:
                shutil.copyfileobj(response, out, length=1 << 20)
    except (urllib.error.URLError, OSError) as error:
        partial.unlink(missing_ok=True)
        if isinstance(error, urllib.error.HTTPError):
            what = f"the server answered HTTP {error.code} ({error.reason})"
        else:
            what = f"no network ({getattr(error, 'reason', error)}); this machine looks offline"
        raise CheckpointUnavailable(
            f"cannot download checkpoint {name!r} ({spec.filename}) from {spec.url}: {what}. "
            f"Download the file elsewhere and put it at {target}"
        ) from error
    try:
        read_checkpoint(partial)
    except ValueError as error:
        partial.unlink(missing_ok=True)
        raise CheckpointUnavailable(
            f"downloaded {spec.filename} is not a valid checkpoint ({error}); removed"
        ) from error
    partial.rename(target)
    return target


def load_registered_checkpoint(
    name: str,
    image_size: int | None = None,
    num_classes: int = 0,
    num_layers: int | None = None,
    directory: str | Path | None = None,
) -> Components:
    """Loads a registered checkpoint from disk as components (no download).

    Args:
        name: registered name ("VitT3", ...).
        image_size: defaults to the preset's image size.
        num_classes: head classes (0 = headless, the seed's root model for other tasks).
        num_layers: defaults to the preset's layer count.
        directory: where the file is (default `default_checkpoint_dir()`).

    Raises:
        CheckpointUnavailable: the file is not there (the message says how to fetch it).
    """
    spec = checkpoint_spec(name)
    path = find_checkpoint(name, directory)
    if path is None:
        where = Path(directory or default_checkpoint_dir()) / spec.filename
        raise CheckpointUnavailable(
            f"checkpoint {name!r} not found at {where}; run `munet checkpoint fetch {name} "
            f"--dest {where.parent}` or download {spec.url} there"
        )
    arch = spec.arch(num_classes=num_classes, num_layers=num_layers)
    return load_checkpoint(path, arch, image_size or spec.image_size)
