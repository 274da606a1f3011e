//! Reverse mode of the constraint stage: the vector-Jacobian product of one stage of a
//! recorded constraint solve, `v_out = v_in + M̃⁻¹ Ĵᵀ f_C + …`, without forming its
//! Jacobian blocks.
//!
//! The stage's linearization ([`super::constraint`], module doc; DiffDART §4, eqs.
//! 12–16, App. A.1–A.2) is `dv_out = (I − G J_C) dv_in + Q dx` with `G = M̃⁻¹ Ĵᵀ Â⁺`,
//! `x = [q | v | θ]` and
//!
//! ```text
//! Q = G r2 + (I − G J_C) M̃⁻¹ r1 + M̃⁻¹ Ĵᵀ (I − Â⁺Â) dÂᵀ Â⁺ᵀ f_C .
//! ```
//!
//! Given the adjoint `ḡ = ∂ℓ/∂v_out`, with `s = Ĵ M̃⁻¹ ḡ` and `y = Gᵀ ḡ = Â⁺ᵀ s`:
//!
//! ```text
//! ∂ℓ/∂v_in = ḡ − J_Cᵀ y
//! ∂ℓ/∂x    = r2ᵀ y + r1ᵀ M̃⁻¹ (∂ℓ/∂v_in) + dÂᵀᵀ (s − Âᵀ y)
//! ```
//!
//! Each transposed product is taken as an adjoint: `r2ᵀ y` gathers the rows' terms
//! ([`super::constraint::RowTerms`]) into one weight per contact (∂φ/∂q) and per row
//! (`∂(J u)/∂q` at the start and output velocities) and applies
//! [`ContactRowDerivatives::jv_q_vjp`](crate::constraint::ContactRowDerivatives::jv_q_vjp);
//! `r1ᵀ w` uses [`ContactRowDerivatives::jtf_q_vjp`](crate::constraint::ContactRowDerivatives::jtf_q_vjp)
//! and the transposed `∂(M̃ Δv)/∂(q, θ)`; the null-space term (friction rows at their
//! bounds on a rank-deficient `Â`) the same two adjoints at `u = M̃⁻¹ J_Cᵀ Â⁺ᵀ f_C`.
//! Two solves with the factors of `M̃` and one product with `Â⁺` per stage, against
//! `2 nv + np` right-hand sides in the forward linearization.

use super::constraint::{material_weights, StageSystem};
use super::linearize::inertia_product_derivatives;
use crate::error::Result;
use crate::model::ParamKind;
use crate::step::contact::RowKind;
use nalgebra::DVector;

/// The VJP of one constraint stage.
pub(crate) struct StageAdjoint {
    /// `∂ℓ/∂v_in` (nv): the adjoint of the stage's free velocity.
    pub v_in: DVector<f64>,
    /// `∂ℓ/∂x` of the stage's direct dependence, `x = [q | v | θ]` (2 nv + np).
    pub direct: DVector<f64>,
}

impl StageSystem<'_> {
    /// The VJP of the stage for the adjoint `gbar = ∂ℓ/∂v_out` (module doc).
    pub(crate) fn vjp(&self, gbar: &DVector<f64>) -> Result<StageAdjoint> {
        let model = self.model();
        let rec = self.rec;
        let (nv, np, h) = (model.nv(), rec.params.len(), rec.dt);
        let nc = self.c.contacts.len();
        let g = self.geometry;
        let (asm, data, rows, rd, chol) = (&*self.asm, &g.data, &g.rows, &g.rd, &g.chol);
        let (clamping, pcols, moves, f) = (&self.clamping, &g.pcols, &g.moves, self.f);
        let q = rec.q.as_slice();
        let mut direct = DVector::zeros(2 * nv + np);

        // s = Ĵ M̃⁻¹ ḡ,  y = Â⁺ᵀ s,  ∂ℓ/∂v_in = ḡ − J_Cᵀ y.
        let s = &self.jhat * chol.solve(gbar);
        let y = self.ahat_pinv.tr_mul(&s);
        let v_in = gbar - self.jc.tr_mul(&y);

        // r2ᵀ y, gathered into weights on ∂φ/∂q (per contact), on ∂(J v)/∂q at the start
        // velocity and on ∂(J v⁺)/∂q (per contact row).
        let mut w_phi = vec![0.0; nc];
        let mut w_start = vec![0.0; 3 * nc];
        let mut w_next = vec![0.0; 3 * nc];
        for (i, &r) in clamping.iter().enumerate() {
            let t = self.row_terms(r);
            let yi = y[i];
            if let Some(contact) = t.contact {
                w_phi[contact] += yi * t.phi;
                w_start[r] += yi * t.start;
                w_next[r] += yi * t.next;
                if t.start != 0.0 {
                    let mut dst = direct.rows_mut(nv, nv);
                    dst -= asm.j.row(r).transpose() * (yi * t.start);
                }
            }
            if let Some((dof, slope)) = t.dof {
                direct[dof] -= yi * slope;
            }
            for &(col, x) in &t.theta {
                direct[2 * nv + col] += yi * x;
            }
        }
        if nc > 0 {
            let mut gq = rd.jv_q_vjp(model, data, rows, self.v_out.as_slice(), &w_next)?;
            if w_start.iter().any(|w| *w != 0.0) {
                gq += rd.jv_q_vjp(model, data, rows, rec.v.as_slice(), &w_start)?;
            }
            for (contact, cd) in rd.contacts().iter().enumerate() {
                if w_phi[contact] != 0.0 {
                    gq += cd.jacobians.distance.transpose() * w_phi[contact];
                }
            }
            let mut dst = direct.rows_mut(0, nv);
            dst -= gq;
            if !moves.is_empty() {
                let mut acc = rd.distance_translation(model, moves).tr_mul(&DVector::from_vec(w_phi));
                acc += rd
                    .jv_translation(model, data, rows, self.v_out.as_slice(), moves)?
                    .tr_mul(&DVector::from_vec(w_next));
                if w_start.iter().any(|w| *w != 0.0) {
                    acc += rd
                        .jv_translation(model, data, rows, rec.v.as_slice(), moves)?
                        .tr_mul(&DVector::from_vec(w_start));
                }
                for (m, &col) in pcols.iter().enumerate() {
                    direct[2 * nv + col] -= acc[m];
                }
            }
        }

        // r1ᵀ w with w = M̃⁻¹ ∂ℓ/∂v_in:  r1 = ∂(Jᵀf)/∂q − ∂(M̃Δv)/∂(q, θ) + J_Uᵀ dE f_C.
        let w = chol.solve(&v_in);
        let mut guard = g.scratch.borrow_mut();
        let (scratch, deriv) = &mut *guard;
        let f_contact = &f.as_slice()[..3 * nc];
        let dv: DVector<f64> = self.v_out - self.v_in;
        let (dm_q, dm_t) = inertia_product_derivatives(model, &rec.params, scratch, deriv, q, dv.as_slice(), h)?;
        {
            let mut dst = direct.rows_mut(0, nv);
            if nc > 0 {
                dst += rd.jtf_q_vjp(model, data, rows, f_contact, w.as_slice())?;
            }
            dst -= dm_q.tr_mul(&w);
        }
        if np > 0 {
            let mut dst = direct.rows_mut(2 * nv, np);
            dst -= dm_t.tr_mul(&w);
            if !moves.is_empty() {
                let acc = rd.jtf_translation(model, data, rows, f_contact, moves)?.tr_mul(&w);
                for (m, &col) in pcols.iter().enumerate() {
                    direct[2 * nv + col] += acc[m];
                }
            }
            for &(r, ci, e) in &self.u_friction {
                let RowKind::ContactFriction { contact, .. } = asm.rows[r] else { continue };
                let jw = asm.j.row(r).dot(&w.transpose());
                let fn_ = f[clamping[ci]];
                for (col, wt) in material_weights(model, &rec.params, ParamKind::Friction, &self.c.contacts[contact]) {
                    direct[2 * nv + col] += e.signum() * fn_ * wt * jw;
                }
            }
        }

        // dÂᵀᵀ p with p = (I − Â⁺Â)ᵀ s = s − Âᵀ y, and dÂᵀ = A₁ + Ĵ M̃⁻¹ inner
        // (A₁: the rows of ∂(J u)/∂(q, θ); inner = ∂(J_Cᵀ z)/∂(q, θ) − ∂(M̃ u)/∂(q, θ)).
        if self.has_null_space_term() {
            let p = &s - self.ahat.tr_mul(&y);
            let (_, u, lambda) = self.null_space_pieces();
            let mut alpha = vec![0.0; 3 * nc];
            for (i, &r) in clamping.iter().enumerate() {
                if r < 3 * nc {
                    alpha[r] += p[i];
                }
            }
            let ju = &asm.j * &u;
            for &(r, ci, e) in &self.u_friction {
                alpha[r] += e * p[ci];
                if let RowKind::ContactFriction { contact, .. } = asm.rows[r] {
                    for (col, wt) in
                        material_weights(model, &rec.params, ParamKind::Friction, &self.c.contacts[contact])
                    {
                        direct[2 * nv + col] += e.signum() * ju[r] * wt * p[ci];
                    }
                }
            }
            let t = chol.solve(&self.jhat.tr_mul(&p));
            let (du_q, du_t) = inertia_product_derivatives(model, &rec.params, scratch, deriv, q, u.as_slice(), h)?;
            {
                let mut dst = direct.rows_mut(0, nv);
                dst += rd.jv_q_vjp(model, data, rows, u.as_slice(), &alpha)?;
                dst += rd.jtf_q_vjp(model, data, rows, &lambda, t.as_slice())?;
                dst -= du_q.tr_mul(&t);
            }
            if np > 0 {
                let mut dst = direct.rows_mut(2 * nv, np);
                dst -= du_t.tr_mul(&t);
            }
            if !moves.is_empty() {
                let mut acc =
                    rd.jv_translation(model, data, rows, u.as_slice(), moves)?.tr_mul(&DVector::from_vec(alpha));
                acc += rd.jtf_translation(model, data, rows, &lambda, moves)?.tr_mul(&t);
                for (m, &col) in pcols.iter().enumerate() {
                    direct[2 * nv + col] += acc[m];
                }
            }
        }
        Ok(StageAdjoint { v_in, direct })
    }
}
