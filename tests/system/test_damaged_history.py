"""A damaged `paths.csv` (or population file) in an agent's own latest state stops the agent
with an error naming the file (issue 52 item 3): the history goes on into the agent's next
states, so the agent refuses it as it refuses a damaged manifest, and `munet doctor` calls the
same state damaged. Other agents' loads never read it (they do not use it) and go on."""

from __future__ import annotations

import warnings

import pytest

from munet.system import SystemStore
from munet.system.errors import CorruptStateError
from munet.system.integrity import find_damaged, quarantine

from .store_helpers import A, B, make_root, run_cycle

QUALITIES = (0.5, 0.6, 0.7)


def _drop_last_row(path):
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))


def _another_agents_row(path):
    header, first, *rest = path.read_text().splitlines(keepends=True)
    path.write_text(header + first.replace(A, B, 1) + "".join(rest))


DAMAGES = {
    "garbage bytes": (lambda p: p.write_bytes(b"\x00\xff\xfe garbage"), "utf-8"),
    "another file": (lambda p: p.write_text("a,b\n1,2\n"), "header lacks the columns agent_id"),
    "a row lost": (_drop_last_row, "rows; the manifest records"),
    "another agent's row": (_another_agents_row, f"is a path of {B!r}, not {A!r}"),
    "deleted": (lambda p: p.unlink(), "paths.csv is missing"),
}


def _grown(root, mid_cycle: bool) -> tuple[SystemStore, str]:
    """A's two cycles (and with `mid_cycle` one generation of a third); its latest state."""
    store = SystemStore(root)
    make_root(store)
    for cycle in range(2):
        with store.lock(A):
            run_cycle(store, A, cycle, QUALITIES, seed=10 + 40 * cycle)
    with store.lock(B):
        run_cycle(store, B, 0, QUALITIES, seed=200)
    if not mid_cycle:
        return store, "state_2_0"
    with store.lock(A):
        run_cycle(store, A, 2, QUALITIES, seed=100, stop_after=1)
    return store, "state_2_1"


@pytest.mark.parametrize("latest", ["end of cycle", "mid-cycle"])
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_history_of_the_agents_own_state_is_refused_naming_it(
    tmp_path, damage, latest
):
    damage_fn, problem = DAMAGES[damage]
    store, latest_name = _grown(tmp_path / "state", mid_cycle=latest == "mid-cycle")
    damage_fn(tmp_path / "state" / A / latest_name / "paths.csv")

    with pytest.raises(CorruptStateError) as refused:
        SystemStore(store.root).load(A)
    message = str(refused.value)
    assert message.startswith(f"state {A}/{latest_name}: paths.csv")
    assert problem in message

    # Another agent does not read A's history: its load goes on, without a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        other = SystemStore(store.root).load(B)
    assert other.population.paths[A]

    # `munet doctor` finds the same state damaged; once moved aside, A resumes from the state
    # before it.
    damaged = find_damaged(store)
    assert [d.state.name for d in damaged] == [latest_name] and problem in damaged[0].problem
    assert quarantine(store, damaged)[0].moved_to is not None
    resumed = SystemStore(store.root).load(A)
    assert resumed.state.name == ("state_2_0" if latest == "mid-cycle" else "state_1_0")


def test_a_damaged_population_file_of_the_agents_own_state_is_refused_naming_it(tmp_path):
    store, latest_name = _grown(tmp_path / "state", mid_cycle=False)
    (tmp_path / "state" / A / latest_name / "population.json").write_text("{not json")
    with pytest.raises(CorruptStateError, match=rf"state {A}/{latest_name}: population.json is "
                       "not JSON"):  # fmt: skip
        SystemStore(store.root).load(A)


def test_the_history_read_with_a_mid_cycle_state_is_the_checked_one(tmp_path):
    store, _ = _grown(tmp_path / "state", mid_cycle=True)
    loaded = SystemStore(store.root).load(A)
    assert loaded.state.name == "state_2_1"
    # One row per path sampled since the cycle began (one generation), all of A.
    assert [row["agent_id"] for row in loaded.population.history] == [A]
    assert SystemStore(store.root).load(A, verify="none").population.history == (
        loaded.population.history
    )
