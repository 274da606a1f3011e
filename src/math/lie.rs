//! Exponential and logarithm maps of SO(3) and SE(3) with their left and right
//! Jacobians, and quaternion integration.
//!
//! Formulas: Rodrigues' formula for `exp`; the SO(3) Jacobians
//! `J_l(φ) = I + (1−cos θ)/θ² [φ]× + (θ−sin θ)/θ³ [φ]×²`, `J_r(φ) = J_l(−φ)`, and
//! their closed-form inverses; the SE(3) Jacobian with the coupling block `Q(φ, ρ)`
//! (Barfoot, *State Estimation for Robotics*, 2017, eqs. 7.83–7.86, re-ordered for
//! our `[angular; linear]` twists: `J_l = [[J_l(φ), 0], [Q, J_l(φ)]]`).
//! Each coefficient switches to its Taylor series below a small angle so the maps
//! stay accurate to machine precision at the identity.
//!
//! Meaning of the Jacobians: `exp(ξ + δ) ≈ exp(J_l δ) exp(ξ) ≈ exp(ξ) exp(J_r δ)`.

use super::{skew, Mat3, Mat6, Motion, Vec3, SE3};
use nalgebra::{Quaternion, Rotation3, UnitQuaternion};

use super::so3::{so3_coeffs, so3_exp, SMALL};

/// The rotation vector `φ` with `exp([φ]×) = R`, `|φ| ≤ π` (via the quaternion, robust near π).
pub fn so3_log(r: &Mat3) -> Vec3 {
    let q = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(*r));
    quat_log(&q)
}

/// Rotation vector of a unit quaternion, shortest way round.
fn quat_log(q: &UnitQuaternion<f64>) -> Vec3 {
    let (mut w, mut v) = (q.w, q.imag());
    if w < 0.0 {
        w = -w;
        v = -v;
    }
    let s = v.norm();
    if s < 1e-8 {
        // atan2(s, w)/s ≈ 1/w (1 − s²/(3w²)) for small s.
        v * (2.0 / w) * (1.0 - s * s / (3.0 * w * w))
    } else {
        v * (2.0 * s.atan2(w) / s)
    }
}

/// The left Jacobian of SO(3), `J_l(φ)`.
pub fn so3_left_jacobian(phi: &Vec3) -> Mat3 {
    let k = skew(phi);
    let (a, b) = so3_coeffs(phi.norm_squared());
    Mat3::identity() + k * a + k * k * b
}

/// The right Jacobian of SO(3), `J_r(φ) = J_l(−φ)`.
pub fn so3_right_jacobian(phi: &Vec3) -> Mat3 {
    so3_left_jacobian(&-phi)
}

/// `1/θ² − (1 + cos θ)/(2θ sin θ)` for `θ² = t2`.
#[inline]
fn so3_inv_coeff(t2: f64) -> f64 {
    if t2 < SMALL * SMALL {
        1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0
    } else {
        let t = t2.sqrt();
        1.0 / t2 - (1.0 + t.cos()) / (2.0 * t * t.sin())
    }
}

/// The inverse left Jacobian of SO(3), `J_l(φ)⁻¹` (singular at |φ| = 2π).
pub fn so3_left_jacobian_inv(phi: &Vec3) -> Mat3 {
    let k = skew(phi);
    Mat3::identity() - k * 0.5 + k * k * so3_inv_coeff(phi.norm_squared())
}

/// The inverse right Jacobian of SO(3), `J_r(φ)⁻¹ = J_l(−φ)⁻¹`.
pub fn so3_right_jacobian_inv(phi: &Vec3) -> Mat3 {
    so3_left_jacobian_inv(&-phi)
}

/// The coupling block `Q(φ, ρ)` of the SE(3) left Jacobian (Barfoot eq. 7.86).
fn se3_q(phi: &Vec3, rho: &Vec3) -> Mat3 {
    let t2 = phi.norm_squared();
    let (c1, c2, c3) = if t2 < SMALL * SMALL {
        (
            1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0,
            1.0 / 24.0 - t2 / 720.0 + t2 * t2 / 40320.0,
            1.0 / 120.0 - t2 / 2520.0 + t2 * t2 / 120960.0,
        )
    } else {
        let t = t2.sqrt();
        let (s, c) = (t.sin(), t.cos());
        ((t - s) / (t2 * t), (t2 + 2.0 * c - 2.0) / (2.0 * t2 * t2), (2.0 * t - 3.0 * s + t * c) / (2.0 * t2 * t2 * t))
    };
    let p = skew(phi);
    let r = skew(rho);
    let pr = p * r;
    let rp = r * p;
    let prp = pr * p;
    r * 0.5 + (pr + rp + prp) * c1 + (p * pr + rp * p - prp * 3.0) * c2 + (prp * p + p * prp) * c3
}

/// The rigid transform `exp(ξ)` of a twist `ξ = [φ; ρ]`: `R = exp(φ)`, `t = J_l(φ) ρ`.
pub fn se3_exp(xi: &Motion) -> SE3 {
    SE3 { rot: so3_exp(&xi.ang), trans: so3_left_jacobian(&xi.ang) * xi.lin }
}

/// The twist `ξ` with `exp(ξ) = T`.
pub fn se3_log(t: &SE3) -> Motion {
    let phi = so3_log(&t.rot);
    Motion { ang: phi, lin: so3_left_jacobian_inv(&phi) * t.trans }
}

/// The left Jacobian of SE(3) for twists ordered `[angular; linear]`.
pub fn se3_left_jacobian(xi: &Motion) -> Mat6 {
    let j = so3_left_jacobian(&xi.ang);
    let mut out = Mat6::zeros();
    out.fixed_view_mut::<3, 3>(0, 0).copy_from(&j);
    out.fixed_view_mut::<3, 3>(3, 3).copy_from(&j);
    out.fixed_view_mut::<3, 3>(3, 0).copy_from(&se3_q(&xi.ang, &xi.lin));
    out
}

/// The right Jacobian of SE(3), `J_r(ξ) = J_l(−ξ)`.
pub fn se3_right_jacobian(xi: &Motion) -> Mat6 {
    se3_left_jacobian(&-*xi)
}

/// The inverse left Jacobian of SE(3): `[[J⁻¹, 0], [−J⁻¹ Q J⁻¹, J⁻¹]]`.
pub fn se3_left_jacobian_inv(xi: &Motion) -> Mat6 {
    let ji = so3_left_jacobian_inv(&xi.ang);
    let q = se3_q(&xi.ang, &xi.lin);
    let mut out = Mat6::zeros();
    out.fixed_view_mut::<3, 3>(0, 0).copy_from(&ji);
    out.fixed_view_mut::<3, 3>(3, 3).copy_from(&ji);
    out.fixed_view_mut::<3, 3>(3, 0).copy_from(&(-(ji * q * ji)));
    out
}

/// The inverse right Jacobian of SE(3), `J_r(ξ)⁻¹ = J_l(−ξ)⁻¹`.
pub fn se3_right_jacobian_inv(xi: &Motion) -> Mat6 {
    se3_left_jacobian_inv(&-*xi)
}

/// Integrates a unit quaternion `[w, x, y, z]` by a body-frame rotation vector:
/// `q ⊗ exp(ω_body)`, the exact exponential map. The result is renormalised.
pub fn quat_integrate(q: &[f64; 4], omega_body: &Vec3) -> [f64; 4] {
    let q0 = UnitQuaternion::from_quaternion(Quaternion::new(q[0], q[1], q[2], q[3]));
    let dq = UnitQuaternion::from_scaled_axis(*omega_body);
    let r = q0 * dq;
    [r.w, r.i, r.j, r.k]
}
