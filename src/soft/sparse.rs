//! The sparse Hessian of a soft body's step over its free degrees of freedom: a fixed
//! pattern (the lower triangle, by columns, built once per body with `sprs`), the slot of
//! every element-matrix entry in it (so each Newton iteration only refills values), and
//! the sparse Cholesky factorization with `faer`: symbolic once per body, numeric per
//! Newton iteration, with a sparse LU for the adjoint of an indefinite Hessian; the
//! kept factor of the inexact-Newton mode (`pcg.rs`), in single or double precision; and
//! the product of the symmetric matrix with a vector.

use super::mesh::TetMesh;
use crate::error::{Error, Result};
use crate::solver::CsrMatrix;
use faer::linalg::solvers::Solve;
use faer::sparse::linalg::solvers::{Llt, Lu, SymbolicLlt, SymbolicLu};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMat};
use faer::{MatMut, Side};
use sprs::TriMat;

/// No slot: an entry that touches a pinned degree of freedom.
pub(crate) const NONE: usize = usize::MAX;

/// The number of entries `(i, j)`, `i ≤ j`, of a 12 × 12 element matrix.
pub(crate) const ELEMENT_ENTRIES: usize = 78;

/// The lower-triangular pattern of the free-free Hessian and where element entries go.
#[derive(Clone, Debug)]
pub(crate) struct HessianPattern {
    /// Free index of every degree of freedom ([`NONE`] when pinned).
    pub free_index: Vec<usize>,
    /// The degree of freedom of every free index.
    pub free_dofs: Vec<usize>,
    /// The lower triangle's pattern (column pointers, row indices), `n_free × n_free`.
    symbolic: SymbolicSparseColMat<usize>,
    /// Per element, the slot of local entry `(i, j)`, `i ≤ j`, in row-major upper order.
    pub element_slots: Vec<[usize; ELEMENT_ENTRIES]>,
    /// The slot of every free diagonal entry.
    pub diagonal: Vec<usize>,
    llt: Option<SymbolicLlt<usize>>,
}

/// A numeric factorization of the Hessian.
#[derive(Debug)]
pub(crate) enum Factor {
    /// Cholesky (the Hessian is positive definite).
    Llt(Llt<usize, f64>),
    /// LU with pivoting (indefinite but non-singular).
    Lu(Box<Lu<usize, f64>>),
}

impl Factor {
    /// `b ← H⁻¹ b` for the columns of the column-major `b` (`n_free × cols`).
    pub fn solve_in_place(&self, b: &mut [f64], cols: usize) {
        let n = b.len().checked_div(cols).unwrap_or(0);
        let rhs = MatMut::from_column_major_slice_mut(b, n, cols);
        match self {
            Factor::Llt(f) => f.solve_in_place(rhs),
            Factor::Lu(f) => f.solve_in_place(rhs),
        }
    }
}

/// A Cholesky factor kept over several solves as the preconditioner of conjugate
/// gradients (`pcg.rs`): the factor of the Hessian at some point, in single precision
/// (half the memory traffic, about 0.6× the time of the double factor) or in double.
#[derive(Debug)]
pub(crate) enum KeptFactor {
    /// An `f32` factor: `z = L⁻ᵀ L⁻¹ r` computed in single precision.
    Single(Llt<usize, f32>),
    /// An `f64` factor.
    Double(Llt<usize, f64>),
}

impl KeptFactor {
    /// `z ← P⁻¹ r` (`z` and `r` of length `n_free`; `scratch` holds the single-precision
    /// copy).
    pub fn apply(&self, r: &[f64], z: &mut [f64], scratch: &mut Vec<f32>) {
        let n = r.len();
        match self {
            KeptFactor::Single(f) => {
                scratch.clear();
                scratch.extend(r.iter().map(|&a| a as f32));
                f.solve_in_place(MatMut::from_column_major_slice_mut(scratch.as_mut_slice(), n, 1));
                for (out, &a) in z.iter_mut().zip(scratch.iter()) {
                    *out = f64::from(a);
                }
            }
            KeptFactor::Double(f) => {
                z.copy_from_slice(r);
                f.solve_in_place(MatMut::from_column_major_slice_mut(z, n, 1));
            }
        }
    }
}

/// The position of local entry `(i, j)`, `i ≤ j < 12`, in the element slot array.
#[inline]
pub(crate) fn local_entry(i: usize, j: usize) -> usize {
    debug_assert!(i <= j && j < 12);
    i * 12 - i * (i + 1) / 2 + j
}

impl HessianPattern {
    /// The pattern of `mesh` with the degrees of freedom `pinned` (ascending) removed.
    pub fn new(mesh: &TetMesh, pinned: &[usize]) -> Result<HessianPattern> {
        let ndof = 3 * mesh.num_vertices();
        let mut free_index = vec![0; ndof];
        let mut free_dofs = Vec::with_capacity(ndof - pinned.len());
        for (d, slot) in free_index.iter_mut().enumerate() {
            if pinned.binary_search(&d).is_ok() {
                *slot = NONE;
            } else {
                *slot = free_dofs.len();
                free_dofs.push(d);
            }
        }
        let n = free_dofs.len();
        let dofs = |tet: &[usize; 4]| -> [usize; 12] { std::array::from_fn(|i| free_index[3 * tet[i / 3] + i % 3]) };
        let mut tri = TriMat::<f64>::new((n, n));
        for d in 0..n {
            tri.add_triplet(d, d, 0.0);
        }
        for tet in mesh.tets() {
            let g = dofs(tet);
            for i in 0..12 {
                for j in i..12 {
                    if g[i] != NONE && g[j] != NONE {
                        tri.add_triplet(g[i].max(g[j]), g[i].min(g[j]), 0.0);
                    }
                }
            }
        }
        let csc = tri.to_csc::<usize>();
        let col_ptr = csc.indptr().raw_storage().to_vec();
        let row_idx = csc.indices().to_vec();
        let slot = |r: usize, c: usize| -> usize {
            let (lo, hi) = (col_ptr[c], col_ptr[c + 1]);
            lo + row_idx[lo..hi]
                .binary_search(&r)
                .unwrap_or_else(|_| unreachable!("entry ({r}, {c}) is in the pattern"))
        };
        let element_slots = mesh
            .tets()
            .iter()
            .map(|tet| {
                let g = dofs(tet);
                let mut s = [NONE; ELEMENT_ENTRIES];
                for i in 0..12 {
                    for j in i..12 {
                        if g[i] != NONE && g[j] != NONE {
                            s[local_entry(i, j)] = slot(g[i].max(g[j]), g[i].min(g[j]));
                        }
                    }
                }
                s
            })
            .collect();
        let diagonal = (0..n).map(|d| slot(d, d)).collect();
        let symbolic = SymbolicSparseColMat::new_checked(n, n, col_ptr, None, row_idx);
        let llt =
            if n > 0 {
                Some(SymbolicLlt::try_new(symbolic.as_ref(), Side::Lower).map_err(|e| Error::Numerical {
                    algorithm: "soft body symbolic Cholesky",
                    detail: format!("{e:?}"),
                })?)
            } else {
                None
            };
        Ok(HessianPattern { free_index, free_dofs, symbolic, element_slots, diagonal, llt })
    }

    /// The number of free degrees of freedom.
    pub fn n_free(&self) -> usize {
        self.free_dofs.len()
    }

    /// The number of stored (lower-triangular) entries.
    pub fn nnz(&self) -> usize {
        self.symbolic.row_idx().len()
    }

    /// The Cholesky factor of the matrix with lower-triangular `values`, `None` when it is
    /// not positive definite.
    pub fn cholesky(&self, values: &[f64]) -> Option<Factor> {
        let symbolic = self.llt.clone()?;
        let mat = SparseColMatRef::new(self.symbolic.as_ref(), values);
        Llt::try_new_with_symbolic(symbolic, mat, Side::Lower).ok().map(Factor::Llt)
    }

    /// The Cholesky factor of the matrix with lower-triangular `values` in the precision
    /// asked, to be kept as a preconditioner; `None` when it is not positive definite
    /// (in that precision).
    pub fn kept_cholesky(&self, values: &[f64], single: bool) -> Option<KeptFactor> {
        let symbolic = self.llt.clone()?;
        if single {
            let values: Vec<f32> = values.iter().map(|&a| a as f32).collect();
            let mat = SparseColMatRef::new(self.symbolic.as_ref(), values.as_slice());
            Llt::try_new_with_symbolic(symbolic, mat, Side::Lower).ok().map(KeptFactor::Single)
        } else {
            let mat = SparseColMatRef::new(self.symbolic.as_ref(), values);
            Llt::try_new_with_symbolic(symbolic, mat, Side::Lower).ok().map(KeptFactor::Double)
        }
    }

    /// `out = A x` for the symmetric matrix `A` with lower-triangular `values` (free
    /// indices).
    pub fn multiply(&self, values: &[f64], x: &[f64], out: &mut [f64]) {
        let (col_ptr, row_idx) = (self.symbolic.col_ptr(), self.symbolic.row_idx());
        out.fill(0.0);
        for (c, &xc) in x.iter().enumerate() {
            let mut dot = 0.0;
            for k in col_ptr[c]..col_ptr[c + 1] {
                let r = row_idx[k];
                let a = values[k];
                out[r] += a * xc;
                if r != c {
                    dot += a * x[r];
                }
            }
            out[c] += dot;
        }
    }

    /// The symmetric matrix with lower-triangular `values` with both triangles stored, in
    /// compressed rows (the GPU conjugate-residual solver's input). Errors: a non-finite
    /// value.
    pub fn full_csr(&self, values: &[f64]) -> Result<CsrMatrix> {
        let n = self.n_free();
        let (col_ptr, row_idx) = (self.symbolic.col_ptr(), self.symbolic.row_idx());
        let mut entries = Vec::with_capacity(2 * values.len());
        for c in 0..n {
            for k in col_ptr[c]..col_ptr[c + 1] {
                let r = row_idx[k];
                entries.push((r, c, values[k]));
                if r != c {
                    entries.push((c, r, values[k]));
                }
            }
        }
        CsrMatrix::from_triplets(n, n, &entries)
    }

    /// The LU factor of the symmetric matrix with lower-triangular `values`. Errors:
    /// a singular matrix.
    pub fn lu(&self, values: &[f64]) -> Result<Factor> {
        let n = self.n_free();
        let (col_ptr, row_idx) = (self.symbolic.col_ptr(), self.symbolic.row_idx());
        let mut tri = TriMat::<f64>::new((n, n));
        for c in 0..n {
            for k in col_ptr[c]..col_ptr[c + 1] {
                let r = row_idx[k];
                tri.add_triplet(r, c, values[k]);
                if r != c {
                    tri.add_triplet(c, r, values[k]);
                }
            }
        }
        let full = tri.to_csc::<usize>();
        let sym = SymbolicSparseColMat::new_checked(
            n,
            n,
            full.indptr().raw_storage().to_vec(),
            None,
            full.indices().to_vec(),
        );
        let failed = |detail: String| Error::Numerical { algorithm: "soft body sparse LU", detail };
        let symbolic = SymbolicLu::try_new(sym.as_ref()).map_err(|e| failed(format!("{e:?}")))?;
        let mat = SparseColMatRef::new(sym.as_ref(), full.data());
        Lu::try_new_with_symbolic(symbolic, mat)
            .map(|f| Factor::Lu(Box::new(f)))
            .map_err(|e| failed(format!("singular Hessian ({e:?})")))
    }
}
