//! Model loading: URDF files ([`load_urdf`], [`parse_urdf`]), MJCF files ([`load_mjcf`],
//! [`parse_mjcf`]) and collision meshes
//! ([`mesh::load_mesh`]: Wavefront OBJ, STL and Collada).
//!
//! The URDF loader is written on `roxmltree` so that every error names the element
//! at fault (e.g. `joint 'elbow'`, `inertial of link 'arm'`) and what is wrong with
//! it; elements that are ignored or approximated are reported in
//! [`UrdfModel::warnings`], never dropped silently.

mod collada;
pub mod inertia_policy;
pub mod mesh;
mod mjcf;
mod urdf;
mod xml;

use crate::error::LoadError;
use crate::Model;
use std::path::{Path, PathBuf};

pub use mesh::load_mesh;
pub use urdf::resolve_mesh_uri;

/// Options for [`load_urdf`].
#[derive(Clone, Debug, PartialEq)]
pub struct UrdfOptions {
    /// Attach the root link with a free joint instead of welding it to the world.
    pub floating_base: bool,
    /// Directories searched for `package://NAME/...` URIs (a package `NAME` is the
    /// directory `DIR/NAME` for some `DIR` in this list, or `DIR` itself if its last
    /// component is `NAME`).
    pub package_dirs: Vec<PathBuf>,
    /// Load collision meshes (`false` drops mesh collision shapes, with a warning each).
    pub load_collision_meshes: bool,
    /// Treat unsupported elements (e.g. `<mimic>`) as errors instead of warnings.
    pub strict: bool,
    /// Merge links welded to their parent link by fixed joints into one rigid body
    /// ([`crate::ModelBuilder::merge_fixed_links`]; default `true`). The links stay
    /// addressable by name as frames ([`Model::frames`]).
    pub merge_fixed_joints: bool,
}

impl Default for UrdfOptions {
    fn default() -> Self {
        Self {
            floating_base: false,
            package_dirs: vec![],
            load_collision_meshes: true,
            strict: false,
            merge_fixed_joints: true,
        }
    }
}

/// A loaded model with the warnings raised while loading it.
#[derive(Clone, Debug)]
pub struct UrdfModel {
    /// The model.
    pub model: Model,
    /// Every element that was ignored or approximated, one message each.
    pub warnings: Vec<String>,
}

/// Loads a URDF file. Relative mesh paths resolve against the file's directory.
///
/// Errors: [`LoadError::Io`] when the file cannot be read, [`LoadError::Malformed`]
/// for XML or URDF syntax errors, [`LoadError::Unsupported`] for elements rejected
/// in strict mode, [`LoadError::Mesh`] for collision meshes that cannot be resolved
/// or parsed, and [`LoadError::Model`] when the described model is invalid.
pub fn load_urdf(path: impl AsRef<Path>, options: &UrdfOptions) -> Result<UrdfModel, LoadError> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let xml = std::fs::read_to_string(path).map_err(|e| LoadError::Io { path: file.clone(), reason: e.to_string() })?;
    let base_dir = path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
    urdf::parse(&xml, &file, base_dir, options)
}

/// Parses URDF text; relative mesh paths resolve against `base_dir` (the current
/// directory when `None`). Errors name the file as `<string>`; see [`load_urdf`].
pub fn parse_urdf(xml: &str, base_dir: Option<&Path>, options: &UrdfOptions) -> Result<UrdfModel, LoadError> {
    urdf::parse(xml, "<string>", base_dir, options)
}

impl Model {
    /// Loads a URDF file (see [`load_urdf`]); warnings are returned beside the model.
    pub fn from_urdf(path: impl AsRef<Path>, options: &UrdfOptions) -> Result<UrdfModel, LoadError> {
        load_urdf(path, options)
    }

    /// Loads an MJCF file (see [`load_mjcf`]); warnings are returned beside the model.
    pub fn from_mjcf(path: impl AsRef<Path>, options: &MjcfOptions) -> Result<MjcfModel, LoadError> {
        load_mjcf(path, options)
    }
}

/// Options for [`load_mjcf`].
#[derive(Clone, Debug, PartialEq)]
pub struct MjcfOptions {
    /// Treat unsupported elements (actuators, sensors, sites, `<include>`, …) as errors
    /// instead of warnings.
    pub strict: bool,
    /// Merge bodies without joints (welded to their parent body) into their parent
    /// ([`crate::ModelBuilder::merge_fixed_links`]; default `true`). They stay
    /// addressable by name as frames ([`Model::frames`]).
    pub merge_fixed_joints: bool,
}

impl Default for MjcfOptions {
    fn default() -> Self {
        Self { strict: false, merge_fixed_joints: true }
    }
}

/// A model loaded from MJCF, with the warnings raised while loading it and the file's
/// `<option timestep>`.
#[derive(Clone, Debug)]
pub struct MjcfModel {
    /// The model.
    pub model: Model,
    /// Every element that was ignored or approximated, one message each.
    pub warnings: Vec<String>,
    /// The time step the file asks for (`<option timestep>`), if any.
    pub timestep: Option<f64>,
    /// The joint motors of `<actuator>` (`<motor joint=…>`), in file order: the control map.
    pub actuators: Vec<MjcfActuator>,
}

/// A joint motor of an MJCF file: the joint force is `gear · u` for the control `u`,
/// `u` clamped to `ctrl_range` when the file limits it, the force to `force_range`.
#[derive(Clone, Debug, PartialEq)]
pub struct MjcfActuator {
    /// The actuator's name (`actuator{i}` when unnamed, `i` its index).
    pub name: String,
    /// The joint it drives.
    pub joint: String,
    /// The gear (joint force per unit control).
    pub gear: f64,
    /// The control range, when limited.
    pub ctrl_range: Option<(f64, f64)>,
    /// The force range, when limited.
    pub force_range: Option<(f64, f64)>,
}

impl MjcfModel {
    /// The control map `B` (nv × number of actuators): joint forces `τ = B u` for the
    /// controls `u` of [`MjcfModel::actuators`] (a scalar joint's column holds its gear).
    pub fn control_matrix(&self) -> nalgebra::DMatrix<f64> {
        let mut b = nalgebra::DMatrix::zeros(self.model.nv(), self.actuators.len());
        for (k, a) in self.actuators.iter().enumerate() {
            if let Ok(v) = self.model.joint_v_index(&a.joint) {
                b[(v, k)] = a.gear;
            }
        }
        b
    }
}

/// Loads an MJCF (MuJoCo XML) file: the kinematic tree, inertias, joints and collision
/// geometry (see `docs/models.md`, "MJCF", for what is supported and how it maps).
/// Mesh files resolve against the file's directory and `<compiler meshdir>`.
///
/// Errors: as [`load_urdf`]; unsupported elements are warnings unless
/// [`MjcfOptions::strict`].
pub fn load_mjcf(path: impl AsRef<Path>, options: &MjcfOptions) -> Result<MjcfModel, LoadError> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let xml = std::fs::read_to_string(path).map_err(|e| LoadError::Io { path: file.clone(), reason: e.to_string() })?;
    let base_dir = path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
    mjcf::parse(&xml, &file, base_dir, options)
}

/// Parses MJCF text; meshes resolve against `base_dir`. Errors name the file as `<string>`.
pub fn parse_mjcf(xml: &str, base_dir: Option<&Path>, options: &MjcfOptions) -> Result<MjcfModel, LoadError> {
    mjcf::parse(xml, "<string>", base_dir, options)
}
