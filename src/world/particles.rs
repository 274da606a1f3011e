//! A system of point masses with spherical collision shapes: the smallest second system
//! of a [`super::World`], and the template of a new one.
//!
//! Particle `i` has position `x_i = q[3i..3i+3]`, velocity `v_i`, mass `m_i`, radius `r_i`
//! and control force `u_i` (world frame, N). One step of length h is semi-implicit
//! Euler:
//!
//! ```text
//! v_f = v + h (g + u / m),      v⁺ = v_f + M⁻¹ Jᵀ f,      x⁺ = x + h v⁺
//! ```
//!
//! with `M = diag(m_i I₃)` constant. Particle `i` is element `i`; its world twist is
//! `[0; v_i]` (`J_e` selects its three velocity columns and is constant).

use super::system::{InputGradients, System, SystemStep};
use crate::collision::{Material, Polytope, ShapeCore, ShapeInstance, ShapeKind};
use crate::error::{Error, Result};
use crate::math::{Force, Vec3, SE3};
use nalgebra::Matrix6xX;
use std::sync::Arc;

/// Point masses with spherical collision shapes, under gravity and control forces.
#[derive(Clone, Debug)]
pub struct Particles {
    masses: Vec<f64>,
    gravity: Vec3,
    self_collision: bool,
    shapes: Vec<ShapeInstance>,
}

impl Particles {
    /// Particles of the given masses (kg) and radii (m), all of `material`, under
    /// `gravity` (m/s²). Errors: sizes that differ, a mass that is not finite and
    /// positive, a radius that is not finite and non-negative, a non-finite gravity or
    /// material.
    pub fn new(masses: &[f64], radii: &[f64], material: Material, gravity: Vec3) -> Result<Particles> {
        if radii.len() != masses.len() {
            return Err(Error::Dimension { what: "particle radii", expected: masses.len(), got: radii.len() });
        }
        if let Some((i, m)) = masses.iter().enumerate().find(|(_, m)| !(m.is_finite() && **m > 0.0)) {
            return Err(Error::InvalidInput(format!("particle {i}: the mass must be finite and positive, got {m}")));
        }
        if let Some((i, r)) = radii.iter().enumerate().find(|(_, r)| !(r.is_finite() && **r >= 0.0)) {
            return Err(Error::InvalidInput(format!(
                "particle {i}: the radius must be finite and non-negative, got {r}"
            )));
        }
        if !gravity.iter().all(|g| g.is_finite()) {
            return Err(Error::InvalidInput(format!("particle gravity must be finite, got {gravity:?}")));
        }
        let mu = material.friction;
        if !(mu.is_finite() && mu >= 0.0) {
            return Err(Error::InvalidInput(format!("particle friction must be finite and >= 0, got {mu}")));
        }
        let core = ShapeCore::Convex(Arc::new(Polytope::point()));
        let shapes = radii
            .iter()
            .enumerate()
            .map(|(i, &r)| ShapeInstance {
                body: Some(i),
                index_on_body: 0,
                local: SE3::identity(),
                core: core.clone(),
                radius: r,
                kind: ShapeKind::Sphere,
                material,
                group: 1,
                mask: u32::MAX,
            })
            .collect();
        Ok(Particles { masses: masses.to_vec(), gravity, self_collision: true, shapes })
    }

    /// The same particles, colliding with each other or not (default: they do).
    pub fn with_self_collision(mut self, on: bool) -> Particles {
        self.self_collision = on;
        self
    }

    /// The number of particles.
    pub fn len(&self) -> usize {
        self.masses.len()
    }

    /// Whether there are no particles.
    pub fn is_empty(&self) -> bool {
        self.masses.is_empty()
    }

    /// The masses (kg).
    pub fn masses(&self) -> &[f64] {
        &self.masses
    }
}

impl System for Particles {
    fn name(&self) -> String {
        format!("{} particles", self.masses.len())
    }

    fn nq(&self) -> usize {
        3 * self.masses.len()
    }

    fn nv(&self) -> usize {
        3 * self.masses.len()
    }

    fn nu(&self) -> usize {
        3 * self.masses.len()
    }

    fn shapes(&self) -> &[ShapeInstance] {
        &self.shapes
    }

    fn shape_element(&self, shape: usize) -> Option<usize> {
        Some(shape)
    }

    fn num_elements(&self) -> usize {
        self.masses.len()
    }

    fn element_pose(&self, q: &[f64], element: usize) -> Result<SE3> {
        point_pose(q, element, self.masses.len(), "particle")
    }

    fn self_collides(&self, a: usize, b: usize) -> bool {
        self.self_collision && a != b
    }

    fn retract(&self, q: &[f64], dq: &[f64], out: &mut [f64]) {
        euclidean_retract(q, dq, out);
    }

    fn difference(&self, q0: &[f64], q1: &[f64], out: &mut [f64]) {
        euclidean_difference(q0, q1, out);
    }

    fn check(&self, q: &[f64], v: &[f64], u: &[f64]) -> Result<()> {
        let n = self.nv();
        for (what, x) in [("particle positions", q), ("particle velocities", v), ("particle forces", u)] {
            if x.len() != n {
                return Err(Error::Dimension { what, expected: n, got: x.len() });
            }
            if let Some((index, &value)) = x.iter().enumerate().find(|(_, x)| !x.is_finite()) {
                return Err(Error::NonFinite { what, index, value });
            }
        }
        Ok(())
    }

    fn begin_step(&self, q: &[f64], v: &[f64], u: &[f64], h: f64) -> Result<Box<dyn SystemStep>> {
        self.check(q, v, u)?;
        let v_free = (0..self.nv()).map(|k| v[k] + h * (self.gravity[k % 3] + u[k] / self.masses[k / 3])).collect();
        Ok(Box::new(ParticlesStep { masses: self.masses.clone(), q: q.to_vec(), v_free, h }))
    }
}

/// [`Particles`] at the start of one step.
#[derive(Clone, Debug)]
struct ParticlesStep {
    masses: Vec<f64>,
    q: Vec<f64>,
    v_free: Vec<f64>,
    h: f64,
}

impl SystemStep for ParticlesStep {
    fn free_velocity(&self) -> &[f64] {
        &self.v_free
    }

    fn shape_pose(&self, shape: usize) -> SE3 {
        SE3::from_translation(Vec3::new(self.q[3 * shape], self.q[3 * shape + 1], self.q[3 * shape + 2]))
    }

    fn element_pose(&self, element: usize) -> SE3 {
        self.shape_pose(element)
    }

    fn element_jacobian(&self, element: usize) -> Matrix6xX<f64> {
        let mut j = Matrix6xX::zeros(self.v_free.len());
        for r in 0..3 {
            j[(3 + r, 3 * element + r)] = 1.0;
        }
        j
    }

    fn solve_mass(&self, x: &mut [f64]) {
        for (k, xk) in x.iter_mut().enumerate() {
            *xk /= self.masses[k / 3];
        }
    }

    fn integrate(&self, v_next: &[f64], q_next: &mut [f64]) {
        for k in 0..self.q.len() {
            q_next[k] = self.q[k] + self.h * v_next[k];
        }
    }

    fn free_velocity_vjp(&self, g: &[f64], grad: &mut InputGradients) -> Result<()> {
        for k in 0..g.len() {
            grad.v[k] += g[k];
            grad.u[k] += self.h * g[k] / self.masses[k / 3];
        }
        Ok(())
    }

    fn mass_vjp(&self, _: &[f64], _: &[f64], _: &mut InputGradients) -> Result<()> {
        Ok(()) // M is constant.
    }

    fn element_velocity_vjp(&self, _element: usize, _u: &[f64], _wrench: &Force, _grad_q: &mut [f64]) {
        // J_e is constant.
    }

    fn integrate_vjp(&self, _: &[f64], g: &[f64], grad_q: &mut [f64], _: &mut [f64], grad_v_next: &mut [f64]) {
        for k in 0..g.len() {
            grad_q[k] += g[k];
            grad_v_next[k] += self.h * g[k];
        }
    }
}

/// The pose of point element `element` of `count` (translation only) at `q` (3 per
/// point); `what` names the elements in errors.
pub(crate) fn point_pose(q: &[f64], element: usize, count: usize, what: &str) -> Result<SE3> {
    if element >= count || q.len() != 3 * count {
        return Err(Error::InvalidInput(format!(
            "{what} {element} out of range ({count} {what}s, configuration of length {})",
            q.len()
        )));
    }
    let p = Vec3::new(q[3 * element], q[3 * element + 1], q[3 * element + 2]);
    if !p.iter().all(|x| x.is_finite()) {
        return Err(Error::NonFinite { what: "point position", index: 3 * element, value: f64::NAN });
    }
    Ok(SE3::from_translation(p))
}

/// `out = q + dq` (a Euclidean configuration space).
pub(crate) fn euclidean_retract(q: &[f64], dq: &[f64], out: &mut [f64]) {
    for k in 0..q.len() {
        out[k] = q[k] + dq[k];
    }
}

/// `out = q₁ − q₀` (a Euclidean configuration space).
pub(crate) fn euclidean_difference(q0: &[f64], q1: &[f64], out: &mut [f64]) {
    for k in 0..q0.len() {
        out[k] = q1[k] - q0[k];
    }
}
