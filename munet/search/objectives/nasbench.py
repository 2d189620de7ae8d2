"""NAS-Bench-101 as a growth objective: cells grow by one vertex or one edge; the table trains.

- Seed models (the macro grid): chains input -> op -> ... -> output of `seed_lengths`
  interior vertices, one per op (all interior vertices share it).
- Growth (the search job): with equal odds, when both are possible, add a vertex or an edge to
  the pruned cell. A new vertex gets a random op, one edge from a random earlier vertex and one
  to a random later vertex (so it lies on an input -> output path and survives pruning); a new
  edge joins two unconnected vertices in topological order. Moves that leave the table's limits
  (vertices, edges) are not drawn; a cell with no move left raises `GrowthError`. The search
  job trains nothing (the table holds only finished runs), so it costs no simulated time.
- Training (seed and train jobs): one of the cell's repeats at `epochs`, chosen by the job's
  seed (so the same job gives the same run wherever it runs); its training time is the job's
  simulated time. error = 1 - validation accuracy, cost = trainable parameters.
"""

from __future__ import annotations

import functools
import os
import random
from typing import Any

import numpy as np

from munet.nasbench.api import NASBench
from munet.nasbench.model_spec import INPUT, OUTPUT, ModelSpec
from munet.nasbench.runner import space_for

from .base import Candidate, GrowthError, GrowthObjective, Result


@functools.lru_cache(maxsize=4)
def _load_table(path: str, mtime: float) -> NASBench:
    # Keyed by modification time too: a rewritten file is read again.
    del mtime
    return NASBench(path)


def load_table(path: str) -> NASBench:
    """The table at `path`, read once per process (each Ray worker reads its own copy)."""
    return _load_table(os.path.abspath(path), os.path.getmtime(path))


class NASBenchObjective(GrowthObjective):
    """Cells of a NAS-Bench-101 table (see the module docstring).

    Args:
        dataset: the .tfrecord file.
        epochs: epoch budget queried (must be in the table).
        seed_lengths: interior vertices of the seed chains.

    Raises:
        FileNotFoundError: no such file.
        ValueError: epochs not in the table, or a seed chain the table's limits exclude.
    """

    kind = "nasbench"
    uses_weights = False
    cost_unit = "params"  # trainable parameters (the table's)

    def __init__(
        self, dataset: str, epochs: int = 108, seed_lengths: tuple[int, ...] = (1, 2)
    ) -> None:
        if not os.path.isfile(dataset):
            raise FileNotFoundError(f"NAS-Bench table {dataset!r} does not exist")
        self.dataset = os.path.abspath(dataset)
        self.epochs = int(epochs)
        self.seed_lengths = tuple(int(n) for n in seed_lengths)
        table = load_table(self.dataset)
        if self.epochs not in table.valid_epochs:
            raise ValueError(
                f"epochs {epochs!r} not in {dataset}; available: {sorted(table.valid_epochs)}"
            )
        space = space_for(table)
        self.max_vertices = space.num_vertices
        self.max_edges = space.max_edges
        self.ops = space.available_ops
        for length in self.seed_lengths:
            if length < 1 or length + 2 > self.max_vertices or length + 1 > self.max_edges:
                raise ValueError(
                    f"seed chain of {length} interior vertices does not fit the table "
                    f"(max {self.max_vertices} vertices, {self.max_edges} edges)"
                )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "dataset": self.dataset,
            "epochs": self.epochs,
            "seed_lengths": list(self.seed_lengths),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> NASBenchObjective:
        return cls(obj["dataset"], int(obj["epochs"]), tuple(obj["seed_lengths"]))

    # ------------------------------------------------------------------------ candidates

    def seed_candidates(self) -> list[Candidate]:
        seeds = []
        for length in self.seed_lengths:
            for op in self.ops:
                vertices = length + 2
                matrix = np.zeros((vertices, vertices), dtype=int)
                for v in range(vertices - 1):
                    matrix[v, v + 1] = 1
                seeds.append({"matrix": matrix.tolist(), "ops": [INPUT, *[op] * length, OUTPUT]})
        return seeds

    def _spec(self, candidate: Candidate) -> ModelSpec:
        try:
            return ModelSpec(candidate["matrix"], candidate["ops"])
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a NAS-Bench cell {candidate!r}: {error}") from error

    def cost_of(self, candidate: Candidate) -> float:
        fixed, _ = load_table(self.dataset).get_metrics_from_spec(self._spec(candidate))
        return float(fixed["trainable_parameters"])

    def describe(self, candidate: Candidate) -> str:
        spec = self._spec(candidate)
        short = {"conv3x3-bn-relu": "c3", "conv1x1-bn-relu": "c1", "maxpool3x3": "mp"}
        ops = "-".join(short.get(op, op) for op in (spec.ops or [])[1:-1])
        return f"{spec.num_vertices}v{spec.num_edges}e[{ops}]"

    # ------------------------------------------------------------------------------- jobs

    def train(
        self, candidate: Candidate, init_weights: str | None, out_weights: str | None, seed: int
    ) -> Result:
        del init_weights, out_weights  # the table needs no weights
        table = load_table(self.dataset)
        spec = self._spec(candidate)
        fixed, computed = table.get_metrics_from_spec(spec)
        runs = computed[self.epochs]
        run = runs[random.Random(seed).randrange(len(runs))]
        return {
            "candidate": _pruned(spec),
            "error": 1.0 - run["final_validation_accuracy"],
            "cost": float(fixed["trainable_parameters"]),
            "train_seconds": float(run["final_training_time"]),
            "metrics": {
                "validation_accuracy": run["final_validation_accuracy"],
                "test_accuracy": run["final_test_accuracy"],
                "hash": table.hash_spec(spec),
            },
            "weights": None,
        }

    def grow(
        self, candidate: Candidate, init_weights: str | None, out_weights: str | None, seed: int
    ) -> Result:
        del init_weights, out_weights
        spec = self._spec(candidate)
        child = grow_cell(spec, random.Random(seed), self.ops, self.max_vertices, self.max_edges)
        return {
            "candidate": _pruned(child),
            "error": None,
            "cost": self.cost_of(_pruned(child)),
            "train_seconds": 0.0,
            "metrics": {"hash": load_table(self.dataset).hash_spec(child)},
            "weights": None,
        }

    def search_space(self):
        return space_for(load_table(self.dataset))

    def evaluate(self, candidate: Candidate, seed: int) -> Result:
        # Ask/tell strategies hand over ModelSpecs; the table answers for the pruned cell.
        if isinstance(candidate, ModelSpec):
            candidate = _pruned(candidate)
        return self.train(candidate, None, None, seed)


def _pruned(spec: ModelSpec) -> dict[str, Any]:
    return {"matrix": spec.matrix.astype(int).tolist(), "ops": list(spec.ops)}


def grow_cell(
    spec: ModelSpec,
    rng: random.Random,
    ops: tuple[str, ...],
    max_vertices: int,
    max_edges: int,
) -> ModelSpec:
    """Add one vertex or one edge to the pruned cell (see the module docstring).

    Raises:
        GrowthError: neither move fits the limits.
        ValueError: an invalid cell.
    """
    if not spec.valid_spec:
        raise ValueError(f"cannot grow an invalid cell {spec!r}")
    matrix, cell_ops = spec.matrix.astype(int), list(spec.ops)
    vertices, edges = len(cell_ops), int(matrix.sum())
    missing = [
        (src, dst)
        for src in range(vertices - 1)
        for dst in range(src + 1, vertices)
        if not matrix[src, dst]
    ]
    moves = []
    if vertices < max_vertices and edges + 2 <= max_edges:
        moves.append("vertex")
    if missing and edges + 1 <= max_edges:
        moves.append("edge")
    if not moves:
        raise GrowthError(
            f"cell {spec!r} cannot grow: {vertices} vertices (max {max_vertices}), "
            f"{edges} edges (max {max_edges}), {len(missing)} free edge spots"
        )
    if rng.choice(moves) == "edge":
        src, dst = rng.choice(missing)
        matrix[src, dst] = 1
        return ModelSpec(matrix, cell_ops)
    # Insert the new vertex at position `at` (1 .. vertices-1): it reads from a vertex before
    # it and feeds one after it, keeping the matrix upper triangular.
    at = rng.randrange(1, vertices)
    grown = np.insert(np.insert(matrix, at, 0, axis=0), at, 0, axis=1)
    grown[rng.randrange(0, at), at] = 1
    grown[at, rng.randrange(at + 1, vertices + 1)] = 1
    new_ops = [*cell_ops[:at], rng.choice(ops), *cell_ops[at:]]
    child = ModelSpec(grown, new_ops)
    assert child.num_vertices == vertices + 1, "a new vertex on an input-output path survives"
    return child
