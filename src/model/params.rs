//! Differentiable model parameters θ, addressed by name through a [`ParamSpec`].

use super::Model;
use crate::error::{Error, Result};
use nalgebra::DVector;
use serde::{Deserialize, Serialize};

/// A kind of differentiable parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ParamKind {
    /// Body mass (1 value).
    Mass,
    /// Body centre of mass in the body frame (3 values: x, y, z).
    Com,
    /// Rotational inertia about the centre of mass, body axes (6 values: xx, yy, zz, xy, xz, yz).
    Inertia,
    /// Joint viscous damping (one per degree of freedom).
    Damping,
    /// Joint spring stiffness (one per degree of freedom).
    Stiffness,
    /// Joint spring rest position (one per coordinate; joints without quaternions only).
    Rest,
    /// Joint armature (one per degree of freedom).
    Armature,
    /// Translation of the joint placement in the parent frame (3 values: link lengths).
    Placement,
    /// Gravity vector (3 values).
    Gravity,
}

/// One named block of θ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamEntry {
    /// The parameter kind.
    pub kind: ParamKind,
    /// Body index for `Mass`/`Com`/`Inertia`; the index of the body the joint carries
    /// for `Damping`/`Stiffness`/`Rest`/`Armature`/`Placement`; 0 for `Gravity`.
    pub index: usize,
    /// Offset of this block in θ.
    pub offset: usize,
    /// Number of scalars in this block.
    pub len: usize,
}

/// Names the differentiable parameters θ of a model and maps them to and from a vector.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct ParamSpec {
    entries: Vec<ParamEntry>,
    len: usize,
}

impl ParamSpec {
    /// An empty spec (no differentiable parameters).
    pub fn new() -> Self {
        Self::default()
    }
    /// Parses names of the form `"mass:LINK"`, `"com:LINK"`, `"inertia:LINK"`,
    /// `"damping:JOINT"`, `"stiffness:JOINT"`, `"rest:JOINT"`, `"armature:JOINT"`,
    /// `"placement:JOINT"`, `"gravity"`.
    pub fn parse(model: &Model, names: &[&str]) -> Result<ParamSpec> {
        let _ = (model, names);
        Err(Error::InvalidInput("ParamSpec::parse is not implemented yet".into()))
    }
    /// The blocks, in θ order.
    pub fn entries(&self) -> &[ParamEntry] {
        &self.entries
    }
    /// Dimension of θ.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when θ is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// One name per scalar of θ (e.g. `"com:arm.y"`, `"inertia:arm.xz"`, `"damping:elbow"`).
    pub fn names(&self, model: &Model) -> Vec<String> {
        let _ = model;
        vec![]
    }
    /// The current values of θ in `model`.
    pub fn values(&self, model: &Model) -> DVector<f64> {
        let _ = model;
        DVector::zeros(self.len)
    }
    /// A copy of `model` with θ set to `theta` (validated like a built model).
    pub fn apply(&self, model: &Model, theta: &DVector<f64>) -> Result<Model> {
        let _ = (model, theta);
        Err(Error::InvalidInput("ParamSpec::apply is not implemented yet".into()))
    }
}
