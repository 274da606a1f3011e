//! A tetrahedral soft body as a system of a [`super::World`] (issue #21; docs/soft.md,
//! "Coupling with a world").
//!
//! Its configuration, velocity and control blocks are the vertex positions, velocities
//! and forces (3 per vertex, world frame). Each boundary vertex is an element carrying a
//! sphere of the contact radius (a point, by default), so it collides with the ground,
//! static geometry and the shapes of other systems through the world's contact rows;
//! a point's world twist is `[0; v_i]`. The step is [`LinearizedStep`]: the body's own
//! implicit step gives the free velocity, its Hessian at the free solution the effective
//! mass `M̃ = (h²/c) H(x_f)`, so that elasticity answers a contact impulse within the
//! step; pinned coordinates hold their start positions (infinite mass).
//!
//! Self-collision is off (a vertex against its own body's vertices is not a contact
//! model), and so is contact between rigid shapes' features and the body's faces: only
//! the boundary vertices touch.

use super::particles::{euclidean_difference, euclidean_retract, point_pose};
use super::system::{InputGradients, System, SystemStep};
use crate::collision::{Material, Polytope, ShapeCore, ShapeInstance, ShapeKind};
use crate::error::{check_vector, Error, Result};
use crate::math::{Force, Vec3, SE3};
use crate::soft::{surface::surface, LinearizedStep, SoftBody, SoftOptions, SoftState, StartGradients};
use nalgebra::{DVector, Matrix6xX};
use std::sync::Arc;

/// A soft body in a world: its boundary vertices collide as spheres.
#[derive(Clone, Debug)]
pub struct SoftSystem {
    body: Arc<SoftBody>,
    options: SoftOptions,
    /// The vertex of each element (the boundary vertices, ascending).
    vertices: Vec<usize>,
    shapes: Vec<ShapeInstance>,
}

impl SoftSystem {
    /// `body` in a world, stepped with `options` (its `dt` is replaced by the world's),
    /// its boundary vertices colliding as spheres of `radius` (m, ≥ 0; 0 is a point) of
    /// `material` (friction). Errors: a radius or friction that is not finite and
    /// non-negative.
    pub fn new(body: Arc<SoftBody>, options: SoftOptions, material: Material, radius: f64) -> Result<SoftSystem> {
        if !(radius.is_finite() && radius >= 0.0) {
            return Err(Error::InvalidInput(format!(
                "soft body contact radius must be finite and non-negative, got {radius}"
            )));
        }
        let mu = material.friction;
        if !(mu.is_finite() && mu >= 0.0) {
            return Err(Error::InvalidInput(format!("soft body friction must be finite and >= 0, got {mu}")));
        }
        let vertices = surface(body.mesh()).vertices;
        let core = ShapeCore::Convex(Arc::new(Polytope::point()));
        let shapes = (0..vertices.len())
            .map(|k| ShapeInstance {
                body: Some(k),
                index_on_body: 0,
                local: SE3::identity(),
                core: core.clone(),
                radius,
                kind: ShapeKind::Sphere,
                material,
                group: 1,
                mask: u32::MAX,
            })
            .collect();
        Ok(SoftSystem { body, options, vertices, shapes })
    }

    /// The soft body.
    pub fn body(&self) -> &Arc<SoftBody> {
        &self.body
    }

    /// The vertex of each element (shape): the boundary vertices.
    pub fn contact_vertices(&self) -> &[usize] {
        &self.vertices
    }

    /// The step options (their `dt` is replaced by the world's).
    pub fn options(&self) -> &SoftOptions {
        &self.options
    }
}

impl System for SoftSystem {
    fn name(&self) -> String {
        format!("soft body ({} vertices, {} tets)", self.body.mesh().num_vertices(), self.body.mesh().num_tets())
    }

    fn nq(&self) -> usize {
        self.body.ndof()
    }

    fn nv(&self) -> usize {
        self.body.ndof()
    }

    fn nu(&self) -> usize {
        self.body.ndof()
    }

    fn shapes(&self) -> &[ShapeInstance] {
        &self.shapes
    }

    fn shape_element(&self, shape: usize) -> Option<usize> {
        self.vertices.get(shape).copied()
    }

    fn num_elements(&self) -> usize {
        self.body.mesh().num_vertices()
    }

    fn element_pose(&self, q: &[f64], element: usize) -> Result<SE3> {
        point_pose(q, element, self.body.mesh().num_vertices(), "soft body vertex")
    }

    fn self_collides(&self, _a: usize, _b: usize) -> bool {
        false
    }

    fn surface_triangles(&self) -> Vec<[usize; 3]> {
        surface(self.body.mesh()).triangles
    }

    fn retract(&self, q: &[f64], dq: &[f64], out: &mut [f64]) {
        euclidean_retract(q, dq, out);
    }

    fn difference(&self, q0: &[f64], q1: &[f64], out: &mut [f64]) {
        euclidean_difference(q0, q1, out);
    }

    fn check(&self, q: &[f64], v: &[f64], u: &[f64]) -> Result<()> {
        let n = self.body.ndof();
        check_vector("soft body positions", q, n)?;
        check_vector("soft body velocities", v, n)?;
        check_vector("soft body forces", u, n)
    }

    fn param_names(&self) -> Vec<String> {
        self.body.param_names()
    }

    fn param_values(&self) -> Vec<f64> {
        self.body.param_values().as_slice().to_vec()
    }

    fn with_param_values(&self, theta: &[f64]) -> Result<Option<Arc<dyn System>>> {
        let body = Arc::new(self.body.with_param_values(theta)?);
        Ok(Some(Arc::new(SoftSystem { body, ..self.clone() })))
    }

    fn begin_step(&self, q: &[f64], v: &[f64], u: &[f64], h: f64) -> Result<Box<dyn SystemStep>> {
        self.check(q, v, u)?;
        let state = SoftState { x: DVector::from_column_slice(q), v: DVector::from_column_slice(v) };
        let options = SoftOptions { dt: h, ..self.options };
        let step = LinearizedStep::new(&self.body, &state, &DVector::from_column_slice(u), &options)?;
        Ok(Box::new(SoftSystemStep { step, vertices: self.vertices.clone(), x: q.to_vec() }))
    }
}

/// [`SoftSystem`] at the start of one step.
#[derive(Debug)]
struct SoftSystemStep {
    step: LinearizedStep,
    vertices: Vec<usize>,
    x: Vec<f64>,
}

impl SoftSystemStep {
    fn add(grad: &mut InputGradients, g: &StartGradients) {
        for (target, values) in
            [(&mut *grad.q, &g.x), (&mut *grad.v, &g.v), (&mut *grad.u, &g.u), (&mut *grad.theta, &g.theta)]
        {
            for (t, x) in target.iter_mut().zip(values.iter()) {
                *t += x;
            }
        }
    }
}

impl SystemStep for SoftSystemStep {
    fn free_velocity(&self) -> &[f64] {
        self.step.free_velocity().as_slice()
    }

    fn shape_pose(&self, shape: usize) -> SE3 {
        self.element_pose(self.vertices[shape])
    }

    fn element_pose(&self, i: usize) -> SE3 {
        SE3::from_translation(Vec3::new(self.x[3 * i], self.x[3 * i + 1], self.x[3 * i + 2]))
    }

    fn element_jacobian(&self, i: usize) -> Matrix6xX<f64> {
        let mut j = Matrix6xX::zeros(self.x.len());
        for r in 0..3 {
            j[(3 + r, 3 * i + r)] = 1.0;
        }
        j
    }

    fn solve_mass(&self, x: &mut [f64]) {
        self.step.solve_mass(x);
    }

    fn integrate(&self, v_next: &[f64], q_next: &mut [f64]) {
        self.step.integrate(v_next, q_next);
    }

    fn free_velocity_vjp(&self, g: &[f64], grad: &mut InputGradients) -> Result<()> {
        Self::add(grad, &self.step.free_velocity_vjp(g));
        Ok(())
    }

    fn mass_vjp(&self, a: &[f64], z: &[f64], grad: &mut InputGradients) -> Result<()> {
        Self::add(grad, &self.step.mass_vjp(a, z)?);
        Ok(())
    }

    fn element_velocity_vjp(&self, _element: usize, _u: &[f64], _wrench: &Force, _grad_q: &mut [f64]) {
        // J_e is constant.
    }

    fn integrate_vjp(
        &self,
        _v_next: &[f64],
        g: &[f64],
        grad_q: &mut [f64],
        grad_v: &mut [f64],
        grad_v_next: &mut [f64],
    ) {
        self.step.integrate_vjp(g, grad_q, grad_v, grad_v_next);
    }
}
