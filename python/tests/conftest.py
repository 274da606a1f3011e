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
