//! The immutable [`Model`]: the kinematic tree in depth-first order, with the
//! coordinate layout and the per-degree-of-freedom joint parameters flattened.

use super::description::{CollisionSettings, Frame, ModelBuilder};
use super::shape::CollisionShape;
use super::{Body, Joint};
use crate::collision::CollisionModel;
use crate::error::{Error, ModelError, Result};
use crate::math::{Vec3, SE3};
use nalgebra::DVector;
use std::sync::Arc;

/// An articulated rigid-body system. Immutable once built (see [`crate::model::ModelBuilder`]).
///
/// Bodies are numbered in depth-first order, so `parent(i) < i`; joint `i` attaches
/// body `i` to its parent (or the world). Body `i`'s configuration coordinates are
/// `q[q_index(i) .. q_index(i) + joint(i).nq()]`, likewise for velocities.
/// A model serializes through its builder form (`ModelBuilder`), so a deserialized model
/// is validated exactly like a built one (the impls are in `builder.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub(crate) name: String,
    pub(crate) gravity: Vec3,
    pub(crate) bodies: Vec<Body>,
    pub(crate) joints: Vec<Joint>,
    pub(crate) parents: Vec<Option<usize>>,
    pub(crate) world_shapes: Vec<CollisionShape>,
    pub(crate) q_idx: Vec<usize>,
    pub(crate) v_idx: Vec<usize>,
    pub(crate) nq: usize,
    pub(crate) nv: usize,
    /// Body owning each degree of freedom.
    pub(crate) dof_body: Vec<usize>,
    /// One past the last body of each body's subtree (depth-first order makes subtrees contiguous).
    pub(crate) subtree_end: Vec<usize>,
    /// Per-dof armature, damping, stiffness, friction, velocity and effort limits.
    pub(crate) armature: DVector<f64>,
    pub(crate) damping: DVector<f64>,
    pub(crate) stiffness: DVector<f64>,
    pub(crate) friction: DVector<f64>,
    pub(crate) velocity_limit: DVector<f64>,
    pub(crate) effort_limit: DVector<f64>,
    /// Per-coordinate position limits and spring rest configuration.
    pub(crate) lower: DVector<f64>,
    pub(crate) upper: DVector<f64>,
    pub(crate) rest: DVector<f64>,
    /// True when some joint has a spring.
    pub(crate) has_springs: bool,
    /// The compiled collision shapes and pair filter (rebuilt by the builder, never
    /// serialized: a model serializes through its builder form).
    pub(crate) collision: Arc<CollisionModel>,
    /// The collision filtering options the model was built with.
    pub(crate) collision_settings: CollisionSettings,
    /// Whether moving links without mass were allowed
    /// ([`crate::ModelBuilder::allow_massless_moving_links`]).
    pub(crate) allow_massless_moving_links: bool,
    /// What the build changed in its input, one message each ([`Model::repairs`]).
    pub(crate) repairs: Vec<String>,
    /// Every link of the description as a frame: the bodies' own links first (frame i
    /// is body i), then the links merged into them ([`ModelBuilder::merge_fixed_links`]).
    pub(crate) frames: Vec<Frame>,
    /// Per body, the frame of its joint's parent link when that link was merged into
    /// another body (the joint's placement then starts from that frame's pose).
    pub(crate) joint_parent_frame: Vec<Option<usize>>,
    /// The description the model was built from, when fixed links were merged: the
    /// model's builder form ([`ModelBuilder::from`]), so that it round-trips and its
    /// parameters address the links as written.
    pub(crate) source: Option<Arc<ModelBuilder>>,
}

impl Model {
    /// Fills the derived arrays. Called by the builder before validation.
    pub(crate) fn assemble(
        name: String,
        gravity: Vec3,
        bodies: Vec<Body>,
        joints: Vec<Joint>,
        parents: Vec<Option<usize>>,
        world_shapes: Vec<CollisionShape>,
    ) -> Model {
        let mut q_idx = Vec::with_capacity(joints.len());
        let mut v_idx = Vec::with_capacity(joints.len());
        let (mut nq, mut nv) = (0, 0);
        let mut dof_body = vec![];
        for (i, j) in joints.iter().enumerate() {
            q_idx.push(nq);
            v_idx.push(nv);
            nq += j.nq();
            nv += j.nv();
            dof_body.extend(std::iter::repeat_n(i, j.nv()));
        }
        let per_dof = |f: &dyn Fn(&Joint) -> &Vec<f64>| {
            DVector::from_iterator(
                nv,
                joints.iter().flat_map(|j| f(j).iter().copied().chain(std::iter::repeat(0.0)).take(j.nv())),
            )
        };
        let per_coord = |f: &dyn Fn(&Joint) -> &Vec<f64>, fill: f64| {
            DVector::from_iterator(
                nq,
                joints.iter().flat_map(|j| f(j).iter().copied().chain(std::iter::repeat(fill)).take(j.nq())),
            )
        };
        let armature = per_dof(&|j| &j.dynamics.armature);
        let damping = per_dof(&|j| &j.dynamics.damping);
        let stiffness = per_dof(&|j| &j.dynamics.stiffness);
        let friction = per_dof(&|j| &j.dynamics.friction);
        let velocity_limit = per_dof(&|j| &j.limits.velocity);
        let effort_limit = per_dof(&|j| &j.limits.effort);
        let lower = per_coord(&|j| &j.limits.lower, f64::NEG_INFINITY);
        let upper = per_coord(&|j| &j.limits.upper, f64::INFINITY);
        let rest = per_coord(&|j| &j.dynamics.rest, 0.0);
        let has_springs = stiffness.iter().any(|&k| k != 0.0);
        let mut subtree_end: Vec<usize> = (1..=bodies.len()).collect();
        for i in (0..bodies.len()).rev() {
            if let Some(p) = parents[i] {
                subtree_end[p] = subtree_end[p].max(subtree_end[i]);
            }
        }
        let frames = bodies
            .iter()
            .enumerate()
            .map(|(i, b)| Frame { name: b.name.clone(), body: i, placement: SE3::identity(), inertia: b.inertia })
            .collect();
        let joint_parent_frame = vec![None; bodies.len()];
        Model {
            name,
            gravity,
            bodies,
            joints,
            parents,
            world_shapes,
            q_idx,
            v_idx,
            nq,
            nv,
            dof_body,
            subtree_end,
            armature,
            damping,
            stiffness,
            friction,
            velocity_limit,
            effort_limit,
            lower,
            upper,
            rest,
            has_springs,
            collision: Arc::new(CollisionModel::empty()),
            collision_settings: CollisionSettings::default(),
            allow_massless_moving_links: false,
            repairs: vec![],
            frames,
            joint_parent_frame,
            source: None,
        }
    }

    /// The model name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Number of configuration coordinates.
    pub fn nq(&self) -> usize {
        self.nq
    }
    /// Number of degrees of freedom (velocity coordinates).
    pub fn nv(&self) -> usize {
        self.nv
    }
    /// Number of bodies (the world excluded).
    pub fn nbodies(&self) -> usize {
        self.bodies.len()
    }
    /// Gravity in world coordinates.
    pub fn gravity(&self) -> Vec3 {
        self.gravity
    }
    /// A copy of this model with another gravity vector.
    pub fn with_gravity(&self, gravity: Vec3) -> Result<Model> {
        if !gravity.iter().all(|x| x.is_finite()) {
            return Err(ModelError::NonFinite { what: "gravity".into() }.into());
        }
        let mut m = self.clone();
        m.gravity = gravity;
        Ok(m)
    }
    /// The bodies in depth-first order.
    pub fn bodies(&self) -> &[Body] {
        &self.bodies
    }
    /// The joints; joint `i` carries body `i`.
    pub fn joints(&self) -> &[Joint] {
        &self.joints
    }
    /// The parent body of body `i` (`None` for the world).
    pub fn parent(&self, i: usize) -> Option<usize> {
        self.parents[i]
    }
    /// Parent of every body (`None` for the world).
    pub fn parents(&self) -> &[Option<usize>] {
        &self.parents
    }
    /// The compiled collision shapes (every body's, in body order, then the world's)
    /// and the pair filter.
    pub fn collision_model(&self) -> &CollisionModel {
        &self.collision
    }
    /// The collision filtering options the model was built with.
    /// What building the model changed in its input, one message each naming the link
    /// and the change (static meshes whose bad edges were split, with
    /// [`CollisionSettings::split_bad_static_mesh_edges`]); empty for most models.
    pub fn repairs(&self) -> &[String] {
        &self.repairs
    }

    /// The collision filtering options the model was built with.
    pub fn collision_settings(&self) -> &CollisionSettings {
        &self.collision_settings
    }
    /// Collision shapes fixed to the world (from a URDF link named `world`).
    pub fn world_shapes(&self) -> &[CollisionShape] {
        &self.world_shapes
    }
    /// First configuration index of body `i`'s joint.
    pub fn q_index(&self, i: usize) -> usize {
        self.q_idx[i]
    }
    /// First velocity index of body `i`'s joint.
    pub fn v_index(&self, i: usize) -> usize {
        self.v_idx[i]
    }
    /// The bodies of body `i`'s subtree (itself and its descendants), a contiguous range.
    pub fn subtree(&self, i: usize) -> std::ops::Range<usize> {
        i..self.subtree_end[i]
    }
    /// The body owning each degree of freedom.
    pub fn dof_body(&self) -> &[usize] {
        &self.dof_body
    }
    /// Index of the body named `name`. A link merged into a body is not a body: the
    /// error names the body it is part of (see [`Model::frame_placement`]).
    pub fn body_index(&self, name: &str) -> Result<usize> {
        self.bodies.iter().position(|b| b.name == name).ok_or_else(|| {
            match self.frames.iter().find(|f| f.name == name) {
                Some(f) => Error::InvalidInput(format!(
                    "'{name}' in model '{}' is a link merged into body '{}' (fixed joint), not a body; address it \
                     as a frame (frame_placement, frame_jacobian) or load without merging fixed joints",
                    self.name, self.bodies[f.body].name
                )),
                None => Error::InvalidInput(format!("no body named '{name}' in model '{}'", self.name)),
            }
        })
    }
    /// Every link of the model's description as a frame: frame `i < nbodies()` is body
    /// i's own link; the others are links merged into a body by
    /// [`ModelBuilder::merge_fixed_links`] (fixed joints), with their poses in it.
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }
    /// Index of the frame (link) named `name`: a body's own link or a merged link.
    pub fn frame_index(&self, name: &str) -> Result<usize> {
        self.frames.iter().position(|f| f.name == name).ok_or_else(|| {
            let merged = if self.frames.len() > self.bodies.len() { ", nor a link merged into one" } else { "" };
            Error::InvalidInput(format!("no body named '{name}' in model '{}'{merged}", self.name))
        })
    }
    /// The body carrying the link named `name` and the link's pose in the body's frame
    /// (identity for a body's own link).
    pub fn frame_placement(&self, name: &str) -> Result<(usize, SE3)> {
        let f = &self.frames[self.frame_index(name)?];
        Ok((f.body, f.placement))
    }
    /// True when fixed links were merged into bodies: some frames are not bodies.
    pub fn has_merged_links(&self) -> bool {
        self.frames.len() > self.bodies.len()
    }
    /// Index of the body carried by the joint named `name`.
    pub fn joint_index(&self, name: &str) -> Result<usize> {
        self.joints
            .iter()
            .position(|j| j.name == name)
            .ok_or_else(|| Error::InvalidInput(format!("no joint named '{name}' in model '{}'", self.name)))
    }
    /// A readable name of velocity coordinate `dof`, for messages: its joint, and the
    /// component when the joint has several, e.g. `joint 'l_hip' (dof 9, component 2 of 3)`.
    /// Out-of-range indices are named as such.
    pub fn dof_name(&self, dof: usize) -> String {
        let Some(&body) = self.dof_body.get(dof) else {
            return format!("dof {dof} (out of range, nv = {})", self.nv);
        };
        let joint = &self.joints[body];
        match joint.nv() {
            1 => format!("joint '{}' (dof {dof})", joint.name),
            n => format!("joint '{}' (dof {dof}, component {} of {n})", joint.name, dof - self.v_idx[body] + 1),
        }
    }
    /// The first velocity coordinate of the joint owning configuration coordinate `k`
    /// (`nv` when `k` is out of range).
    pub fn q_dof(&self, k: usize) -> usize {
        (0..self.joints.len())
            .find(|&i| (self.q_idx[i]..self.q_idx[i] + self.joints[i].nq()).contains(&k))
            .map_or(self.nv, |i| self.v_idx[i])
    }
    /// Names of the joints that have degrees of freedom, in coordinate order.
    pub fn joint_names(&self) -> Vec<String> {
        self.joints.iter().filter(|j| j.nv() > 0).map(|j| j.name.clone()).collect()
    }
    /// First configuration index of the joint named `name`.
    pub fn joint_q_index(&self, name: &str) -> Result<usize> {
        Ok(self.q_idx[self.joint_index(name)?])
    }
    /// First velocity index of the joint named `name`.
    pub fn joint_v_index(&self, name: &str) -> Result<usize> {
        Ok(self.v_idx[self.joint_index(name)?])
    }
    /// Armature per degree of freedom.
    pub fn armature(&self) -> &DVector<f64> {
        &self.armature
    }
    /// Viscous damping per degree of freedom.
    pub fn damping(&self) -> &DVector<f64> {
        &self.damping
    }
    /// Spring stiffness per degree of freedom.
    pub fn stiffness(&self) -> &DVector<f64> {
        &self.stiffness
    }
    /// Coulomb friction per degree of freedom.
    pub fn joint_friction(&self) -> &DVector<f64> {
        &self.friction
    }
    /// Spring rest configuration (nq).
    pub fn rest_configuration(&self) -> &DVector<f64> {
        &self.rest
    }
    /// Lower position limits (nq; −∞ where unlimited or quaternion).
    pub fn lower_limits(&self) -> &DVector<f64> {
        &self.lower
    }
    /// Upper position limits (nq; +∞ where unlimited or quaternion).
    pub fn upper_limits(&self) -> &DVector<f64> {
        &self.upper
    }
    /// Velocity limits per degree of freedom.
    pub fn velocity_limits(&self) -> &DVector<f64> {
        &self.velocity_limit
    }
    /// Effort limits per degree of freedom.
    pub fn effort_limits(&self) -> &DVector<f64> {
        &self.effort_limit
    }
    /// Total mass of the moving bodies and those welded to them.
    pub fn total_mass(&self) -> f64 {
        self.bodies.iter().map(|b| b.inertia.mass).sum()
    }

    /// Serializes the model to JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(|e| Error::Serde(e.to_string()))
    }
    /// Reads a model from JSON; the result is validated like a built model.
    pub fn from_json(s: &str) -> Result<Model> {
        serde_json::from_str(s).map_err(|e| Error::Serde(e.to_string()))
    }
}
