//! A rigid multibody ([`Model`]) as a system of a [`super::World`]: its velocity block is
//! the smooth semi-implicit Euler update of [`crate::step::smooth_velocity`], its
//! effective mass `M̃ = M + diag(armature + h·damping)` (CRBA, Cholesky), and its
//! elements are its bodies.
//!
//! Adjoints. The free velocity's VJP is the smooth step's own ([`StepRecord::vjp`] of a
//! step without constraint rows, checked against Ridders in `tests/`). The mass term is
//! `∂(M̃ a)/∂q` from the RNEA derivatives at zero velocity (Carpentier & Mansard 2018).
//! The element twist `V_e = Σ_{j ∈ chain(e)} S_j^w u_j` (Featherstone 2008, eq. 8.4)
//! moves under `q ⊕ ε e_k` by `∂V_e/∂ε_k = S_k^w × (V_e − V_k⁻)` for k on e's chain,
//! `V_k⁻` the velocity of the dofs k does not carry (see `constraint::derivatives`), so
//! `∂(W · V_e)/∂ε_k = S_k^w · ((V_e − V_k⁻) ×* W)` (Featherstone eq. 2.32). The
//! configuration update's blocks are [`crate::model::JointType::integrate_jacobians`].

use super::system::{InputGradients, System, SystemStep};
use crate::collision::ShapeInstance;
use crate::dynamics::{body_jacobian, forward_kinematics, Data, DerivativeData, ReferenceFrame};
use crate::error::{Error, Result};
use crate::math::{Force, Motion, SE3};
use crate::model::ParamSpec;
use crate::step::contact::effective_inertia;
use crate::step::{smooth_velocity, IntegratorOptions, StepInputs};
use crate::tape::derivative_terms::inertia_product_derivatives;
use crate::tape::StepRecord;
use crate::Model;
use nalgebra::{Cholesky, DVector, Dyn, Matrix6xX};
use std::sync::Arc;

/// A rigid multibody as a world system. Controls are its joint torques (nv).
#[derive(Clone, Debug)]
pub struct Articulation {
    model: Arc<Model>,
    integrator: IntegratorOptions,
    params: Arc<ParamSpec>,
}

impl Articulation {
    /// The model with the default integrator options.
    pub fn new(model: Arc<Model>) -> Articulation {
        Articulation { model, integrator: IntegratorOptions::default(), params: Arc::new(ParamSpec::new()) }
    }

    /// The same articulation with other integrator options (the smooth update).
    pub fn with_integrator(mut self, integrator: IntegratorOptions) -> Articulation {
        self.integrator = integrator;
        self
    }

    /// The model.
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }
}

impl System for Articulation {
    fn name(&self) -> String {
        format!("articulation '{}'", self.model.name)
    }

    fn nq(&self) -> usize {
        self.model.nq()
    }

    fn nv(&self) -> usize {
        self.model.nv()
    }

    fn nu(&self) -> usize {
        self.model.nv()
    }

    fn shapes(&self) -> &[ShapeInstance] {
        &self.model.collision_model().shapes
    }

    fn shape_element(&self, shape: usize) -> Option<usize> {
        let cm = self.model.collision_model();
        if cm.is_static(shape) {
            None
        } else {
            cm.shapes.get(shape).and_then(|s| s.body)
        }
    }

    fn num_elements(&self) -> usize {
        self.model.nbodies()
    }

    fn element_pose(&self, q: &[f64], element: usize) -> Result<SE3> {
        let model = &*self.model;
        if element >= model.nbodies() {
            return Err(Error::InvalidInput(format!(
                "articulation '{}' has {} bodies, not body {element}",
                model.name(),
                model.nbodies()
            )));
        }
        let mut data = Data::new(model);
        forward_kinematics(model, &mut data, q)?;
        Ok(data.x_world[element])
    }

    fn self_collides(&self, a: usize, b: usize) -> bool {
        self.model.collision_model().allows(a, b)
    }

    fn retract(&self, q: &[f64], dq: &[f64], out: &mut [f64]) {
        self.model.integrate_into(q, dq, 1.0, out);
    }

    fn difference(&self, q0: &[f64], q1: &[f64], out: &mut [f64]) {
        self.model.difference_into(q0, q1, out);
    }

    fn normalize(&self, q: &[f64], out: &mut [f64]) -> Result<()> {
        out.copy_from_slice(self.model.normalize(&DVector::from_column_slice(q))?.as_slice());
        Ok(())
    }

    fn tangent_gradient(&self, q: &[f64], g: &[f64], out: &mut [f64]) -> Result<()> {
        let t = self.model.tangent_gradient(&DVector::from_column_slice(q), &DVector::from_column_slice(g))?;
        out.copy_from_slice(t.as_slice());
        Ok(())
    }

    fn coordinate_gradient(&self, q: &[f64], g: &[f64], out: &mut [f64]) -> Result<()> {
        let c = self.model.coordinate_gradient(&DVector::from_column_slice(q), &DVector::from_column_slice(g))?;
        out.copy_from_slice(c.as_slice());
        Ok(())
    }

    fn check(&self, q: &[f64], v: &[f64], u: &[f64]) -> Result<()> {
        // A valid time step: only the state and control are checked here.
        StepInputs { q, v, tau: u, wrenches: None, dt: 1e-3 }.check(&self.model)
    }

    fn begin_step(&self, q: &[f64], v: &[f64], u: &[f64], h: f64) -> Result<Box<dyn SystemStep>> {
        let model = &*self.model;
        let nv = model.nv();
        let mut data = Data::new(model);
        let mut deriv = DerivativeData::new(model);
        let inputs = StepInputs { q, v, tau: u, wrenches: None, dt: h };
        let mut v_free = vec![0.0; nv];
        let stats = smooth_velocity(model, &mut data, &mut deriv, &inputs, &self.integrator, &mut v_free)?;
        forward_kinematics(model, &mut data, q)?;
        let chol = effective_inertia(model, &mut data, h)?;
        let s_world = (0..nv).map(|k| data.x_world[model.dof_body[k]].act_motion(&data.s[k])).collect();
        let mut q_next = vec![0.0; model.nq()];
        model.integrate_into(q, &v_free, h, &mut q_next);
        let smooth = StepRecord {
            model: self.model.clone(),
            params: self.params.clone(),
            dt: h,
            integrator: self.integrator,
            q: DVector::from_column_slice(q),
            v: DVector::from_column_slice(v),
            tau: DVector::from_column_slice(u),
            wrenches: None,
            q_next: DVector::from_vec(q_next),
            v_next: DVector::from_column_slice(&v_free),
            fallback: stats.fallback,
            constraints: None,
        };
        Ok(Box::new(ArticulationStep { smooth, v_free, data, chol, s_world }))
    }
}

/// An [`Articulation`] at the start of one step.
#[derive(Clone, Debug)]
struct ArticulationStep {
    /// The smooth step, as a record without constraint rows (its VJP is the free
    /// velocity's).
    smooth: StepRecord,
    v_free: Vec<f64>,
    /// Kinematics (and the mass matrix) at q.
    data: Data,
    chol: Cholesky<f64, Dyn>,
    /// World-frame motion subspace of every dof at q.
    s_world: Vec<Motion>,
}

impl ArticulationStep {
    fn model(&self) -> &Model {
        &self.smooth.model
    }

    /// The bodies from the root down to `body`.
    fn chain(&self, body: usize) -> Vec<usize> {
        let model = self.model();
        let mut chain = Vec::new();
        let mut b = Some(body);
        while let Some(x) = b {
            chain.push(x);
            b = model.parents[x];
        }
        chain.reverse();
        chain
    }
}

impl SystemStep for ArticulationStep {
    fn free_velocity(&self) -> &[f64] {
        &self.v_free
    }

    fn shape_pose(&self, shape: usize) -> SE3 {
        self.model().collision_model().shapes[shape].world_pose(&self.data.x_world)
    }

    fn element_pose(&self, element: usize) -> SE3 {
        self.data.x_world[element]
    }

    fn element_jacobian(&self, element: usize) -> Matrix6xX<f64> {
        let nv = self.model().nv();
        body_jacobian(self.model(), &self.data, element, ReferenceFrame::World).unwrap_or_else(|_| Matrix6xX::zeros(nv))
    }

    fn solve_mass(&self, x: &mut [f64]) {
        let mut y = DVector::from_column_slice(x);
        self.chol.solve_mut(&mut y);
        x.copy_from_slice(y.as_slice());
    }

    fn integrate(&self, v_next: &[f64], q_next: &mut [f64]) {
        self.model().integrate_into(self.smooth.q.as_slice(), v_next, self.smooth.dt, q_next);
    }

    fn free_velocity_vjp(&self, g: &[f64], grad: &mut InputGradients) -> Result<()> {
        let nv = self.v_free.len();
        let grads = self.smooth.vjp(&DVector::zeros(nv), &DVector::from_column_slice(g))?;
        for k in 0..nv {
            grad.q[k] += grads.q[k];
            grad.v[k] += grads.v[k];
            grad.u[k] += grads.tau[k];
        }
        Ok(())
    }

    fn mass_vjp(&self, a: &[f64], z: &[f64], grad: &mut InputGradients) -> Result<()> {
        let grad_q = &mut *grad.q;
        let model = self.model();
        let (mut data, mut deriv) = (Data::new(model), DerivativeData::new(model));
        let (dq, _) = inertia_product_derivatives(
            model,
            &self.smooth.params,
            &mut data,
            &mut deriv,
            self.smooth.q.as_slice(),
            a,
            self.smooth.dt,
        )?;
        let zv = DVector::from_column_slice(z);
        let g = dq.tr_mul(&zv);
        if !g.iter().all(|x| x.is_finite()) {
            return Err(Error::Numerical { algorithm: "articulation mass VJP", detail: "non-finite gradient".into() });
        }
        for (gq, gk) in grad_q.iter_mut().zip(g.iter()) {
            *gq -= gk;
        }
        Ok(())
    }

    fn element_velocity_vjp(&self, element: usize, u: &[f64], wrench: &Force, grad_q: &mut [f64]) {
        let model = self.model();
        let chain = self.chain(element);
        // V_e(u), then per dof the velocity of the dofs it does not carry.
        let v_e = chain.iter().fold(Motion::zero(), |acc, &b| {
            let v0 = model.v_idx[b];
            (v0..v0 + model.joints[b].nv()).fold(acc, |a, k| a + self.s_world[k] * u[k])
        });
        let mut v_parent = Motion::zero();
        for &b in &chain {
            let (v0, n) = (model.v_idx[b], model.joints[b].nv());
            let kind = &model.joints[b].kind;
            for k in v0..v0 + n {
                let mut before = v_parent;
                for j in v0..v0 + n {
                    if !kind.carries(k - v0, j - v0) {
                        before += self.s_world[j] * u[j];
                    }
                }
                grad_q[k] += self.s_world[k].dot(&(v_e - before).cross_force(wrench));
            }
            for k in v0..v0 + n {
                v_parent += self.s_world[k] * u[k];
            }
        }
    }

    fn integrate_vjp(
        &self,
        v_next: &[f64],
        g: &[f64],
        grad_q: &mut [f64],
        _grad_v: &mut [f64],
        grad_v_next: &mut [f64],
    ) {
        let model = self.model();
        let h = self.smooth.dt;
        for (i, joint) in model.joints.iter().enumerate() {
            let (va, n) = (model.v_idx[i], joint.nv());
            if !joint.kind.has_quaternion() {
                for k in va..va + n {
                    grad_q[k] += g[k];
                    grad_v_next[k] += h * g[k];
                }
                continue;
            }
            let mut w = [0.0; 6];
            for (wk, vk) in w.iter_mut().zip(&v_next[va..va + n]) {
                *wk = h * vk;
            }
            let (jq, jw) = joint.kind.integrate_jacobians(&w[..n]);
            for r in 0..n {
                let (mut aq, mut av) = (0.0, 0.0);
                for c in 0..n {
                    aq += jq[(c, r)] * g[va + c];
                    av += jw[(c, r)] * g[va + c];
                }
                grad_q[va + r] += aq;
                grad_v_next[va + r] += h * av;
            }
        }
    }
}
