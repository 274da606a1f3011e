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

    /// Maps a gradient with respect to the coordinates of a configuration to the tangent
    /// space: given `g = ∂ℓ/∂q` (length nq) at `q`, returns `Eᵀ g` (length nv), where
    /// `E = ∂(q ⊕ δ)/∂δ` at `δ = 0` is the Jacobian of the retraction (nq × nv).
    ///
    /// This is how a loss written on coordinates (for example the quaternion entries of a
    /// free body, as a PyTorch or JAX user sees them) reaches the tangent-space backward
    /// pass of a recorded step. Scalar joints: the identity. Ball joints:
    /// `∂q/∂ω = ½ L(q)[:, 1..4]` (quaternion `q ⊗ (1, ω/2)`, body frame). Free joints: the
    /// ball joint's block for the angular part and the identity for the position (its
    /// tangent is the parent-frame translation).
    pub fn tangent_gradient(&self, q: &DVector<f64>, g: &DVector<f64>) -> Result<DVector<f64>> {
        check_vector("q", q.as_slice(), self.nq)?;
        check_vector("g", g.as_slice(), self.nq)?;
        self.check_quaternions(q.as_slice())?;
        let mut out = DVector::zeros(self.nv);
        self.tangent_gradient_into(q.as_slice(), g.as_slice(), out.as_mut_slice());
        Ok(out)
    }

    /// Unchecked [`Model::tangent_gradient`] into `out`.
    pub(crate) fn tangent_gradient_into(&self, q: &[f64], g: &[f64], out: &mut [f64]) {
        for (i, j) in self.joints.iter().enumerate() {
            let (a, b) = (self.q_idx[i], self.v_idx[i]);
            match quaternion_offset(j) {
                None => out[b..b + j.nv()].copy_from_slice(&g[a..a + j.nq()]),
                Some(o) => {
                    let quat = unit(&q[a + o..a + o + 4]);
                    let gq = &g[a + o..a + o + 4];
                    for (k, col) in quaternion_tangent_columns(&quat).iter().enumerate() {
                        out[b + k] = 0.5 * dot4(col, gq);
                    }
                    if o == 3 {
                        out[b + 3..b + 6].copy_from_slice(&g[a..a + 3]);
                    }
                }
            }
        }
    }

    /// Maps a tangent-space gradient to the coordinates: given `g = ∂ℓ/∂δ` (length nv) at
    /// `q`, returns `Dᵀ g` (length nq), where `D = ∂(q̂ ⊖ q)/∂q` at `q̂ = q` differentiates
    /// the difference to `q` with every quaternion normalised first. So the returned
    /// gradient is exact for the function `q ↦ ℓ(normalize(q))`: it has no component
    /// along a quaternion (scaling a quaternion changes nothing), and `D E = I` at unit
    /// quaternions. Ball joints: `∂ω/∂q = (2/|q|) L(q̂)[:, 1..4]ᵀ`; free joints add the
    /// identity for the position; scalar joints: the identity.
    pub fn coordinate_gradient(&self, q: &DVector<f64>, g: &DVector<f64>) -> Result<DVector<f64>> {
        check_vector("q", q.as_slice(), self.nq)?;
        check_vector("g", g.as_slice(), self.nv)?;
        self.check_quaternions(q.as_slice())?;
        let mut out = DVector::zeros(self.nq);
        self.coordinate_gradient_into(q.as_slice(), g.as_slice(), out.as_mut_slice());
        Ok(out)
    }

    /// Unchecked [`Model::coordinate_gradient`] into `out`.
    pub(crate) fn coordinate_gradient_into(&self, q: &[f64], g: &[f64], out: &mut [f64]) {
        for (i, j) in self.joints.iter().enumerate() {
            let (a, b) = (self.q_idx[i], self.v_idx[i]);
            match quaternion_offset(j) {
                None => out[a..a + j.nq()].copy_from_slice(&g[b..b + j.nv()]),
                Some(o) => {
                    let raw = &q[a + o..a + o + 4];
                    let norm = dot4(raw, raw).sqrt();
                    let quat = unit(raw);
                    let gq = &mut out[a + o..a + o + 4];
                    gq.fill(0.0);
                    for (k, col) in quaternion_tangent_columns(&quat).iter().enumerate() {
                        for (x, c) in gq.iter_mut().zip(col) {
                            *x += 2.0 / norm * g[b + k] * c;
                        }
                    }
                    if o == 3 {
                        out[a..a + 3].copy_from_slice(&g[b + 3..b + 6]);
                    }
                }
            }
        }
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

/// The quaternion `q / |q|`.
fn unit(q: &[f64]) -> [f64; 4] {
    let n = dot4(q, q).sqrt();
    [q[0] / n, q[1] / n, q[2] / n, q[3] / n]
}

/// Dot product of two quaternions stored as `[w, x, y, z]`.
fn dot4(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Columns 1–3 of the left-multiplication matrix `L(q)` (`q ⊗ p = L(q) p`): the
/// directions in which `q ⊗ (1, ω/2)` moves for `ω = e_x, e_y, e_z`, times two.
fn quaternion_tangent_columns(q: &[f64; 4]) -> [[f64; 4]; 3] {
    let [w, x, y, z] = *q;
    [[-x, w, z, -y], [-y, -z, w, x], [-z, y, -x, w]]
}
