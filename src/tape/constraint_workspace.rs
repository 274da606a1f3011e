//! The buffers of a step's constraint backward pass ([`ConstraintWorkspace`]), kept in
//! a [`super::Workspace`] across the steps of a backward sweep.

use super::constraint::{StageBuffers, StepGeometry};
use super::constraint_vjp::StageAdjoint;
use super::record::StepGradients;
use crate::math::reshape_vector;
use crate::solver::lcp::RowState;
use crate::Model;
use nalgebra::DVector;

/// The buffers of the constraint stages' backward pass, kept in a [`Workspace`] across
/// the steps of a backward sweep: the rebuilt geometry, each stage's system (velocity,
/// position, and the loss-driven alternative), the stages' adjoints and the vectors of
/// the chain. They grow to the largest step seen; a sweep then allocates nothing per step.
pub(crate) struct ConstraintWorkspace {
    pub(super) geometry: StepGeometry,
    pub(super) vel: StageBuffers,
    pub(super) pos: StageBuffers,
    pub(super) alt: StageBuffers,
    pub(super) chain: ChainBuffers,
    pub(super) jw_g: DVector<f64>,
    pub(super) jq_g: DVector<f64>,
    pub(super) g_p: DVector<f64>,
    pub(super) adjoint: DVector<f64>,
    pub(super) states: Vec<RowState>,
    pub(super) other: StepGradients,
}

/// The adjoints of the two stages and the vectors between them.
pub(super) struct ChainBuffers {
    pub(super) adj_v: StageAdjoint,
    pub(super) adj_p: StageAdjoint,
    pub(super) g_plus: DVector<f64>,
    pub(super) direct: DVector<f64>,
    pub(super) zero: DVector<f64>,
    pub(super) q_jump: DVector<f64>,
    pub(super) from_p: StepGradients,
}

impl ConstraintWorkspace {
    /// Empty buffers for records of `model`.
    pub(crate) fn new(model: &Model) -> ConstraintWorkspace {
        let empty = || DVector::zeros(0);
        ConstraintWorkspace {
            geometry: StepGeometry::empty(model),
            vel: StageBuffers::default(),
            pos: StageBuffers::default(),
            alt: StageBuffers::default(),
            chain: ChainBuffers {
                adj_v: StageAdjoint::default(),
                adj_p: StageAdjoint::default(),
                g_plus: empty(),
                direct: empty(),
                zero: empty(),
                q_jump: empty(),
                from_p: StepGradients::zeros(0, 0),
            },
            jw_g: empty(),
            jq_g: empty(),
            g_p: empty(),
            adjoint: empty(),
            states: vec![],
            other: StepGradients::zeros(0, 0),
        }
    }
}

/// Sizes `g` for nv dofs and np parameters (no allocation when it has them).
pub(super) fn size_gradients(g: &mut StepGradients, nv: usize, np: usize) {
    for x in [&mut g.q, &mut g.v, &mut g.tau] {
        if x.len() != nv {
            reshape_vector(x, nv);
        }
    }
    if g.theta.len() != np {
        reshape_vector(&mut g.theta, np);
    }
}
