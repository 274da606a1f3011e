//! `stiction.ModelBuilder`: links and joints by name, URDF style.

use crate::convert::{array, inertia3, vec3};
use crate::errors::{input_error, model_err};
use crate::model::PyModel;
use pyo3::prelude::*;
use stiction::math::{Mat3, Vec3, SE3};
use stiction::{Body, Joint, JointType, ModelBuilder};

/// Builds a model from links (bodies) and the joints between them.
#[pyclass(name = "ModelBuilder", module = "stiction")]
pub struct PyModelBuilder {
    builder: ModelBuilder,
}

/// A scalar broadcast to `n` entries, or a sequence of exactly `n` entries.
fn per_coordinate(obj: Option<&Bound<'_, PyAny>>, name: &str, n: usize, joint: &str) -> PyResult<Option<Vec<f64>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(None) };
    let a = array(obj, name)?;
    match a.shape.as_slice() {
        [] => Ok(Some(vec![a.data[0]; n])),
        [m] if *m == n => Ok(Some(a.data)),
        _ => Err(input_error(format!(
            "{name} of joint '{joint}' must be a number or a sequence of length {n}, got shape {:?}",
            a.shape
        ))),
    }
}

fn joint_type(kind: &str, axis: Vec3, axis2: Option<Vec3>, pitch: f64, name: &str) -> PyResult<JointType> {
    Ok(match kind {
        "fixed" => JointType::Fixed,
        "revolute" => JointType::Revolute { axis },
        "continuous" => JointType::Continuous { axis },
        "prismatic" => JointType::Prismatic { axis },
        "spherical" | "ball" => JointType::Spherical,
        "free" | "floating" => JointType::Free,
        "planar" => JointType::Planar { normal: axis },
        "universal" => JointType::Universal {
            axis1: axis,
            axis2: axis2
                .ok_or_else(|| input_error(format!("universal joint '{name}' needs axis2 (the second axis)")))?,
        },
        "screw" => JointType::Screw { axis, pitch },
        other => {
            return Err(input_error(format!(
                "unknown joint type '{other}' for joint '{name}'; expected one of fixed, revolute, continuous, \
                 prismatic, spherical, free, floating, planar, universal, screw"
            )))
        }
    })
}

#[pymethods]
impl PyModelBuilder {
    #[new]
    fn new(name: &str) -> Self {
        Self { builder: ModelBuilder::new(name) }
    }

    /// Adds a link. `inertia` is the rotational inertia about the centre of mass:
    /// a 3x3 matrix or `(ixx, ixy, ixz, iyy, iyz, izz)`; zero by default.
    /// A link named 'world' stands for the world frame. Returns the builder.
    #[pyo3(signature = (name, mass=0.0, com=None, inertia=None))]
    fn add_link<'py>(
        mut slf: PyRefMut<'py, Self>,
        name: &str,
        mass: f64,
        com: Option<&Bound<'py, PyAny>>,
        inertia: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let com = com.map(|c| vec3(c, "com")).transpose()?.unwrap_or_else(Vec3::zeros);
        let inertia = inertia.map(|i| inertia3(i, "inertia")).transpose()?.unwrap_or_else(Mat3::zeros);
        slf.builder.add_link(Body::from_mass_properties(name, mass, com, inertia));
        Ok(slf)
    }

    /// Adds a joint from link `parent` (or 'world') to link `child`.
    ///
    /// `type`: fixed, revolute, continuous, prismatic, spherical, free (or floating),
    /// planar (`axis` is the plane normal), universal (`axis`, then `axis2`) or screw
    /// (`pitch` metres per radian). The joint frame sits at `origin_xyz`, `origin_rpy`
    /// (URDF convention) in the parent frame. Limits take a number (every coordinate)
    /// or one value per coordinate (`lower`, `upper`, `rest`: nq; `velocity`, `effort`:
    /// nv). Returns the builder.
    #[pyo3(signature = (
        name, r#type, parent, child, axis=None, origin_xyz=None, origin_rpy=None,
        lower=None, upper=None, velocity=None, effort=None, damping=0.0, stiffness=0.0,
        rest=None, armature=0.0, friction=0.0, pitch=0.0, axis2=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn add_joint<'py>(
        mut slf: PyRefMut<'py, Self>,
        name: &str,
        r#type: &str,
        parent: &str,
        child: &str,
        axis: Option<&Bound<'py, PyAny>>,
        origin_xyz: Option<&Bound<'py, PyAny>>,
        origin_rpy: Option<&Bound<'py, PyAny>>,
        lower: Option<&Bound<'py, PyAny>>,
        upper: Option<&Bound<'py, PyAny>>,
        velocity: Option<&Bound<'py, PyAny>>,
        effort: Option<&Bound<'py, PyAny>>,
        damping: f64,
        stiffness: f64,
        rest: Option<&Bound<'py, PyAny>>,
        armature: f64,
        friction: f64,
        pitch: f64,
        axis2: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let axis = axis.map(|a| vec3(a, "axis")).transpose()?.unwrap_or_else(Vec3::x);
        let axis2 = axis2.filter(|a| !a.is_none()).map(|a| vec3(a, "axis2")).transpose()?;
        let xyz = origin_xyz.map(|a| vec3(a, "origin_xyz")).transpose()?.unwrap_or_else(Vec3::zeros);
        let rpy = origin_rpy.map(|a| vec3(a, "origin_rpy")).transpose()?.unwrap_or_else(Vec3::zeros);
        let kind = joint_type(r#type, axis, axis2, pitch, name)?;
        let (nq, nv) = (kind.nq(), kind.nv());
        let mut joint = Joint::new(name, kind).with_placement(SE3::from_xyz_rpy(&xyz, &rpy));
        let lower = per_coordinate(lower, "lower", nq, name)?;
        let upper = per_coordinate(upper, "upper", nq, name)?;
        if lower.is_some() || upper.is_some() {
            let lo = lower.unwrap_or_else(|| vec![f64::NEG_INFINITY; nq]);
            let hi = upper.unwrap_or_else(|| vec![f64::INFINITY; nq]);
            joint = joint.with_position_limits(&lo, &hi);
        }
        if let Some(vel) = per_coordinate(velocity, "velocity", nv, name)? {
            joint = joint.with_velocity_limits(&vel);
        }
        if let Some(eff) = per_coordinate(effort, "effort", nv, name)? {
            joint = joint.with_effort_limits(&eff);
        }
        let rest = per_coordinate(rest, "rest", nq, name)?;
        if stiffness != 0.0 || rest.is_some() {
            let rest = rest.unwrap_or_else(|| joint.dynamics.rest.clone());
            joint = joint.with_spring(stiffness, &rest);
        }
        joint = joint.with_damping(damping).with_armature(armature).with_friction(friction);
        slf.builder.add_joint(parent, child, joint);
        Ok(slf)
    }

    /// Attaches a parentless root link with a free joint (`True`) or welds it to the
    /// world (`False`, the default). Returns the builder.
    #[pyo3(signature = (floating=true))]
    fn floating_base(mut slf: PyRefMut<'_, Self>, floating: bool) -> PyRefMut<'_, Self> {
        slf.builder.floating_base(floating);
        slf
    }

    /// Sets gravity in world coordinates (default (0, 0, -9.81)). Returns the builder.
    fn set_gravity<'py>(mut slf: PyRefMut<'py, Self>, g: &Bound<'py, PyAny>) -> PyResult<PyRefMut<'py, Self>> {
        let g = vec3(g, "g")?;
        slf.builder.gravity(g);
        Ok(slf)
    }

    /// Orders the tree, validates it and returns the model (raises `ModelError`).
    fn build(&self, py: Python<'_>) -> PyResult<PyModel> {
        let builder = &self.builder;
        let model = py.detach(|| builder.build()).map_err(model_err)?;
        Ok(PyModel::new(model))
    }

    /// The model name.
    #[getter]
    fn name(&self) -> &str {
        &self.builder.name
    }

    fn __repr__(&self) -> String {
        format!(
            "ModelBuilder(name={:?}, links={}, joints={})",
            self.builder.name,
            self.builder.links.len(),
            self.builder.joints.len()
        )
    }
}
