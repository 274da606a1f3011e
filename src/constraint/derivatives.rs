//! Configuration derivatives of the contact rows, for fixed contact features:
//! `∂(J(q) u)/∂q`, `∂(J(q)ᵀ λ)/∂q` (DiffDART, Werling et al. 2021, eqs. 7–10 need them
//! through `∂q̇⁺/∂q`; eq. 20 is the second), their vector–Jacobian products, and
//! `∂distance/∂q`. Every derivative is in the tangent space: column k is the derivative
//! along `q ⊕ ε e_k`.
//!
//! Kinematics (Featherstone 2008, §8.1, eq. 8.4, and the world-frame form of Carpentier
//! & Mansard 2018): under `q ⊕ ε e_k` the bodies carried by dof k move by the world twist
//! `ε S_k^w`, so the world-frame motion subspace of every dof j they carry rotates with
//! them, `∂S_j^w/∂ε_k = S_k^w × S_j^w`. "Carried by k" means: every dof of a descendant
//! body, and within k's own joint every dof when the joint's subspace is constant in the
//! child frame (ball), the dofs from k on for the serial joints (universal:
//! `R₁(q₁)R₂(q₂)`, planar: translation then rotation), whose earlier columns do not
//! move with later coordinates, and the angular dofs of a free joint (translation then
//! ball: its linear columns are fixed in the parent frame). With `V_X = Σ_{j ∈ chain(X)} S_j^w u_j` this gives
//!
//! ```text
//! ∂V_X/∂ε_k = S_k^w × (V_X − V_k⁻)        (k on X's chain; V_k⁻ = velocity of the dofs not carried by k)
//! ```
//!
//! Rows (`contact_rows`): `(J u)_r = W_r · (V_B − V_A)`, `W_r = [p × d_r; d_r]`, so
//!
//! ```text
//! ∂(J u)_r/∂ε_k = ∂W_r · ΔV + W_r · ∂ΔV/∂ε_k
//! ∂W_r · ΔV     = ∂p · (d_r × ω) + ∂d_r · (ω × p + v)        ΔV = V_B − V_A = [ω; v]
//! ∂ΔV/∂ε_k      = S_k × ΔV (k above the common ancestor),  S_k × (V_B − V_k⁻) (B only),  −S_k × (V_A − V_k⁻) (A only)
//! ```
//!
//! with ∂p, ∂n from `constraint::contact_jacobians` and ∂t₁, ∂t₂ = L₁∂n, L₂∂n from
//! [`ContactFrame::tangent_jacobians`]. Transpose (DiffDART eqs. 19–20): with each
//! contact's impulse `F_c = [p × f_c; f_c]`, `f_c = Σ_r λ_r d_r`, applied to B and
//! `−F_c` to A, and `Φ_j` the net wrench on the subtree of dof j's body,
//!
//! ```text
//! (Jᵀλ)_j = S_j^w · Φ_j
//! ∂(Jᵀλ)_j/∂ε_k = [k carries j] (S_k × S_j) · Φ_j + Σ_c σ_c(j) S_j · ∂F_c/∂ε_k
//! ∂F_c/∂ε_k = [∂p × f_c + p × ∂f_c; ∂f_c],   ∂f_c = (λ_n I + λ_1 L₁ + λ_2 L₂) ∂n
//! ```
//!
//! (σ_c(j) = +1 on B's chain only, −1 on A's only, 0 elsewhere). The products use
//! `(S_k × X) · F = S_k · (X ×* F)` (Featherstone eq. 2.32) to move the sums over j into
//! one subtree pass, and `Σ_j σ_c(j) z_j S_j = V_B(z) − V_A(z)`: the VJPs cost
//! O(nc·depth + nv·depth), the matrices O(nc·depth² + nv·depth) after O(nc·nv) set-up.
//!
//! Joint placements (`placement:JOINT`). Moving the translation of body b's joint
//! placement along the parent-frame axis `a` translates the subtree of b rigidly by
//! `w = R_parent a` in the world: `X_x ← T(w) X_x` for every body x under b. This is a
//! dof in all but name — a prismatic joint with zero velocity, world twist
//! `S = [0; w]`, inserted above b's joint — so the same formulas hold with k replaced by
//! it: it carries every dof of the subtree (b's own joint included), its `V⁻` is the
//! velocity of b's parent, and the contact geometry moves by the twist `[0; w]` of each
//! side under b ([`SubtreeTranslation`]).

use super::contact_rows::{check_contact, check_data, for_each_dof, world_subspace, Chains, ContactRows};
use super::detect::{contact_jacobians, contact_jacobians_into, contact_jacobians_refill, ContactJacobians};
use super::frame::ContactFrame;
use crate::collision::Contact;
use crate::dynamics::Data;
use crate::error::{Error, Result};
use crate::math::{Force, Mat3, Motion, Vec3};
use crate::model::{JointType, Topology};
use crate::Model;
use nalgebra::{DMatrix, DVector, Matrix3xX};

/// Largest disagreement (relative to `max(1, |p|)`) accepted between a contact's stored
/// geometry and the geometry recomputed from its features at the poses of `data`.
const GEOMETRY_TOLERANCE: f64 = 1e-9;

/// The derivatives of one contact's geometry and frame with respect to q.
#[derive(Clone, Debug, PartialEq)]
pub struct ContactDerivatives {
    /// Point, normal and signed distance, and their derivatives w.r.t. q (3 × nv, 1 × nv).
    pub jacobians: ContactJacobians,
    /// ∂t₁/∂q (3 × nv).
    pub dt1: Matrix3xX<f64>,
    /// ∂t₂/∂q (3 × nv).
    pub dt2: Matrix3xX<f64>,
    /// The contact's frame.
    pub frame: ContactFrame,
    /// Body of shape A (`None`: the world).
    pub body_a: Option<usize>,
    /// Body of shape B (`None`: the world).
    pub body_b: Option<usize>,
    l1: Mat3,
    l2: Mat3,
    chains: Chains,
}

impl ContactDerivatives {
    /// `[n, t₁, t₂]`.
    fn directions(&self) -> [Vec3; 3] {
        [self.frame.normal, self.frame.t1, self.frame.t2]
    }

    /// The relative motion of the contact's sides under the body velocities `vw` and
    /// the terms of `∂(J u)_r` it enters ([`row_derivatives`]).
    fn row_motion(&self, vw: &[Motion]) -> RowMotion {
        let (va, vbody) = (side_velocity(vw, self.body_a), side_velocity(vw, self.body_b));
        let dv = vbody - va;
        let p = self.jacobians.geometry.point;
        let d = self.directions();
        RowMotion {
            va,
            vbody,
            dv,
            dvp: dv.lin + dv.ang.cross(&p),
            w: d.map(|dr| Force::from_point_force(&p, &dr)),
            dxw: d.map(|dr| dr.cross(&dv.ang)),
        }
    }

    /// The contact force `f_c = Σ_r λ_r d_r` of the impulses `l` of its three rows.
    fn force(&self, l: &[f64]) -> Vec3 {
        let d = self.directions();
        d[0] * l[0] + d[1] * l[1] + d[2] * l[2]
    }

    /// `∂F_c = [∂p × f_c + p × ∂f_c; ∂f_c]` with `∂f_c = Σ_r λ_r ∂d_r`, along a perturbation
    /// that moves the point by `dp` and the directions by `dd`.
    fn force_derivative(&self, l: &[f64], f: &Vec3, dp: &Vec3, dd: &[Vec3; 3]) -> Force {
        let df = dd[0] * l[0] + dd[1] * l[1] + dd[2] * l[2];
        Force::new(dp.cross(f) + self.jacobians.geometry.point.cross(&df), df)
    }

    /// `Σ_r w_r L_rᵀ x` with `L₀ = I`.
    fn lt(&self, w: [f64; 3], x: &Vec3) -> Vec3 {
        x * w[0] + self.l1.tr_mul(x) * w[1] + self.l2.tr_mul(x) * w[2]
    }

    /// Zeroes the columns of the contact's chains (the only nonzero ones) in its q
    /// derivatives: point, normal, distance and tangents.
    fn clear_chain_columns(&mut self, model: &Model) {
        let (j, dt1, dt2) = (&mut self.jacobians, &mut self.dt1, &mut self.dt2);
        let mut clear = |k: usize| {
            j.point.column_mut(k).fill(0.0);
            j.normal.column_mut(k).fill(0.0);
            j.distance[k] = 0.0;
            dt1.column_mut(k).fill(0.0);
            dt2.column_mut(k).fill(0.0);
        };
        chain_dofs(model, self.body_a, self.body_b, self.chains.lca, |k, _| clear(k));
    }

    /// Calls `f(k, side)` for every dof on the contact's chains ([`chain_dofs`]).
    fn for_each_chain_dof(&self, model: &Model, f: impl FnMut(usize, i8)) {
        chain_dofs(model, self.body_a, self.body_b, self.chains.lca, f);
    }

    /// How the subtree translation `t` moves this contact: the side it acts on (as in
    /// [`Self::for_each_chain_dof`]: +1 B only, −1 A only, 0 both), `∂p`, `[∂n, ∂t₁, ∂t₂]`
    /// and `∂distance`; `None` when neither body is under `t.body`.
    fn translated(&self, model: &Model, t: &SubtreeTranslation) -> Option<(i8, Vec3, [Vec3; 3], f64)> {
        let moves = |x: Option<usize>| x.is_some_and(|x| in_subtree(model, t.body, x));
        let (a, b) = (moves(self.body_a), moves(self.body_b));
        let side = match (a, b) {
            (true, true) => 0,
            (false, true) => 1,
            (true, false) => -1,
            (false, false) => return None,
        };
        let (mut dp, mut dn, mut dd) = (Vec3::zeros(), Vec3::zeros(), 0.0);
        let g = &self.jacobians.twist;
        for (moved, offset) in [(a, 3), (b, 9)] {
            if moved {
                dp += g.point.fixed_columns::<3>(offset) * t.axis;
                dn += g.normal.fixed_columns::<3>(offset) * t.axis;
                dd += (g.distance.fixed_columns::<3>(offset) * t.axis)[0];
            }
        }
        Some((side, dp, [dn, self.l1 * dn, self.l2 * dn], dd))
    }
}

/// A perturbation of the poses that is not a dof: the rigid translation of the subtree
/// of `body` along `axis` (world frame). Moving the translation of joint `body`'s
/// placement along a parent-frame axis `a` is the translation along `R_parent a`
/// ([`crate::model::ParamKind::Placement`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SubtreeTranslation {
    /// The body whose subtree moves (the body its joint carries).
    pub body: usize,
    /// World-frame direction of the translation.
    pub axis: Vec3,
}

impl SubtreeTranslation {
    /// The translation made by moving joint `body`'s placement along the parent-frame
    /// axis `axis`, at the poses of `data`.
    pub fn of_placement(model: &Model, data: &Data, body: usize, axis: &Vec3) -> SubtreeTranslation {
        let axis = model.parents[body].map_or(*axis, |p| data.x_world[p].rot * axis);
        SubtreeTranslation { body, axis }
    }

    /// The world twist `[0; w]`.
    fn twist(&self) -> Motion {
        Motion::new(Vec3::zeros(), self.axis)
    }
}

/// Whether body `x` is `root` or one of its descendants.
fn in_subtree(model: &Model, root: usize, x: usize) -> bool {
    let mut b = Some(x);
    while let Some(y) = b {
        if y == root {
            return true;
        }
        if y < root {
            return false;
        }
        b = model.parents[y];
    }
    false
}

/// A contact's sides' velocities `V_A`, `V_B`, `ΔV = V_B − V_A`, the relative velocity
/// `v_p` of the contact point, the row wrenches `W_r = [p × d_r; d_r]` and `d_r × ω`.
struct RowMotion {
    va: Motion,
    vbody: Motion,
    dv: Motion,
    dvp: Vec3,
    w: [Force; 3],
    dxw: [Vec3; 3],
}

/// `∂(J u)_r` for the three rows of a contact along one perturbation: the kinematic
/// term `kin · W_r`, the point term `∂p · (d_r × ω)` and the direction term `∂d_r · v_p`.
#[inline]
fn row_derivatives(kin: &Motion, w: &[Force; 3], dxw: &[Vec3; 3], dvp: &Vec3, dp: &Vec3, dd: &[Vec3; 3]) -> [f64; 3] {
    std::array::from_fn(|r| kin.dot(&w[r]) + dp.dot(&dxw[r]) + dd[r].dot(dvp))
}

/// Configuration derivatives of the rows, for fixed contact features (as [`crate::constraint::contact_jacobians`]).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ContactRowDerivatives {
    /// The contacts' derivatives: the first `len` entries are live, the others are kept
    /// storage for [`ContactRowDerivatives::rebuild`].
    store: Vec<ContactDerivatives>,
    len: usize,
    /// World-frame motion subspace of every dof at the configuration.
    s_world: Vec<Motion>,
    nbodies: usize,
    nv: usize,
    /// The tree of the model the stored entries were filled for (the chains whose
    /// columns a rebuild clears).
    topology: Topology,
}

/// Calls `f(k, side)` for every dof on the chains of bodies `a` and `b` (lowest common
/// ancestor `lca`): side +1 for B's chain only, −1 for A's only, 0 above the common
/// ancestor.
fn chain_dofs(model: &Model, a: Option<usize>, b: Option<usize>, lca: Option<usize>, mut f: impl FnMut(usize, i8)) {
    for_each_dof(model, b, lca, |k| f(k, 1));
    for_each_dof(model, a, lca, |k| f(k, -1));
    for_each_dof(model, lca, None, |k| f(k, 0));
}

/// Whether dof offset `j` of a joint moves under its dof offset `k` ([`JointType::carries`]).
#[inline]
fn carries(kind: &JointType, k: usize, j: usize) -> bool {
    kind.carries(k, j)
}

fn check_vector(what: &'static str, x: &[f64], expected: usize) -> Result<()> {
    if x.len() != expected {
        return Err(Error::Dimension { what, expected, got: x.len() });
    }
    if let Some((index, &value)) = x.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(Error::NonFinite { what, index, value });
    }
    Ok(())
}

impl ContactRowDerivatives {
    /// The derivatives at the configuration of `data` (after forward kinematics at q) of
    /// the rows `rows` built from `contacts` at that configuration.
    ///
    /// Errors: as [`ContactRows::new`]; `rows` not made from `contacts` for `model`
    /// ([`Error::Dimension`], [`Error::InvalidInput`]); a contact whose stored geometry
    /// is not its features' geometry at these poses (recompute it with
    /// [`super::recompute_contacts`]) or whose closed form is degenerate here
    /// ([`Error::InvalidInput`], [`Error::Numerical`]).
    pub fn new(model: &Model, data: &Data, contacts: &[Contact], rows: &ContactRows) -> Result<Self> {
        let mut out = ContactRowDerivatives::default();
        out.rebuild(model, data, contacts, rows)?;
        Ok(out)
    }

    /// [`ContactRowDerivatives::new`] into `self`, reusing its storage: no allocation
    /// once it has held as many contacts of a model with as many dofs. On error `self`
    /// holds no contacts.
    pub fn rebuild(&mut self, model: &Model, data: &Data, contacts: &[Contact], rows: &ContactRows) -> Result<()> {
        self.len = 0;
        check_data(model, data)?;
        let nv = model.nv();
        check_rows(rows, contacts.len(), nv)?;
        let same_model = self.topology.refresh(model);
        for (i, c) in contacts.iter().enumerate() {
            check_contact(model, c, i)?;
            if i < self.store.len() {
                let entry = &mut self.store[i];
                if same_model && entry.jacobians.point.ncols() == nv && entry.dt1.ncols() == nv {
                    // Only the previous contact's chain columns are nonzero: clear them
                    // (not the whole 3 × nv blocks) and fill the new contact's.
                    entry.clear_chain_columns(model);
                    entry.body_a = None;
                    entry.body_b = None;
                    entry.chains = Chains { lca: None };
                    contact_jacobians_refill(model, data, c, &mut entry.jacobians)?;
                } else {
                    contact_jacobians_into(model, data, c, &mut entry.jacobians)?;
                    entry.dt1 = Matrix3xX::zeros(nv);
                    entry.dt2 = Matrix3xX::zeros(nv);
                }
            } else {
                let jacobians = contact_jacobians(model, data, c)?;
                self.store.push(ContactDerivatives {
                    jacobians,
                    dt1: Matrix3xX::zeros(nv),
                    dt2: Matrix3xX::zeros(nv),
                    frame: rows.frames[i],
                    body_a: None,
                    body_b: None,
                    l1: Mat3::zeros(),
                    l2: Mat3::zeros(),
                    chains: Chains { lca: None },
                });
            }
            let entry = &mut self.store[i];
            // The chains the columns were filled on (cleared from here on the next rebuild).
            entry.body_a = c.body_a;
            entry.body_b = c.body_b;
            entry.chains = Chains::new(model, c.body_a, c.body_b);
            let (g, h) = (&entry.jacobians.geometry, &c.geometry);
            let scale = h.point.norm().max(1.0);
            let gap = ((g.point - h.point).norm() / scale).max((g.normal - h.normal).norm());
            if gap.is_nan() || gap > GEOMETRY_TOLERANCE {
                return Err(Error::InvalidInput(format!(
                    "contact {i}: its geometry differs from its features' geometry at these poses by {gap:e}; \
                     recompute the contacts at this configuration"
                )));
            }
            let frame = rows.frames[i];
            if (frame.normal - h.normal).norm() > GEOMETRY_TOLERANCE {
                return Err(Error::InvalidInput(format!("contact {i}: the rows were not built from these contacts")));
            }
            let (l1, l2) = frame.tangent_jacobians();
            if entry.dt1.ncols() != nv {
                entry.dt1 = Matrix3xX::zeros(nv);
                entry.dt2 = Matrix3xX::zeros(nv);
            }
            // ∂n/∂q is zero off the two bodies' chains, and so are ∂t₁/∂q and ∂t₂/∂q.
            let (dn, dt1, dt2) = (&entry.jacobians.normal, &mut entry.dt1, &mut entry.dt2);
            let mut tangents = |k: usize| {
                let n: Vec3 = dn.column(k).into_owned();
                dt1.set_column(k, &(l1 * n));
                dt2.set_column(k, &(l2 * n));
            };
            chain_dofs(model, c.body_a, c.body_b, entry.chains.lca, |k, _| tangents(k));
            entry.frame = frame;
            entry.l1 = l1;
            entry.l2 = l2;
        }
        self.len = contacts.len();
        self.s_world.clear();
        self.s_world.extend((0..nv).map(|k| world_subspace(data, model.dof_body[k], k)));
        self.nbodies = model.nbodies();
        self.nv = nv;
        Ok(())
    }

    /// Per contact: the geometry derivatives and ∂t₁/∂q, ∂t₂/∂q.
    pub fn contacts(&self) -> &[ContactDerivatives] {
        &self.store[..self.len]
    }

    /// ∂distance/∂q (nc × nv).
    pub fn distance_q(&self) -> DMatrix<f64> {
        let mut d = DMatrix::zeros(self.contacts().len(), self.nv);
        for (i, c) in self.contacts().iter().enumerate() {
            d.row_mut(i).copy_from(&c.jacobians.distance);
        }
        d
    }

    /// ∂(J(q) u)/∂q at fixed u ∈ R^nv: (3nc × nv). Column k = derivative along q ⊕ ε e_k.
    ///
    /// `model`, `data` and `rows` are those given to [`ContactRowDerivatives::new`].
    pub fn jv_q(&self, model: &Model, data: &Data, rows: &ContactRows, u: &[f64]) -> Result<DMatrix<f64>> {
        self.check_call(model, data, rows)?;
        check_vector("u", u, self.nv)?;
        let (vw, vb) = self.velocities(model, u);
        let mut out = DMatrix::zeros(3 * self.contacts().len(), self.nv);
        for (i, c) in self.contacts().iter().enumerate() {
            let RowMotion { va, vbody, dv, dvp, w, dxw } = c.row_motion(&vw);
            c.for_each_chain_dof(model, |k, side| {
                let s = &self.s_world[k];
                let kin = match side {
                    1 => s.cross_motion(&(vbody - vb[k])),
                    -1 => -s.cross_motion(&(va - vb[k])),
                    _ => s.cross_motion(&dv),
                };
                let dp: Vec3 = c.jacobians.point.column(k).into_owned();
                let dd = [c.jacobians.normal.column(k), c.dt1.column(k), c.dt2.column(k)].map(|x| x.into_owned());
                for (r, x) in row_derivatives(&kin, &w, &dxw, &dvp, &dp, &dd).into_iter().enumerate() {
                    out[(3 * i + r, k)] = x;
                }
            });
        }
        Ok(out)
    }

    /// `∂distance/∂θ` along subtree translations (nc × translations.len()).
    pub fn distance_translation(&self, model: &Model, translations: &[SubtreeTranslation]) -> DMatrix<f64> {
        let mut out = DMatrix::zeros(self.contacts().len(), translations.len());
        self.each_distance_translation(model, translations, |i, col, x| out[(i, col)] = x);
        out
    }

    /// `out[col] += scale · Σ_i w_i ∂distance_i/∂θ_col` ([`Self::distance_translation`]
    /// transposed onto `w`, one entry per contact), without allocating.
    pub fn distance_translation_vjp_acc(
        &self,
        model: &Model,
        translations: &[SubtreeTranslation],
        w: &[f64],
        scale: f64,
        out: &mut [f64],
    ) -> Result<()> {
        check_vector("w", w, self.contacts().len())?;
        check_vector("out", out, translations.len())?;
        self.each_distance_translation(model, translations, |i, col, x| out[col] += scale * w[i] * x);
        Ok(())
    }

    /// Calls `emit(contact, translation, ∂distance/∂θ)` for every nonzero entry.
    fn each_distance_translation(
        &self,
        model: &Model,
        translations: &[SubtreeTranslation],
        mut emit: impl FnMut(usize, usize, f64),
    ) {
        for (i, c) in self.contacts().iter().enumerate() {
            for (col, t) in translations.iter().enumerate() {
                if let Some((_, _, _, dd)) = c.translated(model, t) {
                    emit(i, col, dd);
                }
            }
        }
    }

    /// `∂(J u)/∂θ` at fixed u along subtree translations (3nc × translations.len()): the
    /// columns of [`Self::jv_q`] for perturbations that are not dofs.
    pub fn jv_translation(
        &self,
        model: &Model,
        data: &Data,
        rows: &ContactRows,
        u: &[f64],
        translations: &[SubtreeTranslation],
    ) -> Result<DMatrix<f64>> {
        let mut out = DMatrix::zeros(3 * self.contacts().len(), translations.len());
        let mut scratch = RowScratch::default();
        self.each_jv_translation(model, data, rows, u, translations, &mut scratch, |r, col, x| out[(r, col)] = x)?;
        Ok(out)
    }

    /// `out[col] += scale · μᵀ ∂(J u)/∂θ_col` ([`Self::jv_translation`] transposed onto μ,
    /// one entry per row) in the buffers of `scratch`, without allocating.
    #[allow(clippy::too_many_arguments)]
    pub fn jv_translation_vjp_acc(
        &self,
        model: &Model,
        data: &Data,
        rows: &ContactRows,
        u: &[f64],
        translations: &[SubtreeTranslation],
        mu: &[f64],
        scale: f64,
        scratch: &mut RowScratch,
        out: &mut [f64],
    ) -> Result<()> {
        check_vector("mu", mu, 3 * self.contacts().len())?;
        check_vector("out", out, translations.len())?;
        self.each_jv_translation(model, data, rows, u, translations, scratch, |r, col, x| out[col] += scale * mu[r] * x)
    }

    /// Calls `emit(row, translation, ∂(J u)_row/∂θ)` for the entries of the contacts the
    /// translations move.
    #[allow(clippy::too_many_arguments)]
    fn each_jv_translation(
        &self,
        model: &Model,
        data: &Data,
        rows: &ContactRows,
        u: &[f64],
        translations: &[SubtreeTranslation],
        scratch: &mut RowScratch,
        mut emit: impl FnMut(usize, usize, f64),
    ) -> Result<()> {
        self.check_call(model, data, rows)?;
        check_vector("u", u, self.nv)?;
        check_translations(model, translations)?;
        self.velocities_into(model, u, scratch);
        let vw = &scratch.vw;
        for (i, c) in self.contacts().iter().enumerate() {
            let RowMotion { va, vbody, dv, dvp, w, dxw } = c.row_motion(vw);
            for (col, t) in translations.iter().enumerate() {
                let Some((side, dp, dd, _)) = c.translated(model, t) else { continue };
                let s = t.twist();
                let before = side_velocity(vw, model.parents[t.body]);
                let kin = match side {
                    1 => s.cross_motion(&(vbody - before)),
                    -1 => -s.cross_motion(&(va - before)),
                    _ => s.cross_motion(&dv),
                };
                for (r, x) in row_derivatives(&kin, &w, &dxw, &dvp, &dp, &dd).into_iter().enumerate() {
                    emit(3 * i + r, col, x);
                }
            }
        }
        Ok(())
    }

    /// `∂(Jᵀ λ)/∂θ` at fixed λ along subtree translations (nv × translations.len()): the
    /// columns of [`Self::jtf_q`] for perturbations that are not dofs.
    pub fn jtf_translation(
        &self,
        model: &Model,
        data: &Data,
        rows: &ContactRows,
        lambda: &[f64],
        translations: &[SubtreeTranslation],
    ) -> Result<DMatrix<f64>> {
        let mut out = DMatrix::zeros(self.nv, translations.len());
        let mut scratch = RowScratch::default();
        self.each_jtf_translation(model, data, rows, lambda, translations, &mut scratch, |j, col, x| {
            out[(j, col)] += x
        })?;
        Ok(out)
    }

    /// `out[col] += scale · zᵀ ∂(Jᵀ λ)/∂θ_col` ([`Self::jtf_translation`] transposed onto
    /// z ∈ R^nv) in the buffers of `scratch`, without allocating.
    #[allow(clippy::too_many_arguments)]
    pub fn jtf_translation_vjp_acc(
        &self,
        model: &Model,
        data: &Data,
        rows: &ContactRows,
        lambda: &[f64],
        translations: &[SubtreeTranslation],
        z: &[f64],
        scale: f64,
        scratch: &mut RowScratch,
        out: &mut [f64],
    ) -> Result<()> {
        check_vector("z", z, self.nv)?;
        check_vector("out", out, translations.len())?;
        self.each_jtf_translation(model, data, rows, lambda, translations, scratch, |j, col, x| {
            out[col] += scale * z[j] * x
        })
    }

    /// Calls `emit(dof, translation, x)` for the terms whose sum over calls is
    /// `∂(Jᵀ λ)_dof/∂θ` (a dof may be emitted several times).
    #[allow(clippy::too_many_arguments)]
    fn each_jtf_translation(
        &self,
        model: &Model,
        data: &Data,
        rows: &ContactRows,
        lambda: &[f64],
        translations: &[SubtreeTranslation],
        scratch: &mut RowScratch,
        mut emit: impl FnMut(usize, usize, f64),
    ) -> Result<()> {
        self.check_call(model, data, rows)?;
        check_vector("lambda", lambda, 3 * self.contacts().len())?;
        check_translations(model, translations)?;
        self.subtree_wrenches_into(model, lambda, &mut scratch.phi);
        let phi = &scratch.phi;
        for (col, t) in translations.iter().enumerate() {
            let s = t.twist();
            // (S × S_j) · Φ_j for every dof j of the subtree (the translation carries them all).
            for b in (t.body..self.nbodies).filter(|&b| in_subtree(model, t.body, b)) {
                let v0 = model.v_idx[b];
                for j in v0..v0 + model.joints[b].nv() {
                    emit(j, col, s.cross_motion(&self.s_world[j]).dot(&phi[b]));
                }
            }
            // S_j · ∂F_c/∂θ on the moved contacts' own chains.
            for (i, c) in self.contacts().iter().enumerate() {
                let Some((_, dp, dd, _)) = c.translated(model, t) else { continue };
                let fc = c.force(&lambda[3 * i..3 * i + 3]);
                let dfc = c.force_derivative(&lambda[3 * i..3 * i + 3], &fc, &dp, &dd);
                let lca = c.chains.lca;
                for_each_dof(model, c.body_b, lca, |j| emit(j, col, self.s_world[j].dot(&dfc)));
                for_each_dof(model, c.body_a, lca, |j| emit(j, col, -self.s_world[j].dot(&dfc)));
            }
        }
        Ok(())
    }

    /// ∂(J(q)ᵀ λ)/∂q at fixed λ ∈ R^{3nc}: (nv × nv).
    ///
    /// `model`, `data` and `rows` are those given to [`ContactRowDerivatives::new`].
    pub fn jtf_q(&self, model: &Model, data: &Data, rows: &ContactRows, lambda: &[f64]) -> Result<DMatrix<f64>> {
        self.check_call(model, data, rows)?;
        check_vector("lambda", lambda, 3 * self.contacts().len())?;
        let nv = self.nv;
        let mut out = DMatrix::zeros(nv, nv);
        let phi = self.subtree_wrenches(model, lambda);
        // (S_k × S_j) · Φ_j for every dof k that carries dof j.
        for b in 0..self.nbodies {
            let (v0, n) = (model.v_idx[b], model.joints[b].nv());
            let kind = &model.joints[b].kind;
            for j in v0..v0 + n {
                let sj = self.s_world[j];
                for k in v0..v0 + n {
                    if carries(kind, k - v0, j - v0) {
                        out[(j, k)] += self.s_world[k].cross_motion(&sj).dot(&phi[b]);
                    }
                }
                for_each_dof(model, model.parents[b], None, |k| {
                    out[(j, k)] += self.s_world[k].cross_motion(&sj).dot(&phi[b]);
                });
            }
        }
        // S_j · ∂F_c/∂ε_k on the contacts' own chains.
        for (i, c) in self.contacts().iter().enumerate() {
            let l = &lambda[3 * i..3 * i + 3];
            let f = c.force(l);
            c.for_each_chain_dof(model, |k, _| {
                let dp: Vec3 = c.jacobians.point.column(k).into_owned();
                let dd = [c.jacobians.normal.column(k), c.dt1.column(k), c.dt2.column(k)].map(|x| x.into_owned());
                let dfc = c.force_derivative(l, &f, &dp, &dd);
                let lca = c.chains.lca;
                for_each_dof(model, c.body_b, lca, |j| out[(j, k)] += self.s_world[j].dot(&dfc));
                for_each_dof(model, c.body_a, lca, |j| out[(j, k)] -= self.s_world[j].dot(&dfc));
            });
        }
        Ok(out)
    }

    /// Row-vector products for reverse mode without forming the matrices (cost O(nc·depth + nv·depth)):
    /// μᵀ ∂(J u)/∂q  (nv)   and   zᵀ ∂(Jᵀ λ)/∂q  (nv).
    ///
    /// This one is `μᵀ ∂(J u)/∂q` (μ ∈ R^{3nc}).
    pub fn jv_q_vjp(
        &self,
        model: &Model,
        data: &Data,
        rows: &ContactRows,
        u: &[f64],
        mu: &[f64],
    ) -> Result<DVector<f64>> {
        let mut out = DVector::zeros(self.nv);
        self.jv_q_vjp_acc(model, data, rows, u, mu, 1.0, &mut RowScratch::default(), out.as_mut_slice())?;
        Ok(out)
    }

    /// `out += scale · μᵀ ∂(J u)/∂q` ([`Self::jv_q_vjp`]) in the buffers of `scratch`: no
    /// allocation once they have held a model of this size.
    #[allow(clippy::too_many_arguments)]
    pub fn jv_q_vjp_acc(
        &self,
        model: &Model,
        data: &Data,
        rows: &ContactRows,
        u: &[f64],
        mu: &[f64],
        scale: f64,
        scratch: &mut RowScratch,
        out: &mut [f64],
    ) -> Result<()> {
        self.check_call(model, data, rows)?;
        check_vector("u", u, self.nv)?;
        check_vector("mu", mu, 3 * self.contacts().len())?;
        check_vector("out", out, self.nv)?;
        self.velocities_into(model, u, scratch);
        let (vw, vb) = (&scratch.vw, &scratch.before);
        for (i, c) in self.contacts().iter().enumerate() {
            let m3 = [mu[3 * i] * scale, mu[3 * i + 1] * scale, mu[3 * i + 2] * scale];
            let (va, vbody) = (side_velocity(vw, c.body_a), side_velocity(vw, c.body_b));
            let dv = vbody - va;
            let p = c.jacobians.geometry.point;
            let dvp = dv.lin + dv.ang.cross(&p);
            let d = c.directions();
            let m = d[0] * m3[0] + d[1] * m3[1] + d[2] * m3[2];
            let wm = Force::from_point_force(&p, &m);
            let gp = m.cross(&dv.ang);
            let gn = c.lt(m3, &dvp);
            c.for_each_chain_dof(model, |k, side| {
                let s = &self.s_world[k];
                let x = match side {
                    1 => vbody - vb[k],
                    -1 => -(va - vb[k]),
                    _ => dv,
                };
                out[k] += s.dot(&x.cross_force(&wm))
                    + c.jacobians.point.column(k).dot(&gp)
                    + c.jacobians.normal.column(k).dot(&gn);
            });
        }
        Ok(())
    }

    /// `zᵀ ∂(Jᵀ λ)/∂q` (z ∈ R^nv) without forming the matrix (cost O(nc·depth + nv)).
    pub fn jtf_q_vjp(
        &self,
        model: &Model,
        data: &Data,
        rows: &ContactRows,
        lambda: &[f64],
        z: &[f64],
    ) -> Result<DVector<f64>> {
        let mut out = DVector::zeros(self.nv);
        self.jtf_q_vjp_acc(model, data, rows, lambda, z, 1.0, &mut RowScratch::default(), out.as_mut_slice())?;
        Ok(out)
    }

    /// `out += scale · zᵀ ∂(Jᵀ λ)/∂q` ([`Self::jtf_q_vjp`]) in the buffers of `scratch`:
    /// no allocation once they have held a model of this size.
    #[allow(clippy::too_many_arguments)]
    pub fn jtf_q_vjp_acc(
        &self,
        model: &Model,
        data: &Data,
        rows: &ContactRows,
        lambda: &[f64],
        z: &[f64],
        scale: f64,
        scratch: &mut RowScratch,
        out: &mut [f64],
    ) -> Result<()> {
        self.check_call(model, data, rows)?;
        check_vector("lambda", lambda, 3 * self.contacts().len())?;
        check_vector("z", z, self.nv)?;
        check_vector("out", out, self.nv)?;
        let nb = self.nbodies;
        self.subtree_wrenches_into(model, lambda, &mut scratch.phi);
        // Σ_{j carried by k} z_j S_j ×* Φ_j by subtree sums, minus the dofs of k's own
        // joint that k does not carry.
        let (phi, psi) = (&scratch.phi, &mut scratch.psi);
        psi.clear();
        psi.resize(nb, Force::zero());
        for b in 0..nb {
            let v0 = model.v_idx[b];
            for j in v0..v0 + model.joints[b].nv() {
                psi[b] += self.s_world[j].cross_force(&phi[b]) * z[j];
            }
        }
        for b in (0..nb).rev() {
            if let Some(p) = model.parents[b] {
                let x = psi[b];
                psi[p] += x;
            }
        }
        for b in 0..nb {
            let (v0, n) = (model.v_idx[b], model.joints[b].nv());
            let kind = &model.joints[b].kind;
            for k in v0..v0 + n {
                let mut acc = psi[b];
                for j in v0..v0 + n {
                    if !carries(kind, k - v0, j - v0) {
                        acc -= self.s_world[j].cross_force(&phi[b]) * z[j];
                    }
                }
                out[k] += scale * self.s_world[k].dot(&acc);
            }
        }
        // Σ_c (V_B(z) − V_A(z)) · ∂F_c/∂ε_k.
        self.velocities_into(model, z, scratch);
        let vz = &scratch.vw;
        for (i, c) in self.contacts().iter().enumerate() {
            let l = [lambda[3 * i], lambda[3 * i + 1], lambda[3 * i + 2]];
            let zc = side_velocity(vz, c.body_b) - side_velocity(vz, c.body_a);
            let p = c.jacobians.geometry.point;
            let d = c.directions();
            let f = d[0] * l[0] + d[1] * l[1] + d[2] * l[2];
            let ap = f.cross(&zc.ang) * scale;
            let an = c.lt(l, &(zc.ang.cross(&p) + zc.lin)) * scale;
            c.for_each_chain_dof(model, |k, _| {
                out[k] += c.jacobians.point.column(k).dot(&ap) + c.jacobians.normal.column(k).dot(&an);
            });
        }
        Ok(())
    }

    fn check_call(&self, model: &Model, data: &Data, rows: &ContactRows) -> Result<()> {
        if model.nv() != self.nv || model.nbodies() != self.nbodies {
            return Err(Error::InvalidInput(format!(
                "the model has {} bodies and {} dofs, the derivatives were made for {} and {}",
                model.nbodies(),
                model.nv(),
                self.nbodies,
                self.nv
            )));
        }
        if data.x_world.len() != self.nbodies {
            return Err(Error::Dimension { what: "data.x_world", expected: self.nbodies, got: data.x_world.len() });
        }
        if data.s.len() != self.nv {
            return Err(Error::Dimension { what: "data.s", expected: self.nv, got: data.s.len() });
        }
        check_rows(rows, self.contacts().len(), self.nv)
    }

    /// World spatial velocity of every body under `u`, and for each dof k the velocity
    /// `V_k⁻` of the dofs on its chain that k does not carry.
    fn velocities(&self, model: &Model, u: &[f64]) -> (Vec<Motion>, Vec<Motion>) {
        let mut scratch = RowScratch::default();
        self.velocities_into(model, u, &mut scratch);
        (scratch.vw, scratch.before)
    }

    /// [`Self::velocities`] into `scratch.vw` and `scratch.before`.
    fn velocities_into(&self, model: &Model, u: &[f64], scratch: &mut RowScratch) {
        let (vw, before) = (&mut scratch.vw, &mut scratch.before);
        vw.clear();
        vw.resize(self.nbodies, Motion::zero());
        before.clear();
        before.resize(self.nv, Motion::zero());
        for b in 0..self.nbodies {
            let vp = model.parents[b].map_or(Motion::zero(), |p| vw[p]);
            let (v0, n) = (model.v_idx[b], model.joints[b].nv());
            let kind = &model.joints[b].kind;
            let mut acc = vp;
            for k in v0..v0 + n {
                // the velocity of the joint's dofs that k does not carry
                before[k] = vp;
                for j in v0..v0 + n {
                    if !carries(kind, k - v0, j - v0) {
                        before[k] += self.s_world[j] * u[j];
                    }
                }
                acc += self.s_world[k] * u[k];
            }
            vw[b] = acc;
        }
    }

    /// `Φ_b`: the net contact wrench (world frame, about the origin) on the subtree of
    /// each body, `F_c = [p × f_c; f_c]` on B and `−F_c` on A.
    fn subtree_wrenches(&self, model: &Model, lambda: &[f64]) -> Vec<Force> {
        let mut phi = vec![];
        self.subtree_wrenches_into(model, lambda, &mut phi);
        phi
    }

    /// [`Self::subtree_wrenches`] into `phi`.
    fn subtree_wrenches_into(&self, model: &Model, lambda: &[f64], phi: &mut Vec<Force>) {
        phi.clear();
        phi.resize(self.nbodies, Force::zero());
        for (i, c) in self.contacts().iter().enumerate() {
            let d = c.directions();
            let f = d[0] * lambda[3 * i] + d[1] * lambda[3 * i + 1] + d[2] * lambda[3 * i + 2];
            let w = Force::from_point_force(&c.jacobians.geometry.point, &f);
            if let Some(b) = c.body_b {
                phi[b] += w;
            }
            if let Some(a) = c.body_a {
                phi[a] -= w;
            }
        }
        for b in (0..self.nbodies).rev() {
            if let Some(p) = model.parents[b] {
                let x = phi[b];
                phi[p] += x;
            }
        }
    }
}

/// Reusable buffers of the vector–Jacobian products of [`ContactRowDerivatives`] (body
/// velocities and subtree wrenches), so that a backward sweep allocates nothing per step.
#[derive(Clone, Debug, Default)]
pub struct RowScratch {
    vw: Vec<Motion>,
    before: Vec<Motion>,
    phi: Vec<Force>,
    psi: Vec<Force>,
}

#[inline]
fn side_velocity(vw: &[Motion], body: Option<usize>) -> Motion {
    body.map_or(Motion::zero(), |b| vw[b])
}

fn check_translations(model: &Model, translations: &[SubtreeTranslation]) -> Result<()> {
    for t in translations {
        if t.body >= model.nbodies() {
            return Err(Error::InvalidInput(format!(
                "a subtree translation of body {}, but the model has {} bodies",
                t.body,
                model.nbodies()
            )));
        }
        if !t.axis.iter().all(|x| x.is_finite()) {
            return Err(Error::NonFinite { what: "subtree translation axis", index: t.body, value: f64::NAN });
        }
    }
    Ok(())
}

fn check_rows(rows: &ContactRows, nc: usize, nv: usize) -> Result<()> {
    if rows.frames.len() != nc {
        return Err(Error::Dimension { what: "rows.frames (one per contact)", expected: nc, got: rows.frames.len() });
    }
    if rows.j.nrows() != 3 * nc {
        return Err(Error::Dimension { what: "rows.j (rows)", expected: 3 * nc, got: rows.j.nrows() });
    }
    if rows.j.ncols() != nv {
        return Err(Error::Dimension { what: "rows.j (columns)", expected: nv, got: rows.j.ncols() });
    }
    Ok(())
}
