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

use super::record::StepRecord;
use crate::dynamics::{
    derivative_columns, mass_matrix_from_composites, placement_column, rnea_derivatives_at, Data, DerivativeData,
};
use crate::error::{Error, Result};
use crate::math::{skew, Inertia, Mat3, Mat6, Vec3};
use crate::model::{ParamKind, ParamSpec};
use crate::step::VelocityProducts;
use crate::Model;
use nalgebra::{DMatrix, DVector};

/// Workspaces reused across the backward passes of records of one model.
#[derive(Clone, Debug)]
pub struct Workspace {
    data: Data,
    deriv: DerivativeData,
}

impl Workspace {
    /// Allocates the workspaces for `model`.
    pub fn new(model: &Model) -> Workspace {
        Workspace { data: Data::new(model), deriv: DerivativeData::new(model) }
    }
}

/// The step's linearization at a record.
pub(crate) struct Linearization {
    pub h: f64,
    /// `K_a = ∂G/∂a`.
    pub k_a: DMatrix<f64>,
    /// `∂G/∂q` (tangent).
    pub g_q: DMatrix<f64>,
    /// `∂G/∂v`.
    pub g_v: DMatrix<f64>,
    /// `∂G/∂θ`.
    pub g_theta: DMatrix<f64>,
    /// Per body: `∂q⁺/∂q` and `∂q⁺/∂w` blocks of its joint.
    pub jq: Vec<Mat6>,
    pub jw: Vec<Mat6>,
}

pub(crate) fn linearize(rec: &StepRecord, ws: &mut Workspace) -> Result<Linearization> {
    let model = &*rec.model;
    let nv = model.nv();
    let h = rec.dt;
    let a: DVector<f64> = (&rec.v_next - &rec.v) / h;
    let midpoint = rec.integrator.velocity_products == VelocityProducts::Midpoint && !rec.fallback;
    let vbar = if midpoint { (&rec.v + &rec.v_next) * 0.5 } else { rec.v.clone() };
    let (data, deriv) = (&mut ws.data, &mut ws.deriv);
    rnea_derivatives_at(model, data, deriv, rec.q.as_slice(), vbar.as_slice(), a.as_slice(), rec.wrenches.as_deref())?;
    derivative_columns(model, deriv, true);
    let mut k_a = DMatrix::zeros(nv, nv);
    mass_matrix_from_composites(model, deriv, &mut k_a);
    if midpoint {
        k_a += &deriv.dtau_dv * (0.5 * h);
    }
    let mut g_v = deriv.dtau_dv.clone();
    let mut g_q = deriv.dtau_dq.clone();
    for k in 0..nv {
        k_a[(k, k)] += h * model.damping[k];
        g_v[(k, k)] += model.damping[k];
    }
    let spring_d = spring_displacement(model, rec.q.as_slice());
    if model.has_springs {
        for (i, joint) in model.joints.iter().enumerate() {
            let (va, n) = (model.v_idx[i], joint.nv());
            if n == 0 || (va..va + n).all(|k| model.stiffness[k] == 0.0) {
                continue;
            }
            let jd = joint.kind.difference_jacobian(&spring_d[va..va + n]);
            for r in 0..n {
                for c in 0..n {
                    g_q[(va + r, va + c)] += model.stiffness[va + r] * jd[(r, c)];
                }
            }
        }
    }
    let g_theta = param_columns(model, data, deriv, &rec.params, h, &a, &rec.v, &spring_d);
    let (mut jq, mut jw) = (Vec::with_capacity(model.nbodies()), Vec::with_capacity(model.nbodies()));
    for (i, joint) in model.joints.iter().enumerate() {
        let (va, n) = (model.v_idx[i], joint.nv());
        let w: Vec<f64> = (va..va + n).map(|k| h * rec.v_next[k]).collect();
        let (q_blk, w_blk) = joint.kind.integrate_jacobians(&w);
        jq.push(q_blk);
        jw.push(w_blk);
    }
    Ok(Linearization { h, k_a, g_q, g_v, g_theta, jq, jw })
}

/// `q ⊖ q_rest` per degree of freedom.
fn spring_displacement(model: &Model, q: &[f64]) -> Vec<f64> {
    let mut d = vec![0.0; model.nv()];
    if model.has_springs {
        model.difference_into(model.rest.as_slice(), q, &mut d);
    }
    d
}

/// The derivative of the rotational inertia about the frame origin, first moment and
/// mass (an [`Inertia`] used as a linear object) with respect to one scalar of the
/// `(mass, com, inertia about com)` parameterisation.
fn inertia_partial(kind: ParamKind, s: usize, inertia: &Inertia) -> Inertia {
    let (m, c) = (inertia.mass, inertia.com());
    let cx = skew(&c);
    match kind {
        ParamKind::Mass => Inertia { mass: 1.0, h: c, rot: -(cx * cx) },
        ParamKind::Com => {
            let e = Vec3::ith(s, 1.0);
            let ex = skew(&e);
            Inertia { mass: 0.0, h: e * m, rot: -(ex * cx + cx * ex) * m }
        }
        _ => {
            let (r, col) = [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)][s];
            let mut e = Mat3::zeros();
            e[(r, col)] = 1.0;
            e[(col, r)] = 1.0;
            Inertia { mass: 0.0, h: Vec3::zeros(), rot: e }
        }
    }
}

/// `∂G/∂θ` (nv × np). Needs the RNEA pass and world workspace at (q, v̄, a).
#[allow(clippy::too_many_arguments)]
fn param_columns(
    model: &Model,
    data: &Data,
    deriv: &DerivativeData,
    spec: &ParamSpec,
    h: f64,
    a: &DVector<f64>,
    v: &DVector<f64>,
    spring_d: &[f64],
) -> DMatrix<f64> {
    let nv = model.nv();
    let mut g = DMatrix::zeros(nv, spec.len());
    let mut col = vec![0.0; nv];
    for e in spec.entries() {
        let b = e.index;
        let va = if b < model.nbodies() { model.v_idx[b] } else { 0 };
        for s in 0..e.len {
            col.iter_mut().for_each(|x| *x = 0.0);
            match e.kind {
                ParamKind::Mass | ParamKind::Com | ParamKind::Inertia => {
                    let di = inertia_partial(e.kind, s, &model.bodies[b].inertia);
                    let df = di.mul_motion(&data.a[b]) + data.v[b].cross_force(&di.mul_motion(&data.v[b]));
                    let dfw = data.x_world[b].act_force(&df);
                    let mut x = Some(b);
                    while let Some(i) = x {
                        let ia = model.v_idx[i];
                        for k in ia..ia + model.joints[i].nv() {
                            col[k] = deriv.s[k].dot(&dfw);
                        }
                        x = model.parents[i];
                    }
                }
                ParamKind::Damping => col[va + s] = h * a[va + s] + v[va + s],
                ParamKind::Stiffness => col[va + s] = spring_d[va + s],
                ParamKind::Rest => col[va + s] = -model.stiffness[va + s],
                ParamKind::Armature => col[va + s] = a[va + s],
                ParamKind::Placement => placement_column(model, data, deriv, b, &Vec3::ith(s, 1.0), &mut col),
                ParamKind::Gravity => {
                    for k in 0..nv {
                        col[k] = -deriv.ics[k].lin[s];
                    }
                }
            }
            g.column_mut(e.offset + s).copy_from_slice(&col);
        }
    }
    g
}

/// Multiplies the block-diagonal matrix `blocks` (one nv_j × nv_j block per joint) by
/// `x` (nv × m), or its transpose when `transpose`. Joints without quaternions have
/// identity blocks (their `⊕` is addition) and are copied through.
pub(crate) fn block_mul(model: &Model, blocks: &[Mat6], x: &DMatrix<f64>, transpose: bool) -> DMatrix<f64> {
    let mut out = x.clone();
    let n = x.nrows();
    for col in 0..x.ncols() {
        let src = &x.as_slice()[col * n..(col + 1) * n];
        let dst = &mut out.as_mut_slice()[col * n..(col + 1) * n];
        for (i, joint) in model.joints.iter().enumerate() {
            let (va, nj) = (model.v_idx[i], joint.nv());
            // Scalar joints have identity blocks: the copy above stands.
            if nj == 0 || !joint.kind.has_quaternion() {
                continue;
            }
            for r in 0..nj {
                let mut acc = 0.0;
                for c in 0..nj {
                    let w = if transpose { blocks[i][(c, r)] } else { blocks[i][(r, c)] };
                    acc += w * src[va + c];
                }
                dst[va + r] = acc;
            }
        }
    }
    out
}

/// Solves `K_a X = B`.
pub(crate) fn solve(k_a: &DMatrix<f64>, b: &DMatrix<f64>) -> Result<DMatrix<f64>> {
    k_a.clone().lu().solve(b).ok_or_else(|| Error::Numerical {
        algorithm: "step linearization",
        detail: "the acceleration Jacobian ∂G/∂a is singular".into(),
    })
}
