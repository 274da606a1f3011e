//! Linearization of one recorded step (the backward pass of
//! [`crate::step::semi_implicit_euler`]).
//!
//! The step solves, for the generalized acceleration `a`,
//!
//! ```text
//! G(a; q, v, τ, θ) = RNEA(q, v̄, a) + h·D a + D v + K (q ⊖ q_rest) − τ = 0,
//! v̄ = v + h a / 2   (midpoint velocity products)   or   v̄ = v   (explicit),
//! ```
//!
//! (RNEA with armature and the world-frame wrenches), then `v⁺ = v + h a` and
//! `q⁺ = q ⊕ h v⁺`. By the implicit-function theorem `da = −K_a⁻¹ (∂G/∂x) dx` with
//! `K_a = ∂G/∂a = M + diag(armature) + h·D (+ h/2 · ∂RNEA/∂v̄)`, and the configuration
//! update contributes `dq⁺ = J_q dq + J_w h dv⁺` joint by joint (`J_q = Ad_{exp(−w)}`,
//! `J_w = J_r(w)` on the Lie groups). These are the Jacobians of the integrator that
//! actually ran: a step whose midpoint iteration fell back to the explicit evaluation
//! is differentiated as an explicit step.

use super::constraint_workspace::ConstraintWorkspace;
use super::derivative_terms::{param_columns, ParamContext};
use super::record::StepRecord;
use crate::dynamics::{derivative_columns_and_mass, rnea_derivatives_at, Data, DerivativeData};
use crate::error::Error;
use crate::error::Result;
use crate::math::{lu_factor, Mat6};
use crate::step::VelocityProducts;
use crate::Model;
use nalgebra::DMatrix;

/// Workspaces reused across the backward passes of records of one model. After a
/// linearization it holds the step's derivative blocks (`K_a` and its LU factors,
/// `∂G/∂q`, `∂G/∂v`, `∂G/∂θ`, the joint blocks of `q ⊕ w`); a record of a model of
/// another size reallocates it.
#[derive(Clone, Debug)]
pub struct Workspace {
    data: Data,
    pub(crate) deriv: DerivativeData,
    /// `K_a = ∂G/∂a`, then (in the backward passes) its LU factors.
    pub(crate) k: DMatrix<f64>,
    /// Row interchanges of the LU factors of `k`.
    pub(crate) piv: Vec<usize>,
    /// `∂G/∂θ` (nv × np).
    pub(crate) g_theta: DMatrix<f64>,
    /// Per body with a quaternion joint: `∂q⁺/∂q` and `∂q⁺/∂w` blocks of its joint
    /// (other joints have identity blocks; theirs are not written).
    pub(crate) jq: Vec<Mat6>,
    pub(crate) jw: Vec<Mat6>,
    /// Right-hand sides `[∂G/∂q ∂G/∂v ∂G/∂θ]ᵀ` of the Jacobian solve, then its
    /// solution, and nv rows of scratch for the inverse (`math::lu_solve_and_invert`).
    pub(crate) zt: DMatrix<f64>,
    /// The constraint stages' buffers, kept across steps (taken while a step's
    /// constraint backward pass runs).
    pub(crate) constraint: ConstraintSlot,
    /// Scratch vectors (nv): acceleration, midpoint velocity, spring displacement, a column.
    acc: Vec<f64>,
    vbar: Vec<f64>,
    spring_d: Vec<f64>,
    col: Vec<f64>,
}

impl Workspace {
    /// Allocates the workspaces for `model`.
    pub fn new(model: &Model) -> Workspace {
        let (nv, nb) = (model.nv(), model.nbodies());
        Workspace {
            data: Data::new(model),
            deriv: DerivativeData::new(model),
            k: DMatrix::zeros(nv, nv),
            piv: vec![0; nv],
            g_theta: DMatrix::zeros(nv, 0),
            zt: DMatrix::zeros(3 * nv, nv),
            jq: vec![Mat6::identity(); nb],
            jw: vec![Mat6::identity(); nb],
            constraint: ConstraintSlot::default(),
            acc: vec![0.0; nv],
            vbar: vec![0.0; nv],
            spring_d: vec![0.0; nv],
            col: vec![0.0; nv],
        }
    }

    /// `∂G/∂q` (tangent columns) of the last linearization.
    pub(crate) fn g_q(&self) -> &DMatrix<f64> {
        &self.deriv.dtau_dq
    }

    /// `∂G/∂v` of the last linearization.
    pub(crate) fn g_v(&self) -> &DMatrix<f64> {
        &self.deriv.dtau_dv
    }
}

/// Linearizes the step of `rec` into `ws` and returns the time step h: `ws.k = K_a`,
/// `∂G/∂q` and `∂G/∂v` in place of `∂τ/∂q`, `∂τ/∂q̇` in the derivative workspace
/// ([`Workspace::g_q`], [`Workspace::g_v`]), `ws.g_theta = ∂G/∂θ`, and the joint blocks
/// `ws.jq`, `ws.jw` of the configuration update. Allocates only when the workspace
/// was made for a model of another size or the parameter count changed.
pub(crate) fn linearize(rec: &StepRecord, ws: &mut Workspace) -> Result<f64> {
    let model = &*rec.model;
    let nv = model.nv();
    if ws.k.nrows() != nv || ws.jq.len() != model.nbodies() || ws.deriv.ic.len() != model.nbodies() {
        *ws = Workspace::new(model);
    }
    let h = rec.dt;
    let midpoint = rec.integrator.velocity_products == VelocityProducts::Midpoint && !rec.fallback;
    // The smooth update's velocity (before any constraint impulse) defines the acceleration.
    let (v, v_next) = (rec.v.as_slice(), rec.v_smooth().as_slice());
    for k in 0..nv {
        ws.acc[k] = (v_next[k] - v[k]) / h;
        ws.vbar[k] = if midpoint { (v[k] + v_next[k]) * 0.5 } else { v[k] };
    }
    let (data, deriv) = (&mut ws.data, &mut ws.deriv);
    rnea_derivatives_at(model, data, deriv, rec.q.as_slice(), &ws.vbar, &ws.acc, rec.wrenches.as_deref())?;
    derivative_columns_and_mass(model, deriv, true, &mut ws.k);
    if midpoint {
        let half_h = 0.5 * h;
        for (k, d) in ws.k.as_mut_slice().iter_mut().zip(deriv.dtau_dv.as_slice()) {
            *k += d * half_h;
        }
    }
    for k in 0..nv {
        ws.k[(k, k)] += h * model.damping[k];
        deriv.dtau_dv[(k, k)] += model.damping[k];
    }
    if model.has_springs {
        model.difference_into(model.rest.as_slice(), rec.q.as_slice(), &mut ws.spring_d);
        for (i, joint) in model.joints.iter().enumerate() {
            let (va, n) = (model.v_idx[i], joint.nv());
            if n == 0 || (va..va + n).all(|k| model.stiffness[k] == 0.0) {
                continue;
            }
            let jd = joint.kind.difference_jacobian(&ws.spring_d[va..va + n]);
            for r in 0..n {
                for c in 0..n {
                    deriv.dtau_dq[(va + r, va + c)] += model.stiffness[va + r] * jd[(r, c)];
                }
            }
        }
    } else {
        ws.spring_d.fill(0.0);
    }
    let np = rec.params.len();
    if ws.g_theta.ncols() != np {
        ws.g_theta = DMatrix::zeros(nv, np);
    }
    if np > 0 {
        let ctx = ParamContext { h, a: &ws.acc, v, spring_d: &ws.spring_d };
        param_columns(model, data, deriv, &rec.params, &ctx, &mut ws.col, &mut ws.g_theta);
    }
    for (i, joint) in model.joints.iter().enumerate() {
        if !joint.kind.has_quaternion() {
            continue;
        }
        let (va, n) = (model.v_idx[i], joint.nv());
        let mut w = [0.0; 6];
        for (wk, vk) in w.iter_mut().zip(&rec.v_position().as_slice()[va..va + n]) {
            *wk = h * vk;
        }
        let (q_blk, w_blk) = joint.kind.integrate_jacobians(&w[..n]);
        ws.jq[i] = q_blk;
        ws.jw[i] = w_blk;
    }
    Ok(h)
}

/// Factorises the workspace's `K_a` in place.
pub(super) fn factor(ws: &mut Workspace) -> Result<()> {
    if lu_factor(&mut ws.k, &mut ws.piv) {
        Ok(())
    } else {
        Err(singular_acceleration_jacobian())
    }
}

/// The error of a singular `K_a = ∂G/∂a`.
pub(super) fn singular_acceleration_jacobian() -> Error {
    Error::Numerical {
        algorithm: "step linearization", detail: "the acceleration Jacobian ∂G/∂a is singular".into()
    }
}

/// The slot of a [`Workspace`] for the constraint stages' buffers
/// ([`super::step_vjp::ConstraintWorkspace`]): scratch, so a cloned workspace starts
/// without them.
#[derive(Default)]
pub(crate) struct ConstraintSlot(Option<Box<ConstraintWorkspace>>);

impl ConstraintSlot {
    /// The buffers, leaving the slot empty.
    pub(crate) fn take(&mut self) -> Option<Box<ConstraintWorkspace>> {
        self.0.take()
    }

    /// Puts the buffers back.
    pub(crate) fn put(&mut self, buffers: Box<ConstraintWorkspace>) {
        self.0 = Some(buffers);
    }
}

impl Clone for ConstraintSlot {
    fn clone(&self) -> Self {
        ConstraintSlot(None)
    }
}

impl std::fmt::Debug for ConstraintSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "ConstraintSlot(filled)" } else { "ConstraintSlot(empty)" })
    }
}
