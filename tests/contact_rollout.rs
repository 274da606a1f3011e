//! Rollout VJPs through contact: 100-step rollouts recorded on a `Tape`, a scalar loss
//! (running costs on the state and the controls plus a terminal cost), backward through
//! the tape, and every gradient block — initial q (tangent), v, the controls and the
//! parameters θ (mass, friction, restitution) — against Ridders finite differences of
//! the loss recomputed from rollouts with perturbed inputs (q perturbed on the manifold,
//! `q ⊕ δ`; θ through `ParamSpec::apply`).
//!
//! The finite differences are only the derivative where the rollout keeps its mode
//! sequence, so every finite-difference evaluation's per-step row classification (tied
//! rows counted as separating, as the backward pass treats them), row kinds and bounce
//! flags are compared with the nominal rollout's, and a change fails the test.
//!
//! Acceptance: relative error ≤ 1e-5 per block (relative to the block's largest entry).
//! The controls are 100 × nv inputs: ten random entries are checked one by one, and the
//! whole block through the directional derivative along a random direction.

mod common;

use common::contact::{free_body, material, options, pose_q};
use common::ridders;
use nalgebra::DVector;
use std::cell::RefCell;
use stiction::math::{Inertia, SplitMix64, Vec3};
use stiction::model::{Geometry, ParamSpec};
use stiction::solver::lcp::RowState;
use stiction::step::RowKind;
use stiction::tape::{BackwardOptions, ContactGradientStrategy, StepRecord, Tape, Workspace};
use stiction::{Control, Model, ModelBuilder, SimOptions, Simulator, State};

use common::contact::DT;
const STEPS: usize = 100;
const TOL: f64 = 1e-5;

// ---------------------------------------------------------------------------------
// Loss

/// What the state cost measures.
#[derive(Clone, Copy)]
enum Track {
    /// The position of a free body (q[0..3]); its tangent derivative is `[0; ∂/∂p]`,
    /// since `q ⊕ δ` moves the position by the world-frame `δ_lin`.
    FreeBodyPosition,
    /// Every coordinate (all joints scalar: q ⊕ δ = q + δ).
    Coordinates,
}

/// `L = Σ_{t<T} [w_q |p_t − p*|² + w_v |v_t − v*|² + w_τ |τ_t|²] + W_q |p_T − p*|² + W_v |v_T − v*|²`.
#[derive(Clone)]
struct Cost {
    track: Track,
    p_ref: DVector<f64>,
    v_ref: DVector<f64>,
    w_q: f64,
    w_v: f64,
    w_tau: f64,
    terminal_q: f64,
    terminal_v: f64,
}

impl Cost {
    fn tracked(&self, q: &DVector<f64>) -> DVector<f64> {
        match self.track {
            Track::FreeBodyPosition => DVector::from_column_slice(&q.as_slice()[0..3]),
            Track::Coordinates => q.clone(),
        }
    }

    /// The state cost of step t (terminal when `terminal`) and its partials
    /// `(∂/∂q tangent, ∂/∂v)`.
    fn state(&self, s: &State, terminal: bool) -> (f64, DVector<f64>, DVector<f64>) {
        let (wq, wv) = if terminal { (self.terminal_q, self.terminal_v) } else { (self.w_q, self.w_v) };
        let dp = self.tracked(&s.q) - &self.p_ref;
        let dv = &s.v - &self.v_ref;
        let cost = wq * dp.norm_squared() + wv * dv.norm_squared();
        let gp = dp * (2.0 * wq);
        let gq = match self.track {
            // The free joint's tangent translation is the world-frame position itself.
            Track::FreeBodyPosition => {
                let mut g = DVector::zeros(s.v.len());
                g.rows_mut(3, 3).copy_from(&gp);
                g
            }
            Track::Coordinates => gp,
        };
        (cost, gq, dv * (2.0 * wv))
    }
}

// ---------------------------------------------------------------------------------
// Rollouts and modes

/// The contact mode of one step: row kinds, classification (tied as separating) and
/// the bounce flags of the contacts.
#[derive(Clone, Debug, PartialEq)]
struct StepMode {
    rows: Vec<RowKind>,
    states: Vec<RowState>,
    bounce: Vec<bool>,
}

fn step_mode(sim: &Simulator) -> StepMode {
    match sim.last_constraints() {
        None => StepMode { rows: vec![], states: vec![], bounce: vec![] },
        Some(c) => StepMode {
            rows: c.rows.clone(),
            states: c.states.iter().map(|s| if *s == RowState::Tied { RowState::Separating } else { *s }).collect(),
            bounce: c.info.iter().map(|i| i.bounce).collect(),
        },
    }
}

struct Rollout {
    loss: f64,
    modes: Vec<StepMode>,
    states: Vec<State>,
    tape: Option<Tape>,
}

fn rollout(
    model: &Model,
    opts: &SimOptions,
    x0: &State,
    controls: &[DVector<f64>],
    cost: &Cost,
    record: Option<&ParamSpec>,
) -> Rollout {
    let mut sim = Simulator::new(model.clone(), opts.clone()).unwrap();
    let mut tape = record.map(|spec| {
        sim.set_params(spec.clone());
        Tape::new()
    });
    let mut x = x0.clone();
    let mut loss = 0.0;
    let mut modes = Vec::with_capacity(controls.len());
    let mut states = vec![x.clone()];
    for tau in controls {
        loss += cost.state(&x, false).0 + cost.w_tau * tau.norm_squared();
        let control = Control::torques(tau.clone());
        x = match tape.as_mut() {
            Some(t) => {
                let (next, rec) = sim.step_recorded(&x, &control).unwrap();
                t.push(rec).unwrap();
                next
            }
            None => sim.step(&x, &control).unwrap(),
        };
        modes.push(step_mode(&sim));
        states.push(x.clone());
    }
    loss += cost.state(&x, true).0;
    Rollout { loss, modes, states, tape }
}

// ---------------------------------------------------------------------------------
// Scenes

/// Finite-difference starting steps (Ridders shrinks them by up to 1.4⁹ ≈ 21): the q
/// step stays well below the ~g·h² ≈ 1e-5 m band in which a resting contact keeps its
/// mode, and the others move the state by comparable amounts.
#[derive(Clone, Copy)]
struct FdSteps {
    q: f64,
    v: f64,
    tau: f64,
    /// Relative to |θ_i| (at least 1).
    theta: f64,
}

struct Scene {
    name: &'static str,
    model: Model,
    state: State,
    controls: Vec<DVector<f64>>,
    params: Vec<String>,
    cost: Cost,
    fd: FdSteps,
    /// What the nominal mode sequence must show for the scene to test what it claims.
    check: fn(&[StepMode]) -> Result<(), String>,
}

fn normal_states(m: &StepMode) -> impl Iterator<Item = RowState> + '_ {
    m.rows.iter().zip(&m.states).filter(|(k, _)| matches!(k, RowKind::ContactNormal { .. })).map(|(_, s)| *s)
}

fn friction_at_bound(m: &StepMode) -> bool {
    m.rows
        .iter()
        .zip(&m.states)
        .any(|(k, s)| matches!(k, RowKind::ContactFriction { .. }) && matches!(s, RowState::AtBound { .. }))
}

fn first_step(modes: &[StepMode], pred: impl Fn(&StepMode) -> bool) -> Option<usize> {
    modes.iter().position(pred)
}

fn mid_rollout(what: &str, t: Option<usize>) -> Result<usize, String> {
    match t {
        Some(t) if (10..STEPS - 10).contains(&t) => Ok(t),
        other => Err(format!("{what} should happen mid-rollout, got step {other:?}")),
    }
}

/// Smooth, fixed control sequence: `amp[k]·sin(t/period_k + k)` on dof k plus `bias`.
fn controls(nv: usize, amp: &[f64], bias: &[f64]) -> Vec<DVector<f64>> {
    (0..STEPS)
        .map(|t| DVector::from_fn(nv, |k, _| bias[k] + amp[k] * ((t as f64) / (5.0 + 2.0 * k as f64) + k as f64).sin()))
        .collect()
}

const BALL_R: f64 = 0.1;
const BALL_M: f64 = 0.5;

fn ball_model(name: &str, mu: f64, e: f64) -> Model {
    let mut b = ModelBuilder::new(name);
    common::contact::ground(&mut b, material(mu, e), 0.0);
    free_body(
        &mut b,
        "ball",
        Geometry::Sphere { radius: BALL_R },
        Inertia::solid_sphere(BALL_M, BALL_R),
        material(mu, e),
    );
    b.build().unwrap()
}

fn ball_cost(p_ref: [f64; 3]) -> Cost {
    Cost {
        track: Track::FreeBodyPosition,
        p_ref: DVector::from_row_slice(&p_ref),
        v_ref: DVector::from_row_slice(&[0.0, 0.0, 0.0, 0.3, 0.0, 0.5]),
        w_q: 1.0,
        w_v: 0.05,
        w_tau: 0.01,
        terminal_q: 50.0,
        terminal_v: 2.0,
    }
}

/// A ball with restitution 0.5 dropped from 5 cm at 1 m/s: it enters the contact
/// margin around step 42 (a separating speculative contact), bounces around step 46
/// (the bounce target with both friction rows sticking) and leaves.
fn ball_bounce() -> Scene {
    let model = ball_model("ball_bounce_0.5", 0.5, 0.5);
    let q = pose_q(&model, Vec3::new(0.0, 0.0, BALL_R + 0.05), Vec3::x(), 0.4);
    let v = DVector::from_row_slice(&[0.0, 0.0, 0.0, 0.2, 0.1, -1.0]);
    Scene {
        name: "ball_bounce_0.5",
        state: State { q, v },
        controls: controls(6, &[0.003, 0.002, 0.001, 0.3, 0.2, 0.4], &[0.0; 6]),
        params: vec!["mass:ball".into(), "restitution:ball".into(), "restitution:world".into(), "friction:ball".into()],
        cost: ball_cost([0.05, 0.0, 0.2]),
        fd: FdSteps { q: 1e-5, v: 1e-5, tau: 1e-3, theta: 1e-5 },
        check: |modes| {
            let t = mid_rollout("the bounce", first_step(modes, |m| m.bounce.iter().any(|b| *b)))?;
            let n = modes.iter().filter(|m| m.bounce.iter().any(|b| *b)).count();
            if n != 1 {
                return Err(format!("expected one bouncing step, got {n}"));
            }
            if !modes[t].states.iter().all(|s| *s == RowState::Clamping) {
                return Err(format!("bounce step rows should all clamp: {:?}", modes[t].states));
            }
            Ok(())
        },
        model,
    }
}

/// A ball 1 µm above the ground (closed within the first step: a clamping speculative
/// contact; a ball pressed into the ground would be pushed out at φ/h and hop) sliding
/// at 3 m/s (friction 0.5): the friction row along the slip is at its bound at every
/// step (it would take 0.17 s of sliding for the spin to catch up with the slip).
fn ball_sliding() -> Scene {
    let model = ball_model("ball_sliding", 0.5, 0.0);
    let q = pose_q(&model, Vec3::new(0.0, 0.0, BALL_R + 1e-6), Vec3::z(), 0.0);
    let v = DVector::from_row_slice(&[0.0, 0.0, 0.0, 0.0, 3.0, 0.0]);
    Scene {
        name: "ball_sliding",
        state: State { q, v },
        controls: controls(6, &[0.002, 0.002, 0.002, 0.2, 0.3, 0.5], &[0.0; 6]),
        params: vec!["mass:ball".into(), "friction:ball".into(), "friction:world".into()],
        cost: ball_cost([0.0, 0.35, BALL_R]),
        fd: FdSteps { q: 1e-6, v: 1e-5, tau: 1e-3, theta: 1e-5 },
        check: |modes| {
            for (t, m) in modes.iter().enumerate() {
                if !(normal_states(m).all(|s| s == RowState::Clamping) && friction_at_bound(m)) {
                    return Err(format!("step {t}: expected a clamping normal and sliding friction, got {m:?}"));
                }
            }
            Ok(())
        },
        model,
    }
}

/// A ball 3 mm above the ground (inside the contact margin: a separating speculative
/// contact from the start), moving at 2 m/s and falling: it lands around step 17
/// without bouncing (e = 0) and slides with its friction row at the bound.
fn ball_landing() -> Scene {
    let model = ball_model("ball_landing", 0.3, 0.0);
    let q = pose_q(&model, Vec3::new(0.0, 0.0, BALL_R + 3e-3), Vec3::y(), 0.7);
    // The free joint's linear velocity is in the world frame (the body is turned by 0.7 rad).
    let v = DVector::from_row_slice(&[0.0, 0.0, 0.0, 2.0, 0.0, -0.1]);
    Scene {
        name: "ball_landing",
        state: State { q, v },
        controls: controls(6, &[0.002, 0.002, 0.002, 0.2, 0.2, 0.3], &[0.0; 6]),
        params: vec!["mass:ball".into(), "friction:world".into()],
        cost: ball_cost([0.25, 0.0, BALL_R]),
        fd: FdSteps { q: 1e-6, v: 1e-5, tau: 1e-3, theta: 1e-5 },
        check: |modes| {
            let land =
                mid_rollout("the landing", first_step(modes, |m| normal_states(m).any(|s| s == RowState::Clamping)))?;
            if modes[..land].iter().any(|m| m.rows.is_empty()) {
                return Err("the contact should be speculative (separating rows) before landing".into());
            }
            for (t, m) in modes.iter().enumerate().skip(land) {
                if !friction_at_bound(m) {
                    return Err(format!("step {t}: expected sliding friction after the landing, got {m:?}"));
                }
            }
            Ok(())
        },
        model,
    }
}

/// A frictionless box on its four bottom corners, 1 µm above the ground (a
/// rank-deficient clamped set: minimum-norm impulses), yawed 0.3 rad, sliding at
/// 0.5 m/s and pushed along x.
fn box_sliding_frictionless() -> Scene {
    let mut b = ModelBuilder::new("box_frictionless");
    common::contact::ground(&mut b, material(0.0, 0.0), 0.0);
    let h = Vec3::new(0.1, 0.08, 0.06);
    free_body(&mut b, "box", Geometry::Box { half_extents: h }, Inertia::solid_box(1.0, h * 2.0), material(0.0, 0.0));
    let model = b.build().unwrap();
    let q = pose_q(&model, Vec3::new(0.0, 0.0, h.z + 1e-6), Vec3::z(), 0.3);
    let v = DVector::from_row_slice(&[0.0, 0.0, 0.4, 0.5, 0.1, 0.0]);
    Scene {
        name: "box_sliding_frictionless",
        state: State { q, v },
        controls: controls(6, &[0.01, 0.01, 0.02, 0.5, 0.3, 0.5], &[0.0, 0.0, 0.0, 1.0, 0.0, 0.0]),
        params: vec!["mass:box".into(), "inertia:box".into()],
        cost: Cost {
            track: Track::FreeBodyPosition,
            p_ref: DVector::from_row_slice(&[0.1, 0.0, h.z]),
            v_ref: DVector::from_row_slice(&[0.0, 0.0, 0.0, 0.5, 0.0, 0.0]),
            w_q: 1.0,
            w_v: 0.05,
            w_tau: 0.01,
            terminal_q: 50.0,
            terminal_v: 2.0,
        },
        fd: FdSteps { q: 1e-6, v: 1e-5, tau: 1e-3, theta: 1e-5 },
        check: |modes| {
            for (t, m) in modes.iter().enumerate() {
                let clamped = normal_states(m).filter(|s| *s == RowState::Clamping).count();
                if clamped != 4 {
                    return Err(format!("step {t}: expected 4 clamping corners, got {m:?}"));
                }
            }
            Ok(())
        },
        model,
    }
}

/// A cart on a rail with an upper limit at 1 m, starting at 0.95 m at 1.5 m/s and
/// pushed on: the limit row appears within the margin around step 27 and clamps
/// from about step 33 while the pole swings.
fn cartpole_limit() -> Scene {
    let model = common::contact::limited_cartpole();
    let q = DVector::from_vec(vec![0.95, 0.3]);
    let v = DVector::from_vec(vec![1.5, -0.5]);
    Scene {
        name: "cartpole_limit",
        state: State { q, v },
        controls: controls(2, &[0.3, 0.05], &[0.5, 0.0]),
        params: vec!["mass:cart".into(), "mass:pole".into()],
        cost: Cost {
            track: Track::Coordinates,
            p_ref: DVector::from_vec(vec![0.9, 0.0]),
            v_ref: DVector::zeros(2),
            w_q: 1.0,
            w_v: 0.05,
            w_tau: 0.01,
            terminal_q: 50.0,
            terminal_v: 2.0,
        },
        fd: FdSteps { q: 1e-6, v: 1e-5, tau: 1e-3, theta: 1e-5 },
        check: |modes| {
            let clamps = |m: &StepMode| {
                m.rows
                    .iter()
                    .zip(&m.states)
                    .any(|(k, s)| matches!(k, RowKind::JointUpper { .. }) && *s == RowState::Clamping)
            };
            mid_rollout("the limit impact", first_step(modes, clamps))?;
            Ok(())
        },
        model,
    }
}

// ---------------------------------------------------------------------------------
// The check

/// One finite-difference input direction of a scene.
#[derive(Clone, Copy, Debug)]
enum Input {
    Q(usize),
    V(usize),
    Theta(usize),
    Tau(usize, usize),
    /// The whole control block along the scene's random direction.
    TauDirection,
}

struct Checker<'a> {
    scene: &'a Scene,
    spec: ParamSpec,
    theta0: DVector<f64>,
    nominal: Vec<StepMode>,
    direction: Vec<DVector<f64>>,
    mode_breaks: RefCell<Vec<String>>,
}

impl Checker<'_> {
    fn loss_at(&self, input: Input, eps: f64) -> f64 {
        let s = self.scene;
        let nv = s.model.nv();
        let mut state = s.state.clone();
        let mut controls = s.controls.clone();
        let mut model_storage = None;
        match input {
            Input::Q(i) => {
                let d = DVector::from_fn(nv, |k, _| if k == i { eps } else { 0.0 });
                state.q = s.model.integrate(&s.state.q, &d, 1.0).unwrap();
            }
            Input::V(i) => state.v[i] += eps,
            Input::Tau(t, k) => controls[t][k] += eps,
            Input::TauDirection => {
                for (c, d) in controls.iter_mut().zip(&self.direction) {
                    *c += d * eps;
                }
            }
            Input::Theta(i) => {
                let mut theta = self.theta0.clone();
                theta[i] += eps;
                model_storage = Some(self.spec.apply(&s.model, &theta).unwrap());
            }
        }
        let model = model_storage.as_ref().unwrap_or(&s.model);
        let r = rollout(model, &options(), &state, &controls, &s.cost, None);
        if r.modes != self.nominal {
            let t = r.modes.iter().zip(&self.nominal).position(|(a, b)| a != b).unwrap_or(0);
            self.mode_breaks.borrow_mut().push(format!(
                "{}: {input:?} at ε = {eps:.1e} changes the mode at step {t}:\nnominal {:?}\nthis    {:?}",
                s.name,
                self.nominal.get(t),
                r.modes.get(t)
            ));
        }
        r.loss
    }

    /// Ridders derivative of the loss along `input` from the starting step `h0`.
    fn derivative(&self, input: Input, h0: f64) -> (f64, f64) {
        let f = |eps: f64| DVector::from_element(1, self.loss_at(input, eps));
        let (d, err) = ridders(&f, h0);
        (d[0], err)
    }
}

/// Worst relative error of a block: `max |a − fd| / max(max |a|, floor)`.
fn block_error(analytic: &[f64], fd: &[f64], floor: f64) -> f64 {
    let scale = analytic.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(floor);
    analytic.iter().zip(fd).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / scale
}

fn check_scene(s: &Scene) -> Result<String, String> {
    let nv = s.model.nv();
    let spec = ParamSpec::parse(&s.model, &s.params).unwrap();
    let theta0 = spec.values(&s.model);
    let nominal = rollout(&s.model, &options(), &s.state, &s.controls, &s.cost, Some(&spec));
    (s.check)(&nominal.modes).map_err(|e| format!("{}: {e}", s.name))?;

    // Analytic gradients: the loss's partials backpropagated through the tape.
    let grad_states: Vec<(DVector<f64>, DVector<f64>)> = nominal
        .states
        .iter()
        .enumerate()
        .map(|(t, x)| {
            let (_, gq, gv) = s.cost.state(x, t == STEPS);
            (gq, gv)
        })
        .collect();
    let grad_controls: Vec<DVector<f64>> = s.controls.iter().map(|tau| tau * (2.0 * s.cost.w_tau)).collect();
    let tape = nominal.tape.as_ref().unwrap();
    assert_eq!(tape.len(), STEPS);
    let g = tape.backward(&grad_states, &grad_controls).unwrap();

    let mut rng = SplitMix64::new(0x5eed ^ nv as u64);
    let direction: Vec<DVector<f64>> = (0..STEPS).map(|_| DVector::from_fn(nv, |_, _| rng.range(-1.0, 1.0))).collect();
    let checker = Checker {
        scene: s,
        spec: spec.clone(),
        theta0: theta0.clone(),
        nominal: nominal.modes.clone(),
        direction,
        mode_breaks: RefCell::new(vec![]),
    };
    // The floor under each block's scale: finite differences of a 100-step rollout
    // resolve derivatives of the loss to about 1e-8·|L| at best (Ridders' own error
    // estimates in these scenes reach 2.5e-8·|L|), so a block whose entries were all
    // smaller could only be compared with noise, in absolute terms. It never binds here:
    // each block's scale must exceed it 100-fold, or the block is reported as degenerate
    // (the check would be vacuous).
    let floor = 1e-8 * nominal.loss.abs().max(1.0);
    let mut lines = vec![];
    let mut worst: f64 = 0.0;
    let mut failures = vec![];
    let mut run_block = |name: &str, inputs: &[Input], analytic: &[f64], h0: &dyn Fn(Input) -> f64| {
        let (fd, errs): (Vec<f64>, Vec<f64>) = inputs.iter().map(|i| checker.derivative(*i, h0(*i))).unzip();
        let e = block_error(analytic, &fd, floor);
        let est = errs.iter().fold(0.0f64, |m, x| m.max(*x));
        let scale = analytic.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        lines.push(format!("  {name:<10} rel err {e:.1e} (Ridders estimate {est:.1e}, |max| {scale:.2e})"));
        if scale < 100.0 * floor {
            failures.push(format!("{}: block {name} is degenerate (scale {scale:.1e})", s.name));
        }
        if e.is_nan() || e > TOL {
            failures.push(format!(
                "{}: block {name}: relative error {e:.2e} > {TOL:.0e}\nanalytic {analytic:?}\nfd       {fd:?}",
                s.name
            ));
        }
        worst = worst.max(e);
    };
    let fd = s.fd;
    let qs: Vec<Input> = (0..nv).map(Input::Q).collect();
    run_block("q0", &qs, g.q0.as_slice(), &|_| fd.q);
    let vs: Vec<Input> = (0..nv).map(Input::V).collect();
    run_block("v0", &vs, g.v0.as_slice(), &|_| fd.v);
    if !theta0.is_empty() {
        let ts: Vec<Input> = (0..theta0.len()).map(Input::Theta).collect();
        run_block("theta", &ts, g.theta.as_slice(), &|i| match i {
            Input::Theta(k) => fd.theta * theta0[k].abs().max(1.0),
            _ => unreachable!(),
        });
    }
    // Control entries, relative to the whole control block's scale: at every step where
    // the mode changes, the entry of largest gradient (the steps next to an impact are
    // the interesting ones), then random entries up to ten more.
    let mut picks: Vec<(usize, usize)> = vec![];
    for t in 0..STEPS {
        if t == 0 || nominal.modes[t] != nominal.modes[t - 1] {
            let k = g.tau[t].iamax();
            picks.push((t, k));
        }
    }
    let changes = picks.len();
    while picks.len() < changes + 10 {
        let t = (rng.uniform() * STEPS as f64) as usize % STEPS;
        let k = (rng.uniform() * nv as f64) as usize % nv;
        if !picks.contains(&(t, k)) {
            picks.push((t, k));
        }
    }
    let tau_scale = g.tau.iter().flat_map(|x| x.iter()).fold(0.0f64, |m, x| m.max(x.abs()));
    {
        let inputs: Vec<Input> = picks.iter().map(|&(t, k)| Input::Tau(t, k)).collect();
        let analytic: Vec<f64> = picks.iter().map(|&(t, k)| g.tau[t][k]).collect();
        let fdv: Vec<(f64, f64)> = inputs.iter().map(|i| checker.derivative(*i, fd.tau)).collect();
        let e = analytic.iter().zip(&fdv).fold(0.0f64, |m, (a, (b, _))| m.max((a - b).abs())) / tau_scale.max(floor);
        let est = fdv.iter().fold(0.0f64, |m, (_, x)| m.max(*x));
        let name = format!("tau[{}]", picks.len());
        lines.push(format!("  {name:<10} rel err {e:.1e} (Ridders estimate {est:.1e}, |max| {tau_scale:.2e})"));
        if e.is_nan() || e > TOL {
            failures
                .push(format!("{}: control entries {picks:?}: relative error {e:.2e}\n{analytic:?}\n{fdv:?}", s.name));
        }
        worst = worst.max(e);
    }
    {
        // Directional derivative of the whole control block; its scale is Σ |d_t|·|g_t|
        // (the sum before cancellation).
        let analytic: f64 = g.tau.iter().zip(&checker.direction).map(|(a, d)| a.dot(d)).sum();
        let scale: f64 = g.tau.iter().zip(&checker.direction).map(|(a, d)| a.abs().dot(&d.abs())).sum();
        let (fdv, est) = checker.derivative(Input::TauDirection, fd.tau);
        let e = (analytic - fdv).abs() / scale.max(floor);
        if scale < 100.0 * floor {
            failures.push(format!("{}: the control block is degenerate (scale {scale:.1e})", s.name));
        }
        lines.push(format!("  tau dir    rel err {e:.1e} (Ridders estimate {est:.1e}, value {analytic:.3e})"));
        if e.is_nan() || e > TOL {
            failures.push(format!("{}: control direction: {analytic} vs {fdv}, relative {e:.2e}", s.name));
        }
        worst = worst.max(e);
    }
    let breaks = checker.mode_breaks.borrow();
    if !breaks.is_empty() {
        failures.push(format!("{} finite-difference evaluations left the mode:\n{}", breaks.len(), breaks[0]));
    }
    let change_steps: Vec<usize> = picks[..changes].iter().map(|p| p.0).collect();
    let head =
        format!("{}: loss {:.4e}, mode changes at steps {change_steps:?}, worst {worst:.1e}", s.name, nominal.loss);
    if failures.is_empty() {
        Ok(format!("{head}\n{}", lines.join("\n")))
    } else {
        Err(format!("{head}\n{}\n{}", lines.join("\n"), failures.join("\n")))
    }
}

fn run(scene: Scene) {
    let start = std::time::Instant::now();
    let out = check_scene(&scene);
    let elapsed = start.elapsed().as_secs_f64();
    match out {
        Ok(report) => println!("{report}\n  ({elapsed:.1} s)"),
        Err(report) => panic!("{report}\n  ({elapsed:.1} s)"),
    }
}

#[test]
fn rollout_vjp_ball_bounce() {
    run(ball_bounce());
}

#[test]
fn rollout_vjp_ball_sliding() {
    run(ball_sliding());
}

#[test]
fn rollout_vjp_ball_landing() {
    run(ball_landing());
}

#[test]
fn rollout_vjp_box_sliding_frictionless() {
    run(box_sliding_frictionless());
}

#[test]
fn rollout_vjp_cartpole_limit() {
    run(cartpole_limit());
}

// ---------------------------------------------------------------------------------
// The loss-driven contact strategy (DiffDART §4.4)

fn loss_driven() -> BackwardOptions {
    BackwardOptions { contact_strategy: ContactGradientStrategy::LossDriven }
}

/// The paper's example: a ball resting on the ground (touching, at rest) with an
/// upward actuator force of half its weight on its vertical dof.
fn resting_ball() -> (Model, State, DVector<f64>) {
    let model = ball_model("ball_actuated", 0.5, 0.0);
    let q = pose_q(&model, Vec3::new(0.0, 0.0, BALL_R), Vec3::z(), 0.0);
    let mut tau = DVector::zeros(6);
    tau[5] = 0.5 * BALL_M * 9.81;
    (model, State { q, v: DVector::zeros(6) }, tau)
}

fn record_steps(model: &Model, state: &State, tau: &DVector<f64>, steps: usize) -> Vec<StepRecord> {
    let mut sim = Simulator::new(model.clone(), options()).unwrap();
    let mut x = state.clone();
    (0..steps)
        .map(|_| {
            let (next, rec) = sim.step_recorded(&x, &Control::torques(tau.clone())).unwrap();
            x = next;
            rec
        })
        .collect()
}

fn unit(n: usize, k: usize, s: f64) -> DVector<f64> {
    DVector::from_fn(n, |i, _| if i == k { s } else { 0.0 })
}

#[test]
fn loss_driven_strategy_ball_resting_on_ground() {
    let (model, state, tau) = resting_ball();
    let rec = record_steps(&model, &state, &tau, 1).pop().unwrap();
    let c = rec.constraints().expect("the ball touches the ground");
    assert_eq!(c.states[0], RowState::Clamping, "the contact should clamp: {:?}", c.states);
    let (_, v_next) = rec.outputs();
    assert!(v_next[5].abs() < 1e-12, "the ball should stay at rest, v⁺ = {v_next}");
    let h_over_m = DT / BALL_M;
    let zero = DVector::zeros(6);
    let mut ws = Workspace::new(&model);

    // Exact: the normal force cancels any change of the actuator force, ∂v_z⁺/∂τ_z = 0.
    let up = unit(6, 5, 1.0);
    let exact = rec.vjp(&zero, &up).unwrap();
    assert!(exact.tau[5].abs() < 1e-12 * h_over_m, "exact ∂v_z⁺/∂τ_z = {}", exact.tau[5]);
    // ... and the finite difference of the simulator agrees (the force stays below m g).
    let vz = |dtau: f64| {
        let mut sim = Simulator::new(model.clone(), options()).unwrap();
        let next = sim.step(&state, &Control::torques(&tau + unit(6, 5, dtau))).unwrap();
        next.v[5]
    };
    let fd = (vz(1e-3) - vz(-1e-3)) / 2e-3;
    assert!(fd.abs() < 1e-12, "finite difference of v_z⁺ in τ_z = {fd}");

    // Loss-driven, ℓ = −v_z⁺ (reward upward velocity): ∂ℓ/∂f_n = J M̃⁻¹ (−e_z) = −1/m < 0,
    // the contact is declared separating and ∂v_z⁺/∂τ_z = h/m, the free ball's.
    let (g, stats) = rec.vjp_with_options(&mut ws, &zero, &(-&up), &loss_driven()).unwrap();
    assert_eq!((stats.constrained_steps, stats.loss_driven_tried, stats.loss_driven_used), (1, 1, 1));
    assert!((-g.tau[5] - h_over_m).abs() < 1e-12 * h_over_m, "loss-driven ∂v_z⁺/∂τ_z = {} ≠ h/m", -g.tau[5]);
    assert!((g.v[5] + 1.0).abs() < 1e-12, "loss-driven ∂ℓ/∂v_z = {} ≠ −1", g.v[5]);

    // Loss-driven, ℓ = +v_z⁺ (reward downward velocity): ∂ℓ/∂f_n = 1/m > 0 keeps the
    // contact clamping, the recorded mode: the exact gradients, nothing recomputed.
    let (g, stats) = rec.vjp_with_options(&mut ws, &zero, &up, &loss_driven()).unwrap();
    assert_eq!((stats.constrained_steps, stats.loss_driven_tried, stats.loss_driven_used), (1, 0, 0));
    assert_eq!(g, exact);

    // The default options are the exact strategy.
    let (g, stats) = rec.vjp_with_options(&mut ws, &zero, &up, &BackwardOptions::default()).unwrap();
    assert_eq!(g, exact);
    assert_eq!((stats.loss_driven_tried, stats.loss_driven_used), (0, 0));
}

#[test]
fn loss_driven_strategy_over_a_tape() {
    // Ten steps of the resting ball, ℓ = −v_z at the end: the exact gradients of every
    // vertical force vanish (the saddle point of §4.4); the loss-driven ones are h/m each
    // (every step declared separating: the gradient flows back through v unchanged).
    let (model, state, tau) = resting_ball();
    let mut tape = Tape::new();
    for rec in record_steps(&model, &state, &tau, 10) {
        tape.push(rec).unwrap();
    }
    let mut grad_states = vec![(DVector::zeros(6), DVector::zeros(6)); 11];
    grad_states[10].1[5] = -1.0;
    let exact = tape.backward(&grad_states, &[]).unwrap();
    let (g, stats) = tape.backward_with(&grad_states, &[], &loss_driven()).unwrap();
    assert_eq!((stats.constrained_steps, stats.loss_driven_tried, stats.loss_driven_used), (10, 10, 10));
    let h_over_m = DT / BALL_M;
    for t in 0..10 {
        assert!(exact.tau[t][5].abs() < 1e-12 * h_over_m, "exact step {t}: {}", exact.tau[t][5]);
        assert!((g.tau[t][5] + h_over_m).abs() < 1e-10 * h_over_m, "loss-driven step {t}: {}", g.tau[t][5]);
    }
    assert!((g.v0[5] + 1.0).abs() < 1e-10, "loss-driven ∂ℓ/∂v_z0 = {}", g.v0[5]);
    let (_, default_stats) = tape.backward_with(&grad_states, &[], &BackwardOptions::default()).unwrap();
    assert_eq!((default_stats.constrained_steps, default_stats.loss_driven_used), (10, 0));
}

#[test]
fn loss_driven_strategy_keeps_the_larger_gradient() {
    // A ball falling towards the ground inside the contact margin, not closing the gap
    // within the step: the contact row separates. ℓ = +v_z⁺ (reward downward velocity)
    // gives ∂ℓ/∂f_n > 0, so the loss-driven classification clamps the contact — which
    // would cancel ∂v_z⁺/∂τ_z. Its gradients are smaller, so the exact ones are kept.
    let model = ball_model("ball_falling", 0.5, 0.0);
    let q = pose_q(&model, Vec3::new(0.0, 0.0, BALL_R + 3e-3), Vec3::z(), 0.0);
    let state = State { q, v: unit(6, 5, -0.5) };
    let rec = record_steps(&model, &state, &DVector::zeros(6), 1).pop().unwrap();
    let c = rec.constraints().expect("inside the margin");
    assert_eq!(c.states[0], RowState::Separating, "{:?}", c.states);
    let zero = DVector::zeros(6);
    let down = unit(6, 5, 1.0);
    let exact = rec.vjp(&zero, &down).unwrap();
    assert!((exact.tau[5] - DT / BALL_M).abs() < 1e-12 * DT / BALL_M, "free fall: ∂v_z⁺/∂τ_z = h/m");
    let (g, stats) = rec.vjp_with_options(&mut Workspace::new(&model), &zero, &down, &loss_driven()).unwrap();
    assert_eq!((stats.loss_driven_tried, stats.loss_driven_used), (1, 0));
    assert_eq!(g, exact);
}
