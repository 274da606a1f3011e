//! `stiction.gpu`'s native half: whether the GPU conjugate-residual solver can run
//! (docs/gpu.md). The Python module `stiction/gpu.py` preloads NVRTC from the pip package
//! before asking.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `(True, info)` with the device's `name`, `compute_capability` `(major, minor)`,
/// `memory_bytes` and `nvrtc_version` `(major, minor)`, or `(False, reason)` naming what
/// is missing (no driver, no device, NVRTC missing). Never raises for a missing GPU.
#[pyfunction]
pub fn _gpu_available(py: Python<'_>) -> PyResult<(bool, Py<PyAny>)> {
    match py.detach(stiction::gpu::available) {
        Ok(info) => {
            let d = PyDict::new(py);
            d.set_item("name", info.name)?;
            d.set_item("compute_capability", info.compute_capability)?;
            d.set_item("memory_bytes", info.memory_bytes)?;
            d.set_item("nvrtc_version", info.nvrtc_version)?;
            Ok((true, d.into_any().unbind()))
        }
        Err(e) => Ok((false, e.to_string().into_pyobject(py)?.into_any().unbind())),
    }
}
