//! Derivative blocks shared by the linearization of the smooth step
//! ([`super::linearize`]) and the constraint stages' backward pass
//! ([`super::constraint`]): the parameter columns `∂G/∂θ`, the joint blocks of the
//! configuration update `q ⊕ w` applied to vectors and matrices, and the
//! inertia-product derivatives `∂(M̃ w)/∂(q, θ)`.

use crate::dynamics::{placement_column, rnea_derivatives_at, Data, DerivativeData};
use crate::error::Result;
use crate::math::{reshape, skew, Inertia, Mat3, Mat6, Vec3};
use crate::model::{placement_direction, ParamKind, ParamSpec};
use crate::Model;
use nalgebra::DMatrix;

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
pub(super) struct ParamContext<'a> {
    pub(super) h: f64,
    /// Acceleration `(v⁺ − v)/h`.
    pub(super) a: &'a [f64],
    /// Start velocity.
    pub(super) v: &'a [f64],
    /// `q ⊖ q_rest`.
    pub(super) spring_d: &'a [f64],
}

/// `∂G/∂θ` (nv × np). Needs the RNEA pass and world workspace at (q, v̄, a).
pub(super) fn param_columns(
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
                    // The link's own inertia (a merged link's, carried into its body's frame).
                    let frame = &model.frames()[e.index];
                    let b = frame.body;
                    let mut di = inertia_partial(e.kind, s, &frame.inertia);
                    if e.index >= model.nbodies() {
                        di = di.transformed(&frame.placement);
                    }
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
                ParamKind::Placement => placement_column(model, data, deriv, b, &placement_direction(model, b, s), col),
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
    let mut s = InertiaProductScratch::new(model);
    std::mem::swap(&mut s.data, data);
    std::mem::swap(&mut s.deriv, deriv);
    let result = s.compute(model, spec, q, w, h);
    std::mem::swap(&mut s.data, data);
    std::mem::swap(&mut s.deriv, deriv);
    result?;
    Ok((s.dq, s.dt))
}

/// The workspace and the results of [`inertia_product_derivatives`], reused across
/// steps: after [`InertiaProductScratch::compute`], `dq = ∂(M̃ w)/∂q` and
/// `dt = ∂(M̃ w)/∂θ`. No allocation once it has served a model and θ of this size.
#[derive(Clone, Debug)]
pub(crate) struct InertiaProductScratch {
    data: Data,
    deriv: DerivativeData,
    zeros: Vec<f64>,
    col: Vec<f64>,
    g: DMatrix<f64>,
    /// `∂(M̃ w)/∂q` (nv × nv).
    pub dq: DMatrix<f64>,
    /// `∂(M̃ w)/∂θ` (nv × np).
    pub dt: DMatrix<f64>,
}

impl InertiaProductScratch {
    /// Buffers for `model`.
    pub(crate) fn new(model: &Model) -> Self {
        let nv = model.nv();
        InertiaProductScratch {
            data: Data::new(model),
            deriv: DerivativeData::new(model),
            zeros: vec![0.0; nv],
            col: vec![0.0; nv],
            g: DMatrix::zeros(nv, 0),
            dq: DMatrix::zeros(nv, nv),
            dt: DMatrix::zeros(nv, 0),
        }
    }

    /// `∂(M̃ w)/∂(q, θ)` at `q` into `self.dq`, `self.dt`.
    pub(crate) fn compute(&mut self, model: &Model, spec: &ParamSpec, q: &[f64], w: &[f64], h: f64) -> Result<()> {
        let nv = model.nv();
        let np = spec.len();
        if self.zeros.len() != nv || self.deriv.ic.len() != model.nbodies() {
            *self = InertiaProductScratch::new(model);
        }
        let Self { data, deriv, zeros, col, g, dq, dt } = self;
        reshape(dq, nv, nv);
        reshape(dt, nv, np);
        reshape(g, nv, np);
        for (a, sign) in [(w, 1.0), (zeros.as_slice(), -1.0)] {
            rnea_derivatives_at(model, data, deriv, q, zeros, a, None)?;
            crate::dynamics::derivative_columns(model, deriv, true);
            dq.zip_apply(&deriv.dtau_dq, |x, y| *x += sign * y);
            if np > 0 {
                g.fill(0.0);
                let ctx = ParamContext { h, a, v: zeros, spring_d: zeros };
                param_columns(model, data, deriv, spec, &ctx, col, g);
                dt.zip_apply(&*g, |x, y| *x += sign * y);
            }
        }
        Ok(())
    }
}
