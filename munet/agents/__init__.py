"""munet.agents: agents that grow the system, one per task.

Public API:

- `SinglepathAgent(config, task_name, store, *, options=None, devices=None, progress=None,
  echo=None, detail="generation", quiet=False, tracker=None, skip_bad_files=False)`:
  `.run(num_cycles) -> RunReport` (resumes from the committed state; rerun with more cycles
  to continue; prints a start-of-run block, then a line per generation and per cycle, with an
  overall bar in a terminal or notebook; `RunReport.summary()`);
  `.sample_path`, `.train_paths`, `.run_test_eval` for finer control.
- `MultipathAgent(...)`: the same for multipath presets (`MultiVit*`): combines whole paths of
  the singlepath agents of its class; `make_agent(config, task, store, ...)` picks the kind.
- `RunOptions`: how an agent runs (the keyword options above, as one frozen object).
- `Agent`: the cycle both kinds share (munet.agents.cycle).
- `create_root_model(config, store, kind="random_init" | "checkpoint" | "pretrained") -> Path`;
  `default_root_kind(config)`: "pretrained" where the preset ships a built-in root.
- `IndependentAgent(config, task, store)`: one task's model trained alone from the root
  (`.train_alone(hparams, steps)`, `.random_search(steps, num_trials)`), the baseline of
  benchmarks/system_vs_independent.py; `default_hparams(config)`, `random_hparams(config, rng)`.
- `run_demo(state_dir="state/demo", cycles=2, tasks=DEMO_TASKS, ...) -> DemoResult`.
- `resolve_config(agent_class, overrides=(), store=None, task_name=None) -> AgentConfig`;
  `leaderboard_rows(store, agent_classes=None) -> list[dict]`.
- Pure decision rules: `incremental_mutation`, `do_mutate`, `mutate_hparams`,
  `MutationPolicy`, `MutationDecision` (mutation); `decay_selection`, `select_parent`,
  `ParentChoice` (selection); `choose_component`, `ComponentChoice` (reuse).
- Errors: `AgentError`, `ImmutabilityError`.
"""

from munet.agents.cycle import Agent
from munet.agents.demo import DemoResult, run_demo
from munet.agents.devices import local_devices
from munet.agents.independent import IndependentAgent, default_hparams, random_hparams
from munet.agents.multipath import MultipathAgent
from munet.agents.mutation import (
    MutationDecision,
    MutationPolicy,
    do_mutate,
    incremental_mutation,
    mutate_hparams,
)
from munet.agents.options import RunOptions
from munet.agents.reuse import ComponentChoice, choose_component
from munet.agents.root import ROOT_KINDS, create_root_model, default_root_kind, root_agent_id
from munet.agents.runner import leaderboard_rows, make_agent, resolve_config
from munet.agents.selection import ParentChoice, decay_selection, select_parent
from munet.agents.singlepath import (
    AgentError,
    GenerationReport,
    ImmutabilityError,
    RunReport,
    SinglepathAgent,
    model_arch,
)

__all__ = [
    "ROOT_KINDS",
    "Agent",
    "MultipathAgent",
    "make_agent",
    "AgentError",
    "ComponentChoice",
    "DemoResult",
    "GenerationReport",
    "ImmutabilityError",
    "IndependentAgent",
    "MutationDecision",
    "MutationPolicy",
    "ParentChoice",
    "RunOptions",
    "RunReport",
    "SinglepathAgent",
    "choose_component",
    "create_root_model",
    "default_root_kind",
    "decay_selection",
    "default_hparams",
    "do_mutate",
    "incremental_mutation",
    "leaderboard_rows",
    "local_devices",
    "model_arch",
    "mutate_hparams",
    "random_hparams",
    "resolve_config",
    "root_agent_id",
    "run_demo",
    "select_parent",
]
