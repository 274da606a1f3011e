//! The boxed LCP with friction-coupled bounds ([`BoxedLcp`]) rewritten as a standard LCP
//! `w = M z + q ≥ 0`, `z ≥ 0`, `zᵀw = 0`, so that Lemke's method ([`super::lemke`]) solves it
//! exactly, friction included (no fix-point on the friction bounds).
//!
//! Each row `i` of the boxed problem becomes (`w_i = (A f + b)_i`):
//! * a unilateral row `[0, ∞)`: one variable `x = f_i ≥ 0`, complementary to `w_i ≥ 0`;
//! * a row fixed at zero (`Box{0, 0}`, friction with `μ = 0`): no variable (`f_i = 0`);
//! * any other row: `f_i = p − n` with `p ≥ 0 ⊥ w_i + λ₊ ≥ 0` (only if `hi > 0`) and
//!   `n ≥ 0 ⊥ −w_i + λ₋ ≥ 0` (only if `lo < 0`), where the slack `λ₊ ≥ 0 ⊥ hi − p ≥ 0` exists
//!   when `hi` is finite and `λ₋ ≥ 0 ⊥ −lo − n ≥ 0` when `lo` is finite;
//! * a friction row `|f_i| ≤ μ f_k` (normal row `k`): `p`, `n` and one shared slack
//!   `λ ≥ 0 ⊥ μ x_k − p − n ≥ 0` (`λ₊ = λ₋ = λ`).
//!
//! The friction slack is the formulation of Stewart & Trinkle (1996, "An implicit
//! time-stepping scheme for rigid body dynamics with inelastic collisions and Coulomb
//! friction", eq. 18–20), here with one slack per friction direction, which gives the box
//! `|f_t,d| ≤ μ f_n` of each direction instead of their pyramid: `λ > 0` puts the row at the
//! bound opposing its sliding velocity (`|w_i| ≤ λ`, and the active one of `p`, `n` sees
//! `w_i = ∓λ`), `λ = 0` forces `w_i = 0` with `f_i` inside the box. With `A` positive
//! semi-definite, `M` is copositive-plus apart from the friction coupling, the class for
//! which Stewart and Trinkle show that Lemke's method terminates with a solution.

use nalgebra::{DMatrix, DVector};

use super::problem::{BoxedLcp, RowBound};

/// How the force of one boxed row is read from the standard variables `z`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Vars {
    /// Fixed at zero.
    Zero,
    /// `f = z[x]`.
    Single(usize),
    /// `f = z[plus] − z[minus]` (either may be absent).
    Split { plus: Option<usize>, minus: Option<usize> },
}

impl Vars {
    /// The coefficients of `f` in `z`: `(variable, ±1)`.
    fn terms(self) -> impl Iterator<Item = (usize, f64)> {
        let (a, b) = match self {
            Vars::Zero => (None, None),
            Vars::Single(x) => (Some((x, 1.0)), None),
            Vars::Split { plus, minus } => (plus.map(|p| (p, 1.0)), minus.map(|n| (n, -1.0))),
        };
        a.into_iter().chain(b)
    }
}

/// A [`BoxedLcp`] in standard form: `w = M z + q`.
#[derive(Clone, Debug)]
pub struct StandardForm {
    /// The matrix `M` (`k × k`).
    pub m: DMatrix<f64>,
    /// The offset `q` (`k`).
    pub q: DVector<f64>,
    vars: Vec<Vars>,
}

impl StandardForm {
    /// Rewrites `problem` (see the module documentation). The problem must be valid
    /// ([`BoxedLcp::validate`]).
    pub fn new(problem: &BoxedLcp) -> Self {
        let rows = problem.len();
        let mut k = 0usize;
        let mut next = || {
            k += 1;
            k - 1
        };
        // Variables of each row, and the slacks (λ₊, λ₋) of its split parts.
        let mut vars = Vec::with_capacity(rows);
        let mut slacks: Vec<(Option<usize>, Option<usize>)> = Vec::with_capacity(rows);
        for bound in &problem.bounds {
            let (v, s) = match *bound {
                RowBound::Box { lo, hi } if lo == 0.0 && hi == 0.0 => (Vars::Zero, (None, None)),
                RowBound::Friction { mu: 0.0, .. } => (Vars::Zero, (None, None)),
                b if b.is_unilateral() => (Vars::Single(next()), (None, None)),
                RowBound::Box { lo, hi } => {
                    let plus = (hi > 0.0).then(&mut next);
                    let minus = (lo < 0.0).then(&mut next);
                    let lp = (plus.is_some() && hi.is_finite()).then(&mut next);
                    let lm = (minus.is_some() && lo.is_finite()).then(&mut next);
                    (Vars::Split { plus, minus }, (lp, lm))
                }
                RowBound::Friction { .. } => {
                    let (plus, minus, lambda) = (next(), next(), next());
                    (Vars::Split { plus: Some(plus), minus: Some(minus) }, (Some(lambda), Some(lambda)))
                }
            };
            vars.push(v);
            slacks.push(s);
        }
        let mut m = DMatrix::zeros(k, k);
        let mut q = DVector::zeros(k);
        // Row `r` of M gets `sign · (A f)_i`, and q_r gets `sign · b_i`.
        let set_w_row = |m: &mut DMatrix<f64>, q: &mut DVector<f64>, r: usize, i: usize, sign: f64| {
            for (j, &vj) in vars.iter().enumerate() {
                for (z, c) in vj.terms() {
                    m[(r, z)] += sign * c * problem.a[(i, j)];
                }
            }
            q[r] = sign * problem.b[i];
        };
        for i in 0..rows {
            match vars[i] {
                Vars::Zero => {}
                Vars::Single(x) => set_w_row(&mut m, &mut q, x, i, 1.0),
                Vars::Split { plus, minus } => {
                    let (lp, lm) = slacks[i];
                    if let Some(p) = plus {
                        set_w_row(&mut m, &mut q, p, i, 1.0);
                        if let Some(l) = lp {
                            m[(p, l)] += 1.0;
                        }
                    }
                    if let Some(n) = minus {
                        set_w_row(&mut m, &mut q, n, i, -1.0);
                        if let Some(l) = lm {
                            m[(n, l)] += 1.0;
                        }
                    }
                    match problem.bounds[i] {
                        RowBound::Friction { normal, mu } => {
                            // A friction row has both parts and one slack (built above).
                            if let (Some(l), Some(p), Some(n)) = (lp, plus, minus) {
                                if let Vars::Single(x) = vars[normal] {
                                    m[(l, x)] += mu;
                                }
                                m[(l, p)] -= 1.0;
                                m[(l, n)] -= 1.0;
                            }
                        }
                        RowBound::Box { lo, hi } => {
                            if let (Some(l), Some(p)) = (lp, plus) {
                                m[(l, p)] -= 1.0;
                                q[l] = hi;
                            }
                            if let (Some(l), Some(n)) = (lm, minus) {
                                m[(l, n)] -= 1.0;
                                q[l] = -lo;
                            }
                        }
                    }
                }
            }
        }
        StandardForm { m, q, vars }
    }

    /// Number of standard variables `k`.
    pub fn len(&self) -> usize {
        self.q.len()
    }

    /// Whether there are no variables (every row fixed at zero).
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// The boxed forces `f` of a standard solution `z`.
    pub fn forces(&self, z: &DVector<f64>) -> DVector<f64> {
        DVector::from_iterator(self.vars.len(), self.vars.iter().map(|v| v.terms().map(|(i, c)| c * z[i]).sum()))
    }
}
