//! Finite differences of vector-valued functions of a scalar: central differences
//! and Ridders' polynomial extrapolation of central differences with an error
//! estimate (Numerical Recipes, 3rd ed., §5.7, `dfridr`), and Jacobians assembled
//! column by column from either.

use super::FdMethod;
use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};

/// A derivative estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct FdEstimate {
    /// The derivative `f′(0)`.
    pub derivative: DVector<f64>,
    /// Estimated absolute error (largest over the entries); `None` for plain central differences.
    pub error: Option<f64>,
}

/// The central difference `(f(h) − f(−h)) / 2h`: the derivative of `f` at 0.
pub fn central(f: &dyn Fn(f64) -> Result<DVector<f64>>, h: f64) -> Result<DVector<f64>> {
    let (a, b) = (f(h)?, f(-h)?);
    if a.len() != b.len() {
        return Err(Error::InvalidInput(format!("function output changed length ({} vs {})", a.len(), b.len())));
    }
    Ok((a - b) / (2.0 * h))
}

/// Ridders' extrapolation: central differences at steps `h₀, h₀/1.4, h₀/1.4², …`
/// (at most 10) extrapolated to `h → 0` in a Neville tableau; returns the entry of
/// smallest estimated error, stopping once higher orders grow worse than twice the
/// best error (Numerical Recipes §5.7). The error is the largest over the entries.
pub fn ridders(f: &dyn Fn(f64) -> Result<DVector<f64>>, h0: f64) -> Result<FdEstimate> {
    const CON: f64 = 1.4;
    const CON2: f64 = CON * CON;
    const NTAB: usize = 10;
    const SAFE: f64 = 2.0;
    if !(h0.is_finite() && h0 > 0.0) {
        return Err(Error::InvalidInput(format!("finite-difference step must be positive, got {h0}")));
    }
    let mut a: Vec<Vec<DVector<f64>>> = Vec::with_capacity(NTAB);
    let mut h = h0;
    a.push(vec![central(f, h)?]);
    let mut best = a[0][0].clone();
    let mut err = f64::INFINITY;
    for i in 1..NTAB {
        h /= CON;
        let mut row = vec![central(f, h)?];
        let mut fac = CON2;
        for j in 1..=i {
            let next = (&row[j - 1] * fac - &a[i - 1][j - 1]) / (fac - 1.0);
            fac *= CON2;
            let e = (&next - &row[j - 1]).amax().max((&next - &a[i - 1][j - 1]).amax());
            if e <= err {
                err = e;
                best = next.clone();
            }
            row.push(next);
        }
        let stop = (&row[i] - &a[i - 1][i - 1]).amax() >= SAFE * err;
        a.push(row);
        if stop {
            break;
        }
    }
    Ok(FdEstimate { derivative: best, error: Some(err) })
}

/// The derivative of `f` at 0 by `method` (`Central` or `Ridders`; `Both` means Ridders).
pub fn derivative(f: &dyn Fn(f64) -> Result<DVector<f64>>, method: FdMethod, step: f64) -> Result<FdEstimate> {
    match method {
        FdMethod::Central => Ok(FdEstimate { derivative: central(f, step)?, error: None }),
        FdMethod::Ridders | FdMethod::Both => ridders(f, step),
    }
}

/// A finite-difference Jacobian.
#[derive(Clone, Debug, PartialEq)]
pub struct FdJacobian {
    /// The estimate (rows: outputs, columns: inputs).
    pub value: DMatrix<f64>,
    /// Per column, the estimated absolute error (Ridders only).
    pub error: Option<DVector<f64>>,
}

/// The Jacobian of a function given through its columns: `f(j, ε)` is the output
/// (minus any constant) when input `j` is moved by `ε`; column `j` is the
/// derivative at `ε = 0` with step `steps[j]`.
pub fn jacobian(
    nrows: usize,
    f: &dyn Fn(usize, f64) -> Result<DVector<f64>>,
    steps: &[f64],
    method: FdMethod,
) -> Result<FdJacobian> {
    let mut value = DMatrix::zeros(nrows, steps.len());
    let mut error = DVector::zeros(steps.len());
    let mut has_error = true;
    for (j, &h) in steps.iter().enumerate() {
        let est = derivative(&|e| f(j, e), method, h)?;
        if est.derivative.len() != nrows {
            return Err(Error::InvalidInput(format!(
                "function output has length {}, expected {nrows}",
                est.derivative.len()
            )));
        }
        value.set_column(j, &est.derivative);
        match est.error {
            Some(e) => error[j] = e,
            None => has_error = false,
        }
    }
    Ok(FdJacobian { value, error: has_error.then_some(error) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{so3_exp, so3_left_jacobian, Vec3};

    #[test]
    fn sine_derivatives() {
        let x0 = [0.3, 1.2, -2.0];
        let f = |e: f64| Ok(DVector::from_iterator(3, x0.iter().map(|x| (x + e).sin())));
        let want = DVector::from_iterator(3, x0.iter().map(|x: &f64| x.cos()));
        let c = central(&f, 1e-4).unwrap();
        assert!((&c - &want).amax() < 1e-8);
        let r = ridders(&f, 0.1).unwrap();
        assert!((&r.derivative - &want).amax() < 1e-12, "{}", (&r.derivative - &want).amax());
        let e = r.error.unwrap();
        assert!((0.0..1e-10).contains(&e));
        // Ridders beats central differences at the same starting step.
        let c = central(&f, 0.1).unwrap();
        assert!((&c - &want).amax() > 1e-4);
    }

    #[test]
    fn rotation_jacobian() {
        // d/dε so3_exp(φ + ε eᵢ) = [J_l(φ) eᵢ]× exp(φ) (left Jacobian).
        let phi = Vec3::new(0.4, -0.7, 1.1);
        let r0 = so3_exp(&phi);
        let jl = so3_left_jacobian(&phi);
        for i in 0..3 {
            let f = |e: f64| {
                let r = so3_exp(&(phi + Vec3::ith(i, e)));
                Ok(DVector::from_column_slice((r * r0.transpose()).as_slice()))
            };
            let d = ridders(&f, 0.05).unwrap().derivative;
            let w = jl.column(i).into_owned();
            let want = crate::math::skew(&w);
            let got = nalgebra::Matrix3::from_column_slice(d.as_slice());
            assert!((got - want).amax() < 1e-10, "column {i}: {}", (got - want).amax());
        }
    }

    #[test]
    fn jacobian_of_linear_map_and_errors() {
        let a = DMatrix::from_row_slice(2, 3, &[1.0, 2.0, 3.0, -1.0, 0.5, 4.0]);
        let x = DVector::from_vec(vec![0.1, 0.2, 0.3]);
        let f = |j: usize, e: f64| {
            let mut y = x.clone();
            y[j] += e;
            Ok(&a * y)
        };
        for m in [FdMethod::Central, FdMethod::Ridders] {
            let jac = jacobian(2, &f, &[1e-3; 3], m).unwrap();
            assert!((&jac.value - &a).amax() < 1e-10);
            assert_eq!(jac.error.is_some(), m == FdMethod::Ridders);
        }
        assert!(jacobian(3, &f, &[1e-3; 3], FdMethod::Central).is_err());
        assert!(ridders(&|_| Ok(DVector::zeros(1)), 0.0).is_err());
        let failing = |_: f64| -> Result<DVector<f64>> { Err(Error::InvalidInput("boom".into())) };
        assert!(ridders(&failing, 0.1).unwrap_err().to_string().contains("boom"));
    }
}
