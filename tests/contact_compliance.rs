//! Compliant contacts (`ContactOptions::normal_compliance` and `friction_compliance`)
//! against closed forms. A row with compliance ρ between sides of subtree masses `m_A`,
//! `m_B` has the diagonal term `r = ρ (1/m_A + 1/m_B)`: `w = J v⁺ + β + r f`. At rest
//! under the velocity recovery (`β = erp φ/h` on a penetration) each contact holds
//! `erp φ/h + r f = 0`, so it settles `φ = −r f h/erp` deep; under the split recovery a
//! pressed contact closes at `r f` per step and the position stage lifts it back; a
//! sticking contact creeps at `r f_t`. Several contacts holding one body act in parallel.
//! Unequal masses throughout: a 2 kg ball, a 0.7 kg box, a 0.4 kg box on a 1.5 kg one.

#[path = "common/contact.rs"]
#[allow(dead_code)]
mod contact;

use contact::{free_bodies_at, free_body, free_box, ground, material};
use nalgebra::DVector;
use stiction::dynamics::{kinetic_energy, potential_energy, Data};
use stiction::math::{Inertia, Vec3};
use stiction::model::Geometry;
use stiction::step::{ContactSolver, PenetrationRecovery};
use stiction::{Control, Model, ModelBuilder, SimOptions, Simulator, State};

const H: f64 = 1e-3;
const RHO: f64 = 1e-3;
const BOX: Vec3 = Vec3::new(0.1, 0.08, 0.06);

fn g() -> f64 {
    9.81
}

/// Options: time step [`H`], the given solver and recovery, compliances `(ρ_n, ρ_t)`.
fn options(solver: ContactSolver, recovery: PenetrationRecovery, erp: f64, rho: (f64, f64)) -> SimOptions {
    let mut o = SimOptions { dt: H, ..Default::default() };
    o.contact.solver = solver;
    o.contact.penetration = recovery;
    o.contact.erp = erp;
    o.contact.normal_compliance = rho.0;
    o.contact.friction_compliance = rho.1;
    o
}

/// Free bodies at `centres`, unrotated, at rest.
fn at(model: &Model, centres: &[Vec3]) -> State {
    State { q: free_bodies_at(model, centres), v: DVector::zeros(model.nv()) }
}

fn run(sim: &mut Simulator, mut s: State, tau: &DVector<f64>, steps: usize, mut each: impl FnMut(&State)) -> State {
    for _ in 0..steps {
        s = sim.step(&s, &Control::torques(tau.clone())).unwrap();
        each(&s);
    }
    s
}

fn ball_model(mass: f64, r: f64) -> Model {
    let mut b = ModelBuilder::new("ball");
    ground(&mut b, material(0.5, 0.0), 0.0);
    free_body(&mut b, "ball", Geometry::Sphere { radius: r }, Inertia::solid_sphere(mass, r), material(0.5, 0.0));
    b.build().unwrap()
}

fn box_model(mass: f64, mu: f64) -> Model {
    let mut b = ModelBuilder::new("box");
    ground(&mut b, material(mu, 0.0), 0.0);
    free_box(&mut b, "box", BOX, mass, material(mu, 0.0));
    b.build().unwrap()
}

/// A 2 kg ball (one contact, `r = ρ/m`) and a 0.7 kg box (four corners in parallel)
/// resting under the velocity recovery (erp 0.5) settle `ρ g h²/erp` and `ρ g h²/(4 erp)`
/// deep, at rest; rigid, they do not penetrate.
#[test]
fn compliant_bodies_settle_at_the_closed_form_depth() {
    let erp = 0.5;
    for solver in [ContactSolver::BoxedLcp, ContactSolver::Ncp] {
        for (name, model, half_height, contacts) in
            [("ball", ball_model(2.0, 0.1), 0.1, 1.0), ("box", box_model(0.7, 0.5), BOX.z, 4.0)]
        {
            for rho in [RHO, 0.0] {
                let o = options(solver, PenetrationRecovery::Velocity, erp, (rho, 0.0));
                let mut sim = Simulator::new(model.clone(), o).unwrap();
                let s = run(&mut sim, at(&model, &[Vec3::new(0.0, 0.0, half_height)]), &DVector::zeros(6), 400, |_| {});
                let depth = half_height - s.q[2];
                let expected = rho * g() * H * H / (contacts * erp);
                assert!(
                    (depth - expected).abs() <= 1e-3 * expected + 1e-13,
                    "{solver:?} {name} ρ {rho}: depth {depth:e}, closed form {expected:e}"
                );
                assert!(s.v.amax() < 1e-9, "{solver:?} {name} ρ {rho}: not at rest {:?}", s.v.as_slice());
            }
        }
    }
}

/// A 0.4 kg ball on a 1.5 kg box on the ground (velocity recovery, erp 0.5), off the
/// box's centre: the ball's one contact has `r = ρ (1/0.4 + 1/1.5)` and carries its
/// weight; each of the box's four corners `r = ρ/1.5` and on average a quarter of both
/// weights (the off-centre load tilts the box, which the mean of the four depths does not
/// see). Depths read from the recorded contacts. The two closed forms differ by the
/// number of contacts: `ρ (1 + m_up/m_low) g h²/erp` for the ball, a quarter of it for
/// the corners.
#[test]
fn a_compliant_stack_of_unequal_masses_settles_at_each_pairs_closed_form() {
    let (m_up, m_low, r, erp) = (0.4, 1.5, 0.04, 0.5);
    let mut b = ModelBuilder::new("stack");
    ground(&mut b, material(0.6, 0.0), 0.0);
    free_box(&mut b, "low", BOX, m_low, material(0.6, 0.0));
    free_body(&mut b, "up", Geometry::Sphere { radius: r }, Inertia::solid_sphere(m_up, r), material(0.6, 0.0));
    let model = b.build().unwrap();
    for solver in [ContactSolver::BoxedLcp, ContactSolver::Ncp] {
        let o = options(solver, PenetrationRecovery::Velocity, erp, (RHO, 0.0));
        let mut sim = Simulator::new(model.clone(), o).unwrap();
        let start = at(&model, &[Vec3::new(0.0, 0.0, BOX.z), Vec3::new(0.01, -0.005, 2.0 * BOX.z + r)]);
        let s = run(&mut sim, start, &DVector::zeros(12), 600, |_| {});
        let (_, rec) = sim.step_recorded(&s, &Control::torques(DVector::zeros(12))).unwrap();
        let contacts = &rec.constraints().unwrap().contacts;
        assert_eq!(contacts.len(), 5, "{solver:?}: the ball's contact and four corners");
        // The box's corners: the pair with four contacts; the ball's: the other.
        let pair = |c: &stiction::collision::Contact| (c.id.shape_a, c.id.shape_b);
        let count = |p| contacts.iter().filter(|c| pair(c) == p).count();
        let depths = |n: usize| -> Vec<f64> {
            contacts.iter().filter(|c| count(pair(c)) == n).map(|c| -c.geometry.distance).collect()
        };
        let (corners, ball) = (depths(4), depths(1));
        assert_eq!((corners.len(), ball.len()), (4, 1), "{solver:?}");
        let low_depth = corners.iter().sum::<f64>() / 4.0;
        let low = RHO / m_low * (m_up + m_low) * g() * H / 4.0 * H / erp;
        let up = RHO * (1.0 / m_up + 1.0 / m_low) * m_up * g() * H * H / erp;
        assert!((low_depth - low).abs() <= 1e-3 * low, "{solver:?}: box corners {low_depth:e} vs {low:e}");
        assert!((ball[0] - up).abs() <= 1e-3 * up, "{solver:?}: ball {:e} vs {up:e}", ball[0]);
        let spread = corners.iter().fold(0.0f64, |a, d| a.max((d - low_depth).abs()));
        assert!(spread > 1e-3 * low, "{solver:?}: the off-centre load should tilt the box");
        // The box rests; the ball rolls down the box's tilt (~1e-9 rad) at most.
        assert!(s.v.rows(0, 6).amax() < 1e-9, "{solver:?}: the box moves {:?}", s.v.as_slice());
        assert!(s.v.rows(9, 3).amax() < 1e-7, "{solver:?}: the ball moves {:?}", s.v.as_slice());
    }
}

/// Under the split recovery (the default) a pressed compliant contact closes at
/// `r f = ρ g h` per step (the ball: one contact); the position stage lifts it back, so
/// the ball never sinks deeper than one step's closing plus the penetration tolerance.
#[test]
fn a_compliant_ball_under_the_split_recovery_closes_at_the_closed_form_speed() {
    let model = ball_model(2.0, 0.1);
    for solver in [ContactSolver::BoxedLcp, ContactSolver::Ncp] {
        let o = options(solver, PenetrationRecovery::Split, 1.0, (RHO, 0.0));
        let tolerance = o.contact.penetration_tolerance;
        let mut sim = Simulator::new(model.clone(), o).unwrap();
        let mut deepest: f64 = 0.0;
        let s = run(&mut sim, at(&model, &[Vec3::new(0.0, 0.0, 0.1)]), &DVector::zeros(6), 300, |s| {
            deepest = deepest.max(0.1 - s.q[2]);
        });
        let speed = RHO * g() * H;
        assert!((s.v[5] + speed).abs() <= 1e-6 * speed, "{solver:?}: v_z {:e}, closed form {:e}", s.v[5], -speed);
        assert!(deepest <= speed * H + tolerance + 1e-15, "{solver:?}: sank {deepest:e}");
        assert!(deepest >= 0.5 * speed * H, "{solver:?}: never sank ({deepest:e}): not compliant");
    }
}

/// A 0.7 kg box pushed by 2 N (below μ m g = 5.5 N) sticks on four corners and, with
/// friction compliance ρ_t, creeps at `ρ_t F h/(4 m)` (each corner `v = r f_t`, the four
/// in parallel); rigid, it does not move.
#[test]
fn a_compliant_sticking_box_creeps_at_the_closed_form_speed() {
    let (m, push) = (0.7, 2.0);
    let model = box_model(m, 0.8);
    let mut tau = DVector::zeros(6);
    tau[3] = push;
    for solver in [ContactSolver::BoxedLcp, ContactSolver::Ncp] {
        for rho in [RHO, 0.0] {
            let o = options(solver, PenetrationRecovery::Split, 1.0, (0.0, rho));
            let mut sim = Simulator::new(model.clone(), o).unwrap();
            let s = run(&mut sim, at(&model, &[Vec3::new(0.0, 0.0, BOX.z)]), &tau, 100, |_| {});
            let expected = rho * push * H / (4.0 * m);
            assert!(
                (s.v[3] - expected).abs() <= 1e-6 * expected + 1e-12,
                "{solver:?} ρ_t {rho}: v_x {:e}, closed form {expected:e}",
                s.v[3]
            );
            let others = [s.v[0], s.v[1], s.v[2], s.v[4], s.v[5]];
            assert!(others.iter().all(|x| x.abs() < 1e-9), "{solver:?}: {:?}", s.v.as_slice());
        }
    }
}

/// A 0.7 kg box sliding at 1 m/s (μ = 0.3, the NCP solver's isotropic cone) with both
/// compliances slows at μ g: the normal impulses still sum to `m g h` once the box
/// settles, and the friction stays opposite the slip.
#[test]
fn a_compliant_sliding_box_slows_at_mu_g() {
    let mu = 0.3;
    let model = box_model(0.7, mu);
    let o = options(ContactSolver::Ncp, PenetrationRecovery::Split, 1.0, (RHO, RHO));
    let mut sim = Simulator::new(model.clone(), o).unwrap();
    let mut s = at(&model, &[Vec3::new(0.0, 0.0, BOX.z)]);
    s.v[3] = 1.0;
    let steps = 200;
    let s = run(&mut sim, s, &DVector::zeros(6), steps, |_| {});
    let expected = 1.0 - mu * g() * H * steps as f64;
    assert!((s.v[3] - expected).abs() <= 1e-4 * (1.0 - expected), "v_x {} vs {expected}", s.v[3]);
    assert!(s.v[4].abs() < 1e-12 && s.v[2].abs() < 1e-9, "{:?}", s.v.as_slice());
}

/// Compliance gives no energy: a tilted, spinning 0.7 kg box dropped from 3 cm with both
/// compliances (both solvers, split recovery) never holds more energy than it started
/// with (to 1e-6 J: the position stage's lifts are of the size of one step's closing),
/// and comes to rest.
#[test]
fn compliant_contacts_create_no_energy() {
    let model = box_model(0.7, 0.5);
    let mut data = Data::new(&model);
    for solver in [ContactSolver::BoxedLcp, ContactSolver::Ncp] {
        let o = options(solver, PenetrationRecovery::Split, 1.0, (RHO, RHO));
        let mut sim = Simulator::new(model.clone(), o).unwrap();
        let mut s = at(&model, &[Vec3::new(0.0, 0.0, BOX.z + 0.03)]);
        let (half, axis) = (0.1f64, Vec3::new(1.0, 0.5, 0.0).normalize());
        s.q[3] = half.cos();
        s.q.rows_mut(4, 3).copy_from_slice((axis * half.sin()).as_slice());
        s.v[2] = 2.0;
        s.v[3] = 0.3;
        let mut energy = |s: &State| {
            kinetic_energy(&model, &mut data, s.q.as_slice(), s.v.as_slice()).unwrap()
                + potential_energy(&model, &mut data, s.q.as_slice()).unwrap()
        };
        let e0 = energy(&s);
        let mut most = f64::NEG_INFINITY;
        let s = run(&mut sim, s, &DVector::zeros(6), 1500, |s| most = most.max(energy(s)));
        assert!(most <= e0 + 1e-6, "{solver:?}: energy rose from {e0} to {most}");
        let ke = kinetic_energy(&model, &mut data, s.q.as_slice(), s.v.as_slice()).unwrap();
        assert!(ke < 1e-9, "{solver:?}: still moving, kinetic energy {ke:e}");
    }
}
