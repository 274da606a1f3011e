//! The forward path of a step's backward pass: its full Jacobian blocks
//! ([`StepRecord::jacobians`]), from the smooth update's blocks and the linearizations of
//! the constraint stages (`super::constraint`). The VJP does not go through them
//! (`super::step_vjp`).

use super::constraint::{linearize_stages, ConstraintLinearization};
use super::constraint_workspace::ConstraintWorkspace;
use super::derivative_terms::{add_config_blocks, config_rows};
use super::linearize::{factor, linearize, singular_acceleration_jacobian, Workspace};
use super::record::{StepJacobians, StepRecord};
use crate::error::{Error, Result};
use crate::math::{lu_factor, lu_solve_and_invert};
use crate::step::trees::Trees;
use nalgebra::DMatrix;

impl StepRecord {
    /// The full Jacobian blocks of the step.
    pub fn jacobians(&self) -> Result<StepJacobians> {
        self.jacobians_with(&mut Workspace::new(&self.model))
    }

    /// [`StepRecord::jacobians`] reusing a workspace.
    pub fn jacobians_with(&self, ws: &mut Workspace) -> Result<StepJacobians> {
        let smooth = self.smooth_blocks(ws)?;
        let (lin, pos) = match &self.constraints {
            Some(c) => {
                let mut cw = ws.constraint.take().unwrap_or_else(|| Box::new(ConstraintWorkspace::new(&self.model)));
                let stages = linearize_stages(self, c, &mut cw.geometry);
                ws.constraint.put(cw);
                let (velocity, position) = stages?;
                (Some(velocity), position)
            }
            None => (None, None),
        };
        self.assemble_jacobians(ws, &smooth, lin.as_ref(), pos.as_ref())
    }

    /// The velocity blocks of the smooth update `v_f(q, v, τ, θ)` (before the
    /// constraint stage); leaves the configuration-update blocks in `ws`.
    ///
    /// A model of several trees (free bodies, robots side by side) has a block-diagonal
    /// `K_a`, `∂G/∂q` and `∂G/∂v`: each tree is solved on its own dofs
    /// ([`tree_smooth_blocks`]), at the sum of the cubes of the trees' sizes instead of
    /// `nv³`. The blocks are checked to be zero between trees first; where one is not,
    /// the whole system is solved as one.
    fn smooth_blocks(&self, ws: &mut Workspace) -> Result<SmoothBlocks> {
        let model = &*self.model;
        let nv = model.nv();
        let h = linearize(self, ws)?;
        let np = ws.g_theta.ncols();
        let trees = Trees::new(model);
        if trees.dofs.len() > 1 && block_diagonal_by_trees(ws, &trees) {
            return tree_smooth_blocks(ws, &trees, h);
        }
        factor(ws)?;
        // dv⁺/dτ = h K_a⁻¹ ;  dv⁺/dx = −h K_a⁻¹ ∂G/∂x  (+ I for x = v), the latter by
        // one solve with the factors for the right-hand sides [∂G/∂q ∂G/∂v ∂G/∂θ]
        // (backward stable, unlike a product with the explicit inverse).
        let mg = 2 * nv + np;
        if ws.zt.nrows() != mg + nv || ws.zt.ncols() != nv {
            ws.zt = DMatrix::zeros(mg + nv, nv);
        }
        transpose_into(&ws.deriv.dtau_dq, &mut ws.zt, 0);
        transpose_into(&ws.deriv.dtau_dv, &mut ws.zt, nv);
        transpose_into(&ws.g_theta, &mut ws.zt, 2 * nv);
        let mut dv_dtau = DMatrix::zeros(nv, nv);
        lu_solve_and_invert(&ws.k, &ws.piv, &mut ws.zt, mg, &mut dv_dtau, h);
        let dv_dq = scaled_transpose(&ws.zt, 0, nv, -h);
        let mut dv_dv = scaled_transpose(&ws.zt, nv, nv, -h);
        for k in 0..nv {
            dv_dv[(k, k)] += 1.0;
        }
        let dv_dtheta = scaled_transpose(&ws.zt, 2 * nv, np, -h);
        Ok(SmoothBlocks { h, dv_dq, dv_dv, dv_dtau, dv_dtheta })
    }

    /// The step's Jacobians from the smooth blocks and, for a step with constraints,
    /// a linearization of the constraint stage (in the recorded mode or another one) and
    /// of its position stage when it had one.
    /// Needs the configuration-update blocks that [`StepRecord::smooth_blocks`] left in `ws`.
    fn assemble_jacobians(
        &self,
        ws: &Workspace,
        smooth: &SmoothBlocks,
        lin: Option<&ConstraintLinearization>,
        pos: Option<&ConstraintLinearization>,
    ) -> Result<StepJacobians> {
        let model = &*self.model;
        let nv = model.nv();
        let h = smooth.h;
        let np = smooth.dv_dtheta.ncols();
        let (mut dv_dq, mut dv_dv, mut dv_dtau, mut dv_dtheta) =
            (smooth.dv_dq.clone(), smooth.dv_dv.clone(), smooth.dv_dtau.clone(), smooth.dv_dtheta.clone());
        if let Some(lin) = lin {
            // v⁺ = v_f + M̃⁻¹Jᵀf: dv⁺ = (I − G J_C) dv_f + Q [dq dv dθ].
            dv_dq = lin.project(&dv_dq) + lin.direct.columns(0, nv);
            dv_dv = lin.project(&dv_dv) + lin.direct.columns(nv, nv);
            dv_dtau = lin.project(&dv_dtau);
            dv_dtheta = lin.project(&dv_dtheta) + lin.direct.columns(2 * nv, np);
        }
        // The velocity that moves q: v⁺, or the position stage's v⁺ + M̃⁻¹Jᵀg, whose
        // linearization composes the same way with v⁺ as its free velocity.
        let (mut pq, pv, ptau, ptheta) = match pos {
            Some(p) => (
                p.project(&dv_dq) + p.direct.columns(0, nv),
                p.project(&dv_dv) + p.direct.columns(nv, nv),
                p.project(&dv_dtau),
                p.project(&dv_dtheta) + p.direct.columns(2 * nv, np),
            ),
            None => (dv_dq.clone(), dv_dv.clone(), dv_dtau.clone(), dv_dtheta.clone()),
        };
        // Impacts (continuous-time bounce gradients): the saltation matrix, whose
        // velocity rows act on the velocity blocks before q⁺ is formed from them.
        if let Some(lin) = lin {
            lin.saltation_velocity(&mut dv_dq, &mut pq);
        }
        // dq⁺ = J_q dq + J_w h dv_position
        let mut dq_dq = config_rows(model, &ws.jw, h, &pq);
        add_config_blocks(model, &ws.jq, &mut dq_dq);
        if let Some(lin) = lin {
            lin.saltation_position(model, &ws.jw, &mut dq_dq);
        }
        let dq_dv = config_rows(model, &ws.jw, h, &pv);
        let dq_dtau = config_rows(model, &ws.jw, h, &ptau);
        let dq_dtheta = config_rows(model, &ws.jw, h, &ptheta);
        let jac = StepJacobians { dq_dq, dq_dv, dq_dtau, dq_dtheta, dv_dq, dv_dv, dv_dtau, dv_dtheta };
        check_finite("step Jacobians", [&jac.dq_dq, &jac.dq_dv, &jac.dv_dq, &jac.dv_dv, &jac.dv_dtau, &jac.dv_dtheta])?;
        Ok(jac)
    }
}

/// The velocity blocks of a step's smooth update (see [`StepRecord::smooth_blocks`]).
struct SmoothBlocks {
    h: f64,
    dv_dq: DMatrix<f64>,
    dv_dv: DMatrix<f64>,
    dv_dtau: DMatrix<f64>,
    dv_dtheta: DMatrix<f64>,
}

/// True when `K_a`, `∂G/∂q` and `∂G/∂v` of the last linearization are zero between
/// every two trees of the model (`O(nv²)` reads, against the `O(nv³)` dense solve it
/// lets [`tree_smooth_blocks`] avoid).
fn block_diagonal_by_trees(ws: &Workspace, trees: &Trees) -> bool {
    let of = &trees.of_dof;
    let nv = of.len();
    [&ws.k, ws.g_q(), ws.g_v()].iter().all(|m| {
        m.as_slice().chunks_exact(nv).zip(of).all(|(col, &tc)| col.iter().zip(of).all(|(x, &tr)| tr == tc || *x == 0.0))
    })
}

/// [`StepRecord::smooth_blocks`] tree by tree: per tree `t` with dofs `D`, the LU
/// factors of `K_a[D, D]` solve the right-hand sides `∂G/∂q[D, D]`, `∂G/∂v[D, D]` and
/// `∂G/∂θ[D, :]` and give `h K_a[D, D]⁻¹`; the blocks between trees are zero.
fn tree_smooth_blocks(ws: &Workspace, trees: &Trees, h: f64) -> Result<SmoothBlocks> {
    let nv = ws.k.nrows();
    let np = ws.g_theta.ncols();
    let mut dv_dq = DMatrix::zeros(nv, nv);
    let mut dv_dv = DMatrix::identity(nv, nv);
    let mut dv_dtau = DMatrix::zeros(nv, nv);
    let mut dv_dtheta = DMatrix::zeros(nv, np);
    for dofs in &trees.dofs {
        let n = dofs.len();
        let mut k = DMatrix::from_fn(n, n, |r, c| ws.k[(dofs[r], dofs[c])]);
        let mut piv = vec![0; n];
        if !lu_factor(&mut k, &mut piv) {
            return Err(singular_acceleration_jacobian());
        }
        // Rows of z: the right-hand sides, transposed ([q | v | θ]), then n rows of scratch.
        let (g_q, g_v) = (ws.g_q(), ws.g_v());
        let mut z = DMatrix::from_fn(3 * n + np, n, |j, r| {
            let row = dofs[r];
            match j {
                j if j < n => g_q[(row, dofs[j])],
                j if j < 2 * n => g_v[(row, dofs[j - n])],
                j if j < 2 * n + np => ws.g_theta[(row, j - 2 * n)],
                _ => 0.0,
            }
        });
        let mut inv = DMatrix::zeros(n, n);
        lu_solve_and_invert(&k, &piv, &mut z, 2 * n + np, &mut inv, h);
        for (r, &row) in dofs.iter().enumerate() {
            for (j, &col) in dofs.iter().enumerate() {
                dv_dq[(row, col)] = -h * z[(j, r)];
                dv_dv[(row, col)] += -h * z[(n + j, r)];
                dv_dtau[(row, col)] = inv[(r, j)];
            }
            for c in 0..np {
                dv_dtheta[(row, c)] = -h * z[(2 * n + c, r)];
            }
        }
    }
    Ok(SmoothBlocks { h, dv_dq, dv_dv, dv_dtau, dv_dtheta })
}

/// Writes `bᵀ` into the rows `first..first + b.ncols()` of `zt`.
fn transpose_into(b: &DMatrix<f64>, zt: &mut DMatrix<f64>, first: usize) {
    let (n, m) = (b.nrows(), zt.nrows());
    if n == 0 {
        return; // a model without degrees of freedom: nothing to write
    }
    let z = zt.as_mut_slice();
    for (j, col) in b.as_slice().chunks_exact(n).enumerate() {
        for (k, x) in col.iter().enumerate() {
            z[k * m + first + j] = *x;
        }
    }
}

/// `s · Z[first..first + cols, :]ᵀ` (nv × cols) from the rows of `zt`.
fn scaled_transpose(zt: &DMatrix<f64>, first: usize, cols: usize, s: f64) -> DMatrix<f64> {
    let (m, n) = (zt.nrows(), zt.ncols());
    let z = zt.as_slice();
    let mut out = DMatrix::zeros(n, cols);
    if n == 0 {
        return out;
    }
    for (c, col) in out.as_mut_slice().chunks_exact_mut(n).enumerate() {
        let zc = &z[first + c..];
        for (r, x) in col.iter_mut().enumerate() {
            *x = zc[r * m] * s;
        }
    }
    out
}

/// True when every entry is finite (`x · 0` is 0 for finite x, NaN otherwise; the
/// sums over independent lanes vectorise).
fn all_finite(x: &[f64]) -> bool {
    let mut acc = [0.0f64; 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v * 0.0;
        }
    }
    chunks.remainder().iter().all(|v| v.is_finite()) && acc.iter().all(|a| *a == 0.0)
}

fn check_finite<const N: usize>(what: &'static str, ms: [&DMatrix<f64>; N]) -> Result<()> {
    if ms.iter().all(|m| all_finite(m.as_slice())) {
        Ok(())
    } else {
        Err(Error::Numerical { algorithm: what, detail: "non-finite entry".into() })
    }
}
