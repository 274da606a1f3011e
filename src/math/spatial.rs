//! Spatial motion and force vectors (Featherstone 2008, §2.2–2.9), ordered
//! `[angular; linear]`, with the spatial cross products `×` (eq. 2.31) and `×*`
//! (eq. 2.32).

use super::{Vec3, Vec6};
use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign, Mul, Neg, Sub, SubAssign};

/// A spatial motion vector (twist, spatial velocity or acceleration): `[ω; v]`.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Motion {
    /// Angular part ω.
    pub ang: Vec3,
    /// Linear part v (velocity of the point at the frame origin).
    pub lin: Vec3,
}

/// A spatial force vector (wrench, momentum): `[n; f]`, moment about the frame origin first.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Force {
    /// Moment n about the frame origin.
    pub ang: Vec3,
    /// Linear force f.
    pub lin: Vec3,
}

macro_rules! spatial_common {
    ($t:ident) => {
        impl $t {
            /// Builds the vector from its angular and linear parts.
            #[inline]
            pub fn new(ang: Vec3, lin: Vec3) -> Self {
                Self { ang, lin }
            }
            /// The zero vector.
            #[inline]
            pub fn zero() -> Self {
                Self { ang: Vec3::zeros(), lin: Vec3::zeros() }
            }
            /// Reads a six-vector `[angular; linear]`.
            #[inline]
            pub fn from_vector(x: &Vec6) -> Self {
                Self { ang: Vec3::new(x[0], x[1], x[2]), lin: Vec3::new(x[3], x[4], x[5]) }
            }
            /// Reads six consecutive entries of a slice `[angular; linear]`.
            #[inline]
            pub fn from_slice(x: &[f64]) -> Self {
                Self { ang: Vec3::new(x[0], x[1], x[2]), lin: Vec3::new(x[3], x[4], x[5]) }
            }
            /// The six-vector `[angular; linear]`.
            #[inline]
            pub fn to_vector(&self) -> Vec6 {
                Vec6::new(self.ang.x, self.ang.y, self.ang.z, self.lin.x, self.lin.y, self.lin.z)
            }
            /// True when every component is finite.
            #[inline]
            pub fn is_finite(&self) -> bool {
                self.ang.iter().chain(self.lin.iter()).all(|x| x.is_finite())
            }
            /// Euclidean norm of the six-vector (mixes units; for tests and tolerances).
            #[inline]
            pub fn norm(&self) -> f64 {
                (self.ang.norm_squared() + self.lin.norm_squared()).sqrt()
            }
        }
        impl Add for $t {
            type Output = $t;
            #[inline]
            fn add(self, o: $t) -> $t {
                $t { ang: self.ang + o.ang, lin: self.lin + o.lin }
            }
        }
        impl Sub for $t {
            type Output = $t;
            #[inline]
            fn sub(self, o: $t) -> $t {
                $t { ang: self.ang - o.ang, lin: self.lin - o.lin }
            }
        }
        impl Neg for $t {
            type Output = $t;
            #[inline]
            fn neg(self) -> $t {
                $t { ang: -self.ang, lin: -self.lin }
            }
        }
        impl Mul<f64> for $t {
            type Output = $t;
            #[inline]
            fn mul(self, s: f64) -> $t {
                $t { ang: self.ang * s, lin: self.lin * s }
            }
        }
        impl AddAssign for $t {
            #[inline]
            fn add_assign(&mut self, o: $t) {
                self.ang += o.ang;
                self.lin += o.lin;
            }
        }
        impl SubAssign for $t {
            #[inline]
            fn sub_assign(&mut self, o: $t) {
                self.ang -= o.ang;
                self.lin -= o.lin;
            }
        }
    };
}
spatial_common!(Motion);
spatial_common!(Force);

impl Motion {
    /// Spatial motion cross product `self × m` (Featherstone eq. 2.31).
    #[inline]
    pub fn cross_motion(&self, m: &Motion) -> Motion {
        Motion { ang: self.ang.cross(&m.ang), lin: self.ang.cross(&m.lin) + self.lin.cross(&m.ang) }
    }
    /// Spatial force cross product `self ×* f` (Featherstone eq. 2.32).
    #[inline]
    pub fn cross_force(&self, f: &Force) -> Force {
        Force { ang: self.ang.cross(&f.ang) + self.lin.cross(&f.lin), lin: self.ang.cross(&f.lin) }
    }
    /// The power pairing `mᵀ f` of a motion with a force.
    #[inline]
    pub fn dot(&self, f: &Force) -> f64 {
        self.ang.dot(&f.ang) + self.lin.dot(&f.lin)
    }
}

impl Force {
    /// The wrench about the frame origin of a pure force `f` applied at `point`
    /// (both in the same coordinates): `[p × f; f]`.
    #[inline]
    pub fn from_point_force(point: &Vec3, force: &Vec3) -> Force {
        Force { ang: point.cross(force), lin: *force }
    }
}
