//! Model loading: URDF files ([`load_urdf`], [`parse_urdf`]) and collision meshes
//! ([`mesh::load_mesh`]: Wavefront OBJ, STL and Collada).
//!
//! The URDF loader is written on `roxmltree` so that every error names the element
//! at fault (e.g. `joint 'elbow'`, `inertial of link 'arm'`) and what is wrong with
//! it; elements that are ignored or approximated are reported in
//! [`UrdfModel::warnings`], never dropped silently.

mod collada;
pub mod inertia_policy;
pub mod mesh;
mod urdf;

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
}

impl Default for UrdfOptions {
    fn default() -> Self {
        Self { floating_base: false, package_dirs: vec![], load_collision_meshes: true, strict: false }
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
}
