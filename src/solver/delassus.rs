//! The Delassus operator `A = J M̃⁻¹ Jᵀ` of a constraint problem, as an operator: it
//! applies `A x` without forming `A`. A solver that wants the dense matrix asks for it
//! ([`DelassusOperator::dense`]); an iterative one (conjugate residuals, the NCP issue's
//! non-smooth Newton) only applies it.
//!
//! For rows `J` over the velocity blocks of several systems with effective masses
//! `M̃_s`, `A x = Σ_s J_s M̃_s⁻¹ J_sᵀ x`: one transposed product, one solve per system,
//! one product (`crate::world` builds such an operator).

use crate::math::{CsrMatrix, SparseSchur};
use nalgebra::{DMatrix, DVectorView, DVectorViewMut};

/// A symmetric positive semi-definite `m × m` operator `A = J M̃⁻¹ Jᵀ`.
pub trait DelassusOperator {
    /// The number of rows `m`.
    fn rows(&self) -> usize;

    /// `out = A x` (`x` and `out` of length [`DelassusOperator::rows`]).
    fn apply(&self, x: &[f64], out: &mut [f64]);

    /// The dense matrix `A`. The default applies the operator to the unit vectors
    /// (`m` applications); an operator that can do better overrides it.
    fn dense(&self) -> DMatrix<f64> {
        let m = self.rows();
        let mut a = DMatrix::zeros(m, m);
        let mut e = vec![0.0; m];
        let mut col = vec![0.0; m];
        for j in 0..m {
            e[j] = 1.0;
            self.apply(&e, &mut col);
            a.column_mut(j).copy_from_slice(&col);
            e[j] = 0.0;
        }
        a
    }

    /// The factors `(J, M̃)` with `A = J M̃⁻¹ Jᵀ`, for solvers that work in factored form
    /// (the PPM); `None` (the default) when the operator does not hold them.
    fn factors(&self) -> Option<(DMatrix<f64>, DMatrix<f64>)> {
        None
    }
}

/// A Delassus operator held as a dense matrix (for problems that come with `A`).
#[derive(Clone, Debug, PartialEq)]
pub struct DenseDelassus(pub DMatrix<f64>);

impl DelassusOperator for DenseDelassus {
    fn rows(&self) -> usize {
        self.0.nrows()
    }

    fn apply(&self, x: &[f64], out: &mut [f64]) {
        let x = DVectorView::from_slice(x, x.len());
        let n = out.len();
        DVectorViewMut::from_slice(out, n).gemv(1.0, &self.0, &x, 0.0);
    }

    fn dense(&self) -> DMatrix<f64> {
        self.0.clone()
    }
}

/// A symmetric square [`CsrMatrix`] (both triangles stored) is a Delassus-type operator.
impl DelassusOperator for CsrMatrix {
    fn rows(&self) -> usize {
        CsrMatrix::rows(self)
    }

    fn apply(&self, x: &[f64], out: &mut [f64]) {
        self.multiply(x, out);
    }
}

/// `J H⁻¹ Jᵀ` in factored form.
impl DelassusOperator for SparseSchur {
    fn rows(&self) -> usize {
        self.j().rows()
    }

    fn apply(&self, x: &[f64], out: &mut [f64]) {
        self.multiply(x, out);
    }
}
