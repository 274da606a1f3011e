"""stiction: a differentiable physics engine for articulated rigid bodies.

Conventions: z-up world, SI units, float64 numpy arrays, spatial vectors
``[angular; linear]``, unit quaternions stored ``[w, x, y, z]``.

>>> import stiction
>>> model = stiction.samples.pendulum_chain(2)
>>> q, v = model.neutral(), [0.0, 0.0]
>>> model.forward_dynamics(q, v, [0.0, 0.0]).shape
(2,)
"""

from . import samples, sysid, trajopt
from ._stiction import (
    GradReport,
    InputError,
    LoadError,
    LoadWarning,
    Model,
    ModelBuilder,
    ModelError,
    NumericalError,
    ParamSpec,
    Particles,
    Simulator,
    StaticGeometry,
    StepRecord,
    StictionError,
    Tape,
    World,
    WorldStepRecord,
    WorldTape,
    __version__,
    gradcheck,
    load_scene,
)

__all__ = [
    "GradReport",
    "InputError",
    "LoadError",
    "LoadWarning",
    "Model",
    "ModelBuilder",
    "ModelError",
    "NumericalError",
    "ParamSpec",
    "Particles",
    "Simulator",
    "StaticGeometry",
    "StepRecord",
    "StictionError",
    "Tape",
    "World",
    "WorldStepRecord",
    "WorldTape",
    "__version__",
    "gradcheck",
    "load_scene",
    "samples",
]
