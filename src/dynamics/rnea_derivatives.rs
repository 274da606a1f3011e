//! Analytic partial derivatives of inverse dynamics, `∂τ/∂q` (tangent space) and
//! `∂τ/∂q̇`, for every joint type, in O(n·d) plus one constant-cost term per pair
//! (dof, descendant dof) — the structure of Carpentier & Mansard, *Analytical
//! Derivatives of Rigid Body Dynamics Algorithms* (RSS 2018), re-derived here in the
//! world frame with composite operators.
//!
//! Derivation (world coordinates, spatial vectors about the world origin). A tangent
//! perturbation `δ` of dof j moves the bodies of its subtree rigidly by the twist
//! `u = S_j`. With `v⁻`, `a⁻` the velocity and acceleration of the frame *before* dof j
//! (the parent body; for the serial joints — universal, planar, and free, whose
//! translation precedes its rotation — the intermediate frame after the joint's earlier
//! dofs), every body i of the subtree satisfies
//!
//! ```text
//! ∂v_i/∂δ = u × (v_i − v⁻)
//! ∂a_i/∂δ = u × (a_i − a⁻) − (u × v⁻) × (v_i − v⁻)
//! ∂f_i/∂δ = u ×* f̂_i − I_i (u × a⁻ − z) − B_i w,      w = u × v⁻,  z = w × v⁻
//! ```
//!
//! where `f̂_i = I_i a_i + v_i ×* I_i v_i` and `B_i w = I_i (w × v_i) + w ×* (I_i v_i) + v_i ×* (I_i w)`
//! (a "Coriolis operator", linear in w). With `I_i v_i = (h^a, h^l)`, `I_i` in block
//! form `[[Ī, [c]×], [[c]×ᵀ, m]]` (c the first moment) and `v_i = (ω, v)`, the Jacobi
//! identity leaves only the angular columns:
//!
//! ```text
//! B_i = [[−[h^a]× − P − Pᵀ, 0], [−2 [h^l]×, 0]],      P = Ī [ω]× + v cᵀ − (c·v) 1
//! ```
//!
//! (so `B_i w` depends on the angular part of w only, and `B_iᵀ S` has no linear part).
//! Summing over subtrees with the composite
//! `I^C_l = Σ I_i`, `B^C_l = Σ B_i`, `F_l = Σ f_i`, `F^e_l = Σ f^ext_i` and projecting on
//! `τ_k = S_kᵀ F_{b(k)}` (using `(u × S)·F = −S·(u ×* F)`):
//!
//! ```text
//! k above j (or on j's joint, not carried by j):   ∂τ_k/∂δ_j = S_k · [u ×* (F_b + F^e_b) − I^C_b (u × a⁻ − z) − B^C_b w]
//! k carried by j (on j's joint or below, body l):  ∂τ_k/∂δ_j = S_k · (u ×* F^e_l) − (I^C_l S_k)·(u × a⁻ − z) − (B^C_lᵀ S_k)·w
//! ```
//!
//! and, with `Ṡ_j = v_{f(j)} × S_j` (f(j) the frame carrying column j) and `β = Ṡ_j − u × v⁻`,
//!
//! ```text
//! k above j or on its joint:  ∂τ_k/∂q̇_j = S_k · (I^C_b β + B^C_b u)
//! k below j (body l):          ∂τ_k/∂q̇_j = (I^C_l S_k)·β + (B^C_lᵀ S_k)·u
//! ```
//!
//! External wrenches are given in the world frame, so they do not move with q; they
//! enter only through `F^e`. Armature adds `diag(armature)·a`, independent of (q, q̇).
//! The same machinery differentiates with respect to a joint placement's translation
//! (a "virtual prismatic dof" before the joint): see [`placement_column`].

use super::kinematics::{check_q, external_forces_to_bodies, gravity_acceleration, kinematics_pass};
use super::rnea::rnea_pass;
use super::{Data, InertiaFactor};
use crate::error::{check_vector, Result};
use crate::math::{skew, Force, Inertia, Mat3, Mat6, Motion, Vec3, Vec6};
use crate::model::JointType;
use crate::Model;
use nalgebra::DMatrix;

/// World-frame workspace of the derivative algorithms.
#[derive(Clone, Debug)]
pub struct DerivativeData {
    /// Motion-subspace columns in world coordinates (per dof).
    pub s: Vec<Motion>,
    /// Velocity of the frame before each dof (`v⁻`).
    pub v_pre: Vec<Motion>,
    /// Acceleration of the frame before each dof (`a⁻`, gravity offset included).
    pub a_pre: Vec<Motion>,
    /// Time derivative of each world column, `Ṡ_k`.
    pub s_dot: Vec<Motion>,
    /// `I^C S_k` per dof.
    pub ics: Vec<Force>,
    /// `B^Cᵀ S_k` per dof.
    pub bcs: Vec<Vec6>,
    /// `I^C S_k` per dof as plain six-vectors.
    pub(crate) ics_v: Vec<Vec6>,
    /// True when some external wrench is nonzero.
    pub(crate) has_ext: bool,
    /// `S_k`, `I^C S_k` and `B^Cᵀ S_k` component by component (15 rows of nv: row
    /// `c` is component c of every `S_k`, rows 6–11 those of `I^C S_k`, rows 12–14
    /// the angular ones of `B^Cᵀ S_k`, whose linear part is zero), so that the column
    /// loops run over contiguous dofs.
    pub(crate) soa: Vec<f64>,
    /// The tree the dof ranges below were made for (`parents`, `v_idx`), so that a
    /// workspace used with another model of the same size is brought up to date.
    tree: (Vec<Option<usize>>, Vec<usize>),
    /// Per body, the dof ranges of its strict ancestors (consecutive ranges merged).
    pub(crate) anc_runs: Vec<Vec<(usize, usize)>>,
    /// Per body, one past the last dof of its subtree.
    pub(crate) dof_end: Vec<usize>,
    /// Body velocities (world).
    pub v: Vec<Motion>,
    /// Body accelerations (world, gravity offset included).
    pub a: Vec<Motion>,
    /// Composite inertias (world).
    pub ic: Vec<Mat6>,
    /// Composite Coriolis operators (world).
    pub bc: Vec<Mat6>,
    /// The composites in compact form: `I^C` as an [`Inertia`], and the nonzero
    /// blocks of `B^C = [[B₁₁, 0], [−2[h]×, 0]]` as `(B₁₁, h)` (module notes).
    pub(crate) ic_c: Vec<Inertia>,
    pub(crate) bc_c: Vec<(Mat3, Vec3)>,
    /// Subtree net forces `F_l` (world).
    pub f: Vec<Force>,
    /// Subtree external forces `F^e_l` (world).
    pub f_ext: Vec<Force>,
    /// `∂τ/∂q` (nv × nv, tangent columns).
    pub dtau_dq: DMatrix<f64>,
    /// `∂τ/∂q̇` (nv × nv).
    pub dtau_dv: DMatrix<f64>,
    /// Integrator scratch: the Newton matrix of the midpoint step and its pivots.
    pub(crate) newton: DMatrix<f64>,
    pub(crate) pivots: Vec<usize>,
    pub(crate) acc: Vec<f64>,
    pub(crate) resid: Vec<f64>,
    /// The line search's trial acceleration.
    pub(crate) trial: Vec<f64>,
    /// The branch-sparse factor of the joint-space inertia (forward-dynamics derivatives).
    pub(crate) factor: InertiaFactor,
}

impl DerivativeData {
    /// Allocates the workspace for `model`.
    pub fn new(model: &Model) -> Self {
        let (nb, nv) = (model.nbodies(), model.nv());
        Self {
            s: vec![Motion::zero(); nv],
            v_pre: vec![Motion::zero(); nv],
            a_pre: vec![Motion::zero(); nv],
            s_dot: vec![Motion::zero(); nv],
            ics: vec![Force::zero(); nv],
            bcs: vec![Vec6::zeros(); nv],
            ics_v: vec![Vec6::zeros(); nv],
            has_ext: false,
            soa: vec![0.0; 15 * nv],
            tree: (Vec::new(), Vec::new()),
            anc_runs: Vec::new(),
            dof_end: Vec::new(),
            v: vec![Motion::zero(); nb],
            a: vec![Motion::zero(); nb],
            ic: vec![Mat6::zeros(); nb],
            bc: vec![Mat6::zeros(); nb],
            ic_c: vec![Inertia::zero(); nb],
            bc_c: vec![(Mat3::zeros(), Vec3::zeros()); nb],
            f: vec![Force::zero(); nb],
            f_ext: vec![Force::zero(); nb],
            dtau_dq: DMatrix::zeros(nv, nv),
            dtau_dv: DMatrix::zeros(nv, nv),
            newton: DMatrix::zeros(nv, nv),
            pivots: vec![0; nv],
            acc: vec![0.0; nv],
            resid: vec![0.0; nv],
            trial: vec![0.0; nv],
            factor: InertiaFactor::new(model),
        }
        .with_tree(model)
    }

    /// Makes the per-body dof ranges match `model`'s tree (only when they do not).
    fn with_tree(mut self, model: &Model) -> Self {
        self.update_tree(model);
        self
    }

    pub(crate) fn update_tree(&mut self, model: &Model) {
        if self.tree.0 == model.parents && self.tree.1 == model.v_idx {
            return;
        }
        let (nb, nv) = (model.nbodies(), model.nv());
        self.anc_runs = (0..nb).map(|b| ancestor_runs(model, b)).collect();
        self.dof_end =
            (0..nb).map(|b| if model.subtree_end[b] < nb { model.v_idx[model.subtree_end[b]] } else { nv }).collect();
        self.tree = (model.parents.clone(), model.v_idx.clone());
        self.factor = InertiaFactor::new(model);
    }
}

/// The dof ranges of the strict ancestors of body `b`, ascending, with adjacent
/// ranges merged (a chain's ancestors are one range).
fn ancestor_runs(model: &Model, b: usize) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut anc = model.parents[b];
    while let Some(x) = anc {
        let (xa, xn) = (model.v_idx[x], model.joints[x].nv());
        if xn > 0 {
            match runs.last_mut() {
                Some(last) if last.0 == xa + xn => last.0 = xa,
                _ => runs.push((xa, xa + xn)),
            }
        }
        anc = model.parents[x];
    }
    runs.reverse();
    runs
}

/// True for joints whose columns are carried by intermediate frames (serial
/// composition of elementary motions): universal (axis 1 then axis 2) and planar
/// (x, then y, then the rotation). The free joint (translation, then ball) is serial in
/// its linear columns only, which precede its angular ones in the chain although they
/// follow them in the velocity vector; [`world_quantities`] treats it on its own.
#[inline]
pub(crate) fn is_serial(kind: &JointType) -> bool {
    matches!(kind, JointType::Universal { .. } | JointType::Planar { .. })
}

/// The Coriolis operator `B` of one body (world frame) with inertia `inertia` and
/// velocity `v`, `B w = I (w × v) + w ×* (I v) + v ×* (I w)`, in the closed form of
/// the module notes (its linear columns vanish): the blocks `(B₁₁, h)` of
/// `B = [[B₁₁, 0], [−2[h]×, 0]]`.
fn coriolis_operator(inertia: &Inertia, v: &Motion) -> (Mat3, Vec3) {
    let hv = inertia.mul_motion(v);
    let c = &inertia.h;
    let p = inertia.rot * skew(&v.ang) + v.lin * c.transpose() - Mat3::from_diagonal_element(c.dot(&v.lin));
    (-skew(&hv.ang) - p - p.transpose(), hv.lin)
}

/// `B w` for a Coriolis operator in the compact form of [`coriolis_operator`].
#[inline]
fn coriolis_mul(b: &(Mat3, Vec3), w: &Motion) -> Force {
    Force::new(b.0 * w.ang, b.1.cross(&w.ang) * -2.0)
}

/// The 6×6 matrix of a Coriolis operator in compact form.
fn coriolis_matrix(b: &(Mat3, Vec3)) -> Mat6 {
    let mut out = Mat6::zeros();
    out.fixed_view_mut::<3, 3>(0, 0).copy_from(&b.0);
    out.fixed_view_mut::<3, 3>(3, 0).copy_from(&(skew(&b.1) * -2.0));
    out
}

/// Computes `∂τ/∂q` and `∂τ/∂q̇` of RNEA at `(q, v, a)` with optional world-frame
/// wrenches, into `deriv.dtau_dq` and `deriv.dtau_dv`. `data` is left holding the
/// RNEA results (`data.tau`) at the same point.
pub fn rnea_derivatives(
    model: &Model,
    data: &mut Data,
    deriv: &mut DerivativeData,
    q: &[f64],
    v: &[f64],
    a: &[f64],
    f_ext: Option<&[Force]>,
) -> Result<()> {
    rnea_derivatives_at(model, data, deriv, q, v, a, f_ext)?;
    derivative_columns(model, deriv, true);
    Ok(())
}

/// Checks inputs, runs kinematics and RNEA at (q, v, a) and fills the world-frame
/// workspace (everything but the derivative matrices).
pub(crate) fn rnea_derivatives_at(
    model: &Model,
    data: &mut Data,
    deriv: &mut DerivativeData,
    q: &[f64],
    v: &[f64],
    a: &[f64],
    f_ext: Option<&[Force]>,
) -> Result<()> {
    check_q(model, q)?;
    check_vector("v", v, model.nv())?;
    check_vector("a", a, model.nv())?;
    if let Some(fs) = f_ext {
        if fs.len() != model.nbodies() {
            return Err(crate::Error::Dimension {
                what: "external wrenches",
                expected: model.nbodies(),
                got: fs.len(),
            });
        }
    }
    kinematics_pass(model, data, q, Some(v));
    external_forces_to_bodies(model, data, f_ext)?;
    rnea_pass(model, data, a, true);
    world_quantities(model, data, deriv, v, a, f_ext);
    Ok(())
}

/// Fills the world-frame workspace after an RNEA pass at (q, v, a).
pub(crate) fn world_quantities(
    model: &Model,
    data: &Data,
    d: &mut DerivativeData,
    v: &[f64],
    a: &[f64],
    f_ext: Option<&[Force]>,
) {
    world_composites(model, data, d, v);
    world_accelerations(model, data, d, v, a, f_ext);
}

/// The part of [`world_quantities`] that does not depend on the accelerations or
/// forces, after the kinematics pass at (q, v): world columns `S_k`, `Ṡ_k`, `v⁻`, the
/// composite inertias and Coriolis operators, `I^C S_k` and `B^Cᵀ S_k`.
pub(crate) fn world_composites(model: &Model, data: &Data, d: &mut DerivativeData, v: &[f64]) {
    let nb = model.nbodies();
    for i in 0..nb {
        let xw = &data.x_world[i];
        let inertia = model.bodies[i].inertia.transformed(xw);
        let vw = xw.act_motion(&data.v[i]);
        d.v[i] = vw;
        d.bc_c[i] = coriolis_operator(&inertia, &vw);
        d.ic_c[i] = inertia;
    }
    for i in (0..nb).rev() {
        if let Some(p) = model.parents[i] {
            let (ic, bc) = (d.ic_c[i], d.bc_c[i]);
            d.ic_c[p] += ic;
            d.bc_c[p].0 += bc.0;
            d.bc_c[p].1 += bc.1;
        }
    }
    let nvt = model.nv();
    for i in 0..nb {
        d.ic[i] = d.ic_c[i].to_matrix();
        d.bc[i] = coriolis_matrix(&d.bc_c[i]);
        let joint = &model.joints[i];
        let (va, nv) = (model.v_idx[i], joint.nv());
        let mut vm = match model.parents[i] {
            Some(p) => d.v[p],
            None => Motion::zero(),
        };
        let serial = is_serial(&joint.kind);
        let free = matches!(joint.kind, JointType::Free);
        for &o in &joint_order(free)[..nv] {
            let k = va + o;
            let s = data.x_world[i].act_motion(&data.s[k]);
            d.s[k] = s;
            d.v_pre[k] = vm;
            if serial || (free && o >= 3) {
                let carrier = vm + s * v[k];
                d.s_dot[k] = carrier.cross_motion(&s);
                vm = carrier;
            } else {
                d.s_dot[k] = d.v[i].cross_motion(&s);
            }
            d.ics[k] = d.ic_c[i].mul_motion(&s);
            d.ics_v[k] = d.ics[k].to_vector();
            // B^Cᵀ S = (B₁₁ᵀ S_ang + 2 h × S_lin, 0).
            let (b11, hl) = &d.bc_c[i];
            let bcs = b11.tr_mul(&s.ang) + hl.cross(&s.lin) * 2.0;
            d.bcs[k] = Vec6::new(bcs.x, bcs.y, bcs.z, 0.0, 0.0, 0.0);
            for c in 0..6 {
                d.soa[c * nvt + k] = if c < 3 { s.ang[c] } else { s.lin[c - 3] };
                d.soa[(6 + c) * nvt + k] = d.ics_v[k][c];
            }
            for c in 0..3 {
                d.soa[(12 + c) * nvt + k] = d.bcs[k][c];
            }
        }
    }
}

/// The order in which a joint's dofs are carried in the serial chain: a free joint is
/// "translation, then ball", its linear columns (3..6) first.
#[inline]
fn joint_order(free: bool) -> [usize; 6] {
    if free {
        [3, 4, 5, 0, 1, 2]
    } else {
        [0, 1, 2, 3, 4, 5]
    }
}

/// The part of [`world_quantities`] that depends on the accelerations and forces, after
/// [`world_composites`] and an RNEA pass at (q, v, a): world accelerations and subtree
/// forces, and `a⁻` per dof.
pub(crate) fn world_accelerations(
    model: &Model,
    data: &Data,
    d: &mut DerivativeData,
    v: &[f64],
    a: &[f64],
    f_ext: Option<&[Force]>,
) {
    let nb = model.nbodies();
    for i in 0..nb {
        let xw = &data.x_world[i];
        d.a[i] = xw.act_motion(&data.a[i]);
        d.f[i] = xw.act_force(&data.f[i]);
        d.f_ext[i] = f_ext.map_or(Force::zero(), |fs| fs[i]);
    }
    d.has_ext = d.f_ext.iter().any(|f| *f != Force::zero());
    if d.has_ext {
        for i in (0..nb).rev() {
            if let Some(p) = model.parents[i] {
                let fe = d.f_ext[i];
                d.f_ext[p] += fe;
            }
        }
    }
    let a0 = gravity_acceleration(model);
    for i in 0..nb {
        let joint = &model.joints[i];
        let (va, nv) = (model.v_idx[i], joint.nv());
        let mut am = match model.parents[i] {
            Some(p) => d.a[p],
            None => a0,
        };
        let serial = is_serial(&joint.kind);
        let free = matches!(joint.kind, JointType::Free);
        for &o in &joint_order(free)[..nv] {
            let k = va + o;
            d.a_pre[k] = am;
            if serial || (free && o >= 3) {
                am += d.s[k] * a[k] + d.s_dot[k] * v[k];
            }
        }
    }
}

/// The joint-space inertia `M + diag(armature)` from the world-frame composite inertias
/// of [`world_quantities`] (`M_kj = S_k · I^C_{b(j)} S_j` for k on or above j's joint),
/// at no more cost than the pairs it fills — the CRBA of Featherstone 2008, Table 6.2, in
/// world coordinates.
pub(crate) fn mass_matrix_from_composites(model: &Model, d: &DerivativeData, m: &mut DMatrix<f64>) {
    m.as_mut_slice().fill(0.0);
    for b in 0..model.nbodies() {
        let (va, nv) = (model.v_idx[b], model.joints[b].nv());
        for j in va..va + nv {
            for k in va..=j {
                let x = d.s[k].dot(&d.ics[j]);
                m[(k, j)] = x;
                m[(j, k)] = x;
            }
            let mut anc = model.parents[b];
            while let Some(x) = anc {
                let xa = model.v_idx[x];
                for k in xa..xa + model.joints[x].nv() {
                    let val = d.s[k].dot(&d.ics[j]);
                    m[(k, j)] = val;
                    m[(j, k)] = val;
                }
                anc = model.parents[x];
            }
        }
    }
    for k in 0..model.nv() {
        m[(k, k)] += model.armature[k];
    }
}

/// The derivative terms of one perturbation twist `u` acting on the subtree of body
/// `b`, from a frame moving with `(vm, am)`.
struct Perturbation {
    u: Motion,
    /// `w = u × v⁻` and `α = u × a⁻ − w × v⁻` as plain six-vectors for the inner loops.
    w: Vec6,
    alpha: Vec6,
    psi: Force,
}

impl Perturbation {
    fn new(d: &DerivativeData, b: usize, u: Motion, vm: &Motion, am: &Motion) -> Self {
        let w = u.cross_motion(vm);
        let z = w.cross_motion(vm);
        let alpha = u.cross_motion(am) - z;
        let psi = u.cross_force(&(d.f[b] + d.f_ext[b])) - d.ic_c[b].mul_motion(&alpha) - coriolis_mul(&d.bc_c[b], &w);
        Self { u, w: w.to_vector(), alpha: alpha.to_vector(), psi }
    }
    /// `∂τ_k/∂δ` for a dof k carried by the perturbation, on body l.
    #[inline]
    fn carried(&self, d: &DerivativeData, k: usize, l: usize) -> f64 {
        let inner = -self.alpha.dot(&d.ics_v[k]) - d.bcs[k].dot(&self.w);
        if d.has_ext {
            inner + d.s[k].dot(&self.u.cross_force(&d.f_ext[l]))
        } else {
            inner
        }
    }
}

/// `outs[o][k] = Σ_c rows[c][k] xs[o][c]` for k in `r0..r1` and every output o, with
/// `rows[c]` the rows `first + c` of the component table `soa` (nv entries each): one
/// pass over the rows for all outputs.
#[inline(always)]
fn combine<const N: usize, const K: usize>(
    outs: [&mut [f64]; K],
    xs: [&[f64; N]; K],
    soa: &[f64],
    nv: usize,
    first: usize,
    r0: usize,
    r1: usize,
) {
    let len = r1 - r0;
    let rows: [&[f64]; N] = std::array::from_fn(|c| &soa[(first + c) * nv + r0..][..len]);
    let mut outs = outs.map(|o| &mut o[r0..r1]);
    for i in 0..len {
        let mut acc = [0.0; K];
        for (c, row) in rows.iter().enumerate() {
            let v = row[i];
            for (a, x) in acc.iter_mut().zip(&xs) {
                *a += v * x[c];
            }
        }
        for (o, a) in outs.iter_mut().zip(acc) {
            o[i] = a;
        }
    }
}

/// Fills `dtau_dv` and, with `with_q`, `dtau_dq` from the world-frame workspace.
pub(crate) fn derivative_columns(model: &Model, d: &mut DerivativeData, with_q: bool) {
    columns(model, d, with_q, None);
}

/// [`derivative_columns`] and, in the same pass over the dof pairs, the joint-space
/// inertia `M + diag(armature)` (as [`mass_matrix_from_composites`]) into `m`.
pub(crate) fn derivative_columns_and_mass(model: &Model, d: &mut DerivativeData, with_q: bool, m: &mut DMatrix<f64>) {
    columns(model, d, with_q, Some(m));
}

/// The column pass; on x86-64 CPUs with AVX2 a build of it with 256-bit vectors
/// (same bits: no FMA contraction, same order of operations; tested).
fn columns(model: &Model, d: &mut DerivativeData, with_q: bool, mass: Option<&mut DMatrix<f64>>) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        #[target_feature(enable = "avx2")]
        unsafe fn avx2(model: &Model, d: &mut DerivativeData, with_q: bool, mass: Option<&mut DMatrix<f64>>) {
            columns_body(model, d, with_q, mass)
        }
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { avx2(model, d, with_q, mass) };
    }
    columns_body(model, d, with_q, mass)
}

/// [`columns`] itself, inlined into the baseline and the AVX2 builds.
#[inline(always)]
fn columns_body(model: &Model, d: &mut DerivativeData, with_q: bool, mut mass: Option<&mut DMatrix<f64>>) {
    let n = model.nv();
    d.update_tree(model);
    // Taken out of the workspace while its other fields are read (no allocation).
    let (mut dtau_dq, mut dtau_dv) = (std::mem::take(&mut d.dtau_dq), std::mem::take(&mut d.dtau_dv));
    if with_q {
        dtau_dq.as_mut_slice().fill(0.0);
    }
    dtau_dv.as_mut_slice().fill(0.0);
    if let Some(m) = mass.as_deref_mut() {
        m.as_mut_slice().fill(0.0);
    }
    for b in 0..model.nbodies() {
        let joint = &model.joints[b];
        let (va, nv) = (model.v_idx[b], joint.nv());
        for j in va..va + nv {
            let u = d.s[j];
            let p = if with_q { Some(Perturbation::new(d, b, u, &d.v_pre[j], &d.a_pre[j])) } else { None };
            let beta = d.s_dot[j] - u.cross_motion(&d.v_pre[j]);
            let phi = d.ic_c[b].mul_motion(&beta) + coriolis_mul(&d.bc_c[b], &u);
            let phi6 = [phi.ang.x, phi.ang.y, phi.ang.z, phi.lin.x, phi.lin.y, phi.lin.z];
            let ics6: [f64; 6] = d.ics_v[j].into();
            let dv_col = &mut dtau_dv.as_mut_slice()[j * n..(j + 1) * n];
            let mut dq_col = if with_q { Some(&mut dtau_dq.as_mut_slice()[j * n..(j + 1) * n]) } else { None };
            let mut m_col = mass.as_deref_mut().map(|m| &mut m.as_mut_slice()[j * n..(j + 1) * n]);
            // Strict ancestors: S_k · ψ, S_k · φ (and M_kj = S_k · I^C S_j).
            let psi6 =
                p.as_ref().map(|p| [p.psi.ang.x, p.psi.ang.y, p.psi.ang.z, p.psi.lin.x, p.psi.lin.y, p.psi.lin.z]);
            for &(r0, r1) in &d.anc_runs[b] {
                match (dq_col.as_deref_mut(), &psi6, m_col.as_deref_mut()) {
                    (Some(dq), Some(psi6), Some(m)) => {
                        combine([dv_col, dq, m], [&phi6, psi6, &ics6], &d.soa, n, 0, r0, r1)
                    }
                    (Some(dq), Some(psi6), None) => combine([dv_col, dq], [&phi6, psi6], &d.soa, n, 0, r0, r1),
                    (_, _, Some(m)) => combine([dv_col, m], [&phi6, &ics6], &d.soa, n, 0, r0, r1),
                    _ => combine([dv_col], [&phi6], &d.soa, n, 0, r0, r1),
                }
            }
            // The joint's own dofs.
            for k in va..va + nv {
                dv_col[k] = d.s[k].dot(&phi);
                if let (Some(col), Some(p)) = (dq_col.as_deref_mut(), &p) {
                    col[k] = if joint.kind.carries(j - va, k - va) { p.carried(d, k, b) } else { d.s[k].dot(&p.psi) };
                }
                if let Some(col) = m_col.as_deref_mut() {
                    if k <= j {
                        col[k] = d.s[k].dot(&d.ics[j]);
                    }
                }
            }
            // Strict descendants: (I^C S_k)·β + (B^Cᵀ S_k)·u and the carried q-terms.
            let (r0, r1) = (va + nv, d.dof_end[b]);
            if r1 > r0 {
                let (beta6, u6): ([f64; 6], [f64; 6]) = (beta.to_vector().into(), u.to_vector().into());
                let bu: [f64; 9] = std::array::from_fn(|c| if c < 6 { beta6[c] } else { u6[c - 6] });
                if let (Some(col), Some(p)) = (dq_col, &p) {
                    let aw: [f64; 9] = std::array::from_fn(|c| if c < 6 { -p.alpha[c] } else { -p.w[c - 6] });
                    combine([&mut *dv_col, &mut *col], [&bu, &aw], &d.soa, n, 6, r0, r1);
                    if d.has_ext {
                        for l in b + 1..model.subtree_end[b] {
                            let ext = p.u.cross_force(&d.f_ext[l]);
                            let la = model.v_idx[l];
                            for k in la..la + model.joints[l].nv() {
                                col[k] += d.s[k].dot(&ext);
                            }
                        }
                    }
                } else {
                    combine([dv_col], [&bu], &d.soa, n, 6, r0, r1);
                }
            }
        }
    }
    d.dtau_dq = dtau_dq;
    d.dtau_dv = dtau_dv;
    if let Some(m) = mass {
        for j in 0..n {
            for k in 0..j {
                m[(j, k)] = m[(k, j)];
            }
            m[(j, j)] += model.armature[j];
        }
    }
}

/// `∂τ/∂t` for a translation `t` (parent-frame direction `axis`) of body `b`'s joint
/// placement: a rigid translation of the subtree, seen from the parent's frame.
/// Needs the workspace of [`world_quantities`] and `data.x_world` at the same point.
pub(crate) fn placement_column(model: &Model, data: &Data, d: &DerivativeData, b: usize, axis: &Vec3, out: &mut [f64]) {
    out.iter_mut().for_each(|x| *x = 0.0);
    let (u, vm, am) = match model.parents[b] {
        Some(p) => (data.x_world[p].act_motion(&Motion::new(Vec3::zeros(), *axis)), d.v[p], d.a[p]),
        None => (Motion::new(Vec3::zeros(), *axis), Motion::zero(), gravity_acceleration(model)),
    };
    let pert = Perturbation::new(d, b, u, &vm, &am);
    let mut anc = model.parents[b];
    while let Some(x) = anc {
        let xa = model.v_idx[x];
        for k in xa..xa + model.joints[x].nv() {
            out[k] = d.s[k].dot(&pert.psi);
        }
        anc = model.parents[x];
    }
    for l in b..model.subtree_end[b] {
        let la = model.v_idx[l];
        for k in la..la + model.joints[l].nv() {
            out[k] = pert.carried(d, k, l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::SplitMix64;
    use crate::model::samples::humanoid;

    /// The AVX2 build of the column pass (taken on CPUs that have it) and the baseline
    /// build give the same bits.
    #[test]
    fn dispatched_and_baseline_columns_agree_bitwise() {
        let model = humanoid();
        let mut rng = SplitMix64::new(3);
        let q = model.random_configuration(4);
        let v: Vec<f64> = (0..model.nv()).map(|_| rng.range(-1.0, 1.0)).collect();
        let a: Vec<f64> = (0..model.nv()).map(|_| rng.range(-1.0, 1.0)).collect();
        let mut data = Data::new(&model);
        let mut d1 = DerivativeData::new(&model);
        rnea_derivatives_at(&model, &mut data, &mut d1, q.as_slice(), &v, &a, None).unwrap();
        let mut d2 = d1.clone();
        let (mut m1, mut m2) = (DMatrix::zeros(model.nv(), model.nv()), DMatrix::zeros(model.nv(), model.nv()));
        derivative_columns_and_mass(&model, &mut d1, true, &mut m1);
        columns_body(&model, &mut d2, true, Some(&mut m2));
        assert_eq!((&d1.dtau_dq, &d1.dtau_dv, &m1), (&d2.dtau_dq, &d2.dtau_dv, &m2));
    }
}
