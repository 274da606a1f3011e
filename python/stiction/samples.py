"""Ready-made models for examples, tests and benchmarks."""

from ._stiction import (
    all_joint_types,
    arch,
    arm7,
    binary_tree,
    cartpole,
    bodies_on_plane,
    humanoid,
    humanoid_on_ground,
    pendulum_chain,
    random_tree,
    spatial_chain,
    table_pile,
)

__all__ = [
    "all_joint_types",
    "arch",
    "arm7",
    "binary_tree",
    "cartpole",
    "bodies_on_plane",
    "humanoid",
    "humanoid_on_ground",
    "pendulum_chain",
    "random_tree",
    "spatial_chain",
    "table_pile",
]
