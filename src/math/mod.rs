//! Spatial algebra: motion and force vectors, rigid transforms, spatial inertia,
//! the SO(3)/SE(3) exponential and logarithm with their Jacobians, quaternion
//! integration, dense LU, certified full-rank and pseudo-inverse solves, sparse matrices (CSR, block
//! diagonal, the Schur operator `J H⁻¹ Jᵀ`), and a small deterministic random generator.
//!
//! Conventions (see `docs/architecture.md`): spatial vectors are ordered
//! `[angular; linear]` (Featherstone, *Rigid Body Dynamics Algorithms*, ch. 2);
//! an [`SE3`] is the pose of a frame B in a frame A, `x_A = R x_B + t`.

mod dense;
mod full_rank;
mod inertia;
mod lie;
mod pseudo_inverse;
mod rng;
mod so3;
mod sparse;
mod spatial;
mod sym_eigen;
mod transform;

pub use dense::{
    lu_factor, lu_inverse, lu_solve, lu_solve_and_invert, lu_solve_transpose, mul_into, reshape, reshape_for_overwrite,
    reshape_vector,
};
pub use full_rank::{full_rank_solve, full_rank_solve_factored, TallPseudoInverse, CERTIFIED_MIN_RATIO};
pub use inertia::Inertia;
pub use lie::{
    quat_integrate, se3_exp, se3_left_jacobian, se3_left_jacobian_inv, se3_log, se3_right_jacobian,
    se3_right_jacobian_inv, so3_left_jacobian, so3_left_jacobian_inv, so3_log, so3_right_jacobian,
    so3_right_jacobian_inv,
};
pub use pseudo_inverse::{min_norm_solve, min_norm_solve_factored, pseudo_inverse, FactoredPseudoInverse};
pub use rng::SplitMix64;
pub use so3::so3_exp;
pub use sparse::{
    blocked_dot, blocked_sum, BlockDiagonal, CsrMatrix, PcrOptions, PcrReport, SparseSchur, MAX_BLOCK, REDUCTION_BLOCK,
};
pub use spatial::{Force, Motion};
pub use sym_eigen::SymmetricEigenWorkspace;
pub use transform::SE3;

/// Three-vector of `f64`.
pub type Vec3 = nalgebra::Vector3<f64>;
/// 3×3 matrix of `f64`.
pub type Mat3 = nalgebra::Matrix3<f64>;
/// Six-vector of `f64` (a spatial vector in matrix form, `[angular; linear]`).
pub type Vec6 = nalgebra::Vector6<f64>;
/// 6×6 matrix of `f64` (spatial operators in matrix form).
pub type Mat6 = nalgebra::Matrix6<f64>;

/// The skew-symmetric cross-product matrix `[a]×`, so that `[a]× b = a × b`.
#[inline]
pub fn skew(a: &Vec3) -> Mat3 {
    Mat3::new(0.0, -a.z, a.y, a.z, 0.0, -a.x, -a.y, a.x, 0.0)
}
