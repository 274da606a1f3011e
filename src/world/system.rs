//! What a system supplies to a [`super::World`]: its block of the global state, its
//! collision shapes, and — per step, at the start-of-step state — its velocity block:
//! the free velocity, the effective-mass solve, the world twist Jacobian of each
//! collision element, the configuration update, and the vector–Jacobian products of
//! each of them.
//!
//! Conventions. A system's configuration `q` (nq) has a tangent space of dimension nv,
//! and its velocity `v` (nv) lives in that tangent space; gradients with respect to `q`
//! are tangent (nv), perturbing `q ⊕ δ`. An *element* is a rigid piece that carries
//! shapes — a body of an articulation, a particle. Its world twist `V_e = J_e(q) v` is
//! `[ω; v_o]` (world axes, `v_o` the velocity of the material point at the world origin),
//! so a material point at `p` moves at `v_o + ω × p`; perturbing `q ⊕ δ` moves the
//! element by the twist `J_e(q) δ`.

use crate::collision::ShapeInstance;
use crate::error::Result;
use crate::math::{Force, SE3};
use nalgebra::Matrix6xX;
use std::fmt::Debug;
use std::sync::Arc;

/// A system's blocks of the gradients of a step's inputs, which its VJPs add to.
#[derive(Debug)]
pub struct InputGradients<'a> {
    /// `∂ℓ/∂q` (tangent, nv).
    pub q: &'a mut [f64],
    /// `∂ℓ/∂v` (nv).
    pub v: &'a mut [f64],
    /// `∂ℓ/∂u` (nu).
    pub u: &'a mut [f64],
    /// `∂ℓ/∂θ` ([`System::param_names`]).
    pub theta: &'a mut [f64],
}

/// One system of a world: a block of the global configuration, velocity and control
/// vectors, with its own dynamics and collision shapes. Immutable: a step's state lives
/// in the [`SystemStep`] it returns.
pub trait System: Send + Sync + Debug {
    /// A short description (for errors and reports).
    fn name(&self) -> String;
    /// The configuration size nq.
    fn nq(&self) -> usize;
    /// The velocity (tangent) size nv.
    fn nv(&self) -> usize;
    /// The control size (joint torques, particle forces).
    fn nu(&self) -> usize;
    /// The collision shapes. [`ShapeInstance::local`] is the shape's pose on its element.
    fn shapes(&self) -> &[ShapeInstance];
    /// The element carrying shape `shape`, `None` when the shape does not move (static
    /// geometry, or a link welded to the world).
    fn shape_element(&self, shape: usize) -> Option<usize>;
    /// The number of elements (bodies, particles, vertices): what shapes ride on and
    /// attachments hold.
    fn num_elements(&self) -> usize;
    /// The world pose of element `element` at configuration `q` (checked). Errors: an
    /// element out of range, an invalid configuration.
    fn element_pose(&self, q: &[f64], element: usize) -> Result<SE3>;
    /// Whether two shapes of this system may collide with each other (the group/mask
    /// bits are checked by the world as well).
    fn self_collides(&self, a: usize, b: usize) -> bool;
    /// Triangles over this system's elements (element indices) that draw its surface,
    /// right-hand normals outward, for viewers: a soft body's boundary, whose corners are
    /// its vertices. Empty (the default) for systems drawn by their collision shapes.
    fn surface_triangles(&self) -> Vec<[usize; 3]> {
        Vec::new()
    }
    /// `out = q ⊕ dq`: moves the configuration along the tangent vector `dq` (nv).
    fn retract(&self, q: &[f64], dq: &[f64], out: &mut [f64]);
    /// `out = q₁ ⊖ q₀`: the tangent vector (nv) with `q₀ ⊕ out = q₁`.
    fn difference(&self, q0: &[f64], q1: &[f64], out: &mut [f64]);
    /// `out = q` with every quaternion normalised (for a start configuration given on
    /// coordinates). The default copies `q`: systems whose configuration is a vector space
    /// (nq = nv) keep it. Errors: a quaternion far from unit length.
    fn normalize(&self, q: &[f64], out: &mut [f64]) -> Result<()> {
        out.copy_from_slice(q);
        Ok(())
    }
    /// `out = Eᵀ g`: a gradient `g` on the coordinates of `q` (nq) as a tangent gradient
    /// (nv), `E = ∂(q ⊕ δ)/∂δ` at `δ = 0`. The default copies `g` (nq = nv). Errors: a
    /// quaternion far from unit length.
    fn tangent_gradient(&self, _q: &[f64], g: &[f64], out: &mut [f64]) -> Result<()> {
        out.copy_from_slice(g);
        Ok(())
    }
    /// `out = Dᵀ g`: a tangent gradient `g` (nv) at `q` as a gradient on the coordinates
    /// (nq) of the function `q ↦ ℓ(normalize(q))` (`D = ∂(normalize(q̂) ⊖ q)/∂q̂` at
    /// `q̂ = q`). The default copies `g` (nq = nv). Errors: a quaternion far from unit
    /// length.
    fn coordinate_gradient(&self, _q: &[f64], g: &[f64], out: &mut [f64]) -> Result<()> {
        out.copy_from_slice(g);
        Ok(())
    }
    /// Checks a state and control of this system (sizes, finiteness, unit quaternions).
    fn check(&self, q: &[f64], v: &[f64], u: &[f64]) -> Result<()>;
    /// The names of the system's differentiable parameters θ (default: none).
    fn param_names(&self) -> Vec<String> {
        Vec::new()
    }
    /// The values of θ.
    fn param_values(&self) -> Vec<f64> {
        Vec::new()
    }
    /// The same system with θ set to `theta`, `None` when the system has no parameters
    /// (and `theta` is empty). Errors: a size or a value out of its domain.
    fn with_param_values(&self, theta: &[f64]) -> Result<Option<Arc<dyn System>>> {
        if theta.is_empty() {
            Ok(None)
        } else {
            Err(crate::error::Error::Dimension { what: "system parameters", expected: 0, got: theta.len() })
        }
    }
    /// Starts a step of length `h` from `(q, v)` under control `u` (checked): evaluates
    /// everything the constraint stage and the backward pass need at the start state.
    fn begin_step(&self, q: &[f64], v: &[f64], u: &[f64], h: f64) -> Result<Box<dyn SystemStep>>;
}

/// One system at the start of one step: its velocity block and the adjoints of every
/// map it contributes. Self-contained (a recorded step keeps it; the backward pass
/// never touches the live system).
pub trait SystemStep: Send + Sync + Debug {
    /// The free velocity `v_f` (nv): the velocity at the end of the step without
    /// constraint impulses.
    fn free_velocity(&self) -> &[f64];
    /// The world pose of shape `shape` at the start configuration.
    fn shape_pose(&self, shape: usize) -> SE3;
    /// The world pose of element `element` at the start configuration.
    fn element_pose(&self, element: usize) -> SE3;
    /// The world twist Jacobian `J_e` of element `element` (6 × nv).
    fn element_jacobian(&self, element: usize) -> Matrix6xX<f64>;
    /// `x ← M̃⁻¹ x` with the effective mass `M̃` of the constraint impulse update
    /// `v⁺ = v_f + M̃⁻¹ Jᵀ f`.
    fn solve_mass(&self, x: &mut [f64]);
    /// The configuration update `q⁺ = q ⊕ h v⁺` into `q_next` (nq).
    fn integrate(&self, v_next: &[f64], q_next: &mut [f64]);

    /// Adds the VJP of the free velocity: for `g = ∂ℓ/∂v_f`, `grad.q += (∂v_f/∂q)ᵀ g`, and
    /// likewise for `v`, `u` and the parameters θ.
    fn free_velocity_vjp(&self, g: &[f64], grad: &mut InputGradients) -> Result<()>;
    /// Adds `−∂/∂p [zᵀ M̃(p) a]` to `grad` for the step's inputs `p = (q, v, u, θ)` (the
    /// gradient of `⟨y, M̃⁻¹ x⟩` is this with `a = M̃⁻¹ x`, `z = M̃⁻¹ y`). A rigid
    /// system's `M̃` depends on `q` alone; a soft body's is its step's Hessian at the free
    /// solution, which moves with `v`, `u` and its material parameters as well.
    fn mass_vjp(&self, a: &[f64], z: &[f64], grad: &mut InputGradients) -> Result<()>;
    /// Adds `∂/∂q [W · J_e(q) u]` (u fixed) to `grad_q`, for element `element` and a world
    /// wrench `W` (about the origin).
    fn element_velocity_vjp(&self, element: usize, u: &[f64], wrench: &Force, grad_q: &mut [f64]);
    /// Adds the VJP of the configuration update for `g = ∂ℓ/∂q⁺` (tangent):
    /// `grad_q += (∂q⁺/∂q)ᵀ g`, `grad_v += (∂q⁺/∂v)ᵀ g` (zero for `q⁺ = q ⊕ h v⁺`; the
    /// implicit midpoint rule's `x⁺ = x + h (v + v⁺)/2` has it) and
    /// `grad_v_next += (∂q⁺/∂v⁺)ᵀ g`.
    fn integrate_vjp(&self, v_next: &[f64], g: &[f64], grad_q: &mut [f64], grad_v: &mut [f64], grad_v_next: &mut [f64]);
}
