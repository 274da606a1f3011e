//! Backward pass of the constraint stage ([`crate::step::contact`]): the Jacobians of
//! `v⁺ = v_f + M̃⁻¹ Jᵀ f` through the LCP solution, by the clamping-set analysis of
//! DiffDART (Werling et al., §4, eqs. 12–16; App. A.1–A.2) and the collision-geometry
//! terms (§5, eqs. 19–20).
//!
//! Classification of the rows: clamping C (inside the bounds, `w = 0`), at a bound U
//! (a friction row at `±μ f_n`, or a joint-friction row at `±h F_c`), separating S and
//! tied T (`f = 0, w = 0`; differentiated as separating — the one-sided derivative in
//! which the row stays inactive; counted in [`crate::step::ConstraintRecord::tied_rows`]).
//! Friction rows at their bound follow their normal: `f_U = E f_C` with one entry
//! `±μ` per row (App. A.2), so `Ĵ = J_C + Eᵀ J_U` and, inside the mode,
//!
//! ```text
//! M̃ Δv = Ĵᵀ f_C + J_U0ᵀ f_U0,     J_C (v_f + Δv) + β_C = 0,     Â = J_C M̃⁻¹ Ĵᵀ
//! ```
//!
//! Differentiating (`dx` any input direction; v⁺ = v_f + Δv):
//!
//! ```text
//! r1 = ∂(Jᵀ f)/∂q dq + J_Uᵀ dE f_C − ∂(M̃ Δv)/∂x dx          (nv)
//! r2 = −(∂(J_C v⁺)/∂q dq + dβ_C)                               (|C|, without the J_C dv_f term)
//! df_C = Â⁺ (r2 − J_C dv_f − J_C M̃⁻¹ r1) + (I − Â⁺Â) dÂᵀ Â⁺ᵀ f_C
//! dv⁺ = dv_f + M̃⁻¹ (Ĵᵀ df_C + r1)
//!     = (I − G J_C) dv_f + G r2 + (I − G J_C) M̃⁻¹ r1 + M̃⁻¹ Ĵᵀ (I − Â⁺Â) dÂᵀ Â⁺ᵀ f_C,     G = M̃⁻¹ Ĵᵀ Â⁺
//! ```
//!
//! Rows with a diagonal regularization r (the tangential rows of the viscous contact
//! model, `r = 1/(h μ_v)`; the contact rows of the position stage,
//! `r = ρ·(1/m_A + 1/m_B)`) satisfy `J v⁺ + β + r f = 0` when clamping: `Â` gains
//! `R_CC` and `r2` the term `−dR_C f_C` (through μ_v, or the masses, in θ).
//!
//! The pseudo-inverse is that of the standardized solution `f_C = −Â⁺ b_C` (App. A.1:
//! on a rank-deficient `Â` — a box with four coplanar contacts — the forward pass
//! returns the minimum-norm impulses; the last term is the derivative of the
//! pseudo-inverse at constant rank, eq. 17–18, and vanishes when U is empty because
//! then `null(Â) = null(Ĵᵀ)`). `∂(J u)/∂q` and `∂(Jᵀ λ)/∂q` come from
//! [`crate::constraint::ContactRowDerivatives`]; `∂(M̃ w)/∂(q, θ)` from the RNEA
//! derivatives at zero velocity.

use super::derivative_terms::{config_rows, InertiaProductScratch};
use super::record::StepRecord;
use crate::collision::Contact;
use crate::constraint::{ContactRowDerivatives, ContactRows, RowScratch, SparseRows, SubtreeTranslation};
use crate::dynamics::{forward_kinematics, Data};
use crate::error::{Error, Result};
use crate::math::{
    mul_into, reshape, reshape_for_overwrite, reshape_vector, FactoredPseudoInverse, SymmetricEigenWorkspace,
    TallPseudoInverse,
};
use crate::model::{placement_direction, ParamKind, ParamSpec, Topology};
use crate::solver::lcp::{RowBound, RowState, FACTORED_MIN_ROWS};
pub(crate) use crate::step::contact::Stage;
use crate::step::contact::{
    assemble_into, effective_inertia_blocks, regularization_sides, subtree_mass, turn_cones, Assembly, RowKind,
};
use crate::step::islands::{join, root};
use crate::step::trees::{ColumnMajor, TreeCholesky, TreeInertia, Trees};
use crate::step::{BounceGradients, ConstraintRecord, ContactModel, PenetrationRecovery};
use crate::Model;
use nalgebra::{DMatrix, DVector};

/// The linearization of the constraint stage: `dv⁺ = dv_f − G (J_C dv_f) + Q dx`
/// with `x = [q | v | θ]` (τ enters through `v_f` only).
pub(crate) struct ConstraintLinearization {
    /// `G = M̃⁻¹ Ĵᵀ Â⁺` (nv × |C|).
    pub g: DMatrix<f64>,
    /// `J_C` (|C| × nv).
    pub jc: DMatrix<f64>,
    /// The parts of C ([`StagePart`]): their positions in C and their dofs. `G` and
    /// `J_C` are zero outside the blocks `(dofs, positions)` and `(positions, dofs)`.
    pub parts: Vec<(Vec<usize>, Vec<usize>)>,
    /// Direct columns `Q` (nv × (2 nv + np)).
    pub direct: DMatrix<f64>,
    /// The step's impacts (bouncing clamping contacts), for the continuous-time
    /// (saltation) terms; empty with [`BounceGradients::Discrete`].
    pub impacts: Vec<Impact>,
}

/// One impact of a step: a bouncing contact whose normal row clamps, approaching.
///
/// Its guard is the contact's distance φ(q), with gradient `a = ∂φ/∂q` (the normal
/// row of J in tangent coordinates), reached at the approach rate `a·v⁻ < 0`; the
/// impact time moves as `∂t*/∂q = −aᵀ/(a·v⁻)`. The contact's share of the step's
/// velocity change is `M̃⁻¹ J_iᵀ f_i` (its own rows' impulses), so the saltation
/// matrix accounts for the masses and inertias of both bodies (two balls of masses
/// 1 and 3 do not exchange velocities) and for several impacts in one step, each
/// with its own time.
#[derive(Clone, Debug, Default)]
pub(crate) struct Impact {
    /// `a = ∂φ/∂q` (nv).
    pub normal: DVector<f64>,
    /// `a·v⁻` (negative), with `v⁻` the step's starting velocity.
    pub rate: f64,
    /// `v⁻` on the dofs that move the contact's bodies (the support of its rows),
    /// divided by the number of the step's impacts whose supports meet this one's: the
    /// flow direction along which the discrete Jacobians are projected out.
    pub flow: DVector<f64>,
    /// `v⁺ − v⁻` due to this contact: `M̃⁻¹ J_iᵀ f_i` over its three rows.
    pub jump: DVector<f64>,
    /// This contact's share of the constraint stage's response to the free
    /// acceleration `a_f = (v_f − v)/h`: `(I − R) a_f` restricted to its rows,
    /// `M̃⁻¹ Ĵ_iᵀ [Â⁺ (I + E) J_C a_f]_i` with `E` the restitution of the bouncing
    /// normal rows (the reset `R = ∂v⁺/∂v⁻` of the impacts).
    pub accel_jump: DVector<f64>,
}

/// Relative rank tolerance of the pseudo-inverse of `Â`: the forward standardization's
/// ([`crate::solver::lcp::RANK_RTOL`]), so that the backward pass differentiates the
/// minimum-norm solution the forward pass returned, with the same rank.
const RANK_TOL: f64 = crate::solver::lcp::RANK_RTOL;

/// `∂(pair coefficient)/∂θ` of `kind` for contact `c`: the pair uses the mean of its
/// two shapes' coefficients, and a `friction:LINK` / `restitution:LINK` parameter sets
/// every shape of the link. One entry per θ column it touches.
pub(super) fn material_weights<'a>(
    model: &'a Model,
    spec: &'a crate::model::ParamSpec,
    kind: ParamKind,
    c: &Contact,
) -> impl Iterator<Item = (usize, f64)> + 'a {
    let cm = model.collision_model();
    let link = |shape: u32| cm.shapes[shape as usize].body.unwrap_or(model.nbodies());
    let (la, lb) = (link(c.id.shape_a), link(c.id.shape_b));
    spec.entries().iter().filter(move |e| e.kind == kind).filter_map(move |e| {
        let w = 0.5 * (f64::from(u8::from(e.index == la)) + f64::from(u8::from(e.index == lb)));
        (w != 0.0).then_some((e.offset, w))
    })
}

/// `∂(1/m_A + 1/m_B)/∂θ` of contact `c` ([`crate::step::ContactInfo::inverse_mass`]):
/// a `mass:LINK` parameter adds to the subtree mass of every side (the subtree of the
/// side's nearest moving ancestor) that holds the link, `∂(1/m)/∂m_k = −1/m²`. One entry
/// per θ column it touches.
fn inverse_mass_weights<'a>(
    model: &'a Model,
    spec: &'a ParamSpec,
    c: &'a Contact,
) -> impl Iterator<Item = (usize, f64)> + 'a {
    spec.entries().iter().filter(|e| e.kind == ParamKind::Mass).filter_map(move |e| {
        let w: f64 = regularization_sides(model, c)
            .filter(|&side| model.subtree(side).contains(&model.frames()[e.index].body))
            .map(|side| -subtree_mass(model, side).powi(-2))
            .sum();
        (w != 0.0).then_some((e.offset, w))
    })
}

/// Linearizes the constraint stages of `rec` (which holds the constraint record `c`)
/// in their recorded contact modes: the velocity stage, and the position stage when the
/// step has one. Both share one [`StepGeometry`], rebuilt in `geometry` (a workspace's,
/// whose buffers are reused from step to step).
pub(crate) fn linearize_stages(
    rec: &StepRecord,
    c: &ConstraintRecord,
    geometry: &mut StepGeometry,
) -> Result<(ConstraintLinearization, Option<ConstraintLinearization>)> {
    geometry.rebuild(rec, c)?;
    let geometry = &*geometry;
    let velocity = linearize_constraints_with(geometry, rec, c, Stage::Velocity, &c.states)?;
    let position = match &c.correction {
        Some(p) => Some(linearize_constraints_with(geometry, rec, c, Stage::Position, &p.states)?),
        None => None,
    };
    Ok((velocity, position))
}

/// The clamping-set system of one stage of a recorded constraint solve, rebuilt from
/// the record at its start configuration: shared by the stage's linearization (forward
/// mode, [`linearize_constraints_with`]) and its vector-Jacobian product (reverse mode,
/// `StageSystem::vjp_into` in `constraint_vjp.rs`). What it reads is in
/// [`StageView`] (reached through `Deref`); what it computes is in its own
/// [`StageBuffers`], moved in from a workspace and handed back by
/// [`StageSystem::into_buffers`].
pub(crate) struct StageSystem<'a> {
    /// The record, the stage and its rows.
    pub view: StageView<'a>,
    /// `J_C`, `Ĵ`, `Â`, `Â⁺` and the scratch of the VJP.
    pub b: StageBuffers,
}

/// What one stage's system reads: the record, the classification, the step's shared
/// geometry, the stage's rows, velocities and impulses.
#[derive(Clone, Copy)]
pub(crate) struct StageView<'a> {
    pub rec: &'a StepRecord,
    pub c: &'a ConstraintRecord,
    pub stage: Stage,
    pub states: &'a [RowState],
    /// What the step's stages share: kinematics, `M̃`, the contact rows and their
    /// derivative operators.
    pub geometry: &'a StepGeometry,
    /// The stage's rows, rebuilt (and checked against the recorded ones).
    pub asm: &'a Assembly,
    /// The stage's input ("free") and output velocities and its impulses.
    pub v_in: &'a DVector<f64>,
    pub v_out: &'a DVector<f64>,
    pub f: &'a DVector<f64>,
}

impl<'a> std::ops::Deref for StageSystem<'a> {
    type Target = StageView<'a>;
    fn deref(&self) -> &StageView<'a> {
        &self.view
    }
}

/// The matrices and scratch of one stage's system, reused across steps (they grow to
/// the largest stage seen; a backward sweep then allocates nothing per step).
#[derive(Clone, Debug, Default)]
pub(crate) struct StageBuffers {
    /// The clamping rows C, in row order.
    pub clamping: Vec<usize>,
    /// Friction rows at their bound: (row, position of its normal in C, ±μ).
    pub u_friction: Vec<(usize, usize, f64)>,
    /// `J_C`, `Ĵ = J_C + Eᵀ J_U` (|C| × nv) and `M̃⁻¹ Ĵᵀ` (nv × |C|).
    pub jc: DMatrix<f64>,
    pub jhat: DMatrix<f64>,
    pub minv_jhat_t: DMatrix<f64>,
    /// The rank of `Â = J_C M̃⁻¹ Ĵᵀ + R_CC` (the sum of its parts' ranks: `Â` is
    /// block-diagonal over the parts, up to the order of C, and held by them).
    pub rank: usize,
    /// `∂ℓ/∂f = J M̃⁻¹ ∂ℓ/∂v⁺` (one entry per row) when `has_dl_df`.
    pub dl_df: DVector<f64>,
    pub has_dl_df: bool,
    /// The islands of the clamping rows ([`StagePart`]): the first `nparts` entries
    /// (entries beyond are kept storage).
    pub parts: Vec<StagePart>,
    pub nparts: usize,
    /// Scratch of [`StageBuffers::split_parts`]: union–find parents and part slots.
    uf_parent: Vec<usize>,
    uf_slot: Vec<usize>,
    /// Scratch of the VJP (`constraint_vjp.rs`): vectors over the dofs, the clamping
    /// rows, the rows and the contacts.
    pub w: DVector<f64>,
    pub dv: DVector<f64>,
    pub u: DVector<f64>,
    pub t: DVector<f64>,
    pub s: DVector<f64>,
    pub y: DVector<f64>,
    pub p: DVector<f64>,
    pub z: DVector<f64>,
    pub fc: DVector<f64>,
    pub ju: DVector<f64>,
    pub w_phi: Vec<f64>,
    pub w_start: Vec<f64>,
    pub w_next: Vec<f64>,
    pub alpha: Vec<f64>,
    pub lambda: Vec<f64>,
    /// Per placement parameter.
    pub acc: Vec<f64>,
    /// The step's impacts ([`StageSystem::impacts_into`]) and, per impact, the number
    /// of impacts whose flows share a dof with it.
    pub impacts: Vec<Impact>,
    pub shared: Vec<usize>,
}

/// Whether a stage with `nclamp` clamping rows on `nv` dofs keeps `Â⁺` factored
/// ([`StageBuffers::factored`]): more rows than dofs (`Â` is rank-deficient) and
/// either four times as many rows as dofs (from [`FACTORED_MIN_ROWS`] rows on) or at
/// least [`LARGE_STAGE_ROWS`] rows. There the dense decomposition of `Â` (`O(k³)`
/// against `O(k nv²)`) dominates the backward pass, and nalgebra's eigensolver, which
/// the Jacobians once used, gave up on the 768 × 768 `Â` of rank 6 of a box on
/// 256 supporting contacts (a pile of 100 boxes: about 1,200 rows on 600 dofs). The
/// factored form allocates; the dense one reuses `eig`, so
/// that smaller stages (four boxes on the ground: 48 rows on 24 dofs) keep the
/// backward sweep free of allocations.
pub(crate) fn uses_factored_pinv(nclamp: usize, nv: usize) -> bool {
    nclamp > nv && ((nclamp >= FACTORED_MIN_ROWS && nclamp >= 4 * nv) || nclamp >= LARGE_STAGE_ROWS)
}

/// The clamping rows from which a rank-deficient `Â` is always kept factored
/// ([`uses_factored_pinv`]).
pub(crate) const LARGE_STAGE_ROWS: usize = 128;

/// The factors of `M̃` of a step ([`StepGeometry::chol`]), applied tree by tree.
#[derive(Clone, Copy)]
pub(crate) struct MassFactor<'a> {
    chol: &'a TreeCholesky,
    trees: &'a Trees,
}

impl MassFactor<'_> {
    /// `x ← M̃⁻¹ x`.
    pub(crate) fn solve_mut<X: ColumnMajor>(&self, x: &mut X) {
        self.chol.solve_mut(self.trees, x);
    }

    /// `M̃⁻¹ x`.
    pub(crate) fn solve<X: ColumnMajor + Clone>(&self, x: &X) -> X {
        self.chol.solve(self.trees, x)
    }

    /// `x ← C⁻¹ x` with `M̃ = C Cᵀ`; false where `C` is singular.
    pub(crate) fn solve_lower_mut<X: ColumnMajor>(&self, x: &mut X) -> bool {
        self.chol.solve_lower_mut(self.trees, x)
    }

    /// `x ← C⁻¹ x` on the dofs `dofs` (whole trees, increasing; `x` column-major with
    /// `dofs.len()` rows); false where they are not whole trees or `C` is singular.
    pub(crate) fn solve_lower_on(&self, dofs: &[usize], x: &mut [f64]) -> bool {
        self.chol.solve_lower_on(self.trees, dofs, x)
    }
}

/// One island of a stage's clamping rows: the rows whose dofs share a tree, directly or
/// through other clamping rows. `M̃` is block-diagonal over the trees, so `Â` is
/// block-diagonal over the parts (its other entries are exactly zero), and so are `Â⁺`
/// and `G = M̃⁻¹ Ĵᵀ Â⁺` (the columns of a part are zero outside its dofs). Each part's
/// pseudo-inverse is decomposed on its own block, with the rank rule relative to that
/// block: the forward pass's standardized solves are per island too
/// ([`crate::solver::lcp`]), so both differentiate the same minimum-norm impulses. A
/// pile of 100 boxes resting in 25 columns has 25 parts of about 48 rows on 24 dofs
/// instead of one `Â` of 1,200 rows.
#[derive(Clone, Debug, Default)]
pub(crate) struct StagePart {
    /// The part's positions in C (increasing).
    pub rows: Vec<usize>,
    /// The dofs of the trees its rows act on (increasing).
    pub dofs: Vec<usize>,
    /// The part's block of `Â`, and its blocks of `J_C` and `M̃⁻¹ Ĵᵀ` (scratch).
    pub ahat: DMatrix<f64>,
    jc: DMatrix<f64>,
    minv: DMatrix<f64>,
    /// The rank of the block.
    pub rank: usize,
    /// The eigendecomposition of the block (or of its Jordan–Wielandt matrix).
    pub eig: SymmetricEigenWorkspace,
    /// `Â⁺` kept factored in place of `eig` for a large, low-rank block
    /// ([`uses_factored_pinv`], no regularization): `Â = L Nᵀ` with `L = J_C C⁻ᵀ`,
    /// `N = Ĵ C⁻ᵀ`, `M̃ = C Cᵀ` (over the part's dofs), in `O(|C| d²)` instead of `O(|C|³)`.
    pub factored: Option<FactoredPseudoInverse>,
    /// `Â⁺` through a thin QR of `L = J_C C⁻ᵀ` in place of `eig`, for a block with more
    /// rows than dofs, no regularization and no friction row at its bound (`Â = L Lᵀ`)
    /// that is certified to have full rank on its range ([`TallPseudoInverse`]): the
    /// rank rule of `eig` would keep every one of its nonzero eigenvalues. A resting
    /// box's 12 × 12 `Â` of rank 6 costs a 12 × 6 QR instead of an eigendecomposition.
    tall: TallPseudoInverse,
    /// Whether `tall` holds this block's `Â⁺`.
    tall_ok: bool,
    /// Scratch of `tall`: `Lᵀ` (`d × k`) and `L` (`k × d`).
    lt: DMatrix<f64>,
    l: DMatrix<f64>,
    /// Scratch of [`StageBuffers::pinv`]: the part's entries of the input and output.
    scratch: std::cell::RefCell<(Vec<f64>, Vec<f64>)>,
}

impl StagePart {
    /// `out = Â_P⁺ x` (`transpose`: `Â_P⁺ᵀ x`) over the part's rows.
    fn apply(&self, x: &[f64], transpose: bool, out: &mut [f64]) {
        if let Some(p) = &self.factored {
            out.copy_from_slice(p.apply(&DVector::from_column_slice(x), transpose).as_slice());
        } else if self.tall_ok {
            // Â⁺ is symmetric here.
            self.tall.apply(x, out);
        } else {
            self.eig.apply_pseudo_inverse(x, transpose, out);
        }
    }

    /// Factors `Â = L Lᵀ` (`L = J_C C⁻ᵀ` over the part's dofs, from the block `jc`) into
    /// `tall`; true when it is certified to have full rank on its range.
    fn factor_tall(&mut self, chol: MassFactor) -> bool {
        let (k, d) = (self.rows.len(), self.dofs.len());
        reshape_for_overwrite(&mut self.lt, d, k);
        self.jc.transpose_to(&mut self.lt);
        if !chol.solve_lower_on(&self.dofs, self.lt.as_mut_slice()) {
            return false;
        }
        reshape_for_overwrite(&mut self.l, k, d);
        self.lt.transpose_to(&mut self.l);
        self.tall.factor(&self.l)
    }

    /// `Â_P⁺` formed.
    fn pinv_matrix(&self) -> DMatrix<f64> {
        if let Some(p) = &self.factored {
            return p.to_matrix();
        }
        if self.tall_ok {
            return self.tall.to_matrix();
        }
        let mut out = DMatrix::zeros(0, 0);
        self.eig.form_pseudo_inverse(&mut out);
        out
    }
}

impl StageBuffers {
    /// [`StageSystem::has_null_space_term`] from the buffers (`no_contacts`: the stage
    /// has no contact rows).
    pub(crate) fn has_null_space_term(&self, no_contacts: bool) -> bool {
        !self.u_friction.is_empty() && self.rank < self.clamping.len() && !no_contacts
    }

    /// The parts in use.
    pub(crate) fn parts(&self) -> &[StagePart] {
        &self.parts[..self.nparts]
    }

    /// Splits the clamping rows into [`StagePart`]s: union–find over the trees and the
    /// rows (a row joins the trees of its dofs in `j`), parts in the order of their
    /// first row. Reuses the parts' storage.
    fn split_parts(&mut self, trees: &Trees, j: &SparseRows) {
        let (nt, nclamp) = (trees.dofs.len(), self.clamping.len());
        let parent = &mut self.uf_parent;
        parent.clear();
        parent.extend(0..nt + nclamp);
        for (i, &r) in self.clamping.iter().enumerate() {
            for &c in j.cols(r) {
                join(parent, nt + i, trees.of_dof[c]);
            }
        }
        let slot = &mut self.uf_slot;
        slot.clear();
        slot.resize(nt + nclamp, usize::MAX);
        self.nparts = 0;
        for i in 0..nclamp {
            let k = root(parent, nt + i);
            if slot[k] == usize::MAX {
                slot[k] = self.nparts;
                if self.parts.len() == self.nparts {
                    self.parts.push(StagePart::default());
                }
                let p = &mut self.parts[self.nparts];
                p.rows.clear();
                p.dofs.clear();
                self.nparts += 1;
            }
            self.parts[slot[k]].rows.push(i);
        }
        for (t, dofs) in trees.dofs.iter().enumerate() {
            let k = root(parent, t);
            if slot[k] != usize::MAX {
                self.parts[slot[k]].dofs.extend_from_slice(dofs);
            }
        }
        for p in &mut self.parts[..self.nparts] {
            p.dofs.sort_unstable();
        }
    }

    /// `out −= Âᵀ y` (`out`, `y`: |C|), part by part.
    pub(crate) fn sub_ahat_tr_mul(&self, y: &DVector<f64>, out: &mut DVector<f64>) {
        for p in self.parts() {
            for (c, &j) in p.rows.iter().enumerate() {
                let dot: f64 = p.rows.iter().enumerate().map(|(a, &i)| p.ahat[(a, c)] * y[i]).sum();
                out[j] -= dot;
            }
        }
    }

    /// `out = Â⁺ x` (`transpose`: `Â⁺ᵀ x`), `out` resized to |C|: part by part.
    pub(crate) fn pinv(&self, x: &DVector<f64>, transpose: bool, out: &mut DVector<f64>) {
        reshape_vector(out, self.clamping.len());
        for p in self.parts() {
            let mut scratch = p.scratch.borrow_mut();
            let (xs, ys) = &mut *scratch;
            xs.clear();
            xs.extend(p.rows.iter().map(|&i| x[i]));
            ys.clear();
            ys.resize(p.rows.len(), 0.0);
            p.apply(xs, transpose, ys);
            for (&i, &y) in p.rows.iter().zip(ys.iter()) {
                out[i] = y;
            }
        }
    }
}

/// The parts of a recorded step's constraint system that its stages share, rebuilt
/// once per step at its start configuration: kinematics, the factors of `M̃`, the
/// velocity and position stages' rows, the contact rows and their derivative
/// operators, the placement parameters as subtree translations, and the scratch of
/// the adjoint products. Kept across the steps of a backward sweep
/// ([`StepGeometry::rebuild`] reuses every buffer).
pub(crate) struct StepGeometry {
    /// The tree of the model the buffers were sized for: a model of other topology, even
    /// with the same numbers of bodies and dofs, gets fresh buffers (its [`Trees`]).
    topology: Topology,
    /// Kinematics at the step's start configuration.
    pub data: Data,
    /// The model's trees (the units of the stages' parts, [`StagePart`]).
    pub trees: Trees,
    /// `M̃` by trees and its factors (empty before the first rebuild).
    tree_inertia: TreeInertia,
    chol: TreeCholesky,
    /// The velocity stage's rows, rebuilt from the record.
    pub asm: Assembly,
    /// The position stage's rows (when the record has a position stage).
    pub pos_asm: Assembly,
    /// The contact rows and their derivative operators at q.
    pub rows: ContactRows,
    pub rd: ContactRowDerivatives,
    /// The `placement:*` scalars of θ (their θ indices) as subtree translations.
    pub pcols: Vec<usize>,
    pub moves: Vec<SubtreeTranslation>,
    /// Scratch of the inertia-product derivatives and of the row products.
    pub inertia: std::cell::RefCell<InertiaProductScratch>,
    pub row_scratch: std::cell::RefCell<RowScratch>,
}

impl StepGeometry {
    /// Buffers for records of `model`, to be filled by [`StepGeometry::rebuild`].
    pub(crate) fn empty(model: &Model) -> StepGeometry {
        StepGeometry {
            topology: Topology::of(model),
            data: Data::new(model),
            trees: Trees::new(model),
            tree_inertia: TreeInertia::default(),
            chol: TreeCholesky::default(),
            asm: Assembly::default(),
            pos_asm: Assembly::default(),
            rows: ContactRows::default(),
            rd: ContactRowDerivatives::default(),
            pcols: vec![],
            moves: vec![],
            inertia: std::cell::RefCell::new(InertiaProductScratch::new(model)),
            row_scratch: std::cell::RefCell::new(RowScratch::default()),
        }
    }

    /// Rebuilds the geometry of `rec` (constraint record `c`) in place; allocates only
    /// where a buffer must grow (more contacts or rows than before, another model size).
    pub(crate) fn rebuild(&mut self, rec: &StepRecord, c: &ConstraintRecord) -> Result<()> {
        let model: &Model = &rec.model;
        let h = rec.dt;
        let q = rec.q.as_slice();
        // The topology fixes the numbers of bodies and dofs too: the buffers fit.
        if !self.topology.refresh(model) {
            *self = StepGeometry::empty(model);
        }
        forward_kinematics(model, &mut self.data, q)?;
        self.asm.contacts.clone_from(&c.contacts);
        assemble_into(
            &mut self.asm,
            &mut self.rows,
            model,
            &self.data,
            q,
            rec.v.as_slice(),
            c.v_free.as_slice(),
            h,
            &c.options,
            &c.added_rows,
            c.relaxed,
        )?;
        // The NCP solver's sliding cones, in the slip frames the record holds them in.
        turn_cones(&mut self.asm, &mut self.rows, &c.cone_frames);
        effective_inertia_blocks(model, &mut self.data, h, &self.trees, &mut self.tree_inertia);
        self.chol.refactor(&self.tree_inertia)?;
        self.rd.rebuild(model, &self.data, &c.contacts, &self.rows)?;
        // Joint placements (θ) translate subtrees: their columns of the row derivatives.
        self.pcols.clear();
        self.moves.clear();
        if !c.contacts.is_empty() {
            placement_translations(model, &self.data, &rec.params, &mut self.pcols, &mut self.moves);
        }
        if c.correction.is_some() {
            self.pos_asm.copy_from(&self.asm);
            self.pos_asm.position_stage(h, &c.options);
        }
        Ok(())
    }

    /// The Cholesky factors of `M̃`.
    pub(crate) fn chol(&self) -> MassFactor<'_> {
        MassFactor { chol: &self.chol, trees: &self.trees }
    }
}

/// One clamping row's share of `r2 = −(∂(J_C v⁺)/∂x + ∂β_C/∂x)` (see the module doc):
/// the row of `r2` is `−(phi·∂φ_c/∂x + start·∂(J_r v)/∂x + next·∂(J_r v⁺)/∂x)` in the q
/// and placement columns, `−start·J_r` in the v columns, `−slope` at a joint-limit
/// row's dof, plus the θ entries of [`StageView::row_theta`] as they stand. Shared by
/// the forward and the reverse linearizations so that both differentiate the same bias.
pub(crate) struct RowTerms {
    /// The row's contact (contact rows only).
    pub contact: Option<usize>,
    /// Coefficient of `∂φ/∂x` of the contact: the bias slope `s/h`.
    pub phi: f64,
    /// Coefficient of `∂(J_r v)/∂x` at the step's start velocity and of `J_r` in the v
    /// columns: the restitution of a bouncing normal row.
    pub start: f64,
    /// Coefficient of `∂(J_r v⁺)/∂x` at the stage's output velocity.
    pub next: f64,
    /// A joint-limit row's `(dof, ±∂β/∂φ)`.
    pub dof: Option<(usize, f64)>,
}

impl<'a> StageSystem<'a> {
    /// Rebuilds the stage's system from the record in `buffers`, classified by `states`
    /// (the recorded classification, or another one for the loss-driven strategy; a
    /// friction row at its bound must have a clamping normal row). With
    /// `adjoint = Some(∂ℓ/∂v⁺)` it also holds `∂ℓ/∂f = J M̃⁻¹ ∂ℓ/∂v⁺` for every row
    /// (DiffDART §4.4). `geometry` must have been rebuilt for `rec`.
    pub(crate) fn new(
        geometry: &'a StepGeometry,
        rec: &'a StepRecord,
        c: &'a ConstraintRecord,
        stage: Stage,
        states: &'a [RowState],
        adjoint: Option<&DVector<f64>>,
        buffers: StageBuffers,
    ) -> Result<StageSystem<'a>> {
        let model: &Model = &rec.model;
        let nv = model.nv();
        let (v_in, v_out, f, asm) = match (stage, &c.correction) {
            (Stage::Velocity, _) => (&c.v_free, &rec.v_next, &c.impulses, &geometry.asm),
            (Stage::Position, Some(p)) => (&rec.v_next, &p.v_position, &p.impulses, &geometry.pos_asm),
            (Stage::Position, None) => {
                return Err(Error::Numerical {
                    algorithm: "contact backward",
                    detail: "the record has no position stage to differentiate".into(),
                })
            }
        };
        if asm.rows != c.rows {
            return Err(Error::Numerical {
                algorithm: "contact backward",
                detail: "the constraint rows could not be rebuilt from the record".into(),
            });
        }
        if states.len() != asm.rows.len() {
            return Err(Error::Dimension { what: "row classification", expected: asm.rows.len(), got: states.len() });
        }
        let view = StageView { rec, c, stage, states, geometry, asm, v_in, v_out, f };
        let mut b = buffers;
        let chol = geometry.chol();
        b.has_dl_df = false;
        if let Some(g) = adjoint {
            crate::error::check_vector("dl/dv+", g.as_slice(), nv)?;
            reshape_vector(&mut b.w, nv);
            b.w.copy_from(g);
            chol.solve_mut(&mut b.w);
            reshape_vector(&mut b.dl_df, asm.rows.len());
            for r in 0..asm.rows.len() {
                b.dl_df[r] = asm.j.dot(r, b.w.as_slice());
            }
            b.has_dl_df = true;
        }

        // Classification: C (positions), U friction rows (row, normal row, ±μ), U0 constant.
        b.clamping.clear();
        b.clamping.extend((0..asm.rows.len()).filter(|&r| states[r] == RowState::Clamping));
        b.u_friction.clear();
        for (r, s) in states.iter().enumerate() {
            if let (RowState::AtBound { sign }, RowBound::Friction { normal, mu }) = (s, asm.bounds[r]) {
                match b.clamping.iter().position(|&x| x == normal) {
                    Some(ci) => b.u_friction.push((r, ci, f64::from(*sign) * mu)),
                    // A friction row "at its bound" under a normal row that is not clamping
                    // sits in a collapsed box: f_n = 0 and stays 0 inside the mode (the normal
                    // separates, or is tied and differentiated as separating), so its impulse
                    // ±μ f_n is identically zero — exactly a separating row, which contributes
                    // nothing to the linearization. Only a nonzero impulse there would be an
                    // inconsistent record.
                    None if f[r] == 0.0 && f[normal] == 0.0 => {}
                    None => {
                        return Err(Error::Numerical {
                            algorithm: "contact backward",
                            detail: format!(
                                "friction row {r} carries an impulse {:e} at its bound but its normal row {normal} \
                                 is not clamping ({:?}, f_n = {:e})",
                                f[r], states[normal], f[normal]
                            ),
                        })
                    }
                }
            }
        }
        let nclamp = b.clamping.len();
        reshape(&mut b.jc, nclamp, nv);
        for (i, &r) in b.clamping.iter().enumerate() {
            for (k, x) in asm.j.row(r) {
                b.jc[(i, k)] = x;
            }
        }
        reshape_for_overwrite(&mut b.jhat, nclamp, nv);
        b.jhat.copy_from(&b.jc);
        for &(r, ci, e) in &b.u_friction {
            for (k, x) in asm.j.row(r) {
                b.jhat[(ci, k)] += x * e;
            }
        }
        reshape_for_overwrite(&mut b.minv_jhat_t, nv, nclamp);
        b.jhat.transpose_to(&mut b.minv_jhat_t);
        chol.solve_mut(&mut b.minv_jhat_t);
        // Â part by part: its other entries are exactly zero (`math::mul_into` on the
        // part's blocks adds the products of the whole product in its order, without the
        // zero terms).
        b.split_parts(&geometry.trees, &asm.j);
        for p in &mut b.parts[..b.nparts] {
            let (k, d) = (p.rows.len(), p.dofs.len());
            reshape_for_overwrite(&mut p.jc, k, d);
            reshape_for_overwrite(&mut p.minv, d, k);
            for (c, &dof) in p.dofs.iter().enumerate() {
                for (a, &i) in p.rows.iter().enumerate() {
                    p.jc[(a, c)] = b.jc[(i, dof)];
                    p.minv[(c, a)] = b.minv_jhat_t[(dof, i)];
                }
            }
            reshape_for_overwrite(&mut p.ahat, k, k);
            mul_into(&p.jc, &p.minv, &mut p.ahat);
            for (a, &i) in p.rows.iter().enumerate() {
                p.ahat[(a, a)] += asm.regularization[b.clamping[i]];
            }
        }
        let failed = || Error::Numerical {
            algorithm: "contact backward",
            detail: "the pseudo-inverse of A_CC failed (a non-finite matrix or no eigendecomposition)".into(),
        };
        let StageBuffers { parts, nparts, jc, jhat, clamping, u_friction, .. } = &mut b;
        for p in &mut parts[..*nparts] {
            let k = p.rows.len();
            p.factored = None;
            p.tall_ok = false;
            let unregularized = p.rows.iter().all(|&i| asm.regularization[clamping[i]] == 0.0);
            let bound = u_friction.iter().any(|&(_, ci, _)| p.rows.binary_search(&ci).is_ok());
            if !p.dofs.is_empty() && uses_factored_pinv(k, p.dofs.len()) && unregularized {
                // Â_P = J_P M̃⁻¹ Ĵ_Pᵀ = (J_P C⁻ᵀ)(Ĵ_P C⁻ᵀ)ᵀ with M̃ = C Cᵀ, over the part's
                // dofs (C is block-diagonal over the trees: the other columns are zero).
                let factor = |rows: &DMatrix<f64>| {
                    let mut t = rows.select_rows(p.rows.iter()).transpose();
                    chol.solve_lower_mut(&mut t).then(|| t.select_rows(p.dofs.iter()).transpose())
                };
                let l = factor(jc).ok_or_else(failed)?;
                let n = if bound { Some(factor(jhat).ok_or_else(failed)?) } else { None };
                let f = FactoredPseudoInverse::new(&l, n.as_ref(), RANK_TOL).ok_or_else(failed)?;
                p.rank = f.rank();
                p.factored = Some(f);
            } else if !p.dofs.is_empty() && k > p.dofs.len() && unregularized && !bound && p.factor_tall(chol) {
                p.rank = p.tall.rank();
                p.tall_ok = true;
            } else {
                p.rank = p.eig.factor_pseudo_inverse(&p.ahat, RANK_TOL).ok_or_else(failed)?;
            }
        }
        b.rank = b.parts().iter().map(|p| p.rank).sum();
        Ok(StageSystem { view, b })
    }

    /// The buffers, for the next step's system.
    pub(crate) fn into_buffers(self) -> StageBuffers {
        self.b
    }

    /// `∂ℓ/∂f` when an adjoint was given.
    pub(crate) fn dl_df(&self) -> Option<&DVector<f64>> {
        self.b.has_dl_df.then_some(&self.b.dl_df)
    }

    /// The clamping impulses `f_C`.
    pub(crate) fn clamped_impulses(&self) -> DVector<f64> {
        DVector::from_iterator(self.b.clamping.len(), self.b.clamping.iter().map(|&r| self.f[r]))
    }

    /// The rank-deficient sliding case: `N = (I − Â⁺Â) dÂᵀ Â⁺ᵀ f_C` is nonzero only when
    /// friction rows sit at their bounds and `Â` is rank deficient (module doc).
    pub(crate) fn has_null_space_term(&self) -> bool {
        self.b.has_null_space_term(self.c.contacts.is_empty())
    }

    /// `z = Â⁺ᵀ f_C`, `u = M̃⁻¹ J_Cᵀ z` and the contact-row impulses `λ` holding z (the
    /// pieces of `dÂᵀ z` in the null-space term).
    pub(crate) fn null_space_pieces(&self) -> (DVector<f64>, DVector<f64>, Vec<f64>) {
        let mut z = DVector::zeros(0);
        self.b.pinv(&self.clamped_impulses(), true, &mut z);
        let u = self.geometry.chol().solve(&(self.b.jc.transpose() * &z));
        let mut lambda = vec![0.0; 3 * self.c.contacts.len()];
        for (i, &r) in self.b.clamping.iter().enumerate() {
            if r < lambda.len() {
                lambda[r] = z[i];
            }
        }
        (z, u, lambda)
    }

    /// The step's impacts for the continuous-time bounce gradients (empty with
    /// [`BounceGradients::Discrete`] or when no clamping contact bounces).
    pub(crate) fn impacts(&mut self) -> Vec<Impact> {
        let n = self.impacts_into();
        let mut out = std::mem::take(&mut self.b.impacts);
        out.truncate(n);
        out
    }

    /// [`Self::impacts`] into the buffers: the first returned-count entries of
    /// `self.b.impacts` (entries beyond are kept storage). No allocation once the
    /// buffers have held as many impacts.
    pub(crate) fn impacts_into(&mut self) -> usize {
        let view = self.view;
        let bounces = view
            .asm
            .info
            .iter()
            .enumerate()
            .any(|(i, info)| info.bounce && view.states.get(3 * i) == Some(&RowState::Clamping));
        if view.c.options.bounce_gradients != BounceGradients::ContinuousTime || !bounces {
            return 0;
        }
        impacts_into(view, &mut self.b)
    }
}

impl<'a> StageView<'a> {
    /// The model of the record.
    pub(crate) fn model(&self) -> &'a Model {
        &self.rec.model
    }

    /// The terms of clamping row `r` in `r2` ([`RowTerms`]).
    pub(crate) fn row_terms(&self, r: usize) -> RowTerms {
        let (c, asm) = (self.c, self.asm);
        let (h, erp) = (self.rec.dt, c.options.erp);
        let mut t = RowTerms { contact: None, phi: 0.0, start: 0.0, next: 0.0, dof: None };
        match asm.rows[r] {
            RowKind::ContactNormal { contact } => {
                let info = &asm.info[contact];
                // A relaxed step's penetrating contacts have the constant β = 0.
                let s = if self.stage == Stage::Velocity && c.relaxed && asm.gap[r] < 0.0 {
                    0.0
                } else {
                    bias_slope(self.stage, c.options.penetration, info.bounce, asm.gap[r], erp)
                };
                t.contact = Some(contact);
                t.phi = s / h;
                t.start = if info.bounce { info.restitution } else { 0.0 };
                t.next = 1.0;
            }
            RowKind::ContactFriction { contact, .. } => {
                t.contact = Some(contact);
                t.next = 1.0;
            }
            // β(φ) with φ = q − lo (lower) or hi − q (upper): ∂β/∂q = ±∂β/∂φ, for rows
            // created near the limit, predicted or added by the re-solve loop alike.
            RowKind::JointLower { dof } | RowKind::JointUpper { dof } => {
                let sign = if matches!(asm.rows[r], RowKind::JointLower { .. }) { 1.0 } else { -1.0 };
                let slope = match (self.stage, c.options.penetration) {
                    // The velocity recovery's limit bias, capped at v_max (its slope from `limit_bias`).
                    (Stage::Velocity, PenetrationRecovery::Velocity) => asm.bias_slope[r],
                    _ => bias_slope(self.stage, c.options.penetration, false, asm.gap[r], erp) / h,
                };
                t.dof = Some((dof, sign * slope));
            }
            // Constant Jacobian and bias (the limit is not a parameter).
            RowKind::VelocityUpper { .. } | RowKind::VelocityLower { .. } | RowKind::JointFriction { .. } => {}
        }
        t
    }

    /// Calls `add(index in θ, value)` for the θ entries of clamping row `r` in `r2`,
    /// added as they stand: the material and mass derivatives of the bias and of the
    /// regularization.
    pub(crate) fn row_theta(&self, r: usize, mut add: impl FnMut(usize, f64)) {
        let (model, c, asm) = (self.model(), self.c, self.asm);
        let params = &self.rec.params;
        if params.is_empty() {
            return;
        }
        // The regularization ρ·(1/m_A + 1/m_B) of a contact row (ContactOptions::compliance:
        // the position stage's normal rows, the velocity stage's compliant rows): −dR g.
        // A sliding NCP cone's row across the slip adds its cone compliance, whose impulse is 0.
        if let RowKind::ContactNormal { contact } | RowKind::ContactFriction { contact, .. } = asm.rows[r] {
            let rho = c.options.compliance(asm.rows[r], self.stage);
            if rho > 0.0 {
                for (col, w) in inverse_mass_weights(model, params, &c.contacts[contact]) {
                    add(col, -rho * w * self.f[r]);
                }
            }
        }
        match asm.rows[r] {
            RowKind::ContactNormal { contact } => {
                let info = &asm.info[contact];
                if info.bounce {
                    for (col, w) in material_weights(model, params, ParamKind::Restitution, &c.contacts[contact]) {
                        add(col, -info.approach_velocity * w);
                    }
                }
            }
            RowKind::ContactFriction { contact, .. } => {
                // Viscous rows: w = J v⁺ + f/(h μ_v); d(1/(h μ_v))/dμ_v = −1/(h μ_v²).
                let mu_v = c.info[contact].viscous_friction;
                if asm.regularization[r] > 0.0 && c.options.model == ContactModel::Viscous {
                    let h = self.rec.dt;
                    for (col, w) in material_weights(model, params, ParamKind::ViscousFriction, &c.contacts[contact]) {
                        add(col, w * self.f[r] / (h * mu_v * mu_v));
                    }
                }
            }
            _ => {}
        }
    }

    /// True when some row bounces (its bias has the start-velocity term).
    pub(crate) fn bounces(&self) -> bool {
        self.asm.info.iter().any(|i| i.bounce)
    }
}

/// Linearizes one stage of the constraint record `c` of `rec` with the row
/// classification `states` (a friction row at its bound must have a clamping normal
/// row); `geometry` rebuilt for `rec`.
fn linearize_constraints_with(
    geometry: &StepGeometry,
    rec: &StepRecord,
    c: &ConstraintRecord,
    stage: Stage,
    states: &[RowState],
) -> Result<ConstraintLinearization> {
    // The parts' `Â⁺` are those of the reverse path (`StageSystem::new`): one
    // decomposition per part, the same in the Jacobians and the VJPs.
    let mut sys = StageSystem::new(geometry, rec, c, stage, states, None, StageBuffers::default())?;
    let model: &Model = &rec.model;
    let (nv, np, h) = (model.nv(), rec.params.len(), rec.dt);
    let nx = 2 * nv + np;
    let q = rec.q.as_slice();
    let nc = c.contacts.len();
    let (asm, data, rows, rd, chol) = (sys.asm, &geometry.data, &geometry.rows, &geometry.rd, geometry.chol());
    let (clamping, pcols, moves, f) = (&sys.b.clamping, &geometry.pcols, &geometry.moves, sys.f);
    let nclamp = clamping.len();
    // G = M̃⁻¹ Ĵᵀ Â⁺: a part's columns are zero outside its dofs.
    let parts: Vec<(Vec<usize>, Vec<usize>)> = sys.b.parts().iter().map(|p| (p.rows.clone(), p.dofs.clone())).collect();
    let mut g = DMatrix::zeros(nv, nclamp);
    for p in sys.b.parts() {
        let gp = block(&sys.b.minv_jhat_t, &p.dofs, &p.rows) * p.pinv_matrix();
        scatter_block(&mut g, &p.dofs, &p.rows, &gp);
    }
    let add_columns = |dst: &mut DMatrix<f64>, src: &DMatrix<f64>| {
        for (i, &col) in pcols.iter().enumerate() {
            let mut d = dst.column_mut(2 * nv + col);
            d += src.column(i);
        }
    };
    let v_next = sys.v_out.as_slice();
    let dv: DVector<f64> = sys.v_out - sys.v_in;

    // r1 = ∂(Jᵀf)/∂q dq − ∂(M̃Δv)/∂(q,θ)  (friction-coefficient columns: none in θ yet).
    let mut r1 = DMatrix::zeros(nv, nx);
    let f_contact = &f.as_slice()[..3 * nc];
    if nc > 0 {
        let jtf = rd.jtf_q(model, data, rows, f_contact)?;
        r1.columns_mut(0, nv).copy_from(&jtf);
    }
    {
        let mut inertia = geometry.inertia.borrow_mut();
        inertia.compute(model, &rec.params, q, dv.as_slice(), h)?;
        r1.columns_mut(0, nv).zip_apply(&inertia.dq, |x, y| *x -= y);
        if np > 0 {
            r1.columns_mut(2 * nv, np).copy_from(&(-&inertia.dt));
        }
    }
    if np > 0 {
        if !moves.is_empty() {
            add_columns(&mut r1, &rd.jtf_translation(model, data, rows, f_contact, moves)?);
        }
        // J_Uᵀ dE f_C: a friction row at its bound carries ±μ f_n.
        for &(r, ci, e) in &sys.b.u_friction {
            let RowKind::ContactFriction { contact, .. } = asm.rows[r] else { continue };
            let fn_ = f[clamping[ci]];
            let sign = e.signum();
            for (col, w) in material_weights(model, &rec.params, ParamKind::Friction, &c.contacts[contact]) {
                let mut dst = r1.column_mut(2 * nv + col);
                dst += dense_row(&asm.j, r) * (sign * fn_ * w);
            }
        }
    }

    // r2 = −(∂(J_C v⁺)/∂q dq + dβ_C).
    let jv_next = if nc > 0 { Some(rd.jv_q(model, data, rows, v_next)?) } else { None };
    let jv_start = if sys.bounces() { Some(rd.jv_q(model, data, rows, rec.v.as_slice())?) } else { None };
    let dphi = if nc > 0 { Some(rd.distance_q()) } else { None };
    // ∂(J v⁺)/∂θ, ∂(J v)/∂θ (bounces) and ∂φ/∂θ along the placements: (3nc | nc) × |moves|.
    let (jv_next_t, jv_start_t, dphi_t) = if moves.is_empty() {
        (DMatrix::zeros(3 * nc, 0), DMatrix::zeros(3 * nc, 0), DMatrix::zeros(nc, 0))
    } else {
        let start = match jv_start {
            Some(_) => rd.jv_translation(model, data, rows, rec.v.as_slice(), moves)?,
            None => DMatrix::zeros(3 * nc, moves.len()),
        };
        (rd.jv_translation(model, data, rows, v_next, moves)?, start, rd.distance_translation(model, moves))
    };
    let mut r2 = DMatrix::zeros(nclamp, nx);
    for (i, &r) in clamping.iter().enumerate() {
        let t = sys.row_terms(r);
        let mut row_q = DVector::zeros(nv);
        let mut row_v = DVector::zeros(nv);
        if let Some(contact) = t.contact {
            if t.phi != 0.0 {
                row_q += dphi.as_ref().expect("contacts exist").row(contact).transpose() * t.phi;
            }
            if t.start != 0.0 {
                row_q += jv_start.as_ref().expect("bounce rows computed").row(r).transpose() * t.start;
                row_v += dense_row(&asm.j, r) * t.start;
            }
            row_q += jv_next.as_ref().expect("contacts exist").row(r).transpose() * t.next;
            for (m, &col) in pcols.iter().enumerate() {
                r2[(i, 2 * nv + col)] -=
                    dphi_t[(contact, m)] * t.phi + jv_start_t[(r, m)] * t.start + jv_next_t[(r, m)] * t.next;
            }
        }
        if let Some((dof, slope)) = t.dof {
            row_q[dof] += slope;
        }
        sys.row_theta(r, |col, x| r2[(i, 2 * nv + col)] += x);
        r2.view_mut((i, 0), (1, nv)).copy_from(&(-row_q).transpose());
        r2.view_mut((i, nv), (1, nv)).copy_from(&(-row_v).transpose());
    }

    // Q = G r2 + (I − G J_C) M̃⁻¹ r1 + M̃⁻¹ Ĵᵀ N.
    let minv_r1 = chol.solve(&r1);
    let mut direct = minv_r1.clone();
    // Only the columns of x that reach a part (its dofs' q and v columns, the θ columns
    // that move it): the others are zero in both r2[rows] and M̃⁻¹r1[dofs].
    let row_parts: Vec<&Vec<usize>> = parts.iter().map(|(rows, _)| rows).collect();
    let dof_parts: Vec<&Vec<usize>> = parts.iter().map(|(_, dofs)| dofs).collect();
    let part_cols = nonzero_columns(&[(&r2, &row_parts), (&minv_r1, &dof_parts)]);
    for ((prows, pdofs), cols) in parts.iter().zip(&part_cols) {
        let jc_p = block(&sys.b.jc, prows, pdofs);
        let inner = block(&r2, prows, cols) - jc_p * block(&minv_r1, pdofs, cols);
        let add = block(&g, pdofs, prows) * inner;
        add_block(&mut direct, pdofs, cols, &add);
    }
    if sys.has_null_space_term() {
        // N = (I − Â⁺Â) dÂᵀ z,  z = Â⁺ᵀ f_C,  u = M̃⁻¹ J_Cᵀ z:
        // dÂᵀ z = dĴ u − Ĵ M̃⁻¹ ∂(M̃u) + Ĵ M̃⁻¹ ∂(J_Cᵀ z).
        let (_, u, lambda) = sys.null_space_pieces();
        let jv_u = rd.jv_q(model, data, rows, u.as_slice())?;
        let jv_u_t = if moves.is_empty() {
            DMatrix::zeros(3 * nc, 0)
        } else {
            rd.jv_translation(model, data, rows, u.as_slice(), moves)?
        };
        let mut dahat_t = DMatrix::zeros(nclamp, nx);
        for (i, &r) in clamping.iter().enumerate() {
            if r < 3 * nc {
                let mut dst = dahat_t.view_mut((i, 0), (1, nv));
                dst += jv_u.row(r);
                for (m, &col) in pcols.iter().enumerate() {
                    dahat_t[(i, 2 * nv + col)] += jv_u_t[(r, m)];
                }
            }
        }
        let ju = asm.j.mul(u.as_slice());
        for &(r, ci, e) in &sys.b.u_friction {
            let mut dst = dahat_t.view_mut((ci, 0), (1, nv));
            dst += jv_u.row(r) * e;
            for (m, &col) in pcols.iter().enumerate() {
                dahat_t[(ci, 2 * nv + col)] += jv_u_t[(r, m)] * e;
            }
            if let RowKind::ContactFriction { contact, .. } = asm.rows[r] {
                for (col, w) in material_weights(model, &rec.params, ParamKind::Friction, &c.contacts[contact]) {
                    dahat_t[(ci, 2 * nv + col)] += e.signum() * ju[r] * w;
                }
            }
        }
        let mut inner = DMatrix::zeros(nv, nx);
        inner.columns_mut(0, nv).copy_from(&rd.jtf_q(model, data, rows, &lambda)?);
        {
            let mut inertia = geometry.inertia.borrow_mut();
            inertia.compute(model, &rec.params, q, u.as_slice(), h)?;
            inner.columns_mut(0, nv).zip_apply(&inertia.dq, |x, y| *x -= y);
            if np > 0 {
                let mut cols = inner.columns_mut(2 * nv, np);
                cols -= &inertia.dt;
            }
        }
        if !moves.is_empty() {
            add_columns(&mut inner, &rd.jtf_translation(model, data, rows, &lambda, moves)?);
        }
        dahat_t += &sys.b.jhat * chol.solve(&inner);
        // N = (I − Â⁺Â) dÂᵀ z, part by part.
        for p in sys.b.parts() {
            let pinv_ahat = match &p.factored {
                Some(f) => f.apply_matrix(&p.ahat),
                None => p.pinv_matrix() * &p.ahat,
            };
            let d_p = dahat_t.select_rows(p.rows.iter());
            let n = &d_p - pinv_ahat * &d_p;
            let add = block(&sys.b.minv_jhat_t, &p.dofs, &p.rows) * n;
            for (a, &dof) in p.dofs.iter().enumerate() {
                let mut row = direct.row_mut(dof);
                row += add.row(a);
            }
        }
    }

    let impacts = sys.impacts();
    Ok(ConstraintLinearization { g, jc: sys.into_buffers().jc, parts, direct, impacts })
}

/// Row `r` of `j` as a dense vector.
fn dense_row(j: &SparseRows, r: usize) -> DVector<f64> {
    let mut out = DVector::zeros(j.ncols());
    for (k, x) in j.row(r) {
        out[k] = x;
    }
    out
}

/// The block `m[rows, cols]`.
fn block(m: &DMatrix<f64>, rows: &[usize], cols: &[usize]) -> DMatrix<f64> {
    DMatrix::from_fn(rows.len(), cols.len(), |a, b| m[(rows[a], cols[b])])
}

/// Per part `p`, the columns `c` (increasing) with a nonzero entry `m[r, c]` for some
/// matrix `m` and a row `r` of its part `p` (a NaN counts as nonzero), each matrix given
/// with its parts' rows (disjoint). The matrices have equal column counts and parts.
fn nonzero_columns(mats: &[(&DMatrix<f64>, &[&Vec<usize>])]) -> Vec<Vec<usize>> {
    let nparts = mats.first().map_or(0, |(_, parts)| parts.len());
    let ncols = mats.first().map_or(0, |(m, _)| m.ncols());
    let mut out = vec![Vec::new(); nparts];
    // The part of each row of each matrix (usize::MAX: none), and the last column
    // recorded per part (so that a column is recorded once).
    let owners: Vec<Vec<usize>> = mats
        .iter()
        .map(|(m, parts)| {
            let mut owner = vec![usize::MAX; m.nrows()];
            for (p, rows) in parts.iter().enumerate() {
                for &r in rows.iter() {
                    owner[r] = p;
                }
            }
            owner
        })
        .collect();
    let mut last = vec![usize::MAX; nparts];
    for c in 0..ncols {
        for ((m, _), owner) in mats.iter().zip(&owners) {
            let n = m.nrows();
            for (x, &p) in m.as_slice()[c * n..(c + 1) * n].iter().zip(owner) {
                if *x != 0.0 && p != usize::MAX && last[p] != c {
                    last[p] = c;
                    out[p].push(c);
                }
            }
        }
    }
    out
}

/// `dst[rows[a], cols[b]] += block[(a, b)]`.
fn add_block(dst: &mut DMatrix<f64>, rows: &[usize], cols: &[usize], block: &DMatrix<f64>) {
    for (b, &c) in cols.iter().enumerate() {
        for (a, &r) in rows.iter().enumerate() {
            dst[(r, c)] += block[(a, b)];
        }
    }
}

/// `dst[rows[a], cols[b]] = block[(a, b)]`.
fn scatter_block(dst: &mut DMatrix<f64>, rows: &[usize], cols: &[usize], block: &DMatrix<f64>) {
    for (b, &c) in cols.iter().enumerate() {
        for (a, &r) in rows.iter().enumerate() {
            dst[(r, c)] = block[(a, b)];
        }
    }
}

/// The step's impacts ([`Impact`]): the bouncing contacts whose normal row clamps and
/// whose bodies approach at the step's start, into the first entries of `b.impacts`
/// (their count is returned).
fn impacts_into(view: StageView, b: &mut StageBuffers) -> usize {
    let (rec, c, asm, states, f) = (view.rec, view.c, view.asm, view.states, view.f);
    let chol = view.geometry.chol();
    let h = rec.dt;
    let nc = c.contacts.len();
    let nv = rec.v.len();
    let bouncing = |r: usize| match asm.rows[r] {
        RowKind::ContactNormal { contact } => asm.info[contact].bounce,
        _ => false,
    };
    // Â⁺ (I + E) J_C a_f: the clamping impulses' response to the free acceleration.
    reshape_vector(&mut b.dv, nv);
    for k in 0..nv {
        b.dv[k] = (c.v_free[k] - rec.v[k]) / h;
    }
    let nclamp = b.clamping.len();
    reshape_vector(&mut b.s, nclamp);
    for (ci, &r) in b.clamping.iter().enumerate() {
        let mut y = asm.j.dot(r, b.dv.as_slice());
        if bouncing(r) {
            y *= 1.0 + asm.info[r / 3].restitution;
        }
        b.s[ci] = y;
    }
    let mut y = std::mem::take(&mut b.y);
    b.pinv(&b.s, false, &mut y);
    b.y = y;
    let mut n = 0;
    for (i, info) in asm.info.iter().enumerate() {
        if !info.bounce || states[3 * i] != RowState::Clamping {
            continue;
        }
        let rate = asm.j.dot(3 * i, rec.v.as_slice());
        let normal_is_zero = asm.j.values(3 * i).iter().all(|&x| x == 0.0);
        if normal_is_zero || rate >= 0.0 {
            continue;
        }
        if n == b.impacts.len() {
            b.impacts.push(Impact::default());
        }
        let imp = &mut b.impacts[n];
        n += 1;
        for x in [&mut imp.normal, &mut imp.flow, &mut imp.jump, &mut imp.accel_jump] {
            reshape_vector(x, nv);
        }
        imp.rate = rate;
        for (k, x) in asm.j.row(3 * i) {
            imp.normal[k] = x;
        }
        for r in 3 * i..3 * i + 3 {
            // v⁻ on the dofs that move the contact (a nonzero entry in one of its rows).
            for (k, x) in asm.j.row(r) {
                if x != 0.0 {
                    imp.flow[k] = rec.v[k];
                }
            }
            asm.j.add_row_to(r, f[r], imp.jump.as_mut_slice());
        }
        for (ci, &r) in b.clamping.iter().enumerate() {
            if r < 3 * nc && r / 3 == i {
                for k in 0..nv {
                    imp.accel_jump[k] += b.jhat[(ci, k)] * b.y[ci];
                }
            }
        }
        chol.solve_mut(&mut imp.jump);
        chol.solve_mut(&mut imp.accel_jump);
    }
    // Impacts on the same dofs (an edge, several corners) share one time along the flow.
    b.shared.clear();
    for i in 0..n {
        let fi = &b.impacts[i].flow;
        let shared =
            (0..n).filter(|&j| b.impacts[j].flow.iter().zip(fi.iter()).any(|(a, c)| *a != 0.0 && *c != 0.0)).count();
        b.shared.push(shared.max(1));
    }
    for (imp, &shared) in b.impacts.iter_mut().zip(&b.shared) {
        imp.flow /= shared as f64;
    }
    n
}

/// Appends the `placement:*` scalars of θ as subtree translations at the poses of
/// `data` to `moves`, with their indices in θ to `cols`.
fn placement_translations(
    model: &Model,
    data: &Data,
    spec: &ParamSpec,
    cols: &mut Vec<usize>,
    moves: &mut Vec<SubtreeTranslation>,
) {
    for e in spec.entries().iter().filter(|e| e.kind == ParamKind::Placement) {
        for s in 0..e.len {
            cols.push(e.offset + s);
            moves.push(SubtreeTranslation::of_placement(model, data, e.index, &placement_direction(model, e.index, s)));
        }
    }
}

/// `h ∂β/∂φ` of a position row (contact normal or position limit) with gap `phi` (a
/// bounce's own terms, `β = e J_n v`, are added apart). Velocity stage with
/// [`PenetrationRecovery::Velocity`]: 1 on a gap, `erp` on a penetration (bouncing or
/// not), 0 on a bouncing gap. Velocity stage with [`PenetrationRecovery::Split`]: 1 on
/// a gap, 0 on a penetration (`β = 0`) and on a bounce. Position stage: 1 on a gap,
/// `erp` on a penetration (`β = erp·φ/h`). At `φ = 0` exactly the gap side is taken
/// (the split velocity stage's bias has a kink there: a touching contact is a mode
/// boundary).
fn bias_slope(stage: Stage, recovery: PenetrationRecovery, bounce: bool, phi: f64, erp: f64) -> f64 {
    let penetrating = phi < 0.0;
    match (stage, recovery) {
        (Stage::Position, _) => {
            if penetrating {
                erp
            } else {
                1.0
            }
        }
        (Stage::Velocity, PenetrationRecovery::Velocity) => match (bounce, penetrating) {
            (_, true) => erp,
            (true, false) => 0.0,
            (false, false) => 1.0,
        },
        (Stage::Velocity, PenetrationRecovery::Split) => {
            if bounce || penetrating {
                0.0
            } else {
                1.0
            }
        }
    }
}

/// The loss-driven classification of DiffDART §4.4 ("updated version", the second
/// strategy): from `dl_df = ∂ℓ/∂f`, every unilateral row (contact normal, joint
/// limit) with `∂ℓ/∂f_i < 0` — the loss wants the row's velocity to grow past what the
/// constraint allows, i.e. the bodies to part — is declared separating, and every one
/// with `∂ℓ/∂f_i > 0` — the loss wants to push through, i.e. to use the reaction —
/// clamping; `∂ℓ/∂f_i = 0` keeps the recorded state (a tied row stays separating, as in
/// the exact gradients). Friction rows follow their normal: separating when it is
/// separating; their recorded state when it was and stays clamping; separating when
/// the normal is newly clamping (its recorded impulse is 0, so the friction box is
/// collapsed, and a collapsed box is never clamping). Joint-friction rows keep their
/// state. The impulses are not changed: the recorded `f` enters the linearization.
#[cfg(test)]
pub(crate) fn loss_driven_states(
    rows: &[RowKind],
    bounds: &[RowBound],
    states: &[RowState],
    dl_df: &DVector<f64>,
) -> Vec<RowState> {
    let mut out = vec![];
    loss_driven_states_into(rows, bounds, states, dl_df, &mut out);
    out
}

/// [`loss_driven_states`] into `out`, reusing its storage.
pub(crate) fn loss_driven_states_into(
    rows: &[RowKind],
    bounds: &[RowBound],
    states: &[RowState],
    dl_df: &DVector<f64>,
    out: &mut Vec<RowState>,
) {
    let untie = |s: RowState| if s == RowState::Tied { RowState::Separating } else { s };
    out.clear();
    out.extend(states.iter().map(|s| untie(*s)));
    for (r, kind) in rows.iter().enumerate() {
        if matches!(kind, RowKind::ContactNormal { .. } | RowKind::JointLower { .. } | RowKind::JointUpper { .. }) {
            let g = dl_df[r];
            if g < 0.0 {
                out[r] = RowState::Separating;
            } else if g > 0.0 {
                out[r] = RowState::Clamping;
            }
        }
    }
    for (r, kind) in rows.iter().enumerate() {
        if let (RowKind::ContactFriction { .. }, RowBound::Friction { normal, .. }) = (kind, bounds[r]) {
            let was = states[normal] == RowState::Clamping;
            out[r] = match (out[normal], was) {
                (RowState::Clamping, true) => untie(states[r]),
                _ => RowState::Separating,
            };
        }
    }
}

impl ConstraintLinearization {
    /// Applies the constraint stage to a block `dv_f/dx` (nv × k): returns
    /// `(I − G J_C) dv_f/dx` (the direct columns are added by the caller).
    pub(crate) fn project(&self, dvf: &DMatrix<f64>) -> DMatrix<f64> {
        let mut out = dvf.clone();
        // The columns of dv_f whose entries on a part's dofs are zero stay as they are.
        let dof_parts: Vec<&Vec<usize>> = self.parts.iter().map(|(_, dofs)| dofs).collect();
        let part_cols = nonzero_columns(&[(dvf, &dof_parts)]);
        for ((rows, dofs), cols) in self.parts.iter().zip(&part_cols) {
            let t = block(&self.jc, rows, dofs) * block(dvf, dofs, cols);
            let d = -(block(&self.g, dofs, rows) * t);
            add_block(&mut out, dofs, cols, &d);
        }
        out
    }

    /// The saltation matrix of the step's impacts (the continuous-time derivatives of
    /// the flow across an impact at time t* inside the step; the discrete step puts
    /// every impact at the step's start and its derivatives ignore that t* moves with q).
    /// With guard φ(q) = 0 reached at rate `a·v⁻ < 0`, reset `v⁺ = R(q) v⁻` and the same
    /// free acceleration `a_f` on both sides, the saltation matrix is
    ///
    /// ```text
    /// Ξ_q = P + (v⁺ − v⁻) aᵀ/(a·v⁻)                     P = I − v⁻ aᵀ/(a·v⁻)
    /// Ξ_v = ∂(R v)/∂q P + ((I − R) a_f) aᵀ/(a·v⁻)
    /// ```
    ///
    /// `P` projects a perturbation onto the guard along the flow: the reset is applied
    /// where the bodies touch, so the discrete blocks' dependence on the distance at
    /// the step's start (the midpoint contact point moves with it) is removed. Applied
    /// here to the blocks of the velocities: `dv_dq` (the velocity stage's) and `pq`
    /// (the velocity that moves q) are multiplied by `P`, and each impact i adds its own
    /// `J_w (v⁺ − v⁻)ᵢ aᵢᵀ/(aᵢ·v⁻)` to `∂q⁺/∂q` ([`Self::saltation_position`]) and
    /// `((I − R) a_f)ᵢ aᵢᵀ/(aᵢ·v⁻)` to `∂v⁺/∂q`, with `(v⁺ − v⁻)ᵢ = M̃⁻¹ Jᵢᵀ fᵢ`. For one
    /// ball on the ground this is §6's `∂z⁺/∂z = −e` and the velocity row
    /// `−(1 + e) g/v⁻`; for two balls of masses m_a, m_b `∂x_a⁺/∂x_a = 1 − (1 + e)
    /// m_b/(m_a + m_b)`; for a box on a corner the rotation the impulse gives about it.
    pub(crate) fn saltation_velocity(&self, dv_dq: &mut DMatrix<f64>, pq: &mut DMatrix<f64>) {
        for imp in &self.impacts {
            let along = imp.normal.transpose() / imp.rate;
            let dv_flow = &*dv_dq * &imp.flow;
            let pq_flow = &*pq * &imp.flow;
            *dv_dq -= &dv_flow * &along;
            *pq -= &pq_flow * &along;
            *dv_dq += &imp.accel_jump * &along;
        }
    }

    /// The position rows of the saltation matrix ([`Self::saltation_velocity`]):
    /// `∂q⁺/∂q += J_w (v⁺ − v⁻)ᵢ aᵢᵀ/(aᵢ·v⁻)` per impact i.
    pub(crate) fn saltation_position(&self, model: &Model, jw: &[crate::math::Mat6], dq_dq: &mut DMatrix<f64>) {
        if self.impacts.is_empty() {
            return;
        }
        let nv = dq_dq.nrows();
        let mut dq = DMatrix::zeros(nv, nv);
        for imp in &self.impacts {
            dq += &imp.jump * imp.normal.transpose() / imp.rate;
        }
        *dq_dq += config_rows(model, jw, 1.0, &dq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two contacts (normal + two friction rows each) and a joint-limit row.
    fn rows() -> (Vec<RowKind>, Vec<RowBound>) {
        let mut rows = vec![];
        let mut bounds = vec![];
        for c in 0..2 {
            rows.push(RowKind::ContactNormal { contact: c });
            bounds.push(RowBound::Box { lo: 0.0, hi: f64::INFINITY });
            for d in 0..2u8 {
                rows.push(RowKind::ContactFriction { contact: c, direction: d });
                bounds.push(RowBound::Friction { normal: 3 * c, mu: 0.5 });
            }
        }
        rows.push(RowKind::JointUpper { dof: 0 });
        bounds.push(RowBound::Box { lo: 0.0, hi: f64::INFINITY });
        (rows, bounds)
    }

    #[test]
    fn loss_driven_classification_follows_the_sign_of_dl_df() {
        use RowState::*;
        let (rows, bounds) = rows();
        let sliding = AtBound { sign: 1 };
        // Contact 0 clamping and sliding, contact 1 separating, the limit tied.
        let states = [Clamping, Clamping, sliding, Separating, Separating, Separating, Tied];
        // The loss wants contact 0 apart and contact 1 and the limit pushed through.
        let dl_df = DVector::from_row_slice(&[-1.0, 5.0, 5.0, 2.0, -3.0, 3.0, 0.5]);
        let out = loss_driven_states(&rows, &bounds, &states, &dl_df);
        // Friction rows of a separating normal separate; those of a newly clamping
        // normal separate too (collapsed box); the friction rows' own ∂ℓ/∂f is ignored.
        assert_eq!(out, vec![Separating, Separating, Separating, Clamping, Separating, Separating, Clamping]);

        // Contact 0 wanted pushed through: it stays clamping, its friction rows keep
        // their states; ∂ℓ/∂f = 0 keeps the recorded state (tied read as separating).
        let dl_df = DVector::from_row_slice(&[1.0, -5.0, -5.0, 0.0, 0.0, 0.0, 0.0]);
        let out = loss_driven_states(&rows, &bounds, &states, &dl_df);
        assert_eq!(out, vec![Clamping, Clamping, sliding, Separating, Separating, Separating, Separating]);
    }
}
