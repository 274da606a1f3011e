//! The vector–Jacobian product of a world step, in reverse order of `step.rs`. With
//! `X = M̃⁻¹`, cotangents `q̄⁺, v̄⁺`:
//!
//! ```text
//! 5. q⁺ = q ⊕ h v⁺         per system: q̄ += (∂q⁺/∂q)ᵀ q̄⁺,  v̄⁺ += (∂q⁺/∂v⁺)ᵀ q̄⁺
//!    v⁺ = v_f + X Jᵀ f     v̄_f = v̄⁺,  z = X v̄⁺,  f̄ = J z
//! 4. f = solve(A, b)        (b̄, Ā = Σ_k u_k w_kᵀ) = solver VJP of f̄
//! 3. b = J v_f + β(φ)       v̄_f += Jᵀ b̄,  φ̄_c = b̄_n β'(φ_c)
//!    A = J X Jᵀ
//! ```
//!
//! The rows and the mass depend on q. The mass enters through `⟨v̄⁺, X Jᵀ f⟩` and
//! `⟨Ā, J X Jᵀ⟩`; each pair `(z, a)` below adds `−∂/∂q [zᵀ M̃(q) a]` (the system's
//! `mass_vjp`): `(z, X Jᵀ f)` and `(X Jᵀ u_k, X Jᵀ w_k)`. The rows enter through
//! `J̄ = f zᵀ + b̄ v_fᵀ + Σ_k [u_k (X Jᵀ w_k)ᵀ + w_k (X Jᵀ u_k)ᵀ]`, a sum of pairs
//! `(λ, u)`; for each pair and contact, with the wrench `F = Σ_r λ_r W_r`, the force
//! `f_λ = Σ_r λ_r d_r` and the relative twist `ΔV = V_B(u) − V_A(u) = [ω; v]`:
//!
//! ```text
//! ⟨λ uᵀ, J(q)⟩ = Σ_c F_c · ΔV_c
//! ∂/∂q at fixed geometry: ± the systems' element_velocity_vjp(e, u, ±F)
//! ∂/∂p = f_λ × ω,   ∂/∂d_r = λ_r (v + ω × p),   ∂/∂n = Σ_r L_rᵀ ∂/∂d_r   (L₀ = I; frame.rs)
//! ```
//!
//! and the geometry cotangent `(p̄, n̄, φ̄)` goes to the sides' twists through the
//! feature pair's derivatives, then to each side's system as `J_eᵀ δ̄`. Last, each
//! system's `free_velocity_vjp` takes `v̄_f`.

use super::attachments::Anchor;
use super::contacts::{geometry_derivatives, ContactSide};
use super::step::WorldStepRecord;
use super::system::InputGradients;
use crate::error::{Error, Result};
use crate::math::{Force, Motion, Vec3};
use nalgebra::{DVector, SVector};

/// Gradients of a scalar loss with respect to one world step's inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldGradients {
    /// ∂ℓ/∂q (tangent, [`super::World::nv`]).
    pub q: DVector<f64>,
    /// ∂ℓ/∂v ([`super::World::nv`]).
    pub v: DVector<f64>,
    /// ∂ℓ/∂u ([`super::World::nu`]).
    pub u: DVector<f64>,
    /// ∂ℓ/∂θ ([`super::World::param_names`]).
    pub theta: DVector<f64>,
}

impl WorldGradients {
    /// System `s`'s blocks, for its adjoints to add into.
    fn system<'a>(&'a mut self, world: &super::World, s: usize) -> InputGradients<'a> {
        let (_, vr, ur) = world.blocks(s).unwrap_or_default();
        InputGradients {
            q: &mut self.q.as_mut_slice()[vr.clone()],
            v: &mut self.v.as_mut_slice()[vr],
            u: &mut self.u.as_mut_slice()[ur],
            theta: &mut self.theta.as_mut_slice()[world.param_range(s)],
        }
    }
}

impl WorldStepRecord {
    /// The VJP of the step: `∂ℓ/∂(q, v, u)` from `grad_q_next = ∂ℓ/∂q⁺` (tangent) and
    /// `grad_v_next = ∂ℓ/∂v⁺`, in the contact mode the solve recorded. Errors: sizes,
    /// non-finite cotangents, a solver or system VJP failure.
    pub fn vjp(&self, grad_q_next: &DVector<f64>, grad_v_next: &DVector<f64>) -> Result<WorldGradients> {
        let world = &self.world;
        let (nv, nu) = (world.nv(), world.nu());
        for (what, g) in [("grad_q_next", grad_q_next), ("grad_v_next", grad_v_next)] {
            crate::error::check_vector(what, g.as_slice(), nv)?;
        }
        let mut out = WorldGradients {
            q: DVector::zeros(nv),
            v: DVector::zeros(nv),
            u: DVector::zeros(nu),
            theta: DVector::zeros(world.num_params()),
        };
        let mut g_vnext = grad_v_next.clone();
        // 5. The configuration update.
        for (s, step) in self.steps.iter().enumerate() {
            let (_, vr, _) = world.blocks(s).unwrap_or_default();
            step.integrate_vjp(
                &self.v_next.as_slice()[vr.clone()],
                &grad_q_next.as_slice()[vr.clone()],
                &mut out.q.as_mut_slice()[vr.clone()],
                &mut out.v.as_mut_slice()[vr.clone()],
                &mut g_vnext.as_mut_slice()[vr],
            );
        }
        let mut g_vfree = g_vnext.clone();
        if self.rows.j.nrows() > 0 {
            self.constraint_vjp(&g_vnext, &mut g_vfree, &mut out)?;
        }
        // 1. The free velocities.
        for (s, step) in self.steps.iter().enumerate() {
            let (_, vr, _) = world.blocks(s).unwrap_or_default();
            step.free_velocity_vjp(&g_vfree.as_slice()[vr], &mut out.system(world, s))?;
        }
        if out.q.iter().chain(out.v.iter()).chain(out.u.iter()).chain(out.theta.iter()).all(|x| x.is_finite()) {
            Ok(out)
        } else {
            Err(Error::Numerical { algorithm: "world step VJP", detail: "non-finite gradient".into() })
        }
    }

    /// Steps 4–5 backwards: adds the impulse's and the rows' contributions to `g_vfree`
    /// and `g_q`, from `g_vnext = ∂ℓ/∂v⁺` (after the configuration update).
    fn constraint_vjp(
        &self,
        g_vnext: &DVector<f64>,
        g_vfree: &mut DVector<f64>,
        out: &mut WorldGradients,
    ) -> Result<()> {
        let delassus = self.delassus();
        let j = &self.rows.j;
        let f = &self.solution.f;
        let z = {
            let mut z = g_vnext.clone();
            delassus.solve_mass(z.as_mut_slice());
            z
        };
        let f_bar = j * &z;
        let cot = self.world.solver.vjp(&self.problem(&delassus), &self.solution, &f_bar)?;
        g_vfree.gemv_tr(1.0, j, &cot.b, 1.0);
        // Mass pairs (z, a) and row pairs (λ, u).
        let impulse = delassus.impulse_velocity(f);
        let mut mass_pairs = vec![(z.clone(), impulse)];
        let mut row_pairs = vec![(f.clone(), z), (cot.b.clone(), self.v_free.clone())];
        for (u, w) in &cot.a {
            let (xu, xw) = (delassus.impulse_velocity(u), delassus.impulse_velocity(w));
            row_pairs.push((u.clone(), xw.clone()));
            row_pairs.push((w.clone(), xu.clone()));
            mass_pairs.push((xu, xw));
        }
        let world = &self.world;
        for (zz, a) in &mass_pairs {
            for (s, step) in self.steps.iter().enumerate() {
                let (_, vr, _) = world.blocks(s).unwrap_or_default();
                step.mass_vjp(&a.as_slice()[vr.clone()], &zz.as_slice()[vr], &mut out.system(world, s))?;
            }
        }
        let g_q = &mut out.q;
        for (i, c) in self.contacts.iter().enumerate() {
            let frame = &self.rows.frames[i];
            let geo = &c.contact.geometry;
            let p = geo.point;
            let d = [frame.normal, frame.t1, frame.t2];
            let (l1, l2) = frame.tangent_jacobians();
            let (mut p_bar, mut n_bar) = (Vec3::zeros(), Vec3::zeros());
            let phi_bar = cot.b[3 * i] * self.bias_slopes[i];
            for (lambda, u) in &row_pairs {
                let l = [lambda[3 * i], lambda[3 * i + 1], lambda[3 * i + 2]];
                if l.iter().all(|x| *x == 0.0) {
                    continue;
                }
                let force = d[0] * l[0] + d[1] * l[1] + d[2] * l[2];
                let wrench = Force::from_point_force(&p, &force);
                let mut dv = Motion::zero();
                for (k, (sign, side)) in [(-1.0, c.side_a), (1.0, c.side_b)].into_iter().enumerate() {
                    let ContactSide::Element { system, element } = side else { continue };
                    let (_, vr, _) = world.blocks(system).unwrap_or_default();
                    let us = &u.as_slice()[vr.clone()];
                    let je = &self.rows.side_jacobians[i][k];
                    dv += Motion::from_vector(&(je * DVector::from_column_slice(us)).fixed_rows::<6>(0).into_owned())
                        * sign;
                    self.steps[system].element_velocity_vjp(element, us, &(wrench * sign), &mut g_q.as_mut_slice()[vr]);
                }
                let v_rel = dv.lin + dv.ang.cross(&p);
                p_bar += force.cross(&dv.ang);
                n_bar += v_rel * l[0] + l1.tr_mul(&v_rel) * l[1] + l2.tr_mul(&v_rel) * l[2];
            }
            if p_bar.iter().chain(n_bar.iter()).all(|x| *x == 0.0) && phi_bar == 0.0 {
                continue;
            }
            let gd = geometry_derivatives(&world.systems, &self.steps, c)?;
            let twist: SVector<f64, 12> =
                gd.point.tr_mul(&p_bar) + gd.normal.tr_mul(&n_bar) + gd.distance.transpose() * phi_bar;
            for (k, side) in [c.side_a, c.side_b].into_iter().enumerate() {
                let ContactSide::Element { system, .. } = side else { continue };
                let (_, vr, _) = world.blocks(system).unwrap_or_default();
                let je = &self.rows.side_jacobians[i][k];
                let tk = twist.fixed_rows::<6>(6 * k).into_owned();
                let gq = je.tr_mul(&tk);
                for (dst, x) in g_q.as_mut_slice()[vr].iter_mut().zip(gq.iter()) {
                    *dst += x;
                }
            }
        }
        // Attachments: the rows at both anchors' points, and the bias of the gap.
        let nc3 = 3 * self.contacts.len();
        let erp_h = world.options.erp / world.options.dt;
        for (i, att) in world.attachments.iter().enumerate() {
            let base = nc3 + 3 * i;
            let points = &self.attachment_rows.points[i];
            let bias_bar = Vec3::new(cot.b[base], cot.b[base + 1], cot.b[base + 2]) * erp_h;
            let mut p_bar = [-bias_bar, bias_bar];
            for (k, (sign, anchor)) in [(-1.0, att.a), (1.0, att.b)].into_iter().enumerate() {
                let Anchor::Element { system, element, .. } = anchor else { continue };
                let (_, vr, _) = world.blocks(system).unwrap_or_default();
                let je = &self.attachment_rows.side_jacobians[i][k];
                for (lambda, u) in &row_pairs {
                    let f = Vec3::new(lambda[base], lambda[base + 1], lambda[base + 2]) * sign;
                    if f.iter().all(|x| *x == 0.0) {
                        continue;
                    }
                    let us = &u.as_slice()[vr.clone()];
                    let omega = (je * DVector::from_column_slice(us)).fixed_rows::<3>(0).into_owned();
                    let wrench = Force::from_point_force(&points[k], &f);
                    self.steps[system].element_velocity_vjp(element, us, &wrench, &mut g_q.as_mut_slice()[vr.clone()]);
                    p_bar[k] += f.cross(&omega);
                }
                let twist = Motion { ang: points[k].cross(&p_bar[k]), lin: p_bar[k] }.to_vector();
                let gq = je.tr_mul(&twist);
                for (dst, x) in g_q.as_mut_slice()[vr].iter_mut().zip(gq.iter()) {
                    *dst += x;
                }
            }
        }
        Ok(())
    }
}
