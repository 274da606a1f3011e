"""ParamSpec by name: get/set/as_dict/slice, error messages with suggestions, specs
of another model refused; scene files loaded from Python."""

import json
from pathlib import Path

import numpy as np
import pytest

import stiction
from stiction import ParamSpec, Simulator, samples

ARM = samples.arm7()
SCENES = Path(__file__).resolve().parents[2] / "examples" / "scenes"


def _spec():
    return ParamSpec(ARM, ["mass:link3", "com:link3", "damping:joint2", "gravity"])


def test_get_scalars_and_blocks():
    spec = _spec()
    theta = spec.values(ARM)
    mass = spec.get(ARM, "mass:link3")
    assert isinstance(mass, float) and mass == theta[0]
    com = spec.get(ARM, "com:link3")
    assert isinstance(com, np.ndarray) and com.dtype == np.float64 and com.shape == (3,)
    np.testing.assert_array_equal(com, theta[1:4])
    assert spec.get(ARM, "com:link3.y") == theta[2]
    assert spec.get(ARM, "damping:joint2") == theta[4]
    np.testing.assert_array_equal(spec.get(ARM, "gravity"), ARM.gravity)
    assert spec.get(ARM, " gravity.z ") == ARM.gravity[2]
    for name in spec.names:
        assert spec.get(ARM, name) == theta[spec.slice(name)][0]


def test_set_returns_a_new_model_and_keeps_the_rest():
    spec = _spec()
    before = spec.values(ARM)
    heavier = spec.set(ARM, {"mass:link3": 2.5, "com:link3.z": 0.125, "gravity": [0.0, 0.0, -3.0]})
    assert isinstance(heavier, stiction.Model)
    np.testing.assert_array_equal(spec.values(ARM), before)  # immutable input
    after = spec.values(heavier)
    assert after[0] == 2.5 and after[3] == 0.125
    np.testing.assert_array_equal(after[1:3], before[1:3])
    assert after[4] == before[4]
    np.testing.assert_array_equal(heavier.gravity, [0.0, 0.0, -3.0])
    # Equivalent to apply() of the edited θ, and set(as_dict()) round-trips exactly.
    theta = before.copy()
    theta[0], theta[3], theta[5:8] = 2.5, 0.125, [0.0, 0.0, -3.0]
    assert spec.apply(ARM, theta) == heavier
    assert spec.set(ARM, spec.as_dict(ARM)) == ARM
    assert spec.set(ARM, {}) == ARM


def test_as_dict_and_slice():
    spec = _spec()
    d = spec.as_dict(ARM)
    assert list(d) == spec.entries
    assert isinstance(d["mass:link3"], float) and d["com:link3"].shape == (3,)
    assert spec.slice("com:link3") == slice(1, 4, 1)
    assert spec.slice("gravity.x") == slice(5, 6, 1)
    assert "com:link3.x" in spec and "com:link3" in spec and "mass:link1" not in spec


def test_unknown_names_suggest_close_ones():
    spec = _spec()
    with pytest.raises(stiction.InputError, match=r"unknown parameter 'mass:lnik3' \(did you mean 'mass:link3'\?\)"):
        spec.get(ARM, "mass:lnik3")
    with pytest.raises(stiction.InputError, match=r"^unknown parameter 'zzz'; this ParamSpec's blocks are 'mass:link3', 'com:link3', 'damping:joint2', 'gravity'$"):
        spec.get(ARM, "zzz")
    # A valid name of the model that the spec lacks says how to add it.
    with pytest.raises(stiction.InputError, match=r"'mass:link4' of model 'arm7' is not in this ParamSpec.*ParamSpec\(model"):
        spec.set(ARM, {"mass:link4": 1.0})
    with pytest.raises(stiction.InputError, match=r"did you mean 'com:link3'"):
        spec.slice("com:link33")
    # The constructor (and every params= argument) suggests from the model's names.
    with pytest.raises(stiction.InputError, match=r"no link named 'lnik3'.*did you mean 'mass:link3'\?.*available"):
        ParamSpec(ARM, ["gravity", "mass:lnik3"])
    with pytest.raises(stiction.InputError, match=r"did you mean 'damping:joint2'"):
        Simulator(ARM, params=["dampin:joint2"])
    with pytest.raises(stiction.InputError, match="ParamSpec.available"):
        ParamSpec(ARM, ["completely_unrelated"])


def test_bad_values():
    spec = _spec()
    with pytest.raises(stiction.InputError, match=r"'com:link3' takes an array of shape \(3,\), got shape \(2,\)"):
        spec.set(ARM, {"com:link3": [1.0, 2.0]})
    with pytest.raises(stiction.InputError, match=r"'mass:link3' takes a number"):
        spec.set(ARM, {"mass:link3": [1.0, 2.0]})
    with pytest.raises(stiction.InputError, match="not finite"):
        spec.set(ARM, {"gravity.z": float("nan")})
    with pytest.raises(stiction.InputError, match="booleans"):
        spec.set(ARM, {"mass:link3": True})
    with pytest.raises(stiction.InputError, match="must be a dict"):
        spec.set(ARM, [("mass:link3", 1.0)])
    with pytest.raises(stiction.InputError, match="names must be strings"):
        spec.set(ARM, {3: 1.0})
    with pytest.raises(stiction.InputError, match="negative"):
        spec.set(ARM, {"mass:link3": -1.0})


def test_spec_of_another_model_is_refused():
    pend, cart = samples.pendulum_chain(2), samples.cartpole()  # two bodies each, other names
    spec = ParamSpec(pend, ["mass:link1", "gravity"])
    with pytest.raises(stiction.InputError, match=r"was made for another model: on model 'cartpole' .*'mass:pole'"):
        spec.values(cart)
    with pytest.raises(stiction.InputError, match="was made for another model"):
        Simulator(cart, params=spec)
    with pytest.raises(stiction.InputError, match="was made for another model"):
        spec.set(cart, {"gravity.z": -1.0})
    # The same tree with other values is fine.
    heavier = ParamSpec(ARM, ["mass:link2"]).set(ARM, {"mass:link2": 3.0})
    assert ParamSpec(ARM, ["mass:link2"]).get(heavier, "mass:link2") == 3.0


def test_load_scene_examples():
    for path in sorted(SCENES.glob("*.json")):
        scene = stiction.load_scene(path)
        raw = json.loads(path.read_text())
        if "soft" in raw:  # soft-body scenes: tests/test_soft_scenes.py
            assert scene["kind"] == "soft"
            continue
        assert scene["kind"] == "rigid"
        model, sim, spec = scene["model"], scene["simulator"], scene["params"]
        assert isinstance(model, stiction.Model) and isinstance(sim, Simulator)
        assert spec.entries == raw["params"] and sim.params == spec
        assert scene["dt"] == raw["options"]["dt"] == sim.dt
        assert scene["tolerance"] == raw["tolerance"]
        assert scene["description"] == raw["description"]
        if "state" in raw:
            np.testing.assert_array_equal(scene["q"], raw["state"]["q"])
            np.testing.assert_array_equal(scene["v"], raw["state"]["v"])
            np.testing.assert_array_equal(scene["tau"], raw["control"]["tau"])
            q1, v1, rec = sim.step(scene["q"], scene["v"], scene["tau"], record=True)
            assert rec.nparams == len(spec)
            report = stiction.gradcheck(model, scene["q"], scene["v"], scene["tau"], params=spec, dt=scene["dt"])
            assert report.passed, str(report)
        else:
            assert scene["q"] is None and scene["tau"] is None


def test_load_scene_errors(tmp_path):
    with pytest.raises(stiction.InputError, match="cannot read scene"):
        stiction.load_scene(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"sample": "arm7", "params": ["mass:nope"]}')
    with pytest.raises(stiction.InputError, match="no link named 'nope'"):
        stiction.load_scene(bad)
    bad.write_text('{"sample": "arm7", "bogus": 1}')
    with pytest.raises(stiction.InputError, match="bogus"):
        stiction.load_scene(str(bad))
    bad.write_text('{"urdf": "nowhere.urdf"}')
    with pytest.raises(stiction.LoadError, match="nowhere.urdf"):
        stiction.load_scene(bad)
