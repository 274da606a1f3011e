//! The orthonormal frame of a contact: its unit normal n (from shape A to shape B) and
//! two tangents, and the derivatives of the tangents with respect to the normal.
//!
//! The tangents are a smooth function of n away from a switch of the seed axis:
//!
//! ```text
//! e  = x̂  if |n_x| ≤ 0.9,  else ŷ
//! u  = e − (e·n) n,    t₁ = u / |u|,    t₂ = n × t₁
//! ```
//!
//! so `(n, t₁, t₂)` is right-handed and orthonormal for a unit n, and |u|² ≥ 0.19 keeps
//! the normalisation well conditioned. Differentiating (e fixed):
//!
//! ```text
//! du  = −(n eᵀ + (e·n) I) dn
//! dt₁ = (I − t₁t₁ᵀ) du / |u|                 =: L₁ dn
//! dt₂ = dn × t₁ + n × dt₁ = ([n]× L₁ − [t₁]×) dn =: L₂ dn
//! ```
//!
//! A frame may be turned about n by a constant angle (`t₁' = c t₁ + s t₂`,
//! `t₂' = −s t₁ + c t₂`; [`ContactFrame::turned`]: the slip frame of a sliding contact
//! under the NCP solver); its tangents' derivatives turn alike,
//! `L₁' = c L₁ + s L₂`, `L₂' = −s L₁ + c L₂`.
//!
//! These are the derivatives of the formulas above for any dn (not only dn ⟂ n); the
//! contact normal's own derivative (`constraint::contact_jacobians`) is ⟂ n. The rows
//! built on this frame are the friction directions of the DiffDART contact model
//! (Werling et al. 2021, §5, eqs. 19–20 use them through `∂F_k/∂q`).

use crate::error::{Error, Result};
use crate::math::{skew, Mat3, Vec3};
use nalgebra::Matrix3xX;

/// Above this |n_x| the tangent seed axis switches from x̂ to ŷ.
pub const SEED_SWITCH: f64 = 0.9;

/// Tolerance on `|‖n‖ − 1|` accepted by [`ContactFrame::try_new`].
pub const UNIT_TOLERANCE: f64 = 1e-8;

/// A contact frame: unit normal and two unit tangents, `t₂ = n × t₁`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactFrame {
    /// Unit normal, from shape A towards shape B (world frame).
    pub normal: Vec3,
    /// First tangent, `normalize(e − (e·n) n)`.
    pub t1: Vec3,
    /// Second tangent, `n × t₁`.
    pub t2: Vec3,
    /// The turn `(c, s)` of the tangents from the seed construction (`(1, 0)` unless
    /// [`ContactFrame::turned`]).
    turn: (f64, f64),
}

/// The seed axis e of the tangent construction.
#[inline]
fn seed(n: &Vec3) -> Vec3 {
    if n.x.abs() > SEED_SWITCH {
        Vec3::y()
    } else {
        Vec3::x()
    }
}

impl ContactFrame {
    /// The frame of the unit normal `normal` (used as given: it must be a finite unit
    /// vector; [`ContactFrame::try_new`] checks).
    pub fn new(normal: &Vec3) -> ContactFrame {
        let n = *normal;
        let e = seed(&n);
        let u = e - n * e.dot(&n);
        let t1 = u / u.norm();
        ContactFrame { normal: n, t1, t2: n.cross(&t1), turn: (1.0, 0.0) }
    }

    /// [`ContactFrame::new`] after checking that `normal` is finite and of unit length
    /// (within [`UNIT_TOLERANCE`]).
    pub fn try_new(normal: &Vec3) -> Result<ContactFrame> {
        if let Some((index, &value)) = normal.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(Error::NonFinite { what: "contact normal", index, value });
        }
        if (normal.norm() - 1.0).abs() > UNIT_TOLERANCE {
            return Err(Error::InvalidInput(format!(
                "contact normal must be a unit vector, got norm {}",
                normal.norm()
            )));
        }
        Ok(ContactFrame::new(normal))
    }

    /// Direction of row `r` of the contact: 0 the normal, 1 t₁, 2 (or more) t₂.
    #[inline]
    pub fn direction(&self, r: usize) -> Vec3 {
        match r {
            0 => self.normal,
            1 => self.t1,
            _ => self.t2,
        }
    }

    /// The frame with its tangents turned by `(c, s)` (a unit vector): `t₁' = c t₁ + s t₂`,
    /// `t₂' = −s t₁ + c t₂`; turns compose.
    pub fn turned(&self, c: f64, s: f64) -> ContactFrame {
        let (c0, s0) = self.turn;
        ContactFrame {
            normal: self.normal,
            t1: self.t1 * c + self.t2 * s,
            t2: self.t2 * c - self.t1 * s,
            turn: (c0 * c - s0 * s, s0 * c + c0 * s),
        }
    }

    /// The linear maps `(L₁, L₂)` with `dt₁ = L₁ dn`, `dt₂ = L₂ dn`.
    pub fn tangent_jacobians(&self) -> (Mat3, Mat3) {
        let n = self.normal;
        let e = seed(&n);
        let u = e - n * e.dot(&n);
        let inv = 1.0 / u.norm();
        // The seed construction's t₁ (before any turn).
        let t1 = u * inv;
        let proj = Mat3::identity() - t1 * t1.transpose();
        let du = -(n * e.transpose() + Mat3::identity() * e.dot(&n));
        let l1 = proj * du * inv;
        let l2 = skew(&n) * l1 - skew(&t1);
        let (c, s) = self.turn;
        if (c, s) == (1.0, 0.0) {
            return (l1, l2);
        }
        (l1 * c + l2 * s, l2 * c - l1 * s)
    }

    /// Derivatives of t1, t2 given dn (3 × k columns): returns (dt1, dt2), each 3 × k.
    pub fn tangent_derivatives(&self, dn: &Matrix3xX<f64>) -> (Matrix3xX<f64>, Matrix3xX<f64>) {
        let (l1, l2) = self.tangent_jacobians();
        (l1 * dn, l2 * dn)
    }
}
