//! [`check_jacobian`]: the gradient check of a user's own function with Euclidean input.

use super::fd;
use super::report::{BlockReport, GradReport};
use super::GradcheckConfig;
use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};

/// Compares `analytic` (m × n) with finite differences of `f` at `x` (length n),
/// one block named `"df/dx"` per method of `config`. Input `i` is moved by
/// `config.step · max(1, |xᵢ|)`.
///
/// ```
/// use nalgebra::{DMatrix, DVector};
/// use stiction::gradcheck::{check_jacobian, GradcheckConfig};
/// let f = |x: &DVector<f64>| Ok(DVector::from_vec(vec![x[0] * x[1], x[0].sin()]));
/// let x = DVector::from_vec(vec![0.5, 2.0]);
/// let jac = DMatrix::from_row_slice(2, 2, &[2.0, 0.5, 0.5f64.cos(), 0.0]);
/// let report = check_jacobian(&f, &x, &jac, &GradcheckConfig::default()).unwrap();
/// assert!(report.passed(), "{report}");
/// ```
pub fn check_jacobian(
    f: &dyn Fn(&DVector<f64>) -> Result<DVector<f64>>,
    x: &DVector<f64>,
    analytic: &DMatrix<f64>,
    config: &GradcheckConfig,
) -> Result<GradReport> {
    config.validate()?;
    let y0 = f(x)?;
    if analytic.shape() != (y0.len(), x.len()) {
        return Err(Error::InvalidInput(format!(
            "analytic Jacobian is {}×{}, expected {}×{} (outputs × inputs)",
            analytic.nrows(),
            analytic.ncols(),
            y0.len(),
            x.len()
        )));
    }
    let column = |j: usize, eps: f64| {
        let mut xp = x.clone();
        xp[j] += eps;
        Ok(f(&xp)? - &y0)
    };
    let steps: Vec<f64> = x.iter().map(|xi| config.step * xi.abs().max(1.0)).collect();
    let mut report = GradReport {
        title: format!("function R^{} -> R^{}", x.len(), y0.len()),
        blocks: vec![],
        rel_tol: config.rel_tol,
    };
    for &method in config.method.methods() {
        let fdj = fd::jacobian(y0.len(), &column, &steps, method)?;
        report.blocks.push(BlockReport::compare("df/dx", method, analytic, &fdj.value, fdj.error.as_ref(), config)?);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradcheck::FdMethod;

    fn f(x: &DVector<f64>) -> Result<DVector<f64>> {
        Ok(DVector::from_vec(vec![x[0].sin() * x[1], x[1].exp() + x[2] * x[2], 3.0 * x[2]]))
    }
    fn jac(x: &DVector<f64>) -> DMatrix<f64> {
        DMatrix::from_row_slice(3, 3, &[x[0].cos() * x[1], x[0].sin(), 0.0, 0.0, x[1].exp(), 2.0 * x[2], 0.0, 0.0, 3.0])
    }

    #[test]
    fn right_passes_wrong_fails() {
        let x = DVector::from_vec(vec![0.7, -0.3, 1.5]);
        for method in [FdMethod::Central, FdMethod::Ridders, FdMethod::Both] {
            let config = GradcheckConfig { method, ..Default::default() };
            let r = check_jacobian(&f, &x, &jac(&x), &config).unwrap();
            assert!(r.passed(), "{method:?}\n{r}");
            assert_eq!(r.blocks.len(), method.methods().len());
            let mut wrong = jac(&x);
            wrong[(1, 2)] *= 1.0 + 1e-4;
            let r = check_jacobian(&f, &x, &wrong, &config).unwrap();
            assert!(!r.passed());
            assert_eq!(r.blocks[0].worst, (1, 2));
        }
        // Ridders is far more accurate than the tolerance.
        let r = check_jacobian(&f, &x, &jac(&x), &GradcheckConfig::default()).unwrap();
        assert!(r.max_rel_error() < 1e-9, "{r}");
        assert!(check_jacobian(&f, &x, &DMatrix::zeros(2, 3), &GradcheckConfig::default()).is_err());
        let bad = GradcheckConfig { step: -1.0, ..Default::default() };
        assert!(check_jacobian(&f, &x, &jac(&x), &bad).is_err());
    }
}
