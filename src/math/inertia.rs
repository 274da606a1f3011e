//! Spatial rigid-body inertia (Featherstone 2008, §2.13, eqs. 2.62–2.63), stored in
//! the additive form `(m, h = m·c, Ī_O)` so composite inertias are plain sums.

use super::{skew, Force, Mat3, Mat6, Motion, Vec3, SE3};
use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign};

/// A spatial inertia expressed in some frame O.
///
/// `mass` is m, `h` is the first moment `m·c` (c the centre of mass in O) and
/// `rot` is the rotational inertia about O's origin, `Ī_O = Ī_C − m [c]×[c]×`.
/// As a 6×6 matrix (order `[angular; linear]`): `[[Ī_O, [h]×], [[h]×ᵀ, m·1]]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Inertia {
    /// Mass m.
    pub mass: f64,
    /// First mass moment `m·c`.
    pub h: Vec3,
    /// Rotational inertia about the frame origin.
    pub rot: Mat3,
}

impl Default for Inertia {
    fn default() -> Self {
        Self::zero()
    }
}

impl Inertia {
    /// The zero inertia (a massless frame).
    pub fn zero() -> Self {
        Self { mass: 0.0, h: Vec3::zeros(), rot: Mat3::zeros() }
    }
    /// Builds the inertia of a body of mass `mass`, centre of mass `com` and rotational
    /// inertia `inertia_com` about its centre of mass (axes of the frame).
    pub fn from_com(mass: f64, com: Vec3, inertia_com: Mat3) -> Self {
        let cx = skew(&com);
        Self { mass, h: com * mass, rot: inertia_com - cx * cx * mass }
    }
    /// A solid sphere of uniform density.
    pub fn solid_sphere(mass: f64, radius: f64) -> Self {
        let i = 0.4 * mass * radius * radius;
        Self::from_com(mass, Vec3::zeros(), Mat3::from_diagonal_element(i))
    }
    /// A solid box of uniform density with full side lengths `size`, centred at the origin.
    pub fn solid_box(mass: f64, size: Vec3) -> Self {
        let (x2, y2, z2) = (size.x * size.x, size.y * size.y, size.z * size.z);
        let d = Vec3::new(y2 + z2, x2 + z2, x2 + y2) * (mass / 12.0);
        Self::from_com(mass, Vec3::zeros(), Mat3::from_diagonal(&d))
    }
    /// A solid cylinder of uniform density along the local z axis, centred at the origin.
    pub fn solid_cylinder(mass: f64, radius: f64, length: f64) -> Self {
        let ixy = mass * (3.0 * radius * radius + length * length) / 12.0;
        let iz = 0.5 * mass * radius * radius;
        Self::from_com(mass, Vec3::zeros(), Mat3::from_diagonal(&Vec3::new(ixy, ixy, iz)))
    }
    /// The centre of mass (the origin when the mass is zero).
    pub fn com(&self) -> Vec3 {
        if self.mass > 0.0 {
            self.h / self.mass
        } else {
            Vec3::zeros()
        }
    }
    /// The rotational inertia about the centre of mass.
    pub fn inertia_about_com(&self) -> Mat3 {
        let c = self.com();
        let cx = skew(&c);
        self.rot + cx * cx * self.mass
    }
    /// The momentum `I·v` of a body moving with spatial velocity `v`.
    #[inline]
    pub fn mul_motion(&self, v: &Motion) -> Force {
        Force { ang: self.rot * v.ang + self.h.cross(&v.lin), lin: v.lin * self.mass - self.h.cross(&v.ang) }
    }
    /// The kinetic energy `½ vᵀ I v`.
    #[inline]
    pub fn kinetic_energy(&self, v: &Motion) -> f64 {
        0.5 * v.dot(&self.mul_motion(v))
    }
    /// Expresses this inertia (given in frame B) in frame A, where `x` is the pose of B in A.
    pub fn transformed(&self, x: &SE3) -> Inertia {
        let r = &x.rot;
        let p = &x.trans;
        let h_rot = r * self.h;
        let px = skew(p);
        let hx = skew(&h_rot);
        Inertia {
            mass: self.mass,
            h: h_rot + p * self.mass,
            rot: r * self.rot * r.transpose() - (hx * px + px * hx) - px * px * self.mass,
        }
    }
    /// The 6×6 matrix form, order `[angular; linear]`.
    pub fn to_matrix(&self) -> Mat6 {
        let hx = skew(&self.h);
        let mut m = Mat6::zeros();
        m.fixed_view_mut::<3, 3>(0, 0).copy_from(&self.rot);
        m.fixed_view_mut::<3, 3>(0, 3).copy_from(&hx);
        m.fixed_view_mut::<3, 3>(3, 0).copy_from(&hx.transpose());
        m.fixed_view_mut::<3, 3>(3, 3).copy_from(&Mat3::from_diagonal_element(self.mass));
        m
    }
    /// True when every entry is finite.
    pub fn is_finite(&self) -> bool {
        self.mass.is_finite() && self.h.iter().chain(self.rot.iter()).all(|x| x.is_finite())
    }
}

impl Add for Inertia {
    type Output = Inertia;
    fn add(self, o: Inertia) -> Inertia {
        Inertia { mass: self.mass + o.mass, h: self.h + o.h, rot: self.rot + o.rot }
    }
}

impl AddAssign for Inertia {
    fn add_assign(&mut self, o: Inertia) {
        self.mass += o.mass;
        self.h += o.h;
        self.rot += o.rot;
    }
}
