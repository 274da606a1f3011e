//! Trajectory costs: the [`TrajectoryCost`] trait the optimisers minimise and the
//! [`QuadraticCost`] on tangent-space state errors and controls.
//!
//! States enter a cost as `x = (q, v)`; every derivative with respect to `q` lives in
//! the tangent space (length nv, perturbing `q ⊕ δ`), as the step Jacobians do, so
//! costs on free and spherical joints are well defined.

use crate::error::{check_vector, Error, Result};
use crate::sim::State;
use crate::Model;
use nalgebra::{DMatrix, DVector};

/// Value and derivatives of a running cost `ℓ_t(x, u)` (x in the tangent space, 2nv;
/// u the joint torques, nv).
#[derive(Clone, Debug, PartialEq)]
pub struct RunningDerivatives {
    /// `ℓ`.
    pub value: f64,
    /// `∂ℓ/∂x` (2nv: tangent q, then v).
    pub lx: DVector<f64>,
    /// `∂ℓ/∂u` (nv).
    pub lu: DVector<f64>,
    /// `∂²ℓ/∂x²` or its Gauss–Newton approximation (2nv × 2nv).
    pub lxx: DMatrix<f64>,
    /// `∂²ℓ/∂u²` (nv × nv).
    pub luu: DMatrix<f64>,
    /// `∂²ℓ/∂u∂x` (nv × 2nv).
    pub lux: DMatrix<f64>,
}

/// Value and derivatives of a terminal cost `ℓ_T(x)`.
#[derive(Clone, Debug, PartialEq)]
pub struct TerminalDerivatives {
    /// `ℓ_T`.
    pub value: f64,
    /// `∂ℓ_T/∂x` (2nv).
    pub lx: DVector<f64>,
    /// `∂²ℓ_T/∂x²` or its Gauss–Newton approximation (2nv × 2nv).
    pub lxx: DMatrix<f64>,
}

/// A trajectory cost `J = Σ_{t<T} ℓ_t(x_t, u_t) + ℓ_T(x_T)`.
///
/// Implementors give values and first and second derivatives (a Gauss–Newton
/// Hessian is enough for iLQR); single shooting uses only the values and gradients.
/// Later costs (end-effector positions, obstacles) plug in here.
pub trait TrajectoryCost {
    /// Checks that the cost fits `model` (dimensions); called once by the optimisers.
    fn validate(&self, model: &Model) -> Result<()>;
    /// The running cost at step `t`.
    fn running(&self, model: &Model, t: usize, x: &State, u: &DVector<f64>) -> Result<f64>;
    /// The running cost at step `t` with its derivatives.
    fn running_derivatives(&self, model: &Model, t: usize, x: &State, u: &DVector<f64>) -> Result<RunningDerivatives>;
    /// The terminal cost.
    fn terminal(&self, model: &Model, x: &State) -> Result<f64>;
    /// The terminal cost with its derivatives.
    fn terminal_derivatives(&self, model: &Model, x: &State) -> Result<TerminalDerivatives>;
}

/// The quadratic cost
/// `ℓ_t = ½ eᵀ Q e + ½ uᵀ R u`, `ℓ_T = ½ e_Tᵀ Q_f e_T`, with the tangent-space state
/// error `e = (q ⊖ q*, v − v*)` (`q ⊖ q* = Model::difference(q*, q)`).
///
/// Gradient `Gᵀ Q e` and Gauss–Newton Hessian `Gᵀ Q G`, where `G = ∂e/∂x` is the
/// identity except on spherical and free joints, whose blocks are the inverse right
/// Jacobians `J_r(e)⁻¹` of SO(3) ([`crate::JointType::difference_jacobian`]).
/// On models with only scalar joints the Gauss–Newton Hessian is exact.
#[derive(Clone, Debug, PartialEq)]
pub struct QuadraticCost {
    target: State,
    q: DMatrix<f64>,
    r: DMatrix<f64>,
    qf: DMatrix<f64>,
}

impl QuadraticCost {
    /// A quadratic cost toward `target` with the state weight `q` (2nv × 2nv), the
    /// control weight `r` (nv × nv) and the terminal weight `qf` (2nv × 2nv). The
    /// weights must be finite and symmetric; they are not required to be definite (a
    /// zero running state weight is common).
    pub fn new(
        model: &Model,
        target: State,
        q: DMatrix<f64>,
        r: DMatrix<f64>,
        qf: DMatrix<f64>,
    ) -> Result<QuadraticCost> {
        let nv = model.nv();
        check_vector("target.q", target.q.as_slice(), model.nq())?;
        check_vector("target.v", target.v.as_slice(), nv)?;
        model.check_quaternions(target.q.as_slice())?;
        for (what, m, n) in
            [("state weight Q", &q, 2 * nv), ("control weight R", &r, nv), ("terminal weight Q_f", &qf, 2 * nv)]
        {
            if m.nrows() != n || m.ncols() != n {
                return Err(Error::InvalidInput(format!("{what} is {}×{}, expected {n}×{n}", m.nrows(), m.ncols())));
            }
            if let Some(x) = m.iter().find(|x| !x.is_finite()) {
                return Err(Error::InvalidInput(format!("{what} holds a non-finite entry ({x})")));
            }
            let asym = (m - m.transpose()).amax();
            if asym > 1e-12 * m.amax().max(1.0) {
                return Err(Error::InvalidInput(format!("{what} is not symmetric (max |W − Wᵀ| = {asym:e})")));
            }
        }
        Ok(QuadraticCost { target, q, r, qf })
    }

    /// A quadratic cost with diagonal weights (`q_diag`, `qf_diag`: 2nv; `r_diag`: nv).
    pub fn diagonal(
        model: &Model,
        target: State,
        q_diag: &[f64],
        r_diag: &[f64],
        qf_diag: &[f64],
    ) -> Result<QuadraticCost> {
        let nv = model.nv();
        check_vector("q_diag", q_diag, 2 * nv)?;
        check_vector("r_diag", r_diag, nv)?;
        check_vector("qf_diag", qf_diag, 2 * nv)?;
        let d = |x: &[f64]| DMatrix::from_diagonal(&DVector::from_column_slice(x));
        QuadraticCost::new(model, target, d(q_diag), d(r_diag), d(qf_diag))
    }

    /// The target state.
    pub fn target(&self) -> &State {
        &self.target
    }

    /// The tangent-space state error `e = (q ⊖ q*, v − v*)` and `G = ∂e/∂x`.
    fn error(&self, model: &Model, x: &State) -> Result<(DVector<f64>, DMatrix<f64>)> {
        let nv = model.nv();
        check_vector("v", x.v.as_slice(), nv)?;
        let eq = model.difference(&self.target.q, &x.q)?;
        let mut e = DVector::zeros(2 * nv);
        e.rows_mut(0, nv).copy_from(&eq);
        e.rows_mut(nv, nv).copy_from(&(&x.v - &self.target.v));
        let mut g = DMatrix::identity(2 * nv, 2 * nv);
        for (i, j) in model.joints().iter().enumerate() {
            if j.kind.has_quaternion() {
                let (b, n) = (model.v_index(i), j.nv());
                let jd = j.kind.difference_jacobian(&eq.as_slice()[b..b + n]);
                g.view_mut((b, b), (n, n)).copy_from(&jd.view((0, 0), (n, n)));
            }
        }
        Ok((e, g))
    }

    fn check_u(&self, model: &Model, u: &DVector<f64>) -> Result<()> {
        check_vector("u", u.as_slice(), model.nv())
    }
}

impl TrajectoryCost for QuadraticCost {
    fn validate(&self, model: &Model) -> Result<()> {
        if self.target.q.len() != model.nq() || self.r.nrows() != model.nv() {
            return Err(Error::InvalidInput(format!(
                "the cost was built for a model with nq = {}, nv = {}; this model has nq = {}, nv = {}",
                self.target.q.len(),
                self.r.nrows(),
                model.nq(),
                model.nv()
            )));
        }
        Ok(())
    }

    fn running(&self, model: &Model, _t: usize, x: &State, u: &DVector<f64>) -> Result<f64> {
        self.check_u(model, u)?;
        let (e, _) = self.error(model, x)?;
        Ok(0.5 * e.dot(&(&self.q * &e)) + 0.5 * u.dot(&(&self.r * u)))
    }

    fn running_derivatives(&self, model: &Model, _t: usize, x: &State, u: &DVector<f64>) -> Result<RunningDerivatives> {
        self.check_u(model, u)?;
        let (e, g) = self.error(model, x)?;
        let qe = &self.q * &e;
        let ru = &self.r * u;
        let value = 0.5 * e.dot(&qe) + 0.5 * u.dot(&ru);
        let lx = g.tr_mul(&qe);
        let lxx = g.tr_mul(&(&self.q * &g));
        let nv = model.nv();
        Ok(RunningDerivatives { value, lx, lu: ru, lxx, luu: self.r.clone(), lux: DMatrix::zeros(nv, 2 * nv) })
    }

    fn terminal(&self, model: &Model, x: &State) -> Result<f64> {
        let (e, _) = self.error(model, x)?;
        Ok(0.5 * e.dot(&(&self.qf * &e)))
    }

    fn terminal_derivatives(&self, model: &Model, x: &State) -> Result<TerminalDerivatives> {
        let (e, g) = self.error(model, x)?;
        let qe = &self.qf * &e;
        Ok(TerminalDerivatives { value: 0.5 * e.dot(&qe), lx: g.tr_mul(&qe), lxx: g.tr_mul(&(&self.qf * &g)) })
    }
}
