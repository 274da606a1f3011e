//! The soft-body examples as tests: the cantilever settles on its static equilibrium, and
//! the identification recovers E and ν (exactly from noise-free data, within a percent
//! with 0.1 mm of noise).

#[allow(dead_code)]
#[path = "../examples/soft_cantilever.rs"]
mod soft_cantilever;
#[allow(dead_code)]
#[path = "../examples/soft_sysid.rs"]
mod soft_sysid;

#[test]
fn the_damped_cantilever_settles_on_its_static_equilibrium() {
    let run = soft_cantilever::run().unwrap();
    assert!(run.equilibrium_tip < -0.1, "the bar should sag by a good part of its length: {}", run.equilibrium_tip);
    assert!(
        (run.settled_tip - run.equilibrium_tip).abs() < 1e-4,
        "settled {} vs {}",
        run.settled_tip,
        run.equilibrium_tip
    );
    assert!(run.mean_iterations < 4.0, "{} Newton iterations per step", run.mean_iterations);
}

#[test]
fn identification_recovers_youngs_modulus_and_poisson_ratio() {
    let fits = soft_sysid::run().unwrap();
    let truth = [2e5, 0.35];
    for k in 0..2 {
        assert!((fits[0][k] - truth[k]).abs() <= 1e-6 * truth[k], "noise-free fit {:?}", fits[0]);
        assert!((fits[1][k] - truth[k]).abs() <= 1e-2 * truth[k], "noisy fit {:?}", fits[1]);
    }
}
