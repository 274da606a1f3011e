//! Contacts as a Python dict of numpy arrays and lists (`Model.contacts`,
//! `Simulator.contacts`).

use crate::convert::{out_rows, out_vec};
use numpy::ndarray::{Array1, Array3};
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use stiction::collision::{Contact, Feature};
use stiction::constraint::ContactJacobians;
use stiction::Model;

fn feature(f: &Feature) -> String {
    let i = match f {
        Feature::Vertex(i) | Feature::Edge(i) | Feature::Face(i) => i,
    };
    format!("{} {i}", f.name())
}

/// The dict described in `Model.contacts`.
pub fn contacts_dict<'py>(
    py: Python<'py>,
    model: &Model,
    contacts: &[Contact],
    jacobians: Option<&[ContactJacobians]>,
) -> PyResult<Bound<'py, PyDict>> {
    let n = contacts.len();
    let body_name = |b: Option<usize>| b.map_or_else(|| "world".to_string(), |b| model.bodies()[b].name.clone());
    let d = PyDict::new(py);
    let rows = |f: &dyn Fn(&Contact) -> [f64; 3]| contacts.iter().flat_map(f).collect::<Vec<f64>>();
    d.set_item("points", out_rows(py, n, 3, rows(&|c| c.geometry.point.into()))?)?;
    d.set_item("normals", out_rows(py, n, 3, rows(&|c| c.geometry.normal.into()))?)?;
    d.set_item("distances", out_vec(py, &contacts.iter().map(|c| c.geometry.distance).collect::<Vec<_>>()))?;
    d.set_item("body_a", contacts.iter().map(|c| body_name(c.body_a)).collect::<Vec<_>>())?;
    d.set_item("body_b", contacts.iter().map(|c| body_name(c.body_b)).collect::<Vec<_>>())?;
    let shapes = |f: &dyn Fn(&Contact) -> u32| Array1::from_iter(contacts.iter().map(|c| f(c) as i64)).into_pyarray(py);
    d.set_item("shape_a", shapes(&|c| c.id.shape_a))?;
    d.set_item("shape_b", shapes(&|c| c.id.shape_b))?;
    d.set_item("kinds", contacts.iter().map(|c| c.kind.name()).collect::<Vec<_>>())?;
    d.set_item(
        "features",
        contacts.iter().map(|c| (feature(&c.id.feature_a), feature(&c.id.feature_b))).collect::<Vec<_>>(),
    )?;
    if let Some(jac) = jacobians {
        let nv = model.nv();
        let cube = |f: &dyn Fn(&ContactJacobians) -> &nalgebra::Matrix3xX<f64>| {
            Array3::from_shape_fn((n, 3, nv), |(k, i, j)| f(&jac[k])[(i, j)]).into_pyarray(py)
        };
        d.set_item("point_jacobians", cube(&|j| &j.point))?;
        d.set_item("normal_jacobians", cube(&|j| &j.normal))?;
        let rows: Vec<f64> = jac.iter().flat_map(|j| j.distance.iter().copied()).collect();
        d.set_item("distance_jacobians", out_rows(py, n, nv, rows)?)?;
    }
    Ok(d)
}
