//! Lemke's complementary pivoting method for the standard LCP `w = A f + b`, `f ≥ 0`, `w ≥ 0`, `fᵀw = 0`
//! (Lemke 1965; Cottle, Pang & Stone, *The Linear Complementarity Problem*, §4.4).
//!
//! The artificial variable `z₀` with the covering vector `e = 1` makes `w = b + e z₀ ≥ 0` feasible; the
//! almost-complementary path then alternates pivots (the complement of the variable that left enters)
//! until `z₀` leaves the basis. For copositive-plus `A` (every positive semi-definite `A`) the method
//! finds a solution whenever one exists; ray termination means there is none. Used by the pipeline for
//! islands whose rows are all unilateral, and as an independent reference in tests.

use nalgebra::{DMatrix, DVector};

use super::problem::amax;
use crate::error::{Error, Result};

/// Result of [`solve_standard`].
#[derive(Clone, Debug, PartialEq)]
pub struct LemkeOutput {
    /// The forces `f ≥ 0`.
    pub f: DVector<f64>,
    /// `A f + b`.
    pub w: DVector<f64>,
    /// Pivots taken (the initial entry of `z₀` included).
    pub pivots: usize,
}

/// Solves the standard LCP `w = A f + b ≥ 0`, `f ≥ 0`, `fᵀ w = 0` with Lemke's method.
///
/// Errors: [`Error::Dimension`] / [`Error::NonFinite`] for bad input, [`Error::Numerical`] on ray
/// termination (no solution found) or when `max_pivots` pivots did not suffice.
pub fn solve_standard(a: &DMatrix<f64>, b: &DVector<f64>, max_pivots: usize) -> Result<LemkeOutput> {
    solve_standard_counted(a, b, max_pivots).0
}

/// [`solve_standard`], with the pivots it took also when it failed (a failed run is
/// charged what it did: [`super::LcpOptions::work_limit`]).
pub(crate) fn solve_standard_counted(
    a: &DMatrix<f64>,
    b: &DVector<f64>,
    max_pivots: usize,
) -> (Result<LemkeOutput>, usize) {
    let mut pivots = 0;
    let out = run(a, b, max_pivots, &mut pivots);
    (out, pivots)
}

/// The method, counting its pivots in `pivots`.
fn run(a: &DMatrix<f64>, b: &DVector<f64>, max_pivots: usize, pivots: &mut usize) -> Result<LemkeOutput> {
    let m = b.len();
    if a.nrows() != m || a.ncols() != m {
        return Err(Error::Dimension { what: "Lemke matrix A", expected: m, got: a.nrows().max(a.ncols()) });
    }
    crate::error::check_vector("Lemke vector b", b.as_slice(), m)?;
    if let Some((index, &value)) = a.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(Error::NonFinite { what: "Lemke matrix A", index, value });
    }
    let numerical = |detail: String| Error::Numerical { algorithm: "Lemke", detail };
    if b.iter().all(|&v| v >= 0.0) {
        return Ok(LemkeOutput { f: DVector::zeros(m), w: b.clone(), pivots: 0 });
    }
    // Tableau [I | −A | −e | b]: columns 0..m are w, m..2m are f, 2m is z₀, 2m+1 the right-hand side.
    let z0 = 2 * m;
    let rhs = 2 * m + 1;
    let mut t = DMatrix::<f64>::zeros(m, 2 * m + 2);
    for i in 0..m {
        t[(i, i)] = 1.0;
        for j in 0..m {
            t[(i, m + j)] = -a[(i, j)];
        }
        t[(i, z0)] = -1.0;
        t[(i, rhs)] = b[i];
    }
    let mut basis: Vec<usize> = (0..m).collect();
    let scale = amax(a.as_slice()).max(1.0);
    let piv_eps = 1e-13 * scale;

    let pivot = |t: &mut DMatrix<f64>, r: usize, c: usize| {
        let p = t[(r, c)];
        for j in 0..t.ncols() {
            t[(r, j)] /= p;
        }
        for i in 0..t.nrows() {
            if i != r {
                let factor = t[(i, c)];
                if factor != 0.0 {
                    for j in 0..t.ncols() {
                        let v = t[(r, j)];
                        t[(i, j)] -= factor * v;
                    }
                }
            }
        }
    };

    // z₀ enters at the most negative b; w_r leaves.
    let mut r = 0;
    for i in 1..m {
        if b[i] < b[r] {
            r = i;
        }
    }
    pivot(&mut t, r, z0);
    let mut leaving = basis[r];
    basis[r] = z0;
    *pivots = 1;
    // z₀ at (round-off of) zero is a solution even while z₀ stays basic: the
    // almost-complementary point then satisfies w = A f + b to within z₀. Degenerate
    // problems (rank-deficient contact sets) reach it where the next entering column
    // has no positive entry.
    let z0_zero = 1e-13 * amax(b.as_slice());
    loop {
        if basis.iter().position(|&v| v == z0).is_some_and(|r| t[(r, rhs)] <= z0_zero) {
            break;
        }
        let entering = if leaving < m { leaving + m } else { leaving - m };
        // Ratio test: with the entering variable at θ the basic ones are x_B = t_rhs − t_col θ, so rows
        // with a positive entry in the entering column bound θ. Ties (degenerate steps: the friction
        // slacks of the standard form start at zero) go to z₀ if it is among them, else to the
        // lexicographically smallest row of [t_rhs, B⁻¹] / t_col (B⁻¹ sits in the w columns), the
        // rule under which the almost-complementary path cannot cycle.
        let candidates: Vec<(usize, f64)> = (0..m)
            .filter(|&i| t[(i, entering)] > piv_eps)
            .map(|i| (i, t[(i, rhs)].max(0.0) / t[(i, entering)]))
            .collect();
        let best = candidates.iter().copied().reduce(|a, b| if b.1 < a.1 { b } else { a }).map(|(first, theta)| {
            let tied: Vec<usize> =
                candidates.iter().filter(|c| c.1 <= theta + 1e-12 * theta.max(1e-300)).map(|c| c.0).collect();
            if tied.len() < 2 {
                return (first, theta);
            }
            if let Some(&i) = tied.iter().find(|&&i| basis[i] == z0) {
                return (i, theta);
            }
            let mut chosen = tied[0];
            for &i in &tied[1..] {
                for j in 0..m {
                    let (a, b) = (t[(i, j)] / t[(i, entering)], t[(chosen, j)] / t[(chosen, entering)]);
                    if (a - b).abs() > 1e-12 * a.abs().max(b.abs()) {
                        if a < b {
                            chosen = i;
                        }
                        break;
                    }
                }
            }
            (chosen, theta)
        });
        let Some((row, _)) = best else {
            return Err(numerical(format!("ray termination after {pivots} pivots (no solution found)")));
        };
        if *pivots >= max_pivots {
            return Err(numerical(format!("pivot budget of {max_pivots} spent")));
        }
        pivot(&mut t, row, entering);
        *pivots += 1;
        leaving = basis[row];
        basis[row] = entering;
        if leaving == z0 {
            break;
        }
    }
    let mut f = DVector::<f64>::zeros(m);
    for (i, &v) in basis.iter().enumerate() {
        if (m..2 * m).contains(&v) {
            f[v - m] = t[(i, rhs)].max(0.0);
        }
    }
    if f.iter().any(|v| !v.is_finite()) {
        return Err(numerical("non-finite solution".to_string()));
    }
    let w = a * &f + b;
    Ok(LemkeOutput { f, w, pivots: *pivots })
}
