//! Rigid transforms (elements of SE(3)) and their action on points, motions and
//! forces (Featherstone 2008, §2.8, eqs. 2.24–2.26 in Plücker form).

use super::{skew, Force, Mat3, Mat6, Motion, Vec3};
use nalgebra::{Rotation3, UnitQuaternion};
use serde::{Deserialize, Serialize};
use std::ops::Mul;

/// The pose of a frame B in a frame A: `x_A = rot · x_B + trans`.
///
/// `act_*` maps B coordinates to A coordinates; `inv_act_*` maps A to B.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SE3 {
    /// Rotation matrix (orientation of B's axes in A).
    pub rot: Mat3,
    /// Position of B's origin in A.
    pub trans: Vec3,
}

impl Default for SE3 {
    fn default() -> Self {
        Self::identity()
    }
}

impl SE3 {
    /// Builds a transform from a rotation matrix and a translation.
    #[inline]
    pub fn new(rot: Mat3, trans: Vec3) -> Self {
        Self { rot, trans }
    }
    /// The identity transform.
    #[inline]
    pub fn identity() -> Self {
        Self { rot: Mat3::identity(), trans: Vec3::zeros() }
    }
    /// A pure translation.
    #[inline]
    pub fn from_translation(t: Vec3) -> Self {
        Self { rot: Mat3::identity(), trans: t }
    }
    /// A pure rotation of `angle` radians about the unit `axis`.
    pub fn from_axis_angle(axis: &Vec3, angle: f64) -> Self {
        Self { rot: super::so3_exp(&(axis * angle)), trans: Vec3::zeros() }
    }
    /// A pure rotation from a unit quaternion.
    pub fn from_quaternion(q: &UnitQuaternion<f64>) -> Self {
        Self { rot: *q.to_rotation_matrix().matrix(), trans: Vec3::zeros() }
    }
    /// The URDF convention: translation `xyz`, then fixed-axis roll, pitch, yaw
    /// (`R = Rz(yaw) Ry(pitch) Rx(roll)`).
    pub fn from_xyz_rpy(xyz: &Vec3, rpy: &Vec3) -> Self {
        let r = Rotation3::from_euler_angles(rpy.x, rpy.y, rpy.z);
        Self { rot: *r.matrix(), trans: *xyz }
    }
    /// The rotation as a unit quaternion.
    pub fn quaternion(&self) -> UnitQuaternion<f64> {
        UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(self.rot))
    }
    /// The inverse transform (pose of A in B).
    #[inline]
    pub fn inverse(&self) -> SE3 {
        let rt = self.rot.transpose();
        SE3 { rot: rt, trans: -(rt * self.trans) }
    }
    /// Maps a point from B to A coordinates.
    #[inline]
    pub fn act_point(&self, p: &Vec3) -> Vec3 {
        self.rot * p + self.trans
    }
    /// Maps a point from A to B coordinates.
    #[inline]
    pub fn inv_act_point(&self, p: &Vec3) -> Vec3 {
        self.rot.tr_mul(&(p - self.trans))
    }
    /// Maps a motion vector from B to A coordinates.
    #[inline]
    pub fn act_motion(&self, m: &Motion) -> Motion {
        let ang = self.rot * m.ang;
        Motion { ang, lin: self.rot * m.lin + self.trans.cross(&ang) }
    }
    /// Maps a motion vector from A to B coordinates.
    #[inline]
    pub fn inv_act_motion(&self, m: &Motion) -> Motion {
        Motion { ang: self.rot.tr_mul(&m.ang), lin: self.rot.tr_mul(&(m.lin - self.trans.cross(&m.ang))) }
    }
    /// Maps a force vector from B to A coordinates.
    #[inline]
    pub fn act_force(&self, f: &Force) -> Force {
        let lin = self.rot * f.lin;
        Force { ang: self.rot * f.ang + self.trans.cross(&lin), lin }
    }
    /// Maps a force vector from A to B coordinates.
    #[inline]
    pub fn inv_act_force(&self, f: &Force) -> Force {
        Force { ang: self.rot.tr_mul(&(f.ang - self.trans.cross(&f.lin))), lin: self.rot.tr_mul(&f.lin) }
    }
    /// The 6×6 motion transform matrix (B → A coordinates), `[[R, 0], [t×R, R]]`.
    pub fn action_matrix(&self) -> Mat6 {
        let mut x = Mat6::zeros();
        x.fixed_view_mut::<3, 3>(0, 0).copy_from(&self.rot);
        x.fixed_view_mut::<3, 3>(3, 3).copy_from(&self.rot);
        x.fixed_view_mut::<3, 3>(3, 0).copy_from(&(skew(&self.trans) * self.rot));
        x
    }
    /// Congruence of a symmetric spatial operator (an inertia) from B to A
    /// coordinates: `X* I X⁻¹` with `X*` the force transform.
    pub fn act_inertia_matrix(&self, m: &Mat6) -> Mat6 {
        let r = &self.rot;
        let a = r * m.fixed_view::<3, 3>(0, 0) * r.transpose();
        let b = r * m.fixed_view::<3, 3>(0, 3) * r.transpose();
        let c = r * m.fixed_view::<3, 3>(3, 3) * r.transpose();
        let t = skew(&self.trans);
        let tbt = t * b.transpose();
        let tl = a + tbt + tbt.transpose() - t * c * t;
        let tr = b + t * c;
        let mut out = Mat6::zeros();
        out.fixed_view_mut::<3, 3>(0, 0).copy_from(&tl);
        out.fixed_view_mut::<3, 3>(0, 3).copy_from(&tr);
        out.fixed_view_mut::<3, 3>(3, 0).copy_from(&tr.transpose());
        out.fixed_view_mut::<3, 3>(3, 3).copy_from(&c);
        out
    }
    /// True when every entry is finite.
    pub fn is_finite(&self) -> bool {
        self.rot.iter().chain(self.trans.iter()).all(|x| x.is_finite())
    }
}

impl Mul for SE3 {
    type Output = SE3;
    /// Composition: `(A←B) * (B←C) = (A←C)`.
    #[inline]
    fn mul(self, o: SE3) -> SE3 {
        SE3 { rot: self.rot * o.rot, trans: self.rot * o.trans + self.trans }
    }
}

impl Mul for &SE3 {
    type Output = SE3;
    #[inline]
    fn mul(self, o: &SE3) -> SE3 {
        SE3 { rot: self.rot * o.rot, trans: self.rot * o.trans + self.trans }
    }
}
