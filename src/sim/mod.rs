//! The [`Simulator`] (a model, its options and workspaces; steps, recorded steps and
//! rollouts, with solver statistics) and batched rollouts and their backward passes in
//! parallel (`batch`). It runs the stages of [`crate::step`] and records them for
//! [`crate::tape`].

mod batch;
mod simulator;

pub use batch::{backward_batch, map_rollouts, rollout_batch, BatchCotangent, BatchOptions, BatchResult, BatchRollout};
pub use simulator::{Control, SimOptions, SimStats, Simulator, State};
