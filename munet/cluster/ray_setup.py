"""Getting Ray for a launch: import it (usage statistics off, a clear error naming the extra
when it is missing) and connect to a cluster or start a local instance on 127.0.0.1.

Ray is an optional dependency, imported only when these functions are called.
"""

from __future__ import annotations

import os


def import_ray(local: bool = False):
    """`ray`, with usage statistics off; an error naming the extra when it is missing.

    Args:
        local: a single-node instance will be started: Ray's node address becomes the
            loopback, so its servers listen on 127.0.0.1 only (by default Ray advertises and
            binds the machine's network address, for other nodes to join).
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if local:
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read when ray is imported
    try:
        import ray
    except ImportError as err:
        raise ImportError(
            "munet launch needs Ray: pip install 'munet-evolve[ray]' (or pip install 'ray>=2.9')"
        ) from err
    if local:
        # Ray imported earlier in this process read the variable already.
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
    return ray


def init_ray(address: str | None = None, num_cpus: int | None = None) -> bool:
    """Connect to a Ray cluster, or start a local one bound to 127.0.0.1 (no dashboard).

    Args:
        address: a cluster address (``HOST:6379``, ``ray://HOST:10001``, ``auto``); None
            starts a local instance.
        num_cpus: CPUs of the local instance (default: all).

    Returns:
        Whether this call started Ray (and should shut it down).
    """
    ray = import_ray(local=not address)
    if ray.is_initialized():
        return False
    from munet.search.executors import init_ray_quietly

    # Every worker gets a callable SIGINT handler before its first task (see
    # munet.interrupts.listen_to_cancel): a cancel landing while Ray sets up a task failed it.
    runtime_env = {"worker_process_setup_hook": "munet.interrupts.listen_to_cancel"}
    if address:
        init_ray_quietly(ray, address=address, runtime_env=runtime_env)
    else:
        init_ray_quietly(
            ray,
            # A new instance even where this machine runs a Ray cluster (`ray start`, or one
            # whose head died and left its address behind): plain ray.init() joins that one.
            address="local",
            num_cpus=num_cpus,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            runtime_env=runtime_env,
        )
    return True
