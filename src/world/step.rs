//! One step of a [`World`], top to bottom:
//!
//! 1. each system starts its step: free velocity `v_f`, poses, effective mass;
//! 2. contacts between the systems' shapes at the start poses (`contacts::detect`);
//! 3. rows `J` (`contacts::rows`, then three unbounded rows per attachment,
//!    `attachments.rs`, with the bias `erp·g/h` of the gap g), bounds (unilateral normals; friction `±μ f_n`, or
//!    equality rows for no-slip) and
//!    `b = J v_f + β`, with `β = φ/h` on a separated normal row and `erp·φ/h` on a
//!    penetrating one;
//! 4. the solver on `w = A f + b` over the Delassus operator `A = Σ_s J_s M̃_s⁻¹ J_sᵀ`;
//! 5. `v⁺ = v_f + M̃⁻¹ Jᵀ f`, and `q⁺ = q ⊕ h v⁺` per system.
//!
//! The [`WorldStepRecord`] keeps every system's step and the solve: the backward pass
//! (`vjp.rs`) needs nothing else.

use super::attachments::{self, AttachmentRows};
use super::contacts::{self, WorldContact, WorldRows};
use super::system::SystemStep;
use super::World;
use crate::error::{Error, Result};
use crate::solver::lcp::RowBound;
use crate::solver::{ConstraintProblem, ConstraintSolution, DelassusOperator};
use crate::step::ContactModel;
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

/// The state of a world: the systems' configurations and velocities, concatenated.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldState {
    /// Configuration ([`World::nq`]).
    pub q: DVector<f64>,
    /// Velocity ([`World::nv`]).
    pub v: DVector<f64>,
}

/// Everything the backward pass of one world step needs. Self-contained.
#[derive(Clone, Debug)]
pub struct WorldStepRecord {
    pub(super) world: World,
    pub(super) steps: Vec<Arc<dyn SystemStep>>,
    pub(super) contacts: Vec<WorldContact>,
    pub(super) rows: WorldRows,
    /// The attachments' rows (their block of `rows.j` follows the contacts').
    pub(super) attachment_rows: AttachmentRows,
    pub(super) bounds: Vec<RowBound>,
    /// `∂β/∂φ` of each contact's normal row.
    pub(super) bias_slopes: Vec<f64>,
    pub(super) b: DVector<f64>,
    pub(super) solution: ConstraintSolution,
    pub(super) v_free: DVector<f64>,
    pub(super) v_next: DVector<f64>,
    pub(super) q_next: DVector<f64>,
}

impl WorldStepRecord {
    /// The contacts of the step.
    pub fn contacts(&self) -> &[WorldContact] {
        &self.contacts
    }

    /// The constraint solve (impulses, classification, report).
    pub fn solution(&self) -> &ConstraintSolution {
        &self.solution
    }

    /// The state after the step.
    pub fn next_state(&self) -> WorldState {
        WorldState { q: self.q_next.clone(), v: self.v_next.clone() }
    }

    /// The constraint Jacobian of the step (3·nc contact rows, then 3 rows per
    /// attachment, × [`World::nv`]).
    pub fn constraint_jacobian(&self) -> &DMatrix<f64> {
        &self.rows.j
    }

    /// The problem the solver was given.
    pub(super) fn problem<'a>(&'a self, delassus: &'a WorldDelassus<'a>) -> ConstraintProblem<'a> {
        ConstraintProblem { delassus, b: &self.b, bounds: &self.bounds }
    }

    /// The Delassus operator of the step.
    pub(super) fn delassus(&self) -> WorldDelassus<'_> {
        WorldDelassus { j: &self.rows.j, steps: &self.steps, v_offsets: &self.world.v_offsets }
    }
}

/// `A = J M̃⁻¹ Jᵀ` with `M̃ = blockdiag(M̃_s)`, applied through the systems' mass solves.
pub(super) struct WorldDelassus<'a> {
    pub j: &'a DMatrix<f64>,
    pub steps: &'a [Arc<dyn SystemStep>],
    pub v_offsets: &'a [usize],
}

impl WorldDelassus<'_> {
    /// `x ← M̃⁻¹ x` over the global velocity vector.
    pub fn solve_mass(&self, x: &mut [f64]) {
        for (s, step) in self.steps.iter().enumerate() {
            step.solve_mass(&mut x[self.v_offsets[s]..self.v_offsets[s + 1]]);
        }
    }

    /// `M̃⁻¹ Jᵀ λ`.
    pub fn impulse_velocity(&self, lambda: &DVector<f64>) -> DVector<f64> {
        let mut y = self.j.tr_mul(lambda);
        self.solve_mass(y.as_mut_slice());
        y
    }
}

impl DelassusOperator for WorldDelassus<'_> {
    fn rows(&self) -> usize {
        self.j.nrows()
    }

    fn apply(&self, x: &[f64], out: &mut [f64]) {
        let y = self.impulse_velocity(&DVector::from_column_slice(x));
        out.copy_from_slice((self.j * y).as_slice());
    }

    fn dense(&self) -> DMatrix<f64> {
        let mut x = self.j.transpose();
        for mut col in x.column_iter_mut() {
            let mut c = col.clone_owned();
            self.solve_mass(c.as_mut_slice());
            col.copy_from(&c);
        }
        let a = self.j * x;
        // Symmetrize the rounding.
        (&a + a.transpose()) * 0.5
    }
}

impl World {
    /// One step from `state` under the controls `u` ([`World::nu`]).
    pub fn step(&self, state: &WorldState, u: &DVector<f64>) -> Result<WorldState> {
        Ok(self.step_recorded(state, u)?.next_state())
    }

    /// One step with its record for the backward pass. Errors: sizes, a system's state
    /// errors (non-finite values, a singular mass), a solver failure, a non-finite result.
    pub fn step_recorded(&self, state: &WorldState, u: &DVector<f64>) -> Result<WorldStepRecord> {
        for (what, len, expected) in [
            ("world q", state.q.len(), self.nq()),
            ("world v", state.v.len(), self.nv()),
            ("world u", u.len(), self.nu()),
        ] {
            if len != expected {
                return Err(Error::Dimension { what, expected, got: len });
            }
        }
        let h = self.options.dt;
        let nv = self.nv();
        // 1. The systems' steps.
        let mut steps: Vec<Arc<dyn SystemStep>> = Vec::with_capacity(self.systems.len());
        let mut v_free = DVector::zeros(nv);
        for (s, system) in self.systems.iter().enumerate() {
            let (qr, vr, ur) = self.blocks(s).unwrap_or_default();
            let (q, v, us) = (&state.q.as_slice()[qr], &state.v.as_slice()[vr.clone()], &u.as_slice()[ur]);
            system.check(q, v, us).map_err(|e| in_system(&**system, s, e))?;
            let step: Arc<dyn SystemStep> =
                system.begin_step(q, v, us, h).map_err(|e| in_system(&**system, s, e))?.into();
            v_free.as_mut_slice()[vr].copy_from_slice(step.free_velocity());
            steps.push(step);
        }
        // 2–3. Contacts and rows.
        let contacts = contacts::detect(&self.systems, &steps, self.options.margin);
        let mut rows = contacts::rows(&contacts, &steps, &self.v_offsets, nv)?;
        let attachment_rows = attachments::rows(&self.attachments, &steps, &self.v_offsets, nv);
        if !self.attachments.is_empty() {
            let nc = rows.j.nrows();
            let mut j = DMatrix::zeros(nc + attachment_rows.j.nrows(), nv);
            j.rows_mut(0, nc).copy_from(&rows.j);
            j.rows_mut(nc, attachment_rows.j.nrows()).copy_from(&attachment_rows.j);
            rows.j = j;
        }
        let mut b = &rows.j * &v_free;
        let mut bounds = Vec::with_capacity(3 * contacts.len());
        let mut bias_slopes = Vec::with_capacity(contacts.len());
        for (i, c) in contacts.iter().enumerate() {
            let phi = c.contact.geometry.distance;
            let slope = if phi < 0.0 { self.options.erp / h } else { 1.0 / h };
            b[3 * i] += slope * phi;
            bias_slopes.push(slope);
            let tangent = match self.options.friction {
                ContactModel::NoSlip => RowBound::Box { lo: f64::NEG_INFINITY, hi: f64::INFINITY },
                _ => RowBound::Friction { normal: 3 * i, mu: c.friction },
            };
            bounds.extend([RowBound::UNILATERAL, tangent, tangent]);
        }
        let nc3 = 3 * contacts.len();
        for (i, [pa, pb]) in attachment_rows.points.iter().enumerate() {
            for r in 0..3 {
                b[nc3 + 3 * i + r] += self.options.erp / h * (pb[r] - pa[r]);
                bounds.push(RowBound::Box { lo: f64::NEG_INFINITY, hi: f64::INFINITY });
            }
        }
        // 4. The solve.
        let delassus = WorldDelassus { j: &rows.j, steps: &steps, v_offsets: &self.v_offsets };
        let solution = self.solver.solve(&ConstraintProblem { delassus: &delassus, b: &b, bounds: &bounds }, None)?;
        // 5. Impulse and configuration update.
        let v_next = &v_free + delassus.impulse_velocity(&solution.f);
        let mut q_next = state.q.clone();
        for (s, step) in steps.iter().enumerate() {
            let (qr, vr, _) = self.blocks(s).unwrap_or_default();
            step.integrate(&v_next.as_slice()[vr], &mut q_next.as_mut_slice()[qr]);
        }
        if let Some((k, x)) = q_next.iter().chain(v_next.iter()).enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(Error::Numerical {
                algorithm: "world step",
                detail: format!("non-finite state entry {k} = {x}"),
            });
        }
        Ok(WorldStepRecord {
            world: self.clone(),
            steps,
            contacts,
            rows,
            attachment_rows,
            bounds,
            bias_slopes,
            b,
            solution,
            v_free,
            v_next,
            q_next,
        })
    }
}

/// An error of system `s`, naming it ([`Error::InSystem`]).
fn in_system(system: &dyn crate::world::System, s: usize, e: Error) -> Error {
    Error::InSystem { system: s, name: system.name(), error: Box::new(e) }
}
