//! Constraint solvers of the step pipeline (the `solver` stage of `docs/architecture.md`).
//!
//! [`lcp`] holds the boxed linear complementarity solvers used for velocity-level rigid contact,
//! with the DiffDART (Werling et al. 2021) App. A.1/A.2 standardization of the solution.

pub mod lcp;
