import numpy as np
import pytest

import stiction
from stiction import ModelBuilder


def two_link(**joint_kwargs):
    b = ModelBuilder("two_link")
    b.add_link("upper", mass=1.0, com=(0, 0, -0.5), inertia=(0.1, 0, 0, 0.1, 0, 0.01))
    b.add_link("lower", mass=0.5, com=[0, 0, -0.5], inertia=np.diag([0.05, 0.05, 0.005]))
    b.add_joint("shoulder", "revolute", "world", "upper", axis=(0, 1, 0), lower=-2.0, upper=2.0, **joint_kwargs)
    b.add_joint("elbow", "revolute", "upper", "lower", axis=(0, 1, 0), origin_xyz=(0, 0, -1))
    return b


def test_build_two_link():
    b = two_link(velocity=3.0, effort=[10.0], damping=0.1, armature=0.01, friction=0.2)
    assert repr(b) == "ModelBuilder(name=\"two_link\", links=2, joints=2)"
    m = b.build()
    assert isinstance(m, stiction.Model)
    assert (m.name, m.nq, m.nv, m.nbodies) == ("two_link", 2, 2, 2)
    assert m.joint_names == ["shoulder", "elbow"]
    assert m.body_names == ["upper", "lower"]
    np.testing.assert_allclose(m.lower_limits, [-2.0, -np.inf])
    np.testing.assert_allclose(m.upper_limits, [2.0, np.inf])
    np.testing.assert_allclose(m.velocity_limits, [3.0, np.inf])
    np.testing.assert_allclose(m.effort_limits, [10.0, np.inf])
    np.testing.assert_allclose(m.total_mass, 1.5)
    # armature adds to the diagonal of M
    M = m.mass_matrix(m.neutral())
    M0 = two_link().build().mass_matrix(m.neutral())
    np.testing.assert_allclose(M - M0, np.diag([0.01, 0.0]), atol=1e-12)
    poses = m.forward_kinematics([0.0, 0.0])
    np.testing.assert_allclose(poses[1][:3, 3], [0, 0, -1])


def test_builder_chaining_and_gravity():
    m = (
        ModelBuilder("chain")
        .add_link("a", mass=1.0, inertia=np.eye(3) * 0.01)
        .add_joint("j", "prismatic", "world", "a", axis=(0, 0, 1))
        .set_gravity((0, 0, -1.62))
        .build()
    )
    np.testing.assert_allclose(m.gravity, [0, 0, -1.62])
    # a free-falling slider: qdd = -g
    np.testing.assert_allclose(m.forward_dynamics([0.0], [0.0], [0.0]), [-1.62])


def test_builder_round_trip_matches_sample():
    """A builder description reproduces the pendulum sample's dynamics."""
    ref = stiction.samples.pendulum_chain(1, length=1.0, mass=1.0)
    r, length = 0.02, 1.0
    across = (3 * r * r + length * length) / 12.0
    m = (
        ModelBuilder("chain1")
        .add_link("link0", mass=1.0, com=(0, 0, -0.5), inertia=(across, 0, 0, across, 0, r * r / 2))
        .add_joint("joint0", "revolute", "world", "link0", axis=(0, 1, 0))
        .build()
    )
    q = [0.3]
    np.testing.assert_allclose(m.mass_matrix(q), ref.mass_matrix(q), rtol=1e-12)
    np.testing.assert_allclose(m.gravity_forces(q), ref.gravity_forces(q), rtol=1e-12)
    # and the JSON written by one reads back into an equal model
    assert stiction.Model.from_json(m.to_json()) == m


@pytest.mark.parametrize(
    "kind,nq,nv,extra",
    [
        ("fixed", 0, 0, {}),
        ("revolute", 1, 1, {}),
        ("continuous", 1, 1, {}),
        ("prismatic", 1, 1, {}),
        ("spherical", 4, 3, {}),
        ("free", 7, 6, {}),
        ("floating", 7, 6, {}),
        ("planar", 3, 3, {"axis": (0, 0, 1)}),
        ("universal", 2, 2, {"axis2": (0, 1, 0)}),
        ("screw", 1, 1, {"pitch": 0.01}),
    ],
)
def test_every_joint_type(kind, nq, nv, extra):
    b = ModelBuilder(kind)
    b.add_link("base", mass=1.0, inertia=np.eye(3) * 0.1)
    b.add_link("tip", mass=1.0, com=(0.1, 0, 0), inertia=np.eye(3) * 0.1)
    b.add_joint("root", "revolute", "world", "base", axis=(0, 0, 1))
    b.add_joint("j", kind, "base", "tip", **extra)
    m = b.build()
    assert (m.nq, m.nv) == (1 + nq, 1 + nv)
    q = m.random_configuration(1)
    tau = np.ones(m.nv)
    a = m.forward_dynamics(q, np.zeros(m.nv), tau)
    np.testing.assert_allclose(m.inverse_dynamics(q, np.zeros(m.nv), a), tau, atol=1e-10)


def test_floating_base():
    b = ModelBuilder("box")
    b.add_link("box", mass=2.0, inertia=np.eye(3) * 0.1)
    b.floating_base(True)
    m = b.build()
    assert (m.nq, m.nv) == (7, 6)
    a = m.forward_dynamics(m.neutral(), np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(a, [0, 0, 0, 0, 0, -9.81], atol=1e-12)
    assert ModelBuilder("box").add_link("box", mass=1.0, inertia=np.eye(3)).floating_base(False).build().nv == 0


def test_spring_and_damping_enter_model():
    b = ModelBuilder("spring")
    b.add_link("a", mass=1.0, inertia=np.eye(3) * 0.1)
    b.add_joint("j", "prismatic", "world", "a", axis=(1, 0, 0), stiffness=100.0, rest=0.5, damping=2.0)
    m = b.build()
    np.testing.assert_allclose(m.potential_energy([0.0]), 0.5 * 100.0 * 0.25, rtol=1e-12)


def test_builder_input_errors():
    b = ModelBuilder("bad")
    with pytest.raises(stiction.InputError, match="unknown joint type 'hinge'"):
        b.add_joint("j", "hinge", "world", "a")
    with pytest.raises(stiction.InputError, match="axis2"):
        b.add_joint("j", "universal", "world", "a")
    with pytest.raises(stiction.InputError, match="axis has length 2"):
        b.add_joint("j", "revolute", "world", "a", axis=(1, 0))
    with pytest.raises(stiction.InputError, match="lower of joint 'j'"):
        b.add_joint("j", "revolute", "world", "a", lower=[0.0, 1.0])
    with pytest.raises(stiction.InputError, match="inertia"):
        b.add_link("a", mass=1.0, inertia=[1.0, 2.0])
    with pytest.raises(stiction.InputError, match=r"com\[1\] is not finite"):
        b.add_link("a", mass=1.0, com=(0, np.nan, 0))


def test_model_errors():
    def build(mass=1.0, axis=(0, 1, 0)):
        return (
            ModelBuilder("m")
            .add_link("a", mass=mass, inertia=np.eye(3) * 0.1)
            .add_joint("j", "revolute", "world", "a", axis=axis)
            .build()
        )

    build()
    with pytest.raises(stiction.ModelError, match="invalid mass"):
        build(mass=-1.0)
    with pytest.raises(stiction.ModelError, match="zero-length axis"):
        build(axis=(0, 0, 0))
    with pytest.raises(stiction.ModelError, match="the model has no bodies"):
        ModelBuilder("empty").build()
    with pytest.raises(stiction.ModelError, match="unknown parent link 'ghost'"):
        ModelBuilder("m").add_link("a", mass=1.0, inertia=np.eye(3)).add_joint(
            "j", "revolute", "ghost", "a"
        ).build()
    with pytest.raises(stiction.ModelError, match="duplicate link name 'a'"):
        ModelBuilder("m").add_link("a", mass=1.0, inertia=np.eye(3)).add_link("a").build()
    # ModelError is a StictionError but not a ValueError
    assert issubclass(stiction.ModelError, stiction.StictionError)
    assert not issubclass(stiction.ModelError, ValueError)
