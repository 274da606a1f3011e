#!/usr/bin/env bash
# Full check: formatting, lints, Rust tests, Python extension build and pytest.
# Run from anywhere; works on a fresh clone with a Rust toolchain and python3 (>= 3.9).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
# The venv can live outside the clone (STICTION_VENV=/path) so that repeated runs on one
# machine reuse it; torch alone is a multi-GB install (PyPI's Linux wheel pulls the CUDA
# libraries even on machines without a GPU). pip's own cache (~/.cache/pip) also persists.
VENV="${STICTION_VENV:-$ROOT/.venv}"
PYTHON_BIN="${PYTHON:-python3}"
START=$SECONDS

banner() {
    printf '\n==> [%ds] %s\n' "$((SECONDS - START))" "$*"
}

banner "python environment ($VENV)"
if [[ ! -x "$VENV/bin/python" ]]; then
    "$PYTHON_BIN" -m venv "$VENV"
fi
# torch and jax are optional for users; the suite installs them so the stiction.torch and
# stiction.jax tests run (they skip, with a reason, only where the packages are missing).
# matplotlib draws the examples' plots. pin (Pinocchio) and example-robot-data are the
# oracle and the robots of python/tests/test_robots_pinocchio.py (every URDF of the package
# against Pinocchio's mass matrix and inverse dynamics); mujoco the oracle of
# python/tests/test_mjcf_mujoco.py, and gymnasium its MJCF models from the MuJoCo ecosystem
# (the XML files its MuJoCo environments ship; gymnasium itself is not imported).
# meshcat ships the three.js viewer bundle that stiction.viz inlines into its pages.
# ray runs python/tests/test_distributed.py (a local cluster of two worker processes), tqdm
# its progress bars; ray is pinned to a release with a CPython 3.11 wheel for Linux x86_64.
# nvidia-cuda-nvrtc (CUDA 13's NVRTC, also a dependency of torch) compiles the CUDA kernels
# of stiction::gpu to PTX in tests/gpu.rs: no GPU is needed for that.
if ! "$VENV/bin/python" -c "import maturin, numpy, pytest, scipy, matplotlib, torch, jax, pinocchio, mujoco, gymnasium, PIL, ray, tqdm; import importlib.util as u; assert u.find_spec('meshcat')" >/dev/null 2>&1 \
    || ! compgen -G "$VENV/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13" >/dev/null \
    || [[ ! -x "$VENV/bin/maturin" ]] \
    || ! compgen -G "$VENV/lib/python3*/site-packages/cmeel.prefix/share/example-robot-data/robots" >/dev/null; then
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
        "maturin>=1.16,<2" numpy pytest scipy matplotlib torch jax pin example-robot-data mujoco gymnasium meshcat \
        "ray==2.60.0" tqdm "nvidia-cuda-nvrtc>=13,<14"
fi

# Debian's chromium takes the screenshots of python/tests/test_viz.py (headless, software WebGL);
# where it cannot be installed (not root, no apt) those tests skip with a reason.
if ! command -v chromium >/dev/null 2>&1; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        banner "apt-get install chromium (for the stiction.viz screenshot tests)"
        (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium) \
            || echo "chromium could not be installed: the stiction.viz screenshot tests will skip"
    else
        echo "chromium is not installed: the stiction.viz screenshot tests will skip"
    fi
fi
"$VENV/bin/python" --version
"$VENV/bin/maturin" --version

# Build the Python crate against the venv interpreter in every stage, so cargo
# does not rebuild pyo3 between `cargo test` and `maturin develop`.
export PYO3_PYTHON="$VENV/bin/python"

banner "module import graph (scripts/module_cycles.py)"
"$PYTHON_BIN" scripts/module_cycles.py

banner "cargo fmt --all -- --check"
cargo fmt --all -- --check

banner "cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

banner "cargo doc --no-deps -p stiction (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p stiction

# NVRTC for tests/gpu.rs (the kernels must compile: STICTION_REQUIRE_NVRTC=1); the tests
# that need a device skip with a printed reason (scripts/gpu_check.sh runs them on a GPU).
NVRTC_DIR="$(compgen -G "$VENV/lib/python3*/site-packages/nvidia/cu13/lib" | head -1)"
export LD_LIBRARY_PATH="$NVRTC_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export STICTION_REQUIRE_NVRTC=1

# The `ci` profile is the release profile without LTO (Cargo.toml says why): the suite's
# ~80 test and example binaries link in a fifth of the time and run as fast.
banner "cargo test --profile ci --workspace"
cargo test --profile ci --workspace

banner "maturin develop --profile ci -m python/Cargo.toml"
VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" "$VENV/bin/maturin" develop --profile ci -m python/Cargo.toml

banner "pytest python/tests"
"$VENV/bin/python" -m pytest python/tests -q

banner "all checks passed in $((SECONDS - START))s"
