//! Operations on the configuration manifold: the neutral configuration, random
//! configurations, `q ⊕ v` (integration) and `q₁ ⊖ q₀` (difference), joint by joint.

use super::Model;
use crate::error::{check_vector, Error, Result};
use crate::math::SplitMix64;
use nalgebra::DVector;

impl Model {
    /// The neutral configuration: zero joint coordinates, identity quaternions.
    pub fn neutral(&self) -> DVector<f64> {
        let mut q = DVector::zeros(self.nq);
        for (i, j) in self.joints.iter().enumerate() {
            let a = self.q_idx[i];
            j.kind.neutral(&mut q.as_mut_slice()[a..a + j.nq()]);
        }
        q
    }

    /// A random configuration, reproducible from `seed`: uniform within finite position
    /// limits, angles in [−π, π] and translations in [−1, 1] where unlimited, and
    /// uniformly distributed unit quaternions.
    pub fn random_configuration(&self, seed: u64) -> DVector<f64> {
        let mut rng = SplitMix64::new(seed);
        let mut q = self.neutral();
        for (i, j) in self.joints.iter().enumerate() {
            let a = self.q_idx[i];
            let (coords, quat_at) = match j.kind.has_quaternion() {
                true if j.nq() == 4 => (0, Some(0)),
                true => (3, Some(3)),
                false => (j.nq(), None),
            };
            for k in 0..coords {
                let (lo, hi) = (self.lower[a + k], self.upper[a + k]);
                let default = if j.kind.is_translation_coord(k) { 1.0 } else { std::f64::consts::PI };
                let lo = if lo.is_finite() { lo } else { -default };
                let hi = if hi.is_finite() { hi } else { default };
                q[a + k] = rng.range(lo, hi);
            }
            if let Some(o) = quat_at {
                let u = rng.unit_quaternion();
                q.as_mut_slice()[a + o..a + o + 4].copy_from_slice(&u);
            }
        }
        q
    }

    /// `q ⊕ v·dt`: integrates the configuration along the velocity for a time `dt`
    /// (the exponential map on ball and free joints). Errors: wrong lengths, non-finite
    /// values, or a quaternion far from unit length (norm outside [0.5, 2]).
    pub fn integrate(&self, q: &DVector<f64>, v: &DVector<f64>, dt: f64) -> Result<DVector<f64>> {
        check_vector("q", q.as_slice(), self.nq)?;
        check_vector("v", v.as_slice(), self.nv)?;
        self.check_quaternions(q.as_slice())?;
        let mut out = DVector::zeros(self.nq);
        self.integrate_into(q.as_slice(), v.as_slice(), dt, out.as_mut_slice());
        Ok(out)
    }

    /// Unchecked `q ⊕ v·dt` into `out` (lengths must match).
    pub(crate) fn integrate_into(&self, q: &[f64], v: &[f64], dt: f64, out: &mut [f64]) {
        let mut dv = [0.0; 6];
        for (i, j) in self.joints.iter().enumerate() {
            let (a, b, nq, nv) = (self.q_idx[i], self.v_idx[i], j.nq(), j.nv());
            for k in 0..nv {
                dv[k] = v[b + k] * dt;
            }
            j.kind.integrate(&q[a..a + nq], &dv[..nv], &mut out[a..a + nq]);
        }
    }

    /// `q1 ⊖ q0`: the tangent vector (length nv) that takes `q0` to `q1` in unit time.
    /// Errors: wrong lengths, non-finite values, or a quaternion far from unit length.
    pub fn difference(&self, q0: &DVector<f64>, q1: &DVector<f64>) -> Result<DVector<f64>> {
        check_vector("q0", q0.as_slice(), self.nq)?;
        check_vector("q1", q1.as_slice(), self.nq)?;
        self.check_quaternions(q0.as_slice())?;
        self.check_quaternions(q1.as_slice())?;
        let mut out = DVector::zeros(self.nv);
        self.difference_into(q0.as_slice(), q1.as_slice(), out.as_mut_slice());
        Ok(out)
    }

    /// Unchecked `q1 ⊖ q0` into `out`.
    pub(crate) fn difference_into(&self, q0: &[f64], q1: &[f64], out: &mut [f64]) {
        for (i, j) in self.joints.iter().enumerate() {
            let (a, b, nq, nv) = (self.q_idx[i], self.v_idx[i], j.nq(), j.nv());
            j.kind.difference(&q0[a..a + nq], &q1[a..a + nq], &mut out[b..b + nv]);
        }
    }

    /// Returns `q` with every quaternion normalised.
    pub fn normalize(&self, q: &DVector<f64>) -> Result<DVector<f64>> {
        check_vector("q", q.as_slice(), self.nq)?;
        let mut out = q.clone();
        self.check_quaternions(q.as_slice())?;
        for (i, j) in self.joints.iter().enumerate() {
            if let Some(o) = quaternion_offset(j) {
                let a = self.q_idx[i] + o;
                let n = out.rows(a, 4).norm();
                out.rows_mut(a, 4).unscale_mut(n);
            }
        }
        Ok(out)
    }

    /// Rejects quaternions that are zero or far from unit length (norm outside [0.5, 2]).
    pub(crate) fn check_quaternions(&self, q: &[f64]) -> Result<()> {
        for (i, j) in self.joints.iter().enumerate() {
            if let Some(o) = quaternion_offset(j) {
                let a = self.q_idx[i] + o;
                let n = q[a..a + 4].iter().map(|x| x * x).sum::<f64>().sqrt();
                if !(0.5..=2.0).contains(&n) {
                    return Err(Error::InvalidInput(format!(
                        "quaternion of joint '{}' (q[{a}..{}]) has norm {n}; expected a unit quaternion",
                        j.name,
                        a + 4
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Offset of the quaternion inside a joint's coordinates, if it has one.
fn quaternion_offset(j: &super::Joint) -> Option<usize> {
    match j.kind {
        super::JointType::Spherical => Some(0),
        super::JointType::Free => Some(3),
        _ => None,
    }
}
