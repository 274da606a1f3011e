//! Blocked projected Gauss–Seidel on the dual NCP `w = A f + b` with isotropic Coulomb
//! cones: the fallback of [`super::NcpSolver`] when its non-smooth Newton iteration does not
//! reach the tolerance (a lagged friction compliance can make it cycle, e.g. on a box that
//! slides on four redundant corners while a pusher drives it).
//!
//! One sweep visits the rows in order. A row outside any cone takes the projection of its
//! own Newton step onto its bound, `f_i ← Π_[lo, hi](f_i − w_i / A_ii)`. A cone (normal row
//! `n`, tangent rows `t`, coefficient μ) takes a few steps of the fixed point of the
//! De Saxcé natural map (De Saxcé and Feng 1998; Acary and Brogliato 2008, §13.3),
//!
//! ```text
//! (f_n, f_t) ← Π_K((f_n, f_t) − ρ (w_n + μ |w_t|, w_t)),      K = {|f_t| ≤ μ f_n}
//! ```
//!
//! with `ρ = 1/λ_max` of the contact's diagonal block of `A`, whose fixed points are exactly
//! the solutions of the contact's Coulomb law with maximal dissipation. The projection onto
//! the second-order cone is closed-form: inside, unchanged; in the polar cone
//! (`μ |f_t| ≤ −f_n`), zero; otherwise `s = (f_n + μ |f_t|)/(1 + μ²)`, `(s, μ s f_t/|f_t|)`.
//!
//! The iteration converges linearly where Newton's method cycles; the solver then
//! finishes with its contact mode's exact forces (module notes of [`super::mode`]).

use super::mode::Cone;
use crate::solver::lcp::RowBound;
use nalgebra::{DMatrix, DVector};

/// Projected steps per cone and sweep.
const CONE_STEPS: usize = 4;

/// One block of a sweep: a row on its own, or a cone (its normal row first).
enum Block {
    Row(usize),
    Cone { rows: Vec<usize>, mu: f64, rho: f64 },
}

/// The blocks of a problem: each cone with its normal, every other row on its own, in the
/// order of their first rows.
fn blocks(a: &DMatrix<f64>, bounds: &[RowBound], cones: &[Cone]) -> Vec<Block> {
    let mut in_cone = vec![false; bounds.len()];
    let mut out: Vec<(usize, Block)> = vec![];
    for c in cones {
        let rows: Vec<usize> = std::iter::once(c.normal).chain(c.rows.iter().copied()).collect();
        rows.iter().for_each(|&i| in_cone[i] = true);
        let block = DMatrix::from_fn(rows.len(), rows.len(), |r, s| a[(rows[r], rows[s])]);
        let largest = block.symmetric_eigenvalues().iter().fold(0.0_f64, |m, &x| m.max(x));
        let rho = if largest > 0.0 && largest.is_finite() { 1.0 / largest } else { 0.0 };
        out.push((c.normal, Block::Cone { rows, mu: c.mu, rho }));
    }
    out.extend((0..bounds.len()).filter(|&i| !in_cone[i]).map(|i| (i, Block::Row(i))));
    out.sort_by_key(|(first, _)| *first);
    out.into_iter().map(|(_, b)| b).collect()
}

/// `[A f + b]_i`, with `at = Aᵀ` (its columns are `A`'s rows, contiguous).
fn velocity(at: &DMatrix<f64>, b: &DVector<f64>, f: &DVector<f64>, i: usize) -> f64 {
    at.column(i).dot(f) + b[i]
}

/// The projection of `(f_n, f_t)` onto the cone `|f_t| ≤ μ f_n` (module notes), in place.
fn project_cone(fn_: &mut f64, ft: &mut [f64], mu: f64) {
    let nt = ft.iter().map(|x| x * x).sum::<f64>().sqrt();
    if nt <= mu * *fn_ {
        return;
    }
    if mu * nt <= -*fn_ {
        *fn_ = 0.0;
        ft.iter_mut().for_each(|x| *x = 0.0);
        return;
    }
    let s = (*fn_ + mu * nt) / (1.0 + mu * mu);
    *fn_ = s;
    ft.iter_mut().for_each(|x| *x *= mu * s / nt);
}

/// Runs at most `sweeps` sweeps from `f` (in place), stopping as soon as `done(f)` holds
/// after a sweep; returns the sweeps run. A row with a zero diagonal (it moves nothing)
/// keeps its force.
pub(crate) fn cone_gauss_seidel(
    a: &DMatrix<f64>,
    b: &DVector<f64>,
    bounds: &[RowBound],
    cones: &[Cone],
    f: &mut DVector<f64>,
    sweeps: usize,
    mut done: impl FnMut(&DVector<f64>) -> bool,
) -> usize {
    let blocks = blocks(a, bounds, cones);
    let at = a.transpose();
    // Per cone: its rows' velocities, then its tangent forces (scratch, reused).
    let (mut local, mut ft) = (vec![0.0; 3], vec![0.0; 2]);
    for sweep in 1..=sweeps {
        for block in &blocks {
            match block {
                Block::Row(i) => {
                    let i = *i;
                    let d = a[(i, i)];
                    if !(d > 0.0 && d.is_finite()) {
                        continue;
                    }
                    let step = f[i] - velocity(&at, b, f, i) / d;
                    f[i] = match bounds[i] {
                        RowBound::Box { lo, hi } => step.clamp(lo, hi),
                        // A friction row outside a cone (its normal is not unilateral) is
                        // refused by `cones`; keep the step.
                        RowBound::Friction { .. } => step,
                    };
                }
                Block::Cone { rows, mu, rho } => {
                    if *rho == 0.0 {
                        continue;
                    }
                    local.resize(rows.len(), 0.0);
                    ft.resize(rows.len() - 1, 0.0);
                    for _ in 0..CONE_STEPS {
                        for (l, &r) in local.iter_mut().zip(rows) {
                            *l = velocity(&at, b, f, r);
                        }
                        let slip = local[1..].iter().map(|x| x * x).sum::<f64>().sqrt();
                        let mut fn_ = f[rows[0]] - rho * (local[0] + mu * slip);
                        for ((x, &t), w) in ft.iter_mut().zip(&rows[1..]).zip(&local[1..]) {
                            *x = f[t] - rho * w;
                        }
                        project_cone(&mut fn_, &mut ft, *mu);
                        f[rows[0]] = fn_;
                        for (&t, &x) in rows[1..].iter().zip(&ft) {
                            f[t] = x;
                        }
                    }
                }
            }
        }
        if done(f) {
            return sweep;
        }
    }
    sweeps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cone_projection_keeps_inside_zeroes_the_polar_cone_and_lands_on_the_surface() {
        let (mut n, mut t) = (1.0, [0.1, 0.2]);
        project_cone(&mut n, &mut t, 0.5);
        assert_eq!((n, t), (1.0, [0.1, 0.2]));
        let (mut n, mut t) = (-1.0, [0.1, 0.0]);
        project_cone(&mut n, &mut t, 0.5);
        assert_eq!((n, t), (0.0, [0.0, 0.0]));
        // (1, 3) with μ = 0.5: s = (1 + 1.5)/1.25 = 2, f_t = 0.5·2 along (1, 0).
        let (mut n, mut t) = (1.0, [3.0, 0.0]);
        project_cone(&mut n, &mut t, 0.5);
        assert!((n - 2.0).abs() < 1e-15 && (t[0] - 1.0).abs() < 1e-15 && t[1] == 0.0);
        // The nearest point: the residual is orthogonal to the cone's generator (1, μ).
        let (d0, d1) = (1.0 - n, 3.0 - t[0]);
        assert!((d0 + d1 * 0.5).abs() < 1e-15);
    }
}
