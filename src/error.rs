//! Typed errors. Bad input never panics: every public entry point that can fail
//! returns [`Result`], and the message names what is wrong and where.

use thiserror::Error;

/// Errors found while building or validating a [`crate::Model`].
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ModelError {
    /// The model has no bodies.
    #[error("the model has no bodies")]
    Empty,
    /// Two links, or two joints, share a name.
    #[error("duplicate {kind} name '{name}'")]
    DuplicateName {
        /// `"link"` or `"joint"`.
        kind: &'static str,
        /// The repeated name.
        name: String,
    },
    /// A joint names a link that does not exist.
    #[error("joint '{joint}' refers to unknown {role} link '{link}'")]
    UnknownLink {
        /// The joint.
        joint: String,
        /// `"parent"` or `"child"`.
        role: &'static str,
        /// The missing link.
        link: String,
    },
    /// A link is the child of more than one joint (a closed chain).
    #[error("link '{link}' is the child of several joints ({joints}); kinematic loops are not supported")]
    MultipleParents {
        /// The link.
        link: String,
        /// The joints, comma-separated.
        joints: String,
    },
    /// The parent relation has a cycle.
    #[error("the kinematic tree has a cycle through links: {links}")]
    Cycle {
        /// The links on the cycle, comma-separated.
        links: String,
    },
    /// Some links are not connected to the root.
    #[error("the kinematic tree is disconnected: links {links} are not connected to the root '{root}'")]
    Disconnected {
        /// The root link.
        root: String,
        /// The unreachable links, comma-separated.
        links: String,
    },
    /// A value is NaN or infinite where a finite one is required.
    #[error("non-finite value in {what}")]
    NonFinite {
        /// What holds the value (e.g. `"inertia of link 'arm'"`).
        what: String,
    },
    /// A mass is negative, or a moving rigid group has no mass.
    #[error("invalid mass {mass} for {what}: {reason}")]
    InvalidMass {
        /// The body or rigid group.
        what: String,
        /// The offending mass.
        mass: f64,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// A rotational inertia is not symmetric positive definite.
    #[error("rotational inertia of link '{link}' is not {reason} (principal moments {moments:?})")]
    InvalidInertia {
        /// The link.
        link: String,
        /// `"symmetric"`, `"positive definite"` or `"zero for a massless link"`.
        reason: &'static str,
        /// Its principal moments.
        moments: [f64; 3],
    },
    /// Principal moments violate the triangle inequality `I₁ + I₂ ≥ I₃`.
    #[error("rotational inertia of link '{link}' violates the triangle inequality (principal moments {moments:?})")]
    TriangleInequality {
        /// The link.
        link: String,
        /// Its principal moments.
        moments: [f64; 3],
    },
    /// A joint axis has zero length.
    #[error("joint '{joint}' has a zero-length axis")]
    ZeroAxis {
        /// The joint.
        joint: String,
    },
    /// Joint parameter arrays have the wrong length or invalid values.
    #[error("joint '{joint}': {reason}")]
    InvalidJoint {
        /// The joint.
        joint: String,
        /// What is wrong.
        reason: String,
    },
    /// An invalid builder request (e.g. floating base on a tree rooted at the world).
    #[error("{0}")]
    Invalid(String),
    /// A collision shape is invalid: a non-finite or non-positive size, a bad pose or
    /// material, or a mesh that cannot be compiled (open, non-convex, degenerate, ...).
    #[error("invalid geometry in {what}: {reason}")]
    InvalidGeometry {
        /// The shape, e.g. `"collision shape 2 of link 'foot'"`.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Errors from loading model files (URDF, meshes).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read '{path}': {reason}")]
    Io {
        /// The file.
        path: String,
        /// The operating-system message.
        reason: String,
    },
    /// The file is not well-formed (XML syntax, missing required element or attribute, bad number).
    #[error("{file}: malformed <{element}>: {reason}")]
    Malformed {
        /// The file.
        file: String,
        /// The element at fault (e.g. `joint 'elbow'`, `inertial of link 'arm'`).
        element: String,
        /// What is wrong.
        reason: String,
    },
    /// An element the loader does not support and cannot safely ignore.
    #[error("{file}: unsupported {element}: {reason}")]
    Unsupported {
        /// The file.
        file: String,
        /// The element.
        element: String,
        /// Why it is not supported.
        reason: String,
    },
    /// A mesh could not be found or parsed.
    #[error("mesh '{path}': {reason}")]
    Mesh {
        /// The mesh file (as written in the model file, or resolved).
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// The described model is invalid.
    #[error("{file}: {source}")]
    Model {
        /// The file.
        file: String,
        /// The validation error.
        #[source]
        source: ModelError,
    },
}

/// Errors in a soft body's mesh, material or options (the element or vertex named).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SoftError {
    /// The mesh has no tetrahedra.
    #[error("the tetrahedral mesh has no elements")]
    Empty,
    /// A vertex position is NaN or infinite.
    #[error("vertex {vertex} has a non-finite position {position:?}")]
    NonFiniteVertex {
        /// The vertex.
        vertex: usize,
        /// Its position.
        position: [f64; 3],
    },
    /// A tetrahedron names a vertex that does not exist.
    #[error("tet {tet} names vertex {vertex}, but the mesh has {vertices} vertices")]
    VertexOutOfRange {
        /// The element.
        tet: usize,
        /// The missing vertex.
        vertex: usize,
        /// The number of vertices.
        vertices: usize,
    },
    /// A tetrahedron names the same vertex twice.
    #[error("tet {tet} names vertex {vertex} twice")]
    RepeatedVertex {
        /// The element.
        tet: usize,
        /// The repeated vertex.
        vertex: usize,
    },
    /// A tetrahedron has (almost) no volume.
    #[error("tet {tet} is degenerate: rest volume {volume:e} (at most {threshold:e} for its edge lengths)")]
    DegenerateTet {
        /// The element.
        tet: usize,
        /// Its signed rest volume.
        volume: f64,
        /// The smallest accepted volume for its edges.
        threshold: f64,
    },
    /// A tetrahedron is inverted at rest (negative signed volume).
    #[error("tet {tet} is inverted: signed rest volume {volume:e} (vertices {vertices:?}; swap two of them)")]
    InvertedTet {
        /// The element.
        tet: usize,
        /// Its signed rest volume.
        volume: f64,
        /// Its vertices in the given order.
        vertices: [usize; 4],
    },
    /// A vertex belongs to no tetrahedron.
    #[error("vertex {vertex} belongs to no tet (unused vertices have no mass)")]
    UnusedVertex {
        /// The vertex.
        vertex: usize,
    },
    /// Two vertices sit at the same position.
    #[error("vertices {first} and {second} coincide at {position:?} (merge them)")]
    DuplicateVertex {
        /// The first vertex.
        first: usize,
        /// The second vertex.
        second: usize,
        /// Their position.
        position: [f64; 3],
    },
    /// A material value is out of its domain.
    #[error("material of {region}: {reason}")]
    InvalidMaterial {
        /// The region (or element) it applies to.
        region: String,
        /// What is wrong.
        reason: String,
    },
}

/// The crate-wide error type.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// Model construction or validation failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// Loading a model file failed.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A soft body's mesh, material or options are invalid.
    #[error(transparent)]
    Soft(#[from] SoftError),
    /// An input vector has the wrong length.
    #[error("{what} has length {got}, expected {expected}")]
    Dimension {
        /// The input (e.g. `"q"`).
        what: &'static str,
        /// The required length.
        expected: usize,
        /// The given length.
        got: usize,
    },
    /// An input holds NaN or infinity.
    #[error("{what}[{index}] is not finite ({value})")]
    NonFinite {
        /// The input (e.g. `"v"`).
        what: &'static str,
        /// The first offending index.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// An input is outside its domain (e.g. a zero quaternion, a name that does not exist).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A numerical failure (singular matrix, non-finite result).
    #[error("numerical failure in {algorithm}: {detail}")]
    Numerical {
        /// The algorithm.
        algorithm: &'static str,
        /// What happened.
        detail: String,
    },
    /// The GPU is not available (no driver, no device, NVRTC missing, or a build without
    /// the `cuda` feature), or a GPU operation failed; the message says which.
    #[error("GPU: {0}")]
    Gpu(String),
    /// A step diverged: its result has a generalized speed above
    /// [`crate::step::IntegratorOptions::max_speed`], or a non-finite entry.
    #[error(
        "the step diverged at {joint}: v = {value:.3e} (the divergence guard max_speed is {max_speed:e}); \
         reduce dt, or add damping, armature or joint limits to the light links, or raise max_speed"
    )]
    Diverged {
        /// The joint and coordinate, e.g. `joint 'l_f1_mid' (dof 33)`.
        joint: String,
        /// The offending velocity coordinate.
        dof: usize,
        /// Its value (or the non-finite configuration entry).
        value: f64,
        /// The bound in force.
        max_speed: f64,
    },
    /// Serialization to or from JSON failed.
    #[error("serialization: {0}")]
    Serde(String),
    /// The error of one step of a multi-step computation (e.g. step 500 of
    /// [`crate::Simulator::rollout`]), naming the step: `step 500: tau[3] is not finite (NaN)`.
    /// [`Error::root`] gives the underlying error to match on.
    #[error("step {step}: {error}")]
    AtStep {
        /// The index of the failing step (0-based).
        step: usize,
        /// What went wrong in that step.
        error: Box<Error>,
    },
    /// The error of one system of a [`crate::world::World`], naming it:
    /// `system 1 (3 particles): particle velocities[2] is not finite (NaN)`.
    /// [`Error::root`] gives the underlying error to match on.
    #[error("system {system} ({name}): {error}")]
    InSystem {
        /// The index of the system in the world.
        system: usize,
        /// The system's name.
        name: String,
        /// What went wrong in that system.
        error: Box<Error>,
    },
}

impl Error {
    /// `self` as the error of step `step` ([`Error::AtStep`]).
    pub fn at_step(self, step: usize) -> Error {
        Error::AtStep { step, error: Box::new(self) }
    }
    /// The underlying error, without [`Error::AtStep`] or [`Error::InSystem`] context:
    /// match on this to tell error kinds apart whatever context was added.
    pub fn root(&self) -> &Error {
        match self {
            Error::AtStep { error, .. } | Error::InSystem { error, .. } => error.root(),
            other => other,
        }
    }
}

/// Result with the crate error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Checks that `x` has length `expected` and only finite entries.
pub(crate) fn check_vector(what: &'static str, x: &[f64], expected: usize) -> Result<()> {
    if x.len() != expected {
        return Err(Error::Dimension { what, expected, got: x.len() });
    }
    if let Some((index, &value)) = x.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(Error::NonFinite { what, index, value });
    }
    Ok(())
}
