"""Issue #16's speed point, measured side by side: ``aba_derivatives`` on Talos
(``talos_reduced.urdf`` of example-robot-data, free-flyer base: 38 DoF) in stiction and
Pinocchio's ``computeABADerivatives``, both called from Python on the same machine, at the
same state: the base at the origin and at rest, the same random joint positions, velocities
and torques (joints mapped by name).

Run: python python/benchmarks/talos_aba_derivatives.py   (needs ``pip install pin
example-robot-data``). The figures are in docs/benchmarks.md. Fixed-joint merging (issue
#16) is not in yet: stiction runs over every link of the file, welded frames included.
"""

import glob
import os
import sys
import timeit
import warnings

import numpy as np
import pinocchio as pin

import stiction


def main():
    root = glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "cmeel.prefix", "share",
                                  "example-robot-data", "robots"))[0]
    share = os.path.dirname(os.path.dirname(root))
    path = os.path.join(root, "talos_data", "robots", "talos_reduced.urdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = stiction.Model.from_urdf(path, floating_base=True, package_dirs=[share], load_collision_meshes=False)
    pmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    pdata = pmodel.createData()
    print(f"Talos: stiction nv {model.nv}, {model.nbodies} bodies; Pinocchio nv {pmodel.nv}, {pmodel.njoints} joints,"
          f" {pmodel.nframes} frames")
    rng = np.random.default_rng(0)
    q, v, tau = model.neutral(), np.zeros(model.nv), np.zeros(model.nv)
    qp, vp, taup = pin.neutral(pmodel), np.zeros(pmodel.nv), np.zeros(pmodel.nv)
    for j in range(2, pmodel.njoints):  # the joints below the free flyer
        name, joint = pmodel.names[j], pmodel.joints[j]
        x, y, z = rng.uniform(-0.5, 0.5), rng.uniform(-1, 1), rng.uniform(-10, 10)
        q[model.joint_q_index(name)], v[model.joint_v_index(name)], tau[model.joint_v_index(name)] = x, y, z
        qp[joint.idx_q], vp[joint.idx_v], taup[joint.idx_v] = x, y, z
    n = 2000
    t_st = min(timeit.repeat(lambda: model.aba_derivatives(q, v, tau), number=n, repeat=5)) / n
    t_pin = min(timeit.repeat(lambda: pin.computeABADerivatives(pmodel, pdata, qp, vp, taup), number=n, repeat=5)) / n
    print(f"aba_derivatives: stiction {t_st * 1e6:.1f} µs, Pinocchio computeABADerivatives {t_pin * 1e6:.1f} µs,"
          f" ratio {t_st / t_pin:.2f}")


if __name__ == "__main__":
    main()
