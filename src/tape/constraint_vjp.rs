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
use crate::error::Result;
use crate::math::reshape_vector;
use crate::model::ParamKind;
use crate::step::contact::RowKind;
use nalgebra::DVector;

/// The VJP of one constraint stage (buffers reused across steps).
#[derive(Clone, Debug, Default)]
pub(crate) struct StageAdjoint {
    /// `∂ℓ/∂v_in` (nv): the adjoint of the stage's free velocity.
    pub v_in: DVector<f64>,
    /// `∂ℓ/∂x` of the stage's direct dependence, `x = [q | v | θ]` (2 nv + np).
    pub direct: DVector<f64>,
}

/// `buf` as `len` zeros (its storage reused).
fn zeroed(buf: &mut Vec<f64>, len: usize) -> &mut [f64] {
    buf.clear();
    buf.resize(len, 0.0);
    buf
}

impl StageSystem<'_> {
    /// The VJP of the stage for the adjoint `gbar = ∂ℓ/∂v_out` (module doc) into `out`.
    /// Allocates nothing once the stage's buffers and `out` have held a stage of this
    /// size.
    pub(crate) fn vjp_into(&mut self, gbar: &DVector<f64>, out: &mut StageAdjoint) -> Result<()> {
        let view = self.view;
        let b = &mut self.b;
        let model = view.model();
        let rec = view.rec;
        let (nv, np, h) = (model.nv(), rec.params.len(), rec.dt);
        let nc = view.c.contacts.len();
        let g = view.geometry;
        let (asm, data, rows, rd, chol) = (view.asm, &g.data, &g.rows, &g.rd, g.chol());
        let (pcols, moves, f) = (&g.pcols, &g.moves, view.f);
        let q = rec.q.as_slice();
        let nclamp = b.clamping.len();
        reshape_vector(&mut out.direct, 2 * nv + np);
        let mut row_scratch = g.row_scratch.borrow_mut();
        let mut inertia = g.inertia.borrow_mut();

        // s = Ĵ M̃⁻¹ ḡ,  y = Â⁺ᵀ s,  ∂ℓ/∂v_in = ḡ − J_Cᵀ y.
        reshape_vector(&mut b.w, nv);
        b.w.copy_from(gbar);
        chol.solve_mut(&mut b.w);
        reshape_vector(&mut b.s, nclamp);
        b.jhat.mul_to(&b.w, &mut b.s);
        let mut y = std::mem::take(&mut b.y);
        b.pinv(&b.s, true, &mut y);
        b.y = y;
        reshape_vector(&mut out.v_in, nv);
        out.v_in.copy_from(gbar);
        out.v_in.gemv_tr(-1.0, &b.jc, &b.y, 1.0);

        // r2ᵀ y, gathered into weights on ∂φ/∂q (per contact), on ∂(J v)/∂q at the start
        // velocity and on ∂(J v⁺)/∂q (per contact row).
        for (buf, len) in [(&mut b.w_phi, nc), (&mut b.w_start, 3 * nc), (&mut b.w_next, 3 * nc)] {
            buf.clear();
            buf.resize(len, 0.0);
        }
        let direct = out.direct.as_mut_slice();
        for (i, &r) in b.clamping.iter().enumerate() {
            let t = view.row_terms(r);
            let yi = b.y[i];
            if let Some(contact) = t.contact {
                b.w_phi[contact] += yi * t.phi;
                b.w_start[r] += yi * t.start;
                b.w_next[r] += yi * t.next;
                if t.start != 0.0 {
                    asm.j.add_row_to(r, -yi * t.start, &mut direct[nv..2 * nv]);
                }
            }
            if let Some((dof, slope)) = t.dof {
                direct[dof] -= yi * slope;
            }
            view.row_theta(r, |col, x| direct[2 * nv + col] += yi * x);
        }
        let starts = b.w_start.iter().any(|w| *w != 0.0);
        if nc > 0 {
            let dq = &mut direct[..nv];
            let scratch = &mut *row_scratch;
            rd.jv_q_vjp_acc(model, data, rows, view.v_out.as_slice(), &b.w_next, -1.0, scratch, dq)?;
            if starts {
                rd.jv_q_vjp_acc(model, data, rows, rec.v.as_slice(), &b.w_start, -1.0, scratch, dq)?;
            }
            for (contact, cd) in rd.contacts().iter().enumerate() {
                let wp = b.w_phi[contact];
                if wp != 0.0 {
                    for (x, d) in dq.iter_mut().zip(cd.jacobians.distance.iter()) {
                        *x -= d * wp;
                    }
                }
            }
            if !moves.is_empty() {
                let acc = zeroed(&mut b.acc, moves.len());
                rd.distance_translation_vjp_acc(model, moves, &b.w_phi, 1.0, acc)?;
                let v_out = view.v_out.as_slice();
                rd.jv_translation_vjp_acc(model, data, rows, v_out, moves, &b.w_next, 1.0, scratch, acc)?;
                if starts {
                    let v = rec.v.as_slice();
                    rd.jv_translation_vjp_acc(model, data, rows, v, moves, &b.w_start, 1.0, scratch, acc)?;
                }
                for (m, &col) in pcols.iter().enumerate() {
                    direct[2 * nv + col] -= acc[m];
                }
            }
        }

        // r1ᵀ w with w = M̃⁻¹ ∂ℓ/∂v_in:  r1 = ∂(Jᵀf)/∂q − ∂(M̃Δv)/∂(q, θ) + J_Uᵀ dE f_C.
        b.w.copy_from(&out.v_in);
        chol.solve_mut(&mut b.w);
        let f_contact = &f.as_slice()[..3 * nc];
        reshape_vector(&mut b.dv, nv);
        b.dv.copy_from(view.v_out);
        b.dv -= view.v_in;
        inertia.compute(model, &rec.params, q, b.dv.as_slice(), h)?;
        {
            let dq = &mut direct[..nv];
            if nc > 0 {
                rd.jtf_q_vjp_acc(model, data, rows, f_contact, b.w.as_slice(), 1.0, &mut row_scratch, dq)?;
            }
            let mut dst = nalgebra::DVectorViewMut::from_slice(dq, nv);
            dst.gemv_tr(-1.0, &inertia.dq, &b.w, 1.0);
        }
        if np > 0 {
            {
                let mut dst = nalgebra::DVectorViewMut::from_slice(&mut direct[2 * nv..], np);
                dst.gemv_tr(-1.0, &inertia.dt, &b.w, 1.0);
            }
            if !moves.is_empty() {
                let acc = zeroed(&mut b.acc, moves.len());
                let (w, scratch) = (b.w.as_slice(), &mut *row_scratch);
                rd.jtf_translation_vjp_acc(model, data, rows, f_contact, moves, w, 1.0, scratch, acc)?;
                for (m, &col) in pcols.iter().enumerate() {
                    direct[2 * nv + col] += acc[m];
                }
            }
            for &(r, ci, e) in &b.u_friction {
                let RowKind::ContactFriction { contact, .. } = asm.rows[r] else { continue };
                let jw = asm.j.dot(r, b.w.as_slice());
                let fn_ = f[b.clamping[ci]];
                for (col, wt) in material_weights(model, &rec.params, ParamKind::Friction, &view.c.contacts[contact]) {
                    direct[2 * nv + col] += e.signum() * fn_ * wt * jw;
                }
            }
        }

        // dÂᵀᵀ p with p = (I − Â⁺Â)ᵀ s = s − Âᵀ y, and dÂᵀ = A₁ + Ĵ M̃⁻¹ inner
        // (A₁: the rows of ∂(J u)/∂(q, θ); inner = ∂(J_Cᵀ z)/∂(q, θ) − ∂(M̃ u)/∂(q, θ)).
        if b.has_null_space_term(view.c.contacts.is_empty()) {
            reshape_vector(&mut b.p, nclamp);
            b.p.copy_from(&b.s);
            let mut pv = std::mem::take(&mut b.p);
            b.sub_ahat_tr_mul(&b.y, &mut pv);
            b.p = pv;
            // z = Â⁺ᵀ f_C,  u = M̃⁻¹ J_Cᵀ z,  λ: z on the contact rows.
            reshape_vector(&mut b.fc, nclamp);
            for (i, &r) in b.clamping.iter().enumerate() {
                b.fc[i] = f[r];
            }
            let mut z = std::mem::take(&mut b.z);
            b.pinv(&b.fc, true, &mut z);
            b.z = z;
            reshape_vector(&mut b.u, nv);
            b.jc.tr_mul_to(&b.z, &mut b.u);
            chol.solve_mut(&mut b.u);
            b.lambda.clear();
            b.lambda.resize(3 * nc, 0.0);
            b.alpha.clear();
            b.alpha.resize(3 * nc, 0.0);
            for (i, &r) in b.clamping.iter().enumerate() {
                if r < 3 * nc {
                    b.lambda[r] = b.z[i];
                    b.alpha[r] += b.p[i];
                }
            }
            reshape_vector(&mut b.ju, asm.rows.len());
            for r in 0..asm.rows.len() {
                b.ju[r] = asm.j.dot(r, b.u.as_slice());
            }
            for &(r, ci, e) in &b.u_friction {
                b.alpha[r] += e * b.p[ci];
                if let RowKind::ContactFriction { contact, .. } = asm.rows[r] {
                    for (col, wt) in
                        material_weights(model, &rec.params, ParamKind::Friction, &view.c.contacts[contact])
                    {
                        direct[2 * nv + col] += e.signum() * b.ju[r] * wt * b.p[ci];
                    }
                }
            }
            reshape_vector(&mut b.t, nv);
            b.jhat.tr_mul_to(&b.p, &mut b.t);
            chol.solve_mut(&mut b.t);
            inertia.compute(model, &rec.params, q, b.u.as_slice(), h)?;
            {
                let dq = &mut direct[..nv];
                let scratch = &mut *row_scratch;
                rd.jv_q_vjp_acc(model, data, rows, b.u.as_slice(), &b.alpha, 1.0, scratch, dq)?;
                rd.jtf_q_vjp_acc(model, data, rows, &b.lambda, b.t.as_slice(), 1.0, scratch, dq)?;
                let mut dst = nalgebra::DVectorViewMut::from_slice(dq, nv);
                dst.gemv_tr(-1.0, &inertia.dq, &b.t, 1.0);
            }
            if np > 0 {
                let mut dst = nalgebra::DVectorViewMut::from_slice(&mut direct[2 * nv..], np);
                dst.gemv_tr(-1.0, &inertia.dt, &b.t, 1.0);
            }
            if !moves.is_empty() {
                let acc = zeroed(&mut b.acc, moves.len());
                let scratch = &mut *row_scratch;
                let (u, t) = (b.u.as_slice(), b.t.as_slice());
                rd.jv_translation_vjp_acc(model, data, rows, u, moves, &b.alpha, 1.0, scratch, acc)?;
                rd.jtf_translation_vjp_acc(model, data, rows, &b.lambda, moves, t, 1.0, scratch, acc)?;
                for (m, &col) in pcols.iter().enumerate() {
                    direct[2 * nv + col] += acc[m];
                }
            }
        }
        Ok(())
    }
}
