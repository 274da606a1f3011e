//! Boxed LCP solvers for velocity-level rigid contact, with the DiffDART (Werling et al. 2021)
//! App. A.1 "LCP stabilization" (standardized, minimum-norm solutions) and its App. A.2 extension to
//! boxed LCPs with friction bounds `|f_t| ≤ μ f_n` (the E map).
//!
//! The problem ([`BoxedLcp`]): find `f`, `w` with `w = A f + b` and, per row with bounds `[lo, hi]`,
//! `lo < f < hi ⇒ w = 0`, `f = lo ⇒ w ≥ 0`, `f = hi ⇒ w ≤ 0`; friction rows are bounded by `±μ f_normal`.
//!
//! [`solve`] splits the problem into independent islands ([`islands`]) and runs, per island:
//! 1. the warm start, if states are given: [`standardize`] with the guessed classification (App. A.1,
//!    "LCP stabilization doubles as an extremely efficient LCP solver"), accepted if it is a solution;
//!    without a warm start (and with standardization on), the first guess: every row clamping
//!    ([`SolvePath::FirstGuess`]);
//! 2. principal pivoting ([`dantzig`]) with friction bounds fixed at `μ f_n` of the current estimate,
//!    repeated (a relaxed fix-point) until the bounds settle, each pass standardized (App. A.1/A.2)
//!    unless the problem has one solution ([`BoxedLcp::unique`]), which is accepted as found;
//! 3. Lemke's method ([`lemke`]) on the problem in standard form ([`standard_form`]: friction and
//!    boxed rows through slack variables, Stewart & Trinkle 1996), so friction needs no fix-point —
//!    a counted fallback;
//! 4. projected Gauss–Seidel ([`pgs`]) — a counted fallback, standardized when that validates.
//!
//! The standardized solves of a problem that carries a factor `A = L Lᵀ` ([`BoxedLcp::factor`]; the
//! contact stage attaches `J_RD C⁻ᵀ`, `M̃_DD = C Cᵀ`, to each unregularized island with more rows than
//! dofs) go through it when the clamping set has more rows than `L` has columns: a certified full-rank
//! QR solve at any size, and the factored pseudo-inverse once the clamping set has
//! [`FACTORED_MIN_ROWS`] rows: `O(k d²)` instead of `O(k³)` (`standardize`).
//!
//! Every accepted solution has `residual ≤ tolerance` except a last-resort PGS result, whose residual is
//! reported in [`LcpStats::residual`]. See `docs/lcp.md`.

pub mod dantzig;
pub mod islands;
pub mod lemke;
pub mod pgs;
mod problem;
pub mod standard_form;
mod standardize;

use std::borrow::Cow;

use nalgebra::DVector;

use problem::residual_of_product;
pub use problem::{classify, residual, BoxedLcp, RowBound, RowState};
pub use standardize::{standardize, FACTORED_MIN_ROWS, RANK_RTOL};

use crate::error::{Error, Result};
use problem::Scales;
use standard_form::StandardForm;
use standardize::standardized_forces;

/// A solution of a [`BoxedLcp`].
#[derive(Clone, Debug, PartialEq)]
pub struct LcpSolution {
    /// The forces (impulses).
    pub f: DVector<f64>,
    /// `w = A f + b` (relative velocities).
    pub w: DVector<f64>,
    /// The classification of each row the solution was built from (for a standardized island: the states
    /// given to [`standardize`]; otherwise [`classify`] of the solution). Pass it back as the warm start
    /// of the next step.
    pub states: Vec<RowState>,
    /// How the solution was found.
    pub stats: LcpStats,
}

/// The method that produced an accepted solution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SolvePath {
    /// The problem has no rows.
    #[default]
    Empty,
    /// The warm-start classification, standardized, was a solution.
    WarmStart,
    /// Without a warm start: the first guess, every row clamping (rows whose bounds
    /// are both zero: separating), standardized, was a solution (see `docs/lcp.md`).
    FirstGuess,
    /// The modified principal pivoting method on a factored PSD problem (`crate::solver::ppm`).
    Ppm,
    /// Principal pivoting.
    Dantzig,
    /// Lemke's method.
    Lemke,
    /// Projected Gauss–Seidel.
    Pgs,
    /// The non-smooth Newton NCP solver ([`crate::solver::ncp::NcpSolver`]; the step's
    /// contacts have isotropic friction cones, not a boxed LCP).
    Newton,
}

impl SolvePath {
    /// The order of the paths, from the best (no rows) to the last resort (PGS).
    pub(crate) fn rank(self) -> u8 {
        match self {
            SolvePath::Empty => 0,
            SolvePath::WarmStart => 1,
            SolvePath::FirstGuess => 2,
            SolvePath::Ppm => 3,
            SolvePath::Dantzig => 4,
            SolvePath::Lemke => 5,
            SolvePath::Pgs => 6,
            SolvePath::Newton => 7,
        }
    }
}

/// Statistics of a [`solve`].
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct LcpStats {
    /// The method that produced the accepted solution (worst over islands, in the order of [`SolvePath`]).
    pub path: SolvePath,
    /// Number of independent islands.
    pub islands: usize,
    /// Dantzig/Lemke pivots, summed.
    pub pivots: usize,
    /// PGS sweeps, summed.
    pub pgs_iterations: usize,
    /// Max violation of the LCP conditions of the returned solution ([`residual`], relative).
    pub residual: f64,
    /// A warm start was given.
    pub warm_start_attempted: bool,
    /// Every island accepted its warm-start guess.
    pub warm_start_hit: bool,
    /// Times a method failed and the next one was tried (a warm-start miss is not counted here; see
    /// `warm_start_hit`).
    pub fallbacks: usize,
    /// The returned solution is the App. A.1 standardized one on every island (for the
    /// NCP solver: the minimum-norm forces of its contact mode).
    pub standardized: bool,
    /// Non-smooth Newton iterations of the NCP solver, summed over islands (0 for the
    /// LCP solvers).
    pub newton_iterations: usize,
    /// Newton linear systems of the NCP solver solved on the GPU
    /// ([`crate::solver::ncp::LinearSolve::GpuConjugateResidual`]), summed over islands.
    pub gpu_linear_solves: usize,
    /// Newton linear systems that asked for the GPU and were solved on the CPU because
    /// no GPU was available, summed over islands.
    pub gpu_fallbacks: usize,
    /// Islands whose search spent [`LcpOptions::work_limit`]: the rest of the search
    /// accepted raw (unstandardized) solutions, and methods got fewer pivots.
    pub work_limited: usize,
}

/// Options of [`solve`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LcpOptions {
    /// Relative tolerance of the LCP conditions (see [`residual`]) for accepting a solution, and of the
    /// classification. Default `1e-10`.
    pub tolerance: f64,
    /// Pivot budget of one Dantzig or Lemke run on one island; `0` (the default) means `20 m + 100` for an
    /// island of `m` rows.
    pub max_pivots: usize,
    /// Maximum PGS sweeps. Default 500.
    pub pgs_iterations: usize,
    /// PGS stops when a sweep changes no force by more than this (relative to the force scale).
    /// Default `1e-12`.
    pub pgs_tolerance: f64,
    /// Return the App. A.1 standardized (minimum-norm) solution. Default `true`.
    pub standardize: bool,
    /// Bound fix-point iterations for Dantzig (friction bounds `μ f_n` from the previous estimate).
    /// Default 20.
    pub friction_iterations: usize,
    /// Bound on the work of one island's search after its warm start or first guess, in
    /// estimated multiply–adds: a standardized solve of `k` clamping rows costs
    /// `k · min(k, d)² + m²` (`d`: the columns of the island's factor), a Dantzig pivot `m²`, a
    /// Lemke pivot `n (2n + 2)` on its `n`-row standard form. Once it is spent, no further
    /// standardized solve is tried (a valid raw solution is accepted, counted as
    /// unstandardized), and Dantzig and Lemke get no more pivots; PGS, the last resort,
    /// still runs its sweeps. The island is counted in [`LcpStats::work_limited`]. The
    /// default, `1e9`, is a few seconds on one core of a 2-core EPYC; islands
    /// below a hundred rows rarely come near it. `f64::INFINITY` removes the bound.
    pub work_limit: f64,
}

impl Default for LcpOptions {
    fn default() -> Self {
        LcpOptions {
            tolerance: 1e-10,
            max_pivots: 0,
            pgs_iterations: 500,
            pgs_tolerance: 1e-12,
            standardize: true,
            friction_iterations: 20,
            work_limit: 1e9,
        }
    }
}

impl LcpOptions {
    /// Checks that the tolerances are finite and positive (`pgs_tolerance` may be zero) and
    /// that `work_limit` is positive (it may be infinite).
    pub fn validate(&self) -> Result<()> {
        if self.work_limit.is_nan() || self.work_limit <= 0.0 {
            return Err(Error::InvalidInput(format!("LCP work_limit {} must be > 0", self.work_limit)));
        }
        if !(self.tolerance.is_finite() && self.tolerance > 0.0) {
            return Err(Error::InvalidInput(format!("LCP tolerance {} must be finite and > 0", self.tolerance)));
        }
        if !(self.pgs_tolerance.is_finite() && self.pgs_tolerance >= 0.0) {
            return Err(Error::InvalidInput(format!(
                "LCP pgs_tolerance {} must be finite and >= 0",
                self.pgs_tolerance
            )));
        }
        Ok(())
    }

    fn pivot_budget(&self, m: usize) -> usize {
        if self.max_pivots == 0 {
            20 * m + 100
        } else {
            self.max_pivots
        }
    }
}

/// Solves a boxed LCP (see the module documentation for the pipeline).
///
/// `warm_start`: the states of a previous solution (e.g. [`LcpSolution::states`] of the last step), one
/// per row. Errors: the problem's validation errors, [`Error::InvalidInput`] for bad options,
/// [`Error::Dimension`] for a warm start of the wrong length, [`Error::Numerical`] only if even PGS
/// produces non-finite values. The result never holds NaN.
pub fn solve(problem: &BoxedLcp, options: &LcpOptions, warm_start: Option<&[RowState]>) -> Result<LcpSolution> {
    problem.validate()?;
    solve_validated(problem, options, warm_start)
}

/// [`solve`] for a problem that was validated when it was built ([`BoxedLcp::new`] and not changed
/// since): the validation's scan of `A` is not repeated.
pub(crate) fn solve_validated(
    problem: &BoxedLcp,
    options: &LcpOptions,
    warm_start: Option<&[RowState]>,
) -> Result<LcpSolution> {
    options.validate()?;
    let m = problem.len();
    if let Some(ws) = warm_start {
        if ws.len() != m {
            return Err(Error::Dimension { what: "LCP warm-start states", expected: m, got: ws.len() });
        }
    }
    let mut stats = LcpStats {
        warm_start_attempted: warm_start.is_some(),
        warm_start_hit: warm_start.is_some(),
        standardized: true,
        ..LcpStats::default()
    };
    if m == 0 {
        return Ok(LcpSolution { f: DVector::zeros(0), w: DVector::zeros(0), states: Vec::new(), stats });
    }
    let islands = islands::split(problem);
    stats.islands = islands.len();
    let mut single: Option<(DVector<f64>, f64)> = None;
    let mut f = DVector::<f64>::zeros(m);
    let mut states = vec![RowState::Separating; m];
    for rows in &islands {
        let sub: Cow<BoxedLcp> =
            if islands.len() == 1 { Cow::Borrowed(problem) } else { Cow::Owned(islands::extract(problem, rows)) };
        let guess: Option<Vec<RowState>> = warm_start.map(|ws| rows.iter().map(|&i| ws[i]).collect());
        let mut out = solve_island(&sub, options, guess.as_deref())?;
        if islands.len() == 1 {
            // The whole problem is this island: its `w` and residual, when the island's
            // path computed them for its `f`, are those recomputed below.
            single = out.checked.take();
        }
        for (p, &i) in rows.iter().enumerate() {
            f[i] = out.f[p];
            states[i] = out.states[p];
        }
        if out.path.rank() > stats.path.rank() {
            stats.path = out.path;
        }
        stats.pivots += out.pivots;
        stats.pgs_iterations += out.pgs_iterations;
        stats.fallbacks += out.fallbacks;
        stats.work_limited += usize::from(out.work_limited);
        stats.warm_start_hit &= out.warm_hit;
        stats.standardized &= out.standardized;
    }
    let w = match single {
        Some((w, r)) => {
            stats.residual = r;
            w
        }
        None => {
            let w = &problem.a * &f + &problem.b;
            if f.iter().chain(w.iter()).any(|v| !v.is_finite()) {
                return Err(Error::Numerical { algorithm: "boxed LCP", detail: "non-finite solution".to_string() });
            }
            stats.residual = residual(problem, &f, &w);
            w
        }
    };
    // A friction row whose box has collapsed (μ = 0 or no normal impulse) carries no
    // impulse and constrains nothing: it is never clamping, whatever path chose it.
    for (i, bound) in problem.bounds.iter().enumerate() {
        if let RowBound::Friction { normal, mu } = *bound {
            if mu * f[normal] == 0.0 && states[i] == RowState::Clamping {
                states[i] = RowState::Separating;
            }
        }
    }
    Ok(LcpSolution { f, w, states, stats })
}

/// The outcome of one island.
struct IslandOutcome {
    f: DVector<f64>,
    states: Vec<RowState>,
    path: SolvePath,
    pivots: usize,
    pgs_iterations: usize,
    warm_hit: bool,
    fallbacks: usize,
    standardized: bool,
    /// The island's search spent its [`LcpOptions::work_limit`].
    work_limited: bool,
    /// `w = A f + b` and [`residual`] of `f`, finite, when the path computed them (the
    /// warm start): a problem of one island reuses them.
    checked: Option<(DVector<f64>, f64)>,
}

/// An accepted candidate: forces, states, standardized.
type Accepted = (DVector<f64>, Vec<RowState>, bool);

/// What is left of an island's [`LcpOptions::work_limit`], in estimated multiply–adds.
/// Deterministic (no clock): a step's result depends on its inputs alone.
struct Work {
    left: f64,
    /// Some charge did not fit.
    spent: bool,
}

impl Work {
    fn new(limit: f64) -> Self {
        Work { left: limit, spent: false }
    }

    /// Takes `cost` if it fits; otherwise marks the work spent and returns `false`. Once
    /// spent, nothing fits.
    fn take(&mut self, cost: f64) -> bool {
        if !self.spent && cost <= self.left {
            self.left -= cost;
            true
        } else {
            self.spent = true;
            false
        }
    }

    /// The pivots of `per_pivot` each that fit, at most `budget`, and whether the work
    /// cut `budget` (a run that then fails has spent the work: see [`Work::ran`]).
    fn pivots(&mut self, budget: usize, per_pivot: f64) -> (usize, bool) {
        let fit = if self.spent { 0.0 } else { (self.left / per_pivot.max(1.0)).floor() };
        if fit < budget as f64 {
            if fit < 1.0 {
                self.spent = true;
            }
            (fit as usize, true)
        } else {
            (budget, false)
        }
    }

    /// Charges a pivoting run of `pivots` pivots (of `per_pivot` each) under a budget
    /// from [`Work::pivots`]; a run that failed under a budget the work had cut has
    /// spent it.
    fn ran(&mut self, pivots: usize, per_pivot: f64, failed: bool, cut: bool) {
        self.left = (self.left - pivots as f64 * per_pivot).max(0.0);
        if failed && cut {
            self.spent = true;
        }
    }

    /// The estimated cost of a standardized solve of `states` on `problem`.
    fn standardized_cost(problem: &BoxedLcp, states: &[RowState]) -> f64 {
        let k = states.iter().filter(|s| **s == RowState::Clamping).count() as f64;
        let d = problem.factor.as_ref().map_or(k, |l| (l.ncols() as f64).min(k));
        k * d * d + (problem.len() as f64).powi(2)
    }
}

/// Promotes the rows of a valid solution `(f, w)` that are numerically tied (`|w| ≤ tol · scale`) but not
/// clamping to clamping. Degenerate contact sets (four coplanar corners of a box, stacked faces) admit many
/// valid classifications: a pivoting order leaves one corner "separating" with `w ≈ 0`, or a friction row
/// "at its bound" with zero slip. The preferred one is the largest clamping set, whose minimum-norm
/// solution (App. A.1's two-contact example) spreads the force over the linearly dependent rows; it is
/// the same classification for every nearby state, so the mode (and the Jacobian) is stable.
///
/// Rows whose bounds are both zero stay; the zero-force friction rows of a clamping normal become clamping
/// (`w ≈ 0`) or sit at the bound opposing their `w`.
fn promote_tied(
    problem: &BoxedLcp,
    states: &[RowState],
    f: &DVector<f64>,
    w: &DVector<f64>,
    tol: f64,
) -> Vec<RowState> {
    let tw = tol * Scales::new(&problem.a, &problem.b, Some(f.as_slice())).w;
    let mut out = states.to_vec();
    for (i, s) in out.iter_mut().enumerate() {
        if *s == RowState::Clamping || w[i].abs() > tw {
            continue;
        }
        match problem.bounds[i] {
            b if b.is_unilateral() => *s = RowState::Clamping,
            RowBound::Box { lo, hi } if lo != 0.0 || hi != 0.0 => *s = RowState::Clamping,
            _ => {}
        }
    }
    for i in 0..out.len() {
        let RowBound::Friction { normal, mu } = problem.bounds[i] else { continue };
        if out[normal] != RowState::Clamping || mu <= 0.0 {
            continue;
        }
        out[i] = match out[i] {
            RowState::AtBound { .. } if w[i].abs() <= tw => RowState::Clamping,
            RowState::Tied | RowState::Separating if w[i] > tw => RowState::AtBound { sign: -1 },
            RowState::Tied | RowState::Separating if w[i] < -tw => RowState::AtBound { sign: 1 },
            RowState::Tied | RowState::Separating => RowState::Clamping,
            s => s,
        };
    }
    out
}

/// The standardized solution for `states`; when its clamping rows leave their bounds (the minimum-norm
/// point of a rank-deficient reduced system need not respect the inequalities), the worst offender is
/// moved to the bound it crossed and the solve repeated (at most `m` times). `None` if no valid
/// standardized solution is reached.
///
/// Each solve is charged to `work`; `None` once it is spent.
fn standardize_repaired(
    problem: &BoxedLcp,
    states: &[RowState],
    tol: f64,
    work: &mut Work,
) -> Option<(DVector<f64>, Vec<RowState>)> {
    let mut states = states.to_vec();
    for _ in 0..=states.len() {
        if !work.take(Work::standardized_cost(problem, &states)) {
            return None;
        }
        let (f, w) = standardized_forces(problem, &states)?;
        if residual_of_product(problem, &f, &w) <= tol {
            return Some((f, states));
        }
        let tf = tol * Scales::new(&problem.a, &problem.b, Some(f.as_slice())).f();
        let mut worst: Option<(usize, f64, bool)> = None;
        for (i, s) in states.iter().enumerate() {
            if *s != RowState::Clamping {
                continue;
            }
            let (lo, hi) = problem.bounds_at(i, f.as_slice());
            let (below, above) = (lo - f[i], f[i] - hi);
            let (v, upper) = if above > below { (above, true) } else { (below, false) };
            if v > tf && worst.is_none_or(|(_, wv, _)| v > wv) {
                worst = Some((i, v, upper));
            }
        }
        let (i, _, upper) = worst?;
        let (lo, hi) = problem.bounds_at(i, f.as_slice());
        let bound = if upper { hi } else { lo };
        states[i] = if bound == 0.0 { RowState::Tied } else { RowState::AtBound { sign: if upper { 1 } else { -1 } } };
    }
    None
}

/// The standardized solution for `states` (repaired if needed), then the one with tied rows promoted
/// (see [`promote_tied`]), preferred when it is valid too.
fn try_standardized(
    problem: &BoxedLcp,
    states: &[RowState],
    tol: f64,
    work: &mut Work,
) -> Option<(DVector<f64>, Vec<RowState>)> {
    let (mut f, mut states) = standardize_repaired(problem, states, tol, work)?;
    // Promotion can reveal further tied rows (a repaired row moved to its bound): a few rounds, each
    // accepted only if its standardized solution is valid.
    for _ in 0..3 {
        let w = &problem.a * &f + &problem.b;
        let promoted = promote_tied(problem, &states, &f, &w, tol);
        if promoted == states {
            break;
        }
        match standardize_repaired(problem, &promoted, tol, work) {
            Some((f2, s2)) if s2 != states => (f, states) = (f2, s2),
            _ => break,
        }
    }
    Some((f, states))
}

/// Accepts a raw solution from a method: standardized if enabled and valid, else raw if valid, else (with
/// standardization disabled) the standardized one as a repair. `tried` lists classifications already
/// found not to standardize.
fn accept(
    problem: &BoxedLcp,
    options: &LcpOptions,
    f_raw: DVector<f64>,
    structural: Option<Vec<RowState>>,
    tried: &[Vec<RowState>],
    work: &mut Work,
) -> Option<Accepted> {
    let tol = options.tolerance;
    let w_raw = &problem.a * &f_raw + &problem.b;
    let classified = classify(problem, &f_raw, &w_raw, tol);
    let mut candidates: Vec<Vec<RowState>> = Vec::new();
    for c in structural.into_iter().chain(std::iter::once(classified.clone())) {
        if !tried.contains(&c) && !candidates.contains(&c) {
            candidates.push(c);
        }
    }
    let mut standardized = |candidates: &[Vec<RowState>]| {
        candidates.iter().find_map(|c| try_standardized(problem, c, tol, work)).map(|(f, s)| (f, s, true))
    };
    if options.standardize {
        if let Some(x) = standardized(&candidates) {
            return Some(x);
        }
    }
    if f_raw.iter().all(|v| v.is_finite()) && residual(problem, &f_raw, &w_raw) <= tol {
        return Some((f_raw, classified, false));
    }
    if !options.standardize {
        return standardized(&candidates);
    }
    None
}

/// Dantzig with the friction-bound fix-point; `None` if it failed or its result did not validate.
///
/// Its pivots and standardized solves are charged to `work`; once that is spent, a pass whose raw
/// solution is valid is accepted unstandardized. A problem with one solution ([`BoxedLcp::unique`])
/// accepts its valid raw solution as standardized, without solving a reduced system.
fn dantzig_path(problem: &BoxedLcp, options: &LcpOptions, pivots: &mut usize, work: &mut Work) -> Option<Accepted> {
    let m = problem.len();
    let tol = options.tolerance;
    let mut lo = vec![0.0; m];
    let mut hi = vec![0.0; m];
    for (i, bound) in problem.bounds.iter().enumerate() {
        if let RowBound::Box { lo: l, hi: h } = *bound {
            lo[i] = l;
            hi[i] = h;
        }
    }
    let per_pivot = (m as f64).powi(2);
    let unique = problem.unique();
    let mut tried: Vec<Vec<RowState>> = Vec::new();
    let mut last: Option<(DVector<f64>, Vec<RowState>)> = None;
    for iteration in 0..options.friction_iterations.max(1) {
        let (budget, cut) = work.pivots(options.pivot_budget(m), per_pivot);
        if budget == 0 {
            break;
        }
        let Ok(out) = dantzig::solve_box(&problem.a, &problem.b, &lo, &hi, tol, budget) else {
            work.ran(budget, per_pivot, true, cut);
            break;
        };
        *pivots += out.pivots;
        work.ran(out.pivots, per_pivot, false, cut);
        if unique && residual(problem, &out.f, &out.w) <= tol {
            // The one solution ([`BoxedLcp::unique`]): it is its own standardized
            // solution, and its tied rows are promoted as a standardized solve would
            // ([`promote_tied`]), with no reduced system solved.
            let classified = classify(problem, &out.f, &out.w, tol);
            let states =
                if options.standardize { promote_tied(problem, &classified, &out.f, &out.w, tol) } else { classified };
            return Some((out.f, states, options.standardize));
        }
        let scales = Scales::new(&problem.a, &problem.b, Some(out.f.as_slice()));
        let w_tol = tol * scales.w;
        let states: Vec<RowState> = (0..m)
            .map(|i| {
                let tied_or_sep = if out.w[i].abs() <= w_tol { RowState::Tied } else { RowState::Separating };
                match out.sets[i] {
                    dantzig::DantzigSet::Clamped | dantzig::DantzigSet::Frozen => RowState::Clamping,
                    dantzig::DantzigSet::Lower if lo[i] == 0.0 => tied_or_sep,
                    dantzig::DantzigSet::Lower => RowState::AtBound { sign: -1 },
                    dantzig::DantzigSet::Upper if hi[i] == 0.0 => tied_or_sep,
                    dantzig::DantzigSet::Upper => RowState::AtBound { sign: 1 },
                }
            })
            .collect();
        // Bounds for the next pass: μ f_n, relaxed (halfway from the previous bound) after the first two
        // passes, which breaks the period-two cycles the plain fix-point falls into when contacts
        // trade load.
        let relax = if iteration < 2 { 1.0 } else { 0.5 };
        let mut change = 0.0f64;
        for (i, bound) in problem.bounds.iter().enumerate() {
            if let RowBound::Friction { normal, mu } = *bound {
                let target = mu * out.f[normal].max(0.0);
                change = change.max((target - hi[i]).abs());
                let c = hi[i] + relax * (target - hi[i]);
                lo[i] = -c;
                hi[i] = c;
            }
        }
        let converged = change <= tol * scales.f();
        if options.standardize && !tried.contains(&states) {
            if let Some((f, s)) = try_standardized(problem, &states, tol, work) {
                return Some((f, s, true));
            }
            tried.push(states.clone());
        }
        if (!options.standardize || work.spent) && residual(problem, &out.f, &out.w) <= tol {
            let classified = classify(problem, &out.f, &out.w, tol);
            return Some((out.f, classified, false));
        }
        last = Some((out.f, states.clone()));
        if converged {
            break;
        }
    }
    let (f, states) = last?;
    accept(problem, options, f, Some(states), &tried, work)
}

/// Lemke's method on the island in standard form ([`standard_form`]: friction and boxed rows
/// through slack variables, so no fix-point on the friction bounds); `None` if it failed or
/// its result did not validate.
fn lemke_path(problem: &BoxedLcp, options: &LcpOptions, pivots: &mut usize, work: &mut Work) -> Option<Accepted> {
    let standard = StandardForm::new(problem);
    let f = if standard.is_empty() {
        DVector::zeros(problem.len())
    } else {
        let n = standard.len() as f64;
        let per_pivot = n * (2.0 * n + 2.0);
        let (budget, cut) = work.pivots(options.pivot_budget(standard.len()), per_pivot);
        if budget == 0 {
            return None;
        }
        let (out, taken) = lemke::solve_standard_counted(&standard.m, &standard.q, budget);
        work.ran(taken, per_pivot, out.is_err(), cut);
        let out = out.ok()?;
        *pivots += out.pivots;
        standard.forces(&out.f)
    };
    accept(problem, options, f, None, &[], work)
}

/// PGS, then the standardized solution for its classification at a few tolerances, else its raw result.
fn pgs_path(problem: &BoxedLcp, options: &LcpOptions, work: &mut Work) -> Result<(Accepted, usize)> {
    let mut out = pgs::solve_pgs(problem, options.pgs_iterations, options.pgs_tolerance, None);
    if out.f.iter().chain(out.w.iter()).any(|v| !v.is_finite()) {
        return Err(Error::Numerical { algorithm: "projected Gauss-Seidel", detail: "non-finite forces".into() });
    }
    let tol = options.tolerance;
    let mut raw_residual = residual(problem, &out.f, &out.w);
    if raw_residual > tol {
        // Polish: with the friction boxes frozen at μ f_n of the PGS forces, the problem is
        // a boxed LCP with fixed bounds, which pivoting solves exactly; only the friction
        // bounds keep the PGS error. Normal and limit rows then hold to round-off instead
        // of to the PGS accuracy (a velocity limit was 1e-2 rad/s off after 500 sweeps).
        if let Some((f, w, r)) = frozen_friction_solution(problem, &out.f, options) {
            if r < raw_residual {
                (out.f, out.w, raw_residual) = (f, w, r);
            }
        }
    }
    if !options.standardize && raw_residual <= tol {
        let states = classify(problem, &out.f, &out.w, tol);
        return Ok(((out.f, states, false), out.iterations));
    }
    let mut tried: Vec<Vec<RowState>> = Vec::new();
    for ctol in [tol, 1e-8, 1e-6, 1e-4] {
        let states = classify(problem, &out.f, &out.w, ctol.max(tol));
        if tried.contains(&states) {
            continue;
        }
        if let Some((f, s)) = try_standardized(problem, &states, tol, work) {
            return Ok(((f, s, true), out.iterations));
        }
        tried.push(states);
    }
    let states = classify(problem, &out.f, &out.w, tol);
    Ok(((out.f, states, false), out.iterations))
}

/// The exact solution of `problem` with its friction boxes frozen at `±μ f_n` of the
/// forces `f` (a boxed LCP with fixed bounds, solved by pivoting), with its residual in
/// the original problem; `None` when pivoting fails.
fn frozen_friction_solution(
    problem: &BoxedLcp,
    f: &DVector<f64>,
    options: &LcpOptions,
) -> Option<(DVector<f64>, DVector<f64>, f64)> {
    let m = problem.len();
    let (lo, hi): (Vec<f64>, Vec<f64>) = (0..m).map(|i| problem.bounds_at(i, f.as_slice())).unzip();
    // The last resort's polish gets its own allowance of one work limit of pivots, at
    // least one (an island whose search spent its limit still gets the polished PGS
    // result).
    let (budget, _) = Work::new(options.work_limit).pivots(options.pivot_budget(m), (m as f64).powi(2));
    let budget = budget.max(1);
    let out = dantzig::solve_box(&problem.a, &problem.b, &lo, &hi, options.tolerance, budget).ok()?;
    if out.f.iter().chain(out.w.iter()).any(|v| !v.is_finite()) {
        return None;
    }
    let r = residual(problem, &out.f, &out.w);
    Some((out.f, out.w, r))
}

/// The accepted guess `states` with every friction row marked at its bound while its normal
/// row is not clamping (its box is collapsed, so `standardize` gave it `f = 0`) replaced by
/// its classification at the solution — a friction row at its bound always follows a
/// clamping normal (the E map of the backward pass needs it) — and so is every row at zero
/// force whose bounds are both zero (friction with `μ = 0` or without a normal force),
/// whose label a guess cannot know: tied or separating by its `w`, as a cold solve
/// classifies it.
fn consistent_states(
    problem: &BoxedLcp,
    states: &[RowState],
    f: &DVector<f64>,
    w: &DVector<f64>,
    tolerance: f64,
) -> Vec<RowState> {
    let stray = |i: usize| match (states[i], problem.bounds[i]) {
        (RowState::AtBound { .. }, RowBound::Friction { normal, .. }) => states[normal] != RowState::Clamping,
        (RowState::Separating | RowState::Tied, _) => problem.bounds_at(i, f.as_slice()) == (0.0, 0.0),
        _ => false,
    };
    if !(0..states.len()).any(stray) {
        return states.to_vec();
    }
    let fresh = classify(problem, f, w, tolerance);
    (0..states.len()).map(|i| if stray(i) { fresh[i] } else { states[i] }).collect()
}

/// The first guess of a solve without a warm start: every row clamping (contacts closed and
/// sticking, joint rows holding), except rows whose bounds are both zero (a friction row
/// with `μ = 0`), separating. A scene built at rest, or a fresh inelastic impact without
/// slip, is solved by this guess's standardized forces alone, which are then the
/// minimum-norm forces of the largest clamping set ([`promote_tied`]'s preference). It
/// matters on redundant contact sets, whose normal forces are not unique: there the
/// friction bounds `μ f_n` of Dantzig's fix-point follow an arbitrary solution and need
/// not settle (the 20-block arch of `samples::arch`, 252 rows on 120 dofs, fell back
/// through Lemke to PGS in 3.5 s; this guess solves it in 2.5 ms). A miss costs one
/// standardized solve.
fn first_guess(problem: &BoxedLcp) -> Vec<RowState> {
    problem
        .bounds
        .iter()
        .map(|bound| match *bound {
            RowBound::Friction { mu: 0.0, .. } | RowBound::Box { lo: 0.0, hi: 0.0 } => RowState::Separating,
            _ => RowState::Clamping,
        })
        .collect()
}

fn solve_island(problem: &BoxedLcp, options: &LcpOptions, warm_start: Option<&[RowState]>) -> Result<IslandOutcome> {
    let outcome = |path: SolvePath, acc: Accepted| IslandOutcome {
        f: acc.0,
        states: acc.1,
        path,
        pivots: 0,
        pgs_iterations: 0,
        warm_hit: false,
        fallbacks: 0,
        standardized: acc.2,
        work_limited: false,
        checked: None,
    };
    // The guess exactly as given (no repair, no promotion): a hit means the classification
    // held. Without a warm start, the first guess (standardized solutions only).
    let first = (warm_start.is_none() && options.standardize).then(|| first_guess(problem));
    let guess = warm_start.map(|g| (g, SolvePath::WarmStart)).or(first.as_deref().map(|g| (g, SolvePath::FirstGuess)));
    if let Some((guess, path)) = guess {
        if let Some((f, w)) = standardized_forces(problem, guess) {
            let r = residual_of_product(problem, &f, &w);
            if r <= options.tolerance {
                let states = consistent_states(problem, guess, &f, &w, options.tolerance);
                let mut out = outcome(path, (f, states, true));
                out.warm_hit = path == SolvePath::WarmStart;
                out.checked = Some((w, r));
                return Ok(out);
            }
        }
    }
    let mut pivots = 0;
    let mut fallbacks = 0;
    let mut work = Work::new(options.work_limit);
    if let Some(acc) = dantzig_path(problem, options, &mut pivots, &mut work) {
        let mut out = outcome(SolvePath::Dantzig, acc);
        out.pivots = pivots;
        out.work_limited = work.spent;
        return Ok(out);
    }
    fallbacks += 1;
    if let Some(acc) = lemke_path(problem, options, &mut pivots, &mut work) {
        let mut out = outcome(SolvePath::Lemke, acc);
        out.pivots = pivots;
        out.fallbacks = fallbacks;
        out.work_limited = work.spent;
        return Ok(out);
    }
    fallbacks += 1;
    let (acc, iterations) = pgs_path(problem, options, &mut work)?;
    let mut out = outcome(SolvePath::Pgs, acc);
    out.pivots = pivots;
    out.fallbacks = fallbacks;
    out.pgs_iterations = iterations;
    out.work_limited = work.spent;
    Ok(out)
}
