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
use crate::dynamics::{derivative_columns_and_mass, placement_column, rnea_derivatives_at, Data, DerivativeData};
use crate::error::Error;
use crate::error::Result;
use crate::math::{lu_factor, skew, Inertia, Mat3, Mat6, Vec3};
use crate::model::{ParamKind, ParamSpec};
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
    /// The constraint stages' model-sized workspaces, kept across steps (taken while a
    /// step's constraint backward pass runs).
    pub(crate) geometry: Option<GeometryBuffers>,
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
            geometry: None,
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

/// The step quantities that parameter columns need besides the workspaces.
struct ParamContext<'a> {
    h: f64,
    /// Acceleration `(v⁺ − v)/h`.
    a: &'a [f64],
    /// Start velocity.
    v: &'a [f64],
    /// `q ⊖ q_rest`.
    spring_d: &'a [f64],
}

/// `∂G/∂θ` (nv × np). Needs the RNEA pass and world workspace at (q, v̄, a).
fn param_columns(
    model: &Model,
    data: &Data,
    deriv: &DerivativeData,
    spec: &ParamSpec,
    ctx: &ParamContext,
    col: &mut [f64],
    g: &mut DMatrix<f64>,
) {
    let nv = model.nv();
    let ParamContext { h, a, v, spring_d } = *ctx;
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
                ParamKind::Placement => placement_column(model, data, deriv, b, &Vec3::ith(s, 1.0), col),
                ParamKind::Gravity => {
                    for k in 0..nv {
                        col[k] = -deriv.ics[k].lin[s];
                    }
                }
                // Contact materials act through the constraint stage only.
                ParamKind::Friction | ParamKind::Restitution | ParamKind::ViscousFriction => {}
            }
            g.column_mut(e.offset + s).copy_from_slice(col);
        }
    }
}

/// `h · J_w · x` for an nv × m matrix `x`: the rows of a `∂q⁺/∂·` block from the
/// matching `∂v⁺/∂·` block. `J_w` is block diagonal (one block per joint, `blocks`);
/// joints without quaternions have identity blocks (their `⊕` is addition), so their
/// rows are `h x`.
pub(crate) fn config_rows(model: &Model, blocks: &[Mat6], h: f64, x: &DMatrix<f64>) -> DMatrix<f64> {
    let n = x.nrows();
    let mut out = DMatrix::from_vec(n, x.ncols(), x.as_slice().iter().map(|v| v * h).collect());
    for (i, joint) in model.joints.iter().enumerate() {
        if !joint.kind.has_quaternion() {
            continue;
        }
        let (va, src, dst) = (model.v_idx[i], x.as_slice(), out.as_mut_slice());
        match joint.nv() {
            3 => block_rows::<3>(&blocks[i], va, n, h, src, dst),
            _ => block_rows::<6>(&blocks[i], va, n, h, src, dst),
        }
    }
    out
}

/// Rows `va..va + N` of every column of `dst` (columns of length n) set to
/// `h · B · src[va..va + N]` for the top-left N × N block of `b`.
fn block_rows<const N: usize>(b: &Mat6, va: usize, n: usize, h: f64, src: &[f64], dst: &mut [f64]) {
    let bb: [[f64; N]; N] = std::array::from_fn(|r| std::array::from_fn(|c| b[(r, c)]));
    for (s, d) in src.chunks_exact(n).zip(dst.chunks_exact_mut(n)) {
        let xs: [f64; N] = std::array::from_fn(|c| s[va + c]);
        for (r, row) in bb.iter().enumerate() {
            let mut acc = 0.0;
            for (w, x) in row.iter().zip(&xs) {
                acc += w * x;
            }
            d[va + r] = acc * h;
        }
    }
}

/// Adds the block-diagonal `J_q` (`blocks` for quaternion joints, identity blocks for
/// the others) to the square matrix `m`.
pub(crate) fn add_config_blocks(model: &Model, blocks: &[Mat6], m: &mut DMatrix<f64>) {
    for (i, joint) in model.joints.iter().enumerate() {
        let (va, nj) = (model.v_idx[i], joint.nv());
        if joint.kind.has_quaternion() {
            for c in 0..nj {
                for r in 0..nj {
                    m[(va + r, va + c)] += blocks[i][(r, c)];
                }
            }
        } else {
            for k in va..va + nj {
                m[(k, k)] += 1.0;
            }
        }
    }
}

/// `Bᵀ x` for the block-diagonal `B` (`blocks` for quaternion joints, identity blocks
/// for the others) and a vector `x`, into `out`.
pub(crate) fn config_blocks_tr(model: &Model, blocks: &[Mat6], x: &[f64], out: &mut [f64]) {
    out.copy_from_slice(x);
    for (i, joint) in model.joints.iter().enumerate() {
        if !joint.kind.has_quaternion() {
            continue;
        }
        let (va, nj) = (model.v_idx[i], joint.nv());
        for r in 0..nj {
            let mut acc = 0.0;
            for c in 0..nj {
                acc += blocks[i][(c, r)] * x[va + c];
            }
            out[va + r] = acc;
        }
    }
}

/// `∂(M̃(q, θ) w)/∂q` (nv × nv, tangent columns) and `∂(M̃ w)/∂θ` (nv × np) at fixed
/// `w`, with `M̃ = M + diag(armature + h·damping)`: RNEA at zero velocity is
/// `M(q) a + g(q)`, so both are differences of the RNEA derivatives at `a = w` and
/// `a = 0` (the gravity terms cancel).
pub(crate) fn inertia_product_derivatives(
    model: &Model,
    spec: &ParamSpec,
    data: &mut Data,
    deriv: &mut DerivativeData,
    q: &[f64],
    w: &[f64],
    h: f64,
) -> Result<(DMatrix<f64>, DMatrix<f64>)> {
    let nv = model.nv();
    let np = spec.len();
    let zeros = vec![0.0; nv];
    let mut col = vec![0.0; nv];
    let mut out_q = DMatrix::zeros(nv, nv);
    let mut out_t = DMatrix::zeros(nv, np);
    for (a, sign) in [(w, 1.0), (zeros.as_slice(), -1.0)] {
        rnea_derivatives_at(model, data, deriv, q, &zeros, a, None)?;
        crate::dynamics::derivative_columns(model, deriv, true);
        out_q += &deriv.dtau_dq * sign;
        if np > 0 {
            let mut g = DMatrix::zeros(nv, np);
            let ctx = ParamContext { h, a, v: &zeros, spring_d: &zeros };
            param_columns(model, data, deriv, spec, &ctx, &mut col, &mut g);
            out_t += g * sign;
        }
    }
    Ok((out_q, out_t))
}

/// Factorises the workspace's `K_a` in place.
pub(super) fn factor(ws: &mut Workspace) -> Result<()> {
    if lu_factor(&mut ws.k, &mut ws.piv) {
        Ok(())
    } else {
        Err(Error::Numerical {
            algorithm: "step linearization",
            detail: "the acceleration Jacobian ∂G/∂a is singular".into(),
        })
    }
}

/// The model-sized workspaces of the constraint stages' backward pass (`StepGeometry`) (kinematics at q, and the scratch of
/// the inertia-product derivatives), kept across the steps of a backward sweep.
#[derive(Clone, Debug)]
pub(crate) struct GeometryBuffers {
    pub(crate) data: Data,
    pub(crate) scratch: (Data, DerivativeData),
}

impl GeometryBuffers {
    /// Workspaces for `model`.
    pub(crate) fn new(model: &Model) -> GeometryBuffers {
        GeometryBuffers { data: Data::new(model), scratch: (Data::new(model), DerivativeData::new(model)) }
    }
}
