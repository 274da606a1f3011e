//! The constraint stage of a step: contacts and joint limits become the rows of a
//! boxed LCP at the velocity level (DiffDART, Werling et al., §3–4 and App. A.2),
//! solved after the smooth velocity update.
//!
//! ```text
//! v_f = v + h q̈_smooth                        (the contact-free step, semi_implicit_euler)
//! M̃  = M(q) + diag(armature + h·damping)      (the step's effective inertia)
//! w   = J v⁺ + β + R f,  v⁺ = v_f + M̃⁻¹ Jᵀ f   ⇒  w = A f + b,  A = J M̃⁻¹ Jᵀ + R,  b = J v_f + β
//! q⁺  = q ⊕ h v⁺
//! ```
//!
//! The impulse is applied after the smooth update with the same effective inertia
//! (an operator splitting: with explicit velocity products it is exactly semi-implicit
//! Euler with the impulse; with midpoint velocity products the impulse does not
//! re-enter the velocity products). Rows, in this order:
//!
//! * per contact (point p, unit normal n from A to B): one normal row `n·(v_B(p) − v_A(p))`,
//!   unilateral (`f_n ≥ 0`), and two friction rows along the tangent basis `t1, t2`:
//!   with the Coulomb model ([`ContactModel`]) boxed by `±μ f_n` (a friction pyramid with
//!   two directions; the findex of ODE); with the no-slip model unbounded equality rows
//!   (`t·(v_B − v_A) = 0` after the step; Drumwright 2015, eqs. 45–46); with the viscous
//!   model unbounded rows with the diagonal regularization `r = 1/(h μ_v)`, i.e.
//!   `t·(v_B − v_A) + r f_t = 0`, the implicit viscous impulse `f_t = −h μ_v t·(v_B − v_A)`
//!   (eqs. 29–42 taken to the velocity level). Both act only at contacts that close within
//!   the step (`φ + h J_n v_f ≤ 0`, the bounce test below); the rows of other contacts are
//!   collapsed boxes `[0, 0]`;
//! * per limited 1-dof coordinate that is within `joint_limit_margin` of a position limit
//!   now (`φ < margin`, φ the gap `q − lo` or `hi − q`) or is predicted to be after the
//!   smooth update (`φ ∓ h v_f < margin`, i.e. `q + h v_f` within the margin of the limit or
//!   past it): one unilateral row (`+e_k` at the lower limit, `−e_k` at the upper). The
//!   prediction makes a fast joint meet its limit within the step instead of stepping over
//!   it (without it, a joint limited to ±0.5 rad hit at 1,000 rad/s with h = 10 ms ended at
//!   10 rad);
//! * per dof with a finite velocity limit `v_max` whose smooth update `v_f` exceeds
//!   `v_max/2` in magnitude: one unilateral row, `−e_k` with `β = v_max` (so `v⁺ ≤ v_max`)
//!   or `+e_k` with `β = v_max` (`v⁺ ≥ −v_max`); the row separates while the joint is
//!   slower than its limit;
//! * the position- and velocity-limit rows added by the limit loop below;
//! * per dof with Coulomb friction `F_c > 0`: one row `e_k` boxed by `±h F_c`.
//!
//! The limit loop (`constraint_stage`): the rows above are chosen before the solve, but
//! the impulses of other rows move other joints (arm7 under τ = 1e4: one joint's velocity
//! row swung a neighbour to −2.8 rad/s against its 2.5 rad/s limit, and it reached
//! 36–40 rad/s without rows). After each solve, every position limit that `q + h v⁺`
//! crosses and every velocity limit that `v⁺` exceeds, and that has no row, gets its row
//! (all at once) and the LCP is solved again (warm-started from the previous pass, the new
//! rows guessed clamping), until no limit lacks a row or [`MAX_LIMIT_PASSES`] solves were
//! made. Rows are only added, so the loop ends. The added rows are recorded
//! ([`ConstraintRecord::added_rows`]) and rebuilt by the backward pass; inside the step's
//! mode they are ordinary rows, so the linearization is the usual one. Re-solves are
//! counted in [`crate::sim::SimStats::limit_resolves`].
//!
//! Tolerance ([`LIMIT_TOLERANCE`]): with `ε = 1e-9 · max(1, ‖v_f‖∞, ‖v⁺‖∞)` (rad/s or
//! m/s), after the final solve every velocity limit holds as `|v⁺| ≤ v_max + ε`, and every
//! position-limit row's condition `±v⁺ + β(φ) ≥ −ε`: a joint that starts inside its limits
//! ends inside them up to `h ε` (rad or m). A joint that starts past a limit by `d`
//! (`φ = −d`) is pushed back at the recovery speed `erp·d/h` (`d/h` with the default
//! `erp = 1`: back at the limit within one step), capped at `v_max` where the dof has a
//! velocity limit (so the position and velocity rows of one dof never ask for
//! incompatible velocities): a limit is never passed by more than one step's worth of the
//! recovery speed still to go, `max(0, d − h·min(erp·d/h, v_max)) + h ε`. Limits that the
//! final solve leaves violated beyond the tolerance (the pass bound reached, or an
//! inexact last-resort PGS solution of the LCP) are never silent: they are listed in
//! [`ConstraintRecord::limit_violations`] and counted in
//! [`crate::sim::SimStats::limit_violations`]; LCP solutions that miss the LCP tolerance
//! are counted in [`crate::sim::SimStats::inexact_solves`].
//!
//! Infeasible row sets: when the LCP has no exact solution, or its solution leaves a
//! row's condition violated beyond [`RELAX_TOLERANCE`] in velocity (impulses so large
//! that their rounding shows: a nearly infeasible set, or a spurious result on a set
//! without a solution), and some row has a negative bias (a
//! penetration recovery, a bounce target), the rows may ask for separations that no
//! motion gives (two opposing contacts between the same bodies, both penetrating). The
//! stage then solves it again with `β = max(β, 0)` and no bounce, which always has a
//! solution ([`ConstraintRecord::relaxed`]); a position stage without an exact solution is
//! dropped ([`ConstraintRecord::correction_dropped`]). Both are counted in
//! [`crate::sim::SimStats::relaxed_solves`] (docs/contact.md, "Infeasible row sets").
//!
//! Bias β (the velocity target):
//!
//! * normal rows that bounce (restitution `e > 0`, approach speed `−J_n v` above
//!   `restitution_threshold`, and the contact predicted to close within the step,
//!   `φ + h J_n v_f ≤ 0`): `β = e J_n v` (so `J_n v⁺ ≥ −e J_n v`), plus, with the
//!   velocity recovery, the penetration term below when `φ < 0`;
//! * other normal rows and joint-limit rows: `β = φ/h` for a gap `φ ≥ 0` (a
//!   speculative contact: the bodies may close the gap but not cross it; for a predicted
//!   joint-limit row far from its limit the same bias lets the joint move up to the limit
//!   within the step and no further). For a penetration it depends on
//!   [`PenetrationRecovery`]: with `Split` (the default), `β = 0` (the bodies stop
//!   approaching), so every bias but a bounce's is `≥ 0` and the stage cannot raise the
//!   kinetic energy (docs/contact.md, "Energy contract"); penetrations are then removed
//!   by the position stage ([`PositionCorrection`]): a frictionless LCP on the
//!   contact-normal and position-limit rows with `β = erp·φ/h` on penetrations (its
//!   contact rows regularized by [`ContactOptions::position_regularization`]), whose
//!   velocity moves `q` over the step and is then dropped. With `Velocity`,
//!   `β = erp·φ/h` (for joint limits capped at `−v_max` where the dof has a velocity
//!   limit, `limit_bias`); with the default `erp = 1` the bias is one linear function of
//!   φ, so the gradients have no kink at φ = 0, but the push-out speed `|φ|/h` is kept as
//!   kinetic energy;
//! * friction rows: `β = 0`.
//!
//! Material of a contact between shapes a and b: `μ = (μ_a + μ_b)/2` and
//! `e = (e_a + e_b)/2` (arithmetic means: smooth in both, documented in docs/contact.md).

use super::islands::{solve_islands, IslandSolver, RowSystem};
use super::trees::{TreeInertia, Trees};
use super::StepInputs;
use crate::collision::mesh_check::IntMap;
use crate::collision::Contact;
use crate::constraint::{detect_contacts, match_contacts, CollisionOptions, CollisionWorkspace};
use crate::constraint::{ContactRows, SparseRows};
use crate::dynamics::Data;
use crate::error::{Error, Result};
use crate::math::reshape_vector;
use crate::solver::lcp::{LcpOptions, LcpSolution, LcpStats, RowBound, RowState};
use crate::solver::ncp::mode::SlidingCone;
use crate::solver::ncp::NcpSolver;
use crate::solver::ppm::{self, FactoredLcp, PpmOptions, PsdRow};
use crate::Model;
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

/// How the Jacobians of a step with a bouncing contact treat `∂q⁺/∂q`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum BounceGradients {
    /// The exact Jacobians of the discrete step (what finite differences of the
    /// simulator give).
    #[default]
    Discrete,
    /// The saltation matrix of each impact (DiffDART §6, made mass-aware): the impact
    /// happens inside the step at a time that moves with q, so `∂q⁺/∂q` gains
    /// `J_w (v⁺ − v⁻)ᵢ aᵢᵀ/(aᵢ·v⁻)` and `∂v⁺/∂q` the free acceleration's share
    /// `((I − R) a_f)ᵢ aᵢᵀ/(aᵢ·v⁻)` per bouncing contact i (docs/contact.md, "Bounces").
    ContinuousTime,
}

/// The friction model of the contacts (Drumwright 2015; docs/contact.md, "Contact models").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContactModel {
    /// Coulomb friction: two friction rows per contact boxed by `±μ f_n` (a friction pyramid).
    #[default]
    Coulomb,
    /// No slip (Drumwright §VI, eqs. 45–46): the tangential relative velocity of every
    /// contact is zero after the step, `t_k · (v_B(p) − v_A(p)) = 0`, as bilateral rows
    /// with unbounded impulses — the limit μ → ∞ of Coulomb friction. Material friction
    /// coefficients are ignored.
    NoSlip,
    /// Purely viscous friction (Drumwright §IV, eqs. 29–42): each contact applies the
    /// tangential force `−μ_v v_t` (μ_v the mean of the shapes'
    /// [`crate::model::Material::viscous_friction`]), taken implicitly over the step: the
    /// impulse is `f_t = −h μ_v J_t v⁺`, a bilateral row `J_t v⁺ + f_t/(h μ_v) = 0` with the
    /// diagonal regularization `1/(h μ_v)`. Coulomb coefficients are ignored; μ_v = 0 is
    /// frictionless.
    Viscous,
}

impl ContactModel {
    /// The name used in scene files and in Python (`"coulomb"`, `"no_slip"`, `"viscous"`).
    pub fn name(&self) -> &'static str {
        match self {
            ContactModel::Coulomb => "coulomb",
            ContactModel::NoSlip => "no_slip",
            ContactModel::Viscous => "viscous",
        }
    }

    /// The model named `name` (see [`ContactModel::name`]).
    pub fn from_name(name: &str) -> Option<ContactModel> {
        [ContactModel::Coulomb, ContactModel::NoSlip, ContactModel::Viscous].into_iter().find(|m| m.name() == name)
    }
}

/// How the constraint stage removes penetrations (docs/contact.md, "Energy contract").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PenetrationRecovery {
    /// In the velocity stage: a penetrating row gets the bias `β = erp·φ/h`, so the
    /// bodies separate at up to `|φ|/h` and keep that speed (this adds kinetic energy:
    /// a deep penetration launches them). The bias is one linear function of φ with the
    /// default `erp = 1`, so the Jacobians have no kink at φ = 0.
    Velocity,
    /// Split: the velocity stage gives a penetrating row `β = 0` (the bodies stop
    /// approaching) and a bouncing row its restitution target alone, so it never raises
    /// the kinetic energy beyond what restitution asks; a position stage
    /// ([`PositionCorrection`]) then moves the configuration out of the penetration
    /// (`erp` of it per step) with a velocity that is not kept. The velocity-stage bias
    /// `max(φ, 0)/h` has a kink at φ = 0 (the Jacobians take the gap side there).
    /// The default: the constraint stage never adds kinetic energy beyond what
    /// restitution asks.
    #[default]
    Split,
}

impl PenetrationRecovery {
    /// The name used in scene files and in Python (`"velocity"`, `"split"`).
    pub fn name(&self) -> &'static str {
        match self {
            PenetrationRecovery::Velocity => "velocity",
            PenetrationRecovery::Split => "split",
        }
    }

    /// The recovery named `name` (see [`PenetrationRecovery::name`]).
    pub fn from_name(name: &str) -> Option<PenetrationRecovery> {
        [PenetrationRecovery::Velocity, PenetrationRecovery::Split].into_iter().find(|m| m.name() == name)
    }
}

/// Which solver the constraint stage uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContactSolver {
    /// The modified principal pivoting method ([`crate::solver::ppm`]) when every row is
    /// unilateral or an equality (the no-slip and viscous models without joint Coulomb
    /// friction), the boxed LCP solver ([`crate::solver::lcp::solve`]) otherwise.
    #[default]
    Auto,
    /// Always the boxed LCP solver.
    BoxedLcp,
    /// The non-smooth Newton NCP solver ([`crate::solver::ncp::NcpSolver`], Macklin et al.
    /// 2019): the friction rows of a contact form an isotropic Coulomb cone
    /// `|f_t| ≤ μ f_n` (no pyramid facets); other rows as with the boxed LCP. Its settings
    /// are [`ContactOptions::ncp`]; docs/ncp.md.
    Ncp,
}

impl ContactSolver {
    /// The name used in scene files and in Python (`"auto"`, `"boxed_lcp"`, `"ncp"`).
    pub fn name(&self) -> &'static str {
        match self {
            ContactSolver::Auto => "auto",
            ContactSolver::BoxedLcp => "boxed_lcp",
            ContactSolver::Ncp => "ncp",
        }
    }

    /// The solver named `name` (see [`ContactSolver::name`]).
    pub fn from_name(name: &str) -> Option<ContactSolver> {
        [ContactSolver::Auto, ContactSolver::BoxedLcp, ContactSolver::Ncp].into_iter().find(|m| m.name() == name)
    }
}

/// Settings of the constraint stage.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContactOptions {
    /// Solve contacts and joint limits (when the model has any).
    pub enabled: bool,
    /// Contacts are created while the signed distance is below this (m).
    pub margin: f64,
    /// Fraction of a penetration removed per step (0 < erp ≤ 1).
    pub erp: f64,
    /// Approach speeds at or below this (m/s) do not bounce.
    pub restitution_threshold: f64,
    /// Joint-limit rows are created within this distance of a limit (rad or m), at the
    /// start of the step or after the smooth update (`q + h v_f`; see the module docs).
    pub joint_limit_margin: f64,
    /// The LCP solver settings (not serialized: the defaults are restored).
    #[serde(skip)]
    pub lcp: LcpOptions,
    /// The NCP solver settings, used with [`ContactSolver::Ncp`] (not serialized: the
    /// defaults are restored).
    #[serde(skip)]
    pub ncp: NcpSolver,
    /// Guess each step's row classification from the previous step (App. A.1).
    pub warm_start: bool,
    /// The bounce treatment of the Jacobians.
    pub bounce_gradients: BounceGradients,
    /// The friction model of the contacts.
    #[serde(default)]
    pub model: ContactModel,
    /// The solver.
    #[serde(default)]
    pub solver: ContactSolver,
    /// How penetrations are removed.
    #[serde(default)]
    pub penetration: PenetrationRecovery,
    /// Regularization ρ (dimensionless, ≥ 0) of the contact rows of the position stage
    /// ([`PenetrationRecovery::Split`]): a contact's row gets the diagonal term
    /// `ρ·(1/m_A + 1/m_B)`, with `m` the mass of the subtree of each side's link
    /// ([`ContactInfo::inverse_mass`]; 0 for the world). Where the mechanism moves the
    /// contact along its normal as easily as a free body would, the correction removes
    /// `≈ 1/(1 + ρ)` of the penetration per step; where it can hardly move it (a
    /// pendulum's ball penetrating the ground near the bottom of its swing, whose path is
    /// almost tangent to the ground), the correction fades instead of swinging the
    /// mechanism by `φ/J_n` (see `docs/contact.md`).
    #[serde(default = "default_position_regularization")]
    pub position_regularization: f64,
    /// Penetrations no deeper than this (m, ≥ 0) do not start the position stage
    /// ([`PenetrationRecovery::Split`]); once some row penetrates deeper, the stage
    /// corrects every penetrating row. Bodies resting on each other keep gaps of
    /// rounding size, half of them negative (`−1e-17` m in a settled pile): without the
    /// tolerance every step of a resting scene ran a second, position LCP for a
    /// correction of that size.
    #[serde(default = "default_penetration_tolerance")]
    pub penetration_tolerance: f64,
    /// Compliance ρ_n (dimensionless, ≥ 0; default 0: rigid) of the contact normal rows of
    /// the velocity stage: a contact's normal row gets the diagonal term
    /// `r = ρ_n·(1/m_A + 1/m_B)` (the reference of [`Self::position_regularization`]), so
    /// `w_n = J_n v⁺ + β + r f_n ≥ 0 ⊥ f_n ≥ 0`: a contact pressed by the impulse `f_n`
    /// closes at `r f_n` during the step (a body of mass m resting on one contact under
    /// gravity: `ρ_n g h`, 1e-5 m/s at ρ_n = 1e-3 and h = 1 ms; contacts holding one body
    /// act in parallel). The penetration recovery pushes back: with
    /// [`PenetrationRecovery::Velocity`] the body settles `r f_n h/erp` deep; with the
    /// split recovery the position stage lifts the contact back each step (so it runs on
    /// every step of a resting compliant contact), and the reported velocity keeps the
    /// closing speed. `tests/contact_compliance.rs` checks these closed forms.
    ///
    /// Rigid redundant contacts (a box on four coplanar corners) leave their normal
    /// forces undetermined along a "twist" pattern; while the box slides and spins the
    /// isotropic cones of the NCP solver make its forward step depend non-smoothly on
    /// the state (`docs/ncp.md`, "Redundant sliding contacts"). Any ρ_n > 0 determines
    /// the forces and makes those steps differentiable.
    #[serde(default)]
    pub normal_compliance: f64,
    /// Compliance ρ_t (dimensionless, ≥ 0; default 0: rigid) of the Coulomb friction
    /// rows: each gets the diagonal term `r = ρ_t·(1/m_A + 1/m_B)`, so a sticking contact
    /// holding the friction impulse `f_t` creeps at `r f_t`, with no restoring term (a
    /// body on one contact of a 30° incline under gravity, at ρ_t = 1e-3 and h = 1 ms:
    /// 5 µm/s), and a sliding one slips along `J_t v⁺ + r f_t`.
    ///
    /// Sticking on redundant contacts (a box on four corners) leaves the friction forces
    /// undetermined as well; with [`Self::normal_compliance`], any ρ_t > 0 determines
    /// every force, so the NCP solver's steps of a box pushed by an arm are smooth
    /// (`docs/ncp.md`). The no-slip and viscous models ignore it.
    #[serde(default)]
    pub friction_compliance: f64,
}

/// Which stage of a step's constraint solve a row system belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// The velocity stage: `v_f → v⁺` with the recorded impulses.
    Velocity,
    /// The position stage ([`crate::step::PositionCorrection`]): `v⁺ → v⁺ + M̃⁻¹Jᵀg`,
    /// the velocity that moves the configuration; its "free" velocity is `v⁺`.
    Position,
}

impl ContactOptions {
    /// The dimensionless ρ of a row of kind `row` in `stage`, whose regularization is
    /// `ρ·(1/m_A + 1/m_B)` ([`ContactInfo::inverse_mass`]): the one rule of the step
    /// (assembly, position stage) and of its backward pass (the mass derivatives).
    /// - Position stage: [`Self::position_regularization`] on the normal rows; the
    ///   friction rows are collapsed boxes.
    /// - Velocity stage: [`Self::normal_compliance`] on the normal rows and, with the
    ///   Coulomb model, [`Self::friction_compliance`] on the friction rows (the no-slip
    ///   and viscous models regularize theirs otherwise).
    /// - Other rows (joint limits, joint friction): none.
    pub(crate) fn compliance(&self, row: RowKind, stage: Stage) -> f64 {
        match (row, stage) {
            (RowKind::ContactNormal { .. }, Stage::Position) => self.position_regularization,
            (RowKind::ContactNormal { .. }, Stage::Velocity) => self.normal_compliance,
            (RowKind::ContactFriction { .. }, Stage::Velocity) if self.model == ContactModel::Coulomb => {
                self.friction_compliance
            }
            _ => 0.0,
        }
    }
}

/// The default [`ContactOptions::position_regularization`].
pub const POSITION_REGULARIZATION: f64 = 1e-3;

fn default_position_regularization() -> f64 {
    POSITION_REGULARIZATION
}

/// The default [`ContactOptions::penetration_tolerance`] (m): a nanometre, far above the
/// rounding of positions of order 1–1,000 m and far below anything a contact resolves.
pub const PENETRATION_TOLERANCE: f64 = 1e-9;

fn default_penetration_tolerance() -> f64 {
    PENETRATION_TOLERANCE
}

impl Default for ContactOptions {
    fn default() -> Self {
        Self {
            enabled: true,
            margin: 5e-3,
            erp: 1.0,
            restitution_threshold: 0.05,
            joint_limit_margin: 1e-2,
            lcp: LcpOptions::default(),
            ncp: NcpSolver::default(),
            warm_start: true,
            bounce_gradients: BounceGradients::Discrete,
            model: ContactModel::Coulomb,
            solver: ContactSolver::Auto,
            penetration: PenetrationRecovery::default(),
            position_regularization: POSITION_REGULARIZATION,
            penetration_tolerance: PENETRATION_TOLERANCE,
            normal_compliance: 0.0,
            friction_compliance: 0.0,
        }
    }
}

impl ContactOptions {
    /// Checks the settings.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str, x: f64| Err(Error::InvalidInput(format!("contact option {what} is invalid: {x}")));
        if !(self.margin.is_finite() && self.margin >= 0.0) {
            return bad("margin (finite, ≥ 0)", self.margin);
        }
        if !(self.erp > 0.0 && self.erp <= 1.0) {
            return bad("erp (in (0, 1])", self.erp);
        }
        if !(self.restitution_threshold.is_finite() && self.restitution_threshold >= 0.0) {
            return bad("restitution_threshold (finite, ≥ 0)", self.restitution_threshold);
        }
        if !(self.joint_limit_margin.is_finite() && self.joint_limit_margin >= 0.0) {
            return bad("joint_limit_margin (finite, ≥ 0)", self.joint_limit_margin);
        }
        if !(self.position_regularization.is_finite() && self.position_regularization >= 0.0) {
            return bad("position_regularization (finite, ≥ 0)", self.position_regularization);
        }
        if !(self.penetration_tolerance.is_finite() && self.penetration_tolerance >= 0.0) {
            return bad("penetration_tolerance (finite, ≥ 0)", self.penetration_tolerance);
        }
        if !(self.normal_compliance.is_finite() && self.normal_compliance >= 0.0) {
            return bad("normal_compliance (finite, ≥ 0)", self.normal_compliance);
        }
        if !(self.friction_compliance.is_finite() && self.friction_compliance >= 0.0) {
            return bad("friction_compliance (finite, ≥ 0)", self.friction_compliance);
        }
        let n = &self.ncp;
        if !(n.tolerance.is_finite() && n.tolerance > 0.0) {
            return bad("ncp tolerance (finite, > 0)", n.tolerance);
        }
        if !(n.damping > 0.0 && n.damping <= 1.0) {
            return bad("ncp damping (in (0, 1])", n.damping);
        }
        if !(n.shift.is_finite() && n.shift >= 0.0) {
            return bad("ncp shift (finite, ≥ 0)", n.shift);
        }
        if n.max_iterations == 0 {
            return bad("ncp max_iterations (≥ 1)", 0.0);
        }
        Ok(())
    }

    /// The tolerance a constraint solve's residual is held to: the NCP solver's
    /// (velocity units) with [`ContactSolver::Ncp`], the LCP's (relative) otherwise.
    pub fn solve_tolerance(&self) -> f64 {
        match self.solver {
            ContactSolver::Ncp => self.ncp.tolerance,
            _ => self.lcp.tolerance,
        }
    }
}

/// What a constraint row stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RowKind {
    /// Normal row of contact `contact`.
    ContactNormal {
        /// Index into the step's contacts.
        contact: usize,
    },
    /// Friction row of contact `contact` along tangent `direction` (0: t1, 1: t2).
    ContactFriction {
        /// Index into the step's contacts.
        contact: usize,
        /// 0 or 1.
        direction: u8,
    },
    /// Lower position limit of dof `dof`.
    JointLower {
        /// The dof (= its coordinate: limits apply to 1-dof coordinates).
        dof: usize,
    },
    /// Upper position limit of dof `dof`.
    JointUpper {
        /// The dof.
        dof: usize,
    },
    /// Upper velocity limit of dof `dof`: `v⁺ ≤ v_max` (a unilateral row `−v⁺ + v_max ≥ 0`).
    VelocityUpper {
        /// The dof.
        dof: usize,
    },
    /// Lower velocity limit of dof `dof`: `v⁺ ≥ −v_max` (a unilateral row `v⁺ + v_max ≥ 0`).
    VelocityLower {
        /// The dof.
        dof: usize,
    },
    /// Coulomb friction of dof `dof`.
    JointFriction {
        /// The dof.
        dof: usize,
    },
}

/// Per-contact data of a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactInfo {
    /// Friction coefficient of the pair (Coulomb model).
    pub friction: f64,
    /// Viscous friction coefficient μ_v of the pair (viscous model; N·s/m).
    pub viscous_friction: f64,
    /// Restitution of the pair.
    pub restitution: f64,
    /// True when the normal row used the restitution target.
    pub bounce: bool,
    /// Normal relative velocity at the start of the step, `J_n v`.
    pub approach_velocity: f64,
    /// `1/m_A + 1/m_B`, with `m` the mass of the subtree of each side's link (of its
    /// nearest moving ancestor, across fixed joints; 1/kg; a side welded to the world adds
    /// 0): the reference of the position stage's regularization
    /// ([`ContactOptions::position_regularization`]).
    pub inverse_mass: f64,
}

/// The constraint stage of one step: everything its backward pass needs.
#[derive(Clone, Debug)]
pub struct ConstraintRecord {
    /// The contacts (geometry at q).
    pub contacts: Vec<Contact>,
    /// Per contact: material and bounce data.
    pub info: Vec<ContactInfo>,
    /// What each row is.
    pub rows: Vec<RowKind>,
    /// The bounds of each row.
    pub bounds: Vec<RowBound>,
    /// The bias β of each row.
    pub bias: DVector<f64>,
    /// The diagonal regularization r of each row (`w = J v⁺ + β + r f`; nonzero only on
    /// the tangential rows of the viscous model, `1/(h μ_v)`, and on the Coulomb rows with
    /// [`ContactOptions::normal_compliance`] and [`ContactOptions::friction_compliance`];
    /// a sliding NCP cone's row across the slip adds its cone compliance, see
    /// `cone_frames`).
    pub regularization: DVector<f64>,
    /// The impulses f (N·s, or N·m·s for joint rows).
    pub impulses: DVector<f64>,
    /// The row classification (clamping / separating / at bound / tied).
    pub states: Vec<RowState>,
    /// The velocity after the smooth update, before the impulse.
    pub v_free: DVector<f64>,
    /// The LCP solver's statistics.
    pub stats: LcpStats,
    /// The options used.
    pub options: ContactOptions,
    /// The position stage, when some contact or position limit penetrated at q.
    pub correction: Option<PositionCorrection>,
    /// Joint-limit rows added by the re-solve loop of the step (limits that the impulses
    /// of other rows pushed a joint over; see the module docs). The backward pass
    /// rebuilds the rows with them.
    pub added_rows: Vec<RowKind>,
    /// LCP solves of the step: 1 plus the re-solves of the limit loop.
    pub passes: usize,
    /// Limits that the final solve leaves violated beyond [`LIMIT_TOLERANCE`], with the
    /// violation (rad or m past the position the row allows for a position limit; rad/s
    /// or m/s over `v_max` for a velocity limit). Empty when every limit holds; counted
    /// in [`crate::sim::SimStats::limit_violations`].
    pub limit_violations: Vec<(RowKind, f64)>,
    /// The recovery biases were dropped on this step: the LCP with them had no exact
    /// solution (an infeasible row set, see the module docs), so it was solved again with
    /// no bounce target and `β = 0` on every penetrating contact and position limit.
    /// Counted in [`crate::sim::SimStats::relaxed_solves`].
    pub relaxed: bool,
    /// The position stage ([`PenetrationRecovery::Split`]) was dropped on this step: its
    /// LCP had no exact solution (penetrations that no motion removes together, e.g. a
    /// body pinched between two others, with
    /// [`ContactOptions::position_regularization`] = 0; a regularized stage always has
    /// one), so `correction` is `None`. Counted in
    /// [`crate::sim::SimStats::relaxed_solves`].
    pub correction_dropped: bool,
    /// With [`ContactSolver::Ncp`]: the contacts whose friction cone slides, each with the
    /// turn of its tangent rows into its slip frame. Their rows (and `impulses`, `states`,
    /// `regularization`) are recorded in that frame: the first friction row along the
    /// slip, at its bound `f = −μ f_n`, the second across it, clamping with the
    /// compliance `|w_t|/(μ f_n)` (the linearization of `f_t = −μ f_n ŵ`; docs/ncp.md).
    /// Empty for the LCP solvers.
    pub cone_frames: Vec<ConeFrame>,
}

/// The slip frame of a sliding contact's friction cone (the NCP solver;
/// [`ConstraintRecord::cone_frames`]): the friction rows `t₁, t₂` turned to
/// `t₁' = c t₁ + s t₂` (along the slip) and `t₂' = −s t₁ + c t₂`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConeFrame {
    /// The contact.
    pub contact: usize,
    /// `c`, `s`: the slip direction in the contact's tangent basis.
    pub cos: f64,
    /// See `cos`.
    pub sin: f64,
    /// `|w_t|/(μ f_n)` (s): the compliance of the row across the slip.
    pub compliance: f64,
}

/// The slip frames of the NCP solver's sliding cones over `asm`'s rows.
fn cone_frames(asm: &Assembly, sliding: &[SlidingCone]) -> Result<Vec<ConeFrame>> {
    sliding
        .iter()
        .map(|c| match (asm.rows[c.normal], asm.rows[c.rows[0]], asm.rows[c.rows[1]]) {
            (
                RowKind::ContactNormal { contact },
                RowKind::ContactFriction { contact: a, direction: 0 },
                RowKind::ContactFriction { contact: b, direction: 1 },
            ) if a == contact && b == contact => {
                Ok(ConeFrame { contact, cos: c.direction[0], sin: c.direction[1], compliance: c.compliance })
            }
            other => Err(Error::Numerical {
                algorithm: "contact stage (NCP)",
                detail: format!("a sliding cone's rows are not one contact's normal and two friction rows: {other:?}"),
            }),
        })
        .collect()
}

/// Turns the friction rows of the contacts in `frames` into their slip frames: the rows
/// of `asm` and `crow` (the Jacobian and the contact frames), and adds the cone's
/// compliance to the row across the slip (the two rows share their regularization
/// `ρ_t·(1/m_A + 1/m_B)`, which the turn leaves as it is). Called once on a fresh assembly.
pub(crate) fn turn_cones(asm: &mut Assembly, crow: &mut ContactRows, frames: &[ConeFrame]) {
    for cf in frames {
        let [t1, t2] = [3 * cf.contact + 1, 3 * cf.contact + 2];
        asm.j.turn_rows(t1, t2, cf.cos, cf.sin);
        crow.turn_tangents(cf.contact, cf.cos, cf.sin);
        asm.regularization[t2] += cf.compliance;
    }
}

/// The position stage of a step (the split penetration correction): a frictionless
/// LCP on the contact-normal and position-limit rows, solved after the velocity stage,
/// whose "impulse" `g` moves the configuration but not the velocity:
///
/// ```text
/// w = J (v⁺ + M̃⁻¹ Jᵀ g) + β_pos + R g ≥ 0,  g ≥ 0,  gᵀw = 0,    β_pos = φ/h (gap), erp·φ/h (penetration)
/// q⁺ = q ⊕ h (v⁺ + M̃⁻¹ Jᵀ g),   v_next = v⁺
/// ```
///
/// `R` is diagonal: `ρ·(1/m_A + 1/m_B)` on the contact rows
/// ([`ContactOptions::position_regularization`]), 0 on the limit rows.
#[derive(Clone, Debug)]
pub struct PositionCorrection {
    /// The bias of every row in this stage (0 on the rows other than position rows).
    pub bias: DVector<f64>,
    /// The pseudo-impulses g (one per row; 0 on the rows other than position rows).
    pub impulses: DVector<f64>,
    /// The classification of every row in this stage.
    pub states: Vec<RowState>,
    /// The velocity that moves the configuration, `v⁺ + M̃⁻¹ Jᵀ g`.
    pub v_position: DVector<f64>,
    /// The LCP solver's statistics.
    pub stats: LcpStats,
}

impl ConstraintRecord {
    /// The number of constraint rows.
    pub fn nrows(&self) -> usize {
        self.rows.len()
    }
    /// Rows classified as tied (f = 0 and w = 0); differentiated as separating.
    pub fn tied_rows(&self) -> usize {
        self.states.iter().filter(|s| **s == RowState::Tied).count()
    }
    /// True when the velocity stage's LCP solution meets the solver's tolerance
    /// ([`crate::solver::lcp::LcpOptions::tolerance`]; a position stage that misses it is
    /// dropped, never kept). False only for a last-resort PGS result that no pivoting
    /// method or standardization could make exact (counted in
    /// [`crate::sim::SimStats::inexact_solves`]): the backward pass then differentiates
    /// the classification of the approximate solution, with its impulses, which is a
    /// derivative of no exact solution (see docs/contact.md, "Inexact solves").
    pub fn solved_exactly(&self) -> bool {
        self.stats.residual <= self.options.lcp.tolerance
    }
}

/// Persistent workspace of the constraint stage (contact detection buffers and the
/// previous step's classification for the warm start).
#[derive(Clone, Debug)]
pub struct ConstraintWorkspace {
    collision: CollisionWorkspace,
    /// The last assembly (its buffers reused by the next step).
    assembly: Assembly,
    /// The last contact rows (reused likewise).
    contact_rows: ContactRows,
    /// The model's trees (the islands' units).
    trees: Trees,
    /// `M̃` of the last step, by trees (its storage reused).
    inertia: TreeInertia,
    /// The previous step's solve, for the warm start of the next.
    previous: Option<PreviousSolve>,
}

/// What a step's warm start takes from the previous step's constraint solve.
#[derive(Clone, Debug)]
struct PreviousSolve {
    contacts: Vec<Contact>,
    rows: Vec<RowKind>,
    /// The rows' classification (the LCP solvers' warm start).
    states: Vec<RowState>,
    /// The rows' forces, in the contacts' own tangent bases (the NCP solver's).
    forces: Vec<f64>,
}

impl ConstraintWorkspace {
    /// A workspace for `model`.
    pub fn new(model: &Model) -> Self {
        Self {
            collision: CollisionWorkspace::new(model),
            assembly: Assembly::default(),
            contact_rows: ContactRows::default(),
            trees: Trees::new(model),
            inertia: TreeInertia::default(),
            previous: None,
        }
    }
    /// Forgets the previous step (no warm start on the next one).
    pub fn reset(&mut self) {
        self.previous = None;
    }
}

/// True when the model can have constraint rows at all.
pub fn has_constraints(model: &Model) -> bool {
    !model.collision_model().shapes.is_empty()
        || model.lower_limits().iter().any(|x| x.is_finite())
        || model.upper_limits().iter().any(|x| x.is_finite())
        || model.joint_friction().iter().any(|x| *x > 0.0)
        || model.velocity_limits().iter().any(|x| x.is_finite())
}

/// The 1-dof coordinates: `(coordinate, dof)` pairs of joints without quaternions.
fn scalar_coordinates(model: &Model) -> impl Iterator<Item = (usize, usize)> + '_ {
    model.joints.iter().enumerate().filter(|(_, j)| !j.kind.has_quaternion()).flat_map(move |(i, j)| {
        let (qa, va) = (model.q_idx[i], model.v_idx[i]);
        (0..j.nv()).map(move |r| (qa + r, va + r))
    })
}

/// The assembled rows of one step.
#[derive(Clone, Debug, Default)]
pub(crate) struct Assembly {
    pub contacts: Vec<Contact>,
    pub info: Vec<ContactInfo>,
    pub rows: Vec<RowKind>,
    pub bounds: Vec<RowBound>,
    pub bias: DVector<f64>,
    /// `∂β/∂φ` of each position-limit row ([`limit_bias`]; zero on the other rows).
    pub bias_slope: DVector<f64>,
    /// Diagonal regularization of each row.
    pub regularization: DVector<f64>,
    /// Row Jacobian (m × nv), by rows.
    pub j: SparseRows,
    /// The gap φ of each contact-normal and position-limit row (0 on the other rows).
    pub gap: DVector<f64>,
    /// Scratch of [`assemble_into`]: the joint rows before they are written.
    joint_rows: Vec<(RowKind, RowBound, f64)>,
}

impl Assembly {
    /// Makes `self` a copy of `other`, reusing its storage.
    pub fn copy_from(&mut self, other: &Assembly) {
        self.contacts.clone_from(&other.contacts);
        self.info.clone_from(&other.info);
        self.rows.clone_from(&other.rows);
        self.bounds.clone_from(&other.bounds);
        for (dst, src) in [
            (&mut self.bias, &other.bias),
            (&mut self.bias_slope, &other.bias_slope),
            (&mut self.regularization, &other.regularization),
            (&mut self.gap, &other.gap),
        ] {
            reshape_vector(dst, src.len());
            dst.copy_from(src);
        }
        self.j.clone_from(&other.j);
    }

    /// `J_r · x` over the dofs of row `r` ([`SparseRows::dot`]).
    pub fn row_dot(&self, r: usize, x: &[f64]) -> f64 {
        self.j.dot(r, x)
    }

    /// `J x + bias` (`m`), row by row over each row's dofs.
    pub fn velocities_plus_bias(&self, x: &[f64]) -> DVector<f64> {
        DVector::from_fn(self.rows.len(), |r, _| self.row_dot(r, x) + self.bias[r])
    }

    /// Whether row `r` is a position row (a contact normal or a joint position limit),
    /// the rows the position stage acts on.
    pub fn is_position_row(&self, r: usize) -> bool {
        matches!(self.rows[r], RowKind::ContactNormal { .. } | RowKind::JointLower { .. } | RowKind::JointUpper { .. })
    }

    /// True when some position row penetrates deeper than `tolerance` (φ < −tolerance):
    /// the position stage has work ([`ContactOptions::penetration_tolerance`]).
    pub fn penetrates(&self, tolerance: f64) -> bool {
        (0..self.rows.len()).any(|r| self.is_position_row(r) && self.gap[r] < -tolerance)
    }

    /// The position stage's bias of position row `r`: `φ/h` on a gap, `erp·φ/h` on a
    /// penetration.
    pub fn position_bias(&self, r: usize, h: f64, erp: f64) -> f64 {
        let phi = self.gap[r];
        if phi < 0.0 {
            erp * phi / h
        } else {
            phi / h
        }
    }

    /// The position stage's regularization of row `r`: `ρ·(1/m_A + 1/m_B)` on a contact
    /// normal ([`ContactOptions::position_regularization`]), 0 on the other rows.
    pub fn position_regularization(&self, r: usize, options: &ContactOptions) -> f64 {
        match self.rows[r] {
            RowKind::ContactNormal { contact } | RowKind::ContactFriction { contact, .. } => {
                options.compliance(self.rows[r], Stage::Position) * self.info[contact].inverse_mass
            }
            _ => 0.0,
        }
    }

    /// The rows of the position stage: the position rows unilateral with the bias
    /// `φ/h` on a gap and `erp·φ/h` on a penetration; every other row a collapsed box
    /// (no friction, no velocity limit, no joint friction); no bounce. The contact rows
    /// get the regularization `ρ·(1/m_A + 1/m_B)`
    /// ([`ContactOptions::position_regularization`]), the other rows none.
    pub fn position_stage(&mut self, h: f64, options: &ContactOptions) {
        for r in 0..self.rows.len() {
            if self.is_position_row(r) {
                self.bias[r] = self.position_bias(r, h, options.erp);
                self.bounds[r] = RowBound::Box { lo: 0.0, hi: f64::INFINITY };
            } else {
                self.bias[r] = 0.0;
                self.bounds[r] = RowBound::Box { lo: 0.0, hi: 0.0 };
            }
            self.regularization[r] = self.position_regularization(r, options);
        }
        for i in &mut self.info {
            i.bounce = false;
        }
    }
}

/// The body whose subtree mass is the reference of `body`'s contacts in the position
/// stage's regularization: `body`, or, across fixed joints, its nearest ancestor that
/// moves (a sensor or collision link welded to a link has no mass of its own). `None`
/// when the body is welded to the world (its side does not move).
pub(crate) fn moving_ancestor(model: &Model, body: usize) -> Option<usize> {
    let mut b = body;
    while model.joints()[b].nv() == 0 {
        b = model.parent(b)?;
    }
    Some(b)
}

/// The mass of the subtree of `body` (the body and its descendants), kg.
pub(crate) fn subtree_mass(model: &Model, body: usize) -> f64 {
    model.subtree(body).map(|k| model.bodies()[k].inertia.mass).sum()
}

/// The reference bodies of contact `c`'s position-stage regularization: for each side on
/// a body, its [`moving_ancestor`], when that has a subtree with mass (a side welded to the
/// world, or a massless subtree, which the model builder rejects for moving bodies, adds
/// nothing). `1/m_A + 1/m_B` sums `1/`[`subtree_mass`] over them.
pub(crate) fn regularization_sides<'a>(model: &'a Model, c: &Contact) -> impl Iterator<Item = usize> + 'a {
    let cm = model.collision_model();
    [c.id.shape_a, c.id.shape_b]
        .into_iter()
        .filter_map(move |s| cm.shapes[s as usize].body.and_then(|b| moving_ancestor(model, b)))
        .filter(move |&b| subtree_mass(model, b) > 0.0)
}

/// The effective inertia `M̃ = M + diag(armature + h·damping)` at the poses in `data`
/// (kinematics done), Cholesky-factorised.
pub(crate) fn effective_inertia(
    model: &Model,
    data: &mut Data,
    h: f64,
) -> Result<nalgebra::Cholesky<f64, nalgebra::Dyn>> {
    nalgebra::Cholesky::new(effective_inertia_matrix(model, data, h)).ok_or_else(|| Error::Numerical {
        algorithm: "contact stage",
        detail: "the effective inertia M + diag(armature + h·damping) is not positive definite".into(),
    })
}

/// The matrix `M̃ = M + diag(armature + h·damping)` at the poses in `data` (kinematics done).
fn effective_inertia_matrix(model: &Model, data: &mut Data, h: f64) -> DMatrix<f64> {
    let nv = model.nv();
    let mut m = DMatrix::zeros(nv, nv);
    crate::dynamics::crba_entries(model, data, |l, k, value| m[(l, k)] = value);
    for k in 0..nv {
        m[(k, k)] += h * model.damping[k];
    }
    m
}

/// [`effective_inertia_matrix`] by trees into `out` (the same entries; the zeros between
/// trees are neither stored nor visited).
pub(crate) fn effective_inertia_blocks(model: &Model, data: &mut Data, h: f64, trees: &Trees, out: &mut TreeInertia) {
    out.reset(trees);
    let (of_dof, local) = (&trees.of_dof, &trees.local);
    let blocks = &mut out.blocks;
    crate::dynamics::crba_entries(model, data, |l, k, value| blocks[of_dof[l]][(local[l], local[k])] = value);
    for k in 0..model.nv() {
        blocks[of_dof[k]][(local[k], local[k])] += h * model.damping[k];
    }
}

/// Builds the rows at the poses in `data` for the given contacts (contact detection
/// done by the caller): Jacobian, bounds, bias. `v` is the start velocity, `v_free`
/// the smooth update's. `added` lists joint-limit rows to create beyond the predicted
/// ones (the rows added by the re-solve loop of [`constraint_stage`]; the backward pass
/// passes [`ConstraintRecord::added_rows`] to rebuild the same rows). `relaxed`: the
/// recovery biases are dropped ([`ConstraintRecord::relaxed`]): no bounce, and no
/// negative bias on a penetrating contact or position limit (`β = 0` there, slope 0).
///
/// The contacts are those already in `out.contacts`; `crow` receives their
/// [`ContactRows`]. Allocates only to grow the buffers.
#[allow(clippy::too_many_arguments)]
pub(crate) fn assemble_into(
    out: &mut Assembly,
    crow: &mut ContactRows,
    model: &Model,
    data: &Data,
    q: &[f64],
    v: &[f64],
    v_free: &[f64],
    h: f64,
    options: &ContactOptions,
    added: &[RowKind],
    relaxed: bool,
) -> Result<()> {
    let nv = model.nv();
    let cm = model.collision_model();
    crow.rebuild(model, data, &out.contacts)?;
    let nc = out.contacts.len();
    let lower = model.lower_limits();
    let upper = model.upper_limits();
    let margin = options.joint_limit_margin;
    let unilateral = RowBound::Box { lo: 0.0, hi: f64::INFINITY };
    let joint_rows = &mut out.joint_rows;
    joint_rows.clear();
    // Position limits: a row where the joint is within the margin of the limit now or
    // after the smooth update (`q + h v_f`), so a fast joint cannot step over its limit.
    for (c, k) in scalar_coordinates(model) {
        let lo = lower[c];
        let kind = RowKind::JointLower { dof: k };
        if lo.is_finite() {
            let phi = q[c] - lo;
            if phi < margin || phi + h * v_free[k] < margin || added.contains(&kind) {
                joint_rows.push((kind, unilateral, phi));
            }
        }
        let hi = upper[c];
        let kind = RowKind::JointUpper { dof: k };
        if hi.is_finite() {
            let phi = hi - q[c];
            if phi < margin || phi - h * v_free[k] < margin || added.contains(&kind) {
                joint_rows.push((kind, unilateral, phi));
            }
        }
    }
    // Velocity limits: a row where the smooth update reaches half the limit (a row
    // further inside would only ever separate), or added by the re-solve loop.
    for k in 0..nv {
        let vmax = model.velocity_limits()[k];
        if !vmax.is_finite() {
            continue;
        }
        let kind = RowKind::VelocityUpper { dof: k };
        if v_free[k] > 0.5 * vmax || added.contains(&kind) {
            joint_rows.push((kind, unilateral, vmax));
        }
        let kind = RowKind::VelocityLower { dof: k };
        if v_free[k] < -0.5 * vmax || added.contains(&kind) {
            joint_rows.push((kind, unilateral, vmax));
        }
    }
    for k in 0..nv {
        let fc = model.joint_friction()[k];
        if fc > 0.0 {
            joint_rows.push((RowKind::JointFriction { dof: k }, RowBound::Box { lo: -h * fc, hi: h * fc }, 0.0));
        }
    }
    let m = 3 * nc + joint_rows.len();
    let Assembly { contacts, info, rows, bounds, bias, bias_slope, regularization, j, gap, joint_rows } = out;
    // The contact rows first, then the joint rows.
    j.clone_from(&crow.j);
    rows.clear();
    bounds.clear();
    info.clear();
    for x in [&mut *bias, &mut *gap, &mut *regularization, &mut *bias_slope] {
        reshape_vector(x, m);
    }
    for (i, c) in contacts.iter().enumerate() {
        let (sa, sb) = (&cm.shapes[c.id.shape_a as usize].material, &cm.shapes[c.id.shape_b as usize].material);
        let mu = 0.5 * (sa.friction + sb.friction);
        let mu_v = 0.5 * (sa.viscous_friction + sb.viscous_friction);
        let e = 0.5 * (sa.restitution + sb.restitution);
        let vn = crow.j.dot(3 * i, v);
        let vn_free = crow.j.dot(3 * i, v_free);
        let phi = c.geometry.distance;
        let closing = phi + h * vn_free <= 0.0;
        let bounce = !relaxed && e > 0.0 && vn < -options.restitution_threshold && closing;
        let beta = normal_bias(phi, h, options, if bounce { Some(e * vn) } else { None });
        bias[3 * i] = if relaxed { beta.max(0.0) } else { beta };
        gap[3 * i] = phi;
        let inverse_mass = regularization_sides(model, c).map(|b| 1.0 / subtree_mass(model, b)).sum();
        regularization[3 * i] =
            options.compliance(RowKind::ContactNormal { contact: i }, Stage::Velocity) * inverse_mass;
        info.push(ContactInfo {
            friction: mu,
            viscous_friction: mu_v,
            restitution: e,
            bounce,
            approach_velocity: vn,
            inverse_mass,
        });
        rows.push(RowKind::ContactNormal { contact: i });
        bounds.push(RowBound::Box { lo: 0.0, hi: f64::INFINITY });
        // No-slip and viscous tangent rows act at contacts that close within the step
        // (a speculative contact further away would otherwise hold on at a distance);
        // elsewhere, and with μ_v = 0, a collapsed box: no friction, never clamping.
        let free = RowBound::Box { lo: f64::NEG_INFINITY, hi: f64::INFINITY };
        let none = RowBound::Box { lo: 0.0, hi: 0.0 };
        let (bound, r) = match options.model {
            ContactModel::Coulomb => {
                let friction = RowKind::ContactFriction { contact: i, direction: 0 };
                (RowBound::Friction { normal: 3 * i, mu }, options.compliance(friction, Stage::Velocity) * inverse_mass)
            }
            ContactModel::NoSlip if closing => (free, 0.0),
            ContactModel::Viscous if closing && mu_v > 0.0 => (free, 1.0 / (h * mu_v)),
            ContactModel::NoSlip | ContactModel::Viscous => (none, 0.0),
        };
        for d in 0..2u8 {
            rows.push(RowKind::ContactFriction { contact: i, direction: d });
            bounds.push(bound);
            regularization[3 * i + 1 + d as usize] = r;
        }
    }
    for (r, &(kind, bound, phi)) in joint_rows.iter().enumerate() {
        let row = 3 * nc + r;
        match kind {
            RowKind::JointLower { dof } | RowKind::JointUpper { dof } => {
                j.push_row(&[dof], &[if matches!(kind, RowKind::JointLower { .. }) { 1.0 } else { -1.0 }]);
                let (b, slope) = match limit_bias(phi, h, options, model.velocity_limits()[dof]) {
                    (b, _) if relaxed && b < 0.0 => (0.0, 0.0),
                    bs => bs,
                };
                bias[row] = b;
                bias_slope[row] = slope;
                gap[row] = phi;
            }
            RowKind::VelocityUpper { dof } => {
                j.push_row(&[dof], &[-1.0]);
                bias[row] = phi;
            }
            RowKind::VelocityLower { dof } => {
                j.push_row(&[dof], &[1.0]);
                bias[row] = phi;
            }
            RowKind::JointFriction { dof } => j.push_row(&[dof], &[1.0]),
            _ => unreachable!("only joint rows here"),
        }
        rows.push(kind);
        bounds.push(bound);
    }
    Ok(())
}

/// The velocity-stage bias of a joint position-limit row with gap φ (`q − lo` or
/// `hi − q`) and its slope `∂β/∂φ`: `φ/h` for a gap (speculative: the joint may close
/// the gap within the step but not cross it). For a penetration, with
/// [`PenetrationRecovery::Velocity`], `erp·φ/h`, the recovery speed; where the dof has a
/// finite velocity limit `v_max` the recovery speed is capped at `v_max` (`β ≥ −v_max`,
/// slope 0 there), so that the position row and the velocity-limit row of the dof never
/// ask for incompatible velocities; with [`PenetrationRecovery::Split`], 0 (the position
/// stage recovers).
pub(crate) fn limit_bias(phi: f64, h: f64, options: &ContactOptions, vmax: f64) -> (f64, f64) {
    if phi >= 0.0 {
        return (phi / h, 1.0 / h);
    }
    if options.penetration == PenetrationRecovery::Split {
        return (0.0, 0.0);
    }
    let b = options.erp * phi / h;
    if b < -vmax {
        (-vmax, 0.0)
    } else {
        (b, options.erp / h)
    }
}

/// The velocity-stage bias of a unilateral row with gap φ; `bounce` holds `e·J_n v`
/// for a bouncing contact. A gap may close within the step (`β = φ/h`). With
/// [`PenetrationRecovery::Split`] a penetration gets `β = 0` (the bodies stop
/// approaching; the position stage removes the penetration without giving them
/// velocity) and a bounce its restitution target alone; with
/// [`PenetrationRecovery::Velocity`] a penetration gets `β = erp·φ/h`, added to a
/// bounce's target.
pub(crate) fn normal_bias(phi: f64, h: f64, options: &ContactOptions, bounce: Option<f64>) -> f64 {
    match options.penetration {
        PenetrationRecovery::Split => match bounce {
            Some(target) => target,
            None => phi.max(0.0) / h,
        },
        PenetrationRecovery::Velocity => {
            let correction = if phi < 0.0 { options.erp * phi / h } else { phi / h };
            match bounce {
                Some(target) => target + if phi < 0.0 { correction } else { 0.0 },
                None => correction,
            }
        }
    }
}

/// Relative tolerance of the limits after the constraint solve. A limit counts as held
/// when its row condition is met to within `ε = LIMIT_TOLERANCE · max(1, ‖v_f‖∞, ‖v⁺‖∞)`
/// in velocity (rad/s or m/s): `|v⁺| ≤ v_max + ε` for a velocity limit, and
/// `v⁺ ≥ −β(φ) − ε` (lower) or `v⁺ ≤ β(φ) + ε` (upper) for a position limit, i.e. the
/// joint ends past the position the row allows (the limit itself when it starts inside
/// it) by at most `h·ε` (rad or m). The scale keeps ε above the rounding of an exact
/// LCP solve of a fast step.
pub const LIMIT_TOLERANCE: f64 = 1e-9;

/// The most LCP solves of one step: the first solve and the re-solves of the limit loop
/// of the constraint stage (see the module docs). Each re-solve adds at least one row and
/// rows are never removed, so the loop ends on its own, on ordinary models well before
/// this bound (arm7 under torques of 1e6 needs at most 3 solves in a step).
pub const MAX_LIMIT_PASSES: usize = 16;

/// The collision stage: the contacts at the poses in `data` (kinematics at q done)
/// closer than the contact margin, none when the model has no collision shapes; `None`
/// when the constraint stage is off (disabled, or a model without collision shapes,
/// limits or joint friction). Checks the options.
pub(crate) fn collision_stage(
    model: &Model,
    data: &Data,
    ws: &mut ConstraintWorkspace,
    options: &ContactOptions,
) -> Result<Option<Vec<Contact>>> {
    if !options.enabled || !has_constraints(model) {
        return Ok(None);
    }
    options.validate()?;
    if model.collision_model().shapes.is_empty() {
        return Ok(Some(vec![]));
    }
    let contacts = detect_contacts(model, data, &CollisionOptions { margin: options.margin }, &mut ws.collision)?;
    Ok(Some(contacts.to_vec()))
}

/// Runs the constraint stage on the `contacts` of the collision stage (`None`: the stage
/// is off): assembles and solves the LCP, and writes `v⁺ = v_f + M̃⁻¹Jᵀf` into `v_out`
/// (which holds `v_f` on entry). Returns `None` when there are no rows.
///
/// The limit loop: after each solve, a position limit that `q + h v⁺` crosses, or a
/// velocity limit that `v⁺` exceeds, and that has no row (the impulses of other rows
/// moved the joint after the prediction of [`assemble_into`]) gets its row and the LCP is
/// solved again, at most [`MAX_LIMIT_PASSES`] solves in all; with the split recovery, so
/// does a position limit that the position stage's `q + h v_p` crosses. Limits the final solve
/// leaves violated beyond [`LIMIT_TOLERANCE`] (the pass bound reached, or an inexact
/// last-resort PGS solution) are listed in [`ConstraintRecord::limit_violations`].
pub(crate) fn constraint_stage(
    model: &Model,
    data: &mut Data,
    ws: &mut ConstraintWorkspace,
    inputs: &StepInputs,
    contacts: Option<Vec<Contact>>,
    options: &ContactOptions,
    v_out: &mut [f64],
) -> Result<Option<ConstraintRecord>> {
    let (q, v, h) = (inputs.q, inputs.v, inputs.dt);
    let Some(contacts) = contacts else {
        ws.previous = None;
        return Ok(None);
    };
    let v_free = DVector::from_column_slice(v_out);
    let mut added: Vec<RowKind> = vec![];
    let mut passes = 0;
    let mut first_stats: Option<LcpStats> = None;
    let (mut pivots, mut pgs_iterations, mut fallbacks, mut newton_iterations) = (0, 0, 0, 0);
    let (mut gpu_linear_solves, mut gpu_fallbacks) = (0, 0);
    let mut previous_pass: Option<(Vec<RowKind>, Vec<RowState>, DVector<f64>)> = None;
    let ncp = options.solver == ContactSolver::Ncp;
    // The NCP solver's sliding cones in the last solve.
    let mut sliding = vec![];
    let mut relaxed = false;
    let split = options.penetration == PenetrationRecovery::Split;
    // The assembly's buffers (a dense `m × nv` Jacobian) are kept in the workspace.
    let mut asm = std::mem::take(&mut ws.assembly);
    let mut crow = std::mem::take(&mut ws.contact_rows);
    // Per contact: a speculative contact that waits outside the LCP ([`open_contacts`]).
    let mut waiting: Option<Vec<bool>> = None;
    let mut contact_resolves = 0;
    // M̃ at q, by trees: the same for every pass.
    let mut inertia = std::mem::take(&mut ws.inertia);
    effective_inertia_blocks(model, data, h, &ws.trees, &mut inertia);
    let (sol, v_next, correction) = loop {
        asm.contacts.clone_from(&contacts);
        assemble_into(&mut asm, &mut crow, model, data, q, v, v_free.as_slice(), h, options, &added, relaxed)?;
        if asm.rows.is_empty() {
            ws.previous = None;
            (ws.assembly, ws.contact_rows, ws.inertia) = (asm, crow, inertia);
            return Ok(None);
        }
        let b = asm.velocities_plus_bias(v_free.as_slice());
        // The first pass's rows matched to the previous step's (its warm start; a re-solve
        // starts from the previous pass instead).
        let carried = match (&ws.previous, &previous_pass, options.warm_start) {
            (Some(prev), None, true) => Some((prev, carried_rows(prev, &asm))),
            _ => None,
        };
        let waits = waiting.get_or_insert_with(|| {
            let loaded = carried.as_ref().map(|(prev, rows)| loaded_contacts(prev, rows, &asm));
            open_contacts(&asm, v_free.as_slice(), h, loaded.as_deref())
        });
        let mut closed = vec![];
        let (sol, dv) = match (!ncp).then(|| pivoting_rows(&asm, options)).flatten() {
            Some(kinds) => solve_pivoting(&asm, &kinds, inertia.to_dense(&ws.trees), &b, options)?,
            None => {
                let row_trees: Vec<[usize; 2]> =
                    asm.rows.iter().map(|&k| row_trees(&ws.trees, k, &asm.contacts)).collect();
                let row_waits = waiting_rows(&asm, waits);
                let system = RowSystem {
                    j: &asm.j,
                    row_trees: &row_trees,
                    b: &b,
                    bounds: &asm.bounds,
                    regularization: asm.regularization.as_slice(),
                    waiting: &row_waits,
                };
                let guess = match (&previous_pass, options.warm_start) {
                    (_, false) => None,
                    (None, true) => {
                        carried.as_ref().map(|(prev, rows)| carry_over(rows, &prev.states, RowState::Separating))
                    }
                    // A re-solve: the previous pass's states (same contacts, same row
                    // kinds); the added rows are guessed clamping.
                    (Some((rows, states, _)), true) => {
                        let index = row_index(rows);
                        Some(asm.rows.iter().map(|k| index.get(k).map_or(RowState::Clamping, |i| states[i])).collect())
                    }
                };
                // The NCP solver starts from forces: the previous step's, matched by
                // contact, or the previous pass's.
                let start: Option<Vec<f64>> = match (&previous_pass, options.warm_start && ncp) {
                    (_, false) => None,
                    (None, true) => carried.as_ref().map(|(prev, rows)| carry_over(rows, &prev.forces, 0.0)),
                    (Some((rows, _, f)), true) => {
                        let index = row_index(rows);
                        Some(asm.rows.iter().map(|k| index.get(k).map_or(0.0, |i| f[i])).collect())
                    }
                };
                let solver = match ncp {
                    true => IslandSolver::Ncp { solver: &options.ncp, start: start.as_deref() },
                    false => IslandSolver::Lcp { options: &options.lcp, guess: guess.as_deref() },
                };
                let out = solve_islands(&ws.trees, &inertia, &system, solver)?;
                sliding = out.sliding;
                closed = closed_contacts(&asm, waits, out.lcp.w.as_slice());
                (out.lcp, out.dv)
            }
        };
        passes += 1;
        pivots += sol.stats.pivots;
        pgs_iterations += sol.stats.pgs_iterations;
        fallbacks += sol.stats.fallbacks;
        newton_iterations += sol.stats.newton_iterations;
        gpu_linear_solves += sol.stats.gpu_linear_solves;
        gpu_fallbacks += sol.stats.gpu_fallbacks;
        first_stats.get_or_insert(sol.stats);
        let v_next = &v_free + dv;
        // Waiting contacts that the solution closes join the LCP, solved again (each such
        // pass adds at least one contact).
        if !closed.is_empty() {
            for c in closed {
                waits[c] = false;
            }
            contact_resolves += 1;
            previous_pass = Some((asm.rows.clone(), sol.states, sol.f));
            continue;
        }
        // No accurate solution with the recovery biases: the rows ask for separations that
        // no motion gives (an infeasible set: no exact solution), or that only impulses so
        // large that their rounding leaves a row violated give (a nearly infeasible set);
        // solved again without them (see the module docs).
        let inaccurate = sol.stats.residual > options.solve_tolerance()
            || violates_rows(&asm, v_free.as_slice(), v_next.as_slice(), sol.f.as_slice(), ncp);
        if !relaxed && passes < MAX_LIMIT_PASSES + contact_resolves && inaccurate && asm.bias.iter().any(|&b| b < 0.0) {
            relaxed = true;
            previous_pass = Some((asm.rows.clone(), sol.states, sol.f));
            continue;
        }
        let mut missing = missing_limit_rows(model, q, v_next.as_slice(), h, &asm.rows, true);
        // The position stage (split recovery) moves q by h·M̃⁻¹Jᵀg: a contact's
        // correction can carry a joint that has no limit row over its position limit.
        // Such a limit gets its row like one the velocity stage crosses, and the step is
        // solved again with it.
        let mut correction = None;
        if missing.is_empty() && split && asm.penetrates(options.penetration_tolerance) {
            let p = position_stage(&inertia, &ws.trees, &asm, waits, h, options, v_next.as_slice())?;
            if p.stats.residual <= options.lcp.tolerance {
                missing = missing_limit_rows(model, q, p.v_position.as_slice(), h, &asm.rows, false);
            }
            correction = Some(p);
        }
        if missing.is_empty() || passes >= MAX_LIMIT_PASSES + contact_resolves {
            break (sol, v_next, correction);
        }
        added.extend(missing);
        previous_pass = Some((asm.rows.clone(), sol.states, sol.f));
    };
    let mut sol = sol;
    v_out.copy_from_slice(v_next.as_slice());
    let mut limit_violations = limit_violations(model, q, v_free.as_slice(), v_next.as_slice(), h, options);
    let first = first_stats.expect("at least one solve");
    let stats = LcpStats {
        pivots,
        pgs_iterations,
        fallbacks,
        newton_iterations,
        gpu_linear_solves,
        gpu_fallbacks,
        warm_start_attempted: first.warm_start_attempted,
        warm_start_hit: first.warm_start_hit,
        ..sol.stats
    };
    // A position stage without an exact solution asks for corrections that no motion
    // gives (an infeasible set of penetrations): dropped for this step.
    let correction_dropped = correction.as_ref().is_some_and(|p| p.stats.residual > options.lcp.tolerance);
    let correction = correction.filter(|_| !correction_dropped);
    if let Some(p) = &correction {
        position_limit_violations(model, q, p.v_position.as_slice(), h, &asm.rows, &mut limit_violations);
    }
    // The previous solve's buffers are reused.
    let mut previous = ws.previous.take().unwrap_or_else(|| PreviousSolve {
        contacts: Vec::new(),
        rows: Vec::new(),
        states: Vec::new(),
        forces: Vec::new(),
    });
    previous.contacts.clone_from(&asm.contacts);
    previous.rows.clone_from(&asm.rows);
    previous.states.clone_from(&sol.states);
    previous.forces.clear();
    previous.forces.extend_from_slice(sol.f.as_slice());
    ws.previous = Some(previous);
    // The sliding cones, turned into their slip frames for the record (the backward
    // pass's linearization; [`ConeFrame`]).
    let cone_frames = cone_frames(&asm, &sliding)?;
    turn_cones(&mut asm, &mut crow, &cone_frames);
    for cf in &cone_frames {
        // In the slip frame: `f_∥ = −μ f_n` at its bound, `f_⊥ = 0` with `w_⊥ = 0`.
        let [t1, t2] = [3 * cf.contact + 1, 3 * cf.contact + 2];
        sol.f[t1] = cf.cos * sol.f[t1] + cf.sin * sol.f[t2];
        sol.f[t2] = 0.0;
        (sol.states[t1], sol.states[t2]) = (RowState::AtBound { sign: -1 }, RowState::Clamping);
    }
    let record = ConstraintRecord {
        contacts: std::mem::take(&mut asm.contacts),
        info: std::mem::take(&mut asm.info),
        rows: std::mem::take(&mut asm.rows),
        bounds: std::mem::take(&mut asm.bounds),
        bias: asm.bias.clone(),
        regularization: asm.regularization.clone(),
        impulses: sol.f,
        states: sol.states,
        v_free,
        stats,
        options: *options,
        correction,
        added_rows: added,
        passes,
        limit_violations,
        relaxed,
        correction_dropped,
        cone_frames,
    };
    (ws.assembly, ws.contact_rows, ws.inertia) = (asm, crow, inertia);
    Ok(Some(record))
}

/// Solves the position stage ([`PositionCorrection`]) after the velocity stage gave
/// `v_plus`: the frictionless LCP on the position rows alone (the other rows carry no
/// pseudo-impulse). `inertia`: `M̃` at `q`.
fn position_stage(
    inertia: &TreeInertia,
    trees: &Trees,
    asm: &Assembly,
    waiting: &[bool],
    h: f64,
    options: &ContactOptions,
    v_plus: &[f64],
) -> Result<PositionCorrection> {
    let m = asm.rows.len();
    let used: Vec<usize> = (0..m).filter(|&r| asm.is_position_row(r)).collect();
    let j = asm.j.select_rows(&used);
    let mut bias = DVector::zeros(m);
    for &r in &used {
        bias[r] = asm.position_bias(r, h, options.erp);
    }
    let vp = DVector::from_column_slice(v_plus);
    let b = DVector::from_iterator(used.len(), used.iter().map(|&r| asm.row_dot(r, v_plus) + bias[r]));
    let regularization: Vec<f64> = used.iter().map(|&r| asm.position_regularization(r, options)).collect();
    let bounds = vec![RowBound::Box { lo: 0.0, hi: f64::INFINITY }; used.len()];
    let row_trees: Vec<[usize; 2]> = used.iter().map(|&r| row_trees(trees, asm.rows[r], &asm.contacts)).collect();
    // The contacts still waiting after the velocity stage wait here too, until the
    // correction closes them (`w < 0` on their row: `φ + h J_n v_p < 0`).
    let all_waits = waiting_rows(asm, waiting);
    let mut row_waits: Vec<bool> = used.iter().map(|&r| all_waits[r]).collect();
    let out = loop {
        let system = RowSystem {
            j: &j,
            row_trees: &row_trees,
            b: &b,
            bounds: &bounds,
            regularization: &regularization,
            waiting: &row_waits,
        };
        let out = solve_islands(trees, inertia, &system, IslandSolver::Lcp { options: &options.lcp, guess: None })?;
        let mut closed = false;
        for (k, wait) in row_waits.iter_mut().enumerate() {
            if *wait && out.lcp.w[k] < 0.0 {
                *wait = false;
                closed = true;
            }
        }
        if !closed {
            break out;
        }
    };
    let (sol, v_position) = (out.lcp, &vp + out.dv);
    let mut impulses = DVector::zeros(m);
    let mut states = vec![RowState::Separating; m];
    for (k, &r) in used.iter().enumerate() {
        impulses[r] = sol.f[k];
        states[r] = sol.states[k];
    }
    Ok(PositionCorrection { bias, impulses, states, v_position, stats: sol.stats })
}

/// The 1-dof coordinate of each dof (`None` for dofs of joints with quaternions).
fn coordinate_of_dof(model: &Model) -> Vec<Option<usize>> {
    let mut out = vec![None; model.nv()];
    for (c, k) in scalar_coordinates(model) {
        out[k] = Some(c);
    }
    out
}

/// The limit rows that the solution `v⁺` needs and `rows` lacks: position limits that
/// `q + h v⁺` crosses, velocity limits that `v⁺` exceeds (in the order of [`assemble_into`]).
fn missing_limit_rows(
    model: &Model,
    q: &[f64],
    v_next: &[f64],
    h: f64,
    rows: &[RowKind],
    velocity_limits: bool,
) -> Vec<RowKind> {
    let mut out = vec![];
    let (lower, upper, vmax) = (model.lower_limits(), model.upper_limits(), model.velocity_limits());
    let mut need = |kind: RowKind, violated: bool| {
        if violated && !rows.contains(&kind) {
            out.push(kind);
        }
    };
    for (c, k) in scalar_coordinates(model) {
        let next = q[c] + h * v_next[k];
        need(RowKind::JointLower { dof: k }, lower[c].is_finite() && next < lower[c]);
        need(RowKind::JointUpper { dof: k }, upper[c].is_finite() && next > upper[c]);
    }
    for k in (0..model.nv()).filter(|_| velocity_limits) {
        need(RowKind::VelocityUpper { dof: k }, vmax[k].is_finite() && v_next[k] > vmax[k]);
        need(RowKind::VelocityLower { dof: k }, vmax[k].is_finite() && v_next[k] < -vmax[k]);
    }
    out
}

/// Adds to `out` the position limits without a row that the position stage's velocity
/// `v_position` carries the joint over (`q + h v_position` past the limit by more than
/// `h·ε`, ε as in [`LIMIT_TOLERANCE`]): only when the limit loop ran out of passes. The
/// limits with a row hold by the position stage's own conditions.
fn position_limit_violations(
    model: &Model,
    q: &[f64],
    v_position: &[f64],
    h: f64,
    rows: &[RowKind],
    out: &mut Vec<(RowKind, f64)>,
) {
    let eps = h * LIMIT_TOLERANCE * velocity_scale(v_position, v_position);
    let (lower, upper) = (model.lower_limits(), model.upper_limits());
    for (c, k) in scalar_coordinates(model) {
        let next = q[c] + h * v_position[k];
        for (kind, excess) in
            [(RowKind::JointLower { dof: k }, lower[c] - next), (RowKind::JointUpper { dof: k }, next - upper[c])]
        {
            if excess > eps && !rows.contains(&kind) && !out.iter().any(|(r, _)| *r == kind) {
                out.push((kind, excess));
            }
        }
    }
}

/// Relative velocity tolerance beyond which an LCP solution that leaves a row's condition
/// violated is taken as inaccurate and the step relaxed ([`ConstraintRecord::relaxed`]):
/// `ε = RELAX_TOLERANCE · max(1, ‖v_f‖∞, ‖v⁺‖∞)`. Far above the rounding of ordinary
/// exact solves (the humanoid soak: up to 7e-6 rad/s on 400 of 10⁶ steps, at speeds of
/// 200 rad/s), far below a nearly infeasible set's (arm7: 1.8e-3 rad/s at 2.5 rad/s).
pub const RELAX_TOLERANCE: f64 = 1e-6;

/// Whether `v⁺` (impulses `f`) leaves a row's condition violated beyond
/// [`RELAX_TOLERANCE`] in velocity, with `w = J v⁺ + β + r f`: `w < −ε` at the lower
/// bound (a unilateral row at `f = 0`), `w > ε` at the upper, `|w| > ε` inside the bounds
/// (a clamping normal, a sticking friction row). An LCP solution within its relative
/// tolerance can still do so when its impulses are huge (a nearly singular row set: the
/// rounding of `A f` is then large in velocity), or when the solver's result is a
/// spurious one of a set without a solution (a pendulum jammed by friction).
fn violates_rows(asm: &Assembly, v_free: &[f64], v_next: &[f64], f: &[f64], cones: bool) -> bool {
    let eps = RELAX_TOLERANCE * velocity_scale(v_free, v_next);
    (0..asm.rows.len()).any(|r| {
        let (lo, hi) = match asm.bounds[r] {
            RowBound::Box { lo, hi } => (lo, hi),
            // A cone's rows are not boxes: the NCP solver's residual covers them.
            RowBound::Friction { .. } if cones => return false,
            RowBound::Friction { normal, mu } => (-mu * f[normal].max(0.0), mu * f[normal].max(0.0)),
        };
        let size = [lo, hi, f[r]].iter().filter(|x| x.is_finite()).fold(0.0f64, |m, x| m.max(x.abs()));
        let slack = 1e-9 * size;
        let (at_lo, at_hi) = (f[r] <= lo + slack, f[r] >= hi - slack);
        let jv = asm.row_dot(r, v_next);
        let w = jv + asm.bias[r] + asm.regularization[r] * f[r];
        match (at_lo, at_hi) {
            (true, true) => false,
            (true, false) => w < -eps,
            (false, true) => w > eps,
            (false, false) => w.abs() > eps,
        }
    })
}

/// `max(1, ‖v_f‖∞, ‖v⁺‖∞)`: the velocity scale of [`LIMIT_TOLERANCE`] and [`RELAX_TOLERANCE`].
fn velocity_scale(v_free: &[f64], v_next: &[f64]) -> f64 {
    v_free.iter().chain(v_next).fold(1.0f64, |s, x| s.max(x.abs()))
}

/// The limits that `v⁺` violates beyond [`LIMIT_TOLERANCE`], with the violation:
/// position limits in rad or m (how far `q + h v⁺` ends past the position its row
/// allows, [`limit_bias`]), velocity limits in rad/s or m/s (`|v⁺| − v_max`).
fn limit_violations(
    model: &Model,
    q: &[f64],
    v_free: &[f64],
    v_next: &[f64],
    h: f64,
    options: &ContactOptions,
) -> Vec<(RowKind, f64)> {
    let eps = LIMIT_TOLERANCE * velocity_scale(v_free, v_next);
    let (lower, upper, vmax) = (model.lower_limits(), model.upper_limits(), model.velocity_limits());
    let mut out = vec![];
    let by_dof = coordinate_of_dof(model);
    for (k, c) in by_dof.iter().enumerate() {
        if let Some(c) = *c {
            // The row condition w = ±v⁺ + β(φ) ≥ 0, in position: h·w.
            if lower[c].is_finite() {
                let w = v_next[k] + limit_bias(q[c] - lower[c], h, options, vmax[k]).0;
                if w < -eps {
                    out.push((RowKind::JointLower { dof: k }, -h * w));
                }
            }
            if upper[c].is_finite() {
                let w = -v_next[k] + limit_bias(upper[c] - q[c], h, options, vmax[k]).0;
                if w < -eps {
                    out.push((RowKind::JointUpper { dof: k }, -h * w));
                }
            }
        }
        if vmax[k].is_finite() {
            if v_next[k] > vmax[k] + eps {
                out.push((RowKind::VelocityUpper { dof: k }, v_next[k] - vmax[k]));
            }
            if v_next[k] < -vmax[k] - eps {
                out.push((RowKind::VelocityLower { dof: k }, -vmax[k] - v_next[k]));
            }
        }
    }
    out
}

/// The rows of the pivoting solver (`None` when it does not apply): with
/// [`ContactSolver::Auto`] and the no-slip or viscous model, every row must be unilateral
/// (`[0, ∞)`, unregularized), an equality (`(−∞, ∞)`) or a collapsed box (`[0, 0]`, left
/// out: `f = 0`).
fn pivoting_rows(asm: &Assembly, options: &ContactOptions) -> Option<Vec<Option<PsdRow>>> {
    if options.solver != ContactSolver::Auto || options.model == ContactModel::Coulomb {
        return None;
    }
    asm.bounds
        .iter()
        .zip(asm.regularization.iter())
        .map(|(bound, &r)| match *bound {
            // A compliant normal row (ContactOptions::normal_compliance) is not one of its rows.
            RowBound::Box { lo, hi } if lo == 0.0 && hi == f64::INFINITY && r == 0.0 => Some(Some(PsdRow::Unilateral)),
            RowBound::Box { lo, hi } if lo == f64::NEG_INFINITY && hi == f64::INFINITY => {
                Some(Some(PsdRow::Equality { regularization: r }))
            }
            RowBound::Box { lo, hi } if lo == 0.0 && hi == 0.0 => Some(None),
            _ => None,
        })
        .collect()
}

/// Solves the rows with the modified principal pivoting method ([`crate::solver::ppm`]).
/// Returns the solution over all rows (collapsed rows: `f = 0`, separating) and
/// `Δv = M̃⁻¹ Jᵀ f`. Unilateral rows with `f = 0` and `w = 0` (tied) are reported
/// clamping: the pivoting returns a basic solution with at most rank-many positive
/// impulses, where the boxed LCP's minimum-norm one loads every tied row of a
/// redundant set; both give the same `v⁺`, and with no rows at a bound the Jacobians
/// depend on the clamping rows' span only, so the largest clamping set keeps the mode
/// that of the boxed LCP.
fn solve_pivoting(
    asm: &Assembly,
    kinds: &[Option<PsdRow>],
    mass: DMatrix<f64>,
    b: &DVector<f64>,
    options: &ContactOptions,
) -> Result<(LcpSolution, DVector<f64>)> {
    let used: Vec<usize> = (0..kinds.len()).filter(|&i| kinds[i].is_some()).collect();
    let j = asm.j.select_rows(&used).to_dense();
    let bu = DVector::from_iterator(used.len(), used.iter().map(|&i| b[i]));
    let rows: Vec<PsdRow> = used.iter().filter_map(|&i| kinds[i]).collect();
    let problem = FactoredLcp::new(j, mass, bu, rows.clone())?;
    let ppm_options = PpmOptions { tolerance: options.lcp.tolerance, lcp: options.lcp, ..PpmOptions::default() };
    let sol = ppm::solve(&problem, &ppm_options)?;
    let m = kinds.len();
    let mut f = DVector::zeros(m);
    let mut states = vec![RowState::Separating; m];
    for (k, &i) in used.iter().enumerate() {
        f[i] = sol.lcp.f[k];
        states[i] = match (sol.lcp.states[k], rows[k]) {
            (RowState::Tied, PsdRow::Unilateral) => RowState::Clamping,
            (s, _) => s,
        };
    }
    let w = asm.j.mul(sol.dv.as_slice()) + b + asm.regularization.component_mul(&f);
    Ok((LcpSolution { f, w, states, stats: sol.lcp.stats }, sol.dv))
}

/// The trees a row of kind `kind` acts on (`usize::MAX`: none): a contact's rows act
/// on the trees of its two bodies, a joint row on the tree of its dof.
fn row_trees(trees: &Trees, kind: RowKind, contacts: &[Contact]) -> [usize; 2] {
    let body = |b: Option<usize>| b.and_then(|b| trees.of_body[b]).unwrap_or(usize::MAX);
    match kind {
        RowKind::ContactNormal { contact } | RowKind::ContactFriction { contact, .. } => {
            let c = &contacts[contact];
            [body(c.body_a), body(c.body_b)]
        }
        RowKind::JointLower { dof }
        | RowKind::JointUpper { dof }
        | RowKind::VelocityLower { dof }
        | RowKind::VelocityUpper { dof }
        | RowKind::JointFriction { dof } => [trees.of_dof[dof], usize::MAX],
    }
}

/// A gap below `ROUND_OFF_GAP · (1 + |p|∞)` (`p` the contact point, in metres) is the
/// round-off of the distance of surfaces that touch (faces built to coincide give gaps
/// of ±1e-16 m): such a contact is closed for [`open_contacts`].
const ROUND_OFF_GAP: f64 = 1e-12;

/// The speculative contacts that wait outside the LCP, per contact of `asm`: a gap
/// (φ > 0, beyond round-off: [`ROUND_OFF_GAP`]) that the free motion does not close
/// within the step (`φ + h J_n v_f > 0`).
/// Such a contact's rows separate with zero force whenever the solution without them
/// leaves the gap open (`J_n v⁺ + φ/h ≥ 0`, its normal row's condition with the
/// speculative bias `φ/h`; its friction is bounded by `μ·0`), so the LCP without them has
/// the same solution; those the solution closes join it ([`closed_contacts`]). Their
/// rows stay in the record, separating with zero force. A resting pile's speculative
/// contacts between neighbours would otherwise join all its columns into one island.
///
/// `loaded`, per contact (with the warm start): the contact carried a normal impulse in
/// the previous step. Such a contact never waits: a resting stack's contacts (gaps of
/// round-off size that the free motion leaves open, since its bodies fall together)
/// would otherwise join one layer per pass, each pass a full solve that its warm start
/// (the previous step's classification of all the rows) cannot serve.
fn open_contacts(asm: &Assembly, v_free: &[f64], h: f64, loaded: Option<&[bool]>) -> Vec<bool> {
    (0..asm.contacts.len())
        .map(|i| {
            let phi = asm.gap[3 * i];
            let vn = asm.row_dot(3 * i, v_free);
            let touching = phi <= ROUND_OFF_GAP * (1.0 + asm.contacts[i].geometry.point.amax());
            !touching && phi + h * vn > 0.0 && !asm.info[i].bounce && !loaded.is_some_and(|l| l[i])
        })
        .collect()
}

/// Per contact of `asm`: whether the previous step's matching contact carried a normal
/// impulse (`rows`: [`carried_rows`]).
fn loaded_contacts(prev: &PreviousSolve, rows: &[Option<usize>], asm: &Assembly) -> Vec<bool> {
    let mut loaded = vec![false; asm.contacts.len()];
    for (kind, r) in asm.rows.iter().zip(rows) {
        if let RowKind::ContactNormal { contact } = *kind {
            loaded[contact] = r.is_some_and(|i| prev.forces[i] > 0.0);
        }
    }
    loaded
}

/// Per row of `asm`: whether it belongs to a waiting contact.
fn waiting_rows(asm: &Assembly, waiting: &[bool]) -> Vec<bool> {
    asm.rows
        .iter()
        .map(|k| match *k {
            RowKind::ContactNormal { contact } | RowKind::ContactFriction { contact, .. } => waiting[contact],
            _ => false,
        })
        .collect()
}

/// The waiting contacts whose normal row the solution violates (`w < 0`).
fn closed_contacts(asm: &Assembly, waiting: &[bool], w: &[f64]) -> Vec<usize> {
    asm.rows
        .iter()
        .enumerate()
        .filter_map(|(r, k)| match *k {
            RowKind::ContactNormal { contact } if waiting[contact] && w[r] < 0.0 => Some(contact),
            _ => None,
        })
        .collect()
}

/// The position of each row kind in `rows` (the first, for a repeated kind): the rows of
/// a contact by its index, the other kinds through a map.
#[derive(Default)]
struct RowIndex {
    /// Per contact: the rows of its normal and its two friction directions
    /// (`usize::MAX`: none).
    contacts: Vec<[usize; 3]>,
    /// The other row kinds.
    other: IntMap<RowKind, usize>,
}

impl RowIndex {
    /// The slot of a contact row kind in [`RowIndex::contacts`].
    fn contact_slot(kind: &RowKind) -> Option<(usize, usize)> {
        match *kind {
            RowKind::ContactNormal { contact } => Some((contact, 0)),
            RowKind::ContactFriction { contact, direction } if direction < 2 => Some((contact, 1 + direction as usize)),
            _ => None,
        }
    }

    /// The position of a row kind in `rows`, if it is there.
    fn get(&self, kind: &RowKind) -> Option<usize> {
        match Self::contact_slot(kind) {
            Some((c, s)) => self.contacts.get(c).map(|e| e[s]).filter(|&i| i != usize::MAX),
            None => self.other.get(kind).copied(),
        }
    }
}

fn row_index(rows: &[RowKind]) -> RowIndex {
    let mut index = RowIndex::default();
    for (i, k) in rows.iter().enumerate() {
        match RowIndex::contact_slot(k) {
            Some((c, s)) => {
                if index.contacts.len() <= c {
                    index.contacts.resize(c + 1, [usize::MAX; 3]);
                }
                if index.contacts[c][s] == usize::MAX {
                    index.contacts[c][s] = i;
                }
            }
            None => {
                index.other.entry(*k).or_insert(i);
            }
        }
    }
    index
}

/// Per row of `asm`, the index of the previous step's same row: contacts by identity,
/// joint rows by kind; `None` for the rows without one.
fn carried_rows(prev: &PreviousSolve, asm: &Assembly) -> Vec<Option<usize>> {
    let map = match_contacts(&prev.contacts, &asm.contacts);
    let index = row_index(&prev.rows);
    asm.rows
        .iter()
        .map(|kind| match *kind {
            RowKind::ContactNormal { contact } => {
                map[contact].and_then(|p| index.get(&RowKind::ContactNormal { contact: p }))
            }
            RowKind::ContactFriction { contact, direction } => {
                map[contact].and_then(|p| index.get(&RowKind::ContactFriction { contact: p, direction }))
            }
            other => index.get(&other),
        })
        .collect()
}

/// Per row, the value in `values` (one per row of the previous step) of the previous
/// step's same row (`rows`: [`carried_rows`]); `missing` for the rows without one (the
/// LCP solvers' guess: separating; the NCP solver's start: zero force).
fn carry_over<T: Copy>(rows: &[Option<usize>], values: &[T], missing: T) -> Vec<T> {
    rows.iter().map(|r| r.map_or(missing, |i| values[i])).collect()
}
