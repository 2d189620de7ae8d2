"""Incremental hyperparameter mutations with self-tuned per-mutation probabilities (seed 000).

Every mutation has a name: ``hp:KEY`` for a hyperparameter, ``clone:COMPONENT`` for cloning a
frozen component instead of sharing it. Its firing probability is stored in the path's hparams
under ``_mu_|NAME`` (falling back to the path's ``_mu_``) and is itself mutated along the
``_mu_`` range with probability ``_mu_`` before each draw, so the search tunes how much it
explores. Names in ``force_mutations`` always fire and draw nothing.

All functions are pure: they take an explicit ``random.Random`` and return what they changed as
:class:`MutationDecision` records, each rendering as one readable log line in the style of Ray
Tune's PBT (``opt_lr : 0.02 --- (incremental, p=0.2) --> 0.05``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MU_KEY = "_mu_"
MU_PREFIX = "_mu_|"


def mu_key(mutation_name: str) -> str:
    """The hparams key holding the firing probability of a mutation (``_mu_|hp:opt_lr``)."""
    return f"{MU_PREFIX}{mutation_name}"


def incremental_mutation(value: Any, values: Sequence[Any], rng: random.Random) -> Any:
    """Moves ``value`` one step up or down (50/50) in ``values``, clamped at the ends.

    Raises:
        ValueError: ``value`` is not in ``values``.
    """
    values = list(values)
    if value not in values:
        raise ValueError(f"value {value!r} is not in its mutation range {values}")
    index = values.index(value)
    index += 1 if rng.random() < 0.5 else -1
    return values[max(0, min(len(values) - 1, index))]


@dataclass(frozen=True)
class MutationPolicy:
    """What the mutation functions need from an agent config.

    Attributes:
        mutation_ranges: ordered values per hparam (the config's ``hparams_mutation_ranges``);
            its ``_mu_`` entry, when present, enables the self-tuning of probabilities.
        mu_default: probability used when a path carries no ``_mu_`` (shared ds hparams).
        force_mutations: mutation names that always fire.
    """

    mutation_ranges: Mapping[str, Sequence[Any]]
    mu_default: float
    force_mutations: frozenset[str] = frozenset()

    @classmethod
    def from_config(cls, config: Any) -> MutationPolicy:
        """From a munet.config.AgentConfig."""
        return cls(
            mutation_ranges={k: list(v) for k, v in config.hparams_mutation_ranges.items()},
            mu_default=float(config.hparams_defaults[MU_KEY]),
            force_mutations=frozenset(config.force_mutations),
        )


@dataclass(frozen=True)
class MutationDecision:
    """One mutation decision and what it changed.

    Attributes:
        name: mutation name (``hp:opt_lr``, ``clone:encoderblock_2``).
        fired: whether the mutation applies.
        forced: fired because listed in force_mutations (no probability involved).
        probability: firing probability used for the draw (after self-tuning).
        previous_probability: the probability before self-tuning this time.
        before, after: the hparam's value before and after (``hp:`` mutations).
        updates: hparams entries to set (the tuned ``_mu_|NAME`` and, if fired, the value).
    """

    name: str
    fired: bool
    forced: bool = False
    probability: float | None = None
    previous_probability: float | None = None
    before: Any = None
    after: Any = None
    updates: dict[str, Any] = field(default_factory=dict)

    def probability_text(self) -> str:
        if self.forced:
            return "forced"
        if self.previous_probability != self.probability:
            return f"p={self.previous_probability:g}->{self.probability:g}"
        return f"p={self.probability:g}"

    @property
    def changed(self) -> bool:
        """Whether the decision changes something: fired, and for ``hp:`` mutations moved the
        value (one clamped at the end of its range fired but changed nothing)."""
        return self.fired and not (self.name.startswith("hp:") and self.before == self.after)

    def describe(self) -> str:
        """One log line: ``opt_lr : 0.02 --- (incremental, p=0.2) --> 0.05``."""
        if self.name.startswith("hp:"):
            key = self.name[3:]
            if self.fired and not self.changed:
                return (
                    f"{key} : {self.before!r} (kept: clamped at the end of its range, "
                    f"{self.probability_text()})"
                )
            if self.fired:
                return (
                    f"{key} : {self.before!r} --- (incremental, {self.probability_text()}) "
                    f"--> {self.after!r}"
                )
            return f"{key} : {self.before!r} (kept, {self.probability_text()})"
        verdict = "fired" if self.fired else "not fired"
        return f"{self.name} : {verdict} ({self.probability_text()})"


def do_mutate(
    hparams: Mapping[str, Any],
    mutation_name: str,
    policy: MutationPolicy,
    rng: random.Random,
) -> MutationDecision:
    """Decides whether a mutation fires, self-tuning its probability first (seed rules).

    The seed's order of random draws is kept: one draw against ``_mu_`` to decide whether to
    mutate the probability (then one more for its direction), then one against the probability.

    Args:
        hparams: the path's hparams (read only).
        mutation_name: ``hp:KEY`` or ``clone:COMPONENT``.
        policy: ranges, default ``_mu_`` and forced mutations.
        rng: the random generator.

    Returns:
        The decision; ``updates`` holds the ``_mu_|NAME`` entry to store in the hparams
        (nothing for forced mutations or without a ``_mu_`` range).
    """
    if mutation_name in policy.force_mutations:
        return MutationDecision(mutation_name, fired=True, forced=True)
    key = mu_key(mutation_name)
    mu = hparams.get(MU_KEY, policy.mu_default)
    previous = hparams.get(key, mu)
    probability = previous
    updates: dict[str, Any] = {}
    mu_range = policy.mutation_ranges.get(MU_KEY)
    if mu_range is not None:
        if mu > rng.random():
            probability = incremental_mutation(probability, mu_range, rng)
        updates[key] = probability
    fired = probability > rng.random()
    return MutationDecision(
        mutation_name,
        fired=fired,
        probability=probability,
        previous_probability=previous,
        updates=updates,
    )


def mutate_hparams(
    hparams: Mapping[str, Any], policy: MutationPolicy, rng: random.Random
) -> tuple[dict[str, Any], list[MutationDecision]]:
    """Applies ``hp:KEY`` mutations to every hparam with a range, in sorted key order.

    Keys without a value in ``hparams`` are skipped (as the seed does for the shared ds
    hparams). Each decision is taken on the hparams as updated by the previous ones.

    Returns:
        The new hparams (a copy) and one decision per mutated-or-kept key.
    """
    new_hparams = dict(hparams)
    decisions = []
    for key in sorted(policy.mutation_ranges):
        if key not in new_hparams:
            continue
        decision = do_mutate(new_hparams, f"hp:{key}", policy, rng)
        new_hparams.update(decision.updates)
        before = new_hparams[key]
        after = before
        if decision.fired:
            after = incremental_mutation(before, policy.mutation_ranges[key], rng)
            new_hparams[key] = after
        decisions.append(
            MutationDecision(
                decision.name,
                fired=decision.fired,
                forced=decision.forced,
                probability=decision.probability,
                previous_probability=decision.previous_probability,
                before=before,
                after=after,
                updates={**decision.updates, key: after},
            )
        )
    return new_hparams, decisions
