//! World-space trajectory costs: a point fixed on a body driven to a target
//! ([`PointCost`]), spherical obstacles kept away from chosen body points
//! ([`ObstacleCost`]), and the sum of any costs ([`SumCost`]), e.g. a point cost plus a
//! [`super::QuadraticCost`] on the controls.
//!
//! A body point `p(q)` depends on the configuration only. Its derivative along the
//! tangent perturbation `q ⊕ δ` is the point Jacobian
//! [`crate::dynamics::point_jacobian`] `J_p` (3 × nv): the tangent coordinates of every
//! joint are its velocity coordinates (the free joint's `q ⊕ δ = (p + δ_p, R exp(δ_ω))`
//! with its world-frame linear and body-frame angular velocity, the spherical joint's
//! `R exp(δ)` with a body angular velocity), so the
//! velocity Jacobian is the configuration Jacobian. The costs return exact gradients and
//! Gauss–Newton Hessians `J_pᵀ W J_p` (the term with the second derivative of `p(q)` is
//! dropped, as the iLQR literature does for task-space costs).

use super::cost::{RunningDerivatives, TerminalDerivatives, TrajectoryCost};
use crate::dynamics::{forward_kinematics, point_jacobian, point_position, Data};
use crate::error::{check_vector, Error, Result};
use crate::math::{Mat3, Vec3};
use crate::sim::State;
use crate::Model;
use nalgebra::{DMatrix, DVector, Matrix3xX};

/// A point fixed on a body, given in the body's frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyPoint {
    /// Body index (see [`Model::body_index`]).
    pub body: usize,
    /// The point in the body's frame.
    pub point: Vec3,
}

impl BodyPoint {
    /// The point `point` (body frame) of body `body`.
    pub fn new(body: usize, point: Vec3) -> BodyPoint {
        BodyPoint { body, point }
    }

    /// The point `point` of the link named `name`, in that link's frame: a body, or a
    /// link merged into one (then the point is carried into the body's frame).
    pub fn named(model: &Model, name: &str, point: Vec3) -> Result<BodyPoint> {
        let (body, x) = model.frame_placement(name)?;
        Ok(BodyPoint { body, point: x.act_point(&point) })
    }

    fn validate(&self, model: &Model, what: &str) -> Result<()> {
        if self.body >= model.nbodies() {
            return Err(Error::InvalidInput(format!(
                "{what}: body index {} out of range (model '{}' has {} bodies)",
                self.body,
                model.name(),
                model.nbodies()
            )));
        }
        check_vector("body point", self.point.as_slice(), 3)
    }
}

/// World positions of `points` at configuration `q` and, when asked, their tangent-space Jacobians.
fn kinematics(
    model: &Model,
    data: &mut Data,
    q: &DVector<f64>,
    points: &[BodyPoint],
    jacobians: bool,
) -> Result<Vec<(Vec3, Option<Matrix3xX<f64>>)>> {
    for p in points {
        p.validate(model, "world-space cost")?;
    }
    forward_kinematics(model, data, q.as_slice())?;
    points
        .iter()
        .map(|p| {
            let x = point_position(data, p.body, &p.point);
            let j = if jacobians { Some(point_jacobian(model, data, p.body, &p.point)?) } else { None };
            Ok((x, j))
        })
        .collect()
}

fn check_weight(what: &str, w: f64) -> Result<()> {
    if !(w.is_finite() && w >= 0.0) {
        return Err(Error::InvalidInput(format!("{what} must be finite and non-negative, got {w}")));
    }
    Ok(())
}

fn check_state(model: &Model, x: &State) -> Result<()> {
    check_vector("x.q", x.q.as_slice(), model.nq())?;
    check_vector("x.v", x.v.as_slice(), model.nv())
}

/// Scalar value, gradient (2nv) and Gauss–Newton Hessian (2nv × 2nv) of a
/// configuration cost from its q-parts.
struct StateTerms {
    value: f64,
    lq: DVector<f64>,
    lqq: DMatrix<f64>,
}

impl StateTerms {
    fn zeros(nv: usize) -> StateTerms {
        StateTerms { value: 0.0, lq: DVector::zeros(nv), lqq: DMatrix::zeros(nv, nv) }
    }

    /// Adds `w·ρ(p)` with `∂/∂δ = w·gᵀ J`, Gauss–Newton Hessian `w·Jᵀ H J` (`g`, `H` the
    /// derivatives with respect to the world point).
    fn add(&mut self, value: f64, g: &Vec3, h: &Mat3, j: &Matrix3xX<f64>) {
        self.value += value;
        self.lq += j.tr_mul(g);
        self.lqq += j.tr_mul(&(h * j));
    }

    fn into_state(self, nv: usize) -> (f64, DVector<f64>, DMatrix<f64>) {
        let mut lx = DVector::zeros(2 * nv);
        lx.rows_mut(0, nv).copy_from(&self.lq);
        let mut lxx = DMatrix::zeros(2 * nv, 2 * nv);
        lxx.view_mut((0, 0), (nv, nv)).copy_from(&self.lqq);
        (self.value, lx, lxx)
    }
}

fn running_from(model: &Model, terms: StateTerms) -> RunningDerivatives {
    let nv = model.nv();
    let (value, lx, lxx) = terms.into_state(nv);
    RunningDerivatives {
        value,
        lx,
        lu: DVector::zeros(nv),
        lxx,
        luu: DMatrix::zeros(nv, nv),
        lux: DMatrix::zeros(nv, 2 * nv),
    }
}

fn terminal_from(model: &Model, terms: StateTerms) -> TerminalDerivatives {
    let (value, lx, lxx) = terms.into_state(model.nv());
    TerminalDerivatives { value, lx, lxx }
}

/// `½ (p − p*)ᵀ W (p − p*)` of a body point `p(q)` and a world target `p*`, with a
/// diagonal world-axis weight `W = diag(axis_weights)` scaled by `running_weight` on every
/// running step and by `terminal_weight` at the end.
///
/// Gradient `J_pᵀ W (p − p*)`, Gauss–Newton Hessian `J_pᵀ W J_p` (q block only; the cost
/// does not depend on v or u).
#[derive(Clone, Debug, PartialEq)]
pub struct PointCost {
    point: BodyPoint,
    target: Vec3,
    axis_weights: Vec3,
    running_weight: f64,
    terminal_weight: f64,
}

impl PointCost {
    /// The terminal cost `½ w |p − p*|²` (no running term; see [`PointCost::with_running`]).
    pub fn terminal(point: BodyPoint, target: Vec3, weight: f64) -> Result<PointCost> {
        check_vector("point target", target.as_slice(), 3)?;
        check_weight("terminal weight", weight)?;
        Ok(PointCost { point, target, axis_weights: Vec3::repeat(1.0), running_weight: 0.0, terminal_weight: weight })
    }

    /// Adds the running term `½ w |p − p*|²` on every step.
    pub fn with_running(mut self, weight: f64) -> Result<PointCost> {
        check_weight("running weight", weight)?;
        self.running_weight = weight;
        Ok(self)
    }

    /// Weights the world axes (e.g. `(1, 1, 0)` ignores height).
    pub fn with_axis_weights(mut self, axis_weights: Vec3) -> Result<PointCost> {
        for w in axis_weights.iter() {
            check_weight("axis weight", *w)?;
        }
        self.axis_weights = axis_weights;
        Ok(self)
    }

    /// The body point.
    pub fn point(&self) -> BodyPoint {
        self.point
    }

    /// The world target.
    pub fn target(&self) -> Vec3 {
        self.target
    }

    /// The world position of the body point at `q`.
    pub fn position(&self, model: &Model, q: &DVector<f64>) -> Result<Vec3> {
        self.point.validate(model, "point cost")?;
        let mut data = Data::new(model);
        Ok(kinematics(model, &mut data, q, &[self.point], false)?[0].0)
    }

    fn terms(&self, model: &Model, x: &State, weight: f64, derivatives: bool) -> Result<StateTerms> {
        check_state(model, x)?;
        let mut terms = StateTerms::zeros(model.nv());
        if weight == 0.0 {
            return Ok(terms);
        }
        let mut data = Data::new(model);
        let (p, j) = kinematics(model, &mut data, &x.q, &[self.point], derivatives)?.remove(0);
        let w = self.axis_weights * weight;
        let e = p - self.target;
        let we = w.component_mul(&e);
        let value = 0.5 * e.dot(&we);
        match j {
            Some(j) => terms.add(value, &we, &Mat3::from_diagonal(&w), &j),
            None => terms.value = value,
        }
        Ok(terms)
    }
}

impl TrajectoryCost for PointCost {
    fn validate(&self, model: &Model) -> Result<()> {
        self.point.validate(model, "point cost")
    }

    fn running(&self, model: &Model, _t: usize, x: &State, u: &DVector<f64>) -> Result<f64> {
        check_vector("u", u.as_slice(), model.nv())?;
        Ok(self.terms(model, x, self.running_weight, false)?.value)
    }

    fn running_derivatives(&self, model: &Model, _t: usize, x: &State, u: &DVector<f64>) -> Result<RunningDerivatives> {
        check_vector("u", u.as_slice(), model.nv())?;
        Ok(running_from(model, self.terms(model, x, self.running_weight, true)?))
    }

    fn terminal(&self, model: &Model, x: &State) -> Result<f64> {
        Ok(self.terms(model, x, self.terminal_weight, false)?.value)
    }

    fn terminal_derivatives(&self, model: &Model, x: &State) -> Result<TerminalDerivatives> {
        Ok(terminal_from(model, self.terms(model, x, self.terminal_weight, true)?))
    }
}

/// A smooth penalty keeping body points out of a sphere (centre `c`, radius `r`):
/// `w Σ_k max(0, r + margin − |p_k − c|)²` over the chosen points, on every running step
/// (weight `running_weight`) and at the end (`terminal_weight`).
///
/// With `s = r + margin − d`, `d = |p − c|`, `n = (p − c)/d`: gradient `−2 w s J_pᵀ n`,
/// Gauss–Newton Hessian `2 w J_pᵀ n nᵀ J_p` while `s > 0`, zero outside. The penalty is
/// C¹ (its second derivative jumps at `d = r + margin`); a point exactly at the centre has
/// no defined direction and is reported as an error.
#[derive(Clone, Debug, PartialEq)]
pub struct ObstacleCost {
    points: Vec<BodyPoint>,
    center: Vec3,
    radius: f64,
    margin: f64,
    running_weight: f64,
    terminal_weight: f64,
}

impl ObstacleCost {
    /// A sphere obstacle at `center` with `radius` and a safety `margin`, acting on `points`
    /// with `running_weight` every step and `terminal_weight` at the end.
    pub fn new(
        points: Vec<BodyPoint>,
        center: Vec3,
        radius: f64,
        margin: f64,
        running_weight: f64,
        terminal_weight: f64,
    ) -> Result<ObstacleCost> {
        check_vector("obstacle centre", center.as_slice(), 3)?;
        check_weight("obstacle radius", radius)?;
        check_weight("obstacle margin", margin)?;
        check_weight("obstacle running weight", running_weight)?;
        check_weight("obstacle terminal weight", terminal_weight)?;
        if points.is_empty() {
            return Err(Error::InvalidInput("obstacle cost: no body points given".into()));
        }
        Ok(ObstacleCost { points, center, radius, margin, running_weight, terminal_weight })
    }

    /// The smallest clearance `|p_k − c| − r` over the points at `q` (negative inside the sphere).
    pub fn clearance(&self, model: &Model, q: &DVector<f64>) -> Result<f64> {
        self.validate(model)?;
        let mut data = Data::new(model);
        let k = kinematics(model, &mut data, q, &self.points, false)?;
        Ok(k.iter().map(|(p, _)| (p - self.center).norm() - self.radius).fold(f64::INFINITY, f64::min))
    }

    fn terms(&self, model: &Model, x: &State, weight: f64, derivatives: bool) -> Result<StateTerms> {
        check_state(model, x)?;
        let mut terms = StateTerms::zeros(model.nv());
        if weight == 0.0 {
            return Ok(terms);
        }
        let mut data = Data::new(model);
        for (p, j) in kinematics(model, &mut data, &x.q, &self.points, derivatives)? {
            let r = p - self.center;
            let d = r.norm();
            let s = self.radius + self.margin - d;
            if s <= 0.0 {
                continue;
            }
            if d < 1e-12 {
                return Err(Error::Numerical {
                    algorithm: "obstacle cost",
                    detail: "a body point is at the obstacle's centre (no direction to push it out)".into(),
                });
            }
            let n = r / d;
            let value = weight * s * s;
            match j {
                Some(j) => terms.add(value, &(-2.0 * weight * s * n), &(2.0 * weight * n * n.transpose()), &j),
                None => terms.value += value,
            }
        }
        Ok(terms)
    }
}

impl TrajectoryCost for ObstacleCost {
    fn validate(&self, model: &Model) -> Result<()> {
        self.points.iter().try_for_each(|p| p.validate(model, "obstacle cost"))
    }

    fn running(&self, model: &Model, _t: usize, x: &State, u: &DVector<f64>) -> Result<f64> {
        check_vector("u", u.as_slice(), model.nv())?;
        Ok(self.terms(model, x, self.running_weight, false)?.value)
    }

    fn running_derivatives(&self, model: &Model, _t: usize, x: &State, u: &DVector<f64>) -> Result<RunningDerivatives> {
        check_vector("u", u.as_slice(), model.nv())?;
        Ok(running_from(model, self.terms(model, x, self.running_weight, true)?))
    }

    fn terminal(&self, model: &Model, x: &State) -> Result<f64> {
        Ok(self.terms(model, x, self.terminal_weight, false)?.value)
    }

    fn terminal_derivatives(&self, model: &Model, x: &State) -> Result<TerminalDerivatives> {
        Ok(terminal_from(model, self.terms(model, x, self.terminal_weight, true)?))
    }
}

/// The sum of trajectory costs: values, gradients and (Gauss–Newton) Hessians add.
#[derive(Default)]
pub struct SumCost {
    terms: Vec<Box<dyn TrajectoryCost>>,
}

impl SumCost {
    /// An empty sum (zero cost).
    pub fn new() -> SumCost {
        SumCost::default()
    }

    /// Adds a term.
    pub fn with(mut self, cost: impl TrajectoryCost + 'static) -> SumCost {
        self.terms.push(Box::new(cost));
        self
    }

    /// Adds a boxed term.
    pub fn push(&mut self, cost: Box<dyn TrajectoryCost>) {
        self.terms.push(cost);
    }

    /// Number of terms.
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// True when there are no terms.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

impl std::fmt::Debug for SumCost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SumCost({} terms)", self.terms.len())
    }
}

impl TrajectoryCost for SumCost {
    fn validate(&self, model: &Model) -> Result<()> {
        self.terms.iter().try_for_each(|c| c.validate(model))
    }

    fn running(&self, model: &Model, t: usize, x: &State, u: &DVector<f64>) -> Result<f64> {
        check_vector("u", u.as_slice(), model.nv())?;
        self.terms.iter().map(|c| c.running(model, t, x, u)).sum()
    }

    fn running_derivatives(&self, model: &Model, t: usize, x: &State, u: &DVector<f64>) -> Result<RunningDerivatives> {
        check_vector("u", u.as_slice(), model.nv())?;
        check_state(model, x)?;
        let nv = model.nv();
        let mut acc = RunningDerivatives {
            value: 0.0,
            lx: DVector::zeros(2 * nv),
            lu: DVector::zeros(nv),
            lxx: DMatrix::zeros(2 * nv, 2 * nv),
            luu: DMatrix::zeros(nv, nv),
            lux: DMatrix::zeros(nv, 2 * nv),
        };
        for c in &self.terms {
            let d = c.running_derivatives(model, t, x, u)?;
            acc.value += d.value;
            acc.lx += d.lx;
            acc.lu += d.lu;
            acc.lxx += d.lxx;
            acc.luu += d.luu;
            acc.lux += d.lux;
        }
        Ok(acc)
    }

    fn terminal(&self, model: &Model, x: &State) -> Result<f64> {
        self.terms.iter().map(|c| c.terminal(model, x)).sum()
    }

    fn terminal_derivatives(&self, model: &Model, x: &State) -> Result<TerminalDerivatives> {
        check_state(model, x)?;
        let nv = model.nv();
        let mut acc =
            TerminalDerivatives { value: 0.0, lx: DVector::zeros(2 * nv), lxx: DMatrix::zeros(2 * nv, 2 * nv) };
        for c in &self.terms {
            let d = c.terminal_derivatives(model, x)?;
            acc.value += d.value;
            acc.lx += d.lx;
            acc.lxx += d.lxx;
        }
        Ok(acc)
    }
}
