//! Model loading: URDF files and collision meshes (OBJ, STL, Collada).

use crate::error::LoadError;
use crate::Model;
use std::path::{Path, PathBuf};

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

/// Loads a URDF file.
pub fn load_urdf(path: impl AsRef<Path>, options: &UrdfOptions) -> Result<UrdfModel, LoadError> {
    let _ = options;
    Err(LoadError::Unsupported {
        file: path.as_ref().display().to_string(),
        element: "robot".into(),
        reason: "URDF loading is not implemented yet".into(),
    })
}

/// Parses URDF text; relative mesh paths resolve against `base_dir`.
pub fn parse_urdf(xml: &str, base_dir: Option<&Path>, options: &UrdfOptions) -> Result<UrdfModel, LoadError> {
    let _ = (xml, base_dir, options);
    Err(LoadError::Unsupported {
        file: "<string>".into(),
        element: "robot".into(),
        reason: "URDF loading is not implemented yet".into(),
    })
}

impl Model {
    /// Loads a URDF file (see [`load_urdf`]); warnings are returned beside the model.
    pub fn from_urdf(path: impl AsRef<Path>, options: &UrdfOptions) -> Result<UrdfModel, LoadError> {
        load_urdf(path, options)
    }
}
