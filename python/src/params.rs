//! `stiction.ParamSpec`: the differentiable parameters θ of a model.

use crate::convert::{dvector, out_vec};
use crate::errors::{input_error, IntoPyResult};
use crate::model::PyModel;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyString;
use stiction::model::ParamSpec;
use stiction::Model;

/// Names the differentiable parameters θ of a model and maps them to and from a
/// vector. Names: `"mass:LINK"`, `"com:LINK"`, `"inertia:LINK"`, `"damping:JOINT"`,
/// `"stiffness:JOINT"`, `"rest:JOINT"`, `"armature:JOINT"`, `"placement:JOINT"`,
/// `"gravity"`, `"friction:LINK"`, `"restitution:LINK"` (the material of the link's
/// collision shapes; `LINK = "world"` for world shapes); blocks are laid out in θ in the
/// order given.
#[pyclass(name = "ParamSpec", module = "stiction", frozen)]
#[derive(Clone)]
pub struct PyParamSpec {
    pub spec: ParamSpec,
    /// The block names, as given to `parse`.
    entries: Vec<String>,
    /// One name per scalar of θ.
    names: Vec<String>,
}

impl PyParamSpec {
    /// Wraps `spec`, naming it after `model` (which it must fit).
    pub fn wrap(spec: ParamSpec, model: &Model) -> PyResult<Self> {
        spec.check_model(model).py_err()?;
        let entries = spec.entry_names(model);
        let names = spec.names(model);
        Ok(Self { spec, entries, names })
    }

    fn fitting(&self, model: &Model) -> PyResult<()> {
        self.spec.check_model(model).py_err()
    }
}

/// The θ of an optional `params` argument: `None` (no parameters), a `ParamSpec`
/// (checked against `model`), one name or a sequence of names (parsed on `model`).
pub fn params_arg(obj: Option<&Bound<'_, PyAny>>, model: &Model) -> PyResult<ParamSpec> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(ParamSpec::new()) };
    if let Ok(spec) = obj.cast::<PyParamSpec>() {
        let spec = spec.get();
        spec.fitting(model)?;
        return Ok(spec.spec.clone());
    }
    let names: Vec<String> = if let Ok(s) = obj.cast::<PyString>() {
        vec![s.extract::<String>()?]
    } else {
        obj.extract().map_err(|_| input_error("params must be a ParamSpec, a list of parameter names or None"))?
    };
    ParamSpec::parse(model, &names).py_err()
}

#[pymethods]
impl PyParamSpec {
    /// Parses parameter names on `model` (see `ParamSpec.available(model)` for the valid
    /// ones). Raises `InputError` for an unknown kind, link or joint, or a repeated name.
    #[new]
    fn py_new(model: &PyModel, names: &Bound<'_, PyAny>) -> PyResult<Self> {
        let spec = params_arg(Some(names), &model.model)?;
        Self::wrap(spec, &model.model)
    }

    /// Every differentiable parameter of `model` (the names of `ParamSpec.available`).
    #[staticmethod]
    fn all(model: &PyModel) -> PyResult<Self> {
        Self::wrap(ParamSpec::all(&model.model).py_err()?, &model.model)
    }

    /// The names of every parameter of `model` that the constructor accepts.
    #[staticmethod]
    fn available(model: &PyModel) -> Vec<String> {
        ParamSpec::all_names(&model.model)
    }

    /// One name per scalar of θ (e.g. `"mass:link3"`, `"com:link3.y"`, `"gravity.z"`).
    #[getter]
    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    /// The block names, as given to the constructor (e.g. `"com:link3"`).
    #[getter]
    fn entries(&self) -> Vec<String> {
        self.entries.clone()
    }

    /// The current values of θ in `model`, shape (len(spec),).
    fn values<'py>(&self, py: Python<'py>, model: &PyModel) -> PyResult<Bound<'py, PyArray1<f64>>> {
        self.fitting(&model.model)?;
        Ok(out_vec(py, self.spec.values(&model.model).as_slice()))
    }

    /// A copy of `model` with θ set to `theta` (validated like a built model: e.g. a
    /// negative mass raises `ModelError`/`InputError`).
    fn apply(&self, py: Python<'_>, model: &PyModel, theta: &Bound<'_, PyAny>) -> PyResult<PyModel> {
        let theta = dvector(theta, "theta", self.spec.len(), "len(spec)")?;
        let m = &model.model;
        let out = py.detach(|| self.spec.apply(m, &theta)).py_err()?;
        Ok(PyModel::new(out))
    }

    fn __len__(&self) -> usize {
        self.spec.len()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyParamSpec>().is_ok_and(|o| o.get().spec == self.spec && o.get().entries == self.entries)
    }

    fn __repr__(&self) -> String {
        format!("ParamSpec({:?})", self.entries)
    }
}
