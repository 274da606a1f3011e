"""Every URDF of ``example-robot-data`` against Pinocchio (issue #16): each file Pinocchio
loads, stiction loads (or refuses for undefined physics, by the loading policy of
docs/models.md), with the same number of degrees of freedom, and the same joint-space
mass matrix and inverse dynamics to 1e-8 relative at five random configurations.

Where the loader changed an inertia (a repair it warned about), Pinocchio is built on
the URDF with stiction's corrected inertias written in, so both see the same links.

Needs ``pip install pin example-robot-data`` (``scripts/test.sh`` installs them); skipped
without them."""

import glob
import json
import os
import re
import sys
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import stiction

pin = pytest.importorskip("pinocchio")


def robots_dir():
    hits = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "cmeel.prefix", "share",
                                  "example-robot-data", "robots"))
    return hits[0] if hits else None


ROOT = robots_dir()
FILES = sorted(glob.glob(os.path.join(ROOT, "**", "*.urdf"), recursive=True)) if ROOT else []

# Files stiction refuses by its loading policy (undefined physics: a moving link whose
# subtree has no mass, so the joint-space inertia is singular), with the link it names.
REFUSED = {
    "romeo_description/urdf/romeo.urdf": "LFinger11Link",
    "romeo_description/urdf/romeo_laas_small.urdf": "l_gripper",
}

# Warnings of a changed inertia, and the link they name.
CHANGED = re.compile(r"(?:inertia of link '([^']+)'|link '([^']+)' has (?:mass|no mass))")

REL_TOL = 1e-8

INERTIA_ENTRIES = {"ixx": (0, 0), "ixy": (0, 1), "ixz": (0, 2), "iyy": (1, 1), "iyz": (1, 2), "izz": (2, 2)}


def corrected_urdf(path, model, changed):
    """The URDF text with the inertials of the links in ``changed`` replaced by stiction's
    (mass, centre of mass and rotational inertia about it, in the link frame)."""
    tree = ET.parse(path)
    links = {link["name"]: link for link in json.loads(model.to_json())["links"]}
    for element in tree.getroot().iter("link"):
        name = element.get("name")
        if name not in changed:
            continue
        inertia = links[name]["inertia"]
        m = inertia["mass"]
        h = np.array(inertia["h"])
        rot_o = np.array(inertia["rot"]).reshape(3, 3)
        c = h / m if m > 0 else np.zeros(3)
        # Additive form about the link origin: I_O = I_C − m [c]×[c]×.
        rot_c = rot_o + m * (np.outer(c, c) - c.dot(c) * np.eye(3)) if m > 0 else np.zeros((3, 3))
        for old in element.findall("inertial"):
            element.remove(old)
        inertial = ET.SubElement(element, "inertial")
        ET.SubElement(inertial, "origin", xyz=" ".join(repr(float(x)) for x in c), rpy="0 0 0")
        ET.SubElement(inertial, "mass", value=repr(float(m)))
        ET.SubElement(inertial, "inertia", **{k: repr(float(rot_c[i, j])) for k, (i, j) in INERTIA_ENTRIES.items()})
    return ET.tostring(tree.getroot(), encoding="unicode")


def configuration_map(model, pmodel):
    """``(q_to_pin, perm)``: a function mapping a stiction configuration to Pinocchio's,
    and the stiction velocity index of each Pinocchio velocity index."""
    perm = np.zeros(pmodel.nv, dtype=int)
    parts = []
    for j in range(1, pmodel.njoints):
        name, joint = pmodel.names[j], pmodel.joints[j]
        qi, vi = model.joint_q_index(name), model.joint_v_index(name)
        perm[joint.idx_v:joint.idx_v + joint.nv] = np.arange(vi, vi + joint.nv)
        if joint.nq == joint.nv:
            parts.append((joint.idx_q, joint.nq, lambda q, qi=qi, n=joint.nq: q[qi:qi + n]))
        elif joint.nq == 2 and joint.nv == 1:  # continuous: (cos θ, sin θ)
            parts.append((joint.idx_q, 2, lambda q, qi=qi: np.array([np.cos(q[qi]), np.sin(q[qi])])))
        else:
            pytest.fail(f"joint '{name}' ({joint.shortname()}) has no configuration map here: add one")

    def q_to_pin(q):
        out = np.zeros(pmodel.nq)
        for start, n, f in parts:
            out[start:start + n] = f(q)
        return out

    return q_to_pin, perm


def rel(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12)


@pytest.mark.skipif(not FILES, reason="example-robot-data is not installed (pip install example-robot-data)")
@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, ROOT))
def test_robot_matches_pinocchio(path):
    name = os.path.relpath(path, ROOT)
    share = os.path.dirname(os.path.dirname(ROOT))
    try:
        pin.buildModelFromUrdf(path)
    except Exception:  # noqa: BLE001 - no oracle for a file Pinocchio cannot load (ur3: no robot name)
        # Nothing to compare with; stiction must still load it or refuse it with a typed error.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                stiction.Model.from_urdf(path, package_dirs=[share], load_collision_meshes=False)
            except stiction.LoadError as e:
                assert name in str(e) or os.path.basename(path) in str(e), str(e)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = stiction.Model.from_urdf(path, package_dirs=[share], load_collision_meshes=False)
        except stiction.LoadError as e:
            assert name in REFUSED, f"stiction refuses {name}: {e}"
            assert "moving subtree needs positive mass" in str(e) and REFUSED[name] in str(e), str(e)
            return
    assert name not in REFUSED, f"{name} now loads: update REFUSED"
    changed = set()
    for w in caught:
        for match in CHANGED.finditer(str(w.message)):
            changed.add(match.group(1) or match.group(2))
    pmodel = pin.buildModelFromXML(corrected_urdf(path, model, changed)) if changed else pin.buildModelFromUrdf(path)
    assert model.nv == pmodel.nv, f"nv {model.nv} vs Pinocchio's {pmodel.nv}"
    if model.nv == 0:  # a single rigid body welded to the world (quadrotor descriptions)
        return
    pdata = pmodel.createData()
    q_to_pin, perm = configuration_map(model, pmodel)
    rng = np.random.default_rng(0)
    for seed in range(5):
        q = model.random_configuration(seed)
        v = rng.uniform(-1, 1, model.nv)
        a = rng.uniform(-1, 1, model.nv)
        qp = q_to_pin(q)
        m_pin = pin.crba(pmodel, pdata, qp)
        m_pin = np.triu(m_pin) + np.triu(m_pin, 1).T
        m_st = model.mass_matrix(q)[np.ix_(perm, perm)]
        assert rel(m_st, m_pin) < REL_TOL, f"mass matrix at seed {seed}: {rel(m_st, m_pin):.1e}"
        tau_pin = pin.rnea(pmodel, pdata, qp, v[perm], a[perm])
        tau_st = model.inverse_dynamics(q, v, a)[perm]
        assert rel(tau_st, tau_pin) < REL_TOL, f"inverse dynamics at seed {seed}: {rel(tau_st, tau_pin):.1e}"
    # Every link is addressable by name (fixed links are merged into their bodies by
    # default): at Pinocchio's frame pose, and with its frame Jacobian for merged links.
    q = model.random_configuration(7)
    qp = q_to_pin(q)
    pin.computeJointJacobians(pmodel, pdata, qp)
    pin.updateFramePlacements(pmodel, pdata)
    frames, bodies, checked = set(model.frame_names), set(model.body_names), 0
    for fid, frame in enumerate(pmodel.frames):
        if frame.type != pin.FrameType.BODY or frame.name == "world":
            continue
        assert frame.name in frames, f"link '{frame.name}' is not a frame of the loaded model"
        pose = model.frame_pose(q, frame.name)
        assert np.max(np.abs(pose - pdata.oMf[fid].homogeneous)) < 1e-9, f"pose of '{frame.name}'"
        if frame.name not in bodies and checked < 3:
            checked += 1
            jac = model.body_jacobian(q, frame.name, "local")[:, perm]
            jac_pin = pin.getFrameJacobian(pmodel, pdata, fid, pin.LOCAL)
            jac_pin = np.vstack([jac_pin[3:], jac_pin[:3]])  # Pinocchio: [linear; angular]
            assert rel(jac, jac_pin) < REL_TOL, f"Jacobian of merged link '{frame.name}'"
