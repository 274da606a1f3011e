//! Differentiable model parameters θ, addressed by name through a [`ParamSpec`].
//!
//! A spec is parsed from names such as `"mass:link3"`, `"com:link3"`,
//! `"inertia:link3"`, `"damping:joint2"`, `"rest:joint2"`, `"placement:joint2"` or
//! `"gravity"`; it maps θ to and from a model ([`ParamSpec::values`],
//! [`ParamSpec::apply`]) and names every scalar of θ ([`ParamSpec::names`]).
//!
//! Layouts of the blocks:
//!
//! | kind        | scalars | meaning                                                              |
//! |-------------|---------|----------------------------------------------------------------------|
//! | `mass`      | 1       | body mass (COM and rotational inertia about the COM held fixed)      |
//! | `com`       | 3       | centre of mass x, y, z in the body frame                             |
//! | `inertia`   | 6       | xx, yy, zz, xy, xz, yz of the rotational inertia about the COM; an off-diagonal scalar sets both symmetric entries |
//! | `damping`   | nv      | viscous damping per degree of freedom of the joint                   |
//! | `stiffness` | nv      | spring stiffness per degree of freedom                               |
//! | `armature`  | nv      | armature per degree of freedom                                       |
//! | `rest`      | nq      | spring rest coordinates (not for ball/free joints: a quaternion)     |
//! | `placement` | 3       | translation of the joint placement in the parent frame               |
//! | `gravity`   | 3       | gravity vector in world coordinates                                  |

use super::{Model, ModelBuilder, WORLD};
use crate::error::{Error, Result};
use crate::math::{Inertia, Mat3, Vec3};
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
    /// Coulomb friction coefficient of every collision shape of a link (1 value;
    /// `friction:world` for the world's shapes). A contact uses the mean of its two
    /// shapes' coefficients.
    Friction,
    /// Coefficient of restitution of every collision shape of a link (1 value;
    /// `restitution:world` for the world's shapes). A contact uses the mean of its two
    /// shapes' coefficients.
    Restitution,
    /// Viscous friction coefficient μ_v (N·s/m) of every collision shape of a link (1
    /// value; `viscous_friction:world` for the world's shapes), used by the viscous contact
    /// model. A contact uses the mean of its two shapes' coefficients.
    ViscousFriction,
}

impl ParamKind {
    /// Every kind, in the order [`ParamSpec::all`] lists them.
    pub const ALL: [ParamKind; 12] = [
        ParamKind::Mass,
        ParamKind::Com,
        ParamKind::Inertia,
        ParamKind::Damping,
        ParamKind::Stiffness,
        ParamKind::Rest,
        ParamKind::Armature,
        ParamKind::Placement,
        ParamKind::Gravity,
        ParamKind::Friction,
        ParamKind::Restitution,
        ParamKind::ViscousFriction,
    ];

    /// The lowercase prefix used in parameter names (`"mass"`, `"com"`, ...).
    pub fn prefix(&self) -> &'static str {
        match self {
            ParamKind::Mass => "mass",
            ParamKind::Com => "com",
            ParamKind::Inertia => "inertia",
            ParamKind::Damping => "damping",
            ParamKind::Stiffness => "stiffness",
            ParamKind::Rest => "rest",
            ParamKind::Armature => "armature",
            ParamKind::Placement => "placement",
            ParamKind::Gravity => "gravity",
            ParamKind::Friction => "friction",
            ParamKind::Restitution => "restitution",
            ParamKind::ViscousFriction => "viscous_friction",
        }
    }

    /// The kind named by `prefix`.
    pub fn from_prefix(prefix: &str) -> Option<ParamKind> {
        ParamKind::ALL.into_iter().find(|k| k.prefix() == prefix)
    }

    /// True for the kinds addressed by a link name (`mass`, `com`, `inertia`).
    pub fn is_body_kind(&self) -> bool {
        matches!(self, ParamKind::Mass | ParamKind::Com | ParamKind::Inertia)
    }

    /// True for the contact-material kinds (friction, restitution, viscous friction),
    /// addressed by link name (`world` for the world's shapes).
    pub fn is_material_kind(&self) -> bool {
        matches!(self, ParamKind::Friction | ParamKind::Restitution | ParamKind::ViscousFriction)
    }
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
///
/// ```
/// use stiction::model::{samples, ParamSpec};
/// let model = samples::arm7();
/// let spec = ParamSpec::parse(&model, &["mass:link3", "damping:joint2", "gravity"]).unwrap();
/// assert_eq!(spec.len(), 5);
/// let mut theta = spec.values(&model);
/// theta[0] += 0.5; // heavier link3
/// let heavier = spec.apply(&model, &theta).unwrap();
/// assert_eq!(heavier.bodies()[model.body_index("link3").unwrap()].inertia.mass, theta[0]);
/// ```
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct ParamSpec {
    entries: Vec<ParamEntry>,
    len: usize,
}

const XYZ: [&str; 3] = ["x", "y", "z"];
const INERTIA: [&str; 6] = ["xx", "yy", "zz", "xy", "xz", "yz"];

impl ParamSpec {
    /// An empty spec (no differentiable parameters).
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses names of the form `"mass:LINK"`, `"com:LINK"`, `"inertia:LINK"`,
    /// `"damping:JOINT"`, `"stiffness:JOINT"`, `"rest:JOINT"`, `"armature:JOINT"`,
    /// `"placement:JOINT"`, `"gravity"`. Blocks are laid out in θ in the order given.
    ///
    /// Errors ([`Error::InvalidInput`]): an unknown kind, link or joint; a name given
    /// twice; a per-degree-of-freedom kind on a joint without degrees of freedom;
    /// `rest` on a ball or free joint (its rest is a quaternion).
    pub fn parse<S: AsRef<str>>(model: &Model, names: &[S]) -> Result<ParamSpec> {
        let mut spec = ParamSpec::new();
        for name in names {
            let name = name.as_ref().trim();
            let (kind, index) = parse_one(model, name)?;
            if spec.entries.iter().any(|e| e.kind == kind && e.index == index) {
                return Err(Error::InvalidInput(format!("parameter '{name}' is listed twice")));
            }
            let len = block_len(model, kind, index);
            spec.entries.push(ParamEntry { kind, index, offset: spec.len, len });
            spec.len += len;
        }
        Ok(spec)
    }

    /// The names of every parameter of `model` that [`ParamSpec::parse`] accepts: mass, COM and inertia
    /// of every body with positive mass; damping, stiffness and armature of every joint
    /// with degrees of freedom; the rest position of those without a quaternion; the
    /// placement of every joint; gravity. (Non-negative parameters at 0, e.g. zero
    /// damping, are included: they cannot be decreased without making the model invalid.)
    pub fn all_names(model: &Model) -> Vec<String> {
        let mut out = vec![];
        for f in model.frames().iter().filter(|f| f.inertia.mass > 0.0) {
            for k in [ParamKind::Mass, ParamKind::Com, ParamKind::Inertia] {
                out.push(format!("{}:{}", k.prefix(), f.name));
            }
        }
        for j in model.joints() {
            if j.nv() > 0 {
                for k in [ParamKind::Damping, ParamKind::Stiffness, ParamKind::Armature] {
                    out.push(format!("{}:{}", k.prefix(), j.name));
                }
                if !j.kind.has_quaternion() {
                    out.push(format!("rest:{}", j.name));
                }
            }
            out.push(format!("placement:{}", j.name));
        }
        out.push("gravity".into());
        for index in 0..=model.nbodies() {
            if material_shapes(model, index).next().is_some() {
                let link = if index < model.nbodies() { model.bodies[index].name.as_str() } else { WORLD };
                out.push(format!("friction:{link}"));
                out.push(format!("restitution:{link}"));
                out.push(format!("viscous_friction:{link}"));
            }
        }
        out
    }

    /// The spec of [`ParamSpec::all_names`]: every differentiable parameter of `model`.
    pub fn all(model: &Model) -> Result<ParamSpec> {
        Self::parse(model, &Self::all_names(model))
    }

    /// Checks that this spec fits `model` (indices in range, block sizes as parsed):
    /// a spec parsed for a model fits that model and any model with the same tree.
    pub fn check_model(&self, model: &Model) -> Result<()> {
        let mut offset = 0;
        for e in &self.entries {
            let index_ok = if e.kind.is_material_kind() {
                material_shapes(model, e.index).next().is_some()
            } else if e.kind.is_body_kind() {
                e.index < model.frames.len()
            } else {
                e.index < model.nbodies()
            };
            let ok = index_ok
                && e.offset == offset
                && e.len == block_len(model, e.kind, e.index)
                && !(e.kind == ParamKind::Rest && model.joints[e.index].kind.has_quaternion());
            if !ok {
                return Err(Error::InvalidInput(format!(
                    "parameter spec does not fit model '{}' (block {:?} at body {})",
                    model.name, e.kind, e.index
                )));
            }
            offset += e.len;
        }
        if offset != self.len {
            return Err(Error::InvalidInput("parameter spec is inconsistent".into()));
        }
        Ok(())
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

    /// The name of each block as [`ParamSpec::parse`] accepts it (`"mass:link3"`, `"gravity"`).
    pub fn entry_names(&self, model: &Model) -> Vec<String> {
        self.entries.iter().map(|e| entry_name(model, e)).collect()
    }

    /// One name per scalar of θ (e.g. `"mass:arm"`, `"com:arm.y"`, `"inertia:arm.xz"`,
    /// `"damping:elbow"`, `"damping:hip[1]"` for multi-dof joints, `"placement:elbow.x"`,
    /// `"gravity.z"`).
    pub fn names(&self, model: &Model) -> Vec<String> {
        let mut out = Vec::with_capacity(self.len);
        for e in &self.entries {
            let base = entry_name(model, e);
            match e.kind {
                ParamKind::Mass => out.push(base),
                ParamKind::Com | ParamKind::Placement | ParamKind::Gravity => {
                    out.extend(XYZ.iter().map(|c| format!("{base}.{c}")))
                }
                ParamKind::Inertia => out.extend(INERTIA.iter().map(|c| format!("{base}.{c}"))),
                _ if e.len == 1 => out.push(base),
                _ => out.extend((0..e.len).map(|k| format!("{base}[{k}]"))),
            }
        }
        out
    }

    /// The current values of θ in `model`.
    ///
    /// `model` must be the model the spec was parsed for (or one with the same layout).
    pub fn values(&self, model: &Model) -> DVector<f64> {
        let mut theta = DVector::zeros(self.len);
        for e in &self.entries {
            let out = &mut theta.as_mut_slice()[e.offset..e.offset + e.len];
            match e.kind {
                ParamKind::Mass | ParamKind::Com | ParamKind::Inertia => {
                    out.copy_from_slice(&body_values(&model.frames[e.index].inertia, e.kind))
                }
                ParamKind::Damping => out.copy_from_slice(dof_slice(model, e, &model.damping)),
                ParamKind::Stiffness => out.copy_from_slice(dof_slice(model, e, &model.stiffness)),
                ParamKind::Armature => out.copy_from_slice(dof_slice(model, e, &model.armature)),
                ParamKind::Rest => {
                    let a = model.q_index(e.index);
                    out.copy_from_slice(&model.rest.as_slice()[a..a + e.len]);
                }
                ParamKind::Placement => out.copy_from_slice(written_placement(model, e.index).trans.as_slice()),
                ParamKind::Gravity => out.copy_from_slice(model.gravity.as_slice()),
                ParamKind::Friction | ParamKind::Restitution | ParamKind::ViscousFriction => {
                    let m = material_shapes(model, e.index).next().map(|s| s.material).unwrap_or_default();
                    out[0] = match e.kind {
                        ParamKind::Friction => m.friction,
                        ParamKind::Restitution => m.restitution,
                        _ => m.viscous_friction,
                    };
                }
            }
        }
        theta
    }

    /// A copy of `model` with θ set to `theta`, rebuilt and validated like a built model
    /// (so an invalid θ, e.g. a negative mass, is an error). Everything θ does not name
    /// is kept bit for bit; a body's inertia is recomputed only when one of its mass,
    /// COM or inertia values actually changes. The compiled collision shapes are shared
    /// with `model` (θ changes no geometry), with the materials θ sets.
    pub fn apply(&self, model: &Model, theta: &DVector<f64>) -> Result<Model> {
        self.check_model(model)?;
        if theta.len() != self.len {
            return Err(Error::Dimension { what: "theta", expected: self.len, got: theta.len() });
        }
        if let Some((i, &x)) = theta.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(Error::NonFinite { what: "theta", index: i, value: x });
        }
        let mut b: ModelBuilder = model.clone().into();
        // The builder holds the links and joints as written (merged links apart, when
        // the model merged fixed links): they are addressed by name.
        let link_at = |b: &ModelBuilder, name: &str| b.links.iter().position(|l| l.name == name);
        let joint_at = |b: &ModelBuilder, name: &str| b.joints.iter().position(|j| j.joint.name == name);
        let mut mass_props: Vec<Option<(f64, Vec3, Mat3)>> = vec![None; model.frames.len()];
        for e in &self.entries {
            let x = &theta.as_slice()[e.offset..e.offset + e.len];
            let joint_kind = matches!(
                e.kind,
                ParamKind::Damping
                    | ParamKind::Stiffness
                    | ParamKind::Armature
                    | ParamKind::Rest
                    | ParamKind::Placement
            );
            let j = if joint_kind {
                let name = &model.joints[e.index].name;
                joint_at(&b, name)
                    .ok_or_else(|| Error::InvalidInput(format!("joint '{name}' is not in the model's description")))?
            } else {
                0
            };
            match e.kind {
                ParamKind::Mass | ParamKind::Com | ParamKind::Inertia => {
                    let current = body_values(&model.frames[e.index].inertia, e.kind);
                    if current.as_slice() == x {
                        continue;
                    }
                    let p = mass_props[e.index].get_or_insert_with(|| mass_properties(&model.frames[e.index].inertia));
                    match e.kind {
                        ParamKind::Mass => p.0 = x[0],
                        ParamKind::Com => p.1 = Vec3::new(x[0], x[1], x[2]),
                        _ => p.2 = Mat3::new(x[0], x[3], x[4], x[3], x[1], x[5], x[4], x[5], x[2]),
                    }
                }
                ParamKind::Damping => b.joints[j].joint.dynamics.damping = x.to_vec(),
                ParamKind::Stiffness => b.joints[j].joint.dynamics.stiffness = x.to_vec(),
                ParamKind::Armature => b.joints[j].joint.dynamics.armature = x.to_vec(),
                ParamKind::Rest => b.joints[j].joint.dynamics.rest = x.to_vec(),
                ParamKind::Placement => b.joints[j].joint.placement.trans = Vec3::new(x[0], x[1], x[2]),
                ParamKind::Gravity => b.gravity = Vec3::new(x[0], x[1], x[2]),
                ParamKind::Friction | ParamKind::Restitution | ParamKind::ViscousFriction => {
                    // Every link of the body (its own and those merged into it), or the world.
                    let links: Vec<usize> = if e.index < model.nbodies() {
                        model.frames.iter().filter(|f| f.body == e.index).filter_map(|f| link_at(&b, &f.name)).collect()
                    } else {
                        vec![link_at(&b, WORLD).ok_or_else(|| {
                            Error::InvalidInput("parameter spec names world shapes, but the model has none".into())
                        })?]
                    };
                    for link in links {
                        for shape in &mut b.links[link].collisions {
                            match e.kind {
                                ParamKind::Friction => shape.material.friction = x[0],
                                ParamKind::Restitution => shape.material.restitution = x[0],
                                _ => shape.material.viscous_friction = x[0],
                            }
                        }
                    }
                }
            }
        }
        for (i, p) in mass_props.into_iter().enumerate() {
            if let Some(p) = p {
                let name = &model.frames[i].name;
                if p.0 < 0.0 {
                    return Err(Error::InvalidInput(format!("mass of link '{name}' would be negative ({})", p.0)));
                }
                let link = link_at(&b, name)
                    .ok_or_else(|| Error::InvalidInput(format!("link '{name}' is not in the model's description")))?;
                b.links[link].inertia = Inertia::from_com(p.0, p.1, p.2);
            }
        }
        // θ never changes the shapes' geometry: their compiled cores (hulls, terrain
        // trees) are reused, and only the materials are replaced.
        let rebuilt = b.build_reusing_shapes(model)?;
        debug_assert_eq!(rebuilt.nbodies(), model.nbodies());
        Ok(rebuilt)
    }
}

/// The placement of the joint carrying body `body` as its description wrote it: from
/// the parent link's frame, which is not the body's frame when that link was merged.
fn written_placement(model: &Model, body: usize) -> crate::math::SE3 {
    let joint = &model.joints[body];
    match (&model.source, model.joint_parent_frame[body]) {
        (Some(src), Some(_)) => {
            src.joints.iter().find(|j| j.joint.name == joint.name).map_or(joint.placement, |j| j.joint.placement)
        }
        _ => joint.placement,
    }
}

/// The direction in the parent body's frame of a unit change of scalar `s` of the
/// placement translation of the joint carrying `body` (the written translation is in
/// its parent link's frame, rotated into the body's when that link was merged).
pub(crate) fn placement_direction(model: &Model, body: usize, s: usize) -> Vec3 {
    let e = Vec3::ith(s, 1.0);
    match model.joint_parent_frame[body] {
        Some(f) => model.frames[f].placement.rot * e,
        None => e,
    }
}

/// Mass, COM and rotational inertia about the COM of a body inertia.
fn mass_properties(i: &Inertia) -> (f64, Vec3, Mat3) {
    (i.mass, i.com(), i.inertia_about_com())
}

/// The θ block of a body kind, read from its inertia.
/// The compiled collision shapes of link `index` (`model.nbodies()` for the world's).
pub(crate) fn material_shapes(model: &Model, index: usize) -> impl Iterator<Item = &crate::collision::ShapeInstance> {
    let body = (index < model.nbodies()).then_some(index);
    model.collision_model().shapes.iter().filter(move |s| s.body == body)
}

fn body_values(inertia: &Inertia, kind: ParamKind) -> Vec<f64> {
    let (m, c, i) = mass_properties(inertia);
    match kind {
        ParamKind::Mass => vec![m],
        ParamKind::Com => c.as_slice().to_vec(),
        _ => inertia_6(&i).to_vec(),
    }
}

/// `[xx, yy, zz, xy, xz, yz]` of a symmetric matrix (upper triangle).
fn inertia_6(i: &Mat3) -> [f64; 6] {
    [i[(0, 0)], i[(1, 1)], i[(2, 2)], i[(0, 1)], i[(0, 2)], i[(1, 2)]]
}

fn dof_slice<'a>(model: &Model, e: &ParamEntry, xs: &'a DVector<f64>) -> &'a [f64] {
    let a = model.v_index(e.index);
    &xs.as_slice()[a..a + e.len]
}

fn block_len(model: &Model, kind: ParamKind, index: usize) -> usize {
    match kind {
        ParamKind::Mass | ParamKind::Friction | ParamKind::Restitution | ParamKind::ViscousFriction => 1,
        ParamKind::Com | ParamKind::Placement | ParamKind::Gravity => 3,
        ParamKind::Inertia => 6,
        ParamKind::Damping | ParamKind::Stiffness | ParamKind::Armature => model.joints[index].nv(),
        ParamKind::Rest => model.joints[index].nq(),
    }
}

fn entry_name(model: &Model, e: &ParamEntry) -> String {
    match e.kind {
        ParamKind::Gravity => "gravity".into(),
        k if k.is_material_kind() && e.index >= model.nbodies() => format!("{}:{WORLD}", k.prefix()),
        k if k.is_body_kind() => format!("{}:{}", k.prefix(), model.frames[e.index].name),
        k if k.is_material_kind() => format!("{}:{}", k.prefix(), model.bodies[e.index].name),
        k => format!("{}:{}", k.prefix(), model.joints[e.index].name),
    }
}

/// Parses one name into its kind and body index.
fn parse_one(model: &Model, name: &str) -> Result<(ParamKind, usize)> {
    let known = || ParamKind::ALL.iter().map(|k| k.prefix()).collect::<Vec<_>>().join(", ");
    let (prefix, target) = match name.split_once(':') {
        Some((p, t)) => (p.trim(), Some(t.trim())),
        None => (name, None),
    };
    let kind = ParamKind::from_prefix(prefix).ok_or_else(|| {
        Error::InvalidInput(format!("unknown parameter kind '{prefix}' in '{name}' (known kinds: {})", known()))
    })?;
    if kind == ParamKind::Gravity {
        return match target {
            None => Ok((kind, 0)),
            Some(_) => Err(Error::InvalidInput(format!("parameter '{name}': 'gravity' takes no link or joint name"))),
        };
    }
    let target = match target {
        Some(t) if !t.is_empty() => t,
        _ => {
            let what = if kind.is_body_kind() || kind.is_material_kind() { "LINK" } else { "JOINT" };
            return Err(Error::InvalidInput(format!("parameter '{name}': expected '{prefix}:{what}'")));
        }
    };
    if kind.is_material_kind() {
        let index = if target == WORLD {
            model.nbodies()
        } else {
            model.body_index(target).map_err(|_| match model.frame_placement(target) {
                Ok((body, _)) => Error::InvalidInput(format!(
                    "parameter '{name}': link '{target}' was merged into body '{}' (fixed joint); contact \
                     materials are set per body: use '{}:{}'",
                    model.bodies[body].name,
                    kind.prefix(),
                    model.bodies[body].name
                )),
                Err(_) => Error::InvalidInput(format!(
                    "parameter '{name}': no link named '{target}' in model '{}'",
                    model.name
                )),
            })?
        };
        if material_shapes(model, index).next().is_none() {
            return Err(Error::InvalidInput(format!("parameter '{name}': link '{target}' has no collision shapes")));
        }
        return Ok((kind, index));
    }
    if kind.is_body_kind() {
        let index = model.frame_index(target).map_err(|_| {
            Error::InvalidInput(format!("parameter '{name}': no link named '{target}' in model '{}'", model.name))
        })?;
        return Ok((kind, index));
    }
    let index = model.joint_index(target).map_err(|_| {
        let merged = model.source.as_ref().and_then(|src| src.joints.iter().find(|j| j.joint.name == target));
        match merged {
            Some(j) => Error::InvalidInput(format!(
                "parameter '{name}': fixed joint '{target}' was merged away (its link '{}' is part of the body of \
                 '{}'); build the model without merging fixed links to make its parameters differentiable",
                j.child, j.parent
            )),
            None => {
                Error::InvalidInput(format!("parameter '{name}': no joint named '{target}' in model '{}'", model.name))
            }
        }
    })?;
    let joint = &model.joints[index];
    match kind {
        ParamKind::Damping | ParamKind::Stiffness | ParamKind::Armature | ParamKind::Rest if joint.nv() == 0 => {
            Err(Error::InvalidInput(format!(
                "parameter '{name}': joint '{target}' is {} and has no degrees of freedom",
                joint.kind.name()
            )))
        }
        ParamKind::Rest if joint.kind.has_quaternion() => Err(Error::InvalidInput(format!(
            "parameter '{name}': the rest position of {} joint '{target}' is a quaternion and cannot be a parameter",
            joint.kind.name()
        ))),
        _ => Ok((kind, index)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::samples;

    fn perturbed(spec: &ParamSpec, model: &Model, k: usize, d: f64) -> Model {
        let mut theta = spec.values(model);
        theta[k] += d;
        spec.apply(model, &theta).unwrap()
    }

    #[test]
    fn round_trip_is_exact() {
        for model in
            [samples::arm7(), samples::all_joint_types(), samples::humanoid(), samples::random_tree(9, 4, true)]
        {
            let spec = ParamSpec::all(&model).unwrap();
            assert_eq!(spec.names(&model).len(), spec.len());
            let back = spec.apply(&model, &spec.values(&model)).unwrap();
            assert_eq!(back, model, "{}", model.name());
        }
    }

    #[test]
    fn names_and_layout() {
        let model = samples::all_joint_types();
        let spec = ParamSpec::parse(
            &model,
            &[
                "mass:body_revolute",
                "com:root",
                "inertia:root",
                "damping:universal",
                "damping:continuous",
                "rest:planar",
            ],
        )
        .unwrap();
        assert_eq!(spec.len(), 1 + 3 + 6 + 2 + 1 + 3);
        let names = spec.names(&model);
        assert_eq!(names[0], "mass:body_revolute");
        assert_eq!(names[2], "com:root.y");
        assert_eq!(names[8], "inertia:root.xz");
        assert_eq!(names[10], "damping:universal[0]");
        assert_eq!(names[12], "damping:continuous");
        assert_eq!(names[15], "rest:planar[2]");
        let g = ParamSpec::parse(&model, &["gravity", "placement:screw"]).unwrap();
        assert_eq!(
            g.names(&model),
            ["gravity.x", "gravity.y", "gravity.z", "placement:screw.x", "placement:screw.y", "placement:screw.z"]
        );
        assert_eq!(g.entries()[1].index, model.joint_index("screw").unwrap());
        assert_eq!(g.entry_names(&model), ["gravity", "placement:screw"]);
    }

    type FieldCheck = Box<dyn Fn(&Model, &Model) -> bool>;

    #[test]
    fn each_kind_changes_exactly_its_field() {
        const D: f64 = 0.005;
        let model = samples::all_joint_types();
        let u = model.joint_index("universal").unwrap();
        let cases: Vec<(&str, FieldCheck)> = vec![
            (
                "mass:body_universal",
                Box::new(move |a, b| {
                    let (ia, ib) = (a.bodies()[u].inertia, b.bodies()[u].inertia);
                    (ib.mass - ia.mass - D).abs() < 1e-15
                        && (ib.com() - ia.com()).amax() < 1e-15
                        && (ib.inertia_about_com() - ia.inertia_about_com()).amax() < 1e-15
                }),
            ),
            (
                "com:body_universal",
                Box::new(move |a, b| {
                    let (ia, ib) = (a.bodies()[u].inertia, b.bodies()[u].inertia);
                    ib.mass == ia.mass
                        && (ib.com() - ia.com() - Vec3::new(0.0, D, 0.0)).amax() < 1e-15
                        && (ib.inertia_about_com() - ia.inertia_about_com()).amax() < 1e-15
                }),
            ),
            (
                "inertia:body_universal",
                Box::new(move |a, b| {
                    let (ia, ib) = (a.bodies()[u].inertia, b.bodies()[u].inertia);
                    let d = ib.inertia_about_com() - ia.inertia_about_com();
                    let mut want = Mat3::zeros();
                    want[(1, 1)] = D;
                    ib.mass == ia.mass && (ib.com() - ia.com()).amax() < 1e-15 && (d - want).amax() < 1e-14
                }),
            ),
            (
                "damping:universal",
                Box::new(move |a, b| {
                    let k = a.v_index(u) + 1;
                    (b.damping()[k] - a.damping()[k] - D).abs() < 1e-15
                }),
            ),
            (
                "stiffness:universal",
                Box::new(move |a, b| {
                    let k = a.v_index(u) + 1;
                    (b.stiffness()[k] - a.stiffness()[k] - D).abs() < 1e-15
                }),
            ),
            (
                "armature:universal",
                Box::new(move |a, b| {
                    let k = a.v_index(u) + 1;
                    (b.armature()[k] - a.armature()[k] - D).abs() < 1e-15
                }),
            ),
            (
                "rest:universal",
                Box::new(move |a, b| {
                    let k = a.q_index(u) + 1;
                    (b.rest_configuration()[k] - a.rest_configuration()[k] - D).abs() < 1e-15
                }),
            ),
            (
                "placement:universal",
                Box::new(move |a, b| {
                    let d = b.joints()[u].placement.trans - a.joints()[u].placement.trans;
                    (d - Vec3::new(0.0, D, 0.0)).amax() < 1e-15
                        && b.joints()[u].placement.rot == a.joints()[u].placement.rot
                }),
            ),
            ("gravity", Box::new(|a, b| (b.gravity() - a.gravity() - Vec3::new(0.0, D, 0.0)).amax() < 1e-15)),
        ];
        for (name, check) in cases {
            let spec = ParamSpec::parse(&model, &[name]).unwrap();
            let m = perturbed(&spec, &model, 1.min(spec.len() - 1), D);
            assert!(check(&model, &m), "{name}: intended field not changed as expected");
            // Everything else is unchanged: restoring θ gives back the model exactly.
            let back = spec.apply(&m, &spec.values(&model)).unwrap();
            let mut diff_fields = 0;
            for (x, y) in back.bodies().iter().zip(model.bodies()) {
                if x != y {
                    diff_fields += 1;
                    assert!(
                        (x.inertia.rot - y.inertia.rot).amax() < 1e-14 && (x.inertia.h - y.inertia.h).amax() < 1e-14
                    );
                }
            }
            if !spec.entries()[0].kind.is_body_kind() {
                assert_eq!(back, model, "{name}");
            } else {
                assert!(diff_fields <= 1);
                assert_eq!(back.joints(), model.joints());
            }
            // Other bodies and joints untouched.
            for i in 0..model.nbodies() {
                if i != u {
                    assert_eq!(m.bodies()[i], model.bodies()[i], "{name}: body {i} changed");
                    assert_eq!(m.joints()[i], model.joints()[i], "{name}: joint {i} changed");
                }
            }
        }
    }

    #[test]
    fn errors_are_clear() {
        let model = samples::all_joint_types();
        let err = |names: &[&str]| ParamSpec::parse(&model, names).unwrap_err().to_string();
        assert!(err(&["size:root"]).contains("unknown parameter kind 'size'"));
        assert!(err(&["mass:nope"]).contains("no link named 'nope'"));
        assert!(err(&["damping:nope"]).contains("no joint named 'nope'"));
        assert!(err(&["mass:root", "mass:root"]).contains("listed twice"));
        assert!(err(&["damping:fixed"]).contains("no degrees of freedom"));
        assert!(err(&["rest:spherical"]).contains("quaternion"));
        assert!(err(&["rest:root_root"]).contains("quaternion"));
        assert!(err(&["mass"]).contains("expected 'mass:LINK'"));
        assert!(err(&["gravity:z"]).contains("takes no"));
        // placement of a fixed joint is allowed
        assert_eq!(ParamSpec::parse(&model, &["placement:fixed"]).unwrap().len(), 3);
        let spec = ParamSpec::parse(&model, &["mass:root"]).unwrap();
        assert!(spec.apply(&model, &DVector::from_element(1, -1.0)).is_err());
        assert!(spec.apply(&model, &DVector::from_element(2, 1.0)).is_err());
        assert!(spec.apply(&model, &DVector::from_element(1, f64::NAN)).is_err());
        let spec = ParamSpec::parse(&model, &["damping:continuous"]).unwrap();
        assert!(spec.apply(&model, &DVector::from_element(1, -1.0)).is_err());
    }

    #[test]
    fn serde_round_trip() {
        let model = samples::arm7();
        let spec = ParamSpec::parse(&model, &["mass:link3", "damping:joint2", "gravity"]).unwrap();
        let back: ParamSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
    }
}
