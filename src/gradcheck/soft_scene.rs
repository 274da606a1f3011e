//! Soft-body scene files: JSON descriptions of a gradient check of one soft-body step
//! (mesh, materials, damping, gravity, pins, step options, optional state and control,
//! tolerance), read by `stiction gradcheck` through [`AnyScene`](super::AnyScene). The
//! format is documented in `docs/gradients.md` ("Scene files", "Soft-body scenes"):
//!
//! ```json
//! {
//!   "description": "optional free text",
//!   "soft": {
//!     "mesh": { "box": { "cells": [3, 1, 1], "extent": [0.3, 0.1, 0.1] } },
//!     "material": { "model": "neo_hookean", "youngs_modulus": 2e5, "poisson": 0.3, "density": 1000 },
//!     "damping": { "mass": 0.3, "stiffness": 0.01 },
//!     "pin": { "where": { "axis": "x", "at": 0.0 } }
//!   },
//!   "options": { "dt": 0.005, "integrator": "backward_euler", "linear_solver": "direct" },
//!   "tolerance": 1e-6
//! }
//! ```
//!
//! The mesh is one of `"box"`, `"rod"` ([`generate`](crate::soft::generate)) or `"file"` (a
//! Gmsh `.msh`, VTK `.vtk`/`.vtu` or TetGen `.node` file, relative to the scene file), with
//! optional `"tag"` rules that put the tets on one side of a coordinate plane in a region;
//! `"regions"` then gives materials per region tag. Every error names the offending field.

use crate::error::{check_vector, Error, Result, SoftError};
use crate::math::{SplitMix64, Vec3};
use crate::soft::generate::{box_mesh, rod_mesh};
use crate::soft::io::{load_msh, load_tetgen, load_vtk};
use crate::soft::{
    MaterialModel, SoftBody, SoftDamping, SoftIntegrator, SoftLinearSolver, SoftMaterial, SoftOptions, SoftState,
    TetMesh,
};
use nalgebra::DVector;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The most cells a generated mesh of a scene may have (6 tets each).
const MAX_CELLS: usize = 1_000_000;

/// The raw file contents.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SoftSceneFile {
    #[serde(default)]
    description: Option<String>,
    soft: BodyFile,
    #[serde(default)]
    options: Option<OptionsFile>,
    #[serde(default)]
    state: Option<StateFile>,
    #[serde(default)]
    control: Option<ControlFile>,
    #[serde(default)]
    tolerance: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BodyFile {
    mesh: MeshFile,
    material: MaterialFile,
    #[serde(default)]
    regions: BTreeMap<String, RegionFile>,
    #[serde(default)]
    damping: Option<DampingFile>,
    #[serde(default)]
    gravity: Option<[f64; 3]>,
    #[serde(default)]
    pin: Option<PinFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MeshFile {
    #[serde(default, rename = "box")]
    box_: Option<BoxFile>,
    #[serde(default)]
    rod: Option<RodFile>,
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    tag: Vec<TagFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoxFile {
    cells: [usize; 3],
    extent: [f64; 3],
    #[serde(default)]
    origin: Option<[f64; 3]>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RodFile {
    cells_along: usize,
    cells_across: usize,
    length: f64,
    width: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TagFile {
    region: u32,
    #[serde(rename = "where")]
    where_: WhereFile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WhereFile {
    axis: String,
    #[serde(default)]
    at: Option<f64>,
    #[serde(default)]
    above: Option<f64>,
    #[serde(default)]
    below: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MaterialFile {
    model: String,
    youngs_modulus: f64,
    poisson: f64,
    density: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegionFile {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    youngs_modulus: Option<f64>,
    #[serde(default)]
    poisson: Option<f64>,
    #[serde(default)]
    density: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DampingFile {
    #[serde(default)]
    mass: f64,
    #[serde(default)]
    stiffness: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PinFile {
    #[serde(default)]
    vertices: Vec<usize>,
    #[serde(default, rename = "where")]
    where_: Option<WhereFile>,
    #[serde(default)]
    dofs: Vec<(usize, String)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionsFile {
    #[serde(default)]
    dt: Option<f64>,
    #[serde(default)]
    integrator: Option<String>,
    #[serde(default)]
    tolerance: Option<f64>,
    #[serde(default)]
    max_iterations: Option<usize>,
    #[serde(default)]
    line_search: Option<bool>,
    #[serde(default)]
    linear_solver: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StateFile {
    x: Vec<f64>,
    v: Vec<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ControlFile {
    #[serde(default)]
    u: Option<Vec<f64>>,
    #[serde(default)]
    targets: Option<Vec<f64>>,
}

/// A parsed and validated soft-body scene.
#[derive(Clone, Debug)]
pub struct SoftScene {
    /// Free-text description from the file.
    pub description: Option<String>,
    /// The body: mesh, materials, damping, gravity and pins.
    pub body: Arc<SoftBody>,
    /// The step options (defaults of [`SoftOptions`] where the file is silent).
    pub options: SoftOptions,
    /// The state to check, if the file gives one (lengths checked).
    pub state: Option<SoftState>,
    /// The vertex forces `u` of every check, if the file gives them (3 per vertex).
    pub u: Option<DVector<f64>>,
    /// The pin targets of every check, if the file gives them (one per pinned dof).
    pub targets: Option<DVector<f64>>,
    /// The relative tolerance of the check, if the file sets one.
    pub tolerance: Option<f64>,
}

/// The inputs of one soft-step check: the state, the vertex forces and the pin targets
/// (the arguments of [`check_soft_step`](super::check_soft_step)).
#[derive(Clone, Debug, PartialEq)]
pub struct SoftCase {
    /// Positions and velocities at the start of the step.
    pub state: SoftState,
    /// Vertex forces (N, 3 per vertex).
    pub u: DVector<f64>,
    /// Pin targets (m, one per [`SoftBody::pinned_dofs`] entry).
    pub targets: DVector<f64>,
}

/// Axis 0, 1, 2 of `"x"`, `"y"`, `"z"`.
fn axis_index(name: &str, field: &str) -> Result<usize> {
    match name {
        "x" => Ok(0),
        "y" => Ok(1),
        "z" => Ok(2),
        other => Err(Error::InvalidInput(format!("{field} must be \"x\", \"y\" or \"z\", got \"{other}\""))),
    }
}

/// Which side of a plane a `"where"` selects.
#[derive(Clone, Copy, Debug)]
enum Side {
    /// On the plane (`"at"`).
    At,
    /// On it or above (`"above"`).
    Above,
    /// On it or below (`"below"`).
    Below,
}

/// A validated `"where"`: the points whose coordinate `axis` is at, above or below `value`.
#[derive(Clone, Copy, Debug)]
struct Plane {
    axis: usize,
    side: Side,
    value: f64,
}

impl Plane {
    fn parse(w: &WhereFile, field: &str) -> Result<Plane> {
        let axis = axis_index(&w.axis, &format!("{field}.axis"))?;
        let (side, value) = match (w.at, w.above, w.below) {
            (Some(c), None, None) => (Side::At, c),
            (None, Some(c), None) => (Side::Above, c),
            (None, None, Some(c)) => (Side::Below, c),
            _ => {
                return Err(Error::InvalidInput(format!(
                    "{field} needs exactly one of \"at\", \"above\" and \"below\""
                )))
            }
        };
        if !value.is_finite() {
            return Err(Error::InvalidInput(format!("{field}: the coordinate must be finite, got {value}")));
        }
        Ok(Plane { axis, side, value })
    }

    /// Whether `p` is on the plane (within `tol`) or on the selected side of it.
    fn holds(&self, p: &Vec3, tol: f64) -> bool {
        let (x, c) = (p[self.axis], self.value);
        match self.side {
            Side::At => (x - c).abs() <= tol,
            Side::Above => x >= c - tol,
            Side::Below => x <= c + tol,
        }
    }

    /// `"x = 0"`, `"x >= 0.1"`, `"x <= 0.1"`.
    fn describe(&self) -> String {
        let op = match self.side {
            Side::At => "=",
            Side::Above => ">=",
            Side::Below => "<=",
        };
        format!("{} {op} {}", ["x", "y", "z"][self.axis], self.value)
    }
}

/// The rest mesh's bounding box: (lowest corner, highest corner).
fn bounds(mesh: &TetMesh) -> (Vec3, Vec3) {
    let first = mesh.vertices()[0];
    mesh.vertices().iter().fold((first, first), |(lo, hi), p| (lo.inf(p), hi.sup(p)))
}

/// The tolerance of plane tests: 1e-9 of the rest mesh's bounding-box diagonal.
fn plane_tolerance(mesh: &TetMesh) -> f64 {
    let (lo, hi) = bounds(mesh);
    1e-9 * (hi - lo).norm()
}

/// `"the rest mesh spans x in [lo, hi]"`, for errors of planes that select nothing.
fn span(mesh: &TetMesh, axis: usize) -> String {
    let (lo, hi) = bounds(mesh);
    format!("the rest mesh spans {} in [{}, {}]", ["x", "y", "z"][axis], lo[axis], hi[axis])
}

/// `Error::InvalidInput` unless `value` is finite and positive.
fn positive(value: f64, field: &str) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(Error::InvalidInput(format!("{field} must be finite and positive, got {value}")))
    }
}

/// The mesh of `"soft.mesh"`, before tagging.
fn source_mesh(m: &MeshFile, base_dir: &Path) -> Result<TetMesh> {
    let sources = [m.box_.is_some(), m.rod.is_some(), m.file.is_some()];
    if sources.iter().filter(|&&s| s).count() != 1 {
        return Err(Error::InvalidInput(
            "soft.mesh needs exactly one mesh source: \"box\", \"rod\" or \"file\"".into(),
        ));
    }
    let too_many =
        |field: &str| Error::InvalidInput(format!("{field}: a scene's generated mesh has at most {MAX_CELLS} cells"));
    if let Some(b) = &m.box_ {
        if b.cells.contains(&0) {
            return Err(Error::InvalidInput(format!("soft.mesh.box.cells must all be at least 1, got {:?}", b.cells)));
        }
        if b.cells.iter().try_fold(1usize, |n, &c| n.checked_mul(c)).is_none_or(|n| n > MAX_CELLS) {
            return Err(too_many("soft.mesh.box.cells"));
        }
        for (k, &e) in b.extent.iter().enumerate() {
            positive(e, &format!("soft.mesh.box.extent[{k}]"))?;
        }
        let origin = b.origin.unwrap_or([0.0; 3]);
        return box_mesh(b.cells, Vec3::from(b.extent), Vec3::from(origin))
            .map_err(|e| Error::InvalidInput(format!("soft.mesh.box: {e}")));
    }
    if let Some(r) = &m.rod {
        for (name, c) in [("cells_along", r.cells_along), ("cells_across", r.cells_across)] {
            if c == 0 {
                return Err(Error::InvalidInput(format!("soft.mesh.rod.{name} must be at least 1, got 0")));
            }
        }
        if r.cells_across
            .checked_mul(r.cells_across)
            .and_then(|n| n.checked_mul(r.cells_along))
            .is_none_or(|n| n > MAX_CELLS)
        {
            return Err(too_many("soft.mesh.rod"));
        }
        positive(r.length, "soft.mesh.rod.length")?;
        positive(r.width, "soft.mesh.rod.width")?;
        return rod_mesh(r.cells_along, r.cells_across, r.length, r.width)
            .map_err(|e| Error::InvalidInput(format!("soft.mesh.rod: {e}")));
    }
    let file = m.file.as_deref().expect("one source");
    let path = base_dir.join(file);
    let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default();
    let loaded = match ext.as_str() {
        "msh" => load_msh(&path),
        "vtk" | "vtu" => load_vtk(&path),
        "node" | "ele" => load_tetgen(&path.with_extension("node"), &path.with_extension("ele")),
        _ => {
            return Err(Error::InvalidInput(format!(
                "soft.mesh.file '{file}': unknown mesh file extension (expected .msh, .vtk, .vtu or .node)"
            )))
        }
    };
    loaded.map_err(|e| match e {
        // A file that cannot be read or parsed stays a load error (it names the file).
        Error::Load(e) => Error::Load(e),
        other => Error::InvalidInput(format!("soft.mesh.file '{}': {other}", path.display())),
    })
}

/// The mesh of `"soft.mesh"` with its `"tag"` rules applied (in order: a later rule wins).
fn mesh(m: &MeshFile, base_dir: &Path) -> Result<TetMesh> {
    let mesh = source_mesh(m, base_dir)?;
    if m.tag.is_empty() {
        return Ok(mesh);
    }
    let tol = plane_tolerance(&mesh);
    let centroids: Vec<Vec3> =
        mesh.tets().iter().map(|t| t.iter().map(|&v| mesh.vertices()[v]).sum::<Vec3>() / 4.0).collect();
    let mut regions = mesh.regions().to_vec();
    for (i, rule) in m.tag.iter().enumerate() {
        let field = format!("soft.mesh.tag[{i}].where");
        let plane = Plane::parse(&rule.where_, &field)?;
        if let Side::At = plane.side {
            return Err(Error::InvalidInput(format!(
                "{field}: tets are tagged by their centroid, on a side of a plane: use \"above\" or \"below\", not \"at\""
            )));
        }
        let mut any = false;
        for (t, c) in centroids.iter().enumerate() {
            if plane.holds(c, tol) {
                regions[t] = rule.region;
                any = true;
            }
        }
        if !any {
            return Err(Error::InvalidInput(format!(
                "{field}: no tet has its centroid at {} ({})",
                plane.describe(),
                span(&mesh, plane.axis)
            )));
        }
    }
    TetMesh::with_regions(mesh.vertices().to_vec(), mesh.tets().to_vec(), regions)
}

/// The constitutive model of a name, naming `field` otherwise.
fn model(name: &str, field: &str) -> Result<MaterialModel> {
    MaterialModel::from_name(name).ok_or_else(|| {
        Error::InvalidInput(format!(
            "{field}: unknown material model \"{name}\" (known: \"linear\", \"corotated\", \"stvk\", \"neo_hookean\")"
        ))
    })
}

/// Checks E, ν and ρ of the material at `field` ([`SoftError::InvalidMaterial`] naming
/// the field and the value otherwise).
fn check_material(m: &SoftMaterial, field: &str) -> Result<()> {
    let invalid = |reason: String| -> Error { SoftError::InvalidMaterial { region: field.to_string(), reason }.into() };
    if !(m.youngs_modulus.is_finite() && m.youngs_modulus > 0.0) {
        return Err(invalid(format!("\"youngs_modulus\" must be finite and positive, got {}", m.youngs_modulus)));
    }
    if !(m.poisson.is_finite() && m.poisson > -1.0 && m.poisson < 0.5) {
        return Err(invalid(format!("\"poisson\" must lie in (-1, 0.5), got {}", m.poisson)));
    }
    if !(m.density.is_finite() && m.density > 0.0) {
        return Err(invalid(format!("\"density\" must be finite and positive, got {}", m.density)));
    }
    Ok(())
}

/// What `"soft.pin"` pins: whole vertices and single coordinates `(vertex, axis)`.
#[derive(Default)]
struct Pins {
    vertices: Vec<usize>,
    dofs: Vec<(usize, usize)>,
}

/// The pins of `"soft.pin"`.
fn pins(p: &PinFile, mesh: &TetMesh) -> Result<Pins> {
    let nv = mesh.num_vertices();
    if p.vertices.is_empty() && p.where_.is_none() && p.dofs.is_empty() {
        return Err(Error::InvalidInput(
            "soft.pin pins nothing: give \"vertices\", \"where\" or \"dofs\" (or leave \"pin\" out)".into(),
        ));
    }
    if let Some((i, &v)) = p.vertices.iter().enumerate().find(|(_, &v)| v >= nv) {
        return Err(Error::InvalidInput(format!(
            "soft.pin.vertices[{i}] = {v} is out of range: the mesh has {nv} vertices"
        )));
    }
    let mut vertices = p.vertices.clone();
    if let Some(w) = &p.where_ {
        let plane = Plane::parse(w, "soft.pin.where")?;
        let tol = plane_tolerance(mesh);
        let selected: Vec<usize> = (0..nv).filter(|&v| plane.holds(&mesh.vertices()[v], tol)).collect();
        if selected.is_empty() {
            return Err(Error::InvalidInput(format!(
                "soft.pin.where: no vertex has {} ({})",
                plane.describe(),
                span(mesh, plane.axis)
            )));
        }
        vertices.extend(selected);
    }
    let mut dofs = Vec::with_capacity(p.dofs.len());
    for (i, (v, axis)) in p.dofs.iter().enumerate() {
        if *v >= nv {
            return Err(Error::InvalidInput(format!(
                "soft.pin.dofs[{i}]: vertex {v} is out of range: the mesh has {nv} vertices"
            )));
        }
        dofs.push((*v, axis_index(axis, &format!("soft.pin.dofs[{i}] axis"))?));
    }
    Ok(Pins { vertices, dofs })
}

/// The body of `"soft"`.
fn body(b: BodyFile, base_dir: &Path) -> Result<SoftBody> {
    let mesh = mesh(&b.mesh, base_dir)?;
    let m = &b.material;
    let material = SoftMaterial::new(model(&m.model, "soft.material.model")?, m.youngs_modulus, m.poisson, m.density);
    check_material(&material, "soft.material")?;
    let tags = mesh.region_tags();
    let mut overrides = Vec::with_capacity(b.regions.len());
    for (key, r) in &b.regions {
        let field = format!("soft.regions.\"{key}\"");
        let tag: u32 = key.trim().parse().map_err(|_| {
            Error::InvalidInput(format!("{field}: a region key must be a region tag (an integer >= 0)"))
        })?;
        if !tags.contains(&tag) {
            return Err(Error::InvalidInput(format!("{field}: the mesh has no region {tag} (its regions: {tags:?})")));
        }
        let mut mat = material;
        if let Some(name) = &r.model {
            mat.model = model(name, &format!("{field}.model"))?;
        }
        mat.youngs_modulus = r.youngs_modulus.unwrap_or(mat.youngs_modulus);
        mat.poisson = r.poisson.unwrap_or(mat.poisson);
        mat.density = r.density.unwrap_or(mat.density);
        check_material(&mat, &field)?;
        overrides.push((tag, mat));
    }
    let pinned = match &b.pin {
        Some(p) => pins(p, &mesh)?,
        None => Pins::default(),
    };
    let mut builder = SoftBody::builder(mesh, material).pin_vertices(&pinned.vertices).pin_dofs(&pinned.dofs);
    for (tag, mat) in overrides {
        builder = builder.region_material(tag, mat);
    }
    if let Some(d) = b.damping {
        for (name, value) in [("mass", d.mass), ("stiffness", d.stiffness)] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(Error::InvalidInput(format!("soft.damping.{name} must be finite and >= 0, got {value}")));
            }
        }
        builder = builder.damping(SoftDamping { mass: d.mass, stiffness: d.stiffness });
    }
    if let Some(g) = b.gravity {
        if !g.iter().all(|x| x.is_finite()) {
            return Err(Error::InvalidInput(format!("soft.gravity must be finite, got {g:?}")));
        }
        builder = builder.gravity(Vec3::from(g));
    }
    builder.build()
}

/// The step options of `"options"`.
fn options(o: Option<OptionsFile>) -> Result<SoftOptions> {
    let mut options = SoftOptions::default();
    let Some(o) = o else { return Ok(options) };
    if let Some(dt) = o.dt {
        options.dt = positive(dt, "options.dt")?;
    }
    if let Some(t) = o.tolerance {
        options.tolerance = positive(t, "options.tolerance")?;
    }
    if let Some(n) = o.max_iterations {
        if n == 0 {
            return Err(Error::InvalidInput("options.max_iterations must be at least 1, got 0".into()));
        }
        options.max_iterations = n;
    }
    if let Some(l) = o.line_search {
        options.line_search = l;
    }
    if let Some(i) = o.integrator {
        options.integrator = match i.as_str() {
            "backward_euler" => SoftIntegrator::BackwardEuler,
            "implicit_midpoint" => SoftIntegrator::ImplicitMidpoint,
            other => {
                return Err(Error::InvalidInput(format!(
                    "options.integrator must be \"backward_euler\" or \"implicit_midpoint\", got \"{other}\""
                )))
            }
        };
    }
    if let Some(l) = o.linear_solver {
        options.linear_solver = match l.as_str() {
            "direct" => SoftLinearSolver::Direct,
            "kept_factor" => SoftLinearSolver::KeptFactor { single_precision: true },
            "kept_factor_f64" => SoftLinearSolver::KeptFactor { single_precision: false },
            "pcr_gpu" => SoftLinearSolver::PcrGpu,
            other => {
                return Err(Error::InvalidInput(format!(
                    "options.linear_solver must be \"direct\", \"kept_factor\", \"kept_factor_f64\" or \"pcr_gpu\", got \"{other}\""
                )))
            }
        };
    }
    Ok(options)
}

/// Whether a JSON scene describes a soft body (has a top-level `"soft"`). Malformed JSON
/// is a [`Error::Serde`].
pub(super) fn is_soft(json: &str) -> Result<bool> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default)]
        soft: Option<serde::de::IgnoredAny>,
    }
    let probe: Probe = serde_json::from_str(json).map_err(|e| Error::Serde(e.to_string()))?;
    Ok(probe.soft.is_some())
}

impl SoftScene {
    /// Reads and validates a soft-body scene file; relative paths in it resolve against its
    /// directory. Errors name the file: [`Error::InvalidInput`] (with the field) or
    /// [`Error::Serde`] for the scene itself, [`Error::Load`] for a mesh file that cannot be
    /// read or parsed.
    pub fn load(path: impl AsRef<Path>) -> Result<SoftScene> {
        let path = path.as_ref();
        let (text, dir) = super::read_scene(path)?;
        SoftScene::parse(&text, dir).map_err(|e| super::in_scene(path, e))
    }

    /// Parses soft-body scene JSON; relative paths resolve against `base_dir`. Errors:
    /// [`Error::Serde`] for malformed JSON, unknown or missing fields; [`Error::InvalidInput`]
    /// naming the field for a bad value, a mesh source that is missing or doubled, a pin or
    /// tag plane that selects nothing; [`SoftError::InvalidMaterial`] (through
    /// [`Error::Soft`]) naming the material's field for E, ν or ρ out of range;
    /// [`Error::Dimension`] and [`Error::NonFinite`] for a state or control of the wrong
    /// length; [`Error::Load`] for a mesh file that cannot be read or parsed.
    pub fn parse(json: &str, base_dir: &Path) -> Result<SoftScene> {
        let file: SoftSceneFile = serde_json::from_str(json).map_err(|e| Error::Serde(e.to_string()))?;
        let options = options(file.options)?;
        let body = body(file.soft, base_dir)?;
        let (n, np) = (body.ndof(), body.pinned_dofs().len());
        let state = match file.state {
            Some(s) => {
                check_vector("state.x", &s.x, n)?;
                check_vector("state.v", &s.v, n)?;
                Some(SoftState { x: DVector::from_vec(s.x), v: DVector::from_vec(s.v) })
            }
            None => None,
        };
        let (mut u, mut targets) = (None, None);
        if let Some(c) = file.control {
            if let Some(x) = c.u {
                check_vector("control.u", &x, n)?;
                u = Some(DVector::from_vec(x));
            }
            if let Some(t) = c.targets {
                check_vector("control.targets", &t, np)?;
                targets = Some(DVector::from_vec(t));
            }
        }
        if let Some(t) = file.tolerance {
            if !(t.is_finite() && t > 0.0) {
                return Err(Error::InvalidInput(format!("\"tolerance\" must be positive, got {t}")));
            }
        }
        Ok(SoftScene {
            description: file.description,
            body: Arc::new(body),
            options,
            state,
            u,
            targets,
            tolerance: file.tolerance,
        })
    }

    /// The scale `δ` of random perturbations: a fiftieth of the rest mesh's shortest edge.
    fn perturbation(&self) -> f64 {
        let mesh = self.body.mesh();
        let p = mesh.vertices();
        let shortest = mesh
            .tets()
            .iter()
            .flat_map(|t| [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)].map(|(a, b)| (p[t[a]] - p[t[b]]).norm()))
            .fold(f64::INFINITY, f64::min);
        0.02 * shortest
    }

    /// The `(state, u, targets)` inputs to check: `n` of them; the first uses the scene's
    /// state when it has one, the others random states near rest (positions moved by up
    /// to `δ` per coordinate, velocities uniform in `[−δ/h, δ/h]`, with `δ` a fiftieth of
    /// the shortest rest edge and `h` the time step); every case uses the scene's `u` and
    /// targets, or random ones (forces uniform in `[−w, w]` per coordinate with `w` the
    /// largest vertex mass times 9.81 m/s², targets the pinned rest coordinates moved by up
    /// to `δ`). Reproducible from `seed`.
    pub fn cases(&self, n: usize, seed: u64) -> Vec<SoftCase> {
        (0..n).map(|k| self.case(k, seed)).collect()
    }

    /// Case `k` of [`SoftScene::cases`] (the same whatever their number).
    pub fn case(&self, k: usize, seed: u64) -> SoftCase {
        let body = &self.body;
        let (ndof, delta) = (body.ndof(), self.perturbation());
        let rest = body.rest_positions();
        let weight = body.masses().iter().fold(0.0f64, |m, &w| m.max(w)) * 9.81;
        let speed = delta / self.options.dt;
        let mut rng = SplitMix64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(k as u64));
        let state = match (&self.state, k) {
            (Some(s), 0) => s.clone(),
            _ => SoftState {
                x: DVector::from_fn(ndof, |i, _| rest[i] + rng.range(-delta, delta)),
                v: DVector::from_fn(ndof, |_, _| rng.range(-speed, speed)),
            },
        };
        let u = match &self.u {
            Some(u) => u.clone(),
            None => DVector::from_fn(ndof, |_, _| rng.range(-weight, weight)),
        };
        let targets = match &self.targets {
            Some(t) => t.clone(),
            None => DVector::from_iterator(
                body.pinned_dofs().len(),
                body.pinned_dofs().iter().map(|&d| rest[d] + rng.range(-delta, delta)),
            ),
        };
        SoftCase { state, u, targets }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::LoadError;

    const BAR: &str = r#"{
        "description": "bar",
        "soft": {
            "mesh": { "box": { "cells": [3, 1, 1], "extent": [0.3, 0.1, 0.1] } },
            "material": { "model": "neo_hookean", "youngs_modulus": 2e5, "poisson": 0.3, "density": 1000 },
            "damping": { "mass": 0.3, "stiffness": 0.01 },
            "gravity": [0, 0, -1],
            "pin": { "where": { "axis": "x", "at": 0.0 } }
        },
        "options": { "dt": 0.005, "integrator": "implicit_midpoint", "tolerance": 1e-12,
                     "max_iterations": 20, "line_search": false },
        "tolerance": 1e-5
    }"#;

    fn parse(json: &str) -> Result<SoftScene> {
        SoftScene::parse(json, Path::new("."))
    }

    fn fixtures() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/soft")
    }

    /// The bar scene with `"soft"` members replaced or added (`key` → raw JSON value).
    fn bar_with(key: &str, value: &str) -> String {
        let mut v: serde_json::Value = serde_json::from_str(BAR).unwrap();
        v["soft"][key] = serde_json::from_str(value).unwrap();
        v.to_string()
    }

    #[test]
    fn bar_scene() {
        let s = parse(BAR).unwrap();
        assert_eq!(s.description.as_deref(), Some("bar"));
        assert_eq!(s.body.mesh().num_vertices(), 16);
        assert_eq!(s.body.pinned_dofs(), &[0, 1, 2, 12, 13, 14, 24, 25, 26, 36, 37, 38]);
        assert_eq!(s.body.gravity(), Vec3::new(0.0, 0.0, -1.0));
        assert_eq!(s.body.damping(), SoftDamping { mass: 0.3, stiffness: 0.01 });
        assert_eq!(s.body.regions()[0].material.model, MaterialModel::StableNeoHookean);
        let o = s.options;
        assert_eq!((o.dt, o.tolerance, o.max_iterations, o.line_search), (0.005, 1e-12, 20, false));
        assert_eq!(o.integrator, SoftIntegrator::ImplicitMidpoint);
        assert_eq!(o.linear_solver, SoftLinearSolver::Direct);
        let kept =
            parse(&BAR.replace("\"tolerance\": 1e-12", "\"linear_solver\": \"kept_factor\", \"tolerance\": 1e-12"));
        assert_eq!(kept.unwrap().options.linear_solver, SoftLinearSolver::KEPT_SINGLE);
        assert_eq!(s.tolerance, Some(1e-5));
        assert!(s.state.is_none() && s.u.is_none() && s.targets.is_none());
        let cases = s.cases(3, 7);
        assert_eq!(cases.len(), 3);
        assert_ne!(cases[1], cases[2]);
        assert_eq!(s.cases(3, 7), cases, "reproducible");
        assert_eq!(s.case(2, 7), cases[2], "a case does not depend on how many are drawn");
        assert_ne!(s.cases(1, 8)[0], cases[0], "seeded");
        let rest = s.body.rest_positions();
        for c in &cases {
            // Near rest: within a fiftieth of the shortest edge (0.1 m).
            assert!((&c.state.x - &rest).amax() <= 0.002 + 1e-15);
            assert!(c.state.v.amax() <= 0.002 / 0.005 + 1e-15);
            assert_eq!((c.u.len(), c.targets.len()), (48, 12));
            assert!(c.u.amax() > 0.0);
        }
    }

    #[test]
    fn given_state_and_control() {
        let mut v: serde_json::Value = serde_json::from_str(BAR).unwrap();
        let s0 = parse(BAR).unwrap();
        let rest: Vec<f64> = s0.body.rest_positions().iter().copied().collect();
        v["state"] = serde_json::json!({ "x": rest, "v": vec![0.1; 48] });
        v["control"] = serde_json::json!({ "u": vec![0.5; 48] });
        let s = parse(&v.to_string()).unwrap();
        let cases = s.cases(2, 0);
        assert_eq!(&cases[0].state, s.state.as_ref().unwrap());
        assert_ne!(cases[1].state, cases[0].state);
        assert!(cases.iter().all(|c| c.u == DVector::from_element(48, 0.5)));
        assert_ne!(cases[0].targets, cases[1].targets, "targets stay random");
        v["control"] = serde_json::json!({ "targets": vec![0.0; 12] });
        let s = parse(&v.to_string()).unwrap();
        assert!(s.cases(2, 0).iter().all(|c| c.targets == DVector::zeros(12)));
    }

    #[test]
    fn regions_tags_and_rods() {
        let json = r#"{"soft": {
            "mesh": { "box": { "cells": [2, 1, 2], "extent": [0.2, 0.1, 0.2], "origin": [1, 0, 0] },
                      "tag": [{ "region": 1, "where": { "axis": "x", "above": 1.1 } },
                              { "region": 2, "where": { "axis": "z", "below": 0.1 } }] },
            "material": { "model": "neo_hookean", "youngs_modulus": 2e5, "poisson": 0.3, "density": 1000 },
            "regions": { "1": { "model": "stvk", "youngs_modulus": 1e6 }, "2": { "density": 500 } },
            "pin": { "vertices": [0], "dofs": [[1, "z"], [2, "y"]] }
        }}"#;
        let s = parse(json).unwrap();
        let tags: Vec<u32> = s.body.regions().iter().map(|r| r.tag).collect();
        assert_eq!(tags, [0, 1, 2]);
        let m: Vec<SoftMaterial> = s.body.regions().iter().map(|r| r.material).collect();
        assert_eq!(m[0], SoftMaterial::new(MaterialModel::StableNeoHookean, 2e5, 0.3, 1000.0));
        assert_eq!(m[1], SoftMaterial::new(MaterialModel::StVenantKirchhoff, 1e6, 0.3, 1000.0));
        assert_eq!(m[2], SoftMaterial::new(MaterialModel::StableNeoHookean, 2e5, 0.3, 500.0));
        // Twelve tets per quarter of the block; the lower half is region 2 (a later rule wins).
        let count = |t: u32| s.body.mesh().regions().iter().filter(|&&r| r == t).count();
        assert_eq!((count(0), count(1), count(2)), (6, 6, 12));
        assert_eq!(s.body.pinned_dofs(), &[0, 1, 2, 5, 7]);
        assert_eq!(s.options, SoftOptions::default());

        let rod = r#"{"soft": {
            "mesh": { "rod": { "cells_along": 4, "cells_across": 1, "length": 0.4, "width": 0.05 } },
            "material": { "model": "corotated", "youngs_modulus": 1e5, "poisson": 0.25, "density": 900 }
        }}"#;
        let s = parse(rod).unwrap();
        assert_eq!((s.body.mesh().num_vertices(), s.body.mesh().num_tets()), (20, 24));
        assert!(s.body.pinned_dofs().is_empty());
        assert_eq!(s.cases(1, 0)[0].targets.len(), 0);
    }

    #[test]
    fn mesh_files() {
        for file in ["cube.msh", "cube.vtk", "cube.node", "cube.ele"] {
            let json = format!(
                r#"{{"soft": {{"mesh": {{"file": "{file}"}},
                    "material": {{"model": "linear", "youngs_modulus": 1e5, "poisson": 0.3, "density": 1000}},
                    "regions": {{"20": {{"model": "stvk"}}}},
                    "pin": {{"where": {{"axis": "z", "below": 0}}}}}}}}"#
            );
            let s = SoftScene::parse(&json, &fixtures()).unwrap_or_else(|e| panic!("{file}: {e}"));
            let tags: Vec<u32> = s.body.regions().iter().map(|r| r.tag).collect();
            assert_eq!(tags, [10, 20], "{file}");
            assert_eq!(s.body.regions()[1].material.model, MaterialModel::StVenantKirchhoff);
            assert_eq!(s.body.pinned_dofs().len(), 12, "{file}: the four vertices at z = 0");
        }
    }

    #[test]
    fn bad_soft_scenes() {
        let cases: Vec<(String, &str)> = vec![
            ("{".into(), "EOF"),
            (BAR.replace("\"description\"", "\"colour\""), "unknown field `colour`"),
            (BAR.replace("\"dt\"", "\"velocity_products\""), "unknown field `velocity_products`"),
            (BAR.replace("\"tolerance\": 1e-5", "\"tolerance\": 0"), "\"tolerance\" must be positive"),
            (BAR.replace("\"dt\": 0.005", "\"dt\": 0"), "options.dt must be finite and positive"),
            (BAR.replace("\"tolerance\": 1e-12", "\"tolerance\": -1"), "options.tolerance"),
            (BAR.replace("\"max_iterations\": 20", "\"max_iterations\": 0"), "options.max_iterations"),
            (BAR.replace("implicit_midpoint", "rk4"), "options.integrator must be"),
            (
                BAR.replace("\"tolerance\": 1e-12", "\"linear_solver\": \"cg\", \"tolerance\": 1e-12"),
                "options.linear_solver must be",
            ),
            (bar_with("mesh", "{}"), "exactly one mesh source"),
            (
                bar_with("mesh", r#"{"box": {"cells": [1, 1, 1], "extent": [1, 1, 1]}, "file": "a.msh"}"#),
                "exactly one mesh source",
            ),
            (bar_with("mesh", r#"{"box": {"cells": [0, 1, 1], "extent": [1, 1, 1]}}"#), "soft.mesh.box.cells"),
            (
                bar_with("mesh", r#"{"box": {"cells": [1000, 1000, 1000], "extent": [1, 1, 1]}}"#),
                "at most 1000000 cells",
            ),
            (bar_with("mesh", r#"{"box": {"cells": [1, 1, 1], "extent": [1, -1, 1]}}"#), "soft.mesh.box.extent[1]"),
            (
                bar_with("mesh", r#"{"box": {"cells": [1, 1, 1], "extent": [1, 1, 1], "size": 2}}"#),
                "unknown field `size`",
            ),
            (
                bar_with("mesh", r#"{"rod": {"cells_along": 0, "cells_across": 1, "length": 1, "width": 1}}"#),
                "soft.mesh.rod.cells_along",
            ),
            (
                bar_with("mesh", r#"{"rod": {"cells_along": 1, "cells_across": 1, "length": 1, "width": 0}}"#),
                "soft.mesh.rod.width",
            ),
            (bar_with("mesh", r#"{"file": "beam.obj"}"#), "unknown mesh file extension"),
            (
                bar_with(
                    "mesh",
                    r#"{"box": {"cells": [1, 1, 1], "extent": [1, 1, 1]}, "tag": [{"region": 1, "where": {"axis": "x", "at": 0.5}}]}"#,
                ),
                "use \"above\" or \"below\"",
            ),
            (
                bar_with("material", r#"{"model": "rubber", "youngs_modulus": 1, "poisson": 0.3, "density": 1}"#),
                "soft.material.model: unknown material model \"rubber\"",
            ),
            (
                bar_with("material", r#"{"model": "stvk", "youngs_modulus": -1, "poisson": 0.3, "density": 1}"#),
                "material of soft.material: \"youngs_modulus\" must be finite and positive, got -1",
            ),
            (
                bar_with("material", r#"{"model": "stvk", "youngs_modulus": 1, "poisson": 0.5, "density": 1}"#),
                "\"poisson\" must lie in (-1, 0.5), got 0.5",
            ),
            (
                bar_with("material", r#"{"model": "stvk", "youngs_modulus": 1, "poisson": 0.3, "density": 0}"#),
                "\"density\" must be finite and positive, got 0",
            ),
            (
                bar_with("material", r#"{"model": "stvk", "youngs_modulus": 1, "poisson": 0.3}"#),
                "missing field `density`",
            ),
            (
                bar_with("material", r#"{"model": "stvk", "young": 1, "poisson": 0.3, "density": 1}"#),
                "unknown field `young`",
            ),
            (bar_with("regions", r#"{"a": {"density": 1}}"#), "soft.regions.\"a\": a region key must be a region tag"),
            (bar_with("regions", r#"{"7": {"density": 1}}"#), "soft.regions.\"7\": the mesh has no region 7"),
            (bar_with("regions", r#"{"0": {"poisson": 0.7}}"#), "material of soft.regions.\"0\": \"poisson\""),
            (bar_with("regions", r#"{"0": {"model": "jelly"}}"#), "soft.regions.\"0\".model"),
            (bar_with("damping", r#"{"mass": -0.1}"#), "soft.damping.mass must be finite and >= 0"),
            (bar_with("damping", r#"{"alpha": 1}"#), "unknown field `alpha`"),
            (
                bar_with("pin", r#"{"where": {"axis": "x", "at": 0.05}}"#),
                "soft.pin.where: no vertex has x = 0.05 (the rest mesh spans x in [0, 0.3])",
            ),
            (bar_with("pin", r#"{"where": {"axis": "y", "above": 2}}"#), "soft.pin.where: no vertex has y >= 2"),
            (
                bar_with("pin", r#"{"where": {"axis": "x", "at": 0, "below": 1}}"#),
                "exactly one of \"at\", \"above\" and \"below\"",
            ),
            (bar_with("pin", r#"{"where": {"axis": "w", "at": 0}}"#), "soft.pin.where.axis must be"),
            (bar_with("pin", r#"{"vertices": [3, 99]}"#), "soft.pin.vertices[1] = 99 is out of range"),
            (bar_with("pin", r#"{"dofs": [[1, "q"]]}"#), "soft.pin.dofs[0] axis"),
            (bar_with("pin", r#"{"dofs": [[16, "x"]]}"#), "soft.pin.dofs[0]: vertex 16 is out of range"),
            (bar_with("pin", r#"{}"#), "soft.pin pins nothing"),
            (bar_with("sample", r#""arm7""#), "unknown field `sample`"),
            (
                BAR.replace("\"tolerance\": 1e-5", "\"state\": {\"x\": [0], \"v\": [0]}"),
                "state.x has length 1, expected 48",
            ),
            (
                BAR.replace("\"tolerance\": 1e-5", "\"control\": {\"targets\": [0]}"),
                "control.targets has length 1, expected 12",
            ),
            (BAR.replace("\"tolerance\": 1e-5", "\"control\": {\"tau\": [0]}"), "unknown field `tau`"),
        ];
        for (json, want) in &cases {
            let e = parse(json).unwrap_err().to_string();
            assert!(e.contains(want), "{json}\n  error: {e}\n  wanted: {want}");
        }
        // Typed errors.
        let e = parse(&bar_with("material", r#"{"model": "stvk", "youngs_modulus": 0, "poisson": 0.3, "density": 1}"#));
        assert!(
            matches!(e, Err(Error::Soft(SoftError::InvalidMaterial { ref region, .. })) if region == "soft.material")
        );
        let e = parse(&BAR.replace("\"tolerance\": 1e-5", "\"control\": {\"u\": [0]}"));
        assert!(matches!(e, Err(Error::Dimension { what: "control.u", expected: 48, got: 1 })));
        let e = parse(&bar_with("mesh", r#"{"file": "no/such/beam.msh"}"#)).unwrap_err();
        assert!(matches!(e, Error::Load(LoadError::Io { .. })), "{e}");
        assert!(e.to_string().contains("beam.msh"), "{e}");
        let e = SoftScene::parse(&bar_with("mesh", r#"{"file": "cube_inverted.msh"}"#), &fixtures()).unwrap_err();
        assert!(e.to_string().contains("soft.mesh.file") && e.to_string().contains("inverted"), "{e}");
        let e = parse(&bar_with("mesh", r#"{"box": {"cells": [2, 1, 1], "extent": [1, 1, 1]}, "tag": [{"region": 1, "where": {"axis": "z", "above": 3}}]}"#)).unwrap_err();
        assert!(e.to_string().contains("soft.mesh.tag[0].where: no tet has its centroid at z >= 3"), "{e}");
        let e = SoftScene::load("/nonexistent/soft.json").unwrap_err().to_string();
        assert!(e.contains("cannot read scene"), "{e}");
    }

    /// Truncated and corrupted scene text is an error, never a panic.
    #[test]
    fn no_panics_on_mangled_text() {
        let text = BAR.replace("\"gravity\": [0, 0, -1],", "\"gravity\": [0, 0, -1], \"regions\": {\"0\": {}},");
        for end in 0..text.len() {
            if text.is_char_boundary(end) {
                let _ = parse(&text[..end]);
            }
        }
        let bytes = text.as_bytes();
        let mut rng = SplitMix64::new(3);
        for _ in 0..300 {
            let mut b = bytes.to_vec();
            let i = (rng.next_u64() as usize) % b.len();
            b[i] = b"0123456789-.,:{}[]\"xe "[(rng.next_u64() as usize) % 22];
            if let Ok(s) = std::str::from_utf8(&b) {
                let _ = parse(s);
            }
        }
    }
}
