//! The kinematic tree of a model as the buffers filled for it see it ([`Topology`]).

use super::Model;

/// Per body of a model: its parent, its first dof and its dof count. Buffers filled for
/// one model and reused for the next (the trees of a step's geometry, the chain columns
/// of the contact-row derivatives) compare it before trusting what they hold: two models
/// with the same numbers of bodies and dofs may still be different trees.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Topology(Vec<(Option<usize>, usize, usize)>);

impl Topology {
    /// The topology of `model`.
    pub fn of(model: &Model) -> Topology {
        let mut out = Topology::default();
        out.refresh(model);
        out
    }

    /// Whether `self` is the topology of `model`; when it is not, it becomes it.
    pub fn refresh(&mut self, model: &Model) -> bool {
        let body = |b: usize| (model.parents[b], model.v_idx[b], model.joints[b].nv());
        let nb = model.nbodies();
        let same = self.0.len() == nb && self.0.iter().enumerate().all(|(b, &t)| t == body(b));
        if !same {
            self.0.clear();
            self.0.extend((0..nb).map(body));
        }
        same
    }
}
