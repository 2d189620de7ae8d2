"""munet.tasks.sources: where a task's examples come from.

- `base`: the `Source` interface, `ArraySource` (splits in memory), the seed's default split
  carving.
- `digits`, `synth`: the embedded tasks (no download); `vtab1k`: the `1k/*` suite's generators
  (munet.tasks.suite).
- `imagefolder` (`folder:ROOT`), `npz` (`npz:FILE`), `hf` (`hf:NAME_OR_DIR`, optional
  `datasets`), `tfds` (TFDS names, optional `tensorflow-datasets`); `decoded` holds the shared
  decode-on-demand source of the first and third.
"""

from munet.tasks.sources.base import ArraySource, Source, SplitArrays, carve_default_splits
from munet.tasks.sources.digits import load_digits_source
from munet.tasks.sources.hf import load_hf
from munet.tasks.sources.imagefolder import load_image_folder
from munet.tasks.sources.npz import load_npz
from munet.tasks.sources.synth import SYNTH_TASKS, generate_synth_split, load_synth_source
from munet.tasks.sources.tfds import load_tfds

__all__ = [
    "SYNTH_TASKS",
    "ArraySource",
    "Source",
    "SplitArrays",
    "carve_default_splits",
    "generate_synth_split",
    "load_digits_source",
    "load_hf",
    "load_image_folder",
    "load_npz",
    "load_synth_source",
    "load_tfds",
]
