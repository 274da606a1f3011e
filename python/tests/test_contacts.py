"""Contacts from Python: Model.contacts / Simulator.contacts, collision shapes in the
builder, filtering options, and contact derivatives against finite differences."""

import numpy as np
import pytest

import stiction
from stiction import ModelBuilder, samples

from conftest import assert_jacobian_close, fd_jacobian


def ball_on_plane(z=0.099, radius=0.1):
    b = ModelBuilder("ball_on_plane")
    b.add_link("ball", mass=1.0, inertia=np.eye(3) * 0.004)
    b.add_joint("free", "free", "world", "ball", origin_xyz=(0.0, 0.0, z))
    b.add_collision("ball", "sphere", radius=radius)
    b.add_collision("world", "plane")
    return b.build()


def box_on_plane(z=0.049):
    b = ModelBuilder("box_on_plane")
    b.add_link("box", mass=1.0, inertia=np.eye(3) * 0.01)
    b.add_joint("free", "free", "world", "box", origin_xyz=(0.0, 0.0, z))
    b.add_collision("box", "box", half_extents=(0.1, 0.2, 0.05), friction=0.5)
    b.add_collision("world", "plane")
    return b.build()


def test_sphere_on_plane():
    m = ball_on_plane()
    assert m.nshapes == 2
    c = m.contacts(m.neutral())
    assert len(c["distances"]) == 1
    np.testing.assert_allclose(c["distances"], [-0.001], atol=1e-12)
    # The ball comes first: the normal points from the ball into the plane.
    np.testing.assert_allclose(c["normals"], [[0.0, 0.0, -1.0]], atol=1e-12)
    # A vertex-face contact's point lies on the face (the plane, z = 0), not midway
    # between the surfaces.
    np.testing.assert_allclose(c["points"], [[0.0, 0.0, 0.0]], atol=1e-12)
    assert c["points"].shape == (1, 3) and c["normals"].shape == (1, 3)
    assert c["body_a"] == ["ball"] and c["body_b"] == ["world"]
    assert list(c["shape_a"]) == [0] and list(c["shape_b"]) == [1]
    assert c["kinds"] == ["vertex-face"]
    assert c["features"] == [("vertex 0", "face 0")]
    # Lifted above the plane: no contact unless the margin reaches it.
    q = m.neutral()
    q[2] += 0.011
    assert len(m.contacts(q)["distances"]) == 0
    np.testing.assert_allclose(m.contacts(q, margin=0.02)["distances"], [0.01], atol=1e-12)


def test_box_on_plane_gives_four_corner_contacts():
    m = box_on_plane()
    c = m.contacts(m.neutral())
    assert len(c["distances"]) == 4
    np.testing.assert_allclose(c["distances"], -0.001, atol=1e-12)
    corners = sorted(map(tuple, np.round(c["points"][:, :2], 12)))
    assert corners == sorted((sx * 0.1, sy * 0.2) for sx in (-1, 1) for sy in (-1, 1))
    assert set(c["kinds"]) == {"vertex-face"}
    assert all(fb == "face 0" and fa.startswith("vertex ") for fa, fb in c["features"])
    # The simulator answers the same.
    s = stiction.Simulator(m, dt=1e-3)
    cs = s.contacts(m.neutral())
    np.testing.assert_array_equal(cs["points"], c["points"])


def test_empty_result_has_the_documented_shapes():
    m = samples.arm7()
    c = m.contacts(m.neutral())
    assert c["points"].shape == (0, 3) and c["distances"].shape == (0,)
    assert c["body_a"] == [] and c["features"] == []
    c = m.contacts(m.neutral(), jacobians=True)
    assert c["point_jacobians"].shape == (0, 3, 7) and c["distance_jacobians"].shape == (0, 7)


def test_bodies_on_plane_sample():
    m = samples.bodies_on_plane(16, "box")
    c = m.contacts(m.neutral())
    assert len(c["distances"]) == 64
    assert set(c["body_b"]) == {"world"}
    assert len(set(c["body_a"])) == 16
    with pytest.raises(stiction.InputError):
        samples.bodies_on_plane(4, "cone")


def test_ncp_paper_scene_samples():
    arch = samples.arch()
    assert arch.nv == 120
    c = arch.contacts(arch.neutral(), margin=1e-6)
    assert len(c["distances"]) == 84 and np.abs(c["distances"]).max() < 1e-9
    with pytest.raises(stiction.InputError):
        samples.arch(1)
    pile = samples.table_pile(18, seed=3)
    assert pile.nv == 108
    assert len(pile.contacts(pile.neutral(), margin=1e-3)["distances"]) == 0
    with pytest.raises(stiction.InputError):
        samples.table_pile(0)
    # The arch under the paper's 6 Newton x 20 conjugate-residual setting holds its shape.
    sim = stiction.Simulator(
        arch,
        dt=1.0 / 120.0,
        contact={"solver": "ncp", "ncp": {"linear": "cr", "cr_iterations": 20, "max_iterations": 6}},
    )
    q, v = arch.neutral(), np.zeros(arch.nv)
    for _ in range(12):
        q, v = sim.step(q, v, np.zeros(arch.nv))
    blocks = q.reshape(20, 7)  # per block: translation from the built pose, quaternion (w, x, y, z)
    assert np.linalg.norm(blocks[:, :3], axis=1).max() < 5e-3
    assert 2 * np.linalg.norm(blocks[:, 4:], axis=1).max() < 1e-2


def test_contact_jacobians_match_finite_differences():
    m = box_on_plane()
    rng = np.random.default_rng(0)
    q = m.integrate(m.neutral(), np.concatenate([rng.uniform(-0.3, 0.3, 3), rng.uniform(-0.02, 0.02, 3)]), 1.0)
    c = m.contacts(q, margin=0.2, jacobians=True)
    n = len(c["distances"])
    assert n >= 4
    feats = c["features"]

    def geometry(k, eps):
        dq = np.zeros(m.nv)
        dq[k] = eps
        cc = m.contacts(m.integrate(q, dq, 1.0), margin=0.5)
        # Follow each contact by its features (the identity), as the derivatives do.
        index = {(a, b, f): i for i, (a, b, f) in enumerate(zip(cc["shape_a"], cc["shape_b"], cc["features"]))}
        rows = [index[(a, b, f)] for a, b, f in zip(c["shape_a"], c["shape_b"], feats)]
        return np.concatenate([cc["points"][rows].ravel(), cc["normals"][rows].ravel(), cc["distances"][rows]])

    fd = fd_jacobian(geometry, m.nv, h=1e-3)
    analytic = np.concatenate(
        [
            c["point_jacobians"].reshape(n * 3, m.nv),
            c["normal_jacobians"].reshape(n * 3, m.nv),
            c["distance_jacobians"],
        ]
    )
    assert_jacobian_close(analytic, fd, rel=1e-7, name="contact geometry")


def test_filtering_options_from_python():
    def chain(self_collision=True, exclude=False, mask=0xFFFFFFFF):
        b = ModelBuilder("chain")
        parent = "world"
        for k in range(3):
            b.add_link(f"l{k}", mass=1.0, inertia=np.eye(3) * 0.01)
            b.add_joint(f"j{k}", "revolute", parent, f"l{k}", axis=(0, 1, 0), origin_xyz=(0, 0, 0 if k == 0 else -0.2))
            b.add_collision(f"l{k}", "sphere", radius=0.15, origin_xyz=(0, 0, -0.1), mask=mask if k == 2 else 0xFFFFFFFF)
            parent = f"l{k}"
        b.set_self_collision("l0", self_collision)
        if exclude:
            b.exclude_collision_pair("l2", "l0")
        return b.build()

    folded = [0.0, np.radians(150), 0.0]
    c = chain().contacts(folded)
    assert (c["body_a"], c["body_b"], c["kinds"]) == (["l0"], ["l2"], ["vertex-vertex"])
    assert len(chain().contacts([0.0, 0.0, 0.0])["distances"]) == 0, "neighbours overlap but are skipped"
    assert len(chain(self_collision=False).contacts(folded)["distances"]) == 0
    assert len(chain(exclude=True).contacts(folded)["distances"]) == 0
    assert len(chain(mask=0b10).contacts(folded)["distances"]) == 0
    # Options survive a JSON round trip.
    m = chain(self_collision=False, exclude=True)
    assert stiction.Model.from_json(m.to_json()) == m


def test_errors():
    m = ball_on_plane()
    with pytest.raises(stiction.InputError, match="length"):
        m.contacts([0.0, 0.0])
    q = m.neutral()
    q[0] = np.nan
    with pytest.raises(stiction.InputError):
        m.contacts(q)
    with pytest.raises(stiction.InputError, match="margin"):
        m.contacts(m.neutral(), margin=-1.0)
    b = ModelBuilder("bad")
    b.add_link("foot", mass=1.0, inertia=np.eye(3) * 0.01)
    b.add_joint("free", "free", "world", "foot")
    with pytest.raises(stiction.InputError, match="unknown link"):
        b.add_collision("hand", "sphere", radius=0.1)
    with pytest.raises(stiction.InputError, match="radius"):
        b.add_collision("foot", "sphere")
    with pytest.raises(stiction.InputError, match="unknown collision shape"):
        b.add_collision("foot", "cone", radius=0.1)
    with pytest.raises(stiction.InputError, match="vertex index"):
        b.add_collision("foot", "convex_mesh", vertices=np.eye(3), triangles=[[0, 1, 3]])
    b.add_collision("foot", "sphere", radius=0.1)
    b.add_collision("foot", "sphere", radius=-0.1)
    with pytest.raises(stiction.ModelError, match="collision shape 1 of link 'foot'"):
        b.build()
    b = ModelBuilder("bad_option")
    b.add_link("foot", mass=1.0, inertia=np.eye(3) * 0.01)
    b.add_joint("free", "free", "world", "foot")
    b.exclude_collision_pair("foot", "hand")
    with pytest.raises(stiction.ModelError, match="unknown link 'hand'"):
        b.build()
