"""stiction.viz (issue 23): scenes of models and worlds, self-contained pages of the three
examples' trajectories, the trajectory JSON format and its command line, clear errors for bad
input, the size of a 10 s, 100-body page, and — where Debian's ``chromium`` is installed —
headless screenshots at t = 0 and at the end and the browser's frame time."""

import base64
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import stiction

pytest.importorskip("meshcat", reason="stiction.viz reads the viewer bundle of the meshcat package")
from stiction import viz  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "python" / "examples"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def load_example(name):
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"viz_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def payload(html):
    """The data of a page, arrays decoded."""
    m = re.search(r'<script id="stiction-data" type="application/json">(.*?)</script>', html, re.S)
    assert m, "the page carries its data"
    return json.loads(m.group(1))


def arr(a):
    dtype = np.float32 if a["dtype"] == "float32" else np.uint32
    return np.frombuffer(base64.b64decode(a["b64"]), dtype=dtype).reshape(a["shape"])


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The pages of the three examples' optimised trajectories."""
    out = tmp_path_factory.mktemp("pages")
    cart = load_example("cartpole_swingup")
    box = load_example("box_push")
    arm = load_example("arm_reach")
    runs = {
        "cartpole_swingup": (cart, cart.swing_up(verbose=False)),
        "box_push": (box, box.solve(verbose=False)),
        "arm_reach": (arm, arm.solve(verbose=False)),
    }
    written = {}
    for name, (module, result) in runs.items():
        path = out / f"{name}.html"
        assert module.page(result, path) == path
        written[name] = (path, result)
    return written


# -- accessors ---------------------------------------------------------------------------
def test_model_collision_shapes_and_poses():
    box = load_example("box_push")
    model = box.push_model()
    shapes = model.collision_shapes()
    assert [s["kind"] for s in shapes] == ["sphere", "box", "plane"] and len(shapes) == model.nshapes
    assert [s["body"] for s in shapes] == [1, 2, None]
    assert shapes[1]["vertices"].shape == (8, 3) and shapes[1]["triangles"].shape == (12, 3)
    np.testing.assert_allclose(np.abs(shapes[1]["vertices"]).max(axis=0), box.HALF)
    assert shapes[0]["radius"] == box.PUSHER_RADIUS and shapes[0]["vertices"].shape == (1, 3)
    q = model.random_configuration(seed=3)
    X = model.forward_kinematics(q)
    P = model.shape_poses(q)
    for s, pose in zip(shapes, P):
        expected = s["pose"] if s["body"] is None else X[s["body"]] @ s["pose"]
        np.testing.assert_allclose(pose, expected, atol=1e-14)
    Q = np.stack([q, model.neutral()])
    np.testing.assert_allclose(model.shape_poses(Q)[0], P)
    assert model.parents == [None, 0, None]


def test_world_shapes_surfaces_and_poses():
    mesh = stiction.TetMesh.box([2, 1, 1], [0.2, 0.1, 0.1], origin=[0.0, 0.0, 0.3])
    particles = stiction.Particles([1.0, 2.0], 0.05)
    world = stiction.World([stiction.StaticGeometry.ground(), particles, stiction.SoftBody(mesh)])
    surfaces = world.surfaces()
    assert [len(s) for s in surfaces[:2]] == [0, 0]
    np.testing.assert_array_equal(surfaces[2], mesh.surface())
    shapes = world.collision_shapes()
    assert shapes[0]["kind"] == "plane" and shapes[0]["element"] is None
    assert [(s["system"], s["element"]) for s in shapes[1:3]] == [(1, 0), (1, 1)]
    q = np.concatenate([[0.1, 0.2, 0.5, -0.3, 0.0, 0.4], mesh.vertices.ravel()])
    P = world.shape_poses(q)
    assert P.shape == (len(shapes), 4, 4)
    np.testing.assert_allclose(P[1][:3, 3], [0.1, 0.2, 0.5])
    np.testing.assert_allclose(P[2][:3, 3], [-0.3, 0.0, 0.4])
    assert world.shape_poses(np.stack([q, q, q])).shape == (3, len(shapes), 4, 4)


def test_quaternions_of_rotations_including_half_turns():
    rng = np.random.default_rng(7)
    A = np.linalg.qr(rng.normal(size=(50, 3, 3)))[0]
    A *= np.sign(np.linalg.det(A))[:, None, None]
    axes = np.array([[1, -1, 0], [0, 1, -1], [1, 0, -1], [1, 1, 1]]) / np.sqrt([[2], [2], [2], [3]])
    half = np.array([2 * np.outer(a, a) - np.eye(3) for a in axes])  # rotations by pi
    R = np.concatenate([A, half, np.eye(3)[None]])
    q = viz._quaternions(R)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0)
    np.testing.assert_allclose(viz._rotation(q), R, atol=1e-12)


# -- pages -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cartpole_swingup", "box_push", "arm_reach"])
def test_example_pages(pages, name):
    path, result = pages[name]
    html = path.read_text(encoding="utf-8")
    # Self-contained: the viewer bundle is inlined, nothing is fetched.
    assert "MeshCat" in html and not re.search(r"<script[^>]*\bsrc=", html)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert 0.5e6 < len(html) < 3e6
    d = payload(html)
    assert d["format"] == viz.FORMAT and d["version"] == viz.VERSION
    times = arr(d["times"])
    T = len(result["q"])
    assert times[0] == 0 and np.isclose(times[-1], (T - 1) * {"cartpole_swingup": 0.02}.get(name, 0.01))
    poses = arr(d["poses"])
    assert poses.shape == (len(times), d["num_tracks"], 7) and np.all(np.isfinite(poses))
    assert d["shapes"], "the scene has something to draw"
    if name == "box_push":
        assert {s["kind"] for s in d["shapes"]} == {"plane", "sphere", "box"}
        assert d["contacts"] is not None and arr(d["contacts"]["counts"]).sum() > 0
        assert [m["name"] for m in d["markers"]] == ["goal"]
        # The box's track ends near the goal.
        box_track = next(s["track"] for s in d["shapes"] if s["kind"] == "box")
        np.testing.assert_allclose(poses[-1, box_track, :2], result["q"][-1, 2:4], atol=1e-6)
    if name == "arm_reach":
        assert [m["name"] for m in d["markers"]] == ["target", "obstacle"]
        assert d["markers"][1]["opacity"] < 1


def test_example_main_writes_html(tmp_path):
    out = tmp_path / "cart.html"
    r = load_example("cartpole_swingup").main(["--no-shooting", "--no-plot", "--html", str(out)])
    assert r["html"] == str(out) and out.stat().st_size > 0.5e6


def self_contained(html):
    """The page inlines everything: no script source, no link to another host."""
    assert "MeshCat" in html and not re.search(r"<script[^>]*\bsrc=", html)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)


@pytest.mark.parametrize("name, steps, systems", [
    ("soft_cantilever", 20, 0), ("soft_ball_drop", 30, 1), ("soft_gripper", 30, 2)])
def test_soft_examples_write_pages(tmp_path, name, steps, systems):
    """--html on the soft-body examples (shortened with --steps): the soft body's surface moves
    with its vertices."""
    out = tmp_path / f"{name}.html"
    r = load_example(name).main(["--steps", str(steps), "--no-plot", "--html", str(out)])
    assert r["html"] == str(out)
    html = out.read_text(encoding="utf-8")
    self_contained(html)
    d = payload(html)
    assert d["format"] == viz.FORMAT and d["version"] == viz.VERSION
    (surface,) = d["surfaces"]
    assert surface["name"] == f"system{systems}/surface"
    X, tri = arr(surface["positions"]), arr(surface["triangles"])
    assert X.shape[0] == len(arr(d["times"])) >= 2 and X.shape[1] == surface["num_vertices"]
    assert len(tri) > 0 and tri.max() < X.shape[1] and np.all(np.isfinite(X))
    assert np.abs(X[-1] - X[0]).max() > 1e-4, "the soft body moves"
    if name == "soft_gripper":  # the pads are drawn, with their frames and the contacts
        assert [s["kind"] for s in d["shapes"]] == ["plane", "box", "box"]
        assert d["frames"]["tracks"] == [0, 1] and arr(d["contacts"]["counts"]).sum() > 0


def test_rigid_and_sysid_example_pages(tmp_path):
    """The page functions of the examples whose main runs an optimisation (ball throw, the
    identifications), fed with a first guess or the truth: well-formed pages of the right models."""
    ball = load_example("ball_throw")
    pend = load_example("sysid_pendulum")
    arm = load_example("sysid_arm_masses")
    slide = load_example("sysid_sliding_box")
    soft = load_example("soft_sysid")
    box = slide.box_model()
    _, fit = pend.identify(noise=0.0, verbose=False)
    cases = {
        "ball_throw": (ball.page, {"v0": ball.GUESS}, 2, True),
        "sysid_pendulum": (pend.page, fit, 3, False),
        "sysid_arm_masses": (arm.page, {"model": stiction.samples.arm7()}, 8, False),
        "sysid_sliding_box": (slide.page, {"model": box, "data": slide.data(box, 0.0)}, 2, True),
        "soft_sysid": (soft.page, {"values": soft.TRUTH}, 0, False),
    }
    for name, (page, result, nshapes, contacts) in cases.items():
        out = tmp_path / f"{name}.html"
        assert page(result, out) == out
        html = out.read_text(encoding="utf-8")
        self_contained(html)
        d = payload(html)
        poses = arr(d["poses"])
        assert np.all(np.isfinite(poses)) and len(arr(d["times"])) > 10, name
        assert (d["contacts"] is not None) == contacts, name
        if name == "soft_sysid":
            assert len(d["surfaces"]) == 1 and not d["shapes"]
        else:
            assert len(d["shapes"]) >= nshapes and np.abs(poses[-1] - poses[0]).max() > 1e-3, name
    ball_page = payload((tmp_path / "ball_throw.html").read_text())
    assert [m["name"] for m in ball_page["markers"]] == ["target"]
    np.testing.assert_allclose(ball_page["markers"][0]["position"], ball.TARGET)


def test_world_page_with_soft_body_and_contacts(tmp_path):
    mesh = stiction.TetMesh.box([2, 2, 2], [0.2, 0.2, 0.2], origin=[0.0, 0.0, 0.05])
    world = stiction.World([stiction.StaticGeometry.ground(), stiction.Particles([1.0], 0.05)], dt=0.01)
    world = world.add_soft_body(stiction.SoftBody(mesh, youngs_modulus=2e4))
    q0 = np.concatenate([[0.5, 0.0, 0.3], mesh.vertices.ravel()])
    Q, _, tape = world.rollout(q0, np.zeros(world.nv), np.zeros((30, world.nu)))
    viewer = viz.Viewer(world).animate(Q, world.dt, contacts=[r.contacts for r in tape])
    d = payload(viewer.to_html())
    (surface,) = d["surfaces"]
    X = arr(surface["positions"])
    assert X.shape == (30, mesh.num_vertices, 3)
    np.testing.assert_allclose(X[-1], Q[-1, 3:].reshape(-1, 3), atol=1e-6)
    np.testing.assert_array_equal(arr(surface["triangles"]), mesh.surface())
    assert d["num_tracks"] == 1 and arr(d["contacts"]["counts"]).sum() > 0


def test_body_frames_overlay(tmp_path):
    model = stiction.samples.arm7()
    v = viz.Viewer(model, frames=True).show(model.random_configuration(seed=2))
    d = v.to_dict()
    assert d["frames"]["tracks"] == list(range(model.nbodies)) and d["frames"]["length"] > 0
    v.show_frames(length=0.05)
    assert v.to_dict()["frames"]["length"] == 0.05
    # Through a trajectory file and back.
    v.save_json(tmp_path / "arm.json")
    back = viz.load_trajectory(tmp_path / "arm.json").to_dict()
    assert back["frames"] == {"tracks": list(range(model.nbodies)), "length": 0.05}
    assert "frames" not in v.show_frames(False).to_dict()
    with pytest.raises(stiction.InputError, match="length must be finite and positive"):
        v.show_frames(length=-1.0)
    scene = viz.Viewer(model, frames=True).to_dict(encode=False)
    scene["frames"]["tracks"] = [0, 99]
    with pytest.raises(stiction.InputError, match=r"frames.tracks must index the 8 tracks"):
        viz.load_trajectory(scene)
    # A world: one triad per moving element.
    world = stiction.World([stiction.StaticGeometry.ground(), stiction.Particles([1.0, 1.0], 0.05)])
    w = viz.Viewer(world, frames=True).animate(np.zeros((3, 6)), 0.01).to_dict()
    assert w["frames"]["tracks"] == [0, 1]


URDF_WITH_VISUALS = """<robot name="viewed">
  <material name="blue"><color rgba="0 0 1 1"/></material>
  <link name="base">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><box size="0.2 0.2 0.1"/></geometry><material name="blue"/></visual>
    <collision><geometry><sphere radius="0.15"/></geometry></collision>
  </link>
  <link name="arm">
    <inertial><origin xyz="0 0 0.2"/><mass value="0.5"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual name="shell"><origin xyz="0 0 0.2"/><geometry><mesh filename="tet.obj" scale="2 2 2"/></geometry>
      <material name="red"><color rgba="1 0 0 0.5"/></material></visual>
    <visual name="lost"><geometry><mesh filename="missing.stl"/></geometry></visual>
    <visual><origin xyz="0 0 0.4"/><geometry><cylinder radius="0.03" length="0.1"/></geometry></visual>
    <collision><origin xyz="0 0 0.2"/><geometry><capsule radius="0.02" length="0.4"/></geometry></collision>
  </link>
  <link name="tool">
    <inertial><mass value="0.1"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.05 0.05 0.05"/></geometry></collision>
  </link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.05"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <joint name="wrist" type="revolute"><parent link="arm"/><child link="tool"/><origin xyz="0 0 0.45"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
</robot>
"""


def test_visual_shapes_of_a_urdf(tmp_path):
    """URDF <visual> geometry is drawn instead of the collision shapes of the bodies that have
    some: primitives, a scaled OBJ mesh with its colour; a missing mesh file is left out with a
    LoadWarning; visual=False draws the collision shapes."""
    (tmp_path / "tet.obj").write_text("v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    (tmp_path / "viewed.urdf").write_text(URDF_WITH_VISUALS)
    with pytest.warns(stiction.LoadWarning, match="missing.stl': file not found"):  # the loader's
        model = stiction.Model.from_urdf(str(tmp_path / "viewed.urdf"))
    with pytest.warns(stiction.LoadWarning, match=r"visual 'lost' of body 'arm' is not drawn: .*missing.stl"):
        visuals = model.visual_shapes()
    assert [(v["body"], v["kind"], v["name"]) for v in visuals] == [(0, "box", None), (1, "mesh", "shell"),
                                                                      (1, "cylinder", None)]
    box, mesh, cyl = visuals
    np.testing.assert_allclose(np.abs(box["vertices"]).max(axis=0), [0.1, 0.1, 0.05])
    assert box["color"] == [0.0, 0.0, 1.0, 1.0] and box["file"] is None
    assert mesh["file"].endswith("tet.obj") and mesh["color"] == [1.0, 0.0, 0.0, 0.5]
    assert mesh["vertices"].shape == (4, 3) and mesh["triangles"].shape == (4, 3)
    np.testing.assert_allclose(mesh["vertices"].max(axis=0), [0.2, 0.2, 0.2])  # scale 2
    np.testing.assert_allclose(mesh["pose"][:3, 3], [0, 0, 0.2])
    assert cyl["triangles"].shape[0] > 20 and np.isclose(np.ptp(cyl["vertices"][:, 2]), 0.1)
    with pytest.warns(stiction.LoadWarning):
        v = viz.Viewer(model)
    d = v.to_dict()
    kinds = {s["name"]: (s["kind"], s["track"]) for s in d["shapes"]}
    # base and arm: their visuals; tool (no visuals): its collision box.
    assert kinds == {"base/visual0": ("box", 0), "arm/shell": ("mesh", 1), "arm/visual2": ("cylinder", 1),
                     "tool/box2": ("box", 2)}, kinds
    shell = next(s for s in d["shapes"] if s["name"] == "arm/shell")
    assert shell["color"] == [1.0, 0.0, 0.0] and shell["opacity"] == 0.5
    collision = viz.Viewer(model, visual=False).to_dict()
    assert sorted(s["kind"] for s in collision["shapes"]) == ["box", "capsule", "sphere"]
    # Through the model's JSON (the visuals travel with it) and a page.
    again = stiction.Model.from_json(model.to_json())
    with pytest.warns(stiction.LoadWarning):
        assert len(again.visual_shapes()) == 3
        html = viz.Viewer(again).animate(np.zeros((3, 2)), 0.1).to_html()
    self_contained(html)
    assert len(payload(html)["shapes"]) == 4


MJCF_WITH_VISUALS = """<mujoco model="geoms">
  <asset><mesh name="tet" file="tet.obj"/></asset>
  <worldbody>
    <geom type="plane" size="1 1 0.1"/>
    <body name="meshy" pos="0 0 1"><freejoint/><geom type="mesh" mesh="tet" rgba="1 0 0 1"/></body>
    <body name="dressed" pos="1 0 1"><freejoint/>
      <geom name="look" type="box" size="0.1 0.1 0.1" contype="0" conaffinity="0" rgba="0 1 0 0.5"/>
      <geom type="sphere" size="0.1"/></body>
    <body name="plain" pos="2 0 1"><freejoint/><geom type="sphere" size="0.1"/></body>
  </worldbody>
</mujoco>
"""


def test_visual_shapes_of_an_mjcf(tmp_path):
    """MJCF geoms as visuals: a body's purely visual geoms (contype = conaffinity = 0) when it
    has some, every geom of a body with a mesh geom (drawn as the mesh, not its hull), none
    otherwise (its collision shapes are its geoms)."""
    (tmp_path / "tet.obj").write_text("v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    (tmp_path / "geoms.xml").write_text(MJCF_WITH_VISUALS)
    model = stiction.Model.from_mjcf(str(tmp_path / "geoms.xml"))
    visuals = model.visual_shapes()
    names = model.body_names
    assert [(names[v["body"]], v["kind"], v["name"], v["color"]) for v in visuals] == [
        ("meshy", "mesh", None, [1.0, 0.0, 0.0, 1.0]), ("dressed", "box", "look", [0.0, 1.0, 0.0, 0.5])]
    assert visuals[0]["vertices"].shape == (4, 3) and visuals[0]["triangles"].shape == (4, 3)
    drawn = {(s["name"].split("/")[0], s["kind"]) for s in viz.Viewer(model).to_dict()["shapes"]}
    assert drawn == {("meshy", "mesh"), ("dressed", "box"), ("plain", "sphere"), ("world", "plane")}, drawn


def robot_data_dir():
    import glob

    hits = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "cmeel.prefix", "share"))
    return hits[0] if hits and os.path.isdir(os.path.join(hits[0], "example-robot-data", "robots")) else None


@pytest.mark.skipif(robot_data_dir() is None, reason="example-robot-data is not installed (pip install example-robot-data)")
def test_visual_meshes_of_a_real_robot(tmp_path):
    """UR5 of example-robot-data: its Collada visual meshes are drawn (not its STL collision meshes)."""
    import warnings

    share = robot_data_dir()
    path = os.path.join(share, "example-robot-data", "robots", "ur_description", "urdf", "ur5_robot.urdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stiction.LoadWarning)  # the loader's notes on the file
        model = stiction.Model.from_urdf(path, package_dirs=[share])
    with warnings.catch_warnings():
        warnings.simplefilter("error", stiction.LoadWarning)  # every visual mesh is read
        visuals = model.visual_shapes()
        v = viz.Viewer(model, title="ur5").show(model.neutral())
    assert len(visuals) >= 6 and all(s["file"].endswith(".dae") for s in visuals if s["kind"] == "mesh")
    assert sum(len(s["triangles"]) for s in visuals) > 1000
    assert v.visual
    page = tmp_path / "ur5.html"
    v.save_html(page)
    assert page.stat().st_size < 10e6
    meshes = [s for s in payload(page.read_text())["shapes"] if s["kind"] == "mesh"]
    assert [m["vertices"]["shape"][0] for m in meshes] == [len(s["vertices"]) for s in visuals if s["kind"] == "mesh"]


def test_live_server(tmp_path):
    """serve() answers the page, the trajectory file and the version the page polls; a new
    trajectory changes them; stop() closes the port."""
    import urllib.error
    import urllib.request

    model = stiction.samples.cartpole()
    v = viz.Viewer(model, title="live")
    url = v.serve(port=0)
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url) and v.serve() == url
        html = urllib.request.urlopen(url, timeout=30).read().decode("utf-8")
        d = payload(html)
        assert d["title"] == "live" and len(arr(d["times"])) == 1 and d["live"]["version"]
        version = urllib.request.urlopen(url + "version", timeout=30).read().decode()
        assert version == d["live"]["version"]
        v.animate(np.column_stack([np.linspace(0, 0.3, 50), np.linspace(0, 3, 50)]), 0.02)
        assert urllib.request.urlopen(url + "version", timeout=30).read().decode() != version
        d = payload(urllib.request.urlopen(url, timeout=30).read().decode("utf-8"))
        assert len(arr(d["times"])) == 50
        path = tmp_path / "served.json"
        path.write_bytes(urllib.request.urlopen(url + "trajectory.json", timeout=30).read())
        assert len(viz.load_trajectory(path).times) == 50
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(url + "missing", timeout=30)
    finally:
        v.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=5)
    v.stop()  # stopping twice is harmless


def test_frames_are_subsampled_to_fps():
    model = stiction.samples.pendulum_chain(2)
    Q = np.zeros((1001, 2))
    v = viz.Viewer(model).animate(Q, 1e-3, fps=50)
    assert len(v.times) == 51 and v.times[-1] == 1.0
    v.animate(Q[:1000], 1e-3, fps=50)
    assert v.times[-1] == 0.999  # the last row is always kept


def test_show_one_configuration_and_jupyter(tmp_path):
    import html

    model = stiction.samples.arm7()
    v = viz.Viewer(model).show(model.random_configuration(seed=1))
    d = payload(v.to_html())
    assert len(arr(d["times"])) == 1
    frame = v._repr_html_()
    m = re.fullmatch(r'<iframe srcdoc="([^"]*)" [^>]*></iframe>', frame, re.S)
    assert m and html.unescape(m.group(1)) == v.to_html()


def test_page_size_of_a_10s_100_body_rollout(tmp_path):
    """10 s at dt = 1e-3 (10001 rows, every 16th kept: 62.5 frames/s): 100 particles, and a chain
    of 100 links; and the particles at 100 frames/s."""
    t = np.arange(10001) * 1e-3
    n = 100
    start = np.column_stack([np.arange(n) % 10 * 0.2, np.arange(n) // 10 * 0.2, np.full(n, 1.0)])
    Q = np.concatenate([start.ravel()[None, :] + np.outer(np.sin(t), np.ones(3 * n)) * 0.1])
    world = stiction.World([stiction.StaticGeometry.ground(), stiction.Particles(np.ones(n), 0.05)], dt=0.01)
    particles = tmp_path / "particles.html"
    viz.Viewer(world).animate(Q, 1e-3).save_html(particles)
    dense = tmp_path / "particles_100fps.html"
    viz.Viewer(world).animate(Q, 1e-3, fps=100).save_html(dense)
    chain = stiction.samples.pendulum_chain(n, length=0.05)
    Qc = 0.3 * np.sin(np.outer(t, np.ones(n)) + np.arange(n) * 0.1)
    chain_page = tmp_path / "chain.html"
    viz.Viewer(chain).animate(Qc, 1e-3).save_html(chain_page)
    for page, frames in ((particles, 626), (chain_page, 626), (dense, 1001)):
        size = page.stat().st_size
        print(f"{page.name}: {size / 1e6:.2f} MB")
        assert size < 10e6
        d = payload(page.read_text(encoding="utf-8"))
        assert len(arr(d["times"])) == frames and d["num_tracks"] == n


# -- the JSON format and the command line ------------------------------------------------
def test_json_round_trip_and_cli(tmp_path):
    box = load_example("box_push")
    model = box.push_model()
    q0, _ = box.initial_state(model)
    Q = np.tile(q0, (20, 1))
    Q[:, 0] += np.linspace(0, 0.05, 20)
    v = viz.Viewer(model, title="round trip").animate(Q, 0.01, contacts="auto").add_target([0.15, 0.0, 0.05])
    for encode in (True, False):
        path = tmp_path / f"traj_{encode}.json"
        v.save_json(path, encode=encode)
        back = viz.load_trajectory(path)
        a, b = v.to_dict(), back.to_dict()
        for key in ("times", "poses"):
            np.testing.assert_allclose(arr(a[key]), arr(b[key]))
        assert [s["name"] for s in a["shapes"]] == [s["name"] for s in b["shapes"]]
        np.testing.assert_allclose(arr(a["contacts"]["data"]), arr(b["contacts"]["data"]))
        assert b["markers"] == a["markers"] and b["title"] == "round trip"
    out = tmp_path / "page.html"
    r = subprocess.run([sys.executable, "-m", "stiction.viz", str(tmp_path / "traj_False.json"), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and payload(out.read_text())["title"] == "round trip"


def test_json_model_reference(tmp_path):
    model = stiction.samples.cartpole()
    (tmp_path / "cartpole.model.json").write_text(model.to_json())
    Q = np.column_stack([np.linspace(0, 0.3, 11), np.linspace(0, 3, 11)])
    spec = {"format": "stiction-trajectory", "version": 1, "title": "by reference", "model_file": "cartpole.model.json",
            "dt": 0.1, "q": Q.tolist(), "targets": [[0.3, 0.0, 0.5]]}
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(spec))
    v = viz.load_trajectory(path)
    assert len(v.times) == 11 and v.markers[0]["name"] == "target"
    spec["markers"] = [{"name": "ball", "position": [0.0, 0.2, 0.3], "radius": 0.05, "opacity": 0.5}]
    path.write_text(json.dumps(spec))
    assert [m["name"] for m in viz.load_trajectory(path).markers] == ["target", "ball"]
    # Contacts computed by the viewer (what the Rust examples write for models with shapes).
    box = load_example("box_push")
    pusher = box.push_model()
    q0, _ = box.initial_state(pusher)
    Qb = np.tile(q0, (5, 1))
    ref = {"format": "stiction-trajectory", "version": 1, "model": pusher.to_json(), "dt": 0.01, "q": Qb.tolist(),
           "contacts": "auto"}
    v = viz.load_trajectory(ref)
    assert len(v.contacts) == 5 and len(v.contacts[0]) > 0
    with pytest.raises(stiction.InputError, match=r'"contacts" can only be "auto"'):
        viz.load_trajectory(dict(ref, contacts=[[]] * 5))
    inline = dict(spec, model=json.loads(model.to_json()))
    del inline["model_file"]
    assert len(viz.load_trajectory(inline).times) == 11


# -- errors ------------------------------------------------------------------------------
def test_bad_input_raises_clear_errors(tmp_path):
    model = stiction.samples.cartpole()
    v = viz.Viewer(model)
    with pytest.raises(stiction.InputError, match=r"shape \(T, 2\).*got shape \(10, 3\)"):
        v.animate(np.zeros((10, 3)), 0.01)  # a trajectory of another model
    with pytest.raises(stiction.InputError, match=r"use show\(q\)"):
        v.animate(np.zeros(2), 0.01)
    with pytest.raises(ValueError, match=r"shape \(T, 2\)"):
        v.animate(np.zeros((0, 2)), 0.01)
    Q = np.zeros((5, 2))
    Q[3, 1] = np.nan
    with pytest.raises(stiction.InputError, match=r"Q\[3, 1\] is not finite"):
        v.animate(Q, 0.01)
    with pytest.raises(stiction.InputError, match="dt must be finite and positive"):
        v.animate(np.zeros((5, 2)), 0.0)
    with pytest.raises(stiction.InputError, match="one entry per row"):
        v.animate(np.zeros((5, 2)), 0.01, contacts=[None] * 4)
    with pytest.raises(stiction.InputError, match=r"contacts\[1\] must have shape \(n, 6\)"):
        v.animate(np.zeros((2, 2)), 0.01, contacts=[np.zeros((0, 6)), np.zeros((2, 5))])
    with pytest.raises(stiction.InputError, match=r"q must have shape \(2,\)"):
        v.show([0.0, 0.0, 0.0])
    with pytest.raises(stiction.InputError, match="center must be 3 finite numbers"):
        v.add_target([0.0, np.inf, 0.0])
    with pytest.raises(TypeError, match="Model or a stiction.World"):
        viz.Viewer("cartpole")
    world = stiction.World([stiction.Particles([1.0], 0.1)])
    with pytest.raises(stiction.InputError, match=r"call show\(q\) or animate"):
        viz.Viewer(world).to_html()
    with pytest.raises(stiction.InputError, match=r"Q must have shape \(T, 3\)"):
        viz.Viewer(world).animate(np.zeros((4, 6)), 0.01)
    # Trajectory files: a model/trajectory mismatch, a wrong version, a dangling track.
    ref = {"format": "stiction-trajectory", "version": 1, "model": json.loads(model.to_json()), "dt": 0.1,
           "q": np.zeros((3, 4)).tolist()}
    with pytest.raises(stiction.InputError, match=r"q must have shape \(T, 2\) for model 'cartpole'"):
        viz.load_trajectory(ref)
    with pytest.raises(stiction.InputError, match="unsupported stiction-trajectory version"):
        viz.load_trajectory(dict(ref, version=7))
    with pytest.raises(stiction.InputError, match="not a stiction-trajectory file"):
        viz.load_trajectory({"shapes": []})
    scene = v.animate(np.zeros((3, 2)), 0.1).to_dict(encode=False)
    scene["shapes"][0]["track"] = 5
    with pytest.raises(stiction.InputError, match=r"shapes\[0\].track = 5 but there are 2 tracks"):
        viz.load_trajectory(scene)
    scene = v.to_dict(encode=False)
    scene["poses"][1][0][2] = float("nan")
    with pytest.raises(stiction.InputError, match=r"poses\[1, 0, 2\] is not finite"):
        viz.load_trajectory(scene)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(ref))
    r = subprocess.run([sys.executable, "-m", "stiction.viz", str(bad), "-o", str(tmp_path / "bad.html")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "error: q must have shape" in r.stderr
    assert not (tmp_path / "bad.html").exists()


# -- the browser -------------------------------------------------------------------------
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader",
                  "--enable-unsafe-swiftshader", "--hide-scrollbars", "--mute-audio", "--no-first-run",
                  # No network: every host name fails to resolve (the pages must not need one).
                  "--host-resolver-rules=MAP * ~NOTFOUND"]


def chromium(*args, timeout=120):
    return subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, *args], capture_output=True, text=True, timeout=timeout)


def screenshot(page, t, out):
    r = chromium("--window-size=800,600", "--virtual-time-budget=4000", f"--screenshot={out}",
                 f"{pathlib.Path(page).as_uri()}?t={t}")
    assert out.exists(), r.stderr[-2000:]
    from PIL import Image

    return np.asarray(Image.open(out).convert("RGB")).astype(int)


def coloured(img):
    """Pixels of the bodies: saturated colours (the background, grid and ground are grey)."""
    return (img.max(axis=2) - img.min(axis=2)) > 60


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (scripts/test.sh installs it "
                                             "through apt where it can)")
@pytest.mark.parametrize("name", ["cartpole_swingup", "box_push", "arm_reach"])
def test_screenshots_at_start_and_end(pages, name, tmp_path):
    pytest.importorskip("PIL", reason="Pillow reads the screenshots")
    path, _ = pages[name]
    save = ROOT / "docs" / "img" if os.environ.get("STICTION_SAVE_SCREENSHOTS") else tmp_path
    first = screenshot(path, 0, save / f"viz_{name}_start.png")
    last = screenshot(path, "end", save / f"viz_{name}_end.png")
    body = 600 - 40  # above the control bar
    a, b = coloured(first[:body]), coloured(last[:body])
    # The bodies are drawn: coloured pixels, in the middle of the view.
    for mask in (a, b):
        assert mask.mean() > 0.003
        ys, xs = np.nonzero(mask)
        assert 100 < xs.mean() < 700 and 60 < ys.mean() < 520
    # They moved: the images differ, and where they differ the bodies are (in one image or the other).
    changed = np.abs(first[:body] - last[:body]).max(axis=2) > 40
    assert changed.mean() > 0.002
    assert (changed & (a | b)).sum() > 0.5 * changed.sum()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_screenshot_of_body_frames(tmp_path):
    """The axes triads are drawn: a chain drawn without its skeleton shows nothing but its
    frames' red, green and blue axes, and nothing coloured without them."""
    pytest.importorskip("PIL", reason="Pillow reads the screenshots")
    model = stiction.samples.pendulum_chain(3)
    counts = []
    for frames in (False, True):
        page = tmp_path / f"chain_{frames}.html"
        viz.Viewer(model, skeleton=False, frames=frames).show([0.3, -0.5, 0.8]).save_html(page)
        img = screenshot(page, 0, tmp_path / f"chain_{frames}.png")[:560]
        counts.append([int(((img[..., c] > 150) & (np.delete(img, c, axis=2).max(axis=2) < 110)).sum())
                       for c in range(3)])
    assert counts[0] == [0, 0, 0] and min(counts[1]) > 20, counts


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_screenshots_of_a_soft_body_and_visual_meshes(tmp_path):
    """The soft gripper's page (a soft surface, pads, contacts) and UR5's visual meshes (where
    example-robot-data is installed) are drawn: coloured pixels in the middle of the view."""
    pytest.importorskip("PIL", reason="Pillow reads the screenshots")
    import warnings

    save = ROOT / "docs" / "img" if os.environ.get("STICTION_SAVE_SCREENSHOTS") else tmp_path
    grip = tmp_path / "soft_gripper.html"
    load_example("soft_gripper").main(["--no-plot", "--html", str(grip)])
    shots = [screenshot(grip, 1.19, save / "viz_soft_gripper_end.png")]  # the last state has no contacts
    share = robot_data_dir()
    if share is not None:
        path = os.path.join(share, "example-robot-data", "robots", "ur_description", "urdf", "ur5_robot.urdf")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stiction.LoadWarning)
            model = stiction.Model.from_urdf(path, package_dirs=[share])
        q = model.neutral()
        q[1], q[2] = -1.0, 1.2
        ur5 = tmp_path / "ur5.html"
        viz.Viewer(model, title="UR5 (visual meshes)", frames=True).show(q).save_html(ur5)
        shots.append(screenshot(ur5, 0, save / "viz_ur5_visual.png"))
    for img in shots:
        mask = coloured(img[:560])
        assert mask.mean() > 0.02
        ys, xs = np.nonzero(mask)
        assert 150 < xs.mean() < 650 and 100 < ys.mean() < 460


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_browser_frame_time(tmp_path):
    """The page of a 10 s rollout of 100 particles, posed and rendered frame by frame in the
    browser (software WebGL here): the frame time from performance.now(), written into the title."""
    n, t = 100, np.arange(1001) * 0.01
    start = np.column_stack([np.arange(n) % 10 * 0.2, np.arange(n) // 10 * 0.2, np.full(n, 1.0)])
    Q = start.ravel()[None, :] + np.outer(np.sin(t), np.ones(3 * n)) * 0.1
    world = stiction.World([stiction.StaticGeometry.ground(), stiction.Particles(np.ones(n), 0.05)], dt=0.01)
    page = tmp_path / "particles.html"
    viz.Viewer(world).animate(Q, 0.01).save_html(page)
    # Antialiasing off (?aa=0): software rendering pays 3x for it; a GPU does not.
    r = chromium("--window-size=800,600", "--dump-dom", f"{page.as_uri()}?bench=100&aa=0")
    m = re.search(r"stiction-bench frames=100 mean_ms=([\d.]+) p95_ms=([\d.]+) max_ms=([\d.]+)", r.stdout)
    assert m, r.stderr[-2000:]
    mean, p95, worst = map(float, m.groups())
    print(f"frame time (100 bodies, 800x600, SwiftShader, no antialiasing): mean {mean:.2f} ms, "
          f"p95 {p95:.2f} ms, max {worst:.2f} ms")
    assert 0 < mean < 250  # a sanity bound for a shared CPU; measured 32 ms on 2 cores
