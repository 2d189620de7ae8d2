"""Why the system loses on some tasks (docs/results.md): restarted short trainings against frozen
root components, and the plain model's learning curve.

For each task, with the singlepath agent's own code (munet.agents.IndependentAgent: its
``build_components`` and ``train_paths``) and default hparams, from the root ``--root``
(``random_init``, ``pretrained`` or a checkpoint file; benchmarks/root_source.py):

- chains of ``--links`` trainings of ``--link-steps`` steps, each continuing the previous
  one's parameters with a fresh schedule (as an agent's lineage does), against one training of
  the same total steps; each with every component trainable, and with the root components
  ``--frozen`` shared frozen (as a child shares them when the clone mutation does not fire);
- with ``--curve``, the plain model's test accuracy after each of those step counts.

Run: ``python experiments/diagnosis/system_vs_independent_diagnosis.py --tasks synth/position
synth/shape --curve 128 384 768 1152 2304 [--root pretrained]`` (about 10 minutes on a busy
2-core machine).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

# The maintained benchmarks (their own_data_vs_cnn.py and root_source.py), then the repository
# (munet without an install).
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from root_source import resolve_root  # noqa: E402

from munet.agents import IndependentAgent, create_root_model, default_hparams  # noqa: E402
from munet.agents.cycle import stable_seed  # noqa: E402
from munet.config import apply_overrides, get_preset  # noqa: E402
from munet.system import Population  # noqa: E402


def chain(agent: IndependentAgent, links: int, steps: int, frozen: tuple[str, ...]) -> list[float]:
    """Test accuracy after each link of a chain of trainings (each continuing the last)."""
    population = Population(agent.agent_id, agent._scorer(), task_name=agent.task_name)
    parent = agent.root()
    hparams = {**default_hparams(agent.config), "num_classes": agent.task.num_classes}
    qualities = []
    for link in range(links):
        components, _ = agent.build_components(
            population, parent, hparams, lambda name: name not in frozen, ("chain", link)
        )
        path = population.new_path(hparams, components, parent)
        agent.train_paths(
            population,
            [path],
            stable_seed(agent.config.seed, agent.agent_id, "chain", link),
            num_validations=steps // agent.steps_between_validations,
        )
        qualities.append(agent.run_test_eval(path))
        parent = path
    return qualities


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["synth/position", "synth/shape"])
    parser.add_argument("--links", type=int, default=4)
    parser.add_argument("--link-steps", type=int, default=128)
    parser.add_argument("--frozen", nargs="+", default=["posembed_input", "encoderblock_0"])
    parser.add_argument("--curve", type=int, nargs="*", default=[], help="plain run lengths")
    parser.add_argument("--root", default="random_init", help="random_init, pretrained or FILE")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args(argv)
    root = resolve_root(args.root, "VitCpu")
    print(root.describe(), flush=True)
    config = apply_overrides(get_preset("VitCpu"), [*root.overrides, *args.overrides])
    frozen = tuple(args.frozen)
    total = args.links * args.link_steps
    with tempfile.TemporaryDirectory(prefix="munet-diagnosis-") as state_dir:
        create_root_model(config, state_dir, root.kind)
        for task in args.tasks:
            agent = IndependentAgent(
                config, task, state_dir, progress=False, echo=lambda _: None, root_kind=root.kind
            )
            runs = {
                f"1 x {total}, all trainable": (1, total, ()),
                f"{args.links} x {args.link_steps} restarted, all trainable": (
                    args.links, args.link_steps, ()
                ),
                f"1 x {total}, {'+'.join(frozen)} frozen": (1, total, frozen),
                f"{args.links} x {args.link_steps} restarted, {'+'.join(frozen)} frozen": (
                    args.links, args.link_steps, frozen
                ),
            }  # fmt: skip
            final = []
            for label, (links, steps, frozen_names) in runs.items():
                qualities = chain(agent, links, steps, frozen_names)
                final.append(qualities[-1])
                shown = ", ".join(f"{q:.3f}" for q in qualities)
                print(f"{task:<15} {label:<55} test {shown}", flush=True)
            # Against the one all-trainable run of the same task and seed, in this run.
            one_run, restarted, frozen_one, _ = final
            print(f"ratio: {task} restarted / one run (test accuracy) = "
                  f"{restarted / one_run:.3f}")  # fmt: skip
            print(f"ratio: {task} frozen / all trainable (test accuracy) = "
                  f"{frozen_one / one_run:.3f}")  # fmt: skip
            for steps in args.curve:
                path = agent.train_alone(default_hparams(config), steps)
                print(
                    f"{task:<15} plain {steps} steps: validation {path.metrics['quality']:.3f} "
                    f"test {path.metrics['test_quality']:.3f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
