import numpy as np
import pytest

import stiction
from stiction import samples


def _models():
    return {
        "pendulum": samples.pendulum_chain(3),
        "arm7": samples.arm7(),
        "humanoid": samples.humanoid(),
        "all_joint_types": samples.all_joint_types(),
        "random_tree": samples.random_tree(12, seed=3),
        "random_floating": samples.random_tree(8, seed=5, floating=True),
    }


MODELS = _models()


@pytest.fixture(params=sorted(MODELS))
def model(request) -> stiction.Model:
    return MODELS[request.param]


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def random_state(model, rng, seed=0):
    q = model.random_configuration(seed)
    v = rng.standard_normal(model.nv)
    return q, v


def ridders(f, h=1e-2, con=1.4, ntab=10, safe=2.0):
    """Derivative at 0 of the vector function ``f`` of a scalar by Ridders' extrapolation
    of central differences (Numerical Recipes §5.7). Returns ``(derivative, error)``."""
    con2 = con * con
    a = [[None] * ntab for _ in range(ntab)]
    a[0][0] = (np.asarray(f(h)) - np.asarray(f(-h))) / (2 * h)
    best, err = a[0][0], np.inf
    for i in range(1, ntab):
        h /= con
        a[0][i] = (np.asarray(f(h)) - np.asarray(f(-h))) / (2 * h)
        fac = con2
        for j in range(1, i + 1):
            a[j][i] = (a[j - 1][i] * fac - a[j - 1][i - 1]) / (fac - 1)
            fac *= con2
            errt = max(np.max(np.abs(a[j][i] - a[j - 1][i])), np.max(np.abs(a[j][i] - a[j - 1][i - 1])))
            if errt <= err:
                best, err = a[j][i], errt
        if np.max(np.abs(a[i][i] - a[i - 1][i - 1])) >= safe * err:
            break
    return np.asarray(best), err


def fd_jacobian(f, n, h=1e-2):
    """The Jacobian of ``f`` at 0 whose column ``i`` is Ridders' derivative of ``eps -> f(i, eps)``."""
    cols = [ridders(lambda eps, i=i: f(i, eps), h)[0] for i in range(n)]
    return np.stack(cols, axis=1)


def assert_jacobian_close(analytic, fd, rel=1e-6, name="", floor=1.0):
    """``max |a - f| <= rel * max(floor, max |f|)`` and the same shape (``floor=0``:
    relative to the block's largest entry)."""
    analytic, fd = np.asarray(analytic), np.asarray(fd)
    assert analytic.shape == fd.shape, (name, analytic.shape, fd.shape)
    scale = max(floor, float(np.max(np.abs(fd), initial=0.0)))
    err = float(np.max(np.abs(analytic - fd), initial=0.0))
    assert err <= rel * scale, f"{name}: max abs error {err:.3e} > {rel:.1e} * {scale:.3e}"
    return err / scale
