"""Launch specs (`--agent A --tasks t1,t2 ...`), progress lines, and the worker body without
Ray (the agent run and its events)."""

from __future__ import annotations

import pytest

from munet.cli import main
from munet.cluster import AgentSpec, agent_specs, format_event, run_agent


def test_agent_groups_with_resources_once_or_per_group():
    specs = agent_specs(["VitCpu", "MultiVitCpu"], ["digits, synth/shape", "digits"], [2], [0, 1])
    assert specs == [
        AgentSpec("VitCpu", "digits", 2.0, 0.0),
        AgentSpec("VitCpu", "synth/shape", 2.0, 0.0),
        AgentSpec("MultiVitCpu", "digits", 2.0, 1.0),
    ]
    assert specs[1].agent_id == "VitCpu~synth~shape"


def test_per_preset_overrides_and_multipath_dependencies(tmp_path):
    from munet.agents.runner import resolve_config
    from munet.cluster.waits import Wait, multipath_waits
    from munet.system import SystemStore

    specs = agent_specs(["VitCpu", "MultiVitCpu"], ["digits,synth/shape", "digits,synth/count"],
                        preset_overrides=[("VitCpu", "num_layers=1")])
    assert specs[0].overrides == ("num_layers=1",) and specs[2].overrides == ()
    configs = {s.agent_id: resolve_config(s.agent_class, s.overrides) for s in specs}
    # MultiVitCpu~digits waits for VitCpu~digits (in the launch, no state yet) and for another
    # VitCpu agent to draw from (the random_init root is not one by default); MultiVitCpu~
    # synth~count has no singlepath agent of its own in the launch (it will say so if the
    # store has none when it runs), but waits for any VitCpu agent to draw from.
    store = SystemStore(str(tmp_path))
    assert multipath_waits(specs, configs, store) == {
        "MultiVitCpu~digits": Wait("VitCpu~digits", {"VitCpu~synth~shape"}),
        "MultiVitCpu~synth~count": Wait(None, {"VitCpu~digits", "VitCpu~synth~shape"}),
    }
    with pytest.raises(ValueError, match="--agent-set for VitT3: not an --agent"):
        agent_specs(["VitCpu"], ["digits"], preset_overrides=[("VitT3", "seed=1")])


@pytest.mark.parametrize(
    ("agents", "tasks", "cpus", "message"),
    [
        (["VitCpu"], [], None, "got 1 --agent and 0 --tasks"),
        (["VitCpu"], [" , "], None, "expected task names"),
        (["VitCpu", "VitT3"], ["a", "b"], [1, 2, 3], "got 3 values for 2 --agent groups"),
        (["VitCpu"], ["a"], [-1], "resources must be >= 0"),
        (["VitCpu", "VitCpu"], ["a", "a"], None, "agent VitCpu~a is given twice"),
        ([], [], None, "no agents"),
    ],
)
def test_bad_agent_groups_are_refused(agents, tasks, cpus, message):
    with pytest.raises(ValueError, match=message):
        agent_specs(agents, tasks, cpus)


def test_bad_launch_arguments_fail_before_ray_starts(capsys, tmp_path):
    code = main(["launch", "--agent", "VitCpu", "--tasks", "digits", "--agent", "VitCpu",
                 "--cycles", "1", "-d", str(tmp_path)])
    assert code == 2
    assert "got 2 --agent and 1 --tasks" in capsys.readouterr().err
    code = main(["launch", "--agent", "VitCPU", "--tasks", "digits", "--cycles", "1",
                 "-d", str(tmp_path)])
    assert code == 2
    assert "unknown agent 'VitCPU'" in capsys.readouterr().err


def test_progress_lines():
    common = {"agent_id": "VitCpu~digits", "pid": 7, "host": "h", "seconds": 1.25}
    generation = {**common, "kind": "generation", "cycle": 0, "generation": 1,
                  "best": "VitCpu~digits:3", "quality": 0.5}
    assert format_event(generation) == (
        "[VitCpu~digits] cycle 1 gen 1 done: best VitCpu~digits:3 quality 0.5000 "
        "(1.2s, pid 7 on h)"
    )
    # With the run's totals (every worker sends them): where the agent is, out of how much.
    totals = {"cycles_total": 3, "generations_per_cycle": 8}
    assert format_event({**generation, **totals}).startswith(
        "[VitCpu~digits] cycle 1/3 gen 1/8 done: best"
    )
    assert format_event(
        {**common, **totals, "kind": "cycle", "cycle": 2, "generation": 0, "best": "b"}
    ).startswith("[VitCpu~digits] cycle 2/3 done: best b")
    cycle = {**common, "kind": "cycle", "cycle": 2, "generation": 0, "best": "VitCpu~digits:3",
             "quality": 0.5, "test_quality": None}
    assert format_event(cycle).startswith(
        "[VitCpu~digits] cycle 2 done: best VitCpu~digits:3 quality 0.5000 test quality -"
    )
    # launch -q (detail "cycle"): no generation lines; the cycle's and the others' stay.
    from munet.cluster.events import event_line

    assert event_line(generation) == format_event(generation)
    assert event_line(generation, "cycle") is None
    assert event_line(cycle, "cycle") == format_event(cycle)
    started = {**common, "kind": "start", "state": None}
    assert event_line(started, "cycle") == format_event(started)
    with pytest.raises(SystemExit):  # -q and -v exclude each other
        main(["launch", "--agent", "VitCpu", "--tasks", "t", "--cycles", "1", "-q", "-v"])


def test_worker_body_runs_an_agent_and_reports_every_commit(tmp_path, tiny_config,
                                                             tiny_overrides):
    from munet.agents.root import create_root_model
    from munet.system import SystemStore

    state = tmp_path / "state"
    create_root_model(tiny_config, state, "random_init")
    events = []
    summary = run_agent("VitCpu", "synth/shape", str(state), 1, tiny_overrides, events.append)
    kinds = [(e["kind"], e.get("cycle"), e.get("generation")) for e in events]
    # num_samples_per_cycle=2 on one device: two generations, the last one ends the cycle.
    assert kinds == [("start", None, None), ("generation", 0, 1), ("cycle", 1, 0)]
    assert events[0]["state"] is None
    # The totals for the launch's lines and overall bar.
    assert events[0]["generations_left"] == 2
    assert all(e["cycles_total"] == 1 and e["generations_per_cycle"] == 2 for e in events)
    assert summary["cycle"] == 1 and summary["best"] == events[-1]["best"]
    store = SystemStore(str(state))
    assert store.latest_state("VitCpu~synth~shape").cycle == 1


def test_a_stop_request_ends_the_agent_after_its_commit_and_frees_its_lock(
    tmp_path, tiny_config, tiny_overrides
):
    """The launch's Ctrl-C flag: checked before the start and after every commit."""
    from munet.agents.root import create_root_model
    from munet.cluster.worker import AgentStopped
    from munet.system import SystemStore

    state = tmp_path / "state"
    create_root_model(tiny_config, state, "random_init")
    events = []
    with pytest.raises(AgentStopped, match="stopped before it started"):
        run_agent("VitCpu", "synth/shape", str(state), 1, tiny_overrides, events.append,
                  should_stop=lambda: True)
    assert events == []

    def stop_after_first_commit() -> bool:
        return any(e["kind"] == "generation" for e in events)

    with pytest.raises(AgentStopped, match="stopped after generation commit"):
        run_agent("VitCpu", "synth/shape", str(state), 1, tiny_overrides, events.append,
                  should_stop=stop_after_first_commit)
    assert [e["kind"] for e in events] == ["start", "generation"]
    store = SystemStore(str(state))
    assert store.latest_state("VitCpu~synth~shape").name == "state_0_1"  # the commit is kept
    summary = run_agent("VitCpu", "synth/shape", str(state), 1, tiny_overrides, events.append)
    assert summary["cycle"] == 1  # the lock was freed; the run resumed and finished the cycle
    assert events[2]["kind"] == "start" and events[2]["state"] == "state_0_1"


@pytest.mark.parametrize("inherited", ["SIG_IGN", "SIG_DFL"])
def test_a_worker_started_with_sigint_ignored_can_still_be_cancelled(inherited):
    """A stop interrupts a running task by simulating SIGINT in it (munet.job_cancel, which
    calls listen_to_cancel first); a worker that inherited an ignored SIGINT (a launch from a
    CI job or `nohup`), or none, must take it back first."""
    import subprocess
    import sys

    code = (
        "import _thread, signal\n"
        f"signal.signal(signal.SIGINT, int(signal.{inherited}))\n"
        "from munet.interrupts import listen_to_cancel\n"
        "_thread.interrupt_main()\n"
        "print('ignored')\n"
        "listen_to_cancel()\n"
        "try:\n"
        "    _thread.interrupt_main()\n"
        "    for _ in range(1000): pass\n"
        "    print('still running')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert out == ["ignored", "interrupted"]


def test_multipath_waits_end_when_a_drawable_agent_finished_a_cycle(tmp_path):
    from munet.agents.runner import resolve_config
    from munet.cluster.waits import Wait, multipath_waits, release
    from munet.system import SystemStore

    specs = agent_specs(["VitCpu", "MultiVitCpu"], ["digits,synth/shape,synth/count", "digits"])
    configs = {s.agent_id: resolve_config(s.agent_class, s.overrides) for s in specs}
    waits = multipath_waits(specs, configs, SystemStore(str(tmp_path)))
    others = {"VitCpu~synth~shape", "VitCpu~synth~count"}
    assert waits == {"MultiVitCpu~digits": Wait("VitCpu~digits", others)}
    assert "one of VitCpu~synth~count, VitCpu~synth~shape" in waits["MultiVitCpu~digits"].describe()
    # Its own singlepath agent's cycle is not enough, nor another agent ending without one.
    assert release(waits, "VitCpu~digits", finished_cycle=True) == []
    assert release(waits, "VitCpu~synth~count", finished_cycle=False) == []
    assert waits["MultiVitCpu~digits"] == Wait(None, {"VitCpu~synth~shape"})
    assert release(waits, "VitCpu~synth~shape", finished_cycle=True) == ["MultiVitCpu~digits"]
    assert waits == {}
    # With the seed's rule the random_init root is drawable: no other agent is needed, and
    # one that ended without a cycle releases the waiter (which then reports what it lacks).
    seed_rule = {k: resolve_config(s.agent_class, ("multipath_random_root=true",))
                 for k, s in zip(configs, specs, strict=True)}
    store = SystemStore(str(tmp_path))
    from munet.agents import create_root_model

    create_root_model(seed_rule["VitCpu~digits"], store, "random_init")
    waits = multipath_waits(specs, seed_rule, store)
    assert waits == {"MultiVitCpu~digits": Wait("VitCpu~digits")}
    assert release(waits, "VitCpu~digits", finished_cycle=False) == ["MultiVitCpu~digits"]


@pytest.mark.parametrize(("kind", "made"), [("default", "pretrained"), ("pretrained", "pretrained"),
                                            ("random_init", "random_init")])
def test_launch_creates_the_root_kind_asked_for(tmp_path, capsys, kind, made):
    import argparse

    from munet.cli.launch import _create_roots
    from munet.system import SystemStore

    specs = agent_specs(["VitCpu", "MultiVitCpu"], ["digits", "digits"])
    _create_roots(specs, argparse.Namespace(root=kind, overrides=[], state_dir=str(tmp_path)))
    roots = [a for a in SystemStore(str(tmp_path)).agent_ids() if "root" in a]
    assert roots == [f"VitCpu~root_model~{made}"], roots  # one root, of the singlepath class
    assert f"root model VitCpu~root_model~{made}:0" in capsys.readouterr().out
