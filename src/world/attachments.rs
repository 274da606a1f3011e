//! Attachments: a material point of one element held at a material point of another
//! (or at a fixed world point) by three bilateral rows — a ball joint between any two
//! systems, and, over three or more vertices, a weld of a soft body to a link.
//!
//! With the anchors' world points `p_A = X_A(q) a`, `p_B = X_B(q) b` and the gap
//! `g = p_B − p_A`, row r (world axis `e_r`) is the gap's rate and its bias the
//! penetration-recovery share of the gap:
//!
//! ```text
//! J_r v = e_r · (V_B(p_B) − V_A(p_A)),   V_X(p) = v_o + ω × p,   β_r = erp · g_r / h,
//! ```
//!
//! unbounded (`w_r = J_r v⁺ + β_r = 0`). Backward (`vjp.rs`), for a row pair `(λ, u)` with
//! the force `f = Σ_r λ_r e_r`: each side's `element_velocity_vjp` with the wrench of
//! `±f` at its point, and the point's cotangent `p̄ = ±f × ω(u)` (plus `±(erp/h) b̄` from
//! the bias), mapped to the element's twist as `[p × p̄; p̄]` and through `J_eᵀ` to `q`.

use super::system::SystemStep;
use crate::error::{Error, Result};
use crate::math::{Force, Motion, Vec3};
use nalgebra::{DMatrix, Matrix6xX};
use std::sync::Arc;

/// One end of an [`Attachment`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Anchor {
    /// A material point of an element (a body of an articulation, a particle, a vertex
    /// of a soft body), in the element's frame.
    Element {
        /// The system, by index in the world.
        system: usize,
        /// The element within the system.
        element: usize,
        /// The point in the element's frame (m).
        point: Vec3,
    },
    /// A fixed point of the world (m).
    World(Vec3),
}

/// Two anchors held together by three bilateral rows (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attachment {
    /// Side A.
    pub a: Anchor,
    /// Side B.
    pub b: Anchor,
}

/// The attachments' rows at the start of a step.
#[derive(Clone, Debug, Default)]
pub(crate) struct AttachmentRows {
    /// The world points `(p_A, p_B)` of each attachment.
    pub points: Vec<[Vec3; 2]>,
    /// The twist Jacobians of each attachment's sides (A, B), empty for a world anchor.
    pub side_jacobians: Vec<[Matrix6xX<f64>; 2]>,
    /// The rows (3·na × total nv).
    pub j: DMatrix<f64>,
}

impl Anchor {
    /// The anchor's world point at the start of a step, with the element it moves with.
    fn world_point(&self, steps: &[Arc<dyn SystemStep>]) -> (Vec3, Option<(usize, usize)>) {
        match *self {
            Anchor::Element { system, element, point } => {
                (steps[system].element_pose(element).act_point(&point), Some((system, element)))
            }
            Anchor::World(p) => (p, None),
        }
    }
}

/// Checks `attachments` against the systems' element counts (`elements[s]`). Errors name
/// the attachment.
pub(crate) fn validate(attachments: &[Attachment], elements: &[usize]) -> Result<()> {
    for (i, att) in attachments.iter().enumerate() {
        let mut moving = false;
        for anchor in [att.a, att.b] {
            match anchor {
                Anchor::Element { system, element, point } => {
                    let Some(&n) = elements.get(system) else {
                        return Err(Error::InvalidInput(format!(
                            "attachment {i}: system {system} is not in the world ({} systems)",
                            elements.len()
                        )));
                    };
                    if element >= n {
                        return Err(Error::InvalidInput(format!(
                            "attachment {i}: system {system} has {n} elements, not element {element}"
                        )));
                    }
                    if !point.iter().all(|x| x.is_finite()) {
                        return Err(Error::InvalidInput(format!("attachment {i}: non-finite anchor point {point:?}")));
                    }
                    moving = true;
                }
                Anchor::World(p) => {
                    if !p.iter().all(|x| x.is_finite()) {
                        return Err(Error::InvalidInput(format!("attachment {i}: non-finite world point {p:?}")));
                    }
                }
            }
        }
        if !moving {
            return Err(Error::InvalidInput(format!("attachment {i}: both anchors are world points")));
        }
    }
    Ok(())
}

/// The rows of `attachments` (module docs); `v_offsets[s]` is the first column of system s.
pub(crate) fn rows(
    attachments: &[Attachment],
    steps: &[Arc<dyn SystemStep>],
    v_offsets: &[usize],
    nv: usize,
) -> AttachmentRows {
    let mut out = AttachmentRows { j: DMatrix::zeros(3 * attachments.len(), nv), ..Default::default() };
    for (i, att) in attachments.iter().enumerate() {
        let mut points = [Vec3::zeros(); 2];
        let mut jacs = [Matrix6xX::zeros(0), Matrix6xX::zeros(0)];
        for (k, (sign, anchor)) in [(-1.0, att.a), (1.0, att.b)].into_iter().enumerate() {
            let (p, element) = anchor.world_point(steps);
            points[k] = p;
            let Some((system, element)) = element else { continue };
            let je = steps[system].element_jacobian(element);
            let w = [Vec3::x(), Vec3::y(), Vec3::z()].map(|e| Force::from_point_force(&p, &e));
            for col in 0..je.ncols() {
                let s = Motion::from_vector(&je.column(col).into_owned());
                for (r, wr) in w.iter().enumerate() {
                    out.j[(3 * i + r, v_offsets[system] + col)] += sign * s.dot(wr);
                }
            }
            jacs[k] = je;
        }
        out.points.push(points);
        out.side_jacobians.push(jacs);
    }
    out
}
