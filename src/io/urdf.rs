//! The URDF reader: walks the XML tree (`roxmltree`) and fills a [`ModelBuilder`].
//!
//! Supported: `<robot name>`; `<link>` with `<inertial>` (origin xyz/rpy, mass,
//! inertia — the tensor is rotated from the inertial frame into the link frame),
//! `<collision>` and `<visual>` (origin, box/sphere/cylinder/capsule/mesh geometry,
//! visual `<material>` with robot-level named materials); `<joint>` of type
//! revolute, continuous, prismatic, fixed, floating (free joint), planar (the axis
//! is the plane normal) and spherical/ball (extension), with origin, axis, parent,
//! child, limit and dynamics. `<mimic>` is an error in strict mode and a warning
//! otherwise; `<calibration>`, `<safety_controller>`, `<transmission>`, `<gazebo>`
//! and unknown elements give one warning each. Inertias that are only rounding away
//! from physical ones are repaired with a warning unless `strict` (the loading policy of
//! docs/models.md, [`super::inertia_policy`]); `package:///NAME/PATH` reads as
//! `package://NAME/PATH`. Physical validation (masses, inertias, axes, tree shape) is
//! left to [`ModelBuilder::build`], whose errors become [`LoadError::Model`].

use super::{inertia_policy, mesh, UrdfModel, UrdfOptions};
use crate::error::LoadError;
use crate::math::{Inertia, Mat3, Vec3, SE3};
use crate::model::{Body, CollisionShape, Geometry, Joint, ModelBuilder, VisualGeometry, VisualShape};
use roxmltree::{Document, Node};
use std::collections::HashMap;
use std::fmt::Display;
use std::path::{Path, PathBuf};

/// Parses URDF text. `file` names the source in messages.
pub(crate) fn parse(
    xml: &str,
    file: &str,
    base_dir: Option<&Path>,
    options: &UrdfOptions,
) -> Result<UrdfModel, LoadError> {
    let doc = Document::parse(xml).map_err(|e| LoadError::Malformed {
        file: file.into(),
        element: "XML document".into(),
        reason: e.to_string(),
    })?;
    let mut p = Parser { doc: &doc, file: file.into(), base_dir, options, warnings: vec![], materials: HashMap::new() };
    let mut builder = p.robot()?;
    // Massless moving links (frames between joints, a ball joint's "virtual" links) are
    // accepted when the mass matrix stays positive definite (docs/models.md).
    builder.set_allow_massless_moving_links(!options.strict);
    // A static mesh with bad edges (non-manifold, inconsistent winding) collides with
    // those edges split open, reported below.
    builder.collision.split_bad_static_mesh_edges = !options.strict;
    builder.set_merge_fixed_links(options.merge_fixed_joints);
    let model = builder.build().map_err(|source| LoadError::Model { file: file.into(), source })?;
    p.warnings.extend(model.repairs().iter().map(|r| format!("{file}: {r}")));
    let massless = massless_moving_links(&model);
    if !massless.is_empty() {
        crate::dynamics::check_mass_matrix(&model, model.neutral().as_slice()).map_err(|e| LoadError::Model {
            file: file.into(),
            source: match e {
                crate::Error::Model(source) => source,
                other => crate::ModelError::Invalid(other.to_string()),
            },
        })?;
        for link in massless {
            p.warnings.push(format!(
                "{file}: link '{link}' moves without mass (the links below it carry the mass); accepted: the joint-space \
                 inertia is positive definite at the neutral configuration"
            ));
        }
    }
    Ok(UrdfModel { model, warnings: p.warnings })
}

/// The moving links whose rigid group (the link and the links welded to it) has no mass.
fn massless_moving_links(model: &crate::Model) -> Vec<String> {
    let nb = model.nbodies();
    let mut group: Vec<f64> = model.bodies.iter().map(|b| b.inertia.mass).collect();
    for i in (0..nb).rev() {
        if model.joints[i].nv() == 0 {
            if let Some(p) = model.parents[i] {
                group[p] += group[i];
            }
        }
    }
    (0..nb).filter(|&i| model.joints[i].nv() > 0 && group[i] == 0.0).map(|i| model.bodies[i].name.clone()).collect()
}

/// Resolves a mesh URI to an existing file.
///
/// * `package://NAME/rest`: for each directory `D` of `package_dirs`, tries
///   `D/NAME/rest`, then `D/rest` when the last component of `D` is `NAME`;
/// * `file:///absolute/path`: the path;
/// * anything else: a path, relative ones taken against `base_dir` (the current
///   directory when `None`).
///
/// On failure returns a [`LoadError::Mesh`] naming the URI and every place searched.
pub fn resolve_mesh_uri(uri: &str, base_dir: Option<&Path>, package_dirs: &[PathBuf]) -> Result<PathBuf, LoadError> {
    let fail = |reason: String| LoadError::Mesh { path: uri.into(), reason };
    let list = |c: &[PathBuf]| c.iter().map(|p| format!("'{}'", p.display())).collect::<Vec<_>>().join(", ");
    if let Some(rest) = uri.strip_prefix("package://") {
        // `package:///NAME/PATH` (an empty host, as some exporters write) reads as
        // `package://NAME/PATH`.
        let rest = rest.trim_start_matches('/');
        let (name, rel) = rest.split_once('/').unwrap_or((rest, ""));
        if name.is_empty() || rel.is_empty() {
            return Err(fail("malformed package URI: expected 'package://NAME/PATH'".into()));
        }
        if package_dirs.is_empty() {
            return Err(fail(format!("cannot resolve package '{name}': no package directories were given")));
        }
        let mut tried = vec![];
        for d in package_dirs {
            tried.push(d.join(name).join(rel));
            if d.file_name().is_some_and(|f| f == name) {
                tried.push(d.join(rel));
            }
        }
        return match tried.iter().find(|p| p.is_file()) {
            Some(p) => Ok(p.clone()),
            None => Err(fail(format!("package '{name}' file '{rel}' not found; searched {}", list(&tried)))),
        };
    }
    let path = if let Some(rest) = uri.strip_prefix("file://") {
        let p = PathBuf::from(rest);
        if !p.is_absolute() {
            return Err(fail("a 'file://' URI must hold an absolute path".into()));
        }
        p
    } else {
        let p = PathBuf::from(uri);
        match base_dir {
            Some(b) if p.is_relative() => b.join(p),
            _ => p,
        }
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(fail(format!("file not found; searched '{}'", path.display())))
    }
}

/// Parser state: the document, options, accumulated warnings and named materials.
struct Parser<'a, 'input> {
    doc: &'a Document<'input>,
    file: String,
    base_dir: Option<&'a Path>,
    options: &'a UrdfOptions,
    warnings: Vec<String>,
    materials: HashMap<String, [f64; 4]>,
}

type R<T> = Result<T, LoadError>;

fn elements<'a, 'i>(n: Node<'a, 'i>) -> impl Iterator<Item = Node<'a, 'i>> {
    n.children().filter(|c| c.is_element())
}

fn child<'a, 'i>(n: Node<'a, 'i>, tag: &str) -> Option<Node<'a, 'i>> {
    elements(n).find(|c| c.tag_name().name() == tag)
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

    fn attr<'n>(&self, n: Node<'n, 'input>, element: &str, name: &str) -> R<&'n str> {
        n.attribute(name).ok_or_else(|| self.err(n, element, format!("missing attribute '{name}'")))
    }

    /// Parses the numbers of attribute `name`, requiring exactly `count` of them.
    fn numbers(&self, n: Node, element: &str, name: &str, text: &str, count: usize) -> R<Vec<f64>> {
        super::xml::numbers(self.doc, &self.file, n, element, name, text, Some(count))
    }

    fn f64_req(&self, n: Node, element: &str, name: &str) -> R<f64> {
        let text = self.attr(n, element, name)?;
        Ok(self.numbers(n, element, name, text, 1)?[0])
    }

    fn f64_or(&self, n: Node, element: &str, name: &str, default: f64) -> R<f64> {
        match n.attribute(name) {
            Some(text) => Ok(self.numbers(n, element, name, text, 1)?[0]),
            None => Ok(default),
        }
    }

    fn vec3_or(&self, n: Node, element: &str, name: &str, default: Vec3) -> R<Vec3> {
        match n.attribute(name) {
            Some(text) => Ok(Vec3::from_column_slice(&self.numbers(n, element, name, text, 3)?)),
            None => Ok(default),
        }
    }

    fn vec3_req(&self, n: Node, element: &str, name: &str) -> R<Vec3> {
        let text = self.attr(n, element, name)?;
        Ok(Vec3::from_column_slice(&self.numbers(n, element, name, text, 3)?))
    }

    fn positive(&self, n: Node, element: &str, name: &str, x: f64, allow_zero: bool) -> R<f64> {
        if x > 0.0 || (allow_zero && x == 0.0) {
            Ok(x)
        } else {
            let what = if allow_zero { "non-negative" } else { "positive" };
            Err(self.err(n, element, format!("attribute '{name}' must be {what}, got {x}")))
        }
    }

    /// The `<origin>` child of `n` (identity when absent); `owner` describes `n`.
    fn origin(&self, n: Node, owner: &str) -> R<(Vec3, Vec3)> {
        match child(n, "origin") {
            None => Ok((Vec3::zeros(), Vec3::zeros())),
            Some(o) => {
                let element = format!("origin of {owner}");
                Ok((self.vec3_or(o, &element, "xyz", Vec3::zeros())?, self.vec3_or(o, &element, "rpy", Vec3::zeros())?))
            }
        }
    }

    fn pose(&self, n: Node, owner: &str) -> R<SE3> {
        let (xyz, rpy) = self.origin(n, owner)?;
        Ok(SE3::from_xyz_rpy(&xyz, &rpy))
    }

    fn robot(&mut self) -> R<ModelBuilder> {
        let root = self.doc.root_element();
        if root.tag_name().name() != "robot" {
            return Err(self.err(
                root,
                "robot",
                format!("the root element is <{}>, expected <robot>", root.tag_name().name()),
            ));
        }
        let name = self.attr(root, "robot", "name")?;
        let mut b = ModelBuilder::new(name);
        b.floating_base(self.options.floating_base);
        // Named materials first, so that links may refer to them in any order.
        for m in elements(root).filter(|c| c.tag_name().name() == "material") {
            let mname = self.attr(m, "material", "name")?.to_string();
            let element = format!("material '{mname}'");
            match child(m, "color") {
                Some(c) => {
                    let rgba = self.rgba(c, &element)?;
                    self.materials.insert(mname, rgba);
                }
                None => self.warn(m, format!("{element} has no <color>; its texture (if any) is ignored")),
            }
        }
        for n in elements(root) {
            match n.tag_name().name() {
                "link" => {
                    let body = self.link(n)?;
                    b.add_link(body);
                }
                "joint" => {
                    let (parent, child, joint) = self.joint(n)?;
                    b.add_joint(&parent, &child, joint);
                }
                "material" => {}
                tag @ ("transmission" | "gazebo") => {
                    let what = match n.attribute("name").or_else(|| n.attribute("reference")) {
                        Some(nm) => format!("<{tag}> '{nm}'"),
                        None => format!("<{tag}>"),
                    };
                    self.warn(n, format!("{what} ignored"));
                }
                tag => self.warn(n, format!("unknown element <{tag}> in <robot> ignored")),
            }
        }
        Ok(b)
    }

    fn rgba(&self, c: Node, owner: &str) -> R<[f64; 4]> {
        let element = format!("color of {owner}");
        let text = self.attr(c, &element, "rgba")?;
        let v = self.numbers(c, &element, "rgba", text, 4)?;
        Ok([v[0], v[1], v[2], v[3]])
    }

    fn link(&mut self, n: Node) -> R<Body> {
        let name = self.attr(n, "link", "name")?.to_string();
        let owner = format!("link '{name}'");
        let mut body = Body::massless(name.clone());
        let mut n_col = 0;
        let mut n_vis = 0;
        for c in elements(n) {
            match c.tag_name().name() {
                "inertial" => body.inertia = self.inertial(c, &owner)?,
                "collision" => {
                    let what = match c.attribute("name") {
                        Some(nm) => format!("collision '{nm}' of {owner}"),
                        None => format!("collision {n_col} of {owner}"),
                    };
                    n_col += 1;
                    if let Some(shape) = self.collision(c, &what)? {
                        body.collisions.push(shape);
                    }
                }
                "visual" => {
                    let what = match c.attribute("name") {
                        Some(nm) => format!("visual '{nm}' of {owner}"),
                        None => format!("visual {n_vis} of {owner}"),
                    };
                    n_vis += 1;
                    let shape = self.visual(c, &what)?;
                    body.visuals.push(shape);
                }
                tag => self.warn(c, format!("unknown element <{tag}> in {owner} ignored")),
            }
        }
        // A link with mass and an all-zero tensor (only the mass was known): the tensor of
        // a solid of its collision shape, or of a sphere (docs/models.md, "Loading policy").
        let ic = body.inertia.inertia_about_com();
        if !self.options.strict && inertia_policy::is_negligible(body.inertia.mass, &ic) {
            let mass = body.inertia.mass;
            let from_shape =
                body.collisions.iter().find_map(|c| inertia_policy::solid_rotational(mass, &c.geometry, &c.origin.rot));
            let (rot, what) = match from_shape {
                Some((i, shape)) => (i, format!("a solid {shape} like its collision shape")),
                None => (inertia_policy::fallback_rotational(mass), "a solid sphere of water's density".to_string()),
            };
            body.inertia = Inertia::from_com(mass, body.inertia.com(), rot);
            let largest = ic.abs().max();
            self.warn(
                n,
                format!("{owner} has mass {mass} kg but a zero inertia tensor (largest entry {largest:e}): given the inertia of {what}"),
            );
        }
        Ok(body)
    }

    fn inertial(&mut self, n: Node, owner: &str) -> R<Inertia> {
        let element = format!("inertial of {owner}");
        let (com, rpy) = self.origin(n, &element)?;
        let m = child(n, "mass").ok_or_else(|| self.err(n, &element, "missing <mass>"))?;
        let mass = self.f64_req(m, &format!("mass of {owner}"), "value")?;
        let i = child(n, "inertia").ok_or_else(|| self.err(n, &element, "missing <inertia>"))?;
        let ie = format!("inertia of {owner}");
        let mut v = [0.0; 6];
        for (k, a) in ["ixx", "ixy", "ixz", "iyy", "iyz", "izz"].iter().enumerate() {
            v[k] = self.f64_req(i, &ie, a)?;
        }
        let [ixx, ixy, ixz, iyy, iyz, izz] = v;
        let local = Mat3::new(ixx, ixy, ixz, ixy, iyy, iyz, ixz, iyz, izz);
        // The tensor is given in the inertial frame (rotated by rpy): express it in the link frame.
        let r = SE3::from_xyz_rpy(&com, &rpy).rot;
        let mut ic = r * local * r.transpose();
        if !self.options.strict {
            if mass == 0.0 && ic.iter().any(|&x| x != 0.0) {
                self.warn(n, format!("{owner} has no mass but a nonzero inertia tensor: kept as a massless frame"));
                ic = Mat3::zeros();
            }
            if let (fixed, Some(change)) = inertia_policy::repair_rotational(mass, &ic) {
                self.warn(n, format!("inertia of {owner}: {change}"));
                ic = fixed;
            }
        }
        Ok(Inertia::from_com(mass, com, ic))
    }

    /// The single shape element of a `<geometry>`.
    fn geometry_node<'n>(&self, n: Node<'n, 'input>, owner: &str) -> R<(Node<'n, 'input>, String)> {
        let g = child(n, "geometry").ok_or_else(|| self.err(n, owner, "missing <geometry>"))?;
        let element = format!("geometry of {owner}");
        let shapes: Vec<Node> = elements(g).collect();
        match shapes.as_slice() {
            [s] => Ok((*s, element)),
            [] => Err(self.err(g, &element, "no shape (expected one of box, sphere, cylinder, capsule, mesh)")),
            _ => Err(self.err(g, &element, format!("{} shapes, expected exactly one", shapes.len()))),
        }
    }

    /// A primitive geometry, or `None` for a mesh (handled by the caller).
    fn primitive(&self, s: Node, element: &str) -> R<Option<Geometry>> {
        let tag = s.tag_name().name();
        let e = format!("{tag} of {element}");
        Ok(Some(match tag {
            "box" => {
                let size = self.vec3_req(s, &e, "size")?;
                for k in 0..3 {
                    self.positive(s, &e, "size", size[k], false)?;
                }
                Geometry::Box { half_extents: size * 0.5 }
            }
            "sphere" => {
                Geometry::Sphere { radius: self.positive(s, &e, "radius", self.f64_req(s, &e, "radius")?, false)? }
            }
            "cylinder" | "capsule" => {
                let radius = self.positive(s, &e, "radius", self.f64_req(s, &e, "radius")?, false)?;
                let length = self.f64_req(s, &e, "length")?;
                if tag == "cylinder" {
                    Geometry::Cylinder { radius, length: self.positive(s, &e, "length", length, false)? }
                } else {
                    Geometry::Capsule { radius, length: self.positive(s, &e, "length", length, true)? }
                }
            }
            "mesh" => return Ok(None),
            other => {
                return Err(LoadError::Unsupported {
                    file: self.file.clone(),
                    element: element.into(),
                    reason: format!(
                        "geometry <{other}> (line {}); expected box, sphere, cylinder, capsule or mesh",
                        self.line(s)
                    ),
                })
            }
        }))
    }

    fn mesh_attrs(&self, s: Node, element: &str) -> R<(String, Vec3)> {
        let e = format!("mesh of {element}");
        let uri = self.attr(s, &e, "filename")?.to_string();
        if uri.trim().is_empty() {
            return Err(self.err(s, &e, "empty attribute 'filename'"));
        }
        let scale = self.vec3_or(s, &e, "scale", Vec3::new(1.0, 1.0, 1.0))?;
        if scale.iter().any(|&x| x == 0.0) {
            return Err(self.err(s, &e, format!("attribute 'scale' has a zero component ({scale:?})")));
        }
        Ok((uri, scale))
    }

    fn collision(&mut self, n: Node, what: &str) -> R<Option<CollisionShape>> {
        let origin = self.pose(n, what)?;
        let (s, element) = self.geometry_node(n, what)?;
        let geometry = match self.primitive(s, &element)? {
            Some(g) => g,
            None => {
                let (uri, scale) = self.mesh_attrs(s, &element)?;
                if !self.options.load_collision_meshes {
                    self.warn(s, format!("collision mesh '{uri}' of {what} skipped (load_collision_meshes is off)"));
                    return Ok(None);
                }
                let context = |e: LoadError| match e {
                    LoadError::Mesh { path, reason } => {
                        LoadError::Mesh { path, reason: format!("{reason} (referenced by {what} in {})", self.file) }
                    }
                    other => other,
                };
                let path = resolve_mesh_uri(&uri, self.base_dir, &self.options.package_dirs).map_err(context)?;
                let mut mesh = mesh::load_mesh(&path, &scale).map_err(context)?;
                if !self.options.strict {
                    let (welded, dropped) = mesh::weld_vertices(&mut mesh, crate::collision::polytope::MESH_TOLERANCE);
                    if welded > 0 {
                        self.warn(
                            s,
                            format!(
                                "collision mesh '{uri}' of {what}: {welded} duplicate vertices welded, {dropped} \
                                 degenerate triangles dropped"
                            ),
                        );
                    }
                }
                mesh.source = Some(uri);
                Geometry::Mesh(mesh)
            }
        };
        for c in elements(n) {
            let tag = c.tag_name().name();
            if !matches!(tag, "origin" | "geometry") {
                self.warn(c, format!("unknown element <{tag}> in {what} ignored"));
            }
        }
        let mut shape = CollisionShape::new(geometry, origin);
        shape.name = n.attribute("name").map(str::to_string);
        Ok(Some(shape))
    }

    fn visual(&mut self, n: Node, what: &str) -> R<VisualShape> {
        let origin = self.pose(n, what)?;
        let (s, element) = self.geometry_node(n, what)?;
        let geometry = match self.primitive(s, &element)? {
            Some(g) => VisualGeometry::Primitive(g),
            None => {
                let (uri, scale) = self.mesh_attrs(s, &element)?;
                let path = match resolve_mesh_uri(&uri, self.base_dir, &self.options.package_dirs) {
                    Ok(p) => p.display().to_string(),
                    Err(e) => {
                        self.warn(s, format!("visual mesh of {what} kept unresolved: {e}"));
                        uri
                    }
                };
                VisualGeometry::MeshFile { path, scale }
            }
        };
        let mut rgba = None;
        if let Some(m) = child(n, "material") {
            let mname = m.attribute("name").unwrap_or("").to_string();
            let element = format!("material of {what}");
            if let Some(c) = child(m, "color") {
                let v = self.rgba(c, &element)?;
                if !mname.is_empty() {
                    self.materials.entry(mname.clone()).or_insert(v);
                }
                rgba = Some(v);
            } else if let Some(v) = self.materials.get(&mname) {
                rgba = Some(*v);
            } else if child(m, "texture").is_none() {
                self.warn(m, format!("{element}: material '{mname}' is not defined; no colour"));
            }
            if child(m, "texture").is_some() {
                self.warn(m, format!("{element}: texture ignored"));
            }
        }
        for c in elements(n) {
            let tag = c.tag_name().name();
            if !matches!(tag, "origin" | "geometry" | "material") {
                self.warn(c, format!("unknown element <{tag}> in {what} ignored"));
            }
        }
        Ok(VisualShape { name: n.attribute("name").map(str::to_string), geometry, origin, rgba })
    }

    fn joint(&mut self, n: Node) -> R<(String, String, Joint)> {
        let name = self.attr(n, "joint", "name")?.to_string();
        let owner = format!("joint '{name}'");
        let kind = self.attr(n, &owner, "type")?;
        let axis = match child(n, "axis") {
            Some(a) => self.vec3_req(a, &format!("axis of {owner}"), "xyz")?,
            None => Vec3::x(),
        };
        let mut joint = match kind {
            "revolute" => Joint::revolute(name.clone(), axis),
            "continuous" => Joint::continuous(name.clone(), axis),
            "prismatic" => Joint::prismatic(name.clone(), axis),
            "fixed" => Joint::fixed(name.clone()),
            "floating" => Joint::free(name.clone()),
            "planar" => Joint::planar(name.clone(), axis),
            "spherical" | "ball" => Joint::spherical(name.clone()),
            other => {
                return Err(self.err(
                    n,
                    &owner,
                    format!(
                        "unknown joint type '{other}' (expected revolute, continuous, prismatic, fixed, floating, \
                         planar or spherical)"
                    ),
                ))
            }
        };
        joint.placement = self.pose(n, &owner)?;
        let link_of = |tag: &str| -> R<String> {
            let c = child(n, tag).ok_or_else(|| self.err(n, &owner, format!("missing <{tag}>")))?;
            Ok(self.attr(c, &format!("{tag} of {owner}"), "link")?.to_string())
        };
        let parent = link_of("parent")?;
        let child_link = link_of("child")?;
        let limited = matches!(kind, "revolute" | "prismatic");
        match child(n, "limit") {
            Some(l) => {
                let e = format!("limit of {owner}");
                let lower = self.f64_or(l, &e, "lower", 0.0)?;
                let upper = self.f64_or(l, &e, "upper", 0.0)?;
                let velocity = self.f64_req(l, &e, "velocity")?;
                let effort = self.f64_req(l, &e, "effort")?;
                if limited {
                    if lower > upper {
                        return Err(self.err(l, &e, format!("lower limit {lower} exceeds upper limit {upper}")));
                    }
                    joint.limits.lower = vec![lower; 1];
                    joint.limits.upper = vec![upper; 1];
                } else if l.attribute("lower").is_some() || l.attribute("upper").is_some() {
                    self.warn(l, format!("{e}: lower/upper ignored for a {kind} joint"));
                }
                let nv = joint.nv();
                joint.limits.velocity = vec![self.positive(l, &e, "velocity", velocity, true)?; nv];
                joint.limits.effort = vec![self.positive(l, &e, "effort", effort, true)?; nv];
            }
            None if limited => {
                return Err(self.err(n, &owner, format!("a {kind} joint requires <limit> (URDF specification)")))
            }
            None => {}
        }
        if let Some(d) = child(n, "dynamics") {
            let e = format!("dynamics of {owner}");
            let damping = self.f64_or(d, &e, "damping", 0.0)?;
            let friction = self.f64_or(d, &e, "friction", 0.0)?;
            joint = joint
                .with_damping(self.positive(d, &e, "damping", damping, true)?)
                .with_friction(self.positive(d, &e, "friction", friction, true)?);
        }
        for c in elements(n) {
            match c.tag_name().name() {
                "origin" | "parent" | "child" | "axis" | "limit" | "dynamics" => {}
                "mimic" => {
                    let of = c.attribute("joint").unwrap_or("?");
                    if self.options.strict {
                        return Err(LoadError::Unsupported {
                            file: self.file.clone(),
                            element: format!("mimic of {owner}"),
                            reason: format!(
                                "mimic joints (of joint '{of}', line {}) are not supported; load without strict \
                                 to simulate the joint independently",
                                self.line(c)
                            ),
                        });
                    }
                    self.warn(
                        c,
                        format!("<mimic> of {owner} (mimics '{of}') ignored: the joint is simulated independently"),
                    );
                }
                tag @ ("calibration" | "safety_controller") => self.warn(c, format!("<{tag}> of {owner} ignored")),
                tag => self.warn(c, format!("unknown element <{tag}> in {owner} ignored")),
            }
        }
        Ok((parent, child_link, joint))
    }
}
