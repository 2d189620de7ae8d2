"""Agent configs: typed dataclasses (`fields`), named presets with the seed's values
(`presets`), dotted overrides (`overrides`).

A preset is a function returning a fresh :class:`AgentConfig`; its docstring says what it is for
and how to run it. The preset's name is also the agent's class name in its id
(``VitT3~digits``). Every value can be overridden from the command line with
``--set key=value`` (see :func:`apply_overrides`) and the full config is saved as JSON with every
committed state (:meth:`AgentConfig.to_json`).

Values of ``Vit``, ``VitB`` and ``VitT3`` are those of the µNet notebook (seed 000:
``get_common_config_vit``, ``get_config_vit_large``, ``get_config_vit_base``,
``get_config_vit_ti3``) and pinned by ``tests/test_config.py``.
"""

from munet.config.fields import (
    DATASET_HPARAMS_PREFIX,
    MULTIPATH_HPARAMS,
    PRECISIONS,
    AgentConfig,
    ConfigError,
    ScorerConfig,
)
from munet.config.overrides import apply_overrides, parse_value
from munet.config.presets import (
    DEFAULT_DEMO_CYCLES,
    DEFAULT_DEMO_STATE_DIR,
    DEMO_AGENT,
    DEMO_MULTIPATH_CYCLES,
    DEMO_MULTIPATH_TASKS,
    DEMO_TASKS,
    PRESETS,
    get_preset,
    multi_vit_base,
    multi_vit_cpu,
    multi_vit_large,
    multi_vit_ti3,
    multipath_config,
    preset_names,
    vit_base,
    vit_cpu,
    vit_large,
    vit_ti3,
)

__all__ = [
    "DATASET_HPARAMS_PREFIX",
    "DEFAULT_DEMO_CYCLES",
    "DEFAULT_DEMO_STATE_DIR",
    "DEMO_AGENT",
    "DEMO_MULTIPATH_CYCLES",
    "DEMO_MULTIPATH_TASKS",
    "DEMO_TASKS",
    "MULTIPATH_HPARAMS",
    "PRECISIONS",
    "PRESETS",
    "AgentConfig",
    "ConfigError",
    "ScorerConfig",
    "apply_overrides",
    "get_preset",
    "multi_vit_base",
    "multi_vit_cpu",
    "multi_vit_large",
    "multi_vit_ti3",
    "multipath_config",
    "parse_value",
    "preset_names",
    "vit_base",
    "vit_cpu",
    "vit_large",
    "vit_ti3",
]
