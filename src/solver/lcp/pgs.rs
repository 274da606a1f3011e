//! Projected Gauss–Seidel for the boxed LCP with friction-coupled bounds: each sweep sets, row by row,
//! `f_i ← clamp(f_i − w_i / A_ii, lo_i, hi_i)` with `w_i = (A f + b)_i` and the friction bounds
//! `±μ f_normal` taken from the current normal force (the bounds follow the normals within the sweep).
//! The robust last resort of the pipeline: it converges for symmetric positive semi-definite `A` with
//! positive diagonal, but only linearly, so its result is usually standardized afterwards.

use nalgebra::DVector;

use super::problem::{amax, BoxedLcp, Scales};

/// Result of [`solve_pgs`].
#[derive(Clone, Debug, PartialEq)]
pub struct PgsOutput {
    /// The forces after the last sweep.
    pub f: DVector<f64>,
    /// `A f + b`.
    pub w: DVector<f64>,
    /// Sweeps done.
    pub iterations: usize,
    /// Whether the largest change of a sweep fell below the tolerance.
    pub converged: bool,
}

/// Runs at most `iterations` sweeps from `f0` (or zero), stopping when the largest change of a sweep is
/// below `tolerance · max(max |b| / d, max |f|)` with `d = max |A_ii|`. Rows with a non-positive diagonal
/// keep `f = 0` projected onto their bounds. The problem must be valid (see [`BoxedLcp::validate`]);
/// sizes that disagree give the zero start back unchanged.
pub fn solve_pgs(problem: &BoxedLcp, iterations: usize, tolerance: f64, f0: Option<&DVector<f64>>) -> PgsOutput {
    let m = problem.b.len();
    let a = &problem.a;
    let mut f = match f0 {
        Some(f0) if f0.len() == m && f0.iter().all(|v| v.is_finite()) => f0.clone(),
        _ => DVector::zeros(m),
    };
    if a.nrows() != m || a.ncols() != m || problem.bounds.len() != m {
        let w = problem.b.clone();
        return PgsOutput { f: DVector::zeros(m), w, iterations: 0, converged: false };
    }
    let tol = if tolerance.is_finite() && tolerance > 0.0 { tolerance } else { 0.0 };
    let d = Scales::new(a, &problem.b, None).d;
    let b_force = amax(problem.b.as_slice()) / d;
    let mut done = 0;
    let mut converged = false;
    for _ in 0..iterations {
        done += 1;
        let mut change = 0.0f64;
        for i in 0..m {
            let aii = a[(i, i)];
            let (lo, hi) = problem.bounds_at(i, f.as_slice());
            let mut target = f[i];
            if aii > 0.0 {
                let mut wi = problem.b[i];
                for j in 0..m {
                    wi += a[(i, j)] * f[j];
                }
                target = f[i] - wi / aii;
            }
            if target < lo {
                target = lo;
            }
            if target > hi {
                target = hi;
            }
            change = change.max((target - f[i]).abs());
            f[i] = target;
        }
        if !change.is_finite() {
            break;
        }
        if change <= tol * b_force.max(amax(f.as_slice())) {
            converged = true;
            break;
        }
    }
    let w = a * &f + &problem.b;
    PgsOutput { f, w, iterations: done, converged }
}
