//! Forward-mode dual numbers with twelve tangent directions, used to differentiate
//! the closed-form contact geometry (`feature_pair`) exactly with respect to the
//! twists of the two bodies in contact: tangents 0..6 are body A's world-frame twist
//! `[ω; v]`, tangents 6..12 body B's.
//!
//! The closed forms are written once, generically over [`Real`], and evaluated
//! either with `f64` (forward detection) or with [`Dual`] (derivatives). Derivatives
//! obtained this way are exact to round-off: every operation propagates its own
//! analytic derivative (chain rule), there is no finite step anywhere.

use std::ops::{Add, Div, Mul, Neg, Sub};

/// Number of tangent directions carried by a [`Dual`].
pub const NT: usize = 12;

/// The scalar operations the closed-form contact geometry needs.
pub trait Real:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self>
{
    /// A constant (zero derivative).
    fn cst(x: f64) -> Self;
    /// The value part.
    fn val(self) -> f64;
    /// Square root.
    fn sqrt(self) -> Self;
}

impl Real for f64 {
    #[inline]
    fn cst(x: f64) -> Self {
        x
    }
    #[inline]
    fn val(self) -> f64 {
        self
    }
    #[inline]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
}

/// A value with its derivatives along [`NT`] tangent directions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dual {
    /// The value.
    pub v: f64,
    /// The derivatives.
    pub g: [f64; NT],
}

impl Dual {
    /// A value whose derivative is the given gradient.
    pub fn new(v: f64, g: [f64; NT]) -> Self {
        Self { v, g }
    }
    #[inline]
    fn map(self, v: f64, scale: f64) -> Self {
        let mut g = self.g;
        for x in &mut g {
            *x *= scale;
        }
        Self { v, g }
    }
}

impl Add for Dual {
    type Output = Dual;
    #[inline]
    fn add(mut self, o: Dual) -> Dual {
        self.v += o.v;
        for k in 0..NT {
            self.g[k] += o.g[k];
        }
        self
    }
}

impl Sub for Dual {
    type Output = Dual;
    #[inline]
    fn sub(mut self, o: Dual) -> Dual {
        self.v -= o.v;
        for k in 0..NT {
            self.g[k] -= o.g[k];
        }
        self
    }
}

impl Mul for Dual {
    type Output = Dual;
    #[inline]
    fn mul(self, o: Dual) -> Dual {
        let mut g = [0.0; NT];
        for k in 0..NT {
            g[k] = self.g[k] * o.v + self.v * o.g[k];
        }
        Dual { v: self.v * o.v, g }
    }
}

impl Div for Dual {
    type Output = Dual;
    #[inline]
    fn div(self, o: Dual) -> Dual {
        let inv = 1.0 / o.v;
        let v = self.v * inv;
        let mut g = [0.0; NT];
        for k in 0..NT {
            g[k] = (self.g[k] - v * o.g[k]) * inv;
        }
        Dual { v, g }
    }
}

impl Neg for Dual {
    type Output = Dual;
    #[inline]
    fn neg(self) -> Dual {
        self.map(-self.v, -1.0)
    }
}

impl Real for Dual {
    #[inline]
    fn cst(x: f64) -> Self {
        Dual { v: x, g: [0.0; NT] }
    }
    #[inline]
    fn val(self) -> f64 {
        self.v
    }
    #[inline]
    fn sqrt(self) -> Self {
        let s = self.v.sqrt();
        self.map(s, 0.5 / s)
    }
}

/// A three-vector over a [`Real`] scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct V3<S>(pub [S; 3]);

impl<S: Real> V3<S> {
    /// Componentwise sum.
    #[inline]
    pub fn plus(self, o: Self) -> Self {
        V3([self.0[0] + o.0[0], self.0[1] + o.0[1], self.0[2] + o.0[2]])
    }
    /// Componentwise difference.
    #[inline]
    pub fn minus(self, o: Self) -> Self {
        V3([self.0[0] - o.0[0], self.0[1] - o.0[1], self.0[2] - o.0[2]])
    }
    /// Product with a scalar.
    #[inline]
    pub fn scale(self, s: S) -> Self {
        V3([self.0[0] * s, self.0[1] * s, self.0[2] * s])
    }
    /// Dot product.
    #[inline]
    pub fn dot(self, o: Self) -> S {
        self.0[0] * o.0[0] + self.0[1] * o.0[1] + self.0[2] * o.0[2]
    }
    /// Cross product.
    #[inline]
    pub fn cross(self, o: Self) -> Self {
        let (a, b) = (self.0, o.0);
        V3([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])
    }
    /// Euclidean norm.
    #[inline]
    pub fn norm(self) -> S {
        self.dot(self).sqrt()
    }
    /// The value parts.
    #[inline]
    pub fn val(self) -> crate::math::Vec3 {
        crate::math::Vec3::new(self.0[0].val(), self.0[1].val(), self.0[2].val())
    }
}

impl V3<f64> {
    /// From an nalgebra vector.
    #[inline]
    pub fn from_vec(v: &crate::math::Vec3) -> Self {
        V3([v.x, v.y, v.z])
    }
}

impl V3<Dual> {
    /// The derivative of component `i` along tangent `k`.
    #[inline]
    pub fn grad(&self, i: usize, k: usize) -> f64 {
        self.0[i].g[k]
    }

    /// A point fixed to a body whose world-frame twist occupies tangents
    /// `offset..offset + 6`: `dp = ω × p + v`.
    pub fn moving_point(p: &crate::math::Vec3, offset: Option<usize>) -> Self {
        let mut out = V3([Dual::cst(p.x), Dual::cst(p.y), Dual::cst(p.z)]);
        if let Some(o) = offset {
            for j in 0..3 {
                // ω = e_j: e_j × p
                let mut e = crate::math::Vec3::zeros();
                e[j] = 1.0;
                let w = e.cross(p);
                for i in 0..3 {
                    out.0[i].g[o + j] = w[i];
                }
                out.0[j].g[o + 3 + j] = 1.0;
            }
        }
        out
    }

    /// A direction fixed to a body whose world-frame twist occupies tangents
    /// `offset..offset + 6`: `dd = ω × d`.
    pub fn moving_direction(d: &crate::math::Vec3, offset: Option<usize>) -> Self {
        let mut out = V3([Dual::cst(d.x), Dual::cst(d.y), Dual::cst(d.z)]);
        if let Some(o) = offset {
            for j in 0..3 {
                let mut e = crate::math::Vec3::zeros();
                e[j] = 1.0;
                let w = e.cross(d);
                for i in 0..3 {
                    out.0[i].g[o + j] = w[i];
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dual_arithmetic_matches_calculus() {
        let mut g = [0.0; NT];
        g[0] = 1.0;
        let x = Dual::new(1.7, g);
        // f(x) = sqrt(x) * x / (x - 3) + (-x)
        let f = x.sqrt() * x / (x - Dual::cst(3.0)) + (-x);
        let xv: f64 = 1.7;
        let df = 1.5 * xv.sqrt() / (xv - 3.0) - xv.powf(1.5) / (xv - 3.0).powi(2) - 1.0;
        assert!((f.v - (xv.powf(1.5) / (xv - 3.0) - xv)).abs() < 1e-14);
        assert!((f.g[0] - df).abs() < 1e-13, "{} vs {}", f.g[0], df);
        assert!(f.g[1..].iter().all(|&d| d == 0.0));
    }
}
