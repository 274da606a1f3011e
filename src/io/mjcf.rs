//! MJCF (MuJoCo XML) import: the kinematic tree, inertias, joints and collision geometry
//! of a `<mujoco>` model (docs/models.md, "MJCF").
//!
//! Supported: `<compiler angle eulerseq meshdir inertiafromgeom autolimits settotalmass
//! coordinate="local">`, `<option timestep gravity>`, `<default>` classes with inheritance
//! (`class`, `childclass`; joint, geom, inertial and motor defaults),
//! `<worldbody>` and nested `<body pos quat|euler|axisangle|xyaxes|zaxis>`,
//! `<inertial pos quat|… mass diaginertia|fullinertia>` or inertia from the geoms
//! (`inertiafromgeom`, geom `mass`/`density`), joints (`hinge`, `slide`, `ball`, `free`,
//! `<freejoint>`; `pos axis range limited damping stiffness springref armature
//! frictionloss`), geoms (`plane sphere capsule cylinder box mesh`, `fromto`, `friction`,
//! `contype`/`conaffinity`, `rgba`), `<asset><mesh file scale>`, `<contact><exclude>`, joint motors
//! of `<actuator>` (the control map [`MjcfModel::actuators`] and the joints' effort limits),
//! `<include file>` (the included file's `<mujoco>` children, spliced in).
//!
//! Mapping. A body with several joints becomes a chain of massless bodies, one per joint
//! (named `BODY/JOINT`), the last one carrying the body's name and contents; each joint
//! turns about its own anchor `pos`, so the frame of joint k sits at its anchor and the
//! body's contents are expressed from the last anchor. A geom's `contype`/`conaffinity`
//! become the shape's collision group/mask (stiction collides a pair when both
//! `contype_a & conaffinity_b` and `contype_b & conaffinity_a` are nonzero; MuJoCo when
//! either is — the same for the default 1/1, and a warning otherwise). A body's visual
//! shapes (for viewers) are its purely visual geoms (`contype` and `conaffinity` 0) when it
//! has some, else all its geoms when one is a mesh (drawn as the mesh, not the hull it
//! collides as), else none; `rgba` colours them. Everything else
//! (other actuators, tendons, sensors, sites, cameras, lights, ellipsoids' collision …) is
//! reported, one warning per element, and ignored; `strict` makes those errors.
//!
//! [`MjcfModel::actuators`]: super::MjcfModel::actuators

use super::{mesh, MjcfActuator, MjcfModel, MjcfOptions};
use crate::collision::{Material, TriangleMesh};
use crate::error::LoadError;
use crate::math::{Inertia, Mat3, Vec3, SE3};
use crate::model::{Body, CollisionShape, Geometry, Joint, ModelBuilder, VisualGeometry, VisualShape, WORLD};
use nalgebra::{Rotation3, Unit, UnitQuaternion};
use roxmltree::{Document, Node};
use std::collections::HashMap;
use std::fmt::Display;
use std::path::{Path, PathBuf};

type R<T> = Result<T, LoadError>;

/// The density MuJoCo gives geoms without `mass` or `density` (kg/m³, water).
const DEFAULT_DENSITY: f64 = 1000.0;

/// Parses MJCF text; `file` names the source in messages.
pub(crate) fn parse(xml: &str, file: &str, base_dir: Option<&Path>, options: &MjcfOptions) -> R<MjcfModel> {
    let xml = expand_includes(xml, file, base_dir, 0)?;
    let xml = xml.as_str();
    let doc = Document::parse(xml).map_err(|e| LoadError::Malformed {
        file: file.into(),
        element: "XML document".into(),
        reason: e.to_string(),
    })?;
    let root = doc.root_element();
    let mut p = Parser {
        doc: &doc,
        file: file.into(),
        base_dir: base_dir.map(Path::to_path_buf),
        options,
        warnings: vec![],
        degrees: true,
        eulerseq: ['x', 'y', 'z'],
        meshdir: None,
        inertia_from_geom: InertiaFromGeom::Auto,
        autolimits: true,
        total_mass: None,
        defaults: HashMap::new(),
        meshes: HashMap::new(),
        builder: ModelBuilder::new(root.attribute("model").unwrap_or("mjcf")),
        timestep: None,
        actuators: vec![],
        names: HashMap::new(),
    };
    if root.tag_name().name() != "mujoco" {
        return Err(p.err(root, "root element", format!("expected <mujoco>, got <{}>", root.tag_name().name())));
    }
    p.builder.set_allow_massless_moving_links(true);
    p.builder.set_merge_fixed_links(options.merge_fixed_joints);
    // Compiler settings and defaults first: they apply to everything, wherever they stand.
    for c in root.children().filter(Node::is_element) {
        match c.tag_name().name() {
            "compiler" => p.compiler(c)?,
            "default" => p.default_class(c, None)?,
            _ => {}
        }
    }
    for c in root.children().filter(Node::is_element) {
        match c.tag_name().name() {
            "compiler" | "default" => {}
            "option" => p.option(c)?,
            "asset" => p.asset(c)?,
            "worldbody" => p.worldbody(c)?,
            "contact" => p.contact(c)?,
            "actuator" => {} // after the bodies: it names their joints
            other => p.unsupported(c, &format!("<{other}>"))?,
        }
    }
    for c in root.children().filter(|c| c.is_element() && c.tag_name().name() == "actuator") {
        p.actuator(c)?;
    }
    if let Some(total) = p.total_mass {
        p.scale_to_total_mass(total);
    }
    let file_name = p.file.clone();
    let model = p.builder.build().map_err(|source| LoadError::Model { file: file_name.clone(), source })?;
    crate::dynamics::check_mass_matrix(&model, model.neutral().as_slice()).map_err(|e| LoadError::Model {
        file: file_name,
        source: match e {
            crate::Error::Model(source) => source,
            other => crate::ModelError::Invalid(other.to_string()),
        },
    })?;
    Ok(MjcfModel { model, warnings: p.warnings, timestep: p.timestep, actuators: p.actuators })
}

/// The deepest chain of `<include>`s followed (a file including itself fails here).
const MAX_INCLUDE_DEPTH: usize = 16;

/// `xml` with every `<include file="F"/>` replaced by the children of F's `<mujoco>` root
/// (F relative to `base_dir`, included files expanded in turn). Line numbers in later
/// messages count the expanded text.
fn expand_includes(xml: &str, file: &str, base_dir: Option<&Path>, depth: usize) -> R<String> {
    let malformed =
        |element: &str, reason: String| LoadError::Malformed { file: file.into(), element: element.into(), reason };
    if !xml.contains("<include") {
        return Ok(xml.to_string());
    }
    let doc = Document::parse(xml).map_err(|e| malformed("XML document", e.to_string()))?;
    let mut spans = vec![];
    for n in doc.descendants().filter(|n| n.is_element() && n.tag_name().name() == "include") {
        let line = doc.text_pos_at(n.range().start).row;
        let name = n
            .attribute("file")
            .ok_or_else(|| malformed("include", format!("missing attribute 'file' (line {line})")))?;
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(malformed(
                "include",
                format!("'{name}': includes nested deeper than {MAX_INCLUDE_DEPTH} (a cycle?)"),
            ));
        }
        let path = base_dir.map_or_else(|| PathBuf::from(name), |d| d.join(name));
        let text = std::fs::read_to_string(&path).map_err(|e| LoadError::Io {
            path: path.display().to_string(),
            reason: format!("included from {file}: {e}"),
        })?;
        let inner = {
            let sub = Document::parse(&text).map_err(|e| malformed("include", format!("'{name}': {e}")))?;
            let root = sub.root_element();
            if root.tag_name().name() != "mujoco" {
                return Err(malformed("include", format!("'{name}': the root element must be <mujoco>")));
            }
            match (root.first_child(), root.last_child()) {
                (Some(a), Some(b)) => text[a.range().start..b.range().end].to_string(),
                _ => String::new(),
            }
        };
        let expanded = expand_includes(&inner, file, path.parent(), depth + 1)?;
        spans.push((n.range(), expanded));
    }
    let mut out = String::with_capacity(xml.len());
    let mut at = 0;
    for (range, text) in spans {
        out.push_str(&xml[at..range.start]);
        out.push_str(&text);
        at = range.end;
    }
    out.push_str(&xml[at..]);
    Ok(out)
}

#[derive(Clone, Copy, PartialEq)]
enum InertiaFromGeom {
    /// Only for bodies without `<inertial>` (MuJoCo's default, `auto`).
    Auto,
    /// Always from the geoms.
    True,
    /// Never.
    False,
}

/// One `<default>` class: the attributes it sets per element kind, and its parent.
#[derive(Clone, Default)]
struct DefaultClass {
    parent: Option<String>,
    attrs: HashMap<String, HashMap<String, String>>,
}

struct Parser<'a, 'input> {
    doc: &'a Document<'input>,
    file: String,
    base_dir: Option<PathBuf>,
    options: &'a MjcfOptions,
    warnings: Vec<String>,
    degrees: bool,
    eulerseq: [char; 3],
    meshdir: Option<String>,
    inertia_from_geom: InertiaFromGeom,
    autolimits: bool,
    /// `<compiler settotalmass>`: scale every body's mass and inertia to this total.
    total_mass: Option<f64>,
    defaults: HashMap<String, DefaultClass>,
    meshes: HashMap<String, TriangleMesh>,
    builder: ModelBuilder,
    timestep: Option<f64>,
    actuators: Vec<MjcfActuator>,
    /// Anonymous element counters, for generated names.
    names: HashMap<&'static str, usize>,
}

/// The frame of a `fromto` segment (z along it, at its midpoint) and its half length;
/// `None` without a six-number `fromto` or for a zero-length one.
fn segment(fromto: &Option<Vec<f64>>) -> Option<(SE3, f64)> {
    let f = fromto.as_ref().filter(|f| f.len() == 6)?;
    let (a, b) = (Vec3::new(f[0], f[1], f[2]), Vec3::new(f[3], f[4], f[5]));
    let d = b - a;
    let half = 0.5 * d.norm();
    if half == 0.0 {
        return None;
    }
    let rot = *Rotation3::rotation_between(&Vec3::z(), &d)
        .unwrap_or_else(|| Rotation3::from_axis_angle(&Unit::new_normalize(Vec3::x()), std::f64::consts::PI))
        .matrix();
    Some((SE3::new(rot, (a + b) * 0.5), half))
}

/// A geom's collision shape and its mass properties (in the body frame).
struct GeomOut {
    shape: Option<CollisionShape>,
    inertia: Option<Inertia>,
    /// The geom as a visual shape (for viewers: a mesh geom as its mesh, not its hull), and
    /// whether it is purely visual (`contype` and `conaffinity` both 0).
    visual: Option<(VisualShape, bool)>,
}

impl<'a, 'input> Parser<'a, 'input> {
    fn line(&self, n: Node) -> u32 {
        super::xml::line(self.doc, n)
    }

    fn err(&self, n: Node, element: &str, reason: impl Display) -> LoadError {
        super::xml::malformed(self.doc, &self.file, n, element, reason)
    }

    fn warn(&mut self, n: Node, msg: impl Display) {
        let w = super::xml::warning(self.doc, &self.file, n, msg);
        self.warnings.push(w);
    }

    /// An element stiction does not model: a warning, or an error when strict.
    fn unsupported(&mut self, n: Node, what: &str) -> R<()> {
        if self.options.strict {
            return Err(LoadError::Unsupported {
                file: self.file.clone(),
                element: what.to_string(),
                reason: format!("not modelled by stiction (line {}); load without strict to ignore it", self.line(n)),
            });
        }
        self.warn(n, format!("{what} is not supported: ignored"));
        Ok(())
    }

    fn fresh_name(&mut self, kind: &'static str) -> String {
        let k = self.names.entry(kind).or_insert(0);
        *k += 1;
        format!("{kind}{}", *k - 1)
    }

    // ---- attributes with defaults -------------------------------------------------

    /// Attribute `name` of element `n` of kind `kind` (`joint`, `geom`, …): its own, else
    /// the nearest class that sets it (the element's class, or the childclass in force,
    /// up through the parents, then `main`).
    fn get(&self, n: Node<'_, 'input>, kind: &str, class: &str, name: &str) -> Option<String> {
        if let Some(v) = n.attribute(name) {
            return Some(v.to_string());
        }
        let mut c = Some(n.attribute("class").unwrap_or(class).to_string());
        while let Some(name_c) = c {
            let Some(d) = self.defaults.get(&name_c) else { break };
            if let Some(v) = d.attrs.get(kind).and_then(|a| a.get(name)) {
                return Some(v.clone());
            }
            c = d.parent.clone();
        }
        None
    }

    fn numbers(&self, n: Node, element: &str, name: &str, text: &str, count: Option<usize>) -> R<Vec<f64>> {
        super::xml::numbers(self.doc, &self.file, n, element, name, text, count)
    }

    fn nums(&self, n: Node<'_, 'input>, kind: &str, class: &str, element: &str, name: &str) -> R<Option<Vec<f64>>> {
        match self.get(n, kind, class, name) {
            Some(t) => Ok(Some(self.numbers(n, element, name, &t, None)?)),
            None => Ok(None),
        }
    }

    fn num_or(&self, n: Node<'_, 'input>, kind: &str, class: &str, element: &str, name: &str, d: f64) -> R<f64> {
        match self.get(n, kind, class, name) {
            Some(t) => Ok(self.numbers(n, element, name, &t, Some(1))?[0]),
            None => Ok(d),
        }
    }

    fn vec3_or(&self, n: Node<'_, 'input>, kind: &str, class: &str, element: &str, name: &str, d: Vec3) -> R<Vec3> {
        match self.get(n, kind, class, name) {
            Some(t) => Ok(Vec3::from_column_slice(&self.numbers(n, element, name, &t, Some(3))?)),
            None => Ok(d),
        }
    }

    fn angle(&self, x: f64) -> f64 {
        if self.degrees {
            x.to_radians()
        } else {
            x
        }
    }

    /// The frame of an element from `pos` and one of `quat`, `axisangle`, `euler`,
    /// `xyaxes`, `zaxis` (relative to its parent's frame).
    fn frame(&self, n: Node<'_, 'input>, kind: &str, class: &str, element: &str) -> R<SE3> {
        let pos = self.vec3_or(n, kind, class, element, "pos", Vec3::zeros())?;
        let given: Vec<&str> = ["quat", "axisangle", "euler", "xyaxes", "zaxis"]
            .into_iter()
            .filter(|a| n.attribute(*a).is_some())
            .collect();
        if given.len() > 1 {
            return Err(self.err(n, element, format!("more than one orientation given: {}", given.join(", "))));
        }
        let rot = match given.first().copied() {
            None => Mat3::identity(),
            Some("quat") => {
                let q = self.numbers(n, element, "quat", n.attribute("quat").unwrap_or(""), Some(4))?;
                let quat = nalgebra::Quaternion::new(q[0], q[1], q[2], q[3]);
                if quat.norm() < 1e-12 {
                    return Err(self.err(n, element, "attribute 'quat' is zero"));
                }
                *UnitQuaternion::from_quaternion(quat).to_rotation_matrix().matrix()
            }
            Some("axisangle") => {
                let a = self.numbers(n, element, "axisangle", n.attribute("axisangle").unwrap_or(""), Some(4))?;
                let axis = Vec3::new(a[0], a[1], a[2]);
                if axis.norm() < 1e-12 {
                    return Err(self.err(n, element, "attribute 'axisangle' has a zero axis"));
                }
                SE3::from_axis_angle(&axis.normalize(), self.angle(a[3])).rot
            }
            Some("euler") => {
                let e = self.numbers(n, element, "euler", n.attribute("euler").unwrap_or(""), Some(3))?;
                let mut r = Mat3::identity();
                for (k, c) in self.eulerseq.iter().enumerate() {
                    let axis = match c.to_ascii_lowercase() {
                        'x' => Vec3::x(),
                        'y' => Vec3::y(),
                        _ => Vec3::z(),
                    };
                    let step = SE3::from_axis_angle(&axis, self.angle(e[k])).rot;
                    // Lowercase: axes that move with the frame (post-multiply); uppercase: fixed axes.
                    r = if c.is_ascii_lowercase() { r * step } else { step * r };
                }
                r
            }
            Some("xyaxes") => {
                let a = self.numbers(n, element, "xyaxes", n.attribute("xyaxes").unwrap_or(""), Some(6))?;
                let x = Vec3::new(a[0], a[1], a[2]);
                let y = Vec3::new(a[3], a[4], a[5]);
                let xn = x.try_normalize(1e-12).ok_or_else(|| self.err(n, element, "attribute 'xyaxes': zero x"))?;
                let yo = y - xn * xn.dot(&y);
                let yn = yo.try_normalize(1e-12).ok_or_else(|| self.err(n, element, "attribute 'xyaxes': y ∥ x"))?;
                Mat3::from_columns(&[xn, yn, xn.cross(&yn)])
            }
            _ => {
                let z = self.numbers(n, element, "zaxis", n.attribute("zaxis").unwrap_or(""), Some(3))?;
                let z = Vec3::new(z[0], z[1], z[2])
                    .try_normalize(1e-12)
                    .ok_or_else(|| self.err(n, element, "attribute 'zaxis' is zero"))?;
                *Rotation3::rotation_between(&Vec3::z(), &z)
                    .unwrap_or_else(|| {
                        Rotation3::from_axis_angle(&Unit::new_normalize(Vec3::x()), std::f64::consts::PI)
                    })
                    .matrix()
            }
        };
        Ok(SE3::new(rot, pos))
    }

    /// `<compiler settotalmass>`: every body's mass and inertia scaled by one factor so
    /// that the bodies' masses add up to `total` (nothing to scale when they have none).
    fn scale_to_total_mass(&mut self, total: f64) {
        let sum: f64 =
            self.builder.links.iter().filter(|l| l.name != crate::model::WORLD).map(|l| l.inertia.mass).sum();
        if sum <= 0.0 {
            self.warnings.push(format!("{}: <compiler settotalmass>: the bodies have no mass to scale", self.file));
            return;
        }
        let s = total / sum;
        for l in self.builder.links.iter_mut().filter(|l| l.name != crate::model::WORLD) {
            l.inertia = Inertia { mass: l.inertia.mass * s, h: l.inertia.h * s, rot: l.inertia.rot * s };
        }
    }

    // ---- top-level sections ---------------------------------------------------------

    fn compiler(&mut self, n: Node<'_, 'input>) -> R<()> {
        let element = "compiler";
        if let Some(a) = n.attribute("angle") {
            self.degrees = match a {
                "degree" => true,
                "radian" => false,
                other => {
                    return Err(self.err(n, element, format!("angle must be 'degree' or 'radian', got '{other}'")))
                }
            };
        }
        if let Some(s) = n.attribute("eulerseq") {
            let chars: Vec<char> = s.chars().collect();
            if chars.len() != 3 || !chars.iter().all(|c| "xyzXYZ".contains(*c)) {
                return Err(self.err(n, element, format!("eulerseq must be three of xyzXYZ, got '{s}'")));
            }
            self.eulerseq = [chars[0], chars[1], chars[2]];
        }
        self.meshdir = n.attribute("meshdir").map(str::to_string);
        if let Some(i) = n.attribute("inertiafromgeom") {
            self.inertia_from_geom = match i {
                "auto" => InertiaFromGeom::Auto,
                "true" => InertiaFromGeom::True,
                "false" => InertiaFromGeom::False,
                other => return Err(self.err(n, element, format!("inertiafromgeom '{other}'"))),
            };
        }
        if let Some(a) = n.attribute("autolimits") {
            self.autolimits = a == "true";
        }
        if let Some(v) = n.attribute("settotalmass") {
            match v.trim().parse::<f64>() {
                // MuJoCo: a value ≤ 0 (the default, −1) leaves the masses as they are.
                Ok(m) if m.is_finite() => self.total_mass = (m > 0.0).then_some(m),
                _ => return Err(self.err(n, element, format!("settotalmass must be a finite number, got '{v}'"))),
            }
        }
        if let Some(c) = n.attribute("coordinate") {
            if c != "local" {
                return Err(self.err(n, element, format!("coordinate '{c}': only 'local' frames are supported")));
            }
        }
        for a in n.attributes() {
            if ![
                "angle",
                "eulerseq",
                "meshdir",
                "inertiafromgeom",
                "autolimits",
                "settotalmass",
                "coordinate",
                "texturedir",
                "assetdir",
            ]
            .contains(&a.name())
            {
                let what = format!("<compiler {}>", a.name());
                self.unsupported(n, &what)?;
            }
        }
        Ok(())
    }

    fn default_class(&mut self, n: Node<'_, 'input>, parent: Option<String>) -> R<()> {
        let name = match (n.attribute("class"), &parent) {
            (Some(c), _) => c.to_string(),
            (None, None) => "main".to_string(),
            (None, Some(_)) => return Err(self.err(n, "default", "a nested <default> needs a 'class'")),
        };
        // The top-level unnamed default is "main"; a named top-level one inherits from it.
        let parent = parent.or_else(|| (name != "main").then(|| "main".to_string()));
        let mut class = DefaultClass { parent: parent.clone(), attrs: HashMap::new() };
        for c in n.children().filter(Node::is_element) {
            match c.tag_name().name() {
                "default" => {}
                kind @ ("joint" | "geom" | "inertial" | "motor" | "general") => {
                    let attrs = c.attributes().map(|a| (a.name().to_string(), a.value().to_string())).collect();
                    class.attrs.insert(kind.to_string(), attrs);
                }
                other => self.unsupported(c, &format!("<{other}> in <default>"))?,
            }
        }
        self.defaults.insert(name.clone(), class);
        for c in n.children().filter(|c| c.is_element() && c.tag_name().name() == "default") {
            self.default_class(c, Some(name.clone()))?;
        }
        Ok(())
    }

    fn option(&mut self, n: Node<'_, 'input>) -> R<()> {
        if let Some(t) = n.attribute("timestep") {
            let dt = self.numbers(n, "option", "timestep", t, Some(1))?[0];
            self.timestep = Some(dt);
        }
        if let Some(g) = n.attribute("gravity") {
            let g = self.numbers(n, "option", "gravity", g, Some(3))?;
            self.builder.gravity(Vec3::new(g[0], g[1], g[2]));
        }
        for c in n.children().filter(Node::is_element) {
            let what = format!("<{}> in <option>", c.tag_name().name());
            self.unsupported(c, &what)?;
        }
        Ok(())
    }

    fn asset(&mut self, n: Node<'_, 'input>) -> R<()> {
        for c in n.children().filter(Node::is_element) {
            match c.tag_name().name() {
                "mesh" => {
                    let file = c.attribute("file");
                    let name = match (c.attribute("name"), file) {
                        (Some(n), _) => n.to_string(),
                        (None, Some(f)) => {
                            Path::new(f).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
                        }
                        (None, None) => return Err(self.err(c, "mesh", "needs a 'name' or a 'file'")),
                    };
                    let element = format!("mesh '{name}'");
                    let scale = match c.attribute("scale") {
                        Some(s) => Vec3::from_column_slice(&self.numbers(c, &element, "scale", s, Some(3))?),
                        None => Vec3::new(1.0, 1.0, 1.0),
                    };
                    let Some(file) = file else {
                        // Inline vertices: the mesh is their convex hull (as in MuJoCo).
                        let text =
                            c.attribute("vertex").ok_or_else(|| self.err(c, &element, "needs 'file' or 'vertex'"))?;
                        let v = self.numbers(c, &element, "vertex", text, None)?;
                        if v.len() < 12 || v.len() % 3 != 0 {
                            return Err(self.err(c, &element, "attribute 'vertex' needs at least four points"));
                        }
                        let points: Vec<Vec3> =
                            v.chunks(3).map(|p| Vec3::new(p[0] * scale.x, p[1] * scale.y, p[2] * scale.z)).collect();
                        let hull = crate::collision::Polytope::convex_hull(&points)
                            .map_err(|e| self.err(c, &element, format!("convex hull of the vertices: {e}")))?;
                        let triangles = hull
                            .faces
                            .iter()
                            .flat_map(|f| {
                                (1..f.vertices.len() - 1)
                                    .map(move |k| [f.vertices[0], f.vertices[k], f.vertices[k + 1]])
                            })
                            .collect();
                        self.meshes
                            .insert(name, TriangleMesh { vertices: hull.vertices.clone(), triangles, source: None });
                        continue;
                    };
                    let mut path = self.base_dir.clone().unwrap_or_else(|| PathBuf::from("."));
                    if let Some(d) = &self.meshdir {
                        path.push(d);
                    }
                    path.push(file);
                    let file_name = self.file.clone();
                    let context = |e: LoadError| match e {
                        LoadError::Mesh { path, reason } => {
                            LoadError::Mesh { path, reason: format!("{element} of {file_name}: {reason}") }
                        }
                        other => other,
                    };
                    let mut m = mesh::load_mesh(&path, &scale).map_err(context)?;
                    let (welded, dropped) = mesh::weld_vertices(&mut m, crate::collision::polytope::MESH_TOLERANCE);
                    if welded > 0 {
                        self.warn(
                            c,
                            format!(
                                "{element}: {welded} duplicate vertices welded, {dropped} degenerate triangles dropped"
                            ),
                        );
                    }
                    self.meshes.insert(name, m);
                }
                other => {
                    if other != "texture" && other != "material" {
                        self.unsupported(c, &format!("<{other}> in <asset>"))?;
                    }
                }
            }
        }
        Ok(())
    }

    fn contact(&mut self, n: Node<'_, 'input>) -> R<()> {
        for c in n.children().filter(Node::is_element) {
            if c.tag_name().name() == "exclude" {
                let b1 = c.attribute("body1").ok_or_else(|| self.err(c, "exclude", "missing attribute 'body1'"))?;
                let b2 = c.attribute("body2").ok_or_else(|| self.err(c, "exclude", "missing attribute 'body2'"))?;
                self.builder.exclude_collision_pair(b1, b2);
            } else {
                let what = format!("<{}> in <contact>", c.tag_name().name());
                self.unsupported(c, &what)?;
            }
        }
        Ok(())
    }

    /// `<actuator>`: joint motors become the control map and the joints' effort limits
    /// (`|gear|·max|ctrlrange|`, within `forcerange`); other actuators and transmissions
    /// are warnings.
    fn actuator(&mut self, n: Node<'_, 'input>) -> R<()> {
        for c in n.children().filter(Node::is_element) {
            let index = self.actuators.len();
            let name = c.attribute("name").map(str::to_string).unwrap_or_else(|| format!("actuator{index}"));
            let element = format!("actuator '{name}'");
            let tag = c.tag_name().name();
            let Some(joint) = c.attribute("joint").filter(|_| tag == "motor") else {
                self.unsupported(c, &format!("<{tag}> {element} (only joint motors are mapped)"))?;
                continue;
            };
            // The motor's own attributes, else its class's (`<motor>` or `<general>` defaults).
            let attr =
                |p: &Self, name: &str| p.get(c, "motor", "main", name).or_else(|| p.get(c, "general", "main", name));
            let gear = match attr(self, "gear") {
                Some(g) => self.numbers(c, &element, "gear", &g, None)?.first().copied().unwrap_or(1.0),
                None => 1.0,
            };
            let range = |p: &Self, name: &str, flag: &str| -> R<Option<(f64, f64)>> {
                let Some(text) = attr(p, name) else { return Ok(None) };
                let r = p.numbers(c, &element, name, &text, Some(2))?;
                let limited = match attr(p, flag).as_deref() {
                    Some("true") => true,
                    Some("false") => false,
                    _ => p.autolimits,
                };
                if limited && r[0] > r[1] {
                    return Err(p.err(c, &element, format!("attribute '{name}': {} > {}", r[0], r[1])));
                }
                Ok(limited.then_some((r[0], r[1])))
            };
            let ctrl_range = range(self, "ctrlrange", "ctrllimited")?;
            let force_range = range(self, "forcerange", "forcelimited")?;
            let mut effort = ctrl_range.map(|(lo, hi)| gear.abs() * lo.abs().max(hi.abs()));
            if let Some((lo, hi)) = force_range {
                let f = lo.abs().max(hi.abs());
                effort = Some(effort.map_or(f, |e| e.min(f)));
            }
            let Some(spec) = self.builder.joints.iter_mut().find(|s| s.joint.name == joint) else {
                return Err(self.err(c, &element, format!("unknown joint '{joint}'")));
            };
            if let Some(e) = effort {
                if spec.joint.nv() == 1 {
                    spec.joint = spec.joint.clone().with_effort_limits(&[e]);
                }
            }
            self.actuators.push(MjcfActuator { name, joint: joint.to_string(), gear, ctrl_range, force_range });
        }
        Ok(())
    }

    fn worldbody(&mut self, n: Node<'_, 'input>) -> R<()> {
        let mut world = Body::massless(WORLD);
        for c in n.children().filter(Node::is_element) {
            match c.tag_name().name() {
                "body" => self.body(c, WORLD, &SE3::identity(), "main")?,
                "geom" => {
                    let g = self.geom(c, "main", &SE3::identity())?;
                    if let Some(s) = g.shape {
                        world = world.with_collision(s);
                    }
                }
                other => self.unsupported(c, &format!("<{other}> in <worldbody>"))?,
            }
        }
        if !world.collisions.is_empty() {
            self.builder.add_link(world);
        }
        Ok(())
    }

    /// Body `n` under `parent` (the name of the stiction body it hangs from), whose
    /// contents are expressed from the frame `shift` of that body (`parent`'s last joint
    /// anchor, inverted).
    fn body(&mut self, n: Node<'_, 'input>, parent: &str, shift: &SE3, class: &str) -> R<()> {
        let name = match n.attribute("name") {
            Some(s) => s.to_string(),
            None => self.fresh_name("body"),
        };
        let element = format!("body '{name}'");
        let class = n.attribute("childclass").unwrap_or(class).to_string();
        let pose = *shift * self.frame(n, "body", &class, &element)?;
        // The joints, in order.
        let mut joints = vec![];
        for c in n.children().filter(Node::is_element) {
            match c.tag_name().name() {
                "joint" => joints.push(self.joint(c, &class, false)?),
                "freejoint" => joints.push(self.joint(c, &class, true)?),
                _ => {}
            }
        }
        // A chain of massless bodies, one per joint but the last; the last joint's frame
        // carries the body.
        let mut parent_name = parent.to_string();
        let mut placement = pose;
        let mut anchor = Vec3::zeros();
        let count = joints.len();
        let mut last_joint = Joint::fixed(format!("{name}_weld"));
        for (k, (joint, at)) in joints.into_iter().enumerate() {
            let jp = placement * SE3::from_translation(at - anchor);
            let joint = joint.with_placement(jp);
            anchor = at;
            placement = SE3::identity();
            if k + 1 == count {
                last_joint = joint;
            } else {
                let link = format!("{name}/{}", joint.name);
                self.builder.add_body(&parent_name, joint, Body::massless(link.clone()));
                parent_name = link;
            }
        }
        if count == 0 {
            last_joint = last_joint.with_placement(pose);
        }
        // The body's contents, from the last anchor.
        let contents = SE3::from_translation(-anchor);
        let mut body = Body::massless(name.clone());
        let mut explicit: Option<Inertia> = None;
        let mut from_geoms = Inertia::zero();
        let mut any_geom_mass = false;
        let mut visuals = Vec::new();
        for c in n.children().filter(Node::is_element) {
            match c.tag_name().name() {
                "inertial" => explicit = Some(self.inertial(c, &class, &element)?.transformed(&contents)),
                "geom" => {
                    let g = self.geom(c, &class, &contents)?;
                    if let Some(s) = g.shape {
                        body = body.with_collision(s);
                    }
                    visuals.extend(g.visual);
                    if let Some(i) = g.inertia {
                        from_geoms += i;
                        any_geom_mass = true;
                    }
                }
                "joint" | "freejoint" | "body" => {}
                other => self.unsupported(c, &format!("<{other}> in {element}"))?,
            }
        }
        // Visual shapes, for viewers: the purely visual geoms when there are some; else every
        // geom when one is a mesh (a moving mesh collides as its hull; drawn as itself); else
        // none (the collision shapes are the geoms).
        let purely_visual = visuals.iter().any(|(_, v)| *v);
        let meshes = visuals
            .iter()
            .any(|(s, _)| matches!(s.geometry, VisualGeometry::Primitive(Geometry::Mesh(_) | Geometry::ConvexMesh(_))));
        if purely_visual || meshes {
            body.visuals.extend(visuals.into_iter().filter(|(_, v)| *v || !purely_visual).map(|(s, _)| s));
        }
        body.inertia = match (self.inertia_from_geom, explicit) {
            (InertiaFromGeom::True, _) | (InertiaFromGeom::Auto, None) if any_geom_mass => from_geoms,
            (_, Some(i)) => i,
            _ => Inertia::zero(),
        };
        self.builder.add_body(&parent_name, last_joint, body);
        for c in n.children().filter(|c| c.is_element() && c.tag_name().name() == "body") {
            self.body(c, &name, &contents, &class)?;
        }
        Ok(())
    }

    /// A joint and its anchor (in the body frame).
    fn joint(&mut self, n: Node<'_, 'input>, class: &str, free: bool) -> R<(Joint, Vec3)> {
        let name = match n.attribute("name") {
            Some(s) => s.to_string(),
            // Unnamed joints are numbered in document order, as MuJoCo numbers its joints.
            None => format!("joint{}", self.names.get("joint").copied().unwrap_or(0)),
        };
        *self.names.entry("joint").or_insert(0) += 1;
        let element = format!("joint '{name}'");
        if free {
            // <freejoint> takes no defaults (a <joint type="free"> does).
            return Ok((Joint::free(name), Vec3::zeros()));
        }
        let kind = self.get(n, "joint", class, "type").unwrap_or("hinge".into());
        let at = self.vec3_or(n, "joint", class, &element, "pos", Vec3::zeros())?;
        let axis = self.vec3_or(n, "joint", class, &element, "axis", Vec3::z())?;
        let mut joint = match kind.as_str() {
            "hinge" => Joint::revolute(name.clone(), axis),
            "slide" => Joint::prismatic(name.clone(), axis),
            "ball" => Joint::spherical(name.clone()),
            "free" => Joint::free(name.clone()),
            other => return Err(self.err(n, &element, format!("unknown joint type '{other}'"))),
        };
        let scalar = matches!(kind.as_str(), "hinge" | "slide");
        let to_q = |p: &Self, x: f64| if kind == "hinge" { p.angle(x) } else { x };
        if let Some(r) = self.nums(n, "joint", class, &element, "range")? {
            if r.len() != 2 {
                return Err(self.err(n, &element, "attribute 'range' needs two numbers"));
            }
            let limited = match self.get(n, "joint", class, "limited").as_deref() {
                Some("true") => true,
                Some("false") => false,
                _ => self.autolimits,
            };
            if limited && scalar {
                joint = joint.with_position_limits(&[to_q(self, r[0])], &[to_q(self, r[1])]);
            } else if limited {
                self.warn(n, format!("{element}: a {kind} joint's range is not modelled: ignored"));
            }
        }
        let damping = self.num_or(n, "joint", class, &element, "damping", 0.0)?;
        let stiffness = self.num_or(n, "joint", class, &element, "stiffness", 0.0)?;
        let armature = self.num_or(n, "joint", class, &element, "armature", 0.0)?;
        let friction = self.num_or(n, "joint", class, &element, "frictionloss", 0.0)?;
        if damping != 0.0 {
            joint = joint.with_damping(damping);
        }
        if stiffness != 0.0 {
            if scalar {
                let rest = to_q(self, self.num_or(n, "joint", class, &element, "springref", 0.0)?);
                joint = joint.with_spring(stiffness, &[rest]);
            } else {
                self.warn(n, format!("{element}: a {kind} joint's stiffness is not modelled: ignored"));
            }
        }
        if armature != 0.0 {
            joint = joint.with_armature(armature);
        }
        if friction != 0.0 {
            joint = joint.with_friction(friction);
        }
        Ok((joint, if kind == "free" { Vec3::zeros() } else { at }))
    }

    fn inertial(&self, n: Node<'_, 'input>, class: &str, owner: &str) -> R<Inertia> {
        let element = format!("inertial of {owner}");
        let frame = self.frame(n, "inertial", class, &element)?;
        let mass = self.num_or(n, "inertial", class, &element, "mass", f64::NAN)?;
        if mass.is_nan() {
            return Err(self.err(n, &element, "missing attribute 'mass'"));
        }
        let local = if let Some(d) = self.nums(n, "inertial", class, &element, "diaginertia")? {
            if d.len() != 3 {
                return Err(self.err(n, &element, "attribute 'diaginertia' needs three numbers"));
            }
            Mat3::from_diagonal(&Vec3::new(d[0], d[1], d[2]))
        } else if let Some(f) = self.nums(n, "inertial", class, &element, "fullinertia")? {
            if f.len() != 6 {
                return Err(self.err(n, &element, "attribute 'fullinertia' needs six numbers"));
            }
            Mat3::new(f[0], f[3], f[4], f[3], f[1], f[5], f[4], f[5], f[2])
        } else {
            return Err(self.err(n, &element, "needs 'diaginertia' or 'fullinertia'"));
        };
        Ok(Inertia::from_com(mass, frame.trans, frame.rot * local * frame.rot.transpose()))
    }

    /// A geom's collision shape and mass properties, expressed through `shift` into the
    /// stiction body's frame.
    fn geom(&mut self, n: Node<'_, 'input>, class: &str, shift: &SE3) -> R<GeomOut> {
        let name = n.attribute("name").map(str::to_string).unwrap_or_else(|| "(unnamed)".into());
        let element = format!("geom '{name}'");
        let kind = self.get(n, "geom", class, "type").unwrap_or("sphere".into());
        let size = self.nums(n, "geom", class, &element, "size")?.unwrap_or_default();
        let need = |p: &Self, k: usize| -> R<()> {
            if size.len() < k {
                Err(p.err(n, &element, format!("a {kind} needs {k} size numbers, got {}", size.len())))
            } else {
                Ok(())
            }
        };
        let mut frame = self.frame(n, "geom", class, &element)?;
        // fromto: a capsule or cylinder from one point to another.
        let fromto = self.nums(n, "geom", class, &element, "fromto")?;
        let mut mesh_props: Option<(f64, Vec3, Mat3)> = None;
        let (geometry, volume_inertia): (Option<Geometry>, Option<(f64, Vec3)>) = match kind.as_str() {
            "plane" => (Some(Geometry::Plane), None),
            "sphere" => {
                need(self, 1)?;
                let r = size[0];
                (
                    Some(Geometry::Sphere { radius: r }),
                    Some((4.0 / 3.0 * std::f64::consts::PI * r.powi(3), Vec3::from_element(0.4 * r * r))),
                )
            }
            "capsule" | "cylinder" => {
                let (r, half) = match segment(&fromto) {
                    Some((f, half)) => {
                        need(self, 1)?;
                        frame = f;
                        (size[0], half)
                    }
                    _ => {
                        need(self, 2)?;
                        (size[0], size[1])
                    }
                };
                let (l, r2) = (2.0 * half, r * r);
                if kind == "capsule" {
                    let (vc, vs) = (std::f64::consts::PI * r2 * l, 4.0 / 3.0 * std::f64::consts::PI * r2 * r);
                    let v = vc + vs;
                    // Cylinder plus two hemispheres (centres at ±half; hemisphere COM 3r/8 out).
                    let ixx_c = vc * (3.0 * r2 + l * l) / 12.0;
                    let ixx_s = vs * (0.4 * r2 + half * half + 0.75 * half * r);
                    let izz = vc * r2 / 2.0 + vs * 0.4 * r2;
                    let i = Vec3::new(ixx_c + ixx_s, ixx_c + ixx_s, izz) / v;
                    (Some(Geometry::Capsule { radius: r, length: l }), Some((v, i)))
                } else {
                    let v = std::f64::consts::PI * r2 * l;
                    let i = Vec3::new((3.0 * r2 + l * l) / 12.0, (3.0 * r2 + l * l) / 12.0, r2 / 2.0);
                    (Some(Geometry::Cylinder { radius: r, length: l }), Some((v, i)))
                }
            }
            "box" => {
                let h = match segment(&fromto) {
                    Some((f, half)) => {
                        need(self, 1)?;
                        frame = f;
                        Vec3::new(size[0], size[0], half)
                    }
                    None => {
                        need(self, 3)?;
                        Vec3::new(size[0], size[1], size[2])
                    }
                };
                let v = 8.0 * h.x * h.y * h.z;
                let i = Vec3::new(h.y * h.y + h.z * h.z, h.x * h.x + h.z * h.z, h.x * h.x + h.y * h.y) / 3.0;
                (Some(Geometry::Box { half_extents: h }), Some((v, i)))
            }
            "ellipsoid" => {
                need(self, 3)?;
                let (a, b, c) = (size[0], size[1], size[2]);
                self.warn(
                    n,
                    format!("{element}: an ellipsoid has no collision shape here (its mass properties are kept)"),
                );
                let v = 4.0 / 3.0 * std::f64::consts::PI * a * b * c;
                (None, Some((v, Vec3::new(b * b + c * c, a * a + c * c, a * a + b * b) / 5.0)))
            }
            "mesh" => {
                let mesh_name = self
                    .get(n, "geom", class, "mesh")
                    .ok_or_else(|| self.err(n, &element, "missing attribute 'mesh'"))?;
                let mesh = self
                    .meshes
                    .get(&mesh_name)
                    .cloned()
                    .ok_or_else(|| self.err(n, &element, format!("unknown mesh '{mesh_name}'")))?;
                // Mass properties of the mesh's convex hull (MuJoCo's default for meshes).
                mesh_props =
                    crate::collision::Polytope::convex_hull(&mesh.vertices).ok().and_then(|h| h.mass_properties());
                (Some(Geometry::Mesh(mesh)), None)
            }
            other => {
                self.unsupported(n, &format!("{element} of type '{other}'"))?;
                (None, None)
            }
        };
        let frame = *shift * frame;
        let friction = match self.nums(n, "geom", class, &element, "friction")? {
            Some(f) if !f.is_empty() => f[0],
            _ => 1.0,
        };
        let contype = self.num_or(n, "geom", class, &element, "contype", 1.0)? as u32;
        let conaffinity = self.num_or(n, "geom", class, &element, "conaffinity", 1.0)? as u32;
        if contype != conaffinity {
            self.warn(
                n,
                format!(
                    "{element}: contype {contype} and conaffinity {conaffinity} become group {contype} and mask \
                     {conaffinity}; stiction needs both directions of a pair to match, MuJoCo either"
                ),
            );
        }
        let rgba = match self.nums(n, "geom", class, &element, "rgba")? {
            Some(c) if c.len() == 4 && c.iter().all(|x| x.is_finite()) => Some([c[0], c[1], c[2], c[3]]),
            Some(c) => {
                self.warn(n, format!("{element}: rgba needs 4 finite numbers, got {c:?}; no colour"));
                None
            }
            None => None,
        };
        let visual = geometry.clone().map(|g| {
            let shape = VisualShape {
                name: n.attribute("name").map(str::to_string),
                geometry: VisualGeometry::Primitive(g),
                origin: frame,
                rgba,
            };
            (shape, contype == 0 && conaffinity == 0)
        });
        let shape = geometry.map(|g| {
            CollisionShape::new(g, frame).with_material(Material::new(friction, 0.0)).with_filter(contype, conaffinity)
        });
        // Volume, centre (geom frame) and rotational inertia per unit mass about it.
        let unit = match (volume_inertia, mesh_props) {
            (Some((v, i)), _) => Some((v, Vec3::zeros(), Mat3::from_diagonal(&i))),
            (None, Some((v, com, i))) => Some((v, com, i / v)),
            _ => None,
        };
        let inertia = match unit {
            Some((v, com, i)) => {
                let mass = match self.get(n, "geom", class, "mass") {
                    Some(t) => self.numbers(n, &element, "mass", &t, Some(1))?[0],
                    None => v * self.num_or(n, "geom", class, &element, "density", DEFAULT_DENSITY)?,
                };
                let ic = frame.rot * (i * mass) * frame.rot.transpose();
                (mass > 0.0).then(|| Inertia::from_com(mass, frame.act_point(&com), ic))
            }
            None => None,
        };
        Ok(GeomOut { shape, inertia, visual })
    }
}
