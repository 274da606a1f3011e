//! STUB (replaced by the lcp branch).
#![allow(missing_docs, unused_variables)]
use crate::error::Result;
use nalgebra::{DMatrix, DVector};
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowBound {
    Box { lo: f64, hi: f64 },
    Friction { normal: usize, mu: f64 },
}
#[derive(Clone, Debug)]
pub struct BoxedLcp {
    pub a: DMatrix<f64>,
    pub b: DVector<f64>,
    pub bounds: Vec<RowBound>,
}
impl BoxedLcp {
    pub fn new(a: DMatrix<f64>, b: DVector<f64>, bounds: Vec<RowBound>) -> Result<Self> {
        Ok(Self { a, b, bounds })
    }
}
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowState {
    Clamping,
    Separating,
    AtBound { sign: i8 },
    Tied,
}
#[derive(Clone, Debug)]
pub struct LcpSolution {
    pub f: DVector<f64>,
    pub w: DVector<f64>,
    pub states: Vec<RowState>,
    pub stats: LcpStats,
}
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SolvePath {
    #[default]
    Empty,
    WarmStart,
    Dantzig,
    Lemke,
    Pgs,
}
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct LcpStats {
    pub path: SolvePath,
    pub islands: usize,
    pub pivots: usize,
    pub pgs_iterations: usize,
    pub residual: f64,
    pub warm_start_attempted: bool,
    pub warm_start_hit: bool,
    pub fallbacks: usize,
    pub standardized: bool,
}
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LcpOptions {
    pub tolerance: f64,
    pub max_pivots: usize,
    pub pgs_iterations: usize,
    pub pgs_tolerance: f64,
    pub standardize: bool,
    pub friction_iterations: usize,
}
impl Default for LcpOptions {
    fn default() -> Self {
        todo!()
    }
}
pub fn solve(problem: &BoxedLcp, options: &LcpOptions, warm_start: Option<&[RowState]>) -> Result<LcpSolution> {
    todo!()
}
