//! The non-smooth Newton contact solver (issue #20; Macklin et al. 2019 §6) on closed-form
//! cases, for both NCP functions and both linear solvers: the paper's 1-D slider (Fig. 6,
//! |λ_f| = μ λ_n against the motion), isotropy (a particle pushed at 36 angles slides
//! exactly along its velocity: no pyramid facets), a box that sticks (no slip, forces in
//! the cone, weight carried) and one that slides (μ m g against the motion), with the
//! complementarity conditions at convergence; and its errors.

use nalgebra::{DMatrix, DVector, Vector3};
use stiction::solver::ncp::{solve_ncp, LinearSolve, NcpFunction, NcpOptions, NcpProblem, NcpSolution};

const G: f64 = 10.0;
const H: f64 = 0.01;

fn variants() -> Vec<NcpOptions> {
    let mut out = vec![];
    for function in [NcpFunction::MinMap, NcpFunction::FischerBurmeister] {
        for linear in [LinearSolve::Direct, LinearSolve::ConjugateResidual(60)] {
            out.push(NcpOptions { function, linear, ..Default::default() });
        }
    }
    out
}

/// A particle of mass `m` resting on the ground (gap 0) with horizontal velocity `u`.
fn particle(m: f64, u: [f64; 2], mu: f64) -> NcpProblem {
    NcpProblem {
        mass: DMatrix::identity(3, 3) * m,
        free_velocity: DVector::from_vec(vec![u[0], u[1], -G * H]),
        normals: DMatrix::from_row_slice(1, 3, &[0.0, 0.0, 1.0]),
        tangents: DMatrix::from_row_slice(2, 3, &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0]),
        gaps: vec![0.0],
        friction: vec![mu],
        h: H,
    }
}

fn solve(p: &NcpProblem, o: &NcpOptions) -> NcpSolution {
    let s = solve_ncp(p, o, None).unwrap();
    assert!(s.converged, "{o:?}: residual {:e} after {} iterations", s.residual, s.iterations);
    s
}

/// Complementarity at the solution: λ_n ≥ 0, the gap after the step ≥ 0, one of them 0,
/// and each contact's friction force in its cone.
fn assert_complementarity(p: &NcpProblem, s: &NcpSolution, what: &str) {
    let gap = DVector::from_column_slice(&p.gaps) + &p.normals * &s.velocity * p.h;
    for i in 0..p.gaps.len() {
        let (l, g) = (s.normal_forces[i], gap[i]);
        assert!(l >= -1e-8 && g >= -1e-10 && (l * g).abs() < 1e-8, "{what}, contact {i}: λ_n {l:e}, gap {g:e}");
        let f = s.friction_forces[2 * i].hypot(s.friction_forces[2 * i + 1]);
        assert!(f <= p.friction[i] * l * (1.0 + 1e-7) + 1e-9, "{what}, contact {i}: |λ_f| {f} > μ λ_n");
    }
}

#[test]
fn the_slider_feels_mu_lambda_n_against_its_motion() {
    for o in variants() {
        let p = particle(1.0, [0.5, 0.0], 0.5);
        let s = solve(&p, &o);
        assert!((s.normal_forces[0] - 10.0).abs() < 1e-7, "{o:?}: λ_n {}", s.normal_forces[0]);
        assert!((s.friction_forces[0] + 5.0).abs() < 1e-7, "{o:?}: λ_f {}", s.friction_forces[0]);
        assert!(s.friction_forces[1].abs() < 1e-9);
        assert!((s.velocity[0] - (0.5 - H * 5.0)).abs() < 1e-9 && s.velocity[2].abs() < 1e-9);
        assert_complementarity(&p, &s, "slider");
        eprintln!("slider {:?} {:?}: {} Newton iterations", o.function, o.linear, s.iterations);
    }
}

#[test]
fn friction_is_isotropic_a_particle_slides_along_its_velocity_at_every_angle() {
    let o = NcpOptions::default();
    let mut worst: f64 = 0.0;
    for k in 0..36 {
        let t = std::f64::consts::TAU * k as f64 / 36.0;
        let u = [0.5 * t.cos(), 0.5 * t.sin()];
        let s = solve(&particle(1.0, u, 0.5), &o);
        let f = [s.friction_forces[0], s.friction_forces[1]];
        // The force is anti-parallel to the slip, with magnitude μ λ_n.
        let angle = (f[0] * u[1] - f[1] * u[0]).atan2(-(f[0] * u[0] + f[1] * u[1]));
        worst = worst.max(angle.abs());
        assert!((f[0].hypot(f[1]) - 5.0).abs() < 1e-7, "angle {k}: |λ_f| {}", f[0].hypot(f[1]));
    }
    assert!(worst < 1e-6, "largest angle between friction and slip {worst:e} rad");
}

/// A 2 kg box (half extents 0.2 × 0.1 × 0.05 m) resting on its four bottom corners, with
/// velocity `[ω; v]` about its centre (world axes) and free velocity `v_free`.
fn box_on_ground(v_free: [f64; 6], mu: f64) -> NcpProblem {
    let (m, e) = (2.0, Vector3::new(0.2, 0.1, 0.05));
    let i = Vector3::new(e.y * e.y + e.z * e.z, e.x * e.x + e.z * e.z, e.x * e.x + e.y * e.y) * (m / 3.0);
    let mass = DMatrix::from_diagonal(&DVector::from_vec(vec![i.x, i.y, i.z, m, m, m]));
    let corners = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)];
    let row = |p: Vector3<f64>, d: Vector3<f64>| {
        let a = p.cross(&d);
        [a.x, a.y, a.z, d.x, d.y, d.z]
    };
    let (mut normals, mut tangents) = (vec![], vec![]);
    for (sx, sy) in corners {
        let p = Vector3::new(sx * e.x, sy * e.y, -e.z);
        normals.extend(row(p, Vector3::z()));
        tangents.extend(row(p, Vector3::x()));
        tangents.extend(row(p, Vector3::y()));
    }
    NcpProblem {
        mass,
        free_velocity: DVector::from_row_slice(&v_free),
        normals: DMatrix::from_row_slice(4, 6, &normals),
        tangents: DMatrix::from_row_slice(8, 6, &tangents),
        gaps: vec![0.0; 4],
        friction: vec![mu; 4],
        h: H,
    }
}

#[test]
fn a_gently_pushed_box_sticks_and_a_fast_one_slides() {
    for o in variants() {
        // Sticks: stopping it takes 0.02 N·s of the 0.1 N·s the cone allows this step.
        let p = box_on_ground([0.0, 0.0, 0.0, 0.01, 0.0, -G * H], 0.5);
        let s = solve(&p, &o);
        let slip = &p.tangents * &s.velocity;
        assert!(slip.amax() < 1e-8, "{o:?}: sticking slip {:e}", slip.amax());
        assert!((s.normal_forces.sum() - 2.0 * G).abs() < 1e-6, "{o:?}: weight {}", s.normal_forces.sum());
        let fx: f64 = (0..4).map(|i| s.friction_forces[2 * i]).sum();
        assert!((fx + 2.0 * 0.01 / H).abs() < 1e-6, "{o:?}: friction {fx}");
        assert_complementarity(&p, &s, "sticking box");
        // Slides: 2 m/s loses μ g h.
        let p = box_on_ground([0.0, 0.0, 0.0, 2.0, 0.0, -G * H], 0.5);
        let s = solve(&p, &o);
        assert!((s.velocity[3] - (2.0 - 0.5 * G * H)).abs() < 1e-7, "{o:?}: sliding velocity {}", s.velocity[3]);
        let fx: f64 = (0..4).map(|i| s.friction_forces[2 * i]).sum();
        assert!((fx + 0.5 * 2.0 * G).abs() < 1e-6, "{o:?}: sliding friction {fx}");
        assert!(s.velocity.rows(0, 3).amax() < 1e-6, "{o:?}: the box turns: {}", s.velocity.rows(0, 3));
        assert_complementarity(&p, &s, "sliding box");
        eprintln!("sliding box {:?} {:?}: {} Newton iterations", o.function, o.linear, s.iterations);
    }
}

#[test]
fn a_box_in_the_air_feels_nothing_and_a_penetrating_one_is_pushed_out() {
    let o = NcpOptions::default();
    let mut p = box_on_ground([0.0, 0.0, 0.0, 0.3, 0.0, -G * H], 0.5);
    p.gaps = vec![0.01; 4]; // 1 cm up: the step of −0.1 m/s closes 1 mm of it
    let s = solve(&p, &o);
    assert!(s.normal_forces.amax() < 1e-8 && s.friction_forces.amax() < 1e-8);
    assert!((&s.velocity - &p.free_velocity).amax() < 1e-12);
    p.gaps = vec![-0.001; 4]; // 1 mm deep: position-level rows close the gap in one step
    let s = solve(&p, &o);
    let gap = DVector::from_column_slice(&p.gaps) + &p.normals * &s.velocity * p.h;
    assert!(gap.amax() < 1e-9 && gap.min() > -1e-9, "gap after the step {gap}");
    // A warm start from the solution converges at once.
    let again = solve_ncp(&p, &o, Some(&s)).unwrap();
    assert!(again.iterations <= 1, "{} iterations from the solution", again.iterations);
}

#[test]
fn bad_problems_are_errors() {
    let o = NcpOptions::default();
    let mut p = particle(1.0, [0.5, 0.0], 0.5);
    p.gaps = vec![0.0, 0.0];
    assert!(solve_ncp(&p, &o, None).is_err());
    let mut p = particle(1.0, [0.5, 0.0], 0.5);
    p.normals[(0, 2)] = f64::NAN;
    assert!(solve_ncp(&p, &o, None).is_err());
    let mut p = particle(1.0, [0.5, 0.0], -0.5);
    assert!(solve_ncp(&p, &o, None).unwrap_err().to_string().contains("friction"));
    p.friction = vec![0.5];
    p.h = 0.0;
    assert!(solve_ncp(&p, &o, None).is_err());
    p.h = H;
    p.mass = -DMatrix::identity(3, 3);
    assert!(solve_ncp(&p, &o, None).unwrap_err().to_string().contains("positive definite"));
}
