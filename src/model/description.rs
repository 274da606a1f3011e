//! The description of a model as its author writes it: links and joints by name (the
//! [`ModelBuilder`] data and its setters), the collision filtering options, and the
//! frames that name every link of a built model. Plain data, below everything that
//! builds, validates or merges it (`builder.rs`, `validate.rs`, `frame.rs`).

use super::{Body, Joint};
use crate::math::{Inertia, Vec3, SE3};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The name that stands for the fixed world frame as a parent.
pub const WORLD: &str = "world";

/// Which shape pairs of a model may collide, beyond the per-shape group/mask bits
/// (see [`crate::collision::CollisionModel::allows`]). Stored by the builder, so it
/// round-trips through the model's JSON form; every field has a default, so JSON
/// written without it still loads.
///
/// Defaults: every articulation collides with itself (self-collision on), shapes on a
/// parent and a child rigid group are skipped, no excluded pairs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CollisionSettings {
    /// Whether shapes on a rigid group and on its parent rigid group are skipped
    /// (default `true`: neighbouring links usually overlap at their joint).
    pub skip_parent_child: bool,
    /// Self-collision of the articulation rooted at each named link (a child of the
    /// world); articulations not named here collide with themselves.
    pub self_collision: BTreeMap<String, bool>,
    /// Link pairs whose shapes never collide.
    pub excluded_pairs: Vec<(String, String)>,
    /// Accept a static triangle mesh that is not a consistently wound manifold by
    /// splitting its bad edges ([`crate::collision::TriMeshCore::new_splitting_bad_edges`]),
    /// reported in [`crate::Model::repairs`]. Default `false`: such a mesh is an error. The
    /// robot-file loaders set it unless strict.
    pub split_bad_static_mesh_edges: bool,
}

impl Default for CollisionSettings {
    fn default() -> Self {
        Self {
            skip_parent_child: true,
            self_collision: BTreeMap::new(),
            excluded_pairs: vec![],
            split_bad_static_mesh_edges: false,
        }
    }
}

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

/// Builds a [`crate::Model`].
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
    /// Merge every link welded to a parent link (a fixed joint whose parent is not the
    /// world) into the body of its nearest non-welded ancestor: composite inertia, shapes
    /// carried over, joints below re-attached, and the link kept as a frame by name
    /// ([`crate::Model::frames`]). Dynamics, kinematics queries by link name and parameters by
    /// link name give the same results as without merging, over fewer bodies. Default
    /// `false`; the robot-file loaders set it unless asked not to.
    #[serde(default)]
    pub merge_fixed_links: bool,
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
            merge_fixed_links: false,
        }
    }
    /// Sets [`ModelBuilder::merge_fixed_links`].
    pub fn set_merge_fixed_links(&mut self, merge: bool) -> &mut Self {
        self.merge_fixed_links = merge;
        self
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
}

/// A named frame rigidly attached to a body: a link of the model's description.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// The link's name.
    pub name: String,
    /// The body carrying it.
    pub body: usize,
    /// Its pose in the body's frame (identity for the body's own link).
    pub placement: SE3,
    /// The link's own spatial inertia, in its own frame (for a body's own link, what the
    /// description gave it, before any merged link was added).
    pub inertia: Inertia,
}
