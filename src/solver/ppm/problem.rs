//! The factored PSD contact problem ([`FactoredLcp`], [`PsdRow`]): rows `J` (`k × nv`), the SPD mass `M̃`
//! (`nv × nv`), offsets `b` and per-row types, with
//!
//! ```text
//! w = J M̃⁻¹ Jᵀ f + R f + b,   R = diag(r),
//! equality rows:   w_i = 0, f_i free            (no-slip: r = 0; viscous: r = 1/(h μ_v) > 0)
//! unilateral rows: 0 ≤ f_i ⊥ w_i ≥ 0            (contact normals)
//! ```
//!
//! Drumwright 2015, §IV (eqs. 29–42, viscous) and §VI (eqs. 45–55, no-slip). The `k × k` matrix
//! `J M̃⁻¹ Jᵀ` is never formed except by [`FactoredLcp::to_boxed`] (tests, the dense fallback).

use nalgebra::{DMatrix, DVector};

use super::cholesky::cholesky;
use crate::error::{Error, Result};
use crate::solver::lcp::{BoxedLcp, RowBound};

/// Relative pivot floor of the Cholesky factorization of `M̃` (a pivot `≤ 1e-14 max M̃_ii` is singular).
pub(crate) const MASS_PIVOT_FLOOR: f64 = 1e-14;

/// The type of one row of a [`FactoredLcp`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PsdRow {
    /// `w_i = 0` with a free force; `regularization = r ≥ 0` adds `r f_i` to `w_i` (the viscous friction
    /// row `J_t v⁺ + r f_t = 0`, `r = 1/(h μ_v)`; `r = 0`: the no-slip row `J_t v⁺ = 0`).
    Equality {
        /// `r ≥ 0` (finite).
        regularization: f64,
    },
    /// `0 ≤ f_i ⊥ w_i ≥ 0` (a contact normal).
    Unilateral,
}

impl PsdRow {
    /// The no-slip equality row (`r = 0`).
    pub const NO_SLIP: PsdRow = PsdRow::Equality { regularization: 0.0 };

    /// The regularization `r` (zero for unilateral rows).
    pub fn regularization(&self) -> f64 {
        match *self {
            PsdRow::Equality { regularization } => regularization,
            PsdRow::Unilateral => 0.0,
        }
    }

    /// Whether the row is an equality row.
    pub fn is_equality(&self) -> bool {
        matches!(self, PsdRow::Equality { .. })
    }
}

/// A PSD mixed LCP in factored form (see the module documentation): never holds `J M̃⁻¹ Jᵀ`.
#[derive(Clone, Debug, PartialEq)]
pub struct FactoredLcp {
    /// The constraint rows `J` (`k × nv`), in generalized velocity coordinates.
    pub j: DMatrix<f64>,
    /// The (effective) mass `M̃` (`nv × nv`, symmetric positive definite).
    pub mass: DMatrix<f64>,
    /// The offsets `b` (`k`; for contact the free relative velocities `J v_free` plus any bias).
    pub b: DVector<f64>,
    /// The `k` row types.
    pub rows: Vec<PsdRow>,
}

impl FactoredLcp {
    /// Builds a problem after checking it (see [`FactoredLcp::validate`]).
    pub fn new(j: DMatrix<f64>, mass: DMatrix<f64>, b: DVector<f64>, rows: Vec<PsdRow>) -> Result<Self> {
        let problem = FactoredLcp { j, mass, b, rows };
        problem.validate()?;
        Ok(problem)
    }

    /// Number of rows `k`.
    pub fn len(&self) -> usize {
        self.b.len()
    }

    /// Whether the problem has no rows.
    pub fn is_empty(&self) -> bool {
        self.b.is_empty()
    }

    /// Number of generalized velocities `nv`.
    pub fn dofs(&self) -> usize {
        self.mass.nrows()
    }

    /// Checks sizes (`J` is `k × nv`, `M̃` is `nv × nv`, `b` and `rows` have `k` entries), finiteness of
    /// `J`, `M̃`, `b`, regularizations finite and `≥ 0`, `M̃` symmetric (to `1e-10` relative) and positive
    /// definite (its Cholesky factorization succeeds with pivots above `1e-14 max M̃_ii`).
    /// Errors: [`Error::Dimension`], [`Error::NonFinite`], [`Error::InvalidInput`].
    pub fn validate(&self) -> Result<()> {
        self.check()?;
        self.mass_factor().map(|_| ())
    }

    /// Every check of [`FactoredLcp::validate`] except positive definiteness.
    pub(crate) fn check(&self) -> Result<()> {
        let (k, nv) = (self.b.len(), self.mass.nrows());
        if self.mass.ncols() != nv {
            return Err(Error::Dimension { what: "PPM mass matrix (columns)", expected: nv, got: self.mass.ncols() });
        }
        if self.j.nrows() != k {
            return Err(Error::Dimension { what: "PPM Jacobian J (rows)", expected: k, got: self.j.nrows() });
        }
        if self.j.ncols() != nv {
            return Err(Error::Dimension { what: "PPM Jacobian J (columns)", expected: nv, got: self.j.ncols() });
        }
        if self.rows.len() != k {
            return Err(Error::Dimension { what: "PPM row types", expected: k, got: self.rows.len() });
        }
        if let Some((index, &value)) = self.j.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::NonFinite { what: "PPM Jacobian J (column-major)", index, value });
        }
        if let Some((index, &value)) = self.mass.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::NonFinite { what: "PPM mass matrix (column-major)", index, value });
        }
        if let Some((index, &value)) = self.b.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::NonFinite { what: "PPM vector b", index, value });
        }
        for (i, row) in self.rows.iter().enumerate() {
            let r = row.regularization();
            if !(r.is_finite() && r >= 0.0) {
                return Err(Error::InvalidInput(format!("PPM row {i}: regularization {r} must be finite and >= 0")));
            }
        }
        let scale = self.mass.amax();
        for c in 0..nv {
            for r in c + 1..nv {
                if (self.mass[(r, c)] - self.mass[(c, r)]).abs() > 1e-10 * scale {
                    return Err(Error::InvalidInput(format!(
                        "PPM mass matrix is not symmetric: M[({r}, {c})] = {} but M[({c}, {r})] = {}",
                        self.mass[(r, c)],
                        self.mass[(c, r)]
                    )));
                }
            }
        }
        Ok(())
    }

    /// The lower Cholesky factor `L` of `M̃` (`L Lᵀ = M̃`), or [`Error::InvalidInput`] if `M̃` is not
    /// positive definite.
    pub(crate) fn mass_factor(&self) -> Result<DMatrix<f64>> {
        cholesky(&self.mass, MASS_PIVOT_FLOOR).ok_or_else(|| {
            Error::InvalidInput(
                "PPM mass matrix is not positive definite (its Cholesky factorization has a pivot <= 1e-14 max M_ii)"
                    .to_string(),
            )
        })
    }

    /// The dense boxed LCP of this problem: `A = J M̃⁻¹ Jᵀ + R` (`k × k`, exactly symmetric), `b`, equality
    /// rows as `RowBound::Box { lo: −∞, hi: ∞ }`, unilateral rows as [`RowBound::UNILATERAL`]. Costs
    /// O(k² nv) time and O(k²) memory: for tests and the fallback of [`super::solve`].
    pub fn to_boxed(&self) -> Result<BoxedLcp> {
        self.check()?;
        let l = self.mass_factor()?;
        Ok(self.boxed_with(&whiten(&l, &self.j)))
    }

    /// [`FactoredLcp::to_boxed`] from the whitened rows `x = L⁻¹ Jᵀ`.
    pub(crate) fn boxed_with(&self, x: &DMatrix<f64>) -> BoxedLcp {
        let mut a = x.tr_mul(x);
        for (i, row) in self.rows.iter().enumerate() {
            a[(i, i)] += row.regularization();
        }
        let bounds = self
            .rows
            .iter()
            .map(|row| match row {
                PsdRow::Equality { .. } => RowBound::Box { lo: f64::NEG_INFINITY, hi: f64::INFINITY },
                PsdRow::Unilateral => RowBound::UNILATERAL,
            })
            .collect();
        BoxedLcp { a, b: self.b.clone(), bounds, factor: None, positive_definite: false }
    }

    /// The velocity change `M̃⁻¹ Jᵀ f` (`nv`) of forces `f` (`k`), through the Cholesky factor of `M̃`.
    pub fn velocity_change(&self, f: &DVector<f64>) -> Result<DVector<f64>> {
        self.check()?;
        crate::error::check_vector("PPM forces f", f.as_slice(), self.len())?;
        let l = self.mass_factor()?;
        let mut v = self.j.tr_mul(f);
        if !l.solve_lower_triangular_mut(&mut v) || !l.tr_solve_lower_triangular_mut(&mut v) {
            return Err(Error::Numerical { algorithm: "PPM", detail: "singular mass factor".into() });
        }
        Ok(v)
    }
}

/// The whitened rows `X = L⁻¹ Jᵀ` (`nv × k`; column `i` is `L⁻¹ j_iᵀ`, so `J M̃⁻¹ Jᵀ = Xᵀ X`).
pub(crate) fn whiten(l: &DMatrix<f64>, j: &DMatrix<f64>) -> DMatrix<f64> {
    let mut x = j.transpose();
    // L has a positive diagonal (checked by the factorization), so the solve cannot fail.
    let _ = l.solve_lower_triangular_mut(&mut x);
    x
}
