//! The model builder: links and joints by name (URDF-like), or chained bodies, then
//! [`ModelBuilder::build`] orders the tree depth-first and validates it.

use super::description::{BaseJoint, JointSpec, ModelBuilder, WORLD};
use super::validate::validate;
use super::{Body, Joint, Model};
use crate::error::ModelError;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

impl ModelBuilder {
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
        if self.merge_fixed_links {
            if let Some((merged_builder, merged)) = super::frame::merge_fixed_links(self)? {
                return self.finish_merged(merged_builder.build_with(compiled)?, &merged);
            }
        }
        self.build_tree(compiled)
    }

    /// The frames of a model built from this builder's merged form.
    fn finish_merged(&self, mut model: Model, merged: &[super::frame::MergedLink]) -> Result<Model, ModelError> {
        let own: HashMap<String, crate::math::Inertia> =
            self.links.iter().map(|l| (l.name.clone(), l.inertia)).collect();
        model.frames = super::frame::model_frames(&model.bodies, &own, merged)?;
        let frame_of: HashMap<&str, usize> =
            model.frames.iter().enumerate().map(|(i, f)| (f.name.as_str(), i)).collect();
        let parent_of: HashMap<&str, &str> =
            self.joints.iter().map(|s| (s.joint.name.as_str(), s.parent.as_str())).collect();
        let nb = model.bodies.len();
        model.joint_parent_frame = model
            .joints
            .iter()
            .map(|j| parent_of.get(j.name.as_str()).and_then(|p| frame_of.get(p)).copied().filter(|&f| f >= nb))
            .collect();
        // The description as the model's builder form: with the implicit root's joint
        // written out, so that every joint of the model is found in it by name.
        let mut source = self.clone();
        for (i, j) in model.joints.iter().enumerate() {
            if model.parents[i].is_none() && !parent_of.contains_key(j.name.as_str()) {
                source.joints.push(JointSpec {
                    parent: WORLD.into(),
                    child: model.bodies[i].name.clone(),
                    joint: j.clone(),
                });
                source.base = BaseJoint::Fixed;
            }
        }
        model.source = Some(Arc::new(source));
        Ok(model)
    }

    fn build_tree(&self, compiled: Option<&Model>) -> Result<Model, ModelError> {
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
    /// The model's description: the builder it was built from when fixed links were
    /// merged (with the model's name and gravity), otherwise its bodies in body order
    /// (a world link, if any, last) and their joints.
    fn from(m: Model) -> ModelBuilder {
        if let Some(source) = &m.source {
            let mut b = (**source).clone();
            b.name = m.name.clone();
            b.gravity = m.gravity;
            return b;
        }
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
            merge_fixed_links: false,
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
