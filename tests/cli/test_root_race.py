"""`munet root`s started together (issue 52 item 3): one creates the root model, every other
waits for it and reports it "already exists", exit 0 as when it comes later, on local disk and
on S3 (moto: tests/cluster/test_s3_root_race.py, beside the S3 server's fixtures); before, a
loser that met the creator's lock (or lease) exited 3, "already running". A lock held past the
wait is still refused (exit 3)."""

from __future__ import annotations

import contextlib
import io
import logging
import multiprocessing
import threading
import time
from collections import Counter

import pytest
import torch

import munet.agents.root as root_module
from munet.agents.root import create_root_model, root_agent_id
from munet.cli import main
from munet.cli.errors import EXIT_LOCKED
from munet.config import apply_overrides, get_preset
from munet.system import AgentLockedError, Population, SystemStore

from ..agents.conftest import TINY_OVERRIDES

SETS = [arg for item in TINY_OVERRIDES for arg in ("--set", item)]
RACERS = 4


def _config():
    return apply_overrides(get_preset("VitCpu"), TINY_OVERRIDES)


def _racer(state: str, start: float, results) -> None:
    """A forked `munet root` (main in this child, stderr kept), started at `start`."""
    while time.time() < start:
        pass
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["root", "--agent", "VitCpu", "-d", state, *SETS, "--root", "random_init"])
    results.put((code, err.getvalue()))


def _race(state: str) -> list[tuple[int, str]]:
    # Forked after munet and torch are imported: the racers start within microseconds.
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    start = time.time() + 0.5
    racers = [ctx.Process(target=_racer, args=(state, start, results)) for _ in range(RACERS)]
    for racer in racers:
        racer.start()
    try:
        return [results.get(timeout=240) for _ in racers]
    finally:
        for racer in racers:
            racer.join(30)
            if racer.is_alive():
                racer.kill()


def _check_one_root(state: str, results: list[tuple[int, str]]) -> None:
    assert [code for code, _ in results] == [0] * RACERS, results
    said = Counter(
        "created" if "created root model" in err else
        "exists" if "already exists" in err else err
        for _, err in results
    )  # fmt: skip
    assert said == {"created": 1, "exists": RACERS - 1}, results
    agent_id = root_agent_id(_config(), "random_init")
    assert [s.name for s in SystemStore(state).list_states(agent_id)] == ["state_0_0"]


def test_racing_roots_on_local_disk_make_one_and_the_others_say_it_exists(tmp_path):
    state = str(tmp_path / "state")
    _check_one_root(state, _race(state))


class _Waiting(logging.Handler):
    """Sets `seen` once the creator logs that it waits for the lock's holder."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "waiting" in record.getMessage():
            self.seen.set()


def _waiting_handler():
    handler = _Waiting()
    logger = logging.getLogger("munet.agents")
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.INFO)
    return handler, lambda: (logger.removeHandler(handler), logger.setLevel(previous))


def test_a_creator_waits_for_the_holder_and_takes_the_root_it_made(tmp_path):
    config = _config()
    agent_id = root_agent_id(config, "random_init")
    store = SystemStore(tmp_path / "state")
    handler, remove = _waiting_handler()
    made = {}
    try:
        with store.lock(agent_id):  # another creator, mid-way
            creator = threading.Thread(
                target=lambda: made.update(path=create_root_model(
                    config, SystemStore(tmp_path / "state"), "random_init"
                ))
            )  # fmt: skip
            creator.start()
            assert handler.seen.wait(60)  # it met the lock and waits
            population = Population(agent_id, task_name="root_model/random_init")
            component = population.new_component(
                "embedding", {"kernel": torch.ones(2, 2)}, train_locks=[agent_id]
            )
            population.add_path(population.new_path({"num_layers": 1}, [component], None))
            store.save_state(population, 0, 0, config.to_dict())
        creator.join(60)
    finally:
        remove()
    # The root the holder made, not a second one.
    assert made["path"].full_id == f"{agent_id}:0"
    assert [c.name for c in made["path"].components] == ["embedding"]
    assert [s.name for s in store.list_states(agent_id)] == ["state_0_0"]


def test_a_lock_held_past_the_wait_is_still_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(root_module, "CREATOR_WAIT_SECONDS", 0.3)
    config = _config()
    store = SystemStore(tmp_path / "state")
    with store.lock(root_agent_id(config, "random_init")):  # a holder that never finishes
        with pytest.raises(AgentLockedError, match="already running"):
            create_root_model(config, SystemStore(tmp_path / "state"), "random_init")
        code = main(["root", "--agent", "VitCpu", "-d", str(tmp_path / "state"), *SETS,
                     "--root", "random_init"])  # fmt: skip
    assert code == EXIT_LOCKED, capsys.readouterr().err
