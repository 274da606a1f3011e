"""Issue #16's speed point, measured side by side: ``aba_derivatives`` in stiction against
Pinocchio's ``computeABADerivatives``, both called from Python in one run on the same
machine, over robots of growing size from example-robot-data — the UR5 (6 DoF, fixed
base), Solo12 (18, free flyer), G1 (35, free flyer) and Talos (``talos_reduced.urdf``, 38,
free flyer; the issue's target) — each at one state shared by both: the base at the
origin and at rest, the same random joint positions, velocities and torques (joints
mapped by name).

Run: python python/benchmarks/aba_derivatives_vs_pinocchio.py   (needs ``pip install pin
example-robot-data``). The figures are in docs/benchmarks.md. stiction loads each file with
its defaults: links welded by fixed joints are merged into their bodies (Pinocchio's joints and
stiction's bodies then match in number, the fixed base's root link aside).
"""

import glob
import os
import sys
import timeit
import warnings

import numpy as np
import pinocchio as pin

import stiction

ROBOTS = [
    ("UR5", "ur_description/urdf/ur5_robot.urdf", False),
    ("Solo12", "solo_description/robots/solo12.urdf", True),
    ("G1", "g1_description/urdf/g1_29dof_rev_1_0.urdf", True),
    ("Talos", "talos_data/robots/talos_reduced.urdf", True),
]


def measure(root, share, rel, floating):
    path = os.path.join(root, rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = stiction.Model.from_urdf(path, floating_base=floating, package_dirs=[share],
                                         load_collision_meshes=False)
    pmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    pdata = pmodel.createData()
    rng = np.random.default_rng(0)
    q, v, tau = model.neutral(), np.zeros(model.nv), np.zeros(model.nv)
    qp, vp, taup = pin.neutral(pmodel), np.zeros(pmodel.nv), np.zeros(pmodel.nv)
    for j in range(2 if floating else 1, pmodel.njoints):  # the joints below any free flyer
        name, joint = pmodel.names[j], pmodel.joints[j]
        x, y, z = rng.uniform(-0.5, 0.5), rng.uniform(-1, 1), rng.uniform(-10, 10)
        if joint.nq != 1:
            continue  # (continuous joints: Pinocchio's (cos, sin); left at zero in both)
        q[model.joint_q_index(name)], v[model.joint_v_index(name)], tau[model.joint_v_index(name)] = x, y, z
        qp[joint.idx_q], vp[joint.idx_v], taup[joint.idx_v] = x, y, z
    n = 2000
    t_st = min(timeit.repeat(lambda: model.aba_derivatives(q, v, tau), number=n, repeat=5)) / n
    t_pin = min(timeit.repeat(lambda: pin.computeABADerivatives(pmodel, pdata, qp, vp, taup), number=n, repeat=5)) / n
    return model.nv, model.nbodies, pmodel.njoints - 1, t_st, t_pin


def main():
    root = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "cmeel.prefix", "share",
                                  "example-robot-data", "robots"))[0]
    share = os.path.dirname(os.path.dirname(root))
    print("| robot | nv | stiction bodies | Pinocchio joints | stiction µs | Pinocchio µs | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, rel, floating in ROBOTS:
        nv, nb, nj, t_st, t_pin = measure(root, share, rel, floating)
        print(f"| {name} | {nv} | {nb} | {nj} | {t_st * 1e6:.1f} | {t_pin * 1e6:.1f} | {t_st / t_pin:.2f} |")


if __name__ == "__main__":
    main()
