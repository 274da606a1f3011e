//! The Python exception hierarchy and the mapping from Rust errors.
//!
//! ```text
//! StictionError(Exception)
//! ├── ModelError        invalid model (builder, JSON, URDF contents, soft-body meshes and materials)
//! ├── LoadError         unreadable or malformed model files
//! ├── NumericalError    singular matrices, non-finite results
//! └── InputError        also a ValueError: wrong lengths, NaN, unknown names
//! ```

use pyo3::exceptions::{PyException, PyUserWarning};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use stiction::Error;

pyo3::create_exception!(stiction, StictionError, PyException, "Base class of every error raised by stiction.");
pyo3::create_exception!(
    stiction,
    ModelError,
    StictionError,
    "The model is invalid (negative mass, zero joint axis, disconnected tree, ...)."
);
pyo3::create_exception!(
    stiction,
    LoadError,
    StictionError,
    "A model file could not be read or parsed (missing file, malformed URDF, bad mesh)."
);
pyo3::create_exception!(
    stiction,
    NumericalError,
    StictionError,
    "A numerical failure: a singular inertia or a non-finite result."
);
pyo3::create_exception!(
    stiction,
    LoadWarning,
    PyUserWarning,
    "Something in a model file was ignored or approximated while loading it."
);

static INPUT_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `stiction.InputError`, a subclass of both `StictionError` and `ValueError`
/// (built with `type()` since `create_exception!` takes a single base).
pub fn input_error_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    INPUT_ERROR
        .get_or_try_init(py, || {
            let bases =
                PyTuple::new(py, [py.get_type::<StictionError>(), py.get_type::<pyo3::exceptions::PyValueError>()])?;
            let dict = PyDict::new(py);
            dict.set_item("__module__", "stiction")?;
            dict.set_item(
                "__doc__",
                "An argument is invalid: wrong length or shape, NaN or infinity, an unknown name. \
                 Subclass of both StictionError and ValueError.",
            )?;
            let ty = py.get_type::<PyType>().call1(("InputError", bases, dict))?;
            Ok::<_, PyErr>(ty.cast_into::<PyType>()?.unbind())
        })
        .map(|t| t.bind(py))
}

/// A `stiction.InputError` with `msg`.
pub fn input_error(msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    Python::attach(|py| match input_error_type(py) {
        Ok(ty) => PyErr::from_type(ty.clone(), (msg,)),
        Err(e) => e,
    })
}

/// Maps a Rust error to its Python exception; the message is the Rust message.
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    // The class is that of the underlying error; the message keeps the context (e.g. the step).
    match e.root() {
        Error::Model(_) | Error::Soft(_) => ModelError::new_err(msg),
        Error::Load(_) => LoadError::new_err(msg),
        Error::Numerical { .. } | Error::Diverged { .. } | Error::Gpu(_) => NumericalError::new_err(msg),
        Error::Dimension { .. } | Error::NonFinite { .. } | Error::InvalidInput(_) | Error::Serde(_) => {
            input_error(msg)
        }
        // Not returned by `root`; kept for an exhaustive match.
        Error::AtStep { .. } | Error::InSystem { .. } => input_error(msg),
    }
}

/// Maps a model-validation error to `stiction.ModelError`.
pub fn model_err(e: stiction::ModelError) -> PyErr {
    ModelError::new_err(e.to_string())
}

/// Maps a loading error to `stiction.LoadError`.
pub fn load_err(e: stiction::LoadError) -> PyErr {
    LoadError::new_err(e.to_string())
}

/// Extension trait: `result.py()?` converts a stiction error.
pub trait IntoPyResult<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
