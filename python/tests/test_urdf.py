import warnings

import numpy as np
import pytest

import stiction

PENDULUM_URDF = """<?xml version="1.0"?>
<robot name="pendulum">
  <link name="base">
    <inertial>
      <mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>
    </inertial>
  </link>
  <link name="bob">
    <inertial>
      <origin xyz="0 0 -1" rpy="0 0 0"/>
      <mass value="2.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>
    </inertial>
    <collision>
      <geometry><mesh filename="meshes/bob.stl"/></geometry>
    </collision>
  </link>
  <joint name="hinge" type="revolute">
    <parent link="base"/>
    <child link="bob"/>
    <origin xyz="0 0 0.5" rpy="0 0 0"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="1.5" effort="10" velocity="3"/>
  </joint>
</robot>
"""

def test_from_urdf_happy_path(tmp_path):
    path = tmp_path / "pendulum.urdf"
    path.write_text(PENDULUM_URDF)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stiction.LoadWarning)
        m = stiction.Model.from_urdf(str(path), load_collision_meshes=False)
        # os.PathLike is accepted too, and a floating base adds a free joint
        f = stiction.Model.from_urdf(path, floating_base=True, load_collision_meshes=False)
    assert m.name == "pendulum"
    assert (m.nq, m.nv) == (1, 1)
    assert m.joint_names == ["hinge"]
    np.testing.assert_allclose(m.lower_limits, [-1.5])
    np.testing.assert_allclose(m.upper_limits, [1.5])
    np.testing.assert_allclose(m.effort_limits, [10.0])
    np.testing.assert_allclose(m.total_mass, 3.0)
    assert (f.nq, f.nv) == (8, 7)


def test_from_urdf_warnings_point_at_caller(tmp_path):
    path = tmp_path / "pendulum.urdf"
    path.write_text(PENDULUM_URDF)
    with pytest.warns(stiction.LoadWarning) as record:
        stiction.Model.from_urdf(path, load_collision_meshes=False)
    assert record[0].filename == __file__


def test_from_urdf_malformed(tmp_path):
    path = tmp_path / "broken.urdf"
    path.write_text('<robot name="broken"><link name="a"></robot')
    with pytest.raises(stiction.LoadError) as info:
        stiction.Model.from_urdf(path)
    assert str(info.value)
    assert isinstance(info.value, stiction.StictionError)


def test_from_urdf_missing_file(tmp_path):
    with pytest.raises(stiction.LoadError, match="missing.urdf"):
        stiction.Model.from_urdf(tmp_path / "missing.urdf", package_dirs=[tmp_path], strict=True)


def test_from_urdf_argument_types(tmp_path):
    # One directory may be given alone (str or PathLike); the missing file is then the error.
    for one in [str(tmp_path), tmp_path]:
        with pytest.raises(stiction.LoadError, match="x.urdf"):
            stiction.Model.from_urdf(tmp_path / "x.urdf", package_dirs=one)
    with pytest.raises(TypeError, match="package_dirs must be a path or a list of paths"):
        stiction.Model.from_urdf(tmp_path / "x.urdf", package_dirs=5)
    with pytest.raises(TypeError, match="package_dirs must be a path or a list of paths"):
        stiction.Model.from_urdf(tmp_path / "x.urdf", package_dirs=[tmp_path, 3.0])


def test_body_arguments_name_or_index():
    m = stiction.samples.arm7()
    q = m.neutral()
    np.testing.assert_array_equal(m.body_jacobian(q, "link3"), m.body_jacobian(q, m.body_index("link3")))
    np.testing.assert_array_equal(m.body_jacobian(q, np.int64(2)), m.body_jacobian(q, 2))
    for bad in [-1, m.nbodies, 10**30]:
        with pytest.raises(stiction.InputError, match="out of range"):
            m.body_jacobian(q, bad)
    for bad in [1.5, None, True, [1]]:
        with pytest.raises(TypeError, match=r"body must be a body name \(str\) or index \(int\)"):
            m.body_jacobian(q, bad)


def test_rounded_inertias_are_repaired_with_a_warning_unless_strict(tmp_path):
    """The loading policy (docs/models.md): a bob whose tensor breaks the triangle inequality
    by 0.2 % is projected onto it with a LoadWarning naming the link; strict loading refuses it."""
    path = tmp_path / "rounded.urdf"
    head, tail = PENDULUM_URDF.split('<link name="bob">')
    path.write_text(head + '<link name="bob">' + tail.replace('izz="0.01"', 'izz="0.02004"', 1))
    with pytest.warns(stiction.LoadWarning) as record:
        m = stiction.Model.from_urdf(path, load_collision_meshes=False)
    messages = [str(r.message) for r in record]
    assert any("inertia of link 'bob'" in s and "triangle" in s for s in messages), messages
    np.testing.assert_allclose(m.total_mass, 3.0)
    with pytest.raises(stiction.LoadError, match="triangle"):
        stiction.Model.from_urdf(path, load_collision_meshes=False, strict=True)


def test_fixed_joints_are_merged_and_their_links_stay_frames():
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "tests", "fixtures", "urdf", "full.urdf")
    packages = os.path.join(here, "..", "..", "tests", "fixtures", "urdf", "packages")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        merged = stiction.Model.from_urdf(path, package_dirs=[packages])
        plain = stiction.Model.from_urdf(path, package_dirs=[packages], merge_fixed_joints=False)
    assert merged.nbodies == plain.nbodies - 1
    assert "l_fixed" in merged.frame_names and "l_fixed" not in merged.body_names
    assert sorted(merged.frame_names) == sorted(plain.body_names)
    with pytest.raises(stiction.InputError, match="merged into body 'l_pris'"):
        merged.body_index("l_fixed")
    # The same joint layout here (the welded link is a leaf), so dynamics compare directly.
    assert merged.joint_names == plain.joint_names
    q = merged.random_configuration(3)
    np.testing.assert_allclose(merged.mass_matrix(q), plain.mass_matrix(q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(merged.frame_pose(q, "l_fixed"), plain.forward_kinematics(q)[plain.body_index("l_fixed")],
                               rtol=0, atol=1e-12)
    for frame in ["world", "local", "local_world_aligned"]:
        np.testing.assert_allclose(merged.body_jacobian(q, "l_fixed", frame), plain.body_jacobian(q, "l_fixed", frame),
                                   rtol=0, atol=1e-12)
    # The derivative matrices come out in Fortran order, with the same values.
    v, tau = np.linspace(-1, 1, merged.nv), np.linspace(2, -2, merged.nv)
    da_dq, da_dv, minv = merged.aba_derivatives(q, v, tau)
    pq, pv, pminv = plain.aba_derivatives(q, v, tau)
    for a, b in [(da_dq, pq), (da_dv, pv), (minv, pminv)]:
        assert a.shape == (merged.nv, merged.nv) and a.dtype == np.float64
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(minv @ merged.mass_matrix(q), np.eye(merged.nv), atol=1e-9)
    # Parameters by link name, merged links included (the welded link here is massless:
    # its own mass is 0, whatever its body weighs); a change gives the merged model of the
    # changed file.
    names = ["mass:l_fixed", "mass:l_pris"]
    spec, spec_plain = stiction.ParamSpec(merged, names), stiction.ParamSpec(plain, names)
    inertial = ("mass:", "com:", "inertia:")
    assert sorted(n for n in stiction.ParamSpec.available(merged) if n.startswith(inertial)) == sorted(
        n for n in stiction.ParamSpec.available(plain) if n.startswith(inertial))
    theta = spec.values(merged)
    assert theta[0] == 0.0
    np.testing.assert_array_equal(theta, spec_plain.values(plain))
    theta[1] += 0.5
    heavier, heavier_plain = spec.apply(merged, theta), spec_plain.apply(plain, theta)
    np.testing.assert_allclose(heavier.mass_matrix(q), heavier_plain.mass_matrix(q), rtol=0, atol=1e-12)
    assert abs(heavier.total_mass - merged.total_mass - 0.5) < 1e-12
