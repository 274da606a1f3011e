//! The model builder: links and joints by name (URDF-like), or chained bodies, then
//! [`ModelBuilder::build`] orders the tree depth-first and validates it.

use super::definition::{CollisionSettings, WORLD};
use super::validate::validate;
use super::{Body, Joint, Model};
use crate::error::ModelError;
use crate::math::Vec3;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// A joint together with the names of the links it connects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JointSpec {
    /// Parent link (or [`WORLD`]).
    pub parent: String,
    /// Child link.
    pub child: String,
    /// The joint.
    pub joint: Joint,
}

/// How a root link with no parent joint is attached to the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum BaseJoint {
    /// Welded to the world.
    #[default]
    Fixed,
    /// Attached by a free (floating) joint.
    Floating,
}

/// Builds a [`Model`].
///
/// ```
/// use stiction::{ModelBuilder, Body, Joint, math::{Inertia, Vec3, SE3}};
/// let mut b = ModelBuilder::new("pendulum");
/// b.add_body(
///     "world",
///     Joint::revolute("hinge", Vec3::y()),
///     Body::new("bob", Inertia::solid_sphere(1.0, 0.05)),
/// );
/// let model = b.build().unwrap();
/// assert_eq!(model.nv(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelBuilder {
    /// Model name.
    pub name: String,
    /// Gravity in world coordinates.
    pub gravity: Vec3,
    /// How a parentless root link is attached to the world.
    pub base: BaseJoint,
    /// Links in insertion order.
    pub links: Vec<Body>,
    /// Joints in insertion order.
    pub joints: Vec<JointSpec>,
    /// Collision filtering options.
    #[serde(default)]
    pub collision: CollisionSettings,
    /// Accept moving links without mass (frames between joints, the "virtual" links of
    /// a ball joint written as three hinges) when their subtree has mass. Default
    /// `false`: every moving rigid group needs positive mass. With `true` the joint-space
    /// inertia can be singular (two coaxial hinges joined by a massless link): check it
    /// with [`crate::dynamics::check_mass_matrix`], as the robot-file loaders do.
    #[serde(default)]
    pub allow_massless_moving_links: bool,
}

impl ModelBuilder {
    /// An empty builder with gravity `(0, 0, −9.81)` and a fixed base.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            gravity: Vec3::new(0.0, 0.0, -9.81),
            base: BaseJoint::Fixed,
            links: vec![],
            joints: vec![],
            collision: CollisionSettings::default(),
            allow_massless_moving_links: false,
        }
    }
    /// Sets gravity (world coordinates).
    pub fn gravity(&mut self, g: Vec3) -> &mut Self {
        self.gravity = g;
        self
    }
    /// Sets [`ModelBuilder::allow_massless_moving_links`].
    pub fn set_allow_massless_moving_links(&mut self, allow: bool) -> &mut Self {
        self.allow_massless_moving_links = allow;
        self
    }
    /// Attaches a parentless root link with a free joint (`true`) or welds it (`false`).
    pub fn floating_base(&mut self, floating: bool) -> &mut Self {
        self.base = if floating { BaseJoint::Floating } else { BaseJoint::Fixed };
        self
    }
    /// Adds a link. A link named [`WORLD`] stands for the world frame; its collision
    /// shapes become static world geometry and its inertia is ignored.
    pub fn add_link(&mut self, body: Body) -> &mut Self {
        self.links.push(body);
        self
    }
    /// Adds a joint from link `parent` (or [`WORLD`]) to link `child`.
    pub fn add_joint(&mut self, parent: &str, child: &str, joint: Joint) -> &mut Self {
        self.joints.push(JointSpec { parent: parent.into(), child: child.into(), joint });
        self
    }
    /// Adds `body` as a child of link `parent` (or [`WORLD`]) through `joint`.
    pub fn add_body(&mut self, parent: &str, joint: Joint, body: Body) -> &mut Self {
        let child = body.name.clone();
        self.add_link(body);
        self.add_joint(parent, &child, joint)
    }

    /// Turns self-collision of the articulation rooted at link `root_link` (a link
    /// attached to the world) on or off. Default: on.
    pub fn set_self_collision(&mut self, root_link: &str, enabled: bool) -> &mut Self {
        self.collision.self_collision.insert(root_link.into(), enabled);
        self
    }
    /// The shapes of links `link_a` and `link_b` never collide with each other.
    pub fn exclude_collision_pair(&mut self, link_a: &str, link_b: &str) -> &mut Self {
        self.collision.excluded_pairs.push((link_a.into(), link_b.into()));
        self
    }
    /// Whether shapes on a parent and a child rigid group are skipped (default `true`).
    pub fn set_skip_parent_child(&mut self, skip: bool) -> &mut Self {
        self.collision.skip_parent_child = skip;
        self
    }

    /// Orders the tree depth-first from the world, assigns coordinates, validates,
    /// and compiles the collision shapes ([`crate::collision::CollisionModel`]).
    pub fn build(&self) -> Result<Model, ModelError> {
        self.build_with(None)
    }

    /// [`ModelBuilder::build`] that takes the compiled collision shapes from `compiled`
    /// (a model with the same links, joints and shape geometry: this builder's model
    /// differs from it in masses, inertias, joint dynamics, placements, gravity or
    /// materials only, as [`crate::model::ParamSpec::apply`] makes it), replacing only
    /// their materials, instead of compiling the shapes (hulls, terrain trees) again.
    pub(crate) fn build_reusing_shapes(&self, compiled: &Model) -> Result<Model, ModelError> {
        self.build_with(Some(compiled))
    }

    fn build_with(&self, compiled: Option<&Model>) -> Result<Model, ModelError> {
        let mut world_shapes = vec![];
        let mut links: Vec<&Body> = vec![];
        let mut index: HashMap<&str, usize> = HashMap::new();
        for l in &self.links {
            if l.name == WORLD {
                world_shapes.extend(l.collisions.iter().cloned());
                continue;
            }
            if index.insert(l.name.as_str(), links.len()).is_some() {
                return Err(ModelError::DuplicateName { kind: "link", name: l.name.clone() });
            }
            links.push(l);
        }
        if links.is_empty() {
            return Err(ModelError::Empty);
        }
        let mut joint_names = HashMap::new();
        // parent joint of each link, children of each link (None = world)
        let mut parent_joint: Vec<Option<usize>> = vec![None; links.len()];
        let mut children: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
        for (j, spec) in self.joints.iter().enumerate() {
            if joint_names.insert(spec.joint.name.as_str(), j).is_some() {
                return Err(ModelError::DuplicateName { kind: "joint", name: spec.joint.name.clone() });
            }
            let child = *index.get(spec.child.as_str()).ok_or_else(|| ModelError::UnknownLink {
                joint: spec.joint.name.clone(),
                role: "child",
                link: spec.child.clone(),
            })?;
            let parent = if spec.parent == WORLD {
                None
            } else {
                Some(*index.get(spec.parent.as_str()).ok_or_else(|| ModelError::UnknownLink {
                    joint: spec.joint.name.clone(),
                    role: "parent",
                    link: spec.parent.clone(),
                })?)
            };
            if let Some(prev) = parent_joint[child] {
                return Err(ModelError::MultipleParents {
                    link: spec.child.clone(),
                    joints: format!("{}, {}", self.joints[prev].joint.name, spec.joint.name),
                });
            }
            parent_joint[child] = Some(j);
            children.entry(parent).or_default().push(j);
        }
        // Parentless links: exactly one may be the implicit root, and only when
        // nothing is attached to the world explicitly.
        let parentless: Vec<usize> = (0..links.len()).filter(|&i| parent_joint[i].is_none()).collect();
        let mut implicit_root = None;
        let world_children = children.get(&None).map_or(0, |c| c.len());
        if world_children == 0 {
            match parentless.as_slice() {
                [root] => implicit_root = Some(*root),
                [] => {
                    return Err(ModelError::Cycle { links: cycle_names(&links, &parent_joint, &self.joints, &index) })
                }
                many => {
                    return Err(ModelError::Disconnected {
                        root: links[many[0]].name.clone(),
                        links: names(&links, &many[1..]),
                    })
                }
            }
        } else if !parentless.is_empty() {
            return Err(ModelError::Disconnected { root: WORLD.into(), links: names(&links, &parentless) });
        } else if self.base == BaseJoint::Floating {
            return Err(ModelError::Invalid(
                "a floating base was requested but the tree is already attached to the world by explicit joints".into(),
            ));
        }

        // Depth-first order from the world.
        let mut order: Vec<(usize, Option<usize>, Joint)> = vec![]; // (link, parent body index, joint)
        let mut body_of_link: Vec<Option<usize>> = vec![None; links.len()];
        let mut stack: Vec<(usize, Option<usize>, Joint)> = vec![];
        if let Some(r) = implicit_root {
            let joint = match self.base {
                BaseJoint::Fixed => Joint::fixed(format!("{}_root", links[r].name)),
                BaseJoint::Floating => Joint::free(format!("{}_root", links[r].name)),
            };
            stack.push((r, None, joint));
        } else {
            for &j in children[&None].iter().rev() {
                let spec = &self.joints[j];
                stack.push((index[spec.child.as_str()], None, spec.joint.clone()));
            }
        }
        while let Some((link, parent_body, joint)) = stack.pop() {
            let body = order.len();
            body_of_link[link] = Some(body);
            order.push((link, parent_body, joint));
            if let Some(kids) = children.get(&Some(link)) {
                for &j in kids.iter().rev() {
                    let spec = &self.joints[j];
                    stack.push((index[spec.child.as_str()], Some(body), spec.joint.clone()));
                }
            }
        }
        if order.len() != links.len() {
            let unreached: Vec<usize> = (0..links.len()).filter(|&i| body_of_link[i].is_none()).collect();
            // Unreached links with parents are on a cycle detached from the root.
            return Err(ModelError::Cycle { links: names(&links, &unreached) });
        }
        let bodies: Vec<Body> = order.iter().map(|(l, _, _)| links[*l].clone()).collect();
        let parents: Vec<Option<usize>> = order.iter().map(|(_, p, _)| *p).collect();
        let joints: Vec<Joint> = order.into_iter().map(|(_, _, j)| j).collect();
        let model = Model::assemble(self.name.clone(), self.gravity, bodies, joints, parents, world_shapes);
        let mut model = validate(model, self.allow_massless_moving_links)?;
        model.allow_massless_moving_links = self.allow_massless_moving_links;
        let collision = match compiled {
            Some(c) if c.collision_settings == self.collision => {
                model.repairs = c.repairs.clone();
                c.collision.with_materials(&model.bodies, &model.world_shapes)?
            }
            _ => {
                let (cm, repairs) = crate::collision::CollisionModel::build_reporting(
                    &model.bodies,
                    &model.joints,
                    &model.parents,
                    &model.world_shapes,
                    &self.collision,
                )?;
                model.repairs = repairs;
                cm
            }
        };
        model.collision = Arc::new(collision);
        model.collision_settings = self.collision.clone();
        Ok(model)
    }
}

fn names(links: &[&Body], idx: &[usize]) -> String {
    idx.iter().map(|&i| format!("'{}'", links[i].name)).collect::<Vec<_>>().join(", ")
}

fn cycle_names(
    links: &[&Body],
    parent_joint: &[Option<usize>],
    joints: &[JointSpec],
    index: &HashMap<&str, usize>,
) -> String {
    // Walk parents from link 0 until a repeat; report the loop.
    let mut seen = vec![false; links.len()];
    let mut path = vec![];
    let mut cur = 0;
    while !seen[cur] {
        seen[cur] = true;
        path.push(cur);
        match parent_joint[cur].and_then(|j| index.get(joints[j].parent.as_str())) {
            Some(&p) => cur = p,
            None => break,
        }
    }
    let start = path.iter().position(|&p| p == cur).unwrap_or(0);
    names(links, &path[start..])
}

impl From<Model> for ModelBuilder {
    fn from(m: Model) -> ModelBuilder {
        let joints = m
            .joints
            .iter()
            .zip(&m.parents)
            .zip(&m.bodies)
            .map(|((j, p), b)| JointSpec {
                parent: p.map_or_else(|| WORLD.to_string(), |p| m.bodies[p].name.clone()),
                child: b.name.clone(),
                joint: j.clone(),
            })
            .collect();
        let mut links = m.bodies.clone();
        if !m.world_shapes.is_empty() {
            let mut w = Body::massless(WORLD);
            w.collisions = m.world_shapes.clone();
            links.push(w);
        }
        ModelBuilder {
            name: m.name.clone(),
            gravity: m.gravity,
            base: Default::default(),
            links,
            joints,
            collision: m.collision_settings.clone(),
            allow_massless_moving_links: m.allow_massless_moving_links,
        }
    }
}

impl TryFrom<ModelBuilder> for Model {
    type Error = ModelError;
    fn try_from(b: ModelBuilder) -> Result<Model, ModelError> {
        b.build()
    }
}

impl Serialize for Model {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        ModelBuilder::from(self.clone()).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Model {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Model, D::Error> {
        let builder = ModelBuilder::deserialize(deserializer)?;
        Model::try_from(builder).map_err(serde::de::Error::custom)
    }
}
