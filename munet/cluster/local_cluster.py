"""A Ray cluster of several nodes on this machine, every node on 127.0.0.1: what the node-loss
test and `benchmarks/cluster_load.py` launch on, to try a multi-node launch (agents spread over
nodes, a node lost mid-run) without other machines.

Each node is a real Ray node (its own raylet, object store and workers; Ray's
`ray.cluster_utils.Cluster`), declaring the logical CPUs given, so a 2-core machine can hold a
head and two workers of one CPU each. Removing a node kills its processes as a lost machine
would: its raylet at once, its workers within about a second (they watch their raylet).
"""

from __future__ import annotations

from typing import Any

from munet.cluster.ray_setup import import_ray

#: Ray's failure detector, made fast for a cluster on one machine: a node is declared dead after
#: three missed health checks 0.5 s apart instead of Ray's defaults (five, 3 s apart), so a lost
#: node's tasks are retried seconds after it went.
FAST_NODE_DEATH = {
    "health_check_initial_delay_ms": 1000,
    "health_check_period_ms": 500,
    "health_check_timeout_ms": 1000,
    "health_check_failure_threshold": 3,
}


class LocalCluster:
    """A head node and `workers` worker nodes on 127.0.0.1.

    Args:
        workers: worker nodes besides the head (>= 0).
        cpus_per_node: logical CPUs each node declares (the head included).
        system_config: Ray's `_system_config` for the cluster (default `FAST_NODE_DEATH`).

    Use as a context manager, or call `shutdown`. The driver (`munet.cluster.launch` with
    ``ray_address=cluster.address``) connects to the head node, which therefore may not be
    removed while it runs.
    """

    def __init__(
        self,
        workers: int = 2,
        cpus_per_node: int = 1,
        system_config: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(workers, int) or workers < 0:
            raise ValueError(f"workers {workers!r}: expected an int >= 0")
        if not isinstance(cpus_per_node, int) or cpus_per_node < 1:
            raise ValueError(f"cpus_per_node {cpus_per_node!r}: expected an int >= 1")
        import_ray(local=True)  # usage statistics off, loopback addresses
        from ray.cluster_utils import Cluster

        config = FAST_NODE_DEATH if system_config is None else system_config
        self._cluster = Cluster(
            initialize_head=True,
            head_node_args={**self._node_args(cpus_per_node), "_system_config": config},
        )
        try:
            self.workers = [
                self._cluster.add_node(**self._node_args(cpus_per_node)) for _ in range(workers)
            ]
            self._cluster.wait_for_nodes()
        except BaseException:
            self._cluster.shutdown()
            raise

    @staticmethod
    def _node_args(cpus: int) -> dict[str, Any]:
        return {"num_cpus": cpus, "node_ip_address": "127.0.0.1", "include_dashboard": False}

    @property
    def address(self) -> str:
        """The head's address (``127.0.0.1:PORT``), for `launch(ray_address=...)`."""
        return self._cluster.address

    @property
    def head_id(self) -> str:
        """The head node's Ray node id (hex)."""
        return self._cluster.head_node.node_id

    @property
    def worker_ids(self) -> list[str]:
        """The worker nodes still up, by Ray node id (hex)."""
        return [node.node_id for node in self.workers]

    def remove_worker(self, node_id: str) -> None:
        """Kill a worker node's processes (no graceful shutdown), as a lost machine.

        Raises:
            ValueError: no worker node of that id is up (the head cannot be removed).
        """
        for node in self.workers:
            if node.node_id == node_id:
                self._cluster.remove_node(node, allow_graceful=False)
                self.workers.remove(node)
                return
        raise ValueError(f"node {node_id!r}: not a worker node that is up; up: {self.worker_ids}")

    def shutdown(self) -> None:
        """Stop every node."""
        self._cluster.shutdown()
        self.workers = []

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
