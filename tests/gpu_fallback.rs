//! The GPU conjugate-residual options (docs/gpu.md) where no GPU is available: every
//! system that asks for the GPU is solved on the CPU by the path it stands in for — the
//! NCP solver's `LinearSolve::ConjugateResidual`, the soft body's `Direct` Newton — with
//! bit-identical results, and every such fallback is counted (the NCP solution, the
//! constraint stage's statistics, `SimStats`, the soft body's `NewtonReport`). On a
//! machine with a GPU the same tests check that the solves ran there instead and agree
//! with the CPU to round-off (the device path itself: `tests/gpu.rs`).

#[path = "common/contact.rs"]
#[allow(dead_code)]
mod contact;

use contact::{free_box, ground, material};
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;
use stiction::math::Vec3;
use stiction::soft::generate::box_mesh;
use stiction::soft::{step, MaterialModel, SoftBody, SoftLinearSolver, SoftMaterial, SoftOptions, SoftState};
use stiction::solver::gpu_linear::{gpu_pcr_solve, unavailable_reason, DeviceLayout, GpuLinearCounts};
use stiction::solver::ncp::{solve_ncp, LinearSolve, NcpOptions, NcpProblem, PcrOptions};
use stiction::solver::CsrMatrix;
use stiction::step::ContactSolver;
use stiction::{Control, ModelBuilder, SimOptions, Simulator, State};

/// Whether this machine solves on the GPU (else every GPU solve falls back).
fn gpu() -> bool {
    let reason = unavailable_reason();
    if let Some(r) = &reason {
        eprintln!("no GPU: {r}");
    }
    reason.is_none()
}

#[test]
fn without_a_gpu_the_solve_returns_none_and_says_why() {
    let a = CsrMatrix::from_triplets(2, 2, &[(0, 0, 2.0), (0, 1, 1.0), (1, 0, 1.0), (1, 1, 3.0)]).unwrap();
    let options = PcrOptions { max_iterations: 10, tolerance: 1e-15 };
    let out = gpu_pcr_solve(&a, DeviceLayout::Rows, &[0.0, 0.0], 0.0, &[1.0, 2.0], &options).unwrap();
    match unavailable_reason() {
        Some(reason) => {
            assert!(out.is_none());
            assert!(reason.starts_with("GPU: "), "{reason}");
            let r = reason.to_lowercase();
            assert!(
                ["driver", "device", "nvrtc", "feature"].iter().any(|w| r.contains(w)),
                "the reason names what is missing: {reason}"
            );
        }
        None => {
            // [[2, 1], [1, 3]] x = [1, 2]: x = (0.2, 0.6).
            let (x, report) = out.expect("a GPU solve");
            assert!(report.converged);
            assert!((x[0] - 0.2).abs() < 1e-12 && (x[1] - 0.6).abs() < 1e-12, "{x:?}");
        }
    }
    let mut c = GpuLinearCounts { solves: 1, fallbacks: 2 };
    c += GpuLinearCounts { solves: 3, fallbacks: 4 };
    assert_eq!(c, GpuLinearCounts { solves: 4, fallbacks: 6 });
}

/// A box (4 corner contacts, 12 rows) pushed sideways on the ground, in reduced
/// coordinates (6 dof: linear, angular): the Schur systems have several free rows.
fn box_problem() -> NcpProblem {
    let (h, g, m) = (0.01, 9.81, 2.0);
    let mut mass = DMatrix::zeros(6, 6);
    for i in 0..3 {
        mass[(i, i)] = m;
        mass[(3 + i, 3 + i)] = 0.02 + 0.01 * i as f64;
    }
    let corners = [(-0.1, -0.1), (0.1, -0.1), (0.1, 0.1), (-0.1, 0.1)];
    let (mut normals, mut tangents) = (DMatrix::zeros(4, 6), DMatrix::zeros(8, 6));
    for (c, &(x, y)) in corners.iter().enumerate() {
        let r = Vec3::new(x, y, -0.05);
        // Velocity of the corner: v + ω × r; row of direction d: [d, r × d].
        for (row, d) in [(None, Vec3::z()), (Some(0), Vec3::x()), (Some(1), Vec3::y())] {
            let rd = r.cross(&d);
            let vals = [d.x, d.y, d.z, rd.x, rd.y, rd.z];
            for (j, v) in vals.iter().enumerate() {
                match row {
                    None => normals[(c, j)] = *v,
                    Some(t) => tangents[(2 * c + t, j)] = *v,
                }
            }
        }
    }
    NcpProblem {
        mass,
        free_velocity: DVector::from_vec(vec![0.4, 0.1, -g * h, 0.0, 0.0, 0.3]),
        normals,
        tangents,
        gaps: vec![-1e-4, 0.0, 2e-4, 0.0],
        friction: vec![0.3, 0.3, 0.5, 0.5],
        h,
    }
}

#[test]
fn gpu_conjugate_residuals_fall_back_to_the_cpu_branch_bit_for_bit_and_are_counted() {
    let p = box_problem();
    let its = 40;
    let cpu =
        solve_ncp(&p, &NcpOptions { linear: LinearSolve::ConjugateResidual(its), ..Default::default() }, None).unwrap();
    let out = solve_ncp(&p, &NcpOptions { linear: LinearSolve::GpuConjugateResidual(its), ..Default::default() }, None)
        .unwrap();
    assert!(cpu.iterations > 0);
    assert_eq!(cpu.gpu, GpuLinearCounts::default(), "the CPU branch counts nothing");
    // One linear solve per Newton iteration (each has free rows here).
    let total = out.gpu.solves + out.gpu.fallbacks;
    assert_eq!(total, out.iterations);
    if gpu() {
        assert_eq!(out.gpu.fallbacks, 0);
        assert!((out.velocity.clone() - &cpu.velocity).amax() < 1e-9);
    } else {
        assert_eq!(out.gpu.solves, 0);
        assert_eq!(out.gpu.fallbacks, out.iterations);
        // Exactly the CPU conjugate-residual result.
        assert_eq!(out.velocity, cpu.velocity);
        assert_eq!(out.normal_forces, cpu.normal_forces);
        assert_eq!(out.friction_forces, cpu.friction_forces);
        assert_eq!((out.iterations, out.residual, out.converged), (cpu.iterations, cpu.residual, cpu.converged));
    }
}

#[test]
fn simulator_counts_gpu_fallbacks_of_the_ncp_solver() {
    let mut b = ModelBuilder::new("box");
    ground(&mut b, material(0.5, 0.0), 0.0);
    free_box(&mut b, "box", Vec3::new(0.1, 0.1, 0.1), 1.0, material(0.5, 0.0));
    let model = b.build().unwrap();
    let mut q = model.neutral();
    q[2] = 0.0999;
    let mut v = DVector::zeros(model.nv());
    v[3] = 0.5;
    let s0 = State { q, v };
    let control = Control::torques(DVector::zeros(model.nv()));
    let run = |linear: LinearSolve| {
        let mut options = SimOptions { dt: 1e-3, ..Default::default() };
        options.contact.solver = ContactSolver::Ncp;
        options.contact.ncp.linear = linear;
        let mut sim = Simulator::new(model.clone(), options).unwrap();
        let mut s = s0.clone();
        for _ in 0..5 {
            s = sim.step(&s, &control).unwrap();
        }
        let last = sim.last_constraints().map(|c| c.stats);
        (s, *sim.stats(), last)
    };
    let (s_cpu, stats_cpu, _) = run(LinearSolve::ConjugateResidual(200));
    let (s_gpu, stats, last) = run(LinearSolve::GpuConjugateResidual(200));
    assert_eq!(stats.ncp_solves, 5);
    assert!(stats.newton_iterations > 0);
    assert_eq!((stats_cpu.gpu_linear_solves, stats_cpu.gpu_fallbacks), (0, 0));
    let last = last.expect("the box touches the ground");
    if gpu() {
        assert!(stats.gpu_linear_solves > 0 && stats.gpu_fallbacks == 0, "{stats:?}");
        // At most one linear solve per Newton iteration (a warm-started step may need none).
        assert!(last.gpu_linear_solves <= last.newton_iterations && last.gpu_fallbacks == 0, "{last:?}");
        assert!((&s_gpu.q - &s_cpu.q).amax() < 1e-9 && (&s_gpu.v - &s_cpu.v).amax() < 1e-9);
    } else {
        assert!(stats.gpu_fallbacks > 0 && stats.gpu_linear_solves == 0, "{stats:?}");
        // At most one linear solve per Newton iteration (a warm-started step may need none).
        assert!(last.gpu_fallbacks <= last.newton_iterations && last.gpu_linear_solves == 0, "{last:?}");
        assert_eq!(s_gpu.q, s_cpu.q);
        assert_eq!(s_gpu.v, s_cpu.v);
        assert_eq!(stats.newton_iterations, stats_cpu.newton_iterations);
    }
}

#[test]
fn soft_pcr_gpu_steps_equal_direct_steps_without_a_gpu() {
    let mesh = box_mesh([2, 2, 2], Vec3::new(0.2, 0.2, 0.2), Vec3::zeros()).unwrap();
    let base: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].z == 0.0).collect();
    let material = SoftMaterial::new(MaterialModel::StableNeoHookean, 1e5, 0.3, 1000.0);
    let body = Arc::new(SoftBody::builder(mesh, material).pin_vertices(&base).build().unwrap());
    let mut s = SoftState::rest(&body);
    for i in 0..body.mesh().num_vertices() {
        s.v[3 * i] = 2.0 * s.x[3 * i + 2];
    }
    let targets = DVector::from_iterator(body.pinned_dofs().len(), body.pinned_dofs().iter().map(|&d| s.x[d]));
    let u = DVector::zeros(body.ndof());
    let run = |linear_solver| {
        step(&body, &s, &u, &targets, &SoftOptions { dt: 1e-2, linear_solver, ..Default::default() }).unwrap()
    };
    let direct = run(SoftLinearSolver::Direct);
    let pcr = run(SoftLinearSolver::PcrGpu);
    let r = pcr.report();
    assert_eq!(direct.report().gpu_fallbacks, 0);
    if gpu() {
        assert_eq!(r.gpu_fallbacks, 0);
        assert_eq!(r.linear_iterations.len(), r.iterations);
        assert!((&pcr.next_state().x - &direct.next_state().x).amax() < 1e-10);
    } else {
        assert!(r.iterations > 0);
        assert_eq!(r.gpu_fallbacks, r.iterations, "one fallback per Newton iteration");
        assert!(r.linear_iterations.is_empty());
        assert_eq!(pcr.next_state(), direct.next_state(), "bit-for-bit the direct step");
        assert_eq!(r.step_norms, direct.report().step_norms);
        assert_eq!(r.factorizations, direct.report().factorizations);
    }
    // The adjoint is the direct one's.
    let gx = DVector::from_fn(body.ndof(), |i, _| (i as f64 * 0.37).sin());
    let gv = DVector::from_fn(body.ndof(), |i, _| (i as f64 * 0.11).cos());
    let a = direct.vjp(&gx, &gv).unwrap();
    let b = pcr.vjp(&gx, &gv).unwrap();
    if !gpu() {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}
