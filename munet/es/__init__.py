"""Evolution-strategies gradient estimators for long unrolled computations.

Three small pieces, as in learned_optimization: an ``InnerProblem`` (the unrolled computation,
vectorised over particles), a ``GradientEstimator`` (full-episode ES, truncated ES, truncated
PES, truncated backprop; state is a frozen dataclass of tensors saved to safetensors + JSON) and
the outer loop (``MetaTrainer`` with a ``MetaOptimizer``). The PES maths is the pure function
``pes_gradient``. ``MultiDeviceTruncatedPES`` / ``MultiDeviceTruncatedES`` spread the particles
over several devices (the reference's ``TruncatedPESPMAP``).

Example::

    from munet.es import InfluenceBalancing, MetaOptimizer, MetaTrainer, TruncatedPES

    problem = InfluenceBalancing()
    estimator = TruncatedPES(problem, num_particles=1000, truncation_length=1, std=0.1)
    trainer = MetaTrainer(estimator, MetaOptimizer("sgd", lr=1e-4), seed=3)
    trainer.run(3000)
    print(trainer.theta, problem.true_optimum())  # both about -1/6
"""

from munet.es.devices import devices_for_count, resolve_devices
from munet.es.estimators import (
    ESTIMATORS,
    EstimatorOutput,
    FullEpisodeES,
    FullEpisodeState,
    GradientEstimator,
    PESState,
    TruncatedBackprop,
    TruncatedES,
    TruncatedPES,
    TruncatedState,
    make_estimator,
)
from munet.es.outer import MetaOptimizer, MetaTrainer, MetaTrainState, format_record
from munet.es.pes import ESGradient, antithetic_es_gradient, pes_gradient, sample_perturbations
from munet.es.problem import InnerProblem, InnerState, check_theta
from munet.es.problems import (
    DigitsLearningRate,
    EpisodeMetrics,
    InfluenceBalancing,
    LinearQuadratic,
)
from munet.es.sharded import (
    DeviceShard,
    MultiDeviceTruncatedES,
    MultiDeviceTruncatedPES,
    ShardedState,
    make_multi_device_estimator,
)
from munet.es.state_io import load_state, save_state
from munet.es.unroll import UnrollResult, advance, staggered_start, unroll
from munet.es.vmapped import VmappedProblem

__all__ = [
    "ESTIMATORS",
    "DeviceShard",
    "DigitsLearningRate",
    "ESGradient",
    "EpisodeMetrics",
    "EstimatorOutput",
    "FullEpisodeES",
    "FullEpisodeState",
    "GradientEstimator",
    "InfluenceBalancing",
    "InnerProblem",
    "InnerState",
    "LinearQuadratic",
    "MetaOptimizer",
    "MetaTrainState",
    "MetaTrainer",
    "MultiDeviceTruncatedES",
    "MultiDeviceTruncatedPES",
    "PESState",
    "ShardedState",
    "TruncatedBackprop",
    "TruncatedES",
    "TruncatedPES",
    "TruncatedState",
    "UnrollResult",
    "VmappedProblem",
    "advance",
    "antithetic_es_gradient",
    "check_theta",
    "devices_for_count",
    "format_record",
    "load_state",
    "make_estimator",
    "make_multi_device_estimator",
    "pes_gradient",
    "resolve_devices",
    "sample_perturbations",
    "save_state",
    "staggered_start",
    "unroll",
]
