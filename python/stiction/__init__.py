"""stiction: a differentiable physics engine for articulated rigid bodies.

Conventions: z-up world, SI units, float64 numpy arrays, spatial vectors
``[angular; linear]``, unit quaternions stored ``[w, x, y, z]``.

>>> import stiction
>>> model = stiction.samples.pendulum_chain(2)
>>> q, v = model.neutral(), [0.0, 0.0]
>>> model.forward_dynamics(q, v, [0.0, 0.0]).shape
(2,)
"""

from . import gpu, samples, sysid, trajopt
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
    SoftBody,
    SoftRollout,
    SoftStepRecord,
    SoftSystem,
    StaticGeometry,
    StepRecord,
    StictionError,
    Tape,
    TetMesh,
    World,
    WorldStepRecord,
    WorldTape,
    __version__,
    gradcheck,
    gradcheck_scene,
    load_mjcf,
    load_scene,
)



def load(path, **options):
    """Loads a robot file by its extension: ``.urdf`` with :meth:`Model.from_urdf`,
    ``.xml`` or ``.mjcf`` (MuJoCo's MJCF) with :meth:`Model.from_mjcf`; ``options`` go to
    the loader (``strict``, and for URDF ``floating_base``, ``package_dirs``,
    ``load_collision_meshes``).

    :raises LoadError: an unknown extension, or the loader's errors.
    """
    import os

    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext == ".urdf":
        return Model.from_urdf(path, **options)
    if ext in (".xml", ".mjcf"):
        return Model.from_mjcf(path, **options)
    raise LoadError(f"{os.fspath(path)}: unknown robot file extension '{ext}' (expected .urdf, .xml or .mjcf)")


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
    "SoftBody",
    "SoftRollout",
    "SoftStepRecord",
    "SoftSystem",
    "StaticGeometry",
    "StepRecord",
    "StictionError",
    "Tape",
    "TetMesh",
    "World",
    "WorldStepRecord",
    "WorldTape",
    "__version__",
    "gpu",
    "gradcheck",
    "gradcheck_scene",
    "load",
    "load_mjcf",
    "load_scene",
    "samples",
]
