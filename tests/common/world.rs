//! The world-step VJP against Ridders' extrapolation along every input coordinate.

use super::{random_vector, ridders};
use nalgebra::DVector;
use stiction::math::SplitMix64;
use stiction::world::{World, WorldState};

/// Input coordinate `k` of `[tangent q | v | u]` moved by `eps`: the perturbed state, and
/// the control index to move when `k` is a control.
pub fn perturbed(w: &World, state: &WorldState, k: usize, eps: f64) -> (WorldState, Option<usize>) {
    let nv = w.nv();
    let mut s = state.clone();
    if k < nv {
        let mut dq = DVector::zeros(nv);
        dq[k] = eps;
        s.q = w.retract(&state.q, &dq).unwrap();
        (s, None)
    } else if k < 2 * nv {
        s.v[k - nv] += eps;
        (s, None)
    } else {
        (s, Some(k - 2 * nv))
    }
}

/// Asserts [`vjp_error_with`] below 1e-6 relative for three random cotangents (seeds
/// `seed0..seed0 + 3`); `what` names the case in the message.
pub fn assert_vjp_matches_ridders(what: &str, w: &World, state: &WorldState, u: &DVector<f64>, seed0: u64, h0: f64) {
    for seed in seed0..seed0 + 3 {
        let e = vjp_error_with(w, state, u, seed, h0, true);
        println!("{what}, seed {seed}: VJP vs Ridders relative error {e:.2e}");
        assert!(e < 1e-6, "{what}, seed {seed}: VJP vs Ridders relative error {e:.2e}");
    }
}

/// The largest relative disagreement between the VJP and Ridders finite differences
/// (first step `h0`) of `⟨ḡ_q, q⁺ ⊖ q⁺₀⟩ + ⟨ḡ_v, v⁺⟩` along every input coordinate
/// (tangent q, v, u), for a random cotangent; with `check_mode`, asserts that the row
/// classification holds over the difference steps (not for a solver whose choice among
/// dependent rows may flip while the velocities, and the loss, stay smooth).
pub fn vjp_error_with(w: &World, state: &WorldState, u: &DVector<f64>, seed: u64, h0: f64, check_mode: bool) -> f64 {
    let rec = w.step_recorded(state, u).unwrap();
    let mode = rec.solution().states.clone();
    let q0 = rec.next_state().q;
    let mut rng = SplitMix64::new(seed);
    let (nv, nu) = (w.nv(), w.nu());
    let gq = random_vector(&mut rng, nv, 1.0);
    let gv = random_vector(&mut rng, nv, 1.0);
    let grads = rec.vjp(&gq, &gv).unwrap();
    let loss = |w: &World, s: &WorldState, u: &DVector<f64>, check_mode: bool| -> DVector<f64> {
        let r = w.step_recorded(s, u).unwrap();
        if check_mode {
            assert_eq!(r.solution().states, mode, "the contact mode changed within the difference step");
        }
        let n = r.next_state();
        DVector::from_element(1, gq.dot(&w.difference(&q0, &n.q).unwrap()) + gv.dot(&n.v))
    };
    let mut worst = 0.0f64;
    let analytic_all = [grads.q.as_slice(), grads.v.as_slice(), grads.u.as_slice()].concat();
    for k in 0..(2 * nv + nu) {
        let f = |eps: f64| -> DVector<f64> {
            let (s, control) = perturbed(w, state, k, eps);
            let mut uu = u.clone();
            if let Some(c) = control {
                uu[c] += eps;
            }
            loss(w, &s, &uu, check_mode && eps.abs() >= h0)
        };
        let (fd, err) = ridders(&f, h0);
        let e = (analytic_all[k] - fd[0]).abs() / fd[0].abs().max(1.0);
        assert!(err < 1e-7 * fd[0].abs().max(1.0), "input {k}: Ridders error estimate {err} too large");
        worst = worst.max(e);
    }
    // Parameters, each moved in units of its own size (`θ_k + ε |θ_k|`, or `θ_k + ε`
    // when |θ_k| < 1) and compared with the VJP's `θ̄_k` scaled alike, norm-wise: the
    // largest error over θ relative to the largest derivative.
    let theta = w.param_values();
    let (mut fds, mut analytic) = (Vec::new(), Vec::new());
    for k in 0..theta.len() {
        let scale = theta[k].abs().max(1.0);
        let f = |eps: f64| -> DVector<f64> {
            let mut t = theta.clone();
            t[k] += eps * scale;
            loss(&w.with_param_values(&t).unwrap(), state, u, check_mode && eps.abs() >= h0)
        };
        let (fd, err) = ridders(&f, h0);
        assert!(err < 1e-7 * fd[0].abs().max(1.0), "parameter {k}: Ridders error estimate {err} too large");
        fds.push(fd[0]);
        analytic.push(grads.theta[k] * scale);
    }
    if let Some(top) = fds.iter().map(|x| x.abs()).reduce(f64::max) {
        let e = fds.iter().zip(&analytic).map(|(f, a)| (f - a).abs()).fold(0.0, f64::max) / top.max(1e-12);
        worst = worst.max(e);
    }
    worst
}
