"""stiction.sysid: Levenberg–Marquardt system identification from Python."""

import numpy as np
import pytest

import stiction
from stiction import InputError, sysid


def true_model(masses=(1.3, 1.3)):
    """The guess model with the link masses set to ``masses`` (rotational inertias about the
    centres of mass kept, as ``ParamSpec.apply`` does)."""
    base = stiction.samples.pendulum_chain(2, mass=1.0)
    return stiction.ParamSpec(base, ["mass:link0", "mass:link1"]).apply(base, list(masses))


def data(masses=(1.3, 1.3), noise=0.0, seed=0):
    sim = stiction.Simulator(true_model(masses), dt=0.01, contact=False)
    t = np.arange(150)
    taus = np.column_stack([2.0 * np.sin(t * 0.1), 1.5 * np.cos(t * 0.07)])
    q, v = sim.rollout([0.3, -0.2], [0.0, 0.0], taus)
    q = q + noise * np.random.default_rng(seed).standard_normal(q.shape)
    return dict(q0=[0.3, -0.2], v0=[0.0, 0.0], controls=taus, q=q, sigma_q=max(noise, 1e-3))


def guess_sim():
    return stiction.Simulator(stiction.samples.pendulum_chain(2, mass=1.0), dt=0.01, contact=False)


@pytest.mark.parametrize("jacobians", ["analytic", "finite_difference"])
def test_recovers_link_masses(jacobians):
    seen = []
    r = sysid.fit(guess_sim(), ["mass:link0", "mass:link1"], [data()], jacobians=jacobians, callback=seen.append)
    np.testing.assert_allclose(r["theta"], [1.3, 1.3], rtol=1e-6)
    assert r["converged"] and r["iterations"] == len(seen) and r["rank"] == 2
    assert r["names"] == ["mass:link0", "mass:link1"] and "mass:link0" in r["report"]
    np.testing.assert_allclose(r["theta_initial"], [1.0, 1.0])
    assert r["cost"] < 1e-12 * r["initial_cost"]
    assert isinstance(r["model"], stiction.Model)


def test_noisy_fit_reports_uncertainty():
    r = sysid.fit(guess_sim(), ["mass:link0", "mass:link1"], [data(noise=1e-3)])
    err = np.abs(r["theta"] - 1.3)
    assert np.all(err < 0.05 * 1.3)
    # The error is within a few reported standard deviations, and those are not absurd.
    assert np.all(err < 5.0 * r["std_dev"]) and np.all(r["std_dev"] < 0.05)
    assert r["covariance"].shape == (2, 2) and r["correlation"].shape == (2, 2)
    assert 0.5 < r["residual_variance"] < 2.0


def test_bounds_and_velocity_observations():
    # Only link0 differs (1.3 against the guess's 1.0); an upper bound of 1.1 holds it.
    d = data(masses=(1.3, 1.0))
    sim = stiction.Simulator(true_model((1.3, 1.0)), dt=0.01, contact=False)
    _, v = sim.rollout(d["q0"], d["v0"], d["controls"])
    d.update(v=v, sigma_v=1e-2, steps=list(range(1, 151)))
    r = sysid.fit(guess_sim(), ["mass:link0"], [d], upper=[1.1])
    assert r["theta"][0] == pytest.approx(1.1) and r["at_bound"] == [True]


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda d: d.pop("q0"), "needs 'q0'"),
        (lambda d: d.update(bogus=1), "unknown key 'bogus'"),
        (lambda d: d.update(controls=np.zeros((150, 3))), "controls"),
        (lambda d: d.update(q=np.zeros((10, 2)), steps=[1, 2]), "steps"),
        (lambda d: d.update(steps=list(range(1000, 1150))), "step"),
        (lambda d: d.update(sigma_q=0.0), "σ"),
        (lambda d: d.update(q0=[np.nan, 0.0]), "not finite"),
    ],
)
def test_bad_input_raises(mutate, match):
    d = data()
    mutate(d)
    with pytest.raises(InputError, match=match):
        sysid.fit(guess_sim(), ["mass:link0"], [d])


def test_bad_names_and_options_raise():
    with pytest.raises(InputError, match="nope"):
        sysid.fit(guess_sim(), ["mass:nope"], [data()])
    with pytest.raises(InputError, match="jacobians"):
        sysid.fit(guess_sim(), ["mass:link0"], [data()], jacobians="magic")
    with pytest.raises(InputError, match="list"):
        sysid.fit(guess_sim(), ["mass:link0"], data())
