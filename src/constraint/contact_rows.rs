//! The contact constraint rows at one configuration: for each contact its
//! [`ContactFrame`] and three rows of the Jacobian J (normal, t₁, t₂), and the
//! re-evaluation of contacts at new poses with their features kept.
//!
//! Row r of a contact with direction d at point p measures the relative velocity of the
//! material points of bodies B and A at p along d:
//!
//! ```text
//! J_r v = d · (v_B(p) − v_A(p)) = W_r · (V_B − V_A),   W_r = [p × d; d]
//! J_r[k] = W_r · S_k^w   (k on B's chain only),   −W_r · S_k^w   (A's chain only),   0 otherwise
//! ```
//!
//! with `V_X = Σ_{k ∈ chain(X)} S_k^w v_k` body X's world-frame spatial velocity and
//! `S_k^w = X_world[body(k)] S_k` the world-frame motion subspace of dof k (Featherstone
//! 2008, eq. 8.4); dofs on both chains (above the lowest common ancestor of A and B)
//! move both points alike and cancel. The transpose applies the contact impulse
//! `F = Σ_r λ_r W_r` (a wrench about the world origin) to B and `−F` to A: DiffDART
//! eq. 19, `(Jᵀ f)_i = A_iᵀ Σ_k F_k`.

use super::frame::{ContactFrame, UNIT_TOLERANCE};
use super::sparse_rows::SparseRows;
use crate::collision::{recompute, Contact};
use crate::dynamics::Data;
use crate::error::{Error, Result};
use crate::math::{Force, Motion};
use crate::Model;
use nalgebra::DMatrix;

/// The constraint rows of a set of contacts at one configuration.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ContactRows {
    /// One frame per contact (rows `3i`, `3i + 1`, `3i + 2`: normal, t₁, t₂).
    pub frames: Vec<ContactFrame>,
    /// The constraint Jacobian (3·nc × nv), by rows: the rows of a contact act on the
    /// dofs of its bodies' chains below their lowest common ancestor
    /// ([`ContactRows::jacobian`]: the dense matrix).
    pub j: SparseRows,
    /// Scratch of [`ContactRows::rebuild`]: a contact's dofs and its three rows' entries.
    scratch: Vec<(usize, [f64; 3])>,
    /// Scratch of [`ContactRows::rebuild`]: the columns of a contact's rows.
    cols: Vec<usize>,
    /// Scratch of [`ContactRows::rebuild`]: the values of one row.
    values: Vec<f64>,
    /// Scratch of [`ContactRows::rebuild`]: every dof's world-frame motion subspace
    /// `S_k^w`, formed once per rebuild (a dof is on the chains of many contacts).
    subspaces: Vec<Motion>,
}

impl ContactRows {
    /// Needs `data` after forward kinematics at q (x_world and s filled); errors on dimension mismatch,
    /// contacts whose bodies are out of range, non-finite geometry.
    ///
    /// Errors: `data` not made for `model` ([`Error::Dimension`]), non-finite poses or
    /// contact geometry ([`Error::NonFinite`]), a contact whose shapes are not in the
    /// model, whose bodies are out of range or are not the bodies of its shapes, or
    /// whose normal is not a unit vector ([`Error::InvalidInput`]).
    pub fn new(model: &Model, data: &Data, contacts: &[Contact]) -> Result<ContactRows> {
        let mut out = ContactRows::default();
        out.rebuild(model, data, contacts)?;
        Ok(out)
    }

    /// Turns contact `i`'s tangent basis by `(c, s)` (a unit vector in the `t₁, t₂`
    /// plane): its frame ([`ContactFrame::turned`]) and its two friction rows.
    pub fn turn_tangents(&mut self, i: usize, c: f64, s: f64) {
        self.frames[i] = self.frames[i].turned(c, s);
        self.j.turn_rows(3 * i + 1, 3 * i + 2, c, s);
    }

    /// [`ContactRows::new`] into `self`, reusing its storage (no allocation once it has
    /// held as many contacts). On error `self` holds no meaningful rows.
    pub fn rebuild(&mut self, model: &Model, data: &Data, contacts: &[Contact]) -> Result<()> {
        check_data(model, data)?;
        let nv = model.nv();
        let ContactRows { frames, j, scratch, cols, values, subspaces } = self;
        frames.clear();
        j.clear(nv);
        subspaces.clear();
        if !contacts.is_empty() {
            subspaces.extend((0..nv).map(|k| world_subspace(data, model.dof_body[k], k)));
        }
        for (i, c) in contacts.iter().enumerate() {
            check_contact(model, c, i)?;
            let g = &c.geometry;
            let frame =
                ContactFrame::try_new(&g.normal).map_err(|e| Error::InvalidInput(format!("contact {i}: {e}")))?;
            let p = g.point;
            let w = [0, 1, 2].map(|r| Force::from_point_force(&p, &frame.direction(r)));
            let chains = Chains::new(model, c.body_a, c.body_b);
            for (sign, body, stop) in [(1.0, c.body_b, chains.lca), (-1.0, c.body_a, chains.lca)] {
                for_each_dof(model, body, stop, |k| {
                    scratch.push((k, [0, 1, 2].map(|r| sign * subspaces[k].dot(&w[r]))));
                });
            }
            // The chains below the LCA share no dof: each entry is written once.
            scratch.sort_unstable_by_key(|e| e.0);
            cols.clear();
            cols.extend(scratch.iter().map(|e| e.0));
            for r in 0..3 {
                values.clear();
                values.extend(scratch.iter().map(|e| e.1[r]));
                j.push_row(cols, values);
            }
            scratch.clear();
            frames.push(frame);
        }
        Ok(())
    }

    /// The number of rows, 3·nc.
    pub fn nrows(&self) -> usize {
        self.j.nrows()
    }

    /// The constraint Jacobian as a dense `3·nc × nv` matrix.
    pub fn jacobian(&self) -> DMatrix<f64> {
        self.j.to_dense()
    }

    /// The number of contacts.
    pub fn ncontacts(&self) -> usize {
        self.frames.len()
    }
}

/// The contacts re-evaluated at the body poses in `data` (after forward kinematics at
/// a new q), each keeping its feature pair (`collision::recompute`):
/// what the rows and their derivatives at the new configuration refer to.
///
/// Errors: `data` not made for `model` or non-finite poses, a contact whose shapes or
/// bodies are invalid (as [`ContactRows::new`]), a closed form that is degenerate at
/// these poses ([`Error::Numerical`]).
pub fn recompute_contacts(model: &Model, data: &Data, contacts: &[Contact]) -> Result<Vec<Contact>> {
    check_data(model, data)?;
    let cm = model.collision_model();
    contacts
        .iter()
        .enumerate()
        .map(|(i, c)| {
            check_contact(model, c, i)?;
            let geometry = recompute::recompute(cm, &data.x_world, c).ok_or_else(|| Error::Numerical {
                algorithm: "recompute_contacts",
                detail: format!(
                    "contact {i}: the {} closed form of shapes {} and {} is degenerate at these poses, or a feature \
                     index is invalid",
                    c.kind.name(),
                    c.id.shape_a,
                    c.id.shape_b
                ),
            })?;
            Ok(Contact { geometry, ..*c })
        })
        .collect()
}

/// Checks that `data` was made for `model` and holds finite poses.
pub(crate) fn check_data(model: &Model, data: &Data) -> Result<()> {
    if data.x_world.len() != model.nbodies() {
        return Err(Error::Dimension { what: "data.x_world", expected: model.nbodies(), got: data.x_world.len() });
    }
    if data.s.len() != model.nv() {
        return Err(Error::Dimension { what: "data.s", expected: model.nv(), got: data.s.len() });
    }
    for (i, x) in data.x_world.iter().enumerate() {
        if !x.is_finite() {
            let value = x.rot.iter().chain(x.trans.iter()).copied().find(|v| !v.is_finite()).unwrap_or(f64::NAN);
            return Err(Error::NonFinite { what: "data.x_world (body poses)", index: i, value });
        }
    }
    if let Some((k, s)) = data.s.iter().enumerate().find(|(_, s)| !s.is_finite()) {
        return Err(Error::NonFinite { what: "data.s (motion subspaces)", index: k, value: s.norm() });
    }
    Ok(())
}

/// Checks contact `i`: shapes in the model, bodies in range and equal to its shapes'
/// bodies, finite geometry, unit normal.
pub(crate) fn check_contact(model: &Model, c: &Contact, i: usize) -> Result<()> {
    let cm = model.collision_model();
    let n = cm.shapes.len();
    for (side, shape, body) in [("A", c.id.shape_a, c.body_a), ("B", c.id.shape_b, c.body_b)] {
        let Some(s) = cm.shapes.get(shape as usize) else {
            return Err(Error::InvalidInput(format!(
                "contact {i}: shape {side} is {shape}, but the model has {n} collision shapes"
            )));
        };
        if let Some(b) = body {
            if b >= model.nbodies() {
                return Err(Error::InvalidInput(format!(
                    "contact {i}: body {side} is {b}, but the model has {} bodies",
                    model.nbodies()
                )));
            }
        }
        if s.body != body {
            return Err(Error::InvalidInput(format!(
                "contact {i}: body {side} is {body:?}, but its shape {shape} is on body {:?}",
                s.body
            )));
        }
    }
    let g = &c.geometry;
    let mut values = g.point.iter().chain(g.normal.iter()).copied().chain([g.distance]);
    if let Some(value) = values.find(|v| !v.is_finite()) {
        return Err(Error::NonFinite { what: "contact geometry (point, normal, distance)", index: i, value });
    }
    if (g.normal.norm() - 1.0).abs() > UNIT_TOLERANCE {
        return Err(Error::InvalidInput(format!(
            "contact {i}: the normal must be a unit vector, got norm {}",
            g.normal.norm()
        )));
    }
    Ok(())
}

/// The world-frame motion subspace `S_k^w = X_world[body] S_k` of dof k on `body`.
#[inline]
pub(crate) fn world_subspace(data: &Data, body: usize, k: usize) -> Motion {
    data.x_world[body].act_motion(&data.s[k])
}

/// The kinematic chains of a contact's two bodies: their lowest common ancestor
/// (`None`: the world). Dofs of bodies strictly below it belong to one chain only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chains {
    /// Lowest common ancestor of A and B (`None`: the world).
    pub lca: Option<usize>,
}

impl Chains {
    /// The chains of bodies `a` and `b` (bodies are numbered so that `parent(i) < i`).
    pub fn new(model: &Model, a: Option<usize>, b: Option<usize>) -> Chains {
        let (mut a, mut b) = (a, b);
        loop {
            match (a, b) {
                (Some(x), Some(y)) if x == y => return Chains { lca: Some(x) },
                (Some(x), Some(y)) => {
                    if x > y {
                        a = model.parents[x];
                    } else {
                        b = model.parents[y];
                    }
                }
                _ => return Chains { lca: None },
            }
        }
    }
}

/// Calls `f(k)` for every dof k of the bodies from `body` up to (excluding) `stop`.
#[inline]
pub(crate) fn for_each_dof(model: &Model, body: Option<usize>, stop: Option<usize>, mut f: impl FnMut(usize)) {
    let mut b = body;
    while let Some(x) = b {
        if Some(x) == stop {
            break;
        }
        let va = model.v_idx[x];
        for k in va..va + model.joints[x].nv() {
            f(k);
        }
        b = model.parents[x];
    }
}
