//! `stiction.ModelBuilder`: links and joints by name, URDF style.

use crate::convert::{array, inertia3, matrix, vec3};
use crate::errors::{input_error, model_err};
use crate::model::PyModel;
use pyo3::prelude::*;
use stiction::math::{Mat3, Vec3, SE3};
use stiction::model::{CollisionShape, Geometry, Material, TriangleMesh, WORLD};
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

/// A 32-bit collision filter (`group` or `mask`): an integer in `0..2**32`.
fn bits32(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<u32> {
    let n = crate::convert::count(obj, name, 0)?;
    u32::try_from(n).map_err(|_| input_error(format!("{name} must be an integer in 0..2**32 (32 bits), got {n}")))
}

fn group_arg(obj: &Bound<'_, PyAny>) -> PyResult<u32> {
    bits32(obj, "group")
}

fn mask_arg(obj: &Bound<'_, PyAny>) -> PyResult<u32> {
    bits32(obj, "mask")
}

fn required(x: Option<f64>, what: &str, shape: &str) -> PyResult<f64> {
    x.ok_or_else(|| input_error(format!("a {shape} collision shape needs `{what}`")))
}

/// A triangle mesh from `vertices` (V, 3) and `triangles` (T, 3) vertex indices.
fn triangle_mesh(
    vertices: Option<&Bound<'_, PyAny>>,
    triangles: Option<&Bound<'_, PyAny>>,
    shape: &str,
) -> PyResult<TriangleMesh> {
    let (Some(vertices), Some(triangles)) = (vertices, triangles) else {
        return Err(input_error(format!("a {shape} collision shape needs `vertices` and `triangles`")));
    };
    let (_, v) = matrix(vertices, "vertices", None, 3)?;
    let (_, t) = matrix(triangles, "triangles", None, 3)?;
    let nv = v.len() / 3;
    let index = |x: f64| -> PyResult<u32> {
        if x.fract() == 0.0 && x >= 0.0 && (x as usize) < nv {
            Ok(x as u32)
        } else {
            Err(input_error(format!("triangles: {x} is not a vertex index (the mesh has {nv} vertices)")))
        }
    };
    Ok(TriangleMesh {
        vertices: v.chunks_exact(3).map(|p| Vec3::new(p[0], p[1], p[2])).collect(),
        triangles: t
            .chunks_exact(3)
            .map(|c| Ok([index(c[0])?, index(c[1])?, index(c[2])?]))
            .collect::<PyResult<_>>()?,
        source: None,
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

    /// Adds a collision shape to link `link` (added before with `add_link`), or to the
    /// world with `link="world"` (static geometry; the world link is created on first
    /// use).
    ///
    /// `shape`: `plane` (the half-space z <= 0 of the shape frame), `sphere` (`radius`),
    /// `box` (`half_extents`), `capsule` (`radius`, `length` of the segment along z),
    /// `cylinder` (`radius`, `length` along z; collides as a 16-sided prism),
    /// `convex_mesh` or `mesh` (`vertices` (V, 3), `triangles` (T, 3), counter-clockwise
    /// seen from outside; a mesh on a moving link collides as its convex hull, on the
    /// world or a link welded to it as a static triangle mesh). The shape frame sits at
    /// `origin_xyz`, `origin_rpy` in the link frame. Two shapes collide when
    /// `(group_a & mask_b) != 0 and (group_b & mask_a) != 0`. Sizes are validated by
    /// `build`. `friction` (Coulomb μ), `restitution` and `viscous_friction` (μ_v, N·s/m,
    /// used by the viscous contact model only) are the shape's contact material. Returns
    /// the builder.
    #[pyo3(signature = (
        link, shape, radius=None, half_extents=None, length=None, vertices=None, triangles=None,
        origin_xyz=None, origin_rpy=None, friction=0.8, restitution=0.0, group=1, mask=u32::MAX, name=None,
        viscous_friction=0.0
    ))]
    #[allow(clippy::too_many_arguments)]
    fn add_collision<'py>(
        mut slf: PyRefMut<'py, Self>,
        link: &str,
        shape: &str,
        radius: Option<f64>,
        half_extents: Option<&Bound<'py, PyAny>>,
        length: Option<f64>,
        vertices: Option<&Bound<'py, PyAny>>,
        triangles: Option<&Bound<'py, PyAny>>,
        origin_xyz: Option<&Bound<'py, PyAny>>,
        origin_rpy: Option<&Bound<'py, PyAny>>,
        friction: f64,
        restitution: f64,
        #[pyo3(from_py_with = group_arg)] group: u32,
        #[pyo3(from_py_with = mask_arg)] mask: u32,
        name: Option<String>,
        viscous_friction: f64,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let geometry = match shape {
            "plane" => Geometry::Plane,
            "sphere" => Geometry::Sphere { radius: required(radius, "radius", shape)? },
            "box" => Geometry::Box {
                half_extents: vec3(
                    half_extents.ok_or_else(|| input_error("a box collision shape needs `half_extents`"))?,
                    "half_extents",
                )?,
            },
            "capsule" => Geometry::Capsule {
                radius: required(radius, "radius", shape)?,
                length: required(length, "length", shape)?,
            },
            "cylinder" => Geometry::Cylinder {
                radius: required(radius, "radius", shape)?,
                length: required(length, "length", shape)?,
            },
            "convex_mesh" => Geometry::ConvexMesh(triangle_mesh(vertices, triangles, shape)?),
            "mesh" => Geometry::Mesh(triangle_mesh(vertices, triangles, shape)?),
            other => {
                return Err(input_error(format!(
                    "unknown collision shape '{other}'; expected one of plane, sphere, box, capsule, cylinder, \
                     convex_mesh, mesh"
                )))
            }
        };
        let xyz = origin_xyz.map(|a| vec3(a, "origin_xyz")).transpose()?.unwrap_or_else(Vec3::zeros);
        let rpy = origin_rpy.map(|a| vec3(a, "origin_rpy")).transpose()?.unwrap_or_else(Vec3::zeros);
        let mut collision = CollisionShape::new(geometry, SE3::from_xyz_rpy(&xyz, &rpy))
            .with_material(Material::new(friction, restitution).with_viscous_friction(viscous_friction))
            .with_filter(group, mask);
        collision.name = name;
        let links = &mut slf.builder.links;
        let body = match links.iter_mut().position(|l| l.name == link) {
            Some(i) => &mut links[i],
            None if link == WORLD => {
                links.push(Body::massless(WORLD));
                links.last_mut().expect("just pushed")
            }
            None => return Err(input_error(format!("unknown link '{link}': add it with add_link first"))),
        };
        body.collisions.push(collision);
        Ok(slf)
    }

    /// Turns self-collision of the articulation rooted at `root_link` (a link attached
    /// to the world) on or off (default: on). Returns the builder.
    fn set_self_collision<'py>(mut slf: PyRefMut<'py, Self>, root_link: &str, enabled: bool) -> PyRefMut<'py, Self> {
        slf.builder.set_self_collision(root_link, enabled);
        slf
    }

    /// The shapes of `link_a` and `link_b` never collide with each other. Returns the builder.
    fn exclude_collision_pair<'py>(mut slf: PyRefMut<'py, Self>, link_a: &str, link_b: &str) -> PyRefMut<'py, Self> {
        slf.builder.exclude_collision_pair(link_a, link_b);
        slf
    }

    /// Whether shapes on a parent and a child rigid group are skipped (default `True`).
    /// Returns the builder.
    fn set_skip_parent_child(mut slf: PyRefMut<'_, Self>, skip: bool) -> PyRefMut<'_, Self> {
        slf.builder.set_skip_parent_child(skip);
        slf
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
