//! [`Data`]: every workspace and output of the algorithms, preallocated from a
//! [`Model`] so that no algorithm allocates per call (Pinocchio/MuJoCo style).

use crate::math::{Force, Inertia, Mat6, Motion, SE3};
use crate::Model;
use nalgebra::{DMatrix, DVector};

/// Scratch space and results of the rigid-body algorithms for one [`Model`].
///
/// Per-body quantities are in the body frame unless named `_world`. Outputs of the
/// last call stay readable: `tau` (RNEA), `ddq` (ABA), `mass_matrix` (CRBA), poses
/// and velocities (kinematics).
#[derive(Clone, Debug)]
pub struct Data {
    /// Pose of each body in its parent's frame (`placement · X_J(q)`).
    pub x_parent: Vec<SE3>,
    /// Pose of each body in the world frame.
    pub x_world: Vec<SE3>,
    /// Spatial velocity of each body (body frame).
    pub v: Vec<Motion>,
    /// Spatial acceleration of each body (body frame; includes the fictitious
    /// gravity acceleration in RNEA and ABA).
    pub a: Vec<Motion>,
    /// Velocity-product acceleration `c_J + v × S q̇` of each body.
    pub c: Vec<Motion>,
    /// Motion-subspace column of each degree of freedom (its body's frame).
    pub s: Vec<Motion>,
    /// Net spatial force transmitted by each body's joint (RNEA).
    pub f: Vec<Force>,
    /// Composite rigid-body inertias (CRBA).
    pub ic: Vec<Inertia>,
    /// Articulated-body inertias (ABA).
    pub ia: Vec<Mat6>,
    /// Articulated inertias projected across each joint, `I^A − U D⁻¹ Uᵀ` (ABA).
    pub ia_art: Vec<Mat6>,
    /// Articulated bias forces (ABA).
    pub pa: Vec<Force>,
    /// `U = I^A S`, one column per degree of freedom (ABA).
    pub u_cols: Vec<Force>,
    /// `D⁻¹` of each joint, top-left `nv_j × nv_j` block used (ABA).
    pub d_inv: Vec<Mat6>,
    /// `u = τ − Sᵀ p^A` per degree of freedom (ABA).
    pub u: DVector<f64>,
    /// External forces in body frames (scratch).
    pub f_ext: Vec<Force>,
    /// Joint-space mass matrix (CRBA), armature included; empty (`0 × 0`) until the
    /// first CRBA sizes it (a dense `nv × nv` matrix is large for many bodies, and the
    /// contact stage keeps its own per-tree blocks).
    pub mass_matrix: DMatrix<f64>,
    /// Generalized forces (RNEA output).
    pub tau: DVector<f64>,
    /// Generalized accelerations (ABA output).
    pub ddq: DVector<f64>,
    /// Generalized-force scratch vector (nv).
    pub tmp_nv: DVector<f64>,
    /// Scratch matrix (nv × nv).
    pub(crate) tmp_mat: DMatrix<f64>,
    /// Scratch vectors of the integrator (nv each): spring displacement, midpoint
    /// velocity, explicit-step fallback velocity.
    pub(crate) scratch: [Vec<f64>; 3],
}

impl Data {
    /// Allocates the workspace for `model`.
    pub fn new(model: &Model) -> Data {
        let nb = model.nbodies();
        let nv = model.nv();
        Data {
            x_parent: vec![SE3::identity(); nb],
            x_world: vec![SE3::identity(); nb],
            v: vec![Motion::zero(); nb],
            a: vec![Motion::zero(); nb],
            c: vec![Motion::zero(); nb],
            s: vec![Motion::zero(); nv],
            f: vec![Force::zero(); nb],
            ic: vec![Inertia::zero(); nb],
            ia: vec![Mat6::zeros(); nb],
            ia_art: vec![Mat6::zeros(); nb],
            pa: vec![Force::zero(); nb],
            u_cols: vec![Force::zero(); nv],
            d_inv: vec![Mat6::zeros(); nb],
            u: DVector::zeros(nv),
            f_ext: vec![Force::zero(); nb],
            mass_matrix: DMatrix::zeros(0, 0),
            tau: DVector::zeros(nv),
            ddq: DVector::zeros(nv),
            tmp_nv: DVector::zeros(nv),
            tmp_mat: DMatrix::zeros(nv, nv),
            scratch: [vec![0.0; nv], vec![0.0; nv], vec![0.0; nv]],
        }
    }
}
