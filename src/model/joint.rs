//! Joint types and their kinematics: the joint transform `X_J(q)`, the motion
//! subspace `S(q)` in the child frame, the velocity-product bias `c_J = Ṡ q̇`
//! (Featherstone 2008, §4.4, Table 4.1), and the configuration-space operations
//! `q ⊕ v` and `q₁ ⊖ q₀` that live on each joint's manifold.
//!
//! Configuration and velocity layouts:
//!
//! | type        | nq | nv | q                                   | v                              |
//! |-------------|----|----|-------------------------------------|--------------------------------|
//! | fixed       | 0  | 0  | –                                   | –                              |
//! | revolute    | 1  | 1  | angle                               | angular rate                   |
//! | continuous  | 1  | 1  | angle (unbounded)                   | angular rate                   |
//! | prismatic   | 1  | 1  | displacement                        | rate                           |
//! | screw       | 1  | 1  | angle (translation = pitch·angle)   | angular rate                   |
//! | universal   | 2  | 2  | angle about axis 1, then axis 2     | rates                          |
//! | planar      | 3  | 3  | x, y in the plane, angle about normal | rates                        |
//! | spherical   | 4  | 3  | unit quaternion `[w, x, y, z]`      | body-frame angular velocity    |
//! | free        | 7  | 6  | position, unit quaternion `[w,x,y,z]` | `[ω; ṗ]`: body-frame angular, parent-frame linear |
//!
//! Ball joints integrate with the exact exponential map, `R⁺ = R exp(h ω)`. Free
//! joints live on R³ × SO(3), not SE(3): the position moves by the parent-frame
//! (world, for a floating base) velocity of the body origin and the rotation by the
//! exponential of the body-frame angular velocity, `p⁺ = p + h ṗ`, `R⁺ = R exp(h ω)`.
//! A body turning about a point other than its origin (a rolling ball turns about its
//! contact point) then moves its origin along the velocity the dynamics gave it, not
//! along the screw of an SE(3) exponential, which would move it off that line (into
//! the ground, for the ball) by `O(h²)` every step. The free joint is thus the serial
//! composition "translation, then ball": its motion subspace in the child frame is
//! `S(q) = [[I, 0], [0, Rᵀ]]` (angular columns first), with the bias
//! `c_J = Ṡ q̇ = (0, −ω × Rᵀṗ)`; its linear columns are fixed in the parent frame, and
//! only its angular columns move with its coordinates ([`JointType::carries`]).

use crate::math::{
    quat_integrate, so3_exp, so3_log, so3_right_jacobian, so3_right_jacobian_inv, Mat6, Motion, Vec3, SE3,
};
use nalgebra::{Quaternion, UnitQuaternion};
use serde::{Deserialize, Serialize};

/// The kind of a joint and its geometric parameters (axes are unit vectors in the joint frame).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum JointType {
    /// Rigid attachment, no degree of freedom.
    Fixed,
    /// Rotation about `axis`, with position limits.
    Revolute {
        /// Unit rotation axis in the joint frame.
        axis: Vec3,
    },
    /// Rotation about `axis` without position limits.
    Continuous {
        /// Unit rotation axis in the joint frame.
        axis: Vec3,
    },
    /// Translation along `axis`.
    Prismatic {
        /// Unit translation axis in the joint frame.
        axis: Vec3,
    },
    /// Ball joint: free rotation, configuration a unit quaternion.
    Spherical,
    /// Six degrees of freedom: position and unit quaternion.
    Free,
    /// Translation in the plane normal to `normal` and rotation about `normal`.
    Planar {
        /// Unit normal of the plane of motion, in the joint frame.
        normal: Vec3,
    },
    /// Rotation about `axis1`, then about `axis2` of the rotated frame (Hooke joint).
    Universal {
        /// First unit axis, in the joint frame.
        axis1: Vec3,
        /// Second unit axis, in the frame rotated by the first angle.
        axis2: Vec3,
    },
    /// Rotation about `axis` coupled to translation `pitch · angle` along it.
    Screw {
        /// Unit screw axis in the joint frame.
        axis: Vec3,
        /// Translation per radian (metres per radian).
        pitch: f64,
    },
}

impl JointType {
    /// Number of configuration coordinates.
    pub fn nq(&self) -> usize {
        match self {
            JointType::Fixed => 0,
            JointType::Revolute { .. }
            | JointType::Continuous { .. }
            | JointType::Prismatic { .. }
            | JointType::Screw { .. } => 1,
            JointType::Universal { .. } => 2,
            JointType::Planar { .. } => 3,
            JointType::Spherical => 4,
            JointType::Free => 7,
        }
    }

    /// Number of velocity coordinates (degrees of freedom).
    pub fn nv(&self) -> usize {
        match self {
            JointType::Spherical => 3,
            JointType::Free => 6,
            other => other.nq(),
        }
    }

    /// A short lowercase name (`"revolute"`, `"free"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            JointType::Fixed => "fixed",
            JointType::Revolute { .. } => "revolute",
            JointType::Continuous { .. } => "continuous",
            JointType::Prismatic { .. } => "prismatic",
            JointType::Spherical => "spherical",
            JointType::Free => "free",
            JointType::Planar { .. } => "planar",
            JointType::Universal { .. } => "universal",
            JointType::Screw { .. } => "screw",
        }
    }

    /// True when q holds a unit quaternion (ball and free joints).
    pub fn has_quaternion(&self) -> bool {
        matches!(self, JointType::Spherical | JointType::Free)
    }

    /// Whether the motion-subspace column `column` of this joint (offset within the
    /// joint, world frame) moves under a tangent perturbation of its dof `perturbed`:
    /// every column for the joints whose subspace is constant in the child frame (ball,
    /// single-dof joints); the columns from `perturbed` on for the serial joints
    /// (universal `R₁(q₁)R₂(q₂)`, planar: translation then rotation); the angular
    /// columns for the free joint (translation then ball: its linear columns are fixed in
    /// the parent frame, and translating moves the rotation axes' line of action).
    #[inline]
    pub fn carries(&self, perturbed: usize, column: usize) -> bool {
        match self {
            JointType::Universal { .. } | JointType::Planar { .. } => column >= perturbed,
            JointType::Free => column < 3,
            _ => true,
        }
    }

    /// Whether the coordinate `k` of this joint is an angle-like coordinate that wraps.
    pub(crate) fn is_translation_coord(&self, k: usize) -> bool {
        match self {
            JointType::Prismatic { .. } => true,
            JointType::Planar { .. } => k < 2,
            JointType::Free => k < 3,
            _ => false,
        }
    }

    /// Writes the neutral configuration (zero angles, identity quaternions) into `q`.
    pub fn neutral(&self, q: &mut [f64]) {
        q.fill(0.0);
        match self {
            JointType::Spherical => q[0] = 1.0,
            JointType::Free => q[3] = 1.0,
            _ => {}
        }
    }

    /// Joint kinematics: the transform `X_J(q)` (pose of the child frame in the joint
    /// frame), the motion subspace `S(q)` (columns written to `s[..nv]`, child
    /// coordinates) and the bias `c_J = Ṡ(q) q̇` (child coordinates).
    #[inline]
    pub fn kinematics(&self, q: &[f64], qd: &[f64], s: &mut [Motion]) -> (SE3, Motion) {
        let z = Vec3::zeros();
        match self {
            JointType::Fixed => (SE3::identity(), Motion::zero()),
            JointType::Revolute { axis } | JointType::Continuous { axis } => {
                s[0] = Motion::new(*axis, z);
                (SE3::new(so3_exp(&(axis * q[0])), z), Motion::zero())
            }
            JointType::Prismatic { axis } => {
                s[0] = Motion::new(z, *axis);
                (SE3::from_translation(axis * q[0]), Motion::zero())
            }
            JointType::Screw { axis, pitch } => {
                s[0] = Motion::new(*axis, axis * *pitch);
                (SE3::new(so3_exp(&(axis * q[0])), axis * (pitch * q[0])), Motion::zero())
            }
            JointType::Spherical => {
                for (k, col) in s.iter_mut().take(3).enumerate() {
                    *col = Motion::new(Vec3::ith(k, 1.0), z);
                }
                (SE3::new(quat_rotation(&q[0..4]), z), Motion::zero())
            }
            JointType::Free => {
                let rot = quat_rotation(&q[3..7]);
                for k in 0..3 {
                    s[k] = Motion::new(Vec3::ith(k, 1.0), z);
                    // Column k of Rᵀ: the parent-frame axis k seen from the child frame.
                    s[k + 3] = Motion::new(z, rot.row(k).transpose());
                }
                (SE3::new(rot, Vec3::new(q[0], q[1], q[2])), self.bias(s, qd))
            }
            JointType::Universal { axis1, axis2 } => {
                let r1 = so3_exp(&(axis1 * q[0]));
                let r2 = so3_exp(&(axis2 * q[1]));
                let a1c = r2.tr_mul(axis1);
                s[0] = Motion::new(a1c, z);
                s[1] = Motion::new(*axis2, z);
                (SE3::new(r1 * r2, z), self.bias(s, qd))
            }
            JointType::Planar { normal } => {
                let (t1, t2) = plane_basis(normal);
                let r = so3_exp(&(normal * q[2]));
                let e1 = r.tr_mul(&t1);
                let e2 = r.tr_mul(&t2);
                s[0] = Motion::new(z, e1);
                s[1] = Motion::new(z, e2);
                s[2] = Motion::new(*normal, z);
                (SE3::new(r, t1 * q[0] + t2 * q[1]), self.bias(s, qd))
            }
        }
    }

    /// The velocity-product bias `c_J = Ṡ q̇` from the joint's current motion-subspace
    /// columns `s` (child frame). Zero for joints whose `S` is constant in the child frame;
    /// universal: `(R₂ᵀa₁ × a₂) q̇₁ q̇₂`; planar: `−q̇_θ n × (e₁ q̇_x + e₂ q̇_y)`; free:
    /// `(0, −ω × Rᵀṗ)`.
    #[inline]
    pub fn bias(&self, s: &[Motion], qd: &[f64]) -> Motion {
        match self {
            JointType::Free => {
                let vlin = s[3].lin * qd[3] + s[4].lin * qd[4] + s[5].lin * qd[5];
                Motion::new(Vec3::zeros(), -Vec3::new(qd[0], qd[1], qd[2]).cross(&vlin))
            }
            JointType::Universal { .. } => Motion::new(s[0].ang.cross(&s[1].ang) * (qd[0] * qd[1]), Vec3::zeros()),
            JointType::Planar { .. } => {
                let vlin = s[0].lin * qd[0] + s[1].lin * qd[1];
                Motion::new(Vec3::zeros(), -s[2].ang.cross(&vlin) * qd[2])
            }
            _ => Motion::zero(),
        }
    }

    /// `q ⊕ dv`: moves the joint configuration `q` along the tangent vector `dv`
    /// (already multiplied by the time step), on the joint's manifold.
    pub fn integrate(&self, q: &[f64], dv: &[f64], out: &mut [f64]) {
        match self {
            JointType::Spherical => {
                let r = quat_integrate(&[q[0], q[1], q[2], q[3]], &Vec3::new(dv[0], dv[1], dv[2]));
                out[..4].copy_from_slice(&r);
            }
            JointType::Free => {
                // dv = [h ω; h ṗ]: p⁺ = p + h ṗ, R⁺ = R exp(h ω).
                for k in 0..3 {
                    out[k] = q[k] + dv[k + 3];
                }
                let r = quat_integrate(&[q[3], q[4], q[5], q[6]], &Vec3::new(dv[0], dv[1], dv[2]));
                out[3..7].copy_from_slice(&r);
            }
            _ => {
                for k in 0..q.len() {
                    out[k] = q[k] + dv[k];
                }
            }
        }
    }

    /// Jacobians of `q⁺ = q ⊕ w` in the tangent spaces: `(∂q⁺/∂q, ∂q⁺/∂w)`, top-left
    /// `nv × nv` blocks used. Scalar coordinates: identities; ball: `exp(−w)`, `J_r(w)`
    /// (SO(3)); free: the ball's blocks on the angular part and identities on the linear
    /// part (R³ × SO(3)).
    pub fn integrate_jacobians(&self, w: &[f64]) -> (Mat6, Mat6) {
        match self {
            JointType::Spherical | JointType::Free => {
                let wv = Vec3::new(w[0], w[1], w[2]);
                let mut jq = Mat6::identity();
                let mut jv = Mat6::identity();
                jq.fixed_view_mut::<3, 3>(0, 0).copy_from(&so3_exp(&-wv));
                jv.fixed_view_mut::<3, 3>(0, 0).copy_from(&so3_right_jacobian(&wv));
                (jq, jv)
            }
            _ => (Mat6::identity(), Mat6::identity()),
        }
    }

    /// Jacobian of `d = q₁ ⊖ q₀` with respect to `q₁` (tangent), at the difference `d`:
    /// identity for scalar coordinates, `J_r(d)⁻¹` on SO(3) (ball joints and the angular
    /// part of free joints).
    pub fn difference_jacobian(&self, d: &[f64]) -> Mat6 {
        match self {
            JointType::Spherical | JointType::Free => {
                let mut j = Mat6::identity();
                j.fixed_view_mut::<3, 3>(0, 0).copy_from(&so3_right_jacobian_inv(&Vec3::new(d[0], d[1], d[2])));
                j
            }
            _ => Mat6::identity(),
        }
    }

    /// `q1 ⊖ q0`: the tangent vector `dv` with `q0 ⊕ dv = q1`.
    pub fn difference(&self, q0: &[f64], q1: &[f64], dv: &mut [f64]) {
        match self {
            JointType::Spherical => {
                let r0 = quat_rotation(q0);
                let r1 = quat_rotation(q1);
                let w = so3_log(&(r0.transpose() * r1));
                dv[..3].copy_from_slice(w.as_slice());
            }
            JointType::Free => {
                let w = so3_log(&(quat_rotation(&q0[3..7]).transpose() * quat_rotation(&q1[3..7])));
                dv[..3].copy_from_slice(w.as_slice());
                for k in 0..3 {
                    dv[k + 3] = q1[k] - q0[k];
                }
            }
            _ => {
                for k in 0..q0.len() {
                    dv[k] = q1[k] - q0[k];
                }
            }
        }
    }
}

/// The rotation matrix of a quaternion `[w, x, y, z]` (normalised first).
#[inline]
pub(crate) fn quat_rotation(q: &[f64]) -> crate::math::Mat3 {
    let uq = UnitQuaternion::from_quaternion(Quaternion::new(q[0], q[1], q[2], q[3]));
    *uq.to_rotation_matrix().matrix()
}

/// An orthonormal basis `(t1, t2)` of the plane normal to the unit vector `n`,
/// chosen deterministically (t1 is the first coordinate axis least aligned with n,
/// projected; t2 = n × t1).
pub fn plane_basis(n: &Vec3) -> (Vec3, Vec3) {
    let a = n.abs();
    let seed = if a.x <= a.y && a.x <= a.z {
        Vec3::x()
    } else if a.y <= a.z {
        Vec3::y()
    } else {
        Vec3::z()
    };
    let t1 = (seed - n * n.dot(&seed)).normalize();
    (t1, n.cross(&t1))
}

/// Per-degree-of-freedom limits of a joint. Infinite bounds mean "unlimited".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JointLimits {
    /// Lower position bound per coordinate (nq entries; ignored for quaternion coordinates).
    #[serde(with = "serde_inf")]
    pub lower: Vec<f64>,
    /// Upper position bound per coordinate (nq entries).
    #[serde(with = "serde_inf")]
    pub upper: Vec<f64>,
    /// Maximum speed per degree of freedom (nv entries).
    #[serde(with = "serde_inf")]
    pub velocity: Vec<f64>,
    /// Maximum effort (torque or force) per degree of freedom (nv entries).
    #[serde(with = "serde_inf")]
    pub effort: Vec<f64>,
}

impl JointLimits {
    /// No limits for a joint of the given type.
    pub fn unlimited(kind: &JointType) -> Self {
        Self {
            lower: vec![f64::NEG_INFINITY; kind.nq()],
            upper: vec![f64::INFINITY; kind.nq()],
            velocity: vec![f64::INFINITY; kind.nv()],
            effort: vec![f64::INFINITY; kind.nv()],
        }
    }
}

/// Passive joint dynamics per degree of freedom (nv entries each).
///
/// Damping and armature enter the step implicitly (see `step::semi_implicit_euler`);
/// the spring torque is `−k ⊙ (q ⊖ q_rest)`. `friction` is stored for the contact
/// layer, where joint Coulomb friction becomes a boxed constraint row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JointDynamics {
    /// Viscous damping coefficient (N·m·s/rad or N·s/m).
    pub damping: Vec<f64>,
    /// Spring stiffness (N·m/rad or N/m).
    pub stiffness: Vec<f64>,
    /// Rest configuration of the spring (nq entries, on the joint's manifold).
    pub rest: Vec<f64>,
    /// Armature (rotor inertia reflected through the gearbox), added to the mass-matrix diagonal.
    pub armature: Vec<f64>,
    /// Coulomb friction magnitude (stored; enforced by the contact layer).
    pub friction: Vec<f64>,
}

impl JointDynamics {
    /// No damping, spring, armature or friction; spring rest at the neutral configuration.
    pub fn none(kind: &JointType) -> Self {
        let mut rest = vec![0.0; kind.nq()];
        kind.neutral(&mut rest);
        Self {
            damping: vec![0.0; kind.nv()],
            stiffness: vec![0.0; kind.nv()],
            rest,
            armature: vec![0.0; kind.nv()],
            friction: vec![0.0; kind.nv()],
        }
    }
}

/// A joint: connects a parent body to a child body.
///
/// `placement` is the pose of the joint frame in the parent body frame; the child
/// body frame coincides with the joint frame at the neutral configuration and moves
/// with `X_J(q)` relative to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Joint {
    /// Unique joint name.
    pub name: String,
    /// Joint type and axes.
    pub kind: JointType,
    /// Pose of the joint frame in the parent body frame.
    pub placement: SE3,
    /// Position, velocity and effort limits.
    pub limits: JointLimits,
    /// Damping, spring, armature and friction.
    pub dynamics: JointDynamics,
}

impl Joint {
    /// A joint of the given type with identity placement, no limits and no passive dynamics.
    pub fn new(name: impl Into<String>, kind: JointType) -> Self {
        let limits = JointLimits::unlimited(&kind);
        let dynamics = JointDynamics::none(&kind);
        Self { name: name.into(), kind, placement: SE3::identity(), limits, dynamics }
    }
    /// A fixed joint.
    pub fn fixed(name: impl Into<String>) -> Self {
        Self::new(name, JointType::Fixed)
    }
    /// A revolute joint about `axis` (normalised by the model validation, which rejects zero axes).
    pub fn revolute(name: impl Into<String>, axis: Vec3) -> Self {
        Self::new(name, JointType::Revolute { axis })
    }
    /// A continuous (unlimited revolute) joint about `axis`.
    pub fn continuous(name: impl Into<String>, axis: Vec3) -> Self {
        Self::new(name, JointType::Continuous { axis })
    }
    /// A prismatic joint along `axis`.
    pub fn prismatic(name: impl Into<String>, axis: Vec3) -> Self {
        Self::new(name, JointType::Prismatic { axis })
    }
    /// A spherical (ball) joint.
    pub fn spherical(name: impl Into<String>) -> Self {
        Self::new(name, JointType::Spherical)
    }
    /// A free (floating) joint.
    pub fn free(name: impl Into<String>) -> Self {
        Self::new(name, JointType::Free)
    }
    /// A planar joint moving in the plane normal to `normal`.
    pub fn planar(name: impl Into<String>, normal: Vec3) -> Self {
        Self::new(name, JointType::Planar { normal })
    }
    /// A universal joint with axes `axis1` then `axis2`.
    pub fn universal(name: impl Into<String>, axis1: Vec3, axis2: Vec3) -> Self {
        Self::new(name, JointType::Universal { axis1, axis2 })
    }
    /// A screw joint about `axis` with `pitch` metres per radian.
    pub fn screw(name: impl Into<String>, axis: Vec3, pitch: f64) -> Self {
        Self::new(name, JointType::Screw { axis, pitch })
    }
    /// Sets the pose of the joint frame in the parent body frame.
    pub fn with_placement(mut self, placement: SE3) -> Self {
        self.placement = placement;
        self
    }
    /// Sets position limits for every coordinate of a one-coordinate joint, or per coordinate.
    pub fn with_position_limits(mut self, lower: &[f64], upper: &[f64]) -> Self {
        self.limits.lower = lower.to_vec();
        self.limits.upper = upper.to_vec();
        self
    }
    /// Sets velocity limits (one per degree of freedom).
    pub fn with_velocity_limits(mut self, velocity: &[f64]) -> Self {
        self.limits.velocity = velocity.to_vec();
        self
    }
    /// Sets effort limits (one per degree of freedom).
    pub fn with_effort_limits(mut self, effort: &[f64]) -> Self {
        self.limits.effort = effort.to_vec();
        self
    }
    /// Sets the same viscous damping on every degree of freedom.
    pub fn with_damping(mut self, damping: f64) -> Self {
        self.dynamics.damping.fill(damping);
        self
    }
    /// Sets the same spring stiffness on every degree of freedom and the spring rest configuration.
    pub fn with_spring(mut self, stiffness: f64, rest: &[f64]) -> Self {
        self.dynamics.stiffness.fill(stiffness);
        self.dynamics.rest = rest.to_vec();
        self
    }
    /// Sets the same armature on every degree of freedom.
    pub fn with_armature(mut self, armature: f64) -> Self {
        self.dynamics.armature.fill(armature);
        self
    }
    /// Sets the same Coulomb friction on every degree of freedom.
    pub fn with_friction(mut self, friction: f64) -> Self {
        self.dynamics.friction.fill(friction);
        self
    }
    /// Number of configuration coordinates.
    pub fn nq(&self) -> usize {
        self.kind.nq()
    }
    /// Number of degrees of freedom.
    pub fn nv(&self) -> usize {
        self.kind.nv()
    }
}

/// Serde for `Vec<f64>` that writes infinities as the strings `"inf"` / `"-inf"`
/// (JSON has no infinity; unlimited joint limits are infinite).
mod serde_inf {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Num {
        F(f64),
        S(String),
    }

    pub fn serialize<S: Serializer>(xs: &[f64], s: S) -> Result<S::Ok, S::Error> {
        let v: Vec<Num> = xs
            .iter()
            .map(|&x| match x {
                x if x == f64::INFINITY => Num::S("inf".into()),
                x if x == f64::NEG_INFINITY => Num::S("-inf".into()),
                x if x.is_nan() => Num::S("nan".into()),
                x => Num::F(x),
            })
            .collect();
        v.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        let v: Vec<Num> = Vec::deserialize(d)?;
        v.into_iter()
            .map(|n| match n {
                Num::F(x) => Ok(x),
                Num::S(s) => match s.as_str() {
                    "inf" => Ok(f64::INFINITY),
                    "-inf" => Ok(f64::NEG_INFINITY),
                    "nan" => Ok(f64::NAN),
                    other => {
                        Err(serde::de::Error::custom(format!("expected a number, 'inf' or '-inf', got '{other}'")))
                    }
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unbounded_limits_survive_json() {
        let j = Joint::revolute("j", Vec3::z()).with_position_limits(&[f64::NEG_INFINITY], &[1.5]);
        let s = serde_json::to_string(&j).unwrap();
        assert!(s.contains("\"-inf\"") && s.contains("\"inf\""), "{s}");
        let back: Joint = serde_json::from_str(&s).unwrap();
        assert_eq!(back, j);
        let bad = s.replace("\"-inf\"", "\"minus infinity\"");
        assert!(serde_json::from_str::<Joint>(&bad).is_err());
    }

    #[test]
    fn sample_models_round_trip_through_json_exactly() {
        for m in [crate::model::samples::all_joint_types(), crate::model::samples::random_tree(12, 3, true)] {
            let back = crate::Model::from_json(&m.to_json().unwrap()).unwrap();
            assert_eq!(back, m);
        }
    }
}
