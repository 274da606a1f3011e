//! Contacts between the shapes of a world's systems, and their constraint rows.
//!
//! Detection runs the narrow phase ([`crate::collision::narrow_phase::collide`]) on every
//! allowed pair of shapes whose bounding spheres are within the margin — across systems,
//! and within a system where it allows it — at
//! the poses of the start of the step, so every contact is a closed-form feature pair
//! whose geometry and derivatives are exact functions of the two sides' poses.
//!
//! Rows are those of `constraint::contact_rows`, with the velocity of each side taken
//! from its system: row r of a contact with direction `d_r` (normal, t₁, t₂ of its
//! [`ContactFrame`]) at point p is
//!
//! ```text
//! J_r v = W_r · (V_B − V_A),   W_r = [p × d_r; d_r],   V_X = J_{e(X)}(q) v_{s(X)}
//! ```
//!
//! with `J_e` the element's world twist Jacobian from its system ([`super::SystemStep`])
//! and `V = 0` for a static side (DiffDART, Werling et al. 2021, eq. 19).

use super::system::{System, SystemStep};
use crate::collision::feature_pair::{evaluate_with_derivatives, Side};
use crate::collision::narrow_phase::collide;
use crate::collision::{Contact, ContactGeometryDerivatives, ShapeCore, ShapeInstance};
use crate::constraint::ContactFrame;
use crate::error::{Error, Result};
use crate::math::{Force, Motion, SE3};
use nalgebra::{DMatrix, Matrix6xX};
use std::sync::Arc;

/// One side of a world contact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContactSide {
    /// An element (a body, a particle, …) of a system that moves.
    Element {
        /// The system, by index in the world.
        system: usize,
        /// The element within the system.
        element: usize,
    },
    /// Geometry that does not move (static shapes, links welded to the world).
    Static,
}

/// A shape of a world: its system and its index among the system's shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShapeRef {
    /// The system, by index in the world.
    pub system: usize,
    /// The shape, by index among the system's [`System::shapes`].
    pub shape: usize,
}

/// A contact between two shapes of a world.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldContact {
    /// Shape A.
    pub shape_a: ShapeRef,
    /// Shape B.
    pub shape_b: ShapeRef,
    /// What moves shape A.
    pub side_a: ContactSide,
    /// What moves shape B.
    pub side_b: ContactSide,
    /// The feature pair and its geometry (normal from A to B). Its `id.shape_*` are the
    /// shapes' indices within their systems; its `body_*` are not used.
    pub contact: Contact,
    /// The Coulomb friction coefficient of the pair (mean of the two materials').
    pub friction: f64,
}

/// Finds the contacts between the shapes of `systems` at the poses of `steps`: every
/// feature pair with signed distance below `margin`, for every pair of shapes that may
/// collide (group/mask bits, not both static, not on one element, and the system's own
/// rule within a system).
pub(crate) fn detect(systems: &[Arc<dyn System>], steps: &[Arc<dyn SystemStep>], margin: f64) -> Vec<WorldContact> {
    let poses: Vec<Vec<_>> =
        systems.iter().zip(steps).map(|(s, st)| (0..s.shapes().len()).map(|i| st.shape_pose(i)).collect()).collect();
    let mut out = Vec::new();
    let mut found = Vec::new();
    for (sa, system_a) in systems.iter().enumerate() {
        for (ia, shape_a) in system_a.shapes().iter().enumerate() {
            let ea = system_a.shape_element(ia);
            for (sb, system_b) in systems.iter().enumerate().skip(sa) {
                let start = if sb == sa { ia + 1 } else { 0 };
                for (ib, shape_b) in system_b.shapes().iter().enumerate().skip(start) {
                    let eb = system_b.shape_element(ib);
                    if (shape_a.group & shape_b.mask) == 0 || (shape_b.group & shape_a.mask) == 0 {
                        continue;
                    }
                    if (ea.is_none() && eb.is_none()) || (sa == sb && (ea == eb || !system_a.self_collides(ia, ib))) {
                        continue;
                    }
                    if bounds_apart(shape_a, &poses[sa][ia], shape_b, &poses[sb][ib], margin) {
                        continue;
                    }
                    found.clear();
                    collide(ia as u32, shape_a, &poses[sa][ia], ib as u32, shape_b, &poses[sb][ib], margin, &mut found);
                    let side = |system, e: Option<usize>| match e {
                        Some(element) => ContactSide::Element { system, element },
                        None => ContactSide::Static,
                    };
                    for c in &found {
                        out.push(WorldContact {
                            shape_a: ShapeRef { system: sa, shape: ia },
                            shape_b: ShapeRef { system: sb, shape: ib },
                            side_a: side(sa, ea),
                            side_b: side(sb, eb),
                            contact: *c,
                            friction: 0.5 * (shape_a.material.friction + shape_b.material.friction),
                        });
                    }
                }
            }
        }
    }
    out
}

/// Whether two convex shapes' bounding spheres are farther apart than `margin` (the
/// broad phase of the world: a sphere test on every pair; half-spaces and meshes pass).
fn bounds_apart(a: &ShapeInstance, pose_a: &SE3, b: &ShapeInstance, pose_b: &SE3, margin: f64) -> bool {
    let sphere = |s: &ShapeInstance, pose: &SE3| match &s.core {
        ShapeCore::Convex(p) => Some((pose.act_point(&p.center), p.bounding_radius + s.radius)),
        _ => None,
    };
    match (sphere(a, pose_a), sphere(b, pose_b)) {
        (Some((ca, ra)), Some((cb, rb))) => (ca - cb).norm() > ra + rb + margin,
        _ => false,
    }
}

/// The rows of a set of world contacts at the start of a step.
#[derive(Clone, Debug)]
pub(crate) struct WorldRows {
    /// One frame per contact.
    pub frames: Vec<ContactFrame>,
    /// The twist Jacobians of each contact's sides (A, B), empty for a static side.
    pub side_jacobians: Vec<[Matrix6xX<f64>; 2]>,
    /// The constraint Jacobian (3·nc × total nv).
    pub j: DMatrix<f64>,
}

/// The rows of `contacts` (see the module docs); `v_offsets[s]` is the first column of
/// system s.
pub(crate) fn rows(
    contacts: &[WorldContact],
    steps: &[Arc<dyn SystemStep>],
    v_offsets: &[usize],
    nv: usize,
) -> Result<WorldRows> {
    let mut frames = Vec::with_capacity(contacts.len());
    let mut side_jacobians = Vec::with_capacity(contacts.len());
    let mut j = DMatrix::zeros(3 * contacts.len(), nv);
    for (i, c) in contacts.iter().enumerate() {
        let g = &c.contact.geometry;
        let frame =
            ContactFrame::try_new(&g.normal).map_err(|e| Error::InvalidInput(format!("world contact {i}: {e}")))?;
        let w = [0, 1, 2].map(|r| Force::from_point_force(&g.point, &frame.direction(r)));
        let mut jacs = [Matrix6xX::zeros(0), Matrix6xX::zeros(0)];
        for (k, (sign, side)) in [(-1.0, c.side_a), (1.0, c.side_b)].into_iter().enumerate() {
            let ContactSide::Element { system, element } = side else { continue };
            let je = steps[system].element_jacobian(element);
            for col in 0..je.ncols() {
                let s = Motion::from_vector(&je.column(col).into_owned());
                for (r, wr) in w.iter().enumerate() {
                    j[(3 * i + r, v_offsets[system] + col)] += sign * s.dot(wr);
                }
            }
            jacs[k] = je;
        }
        frames.push(frame);
        side_jacobians.push(jacs);
    }
    Ok(WorldRows { frames, side_jacobians, j })
}

/// A contact's geometry and its derivatives with respect to the world twists of its two
/// sides, from the sides' poses at the start of the step.
pub(crate) fn geometry_derivatives(
    systems: &[Arc<dyn System>],
    steps: &[Arc<dyn SystemStep>],
    c: &WorldContact,
) -> Result<ContactGeometryDerivatives> {
    let side = |r: ShapeRef, s: ContactSide, feature| {
        let shape = &systems[r.system].shapes()[r.shape];
        let pose = steps[r.system].shape_pose(r.shape);
        Some(Side {
            feature: shape.world_feature(&pose, feature)?,
            radius: shape.radius,
            moving: matches!(s, ContactSide::Element { .. }),
        })
    };
    let id = &c.contact.id;
    let (a, b) = side(c.shape_a, c.side_a, id.feature_a)
        .zip(side(c.shape_b, c.side_b, id.feature_b))
        .ok_or_else(|| Error::InvalidInput("world contact: a feature index is out of range for its shape".into()))?;
    let (_, d) =
        evaluate_with_derivatives(c.contact.kind, &a, &b, c.contact.orientation).ok_or_else(|| Error::Numerical {
            algorithm: "world contact geometry",
            detail: format!("the {} closed form is degenerate at the recorded poses", c.contact.kind.name()),
        })?;
    Ok(d)
}
