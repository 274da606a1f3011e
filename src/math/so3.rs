//! The exponential of SO(3) (Rodrigues' formula) and its coefficients, accurate to
//! machine precision at the identity: the leaf that rigid transforms ([`super::SE3`])
//! and the Lie-group maps ([`super::lie`]) share.

use super::{skew, Mat3, Vec3};

/// Below this angle the coefficients use their Taylor series.
pub(super) const SMALL: f64 = 1e-4;

/// `(1 − cos θ)/θ²`, `(θ − sin θ)/θ³` for `θ² = t2`.
#[inline]
pub(super) fn so3_coeffs(t2: f64) -> (f64, f64) {
    if t2 < SMALL * SMALL {
        (0.5 - t2 / 24.0 + t2 * t2 / 720.0, 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0)
    } else {
        let t = t2.sqrt();
        ((1.0 - t.cos()) / t2, (t - t.sin()) / (t2 * t))
    }
}

/// The rotation `exp([φ]×)` (Rodrigues' formula).
pub fn so3_exp(phi: &Vec3) -> Mat3 {
    let t2 = phi.norm_squared();
    let k = skew(phi);
    let (a, _) = so3_coeffs(t2);
    let s = if t2 < SMALL * SMALL {
        1.0 - t2 / 6.0 + t2 * t2 / 120.0
    } else {
        let t = t2.sqrt();
        t.sin() / t
    };
    Mat3::identity() + k * s + k * k * a
}
