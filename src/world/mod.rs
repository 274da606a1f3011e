//! A world of several systems over one global velocity vector, stepped through one
//! constraint stage and one solver, with a reverse-mode backward pass that never asks
//! which system a contact side belongs to.
//!
//! * [`System`] / [`SystemStep`] — what a system supplies: its state block, its shapes,
//!   and per step its velocity block (free velocity, effective-mass solve, element twist
//!   Jacobians, configuration update) with the VJP of each. Implementations:
//!   [`Articulation`] (a rigid multibody [`crate::Model`]), [`Particles`] (point masses),
//!   [`StaticGeometry`], [`SoftSystem`] (a tetrahedral soft body, its boundary vertices
//!   in contact; `crate::soft::LinearizedStep`).
//! * `contacts` — detection across systems and the rows `J_r v = W_r · (V_B − V_A)`; a
//!   side is an element of a system or static ([`ContactSide`]).
//! * `step` — one step: free velocities → contacts → rows → the solver over the
//!   Delassus operator `A = Σ_s J_s M̃_s⁻¹ J_sᵀ` ([`crate::solver::ConstraintSolver`]) →
//!   `v⁺ = v_f + M̃⁻¹ Jᵀ f` → `q⁺ = q ⊕ h v⁺` per system, recorded in a
//!   [`WorldStepRecord`].
//! * `vjp` — the step's VJP: each system's adjoints, the solver's own VJP, and the
//!   adjoint of the rows and of the contact geometry (docs/world.md).
//! * `rollout` — rollouts and their reverse sweep ([`WorldTape`]).
//!
//! The global vectors concatenate the systems' blocks in the order they were added:
//! `q = [q_0; q_1; …]`, likewise `v` (and tangent gradients), and the controls `u`.
//! The step is the velocity-level semi-implicit scheme of the rigid
//! [`crate::Simulator`] with its `PenetrationRecovery::Velocity` bias; restitution, joint
//! limits, joint friction and the position stage are not in the world step yet.

mod attachments;
mod contacts;
mod rollout;
mod step;
mod vjp;

pub mod articulation;
pub mod particles;
pub mod soft_body;
pub mod static_geometry;
pub mod system;

pub use articulation::Articulation;
pub use attachments::{Anchor, Attachment};
pub use contacts::{ContactSide, ShapeRef, WorldContact};
pub use particles::Particles;
pub use rollout::{WorldBatchRollout, WorldTape, WorldTapeGradients};
pub use soft_body::SoftSystem;
pub use static_geometry::StaticGeometry;
pub use step::{WorldState, WorldStepRecord};
pub use system::{InputGradients, System, SystemStep};
pub use vjp::WorldGradients;

use crate::error::{check_vector, Error, Result};
use crate::math::Vec3;
use crate::solver::{BoxedLcpSolver, ConstraintSolver};
use crate::step::{check_dt, ContactModel, ContactOptions};
use nalgebra::DVector;
use std::sync::Arc;

/// Options of a [`World`] step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorldOptions {
    /// Time step h (s): finite, positive, at most [`crate::step::MAX_DT`].
    pub dt: f64,
    /// Contacts are created for feature pairs closer than this (m). Default as
    /// [`ContactOptions::margin`].
    pub margin: f64,
    /// Penetration recovery rate: a penetrating contact (`φ < 0`) gets the normal bias
    /// `erp·φ/h`, a separated one `φ/h` (it may close within the step). Default as
    /// [`ContactOptions::erp`].
    pub erp: f64,
    /// The friction model: [`ContactModel::Coulomb`] (default: two rows per contact
    /// boxed by `±μ f_n`) or [`ContactModel::NoSlip`] (two equality rows per contact, the
    /// problem the [`crate::solver::PpmSolver`] takes). [`ContactModel::Viscous`] is not in
    /// the world step yet.
    pub friction: ContactModel,
}

impl Default for WorldOptions {
    fn default() -> Self {
        let c = ContactOptions::default();
        WorldOptions { dt: 1e-3, margin: c.margin, erp: c.erp, friction: ContactModel::Coulomb }
    }
}

impl WorldOptions {
    fn validate(&self) -> Result<()> {
        check_dt(self.dt)?;
        if !(self.margin.is_finite() && self.margin >= 0.0) {
            return Err(Error::InvalidInput(format!("world margin must be finite and >= 0, got {}", self.margin)));
        }
        if !(self.erp.is_finite() && (0.0..=1.0).contains(&self.erp)) {
            return Err(Error::InvalidInput(format!("world erp must be in [0, 1], got {}", self.erp)));
        }
        if self.friction == ContactModel::Viscous {
            return Err(Error::InvalidInput("the viscous friction model is not in the world step yet".into()));
        }
        Ok(())
    }
}

/// Several systems stepped together. Immutable once built; cheap to clone (systems and
/// solver are shared).
#[derive(Clone, Debug)]
pub struct World {
    systems: Vec<Arc<dyn System>>,
    solver: Arc<dyn ConstraintSolver>,
    options: WorldOptions,
    q_offsets: Vec<usize>,
    v_offsets: Vec<usize>,
    u_offsets: Vec<usize>,
    /// Where each system's parameters start in θ (one more entry: the total).
    p_offsets: Vec<usize>,
    attachments: Arc<Vec<Attachment>>,
}

impl World {
    /// A world of `systems` (in this order in the global vectors), solved by the boxed
    /// LCP. Errors: invalid options.
    pub fn new(systems: Vec<Arc<dyn System>>, options: WorldOptions) -> Result<World> {
        World::with_solver(systems, Arc::new(BoxedLcpSolver::default()), options)
    }

    /// [`World::new`] with another constraint solver.
    pub fn with_solver(
        systems: Vec<Arc<dyn System>>,
        solver: Arc<dyn ConstraintSolver>,
        options: WorldOptions,
    ) -> Result<World> {
        options.validate()?;
        let offsets = |f: &dyn Fn(&dyn System) -> usize| {
            let mut acc = 0;
            let mut out: Vec<usize> = systems
                .iter()
                .map(|s| {
                    let o = acc;
                    acc += f(&**s);
                    o
                })
                .collect();
            out.push(acc);
            out
        };
        let (q_offsets, v_offsets, u_offsets) = (offsets(&|s| s.nq()), offsets(&|s| s.nv()), offsets(&|s| s.nu()));
        let p_offsets = offsets(&|s| s.param_names().len());
        Ok(World {
            systems,
            solver,
            options,
            q_offsets,
            v_offsets,
            u_offsets,
            p_offsets,
            attachments: Arc::new(Vec::new()),
        })
    }

    /// The number of differentiable parameters θ (the systems' [`System::param_names`],
    /// concatenated).
    pub fn num_params(&self) -> usize {
        *self.p_offsets.last().unwrap_or(&0)
    }

    /// The names of θ: `"s/name"` for parameter `name` of system `s`.
    pub fn param_names(&self) -> Vec<String> {
        self.systems
            .iter()
            .enumerate()
            .flat_map(|(s, sys)| sys.param_names().into_iter().map(move |n| format!("{s}/{n}")))
            .collect()
    }

    /// The values of θ.
    pub fn param_values(&self) -> DVector<f64> {
        DVector::from_iterator(self.num_params(), self.systems.iter().flat_map(|s| s.param_values()))
    }

    /// The same world with θ set to `theta` (systems, solver, options and attachments
    /// otherwise shared). Errors: the size, a value out of its domain (naming it).
    pub fn with_param_values(&self, theta: &DVector<f64>) -> Result<World> {
        if theta.len() != self.num_params() {
            return Err(Error::Dimension { what: "world parameters", expected: self.num_params(), got: theta.len() });
        }
        let mut out = self.clone();
        for (s, system) in self.systems.iter().enumerate() {
            if let Some(changed) = system.with_param_values(&theta.as_slice()[self.param_range(s)])? {
                out.systems[s] = changed;
            }
        }
        Ok(out)
    }

    /// The range of system `s`'s parameters in θ (empty for an index out of range).
    pub(crate) fn param_range(&self, s: usize) -> std::ops::Range<usize> {
        if s < self.systems.len() {
            self.p_offsets[s]..self.p_offsets[s + 1]
        } else {
            0..0
        }
    }

    /// The same world with `attachments` (replacing any before): each holds two material
    /// points together by three bilateral rows of the constraint stage. Errors: a system
    /// or element out of range, a non-finite point, two world anchors.
    pub fn with_attachments(mut self, attachments: Vec<Attachment>) -> Result<World> {
        let elements: Vec<usize> = self.systems.iter().map(|s| s.num_elements()).collect();
        attachments::validate(&attachments, &elements)?;
        self.attachments = Arc::new(attachments);
        Ok(self)
    }

    /// The attachments.
    pub fn attachments(&self) -> &[Attachment] {
        &self.attachments
    }

    /// The anchor on element `element` of system `system` whose material point is at the
    /// world point `point` when the world's configuration is `q` (for attachments made
    /// where the parts are). Errors: sizes, a system or element out of range.
    pub fn anchor_at(&self, q: &DVector<f64>, system: usize, element: usize, point: Vec3) -> Result<Anchor> {
        if q.len() != self.nq() {
            return Err(Error::Dimension { what: "world q", expected: self.nq(), got: q.len() });
        }
        let (qr, _, _) = self.blocks(system).ok_or_else(|| {
            Error::InvalidInput(format!("system {system} is not in the world ({} systems)", self.systems.len()))
        })?;
        let pose = self.systems[system].element_pose(&q.as_slice()[qr], element)?;
        Ok(Anchor::Element { system, element, point: pose.inverse().act_point(&point) })
    }

    /// Attachments that weld `vertices` (elements of system `from`, e.g. a
    /// [`SoftSystem`]'s vertices) to element `to = (system, element)`, or to the world
    /// when `to` is `None`, where they are at configuration `q`. Three or more vertices
    /// not on a line fix the element's orientation as well. Errors: those of
    /// [`World::anchor_at`].
    pub fn weld(
        &self,
        q: &DVector<f64>,
        from: usize,
        vertices: &[usize],
        to: Option<(usize, usize)>,
    ) -> Result<Vec<Attachment>> {
        vertices
            .iter()
            .map(|&v| {
                let (qr, _, _) = self.blocks(from).ok_or_else(|| {
                    Error::InvalidInput(format!("system {from} is not in the world ({} systems)", self.systems.len()))
                })?;
                let world = self.systems[from].element_pose(&q.as_slice()[qr], v)?.trans;
                let b = match to {
                    Some((system, element)) => self.anchor_at(q, system, element, world)?,
                    None => Anchor::World(world),
                };
                Ok(Attachment { a: Anchor::Element { system: from, element: v, point: Vec3::zeros() }, b })
            })
            .collect()
    }

    /// The systems, in the order of the global vectors.
    pub fn systems(&self) -> &[Arc<dyn System>] {
        &self.systems
    }

    /// The solver of the constraint stage.
    pub fn solver(&self) -> &Arc<dyn ConstraintSolver> {
        &self.solver
    }

    /// The options.
    pub fn options(&self) -> &WorldOptions {
        &self.options
    }

    /// The size of the global configuration.
    pub fn nq(&self) -> usize {
        *self.q_offsets.last().unwrap_or(&0)
    }

    /// The size of the global velocity (and of tangent gradients).
    pub fn nv(&self) -> usize {
        *self.v_offsets.last().unwrap_or(&0)
    }

    /// The size of the global control.
    pub fn nu(&self) -> usize {
        *self.u_offsets.last().unwrap_or(&0)
    }

    /// The ranges of system `s` in the global configuration, velocity and control
    /// vectors (`None` for an index out of range).
    pub fn blocks(&self, s: usize) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>, std::ops::Range<usize>)> {
        (s < self.systems.len()).then(|| {
            (
                self.q_offsets[s]..self.q_offsets[s + 1],
                self.v_offsets[s]..self.v_offsets[s + 1],
                self.u_offsets[s]..self.u_offsets[s + 1],
            )
        })
    }

    /// `q₁ ⊖ q₀` over all systems (tangent, of size [`World::nv`]). Errors: sizes.
    pub fn difference(&self, q0: &DVector<f64>, q1: &DVector<f64>) -> Result<DVector<f64>> {
        for (what, q) in [("world q0", q0), ("world q1", q1)] {
            if q.len() != self.nq() {
                return Err(Error::Dimension { what, expected: self.nq(), got: q.len() });
            }
        }
        let mut out = DVector::zeros(self.nv());
        for (s, system) in self.systems.iter().enumerate() {
            let (qr, vr, _) = self.blocks(s).unwrap_or_default();
            system.difference(&q0.as_slice()[qr.clone()], &q1.as_slice()[qr], &mut out.as_mut_slice()[vr]);
        }
        Ok(out)
    }

    /// `q` with every quaternion normalised, system by system (a start configuration
    /// given on coordinates, as the PyTorch and JAX wrappers take it). Errors: the size, a
    /// quaternion far from unit length (norm outside [0.5, 2]).
    pub fn normalize(&self, q: &DVector<f64>) -> Result<DVector<f64>> {
        check_vector("world q", q.as_slice(), self.nq())?;
        let mut out = q.clone();
        for (s, system) in self.systems.iter().enumerate() {
            let (qr, _, _) = self.blocks(s).unwrap_or_default();
            system.normalize(&q.as_slice()[qr.clone()], &mut out.as_mut_slice()[qr])?;
        }
        Ok(out)
    }

    /// A gradient `g` on the coordinates of `q` (size [`World::nq`]) as a tangent gradient
    /// (size [`World::nv`]), `Eᵀ g` system by system ([`crate::Model::tangent_gradient`] for
    /// an articulation, the identity for vector-space systems). This is how a loss written on
    /// the coordinates of the states reaches [`WorldTape::backward`]. Errors: sizes,
    /// non-finite values, a quaternion far from unit length.
    pub fn tangent_gradient(&self, q: &DVector<f64>, g: &DVector<f64>) -> Result<DVector<f64>> {
        check_vector("world q", q.as_slice(), self.nq())?;
        check_vector("world coordinate gradient", g.as_slice(), self.nq())?;
        let mut out = DVector::zeros(self.nv());
        for (s, system) in self.systems.iter().enumerate() {
            let (qr, vr, _) = self.blocks(s).unwrap_or_default();
            system.tangent_gradient(&q.as_slice()[qr.clone()], &g.as_slice()[qr], &mut out.as_mut_slice()[vr])?;
        }
        Ok(out)
    }

    /// A tangent gradient `g` (size [`World::nv`]) at `q` as a gradient on the coordinates
    /// of `q` (size [`World::nq`]) of the function `q ↦ ℓ(normalize(q))`, system by system
    /// ([`crate::Model::coordinate_gradient`] for an articulation: no component along a
    /// quaternion; the identity for vector-space systems). Errors: sizes, non-finite
    /// values, a quaternion far from unit length.
    pub fn coordinate_gradient(&self, q: &DVector<f64>, g: &DVector<f64>) -> Result<DVector<f64>> {
        check_vector("world q", q.as_slice(), self.nq())?;
        check_vector("world tangent gradient", g.as_slice(), self.nv())?;
        let mut out = DVector::zeros(self.nq());
        for (s, system) in self.systems.iter().enumerate() {
            let (qr, vr, _) = self.blocks(s).unwrap_or_default();
            system.coordinate_gradient(&q.as_slice()[qr.clone()], &g.as_slice()[vr], &mut out.as_mut_slice()[qr])?;
        }
        Ok(out)
    }

    /// `q ⊕ dq` over all systems (`dq` tangent, of size [`World::nv`]). Errors: sizes.
    pub fn retract(&self, q: &DVector<f64>, dq: &DVector<f64>) -> Result<DVector<f64>> {
        if q.len() != self.nq() {
            return Err(Error::Dimension { what: "world q", expected: self.nq(), got: q.len() });
        }
        if dq.len() != self.nv() {
            return Err(Error::Dimension { what: "world dq", expected: self.nv(), got: dq.len() });
        }
        let mut out = q.clone();
        for (s, system) in self.systems.iter().enumerate() {
            let (qr, vr, _) = self.blocks(s).unwrap_or_default();
            system.retract(&q.as_slice()[qr.clone()], &dq.as_slice()[vr], &mut out.as_mut_slice()[qr]);
        }
        Ok(out)
    }
}
