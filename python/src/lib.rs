//! Python bindings of the stiction physics engine (the `stiction._stiction`
//! extension module). The pure-Python package `stiction` re-exports everything.
//!
//! Every array argument accepts any array-like convertible to a float64 array;
//! lengths are checked against the model and reported as `stiction.InputError`
//! (a `ValueError`). Rust errors map to the exception hierarchy in [`errors`].

mod builder;
mod constraints;
mod contact_options;
mod contacts;
mod convert;
mod errors;
mod gpu;
mod gradcheck;
mod model;
mod optim;
mod params;
mod samples;
mod shapes;
mod simulator;
mod soft;
mod sysid;
mod tape;
mod world;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _stiction(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("StictionError", py.get_type::<errors::StictionError>())?;
    m.add("ModelError", py.get_type::<errors::ModelError>())?;
    m.add("LoadError", py.get_type::<errors::LoadError>())?;
    m.add("NumericalError", py.get_type::<errors::NumericalError>())?;
    m.add("InputError", errors::input_error_type(py)?)?;
    m.add("LoadWarning", py.get_type::<errors::LoadWarning>())?;
    m.add_class::<model::PyModel>()?;
    m.add_class::<builder::PyModelBuilder>()?;
    m.add_class::<simulator::PySimulator>()?;
    m.add_class::<params::PyParamSpec>()?;
    m.add_class::<tape::PyStepRecord>()?;
    m.add_class::<tape::PyTape>()?;
    m.add_class::<gradcheck::PyGradReport>()?;
    m.add_class::<world::PyWorld>()?;
    m.add_class::<world::PyParticles>()?;
    m.add_class::<world::PyStaticGeometry>()?;
    m.add_class::<world::PyWorldStepRecord>()?;
    m.add_class::<world::PyWorldTape>()?;
    m.add_class::<world::PySoftSystem>()?;
    m.add_class::<soft::PyTetMesh>()?;
    m.add_class::<soft::PySoftBody>()?;
    m.add_class::<soft::PySoftStepRecord>()?;
    m.add_class::<soft::PySoftRollout>()?;
    m.add_function(wrap_pyfunction!(gradcheck::gradcheck, m)?)?;
    m.add_function(wrap_pyfunction!(gradcheck::load_scene, m)?)?;
    m.add_function(wrap_pyfunction!(gradcheck::gradcheck_scene, m)?)?;
    m.add_function(wrap_pyfunction!(model::load_mjcf, m)?)?;
    m.add_function(wrap_pyfunction!(optim::_ilqr, m)?)?;
    m.add_function(wrap_pyfunction!(optim::_shooting, m)?)?;
    m.add_function(wrap_pyfunction!(sysid::_sysid_fit, m)?)?;
    m.add_function(wrap_pyfunction!(sysid::_sysid_evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(gpu::_gpu_available, m)?)?;
    optim::register(m)?;
    samples::register(m)?;
    Ok(())
}
