//! The contact trajectory-optimization examples as tests: the ball throw (one bounce,
//! target within 2 cm), the box push (within 1 cm of the goal) and the arm reach.

#[path = "../examples/ball_throw.rs"]
#[allow(dead_code)]
mod ball_throw;

use stiction::math::Vec3;
use stiction::step::BounceGradients;

#[test]
fn ball_throw_hits_the_target_after_one_bounce() {
    for gradients in [ball_throw::Gradients::Analytic, ball_throw::Gradients::FiniteDifference] {
        let mut sim = ball_throw::simulator(BounceGradients::Discrete).unwrap();
        let t = ball_throw::optimise(&mut sim, gradients, 1e-4, 50, |_, _, _| {}).unwrap();
        let target = Vec3::from_column_slice(&ball_throw::TARGET);
        let start = Vec3::from_column_slice(&ball_throw::START);
        assert!((target - start).norm() >= 1.0);
        assert!(t.miss() < 0.02, "{gradients:?}: miss {} m", t.miss());
        assert!((t.final_position - target).norm() < 0.02);
        assert_eq!(t.bounces, 1, "{gradients:?}");
        // A fresh rollout of the optimised throw reproduces it: one bounce, same point.
        let (x, bounces, _) = ball_throw::throw(&mut sim, &t.v0, false).unwrap();
        assert_eq!(bounces, 1);
        assert!((Vec3::new(x.q[0], x.q[1], x.q[2]) - target).norm() < 0.02);
        assert!(t.miss_history.windows(2).all(|w| w[1] <= w[0]));
        assert!(t.iterations <= 10, "{gradients:?}: {} iterations", t.iterations);
    }
}
