"""Whether stiction's GPU conjugate-residual solver can run here (``docs/gpu.md``).

The solver needs an NVIDIA driver, a CUDA device and NVRTC 13 (``pip install
nvidia-cuda-nvrtc``). Importing this module (``import stiction`` does) preloads NVRTC from
that pip package when it is installed, so that the engine finds it without
``LD_LIBRARY_PATH``.

>>> import stiction
>>> ok = stiction.gpu.available()
>>> ok or isinstance(stiction.gpu.reason(), str)
True

Without a GPU, the options that ask for it (``contact={"solver": "ncp", "ncp":
{"linear_solver": "pcr_gpu"}}``, ``SoftBody.step(..., linear_solver="pcr_gpu")``) solve
on the CPU instead and count it (``Simulator.stats["gpu_fallbacks"]``, the soft step
report's ``gpu_fallbacks``).
"""

import ctypes
import os
import site

from ._stiction import NumericalError, _gpu_available

__all__ = ["available", "reason", "info"]

#: Where the pip package ``nvidia-cuda-nvrtc`` (CUDA 13) puts NVRTC, under site-packages.
NVRTC = os.path.join("nvidia", "cu13", "lib", "libnvrtc.so.13")

_preloaded = None


def _site_dirs():
    dirs = []
    try:
        dirs.extend(site.getsitepackages())
    except AttributeError:  # some virtualenv builds lack it
        pass
    try:
        dirs.append(site.getusersitepackages())
    except AttributeError:
        pass
    return dirs


def _preload_nvrtc():
    """Loads NVRTC from the pip package, globally (the engine's later ``dlopen`` of
    ``libnvrtc.so.13`` then finds it by its soname). Returns the path loaded, or None
    when the package is absent or the library cannot be loaded (the engine then looks on
    the library path, and ``reason()`` says what is missing)."""
    global _preloaded
    if _preloaded is not None:
        return _preloaded or None
    _preloaded = ""
    for d in _site_dirs():
        path = os.path.join(d, NVRTC)
        if os.path.exists(path):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue
            _preloaded = path
            break
    return _preloaded or None


_preload_nvrtc()


def _query():
    _preload_nvrtc()
    return _gpu_available()


def available() -> bool:
    """True when the GPU solver can run: an NVIDIA driver, a CUDA device and NVRTC."""
    return _query()[0]


def reason():
    """Why the GPU solver cannot run (no driver, no device, NVRTC missing), or None
    when it can."""
    ok, what = _query()
    return None if ok else what


def info() -> dict:
    """The device: ``name``, ``compute_capability`` ``(major, minor)``, ``memory_bytes``
    and ``nvrtc_version`` ``(major, minor)``.

    :raises NumericalError: no GPU is available (the message says why), as the engine's
        GPU errors do.
    """
    ok, what = _query()
    if not ok:
        raise NumericalError(what)
    return dict(what)
