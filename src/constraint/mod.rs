//! Constraint rows of contacts and their configuration derivatives.
//!
//! Each contact contributes three rows to the constraint Jacobian J — the normal n and
//! two tangents t₁, t₂ of a [`ContactFrame`] — each measuring the relative velocity of
//! the two bodies' material points at the contact point p along its direction d:
//! `J_r v = d · (v_B(p) − v_A(p)) = W_r · (V_B − V_A)`, with the unit wrench
//! `W_r = [p × d; d]` about the world origin and `V_X` body X's world-frame spatial
//! velocity (Featherstone 2008, eq. 8.4; DiffDART, eq. 19: `(Jᵀf)_i = A_iᵀ Σ_k F_k`).
//!
//! [`ContactRowDerivatives`] differentiates `J(q) u` and `J(q)ᵀ λ` with respect to q in
//! the tangent space (`q ⊕ ε e_k`), for fixed contact features — the terms
//! `∂J/∂q` that enter the step Jacobians of DiffDART eqs. 7–10 and its eq. 20,
//! `∂(Jᵀf)_i/∂q = ∂A_i/∂qᵀ Σ_k F_k + A_iᵀ Σ_k ∂F_k/∂q`.
//!
//! * `frame` — the contact frame and the derivatives of its tangents.
//! * `contact_rows` — `ContactRows` (frames and the 3·nc × nv matrix J, by rows), and
//!   `recompute_contacts` (contacts re-evaluated at new poses, features kept).
//! * `sparse_rows` — `SparseRows`: a row Jacobian stored by rows with each row's
//!   non-zero columns, for storage and products that cost a row's dofs instead of nv.
//! * `derivatives` — `ContactRowDerivatives`: ∂distance/∂q, ∂(Ju)/∂q, ∂(Jᵀλ)/∂q and
//!   their vector–Jacobian products.

pub mod contact_rows;
pub mod derivatives;
pub mod detect;
pub mod frame;
pub mod sparse_rows;

pub use contact_rows::{recompute_contacts, ContactRows};
pub use derivatives::{ContactRowDerivatives, RowScratch, SubtreeTranslation};
pub use detect::{
    contact_jacobians, contacts_at, detect_contacts, match_contacts, CollisionOptions, CollisionWorkspace,
    ContactJacobians,
};
pub use frame::ContactFrame;
pub use sparse_rows::SparseRows;
