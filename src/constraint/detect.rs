//! The collision pipeline: world poses of the shapes → broad phase (candidate pairs)
//! → narrow phase (contacts) → [`Contact`]s; the contacts' geometry derivatives with
//! respect to q; and contact identity matching between steps.
//!
//! Derivatives (`contact_jacobians`): the closed form of each feature pair gives the
//! derivatives of point, normal and distance with respect to the world-frame twists
//! `δ_A, δ_B` of the two bodies (`recompute::recompute_with_derivatives`, a 3×12 /
//! 1×12 block). A tangent perturbation `q ⊕ ε e_k` moves body X by the world-frame
//! twist `J_X e_k ε`, with `J_X` the body's world-frame Jacobian (Featherstone 2008,
//! eq. 8.4, as in `dynamics::body_jacobian`), so by the chain rule
//! `∂g/∂q = ∂g/∂δ_A · J_A + ∂g/∂δ_B · J_B`, with zero for a static side.

use crate::collision::broad_phase::BroadPhase;
use crate::collision::contact::{Contact, ContactGeometry, ContactGeometryDerivatives, ContactId};
use crate::collision::mesh_check::IntMap;
use crate::collision::narrow_phase;
use crate::collision::recompute;
use crate::collision::shape::CollisionModel;
use crate::dynamics::{forward_kinematics, Data};
use crate::error::{Error, Result};
use crate::math::SE3;
use crate::Model;
use nalgebra::{Matrix3xX, RowDVector, SMatrix, Vector6};
use std::sync::{Arc, Weak};

/// Options of contact detection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CollisionOptions {
    /// Contacts are reported while their signed distance is below `margin` (metres,
    /// finite, ≥ 0). Default 0: only touching or overlapping features. A contact
    /// solver wants a small positive margin (a few millimetres, or about the distance a
    /// body travels in one step), so that contacts exist — and can be warm-started —
    /// just before the shapes touch.
    pub margin: f64,
}

impl Default for CollisionOptions {
    fn default() -> Self {
        Self { margin: 0.0 }
    }
}

/// Everything contact detection needs between calls, allocated once: the shapes'
/// world poses, the broad phase's boxes, sorted order and pairs, and the contacts.
#[derive(Clone, Debug)]
pub struct CollisionWorkspace {
    /// The collision model the buffers were made for (the allocation stays pinned by
    /// the weak reference, so comparing addresses is reliable).
    model: Weak<CollisionModel>,
    /// World pose of each shape.
    poses: Vec<SE3>,
    /// Broad-phase state.
    broad: BroadPhase,
    /// The contacts of the last call.
    contacts: Vec<Contact>,
}

impl CollisionWorkspace {
    /// A workspace for `model`'s collision shapes.
    pub fn new(model: &Model) -> Self {
        let n = model.collision_model().shapes.len();
        Self {
            model: Arc::downgrade(&model.collision),
            poses: vec![SE3::identity(); n],
            broad: BroadPhase::new(),
            contacts: Vec::with_capacity(4 * n),
        }
    }

    /// The contacts of the last [`detect_contacts`] call.
    pub fn contacts(&self) -> &[Contact] {
        &self.contacts
    }

    /// The broad phase's candidate shape pairs `(a, b)`, `a < b`, of the last call.
    pub fn pairs(&self) -> &[(u32, u32)] {
        self.broad.pairs()
    }

    /// The world pose of each shape at the last call.
    pub fn shape_poses(&self) -> &[SE3] {
        &self.poses
    }

    /// The broad phase's state (world boxes of the last call).
    pub fn broad_phase(&self) -> &BroadPhase {
        &self.broad
    }

    /// Forgets the broad phase's sorted order, so the next call sorts from scratch
    /// (results are identical; only the cost differs).
    pub fn forget_order(&mut self) {
        self.broad.forget_order();
    }

    /// Re-targets the buffers to `model` if they were made for another one.
    fn attach(&mut self, model: &Model) {
        if !std::ptr::eq(self.model.as_ptr(), Arc::as_ptr(&model.collision)) {
            *self = CollisionWorkspace::new(model);
        }
    }
}

/// Detects the contacts of `model` at the body poses in `data.x_world` (the caller
/// has run [`forward_kinematics`]). Contacts are grouped by shape pair, pairs in
/// increasing `(shape_a, shape_b)` order, so the result depends only on the poses.
///
/// Errors: `data` not made for `model` ([`Error::Dimension`]), non-finite poses
/// ([`Error::NonFinite`]), an invalid margin ([`Error::InvalidInput`]), a non-finite
/// contact ([`Error::Numerical`]).
pub fn detect_contacts<'w>(
    model: &Model,
    data: &Data,
    options: &CollisionOptions,
    ws: &'w mut CollisionWorkspace,
) -> Result<&'w [Contact]> {
    let margin = options.margin;
    if !(margin.is_finite() && margin >= 0.0) {
        return Err(Error::InvalidInput(format!("collision margin must be finite and non-negative, got {margin}")));
    }
    check_poses(model, data)?;
    ws.attach(model);
    let cm = model.collision_model();
    ws.poses.clear();
    ws.poses.extend(cm.shapes.iter().map(|s| s.world_pose(&data.x_world)));
    ws.contacts.clear();
    let CollisionWorkspace { poses, broad, contacts, .. } = ws;
    for &(a, b) in broad.find_pairs(cm, poses, margin)? {
        let (ia, ib) = (a as usize, b as usize);
        narrow_phase::collide(a, &cm.shapes[ia], &poses[ia], b, &cm.shapes[ib], &poses[ib], margin, contacts);
    }
    if let Some(c) = ws.contacts.iter().find(|c| !contact_is_finite(c)) {
        return Err(Error::Numerical {
            algorithm: "detect_contacts",
            detail: format!("non-finite contact between shapes {} and {}", c.id.shape_a, c.id.shape_b),
        });
    }
    Ok(&ws.contacts)
}

/// Runs forward kinematics at `q` and detects the contacts (allocates a [`Data`] and
/// a [`CollisionWorkspace`]; in a loop, use [`detect_contacts`] with your own).
pub fn contacts_at(model: &Model, q: &[f64], options: &CollisionOptions) -> Result<Vec<Contact>> {
    let mut data = Data::new(model);
    forward_kinematics(model, &mut data, q)?;
    let mut ws = CollisionWorkspace::new(model);
    Ok(detect_contacts(model, &data, options, &mut ws)?.to_vec())
}

fn contact_is_finite(c: &Contact) -> bool {
    let g = &c.geometry;
    g.distance.is_finite() && g.point.iter().chain(g.normal.iter()).all(|x| x.is_finite())
}

fn check_poses(model: &Model, data: &Data) -> Result<()> {
    if data.x_world.len() != model.nbodies() {
        return Err(Error::Dimension { what: "data.x_world", expected: model.nbodies(), got: data.x_world.len() });
    }
    for (i, x) in data.x_world.iter().enumerate() {
        if !x.is_finite() {
            let value = x.rot.iter().chain(x.trans.iter()).copied().find(|v| !v.is_finite()).unwrap_or(f64::NAN);
            return Err(Error::NonFinite { what: "data.x_world (body poses)", index: i, value });
        }
    }
    Ok(())
}

/// A contact's geometry and its derivatives with respect to q, in the tangent space
/// (column k: the derivative along `q ⊕ ε e_k`; `nv` columns).
#[derive(Clone, Debug, PartialEq)]
pub struct ContactJacobians {
    /// Point, normal and signed distance at the current poses.
    pub geometry: ContactGeometry,
    /// ∂point/∂q (3 × nv).
    pub point: Matrix3xX<f64>,
    /// ∂normal/∂q (3 × nv).
    pub normal: Matrix3xX<f64>,
    /// ∂distance/∂q (1 × nv).
    pub distance: RowDVector<f64>,
    /// The same derivatives with respect to the two bodies' world-frame twists (the
    /// factors the q columns are made from; used for perturbations that are not dofs,
    /// such as a joint placement's translation).
    pub twist: ContactGeometryDerivatives,
}

/// The derivatives of `contact`'s point, normal and signed distance with respect to q
/// at the poses in `data` (after [`forward_kinematics`] at that q), keeping its
/// feature pair: the analytic twist derivatives times the bodies' world-frame
/// Jacobians. Static sides contribute nothing.
///
/// Errors: shape indices not in the model ([`Error::InvalidInput`]), `data` not made
/// for `model` or non-finite poses, a closed form that is degenerate at these poses
/// (coincident points, parallel edges: [`Error::Numerical`]).
pub fn contact_jacobians(model: &Model, data: &Data, contact: &Contact) -> Result<ContactJacobians> {
    let (geometry, twist) = contact_twist_derivatives(model, data, contact)?;
    let nv = model.nv();
    let mut out = ContactJacobians {
        geometry,
        point: Matrix3xX::zeros(nv),
        normal: Matrix3xX::zeros(nv),
        distance: RowDVector::zeros(nv),
        twist,
    };
    fill_contact_jacobians(model, data, contact, &mut out);
    Ok(out)
}

/// [`contact_jacobians`] into `out`, reusing its storage (no allocation when `out` was
/// made for a model with as many dofs).
///
/// Errors: as [`contact_jacobians`].
pub fn contact_jacobians_into(model: &Model, data: &Data, contact: &Contact, out: &mut ContactJacobians) -> Result<()> {
    let (geometry, twist) = contact_twist_derivatives(model, data, contact)?;
    let nv = model.nv();
    out.geometry = geometry;
    out.twist = twist;
    if out.point.ncols() != nv {
        out.point = Matrix3xX::zeros(nv);
        out.normal = Matrix3xX::zeros(nv);
        out.distance = RowDVector::zeros(nv);
    } else {
        out.point.fill(0.0);
        out.normal.fill(0.0);
        out.distance.fill(0.0);
    }
    fill_contact_jacobians(model, data, contact, out);
    Ok(())
}

/// [`contact_jacobians_into`] for an `out` of `nv` columns that is already zero on the
/// chains of the contact's two bodies (the columns this fills; the others are left as
/// they are). On error `out` is unchanged.
pub(crate) fn contact_jacobians_refill(
    model: &Model,
    data: &Data,
    contact: &Contact,
    out: &mut ContactJacobians,
) -> Result<()> {
    let (geometry, twist) = contact_twist_derivatives(model, data, contact)?;
    debug_assert_eq!(out.point.ncols(), model.nv());
    out.geometry = geometry;
    out.twist = twist;
    fill_contact_jacobians(model, data, contact, out);
    Ok(())
}

/// The contact's geometry and its twist derivatives, checked.
fn contact_twist_derivatives(
    model: &Model,
    data: &Data,
    contact: &Contact,
) -> Result<(ContactGeometry, ContactGeometryDerivatives)> {
    check_poses(model, data)?;
    let cm = model.collision_model();
    let n = cm.shapes.len();
    let id = &contact.id;
    if id.shape_a as usize >= n || id.shape_b as usize >= n {
        return Err(Error::InvalidInput(format!(
            "contact between shapes {} and {}, but the model has {n} collision shapes",
            id.shape_a, id.shape_b
        )));
    }
    recompute::recompute_with_derivatives(cm, &data.x_world, contact).ok_or_else(|| Error::Numerical {
        algorithm: "contact_jacobians",
        detail: format!(
            "the {} closed form of shapes {} and {} ({:?} / {:?}) is degenerate at these poses, \
                 or a feature index is invalid",
            contact.kind.name(),
            id.shape_a,
            id.shape_b,
            id.feature_a,
            id.feature_b
        ),
    })
}

/// Accumulates the q columns of `out` (zeroed) from its twist derivatives: the twist
/// derivatives times each side's world-frame body Jacobian.
fn fill_contact_jacobians(model: &Model, data: &Data, contact: &Contact, out: &mut ContactJacobians) {
    let cm = model.collision_model();
    let id = &contact.id;
    let d = out.twist;
    for (shape, offset) in [(id.shape_a, 0), (id.shape_b, 6)] {
        let Some(body) = cm.shapes[shape as usize].body else { continue };
        let dp: SMatrix<f64, 3, 6> = d.point.fixed_columns::<6>(offset).into_owned();
        let dn: SMatrix<f64, 3, 6> = d.normal.fixed_columns::<6>(offset).into_owned();
        let dd: SMatrix<f64, 1, 6> = d.distance.fixed_columns::<6>(offset).into_owned();
        // Column k of the body's world-frame Jacobian is the motion subspace of dof k
        // carried to the world frame (as in `dynamics::body_jacobian`).
        let mut b = Some(body);
        while let Some(x) = b {
            let va = model.v_idx[x];
            for k in va..va + model.joints[x].nv() {
                let w = data.x_world[x].act_motion(&data.s[k]);
                let w = Vector6::new(w.ang.x, w.ang.y, w.ang.z, w.lin.x, w.lin.y, w.lin.z);
                let mut col = out.point.column_mut(k);
                col += dp * w;
                let mut col = out.normal.column_mut(k);
                col += dn * w;
                out.distance[k] += (dd * w)[0];
            }
            b = model.parents[x];
        }
    }
}

/// For each contact of `current`, the index of the contact with the same identity
/// ([`ContactId`]: shapes and features) in `previous`, if any — the warm-start map
/// between two steps.
pub fn match_contacts(previous: &[Contact], current: &[Contact]) -> Vec<Option<usize>> {
    // A few contacts: a linear search for the first match is cheaper than the table.
    if previous.len() <= 16 {
        return current.iter().map(|c| previous.iter().position(|p| p.id == c.id)).collect();
    }
    // Looked up, never iterated: the fast integer hasher leaves the result as it was.
    let mut index: IntMap<ContactId, usize> = IntMap::with_capacity_and_hasher(previous.len(), Default::default());
    for (i, c) in previous.iter().enumerate() {
        index.entry(c.id).or_insert(i);
    }
    current.iter().map(|c| index.get(&c.id).copied()).collect()
}
