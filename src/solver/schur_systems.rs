//! Generators of large Schur systems from contact and FEM scenes (placeholder).
