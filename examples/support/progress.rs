//! Progress lines shared by the iLQR examples.
#![allow(dead_code)] // not every example uses every part

use stiction::optim::IlqrProgress;

/// Prints the iteration, cost, line-search step, regularization and elapsed time of every
/// `every`-th iLQR iteration.
pub fn print_ilqr(p: &IlqrProgress, every: usize) {
    if p.iteration % every == 0 {
        println!(
            "    iter {:3}  cost {:.6e}  step {:.3}  mu {:.1e}  {:.3} s",
            p.iteration,
            p.cost,
            p.step,
            p.regularization,
            p.elapsed.as_secs_f64()
        );
    }
}
