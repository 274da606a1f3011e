//! System identification (issue 8): Levenberg–Marquardt on forward sensitivities through
//! the step Jacobians (`stiction::optim::sysid`).
//!
//! * a box sliding on the ground under a varying push: hidden mass and friction within 1 %
//!   from noise-free positions and within 5 % with 1 mm position noise;
//! * a 7-DoF arm (constraint stage off): the seven link masses within 2 % from noise-free
//!   joint trajectories;
//! * analytic residual Jacobian against finite differences of the residuals;
//! * the reported standard deviations against the spread of estimates over noise seeds, and
//!   shrinking with more data;
//! * bad input is a typed error;
//! * a fit on residuals evaluated over slices of the trajectories (`sysid_with`, what a
//!   distributed fit does) equals the fit on the whole problem bit for bit.

use nalgebra::DVector;
use stiction::math::{Inertia, SplitMix64, Vec3, SE3};
use stiction::model::{samples, Body, CollisionShape, Geometry, Material, WORLD};
use stiction::optim::{
    sysid, sysid_with, Evaluation, JacobianSource, Observation, ParamBounds, Sigma, SysIdEvaluator, SysIdOptions,
    SysIdProblem, SysIdStop, Trajectory,
};
use stiction::step::ContactOptions;
use stiction::{Control, Error, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

const BOX_DT: f64 = 2e-3;
const BOX_STEPS: usize = 400;
/// Half extents of the box.
const H: [f64; 3] = [0.1, 0.08, 0.06];

/// A 1 kg box (free joint) on the ground plane; box friction 0.4, world friction 0.2 (a
/// contact uses the mean, 0.3).
fn box_model() -> Model {
    let h = Vec3::new(H[0], H[1], H[2]);
    let mut b = ModelBuilder::new("sliding_box");
    b.add_link(
        Body::massless(WORLD).with_collision(
            CollisionShape::new(Geometry::Plane, SE3::identity()).with_material(Material::new(0.2, 0.0)),
        ),
    );
    b.add_body(
        WORLD,
        Joint::free("box_free"),
        Body::new("box", Inertia::solid_box(1.0, h * 2.0)).with_collision(
            CollisionShape::new(Geometry::Box { half_extents: h }, SE3::identity())
                .with_material(Material::new(0.4, 0.0)),
        ),
    );
    b.build().unwrap()
}

fn box_options() -> SimOptions {
    SimOptions { dt: BOX_DT, ..Default::default() }
}

/// Sliding along +x at `speed`, pushed by `f(t) = mean + amp·sin(2πt/period)` N along x
/// (through the COM): the acceleration `f/m − μg` varies, so mass and friction separate.
fn box_experiment(speed: f64, mean: f64, amp: f64, period: f64) -> (State, Vec<DVector<f64>>) {
    let model = box_model();
    let mut q = model.neutral();
    q[2] = H[2] - 1e-4;
    let mut v = DVector::zeros(6);
    v[3] = speed;
    let controls = (0..BOX_STEPS)
        .map(|t| {
            let mut u = DVector::zeros(6);
            u[3] = mean + amp * (std::f64::consts::TAU * t as f64 * BOX_DT / period).sin();
            u
        })
        .collect();
    (State { q, v }, controls)
}

fn rollout(model: &Model, options: &SimOptions, x0: &State, controls: &[DVector<f64>]) -> Vec<State> {
    let mut sim = Simulator::new(model.clone(), options.clone()).unwrap();
    let mut states = vec![x0.clone()];
    for u in controls {
        let next = sim.step(states.last().unwrap(), &Control::torques(u.clone())).unwrap();
        states.push(next);
    }
    states
}

/// Observed box trajectories: positions every `every` steps (the orientation unobserved),
/// σ = 1 mm, with `noise` metres of Gaussian noise on x, y, z (seeded).
fn box_data(experiments: &[(f64, f64, f64, f64)], every: usize, noise: f64, seed: u64) -> Vec<Trajectory> {
    let model = box_model();
    let mut rng = SplitMix64::new(seed);
    experiments
        .iter()
        .map(|&(speed, mean, amp, period)| {
            let (x0, controls) = box_experiment(speed, mean, amp, period);
            let states = rollout(&model, &box_options(), &x0, &controls);
            let mut tr = Trajectory::from_states(&x0, controls, &states, every, 1e-3, None);
            for o in &mut tr.observed {
                // Only the position is observed (the tangent channels 3..6 of the free joint,
                // the translation in the observed body frame); the orientation is not.
                let inf = f64::INFINITY;
                o.sigma_q = Sigma::PerChannel(DVector::from_column_slice(&[inf, inf, inf, 1e-3, 1e-3, 1e-3]));
                let q = o.q.as_mut().unwrap();
                for k in 0..3 {
                    q[k] += noise * rng.normal();
                }
            }
            tr
        })
        .collect()
}

const BOX_PARAMS: [&str; 2] = ["mass:box", "friction:box"];
const BOX_TRUE: [f64; 2] = [1.0, 0.4];
const ONE_PUSH: [(f64, f64, f64, f64); 1] = [(1.0, 3.0, 2.0, 0.4)];

fn box_problem(data: Vec<Trajectory>) -> SysIdProblem {
    SysIdProblem::from_names(box_model(), box_options(), &BOX_PARAMS, data).unwrap()
}

fn box_fit(data: Vec<Trajectory>, source: JacobianSource) -> stiction::optim::SysIdReport {
    let problem = box_problem(data);
    let guess = DVector::from_column_slice(&[1.4, 0.26]); // +40 %, −35 %
    let options = SysIdOptions { jacobians: source, ..Default::default() };
    problem.fit(&guess, &options, None).unwrap()
}

fn rel_errors(theta: &DVector<f64>, truth: &[f64]) -> Vec<f64> {
    truth.iter().enumerate().map(|(i, t)| (theta[i] - t).abs() / t.abs()).collect()
}

#[test]
fn sliding_box_mass_and_friction_noise_free() {
    // The box keeps sliding along +x for the whole experiment at the true and the guessed θ.
    let (x0, controls) = box_experiment(ONE_PUSH[0].0, ONE_PUSH[0].1, ONE_PUSH[0].2, ONE_PUSH[0].3);
    let states = rollout(&box_model(), &box_options(), &x0, &controls);
    let min_speed = states.iter().map(|s| s.v[3]).fold(f64::INFINITY, f64::min);
    assert!(min_speed > 0.3, "the box must keep sliding (min speed {min_speed})");
    for source in [JacobianSource::Analytic, JacobianSource::FiniteDifference] {
        let report = box_fit(box_data(&ONE_PUSH, 5, 0.0, 0), source);
        eprintln!("{report}");
        let err = rel_errors(&report.theta, &BOX_TRUE);
        assert!(report.converged, "{source:?}: {:?}", report.stop);
        assert!(err.iter().all(|&e| e < 1e-2), "{source:?}: relative errors {err:?}");
        // Noise-free data: the fit is exact to solver precision, far inside 1 %.
        assert!(err.iter().all(|&e| e < 1e-6), "{source:?}: relative errors {err:?}");
        assert!(report.cost < 1e-8 * report.initial_cost, "{source:?}: cost {}", report.cost);
        assert_eq!(report.rank, 2);
        assert!(report.std_dev.iter().all(|s| s.is_finite()));
        assert!(report.cost_history.windows(2).all(|w| w[1] < w[0]), "cost must decrease");
    }
}

#[test]
fn sliding_box_mass_and_friction_with_position_noise() {
    let report = box_fit(box_data(&ONE_PUSH, 5, 1e-3, 7), JacobianSource::Analytic);
    eprintln!("{report}");
    let err = rel_errors(&report.theta, &BOX_TRUE);
    assert!(report.converged, "{:?}", report.stop);
    assert!(err.iter().all(|&e| e < 5e-2), "relative errors {err:?}");
    // Three channels (x, y, z) are observed, their residual RMS is the injected noise (1 mm),
    // and the residual variance is near 1 in units of σ.
    assert_eq!(report.channels.len(), 3);
    for c in &report.channels {
        assert!(c.rms > 0.8e-3 && c.rms < 1.2e-3, "{}: {}", c.name, c.rms);
    }
    assert!(report.residual_variance > 0.7 && report.residual_variance < 1.3, "{}", report.residual_variance);
}

/// Reported standard deviations against the spread of the estimates over noise seeds (a
/// loose check: 8 seeds estimate a standard deviation to about ±25 %), and shrinking with
/// more data (two experiments observed at every step against one observed every 5th).
#[test]
fn sliding_box_uncertainty_matches_spread_and_shrinks_with_data() {
    let seeds = 8;
    let mut estimates = vec![];
    let mut reported = DVector::zeros(2);
    for seed in 0..seeds {
        let r = box_fit(box_data(&ONE_PUSH, 5, 1e-3, 100 + seed), JacobianSource::Analytic);
        assert!(r.converged);
        reported += &r.std_dev / seeds as f64;
        estimates.push(r.theta.clone());
    }
    for i in 0..2 {
        let mean = estimates.iter().map(|e| e[i]).sum::<f64>() / seeds as f64;
        let spread = (estimates.iter().map(|e| (e[i] - mean).powi(2)).sum::<f64>() / (seeds - 1) as f64).sqrt();
        let ratio = spread / reported[i];
        eprintln!(
            "{}: mean {mean:.6}, empirical std {spread:.3e}, reported std {:.3e}, ratio {ratio:.2}",
            BOX_PARAMS[i], reported[i]
        );
        assert!(ratio > 0.4 && ratio < 2.5, "{}: empirical/reported = {ratio}", BOX_PARAMS[i]);
    }
    let more = box_fit(box_data(&[ONE_PUSH[0], (0.8, 4.0, 1.5, 0.3)], 1, 1e-3, 200), JacobianSource::Analytic);
    eprintln!("{more}");
    for i in 0..2 {
        assert!(more.std_dev[i] < 0.5 * reported[i], "{}: {} vs {}", BOX_PARAMS[i], more.std_dev[i], reported[i]);
    }
}

/// The arm of `samples::arm7` without its constraint stage, excited by sums of sines.
fn arm_setup() -> (Model, SimOptions, Vec<Trajectory>) {
    let model = samples::arm7();
    let options =
        SimOptions { dt: 2e-3, contact: ContactOptions { enabled: false, ..Default::default() }, ..Default::default() };
    let amp = [12.0, 12.0, 6.0, 6.0, 2.0, 2.0, 1.0];
    let steps = 500;
    let data = (0..3)
        .map(|k| {
            let mut rng = SplitMix64::new(300 + k);
            let q = model.random_configuration(300 + k) * 0.5;
            let x0 = State { q, v: DVector::zeros(7) };
            let phase: Vec<f64> = (0..21).map(|_| rng.range(0.0, std::f64::consts::TAU)).collect();
            let controls: Vec<DVector<f64>> = (0..steps)
                .map(|t| {
                    let s = t as f64 * options.dt;
                    DVector::from_fn(7, |i, _| {
                        amp[i]
                            * [1.3, 2.9, 4.7]
                                .iter()
                                .enumerate()
                                .map(|(m, w)| (std::f64::consts::TAU * w * s + phase[3 * i + m]).sin())
                                .sum::<f64>()
                            / 3.0
                    })
                })
                .collect();
            let states = rollout(&model, &options, &x0, &controls);
            Trajectory::from_states(&x0, controls, &states, 5, 1e-3, None)
        })
        .collect();
    (model, options, data)
}

const ARM_MASSES: [&str; 7] =
    ["mass:link1", "mass:link2", "mass:link3", "mass:link4", "mass:link5", "mass:link6", "mass:link7"];

#[test]
fn arm_link_masses_noise_free() {
    let (model, options, data) = arm_setup();
    let problem = SysIdProblem::from_names(model, options, &ARM_MASSES, data).unwrap();
    let truth = problem.initial_values();
    let guess = DVector::from_fn(7, |i, _| truth[i] * if i % 2 == 0 { 1.3 } else { 0.7 });
    let report = problem.fit(&guess, &SysIdOptions::default(), None).unwrap();
    eprintln!("{report}");
    assert!(report.converged, "{:?}", report.stop);
    let err = rel_errors(&report.theta, truth.as_slice());
    assert!(err.iter().all(|&e| e < 2e-2), "relative errors {err:?}");
    assert_eq!(report.rank, 7);
}

#[test]
fn analytic_residual_jacobian_matches_finite_differences() {
    // Box: generic θ (mass, both friction coefficients — only their mean enters: rank 2).
    let data = box_data(&ONE_PUSH, 10, 1e-3, 3);
    let problem =
        SysIdProblem::from_names(box_model(), box_options(), &["mass:box", "friction:box", "friction:world"], data)
            .unwrap();
    let theta = DVector::from_column_slice(&[1.17, 0.37, 0.23]);
    // Arm: masses, a COM, damping and a link length.
    let (model, options, data) = arm_setup();
    let names = ["mass:link2", "mass:link6", "com:link4", "damping:joint3", "placement:joint5"];
    let arm = SysIdProblem::from_names(model, options, &names, data).unwrap();
    let mut arm_theta = arm.initial_values();
    arm_theta[0] *= 1.1;
    arm_theta[1] *= 0.9;
    arm_theta[5] = 0.08;
    for (label, problem, theta) in [("box", &problem, theta), ("arm", &arm, arm_theta)] {
        let (ra, ja) = problem.residuals_and_jacobian(&theta, JacobianSource::Analytic, 1e-6).unwrap();
        let (rf, jf) = problem.residuals_and_jacobian(&theta, JacobianSource::FiniteDifference, 1e-6).unwrap();
        assert_eq!(ra, rf);
        assert_eq!(ra, problem.residuals(&theta).unwrap());
        for j in 0..theta.len() {
            let scale = jf.column(j).amax();
            assert!(scale > 0.0, "{label}: column {j} is zero");
            let err = (ja.column(j) - jf.column(j)).amax() / scale;
            eprintln!("{label}: column {} ({}) relative error {err:.2e}", j, problem.names()[j]);
            assert!(err < 1e-6, "{label}: column {} relative error {err:e}", problem.names()[j]);
        }
    }
}

/// Mass and only one friction coefficient… but the world's and the box's coefficients enter
/// only through their mean: fitting both reports a rank-deficient normal matrix, an
/// unidentifiable direction along (1, −1) and infinite standard deviations, never NaN.
#[test]
fn rank_deficiency_is_reported() {
    let data = box_data(&ONE_PUSH, 10, 1e-3, 3);
    let problem =
        SysIdProblem::from_names(box_model(), box_options(), &["mass:box", "friction:box", "friction:world"], data)
            .unwrap();
    let guess = DVector::from_column_slice(&[1.3, 0.3, 0.25]);
    let report = problem.fit(&guess, &SysIdOptions::default(), None).unwrap();
    eprintln!("{report}");
    assert_eq!(report.rank, 2);
    assert_eq!(report.unidentifiable.len(), 1);
    let d = &report.unidentifiable[0];
    assert!((d[1] + d[2]).abs() < 1e-3 && d[0].abs() < 1e-3, "direction {d}");
    assert!(report.std_dev[1].is_infinite() && report.std_dev[2].is_infinite() && report.std_dev[0].is_finite());
    assert!(report.covariance.iter().all(|x| x.is_finite()) && report.correlation.iter().all(|x| x.is_finite()));
    assert!((report.theta[0] - 1.0).abs() < 0.05);
    assert!((0.5 * (report.theta[1] + report.theta[2]) - 0.3).abs() < 0.015);
}

#[test]
fn bounds_hold_and_progress_is_reported() {
    // A lower bound above the true mass: the fit ends on the bound, reported as such.
    let problem = box_problem(box_data(&ONE_PUSH, 5, 0.0, 0));
    let bounds = ParamBounds::new(DVector::from_column_slice(&[1.1, 0.0]), DVector::from_column_slice(&[2.0, 1.0]));
    let options = SysIdOptions { bounds: Some(bounds), ..Default::default() };
    let mut seen = 0;
    let report = problem
        .fit(
            &DVector::from_column_slice(&[1.4, 0.26]),
            &options,
            Some(&mut |p: &stiction::optim::SysIdProgress| {
                assert!(p.cost.is_finite());
                seen = p.iteration;
            }),
        )
        .unwrap();
    eprintln!("{report}");
    assert_eq!(report.theta[0], 1.1);
    assert!(report.at_bound[0] && !report.at_bound[1]);
    assert_eq!(seen, report.iterations);
    assert!(report.theta.iter().all(|x| x.is_finite()));
}

#[test]
fn bad_input_is_a_typed_error() {
    let data = box_data(&ONE_PUSH, 50, 0.0, 0);
    let model = box_model();
    let make = |data: Vec<Trajectory>| SysIdProblem::from_names(model.clone(), box_options(), &BOX_PARAMS, data);
    assert!(make(data.clone()).is_ok());
    // Unknown parameter names.
    let e = SysIdProblem::from_names(model.clone(), box_options(), &["mass:nope"], data.clone()).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    let e = SysIdProblem::from_names(model.clone(), box_options(), &["weight:box"], data.clone()).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    // No data, no controls.
    assert!(matches!(make(vec![]).unwrap_err(), Error::InvalidInput(_)));
    let mut d = data.clone();
    d[0].controls.clear();
    assert!(matches!(make(d).unwrap_err(), Error::InvalidInput(_)));
    // Sizes.
    let mut d = data.clone();
    d[0].q0 = DVector::zeros(6);
    assert!(matches!(make(d).unwrap_err(), Error::Dimension { what: "trajectory.q0", .. }));
    let mut d = data.clone();
    d[0].controls[3] = DVector::zeros(5);
    assert!(matches!(make(d).unwrap_err(), Error::Dimension { .. }));
    let mut d = data.clone();
    d[0].observed[0].v = Some(DVector::zeros(3));
    assert!(matches!(make(d).unwrap_err(), Error::Dimension { what: "observation.v", .. }));
    let mut d = data.clone();
    d[0].observed[0].sigma_q = Sigma::PerChannel(DVector::from_element(4, 1.0));
    assert!(matches!(make(d).unwrap_err(), Error::Dimension { .. }));
    // NaN.
    let mut d = data.clone();
    d[0].observed[1].q.as_mut().unwrap()[0] = f64::NAN;
    assert!(matches!(make(d).unwrap_err(), Error::NonFinite { what: "observation.q", .. }));
    let mut d = data.clone();
    d[0].v0[2] = f64::INFINITY;
    assert!(matches!(make(d).unwrap_err(), Error::NonFinite { .. }));
    // Observation beyond the last state, non-positive σ, nothing observed.
    let mut d = data.clone();
    let q0 = d[0].q0.clone();
    d[0].observed.push(Observation::position(BOX_STEPS + 1, q0, 1e-3));
    assert!(matches!(make(d).unwrap_err(), Error::InvalidInput(_)));
    let mut d = data.clone();
    d[0].observed[0].sigma_q = Sigma::Scalar(0.0);
    assert!(matches!(make(d).unwrap_err(), Error::InvalidInput(_)));
    let mut d = data.clone();
    for o in &mut d[0].observed {
        o.sigma_q = Sigma::Scalar(f64::INFINITY);
    }
    assert!(matches!(make(d).unwrap_err(), Error::InvalidInput(_)));
    let mut d = data.clone();
    d[0].observed[0].q = None;
    assert!(matches!(make(d).unwrap_err(), Error::InvalidInput(_)));
    // θ, bounds and options.
    let problem = make(data).unwrap();
    let theta = DVector::from_column_slice(&[1.0, 0.4]);
    let e = problem.fit(&DVector::zeros(3), &SysIdOptions::default(), None).unwrap_err();
    assert!(matches!(e, Error::Dimension { what: "theta", .. }));
    let e = problem.fit(&DVector::from_column_slice(&[f64::NAN, 0.4]), &SysIdOptions::default(), None).unwrap_err();
    assert!(matches!(e, Error::NonFinite { .. }));
    let crossing = ParamBounds::new(DVector::from_column_slice(&[2.0, 0.0]), DVector::from_column_slice(&[1.0, 1.0]));
    let e = problem.fit(&theta, &SysIdOptions { bounds: Some(crossing), ..Default::default() }, None).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    let short = ParamBounds::unbounded(1);
    let e = problem.fit(&theta, &SysIdOptions { bounds: Some(short), ..Default::default() }, None).unwrap_err();
    assert!(matches!(e, Error::Dimension { .. }));
    for bad in [
        SysIdOptions { max_iterations: 0, ..Default::default() },
        SysIdOptions { fd_step: 0.0, ..Default::default() },
        SysIdOptions { damping_init: f64::NAN, ..Default::default() },
        SysIdOptions { rank_tolerance: 1.0, ..Default::default() },
    ] {
        assert!(matches!(problem.fit(&theta, &bad, None).unwrap_err(), Error::InvalidInput(_)));
    }
    // Gravity in θ while the options override it.
    let opts = SimOptions { gravity: Some(Vec3::new(0.0, 0.0, -9.81)), ..box_options() };
    let e = SysIdProblem::from_names(model, opts, &["gravity"], box_data(&ONE_PUSH, 50, 0.0, 0)).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)));
    // A fit that starts at the truth stops at once.
    let r = problem.fit(&theta, &SysIdOptions::default(), None).unwrap();
    assert!(r.converged && r.iterations <= 1, "{:?} after {}", r.stop, r.iterations);
    assert!(matches!(r.stop, SysIdStop::GradientTolerance | SysIdStop::StepTolerance | SysIdStop::CostTolerance));
}

/// Residuals of a problem's trajectories evaluated slice by slice, each slice its own problem.
struct Slices {
    parts: Vec<SysIdProblem>,
    source: JacobianSource,
    bounds: ParamBounds,
    calls: usize,
}

impl SysIdEvaluator for Slices {
    fn evaluate(&mut self, theta: &DVector<f64>, jacobian: bool, trial: bool) -> stiction::Result<Option<Evaluation>> {
        self.calls += 1;
        let mut rows = vec![];
        let mut jacs = vec![];
        let mut steps = 0;
        for p in &self.parts {
            let e = match p.evaluate(theta, jacobian, self.source, 1e-6, &self.bounds) {
                Ok(e) => e,
                Err(_) if trial => return Ok(None),
                Err(e) => return Err(e),
            };
            rows.extend_from_slice(e.residuals.as_slice());
            jacs.extend(e.jacobian);
            steps += e.simulator_steps;
        }
        let jacobian = jacobian.then(|| {
            let p = theta.len();
            let n = rows.len();
            let mut j = nalgebra::DMatrix::zeros(n, p);
            let mut at = 0;
            for part in &jacs {
                j.view_mut((at, 0), (part.nrows(), p)).copy_from(part);
                at += part.nrows();
            }
            j
        });
        Ok(Some(Evaluation { residuals: DVector::from_vec(rows), jacobian, simulator_steps: steps }))
    }
}

#[test]
fn a_fit_over_slices_of_the_trajectories_equals_the_whole_fit() {
    let pushes = [(1.0, 3.0, 2.0, 0.4), (0.8, 2.0, 1.0, 0.3), (1.2, 4.0, 2.5, 0.5)];
    let data = box_data(&pushes, 10, 1e-3, 3);
    let guess = DVector::from_column_slice(&[1.4, 0.26]);
    for source in [JacobianSource::Analytic, JacobianSource::FiniteDifference] {
        let options = SysIdOptions { jacobians: source, max_iterations: 6, ..Default::default() };
        let whole = box_problem(data.clone());
        let local = sysid(&whole, &guess, &options, None).unwrap();
        let mut slices = Slices {
            parts: vec![box_problem(data[..1].to_vec()), box_problem(data[1..].to_vec())],
            source,
            bounds: ParamBounds::physical(whole.spec()),
            calls: 0,
        };
        let split = sysid_with(&whole, &guess, &options, None, &mut slices).unwrap();
        assert!(slices.calls > 1);
        assert_eq!(split.theta, local.theta, "{source:?}");
        assert_eq!(split.cost_history, local.cost_history, "{source:?}");
        assert_eq!(split.covariance, local.covariance, "{source:?}");
        assert_eq!(
            (split.iterations, split.stop, split.simulator_steps),
            (local.iterations, local.stop, local.simulator_steps)
        );
    }
    // An evaluator with the wrong number of rows is an error, not a panic.
    struct Short;
    impl SysIdEvaluator for Short {
        fn evaluate(&mut self, _: &DVector<f64>, _: bool, _: bool) -> stiction::Result<Option<Evaluation>> {
            Ok(Some(Evaluation { residuals: DVector::zeros(3), jacobian: None, simulator_steps: 0 }))
        }
    }
    let whole = box_problem(data);
    let err = sysid_with(&whole, &guess, &SysIdOptions::default(), None, &mut Short).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
}
