//! `stiction.ParamSpec`: the differentiable parameters θ of a model.

use crate::convert::{array, dvector, out_vec, shape_str, type_name};
use crate::errors::{input_error, IntoPyResult};
use crate::model::PyModel;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PySlice, PyString};
use stiction::model::ParamSpec;
use stiction::Model;

/// Names the differentiable parameters θ of a model and maps them to and from a
/// vector. Names: `"mass:LINK"`, `"com:LINK"`, `"inertia:LINK"`, `"damping:JOINT"`,
/// `"stiffness:JOINT"`, `"rest:JOINT"`, `"armature:JOINT"`, `"placement:JOINT"`,
/// `"gravity"`, `"friction:LINK"`, `"restitution:LINK"` (the material of the link's
/// collision shapes; `LINK = "world"` for world shapes); blocks are laid out in θ in the
/// order given. Values by name: `get`, `set` (a new model), `as_dict`, `slice`. A spec
/// belongs to the model it was made for (or one with the same link and joint names).
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

    /// Checks that this spec fits `model`: same layout, and its names resolve to the
    /// same links and joints (a spec of another model with the same body count is refused).
    fn fitting(&self, model: &Model) -> PyResult<()> {
        self.spec.check_model(model).py_err()?;
        let names = self.spec.entry_names(model);
        if names != self.entries {
            return Err(input_error(format!(
                "this ParamSpec ({}) was made for another model: on model '{}' its blocks would be {}",
                listing(&self.entries),
                model.name(),
                listing(&names)
            )));
        }
        Ok(())
    }

    /// Where `name` sits in θ: `(offset, len, scalar)`, with `scalar` true when the name
    /// denotes one number (a one-scalar block such as `"mass:link1"`, or a per-scalar
    /// name such as `"com:link1.y"`) and false for a vector block (`"com:link1"`).
    fn locate(&self, model: &Model, name: &str) -> PyResult<(usize, usize, bool)> {
        let name = name.trim();
        if let Some(i) = self.entries.iter().position(|e| e == name) {
            let e = &self.spec.entries()[i];
            return Ok((e.offset, e.len, e.len == 1 && self.names[e.offset] == name));
        }
        if let Some(k) = self.names.iter().position(|n| n == name) {
            return Ok((k, 1, true));
        }
        Err(self.unknown(model, name))
    }

    /// The error for a name that is not in this spec.
    fn unknown(&self, model: &Model, name: &str) -> PyErr {
        let in_model = ParamSpec::parse(model, &[name]).is_ok()
            || ParamSpec::all(model).is_ok_and(|all| all.names(model).iter().any(|n| n == name));
        if in_model {
            return input_error(format!(
                "parameter '{name}' of model '{}' is not in this ParamSpec (its blocks are {}); make a ParamSpec \
                 that lists it, e.g. ParamSpec(model, [..., '{name}'])",
                model.name(),
                listing(&self.entries)
            ));
        }
        let candidates: Vec<&str> = self.entries.iter().chain(&self.names).map(String::as_str).collect();
        input_error(format!(
            "unknown parameter '{name}'{}; this ParamSpec's blocks are {}",
            did_you_mean(name, &candidates),
            listing(&self.entries)
        ))
    }
}

/// At most 30 names, quoted and comma-separated.
fn listing(names: &[String]) -> String {
    if names.is_empty() {
        return "(none)".into();
    }
    let mut out: Vec<String> = names.iter().take(30).map(|n| format!("'{n}'")).collect();
    if names.len() > 30 {
        out.push(format!("... ({} more)", names.len() - 30));
    }
    out.join(", ")
}

/// The Levenshtein distance between `a` and `b` (in characters).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1).min(row[j] + 1).min(diag + usize::from(ca != *cb));
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// `" (did you mean 'x' or 'y'?)"` with the (at most three) candidates nearest to `name`
/// in edit distance, if that distance is at most a third of its length (at least 2), or `""`.
fn did_you_mean(name: &str, candidates: &[&str]) -> String {
    let limit = (name.chars().count() / 3).max(2);
    let mut close: Vec<(usize, &str)> =
        candidates.iter().map(|c| (edit_distance(name, c), *c)).filter(|(d, _)| *d <= limit).collect();
    close.sort();
    close.dedup_by(|a, b| a.1 == b.1);
    // Only the nearest ones: "link3" for "lnik3", not also "link1" and "link2".
    let nearest = close.first().map_or(0, |c| c.0);
    close.retain(|c| c.0 == nearest);
    let close: Vec<String> = close.iter().take(3).map(|(_, c)| format!("'{c}'")).collect();
    match close.as_slice() {
        [] => String::new(),
        [one] => format!(" (did you mean {one}?)"),
        [rest @ .., last] => format!(" (did you mean {} or {last}?)", rest.join(", ")),
    }
}

/// Parses `names` on `model`; an unknown name's error suggests the closest valid names.
fn parse_names(model: &Model, names: &[String]) -> PyResult<ParamSpec> {
    ParamSpec::parse(model, names).map_err(|e| {
        let bad = names.iter().find(|n| ParamSpec::parse(model, &[n.as_str()]).is_err());
        match (e, bad) {
            (stiction::Error::InvalidInput(msg), Some(bad)) => {
                let all = ParamSpec::all_names(model);
                let candidates: Vec<&str> = all.iter().map(String::as_str).collect();
                let hint = did_you_mean(bad.trim(), &candidates);
                input_error(format!("{msg}{hint}; ParamSpec.available(model) lists the valid names"))
            }
            (e, _) => crate::errors::to_py(e),
        }
    })
}

/// A value for a θ slot of `len` scalars: a number when `scalar`, else a 1-D
/// array-like of length `len`.
fn slot_value(obj: &Bound<'_, PyAny>, name: &str, len: usize, scalar: bool) -> PyResult<Vec<f64>> {
    let a = array(obj, &format!("value of '{name}'"))?;
    let ok = if scalar { a.shape.is_empty() || a.shape == [1] } else { a.shape == [len] };
    if !ok {
        let want = if scalar { "a number".to_string() } else { format!("an array of shape ({len},)") };
        return Err(input_error(format!("parameter '{name}' takes {want}, got shape {}", shape_str(&a.shape))));
    }
    if let Some(x) = a.data.iter().find(|x| !x.is_finite()) {
        return Err(input_error(format!("parameter '{name}': value is not finite ({x})")));
    }
    Ok(a.data)
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
        obj.extract().map_err(|_| {
            input_error(format!(
                "params must be a ParamSpec, a parameter name, a list of parameter names or None, got {}",
                type_name(obj)
            ))
        })?
    };
    parse_names(model, &names)
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

    /// The value of one parameter of `model`, by name: a float for a one-number name
    /// (`"mass:link1"`, `"com:link1.y"`, `"damping:hip[1]"`, `"gravity.z"`), a float64
    /// array for a vector block (`"com:link1"` (3,), `"inertia:link1"` (6,), `"gravity"`
    /// (3,), `"damping:hip"` (nv of the joint,)). `name` is one of `entries` or `names`;
    /// others raise `InputError` (with the closest names).
    fn get(&self, py: Python<'_>, model: &PyModel, name: &str) -> PyResult<Py<PyAny>> {
        self.fitting(&model.model)?;
        let (offset, len, scalar) = self.locate(&model.model, name)?;
        let theta = self.spec.values(&model.model);
        let values = &theta.as_slice()[offset..offset + len];
        Ok(if scalar {
            values[0].into_pyobject(py)?.into_any().unbind()
        } else {
            out_vec(py, values).into_any().unbind()
        })
    }

    /// A copy of `model` with some parameters replaced, by name: `values` maps names of
    /// `entries` or `names` to a number (one-number names) or an array of the block's
    /// length. Parameters not named keep their values; the new model is validated like
    /// `apply` (e.g. a negative mass raises). Models are immutable: `model` is unchanged.
    fn set(&self, py: Python<'_>, model: &PyModel, values: &Bound<'_, PyAny>) -> PyResult<PyModel> {
        self.fitting(&model.model)?;
        let map = values.cast::<PyMapping>().map_err(|_| {
            input_error(format!("values must be a dict of parameter name -> value, got {}", type_name(values)))
        })?;
        let mut theta = self.spec.values(&model.model);
        for item in map.items()?.iter() {
            let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
            let name: String = key
                .extract()
                .map_err(|_| input_error(format!("parameter names must be strings, got {}", type_name(&key))))?;
            let (offset, len, scalar) = self.locate(&model.model, &name)?;
            let v = slot_value(&value, name.trim(), len, scalar)?;
            theta.as_mut_slice()[offset..offset + len].copy_from_slice(&v);
        }
        let m = &model.model;
        let out = py.detach(|| self.spec.apply(m, &theta)).py_err()?;
        Ok(PyModel::new(out))
    }

    /// The values of every block of this spec in `model`, as a dict `{entry: value}`
    /// (floats for one-number blocks, arrays otherwise; see `get`). `set` accepts it back.
    fn as_dict<'py>(&self, py: Python<'py>, model: &PyModel) -> PyResult<Bound<'py, PyDict>> {
        self.fitting(&model.model)?;
        let theta = self.spec.values(&model.model);
        let d = PyDict::new(py);
        for (name, e) in self.entries.iter().zip(self.spec.entries()) {
            let values = &theta.as_slice()[e.offset..e.offset + e.len];
            if e.len == 1 && self.names[e.offset] == *name {
                d.set_item(name, values[0])?;
            } else {
                d.set_item(name, out_vec(py, values))?;
            }
        }
        Ok(d)
    }

    /// The slice of θ holding the parameter `name` (one of `entries` or `names`), e.g.
    /// `theta[spec.slice("com:link1")]`.
    fn slice<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PySlice>> {
        let name = name.trim();
        let found = self
            .entries
            .iter()
            .position(|e| e == name)
            .map(|i| (self.spec.entries()[i].offset, self.spec.entries()[i].len))
            .or_else(|| self.names.iter().position(|n| n == name).map(|k| (k, 1)));
        let Some((offset, len)) = found else {
            let candidates: Vec<&str> = self.entries.iter().chain(&self.names).map(String::as_str).collect();
            return Err(input_error(format!(
                "parameter '{name}' is not in this ParamSpec{}; its blocks are {}",
                did_you_mean(name, &candidates),
                listing(&self.entries)
            )));
        };
        Ok(PySlice::new(py, offset as isize, (offset + len) as isize, 1))
    }

    fn __len__(&self) -> usize {
        self.spec.len()
    }

    fn __contains__(&self, name: &str) -> bool {
        let name = name.trim();
        self.entries.iter().chain(&self.names).any(|n| n == name)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyParamSpec>().is_ok_and(|o| o.get().spec == self.spec && o.get().entries == self.entries)
    }

    fn __repr__(&self) -> String {
        format!("ParamSpec({:?})", self.entries)
    }
}
