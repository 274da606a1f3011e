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
    if !(h0.is_finite() && h0 > 0.0) {
        return Err(Error::InvalidInput(format!("finite-difference step must be positive, got {h0}")));
    }
    // Central differences have an error series in even powers of h.
    extrapolate(&|h| central(f, h), h0, RIDDERS_CON * RIDDERS_CON)
}

/// The second-order one-sided difference `(4 f(h) − f(2h) − 3 f(0)) / 2h` (`h` of either
/// sign): the derivative of `f` at 0 from the side of `h`, for a function defined on that
/// side only (between 0 and `2h`). Its error is `O(h²)`, as that of [`central`].
pub fn one_sided(f: &dyn Fn(f64) -> Result<DVector<f64>>, h: f64) -> Result<DVector<f64>> {
    let (a, b, c) = (f(h)?, f(2.0 * h)?, f(0.0)?);
    if a.len() != b.len() || a.len() != c.len() {
        return Err(Error::InvalidInput(format!(
            "function output changed length ({}, {} and {})",
            a.len(),
            b.len(),
            c.len()
        )));
    }
    Ok((a * 4.0 - b - c * 3.0) / (2.0 * h))
}

/// Ridders' extrapolation of forward differences `(f(h) − f(0)) / h` from `h₀` toward 0 (a
/// negative `h₀` differentiates from below), for a function defined on one side of 0 only
/// (a parameter on the boundary of its domain, such as a damping coefficient of 0). As
/// [`ridders`], with the tableau eliminating every power of h (one-sided differences have
/// odd powers too); at most 10 steps, so `f` is evaluated only between 0 and `h₀`.
pub fn ridders_one_sided(f: &dyn Fn(f64) -> Result<DVector<f64>>, h0: f64) -> Result<FdEstimate> {
    if !(h0.is_finite() && h0 != 0.0) {
        return Err(Error::InvalidInput(format!("finite-difference step must be finite and nonzero, got {h0}")));
    }
    let f0 = f(0.0)?;
    let forward = |h: f64| -> Result<DVector<f64>> {
        let a = f(h)?;
        if a.len() != f0.len() {
            return Err(Error::InvalidInput(format!("function output changed length ({} vs {})", a.len(), f0.len())));
        }
        Ok((a - &f0) / h)
    };
    extrapolate(&forward, h0, RIDDERS_CON)
}

/// The step ratio of Ridders' tableau.
const RIDDERS_CON: f64 = 1.4;

/// Neville's tableau of `estimate(h)` at `h₀, h₀/1.4, …` (at most 10), the error series of
/// `estimate` being in powers of `ratio` per step (`1.4²` for central differences, `1.4`
/// for one-sided ones); see [`ridders`].
fn extrapolate(estimate: &dyn Fn(f64) -> Result<DVector<f64>>, h0: f64, ratio: f64) -> Result<FdEstimate> {
    const NTAB: usize = 10;
    const SAFE: f64 = 2.0;
    let mut a: Vec<Vec<DVector<f64>>> = Vec::with_capacity(NTAB);
    let mut h = h0;
    a.push(vec![estimate(h)?]);
    let mut best = a[0][0].clone();
    let mut err = f64::INFINITY;
    for i in 1..NTAB {
        h /= RIDDERS_CON;
        let mut row = vec![estimate(h)?];
        let mut fac = ratio;
        for j in 1..=i {
            let next = (&row[j - 1] * fac - &a[i - 1][j - 1]) / (fac - 1.0);
            fac *= ratio;
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
    derivative_from(f, method, step, Sides::Both)
}

/// Where a finite difference may evaluate its function: on both sides of 0 (central
/// differences), or on one side only (one-sided differences: an input on the boundary of
/// its domain).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sides {
    /// Both sides: central differences.
    #[default]
    Both,
    /// Above 0 only (the input may grow, not shrink).
    Above,
    /// Below 0 only (the input may shrink, not grow).
    Below,
}

/// The derivative of `f` at 0 by `method` from `sides`: as [`derivative`] for
/// [`Sides::Both`]; one-sided, with `step` toward the allowed side, otherwise
/// ([`one_sided`] for `Central`, [`ridders_one_sided`] for `Ridders`).
pub fn derivative_from(
    f: &dyn Fn(f64) -> Result<DVector<f64>>,
    method: FdMethod,
    step: f64,
    sides: Sides,
) -> Result<FdEstimate> {
    let h = match sides {
        Sides::Both => {
            return match method {
                FdMethod::Central => Ok(FdEstimate { derivative: central(f, step)?, error: None }),
                FdMethod::Ridders | FdMethod::Both => ridders(f, step),
            }
        }
        Sides::Above => step,
        Sides::Below => -step,
    };
    match method {
        FdMethod::Central => Ok(FdEstimate { derivative: one_sided(f, h)?, error: None }),
        FdMethod::Ridders | FdMethod::Both => ridders_one_sided(f, h),
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
    jacobian_from(nrows, f, steps, &vec![Sides::Both; steps.len()], method)
}

/// [`jacobian`] with column `j` taken from `sides[j]` ([`derivative_from`]): one-sided for
/// the inputs on the boundary of their domain. Errors: `sides` and `steps` of different
/// lengths, and those of the function.
pub fn jacobian_from(
    nrows: usize,
    f: &dyn Fn(usize, f64) -> Result<DVector<f64>>,
    steps: &[f64],
    sides: &[Sides],
    method: FdMethod,
) -> Result<FdJacobian> {
    if sides.len() != steps.len() {
        return Err(Error::InvalidInput(format!("{} steps but {} sides", steps.len(), sides.len())));
    }
    let mut value = DMatrix::zeros(nrows, steps.len());
    let mut error = DVector::zeros(steps.len());
    let mut has_error = true;
    for (j, (&h, &side)) in steps.iter().zip(sides).enumerate() {
        let est = derivative_from(&|e| f(j, e), method, h, side)?;
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

    #[test]
    fn one_sided_differences() {
        // exp(x0 + e), defined for e >= 0 only (an error below), and its mirror.
        let x0 = [0.3, -1.0];
        let above = |e: f64| -> Result<DVector<f64>> {
            if e < 0.0 {
                return Err(Error::InvalidInput("below the domain".into()));
            }
            Ok(DVector::from_iterator(2, x0.iter().map(|x| (x + e).exp())))
        };
        // g(e) = −exp(x0 − e): defined for e <= 0 only, g′(0) = exp(x0).
        let below = |e: f64| above(-e).map(|y| -y);
        let want = DVector::from_iterator(2, x0.iter().map(|x: &f64| x.exp()));
        let r = ridders_one_sided(&above, 0.1).unwrap();
        assert!((&r.derivative - &want).amax() < 1e-10, "{}", (&r.derivative - &want).amax());
        assert!(r.error.unwrap() < 1e-9);
        let r = ridders_one_sided(&below, -0.1).unwrap();
        assert!((&r.derivative - &want).amax() < 1e-10, "{}", (&r.derivative - &want).amax());
        // The plain one-sided difference is second order, as central differences are.
        let d = one_sided(&above, 1e-3).unwrap();
        assert!((&d - &want).amax() < 1e-5, "{}", (&d - &want).amax());
        let d = one_sided(&below, -1e-3).unwrap();
        assert!((&d - &want).amax() < 1e-5, "{}", (&d - &want).amax());
        // Central differences would step outside the domain.
        assert!(ridders(&above, 0.1).is_err());
        assert!(derivative_from(&above, FdMethod::Ridders, 0.1, Sides::Above).is_ok());
        assert!(derivative_from(&below, FdMethod::Central, 1e-4, Sides::Below).is_ok());
        assert!(ridders_one_sided(&above, 0.0).is_err());
        // A Jacobian with one one-sided column.
        let f = |j: usize, e: f64| if j == 0 { above(e) } else { Ok(DVector::from_vec(vec![e, 2.0 * e])) };
        let jac = jacobian_from(2, &f, &[0.1, 0.1], &[Sides::Above, Sides::Both], FdMethod::Ridders).unwrap();
        assert!((jac.value.column(0) - &want).amax() < 1e-10);
        assert!((jac.value.column(1) - DVector::from_vec(vec![1.0, 2.0])).amax() < 1e-12);
        assert!(jacobian_from(2, &f, &[0.1, 0.1], &[Sides::Both], FdMethod::Ridders).is_err());
        assert!(jacobian(2, &f, &[0.1, 0.1], FdMethod::Ridders).is_err());
    }
}
