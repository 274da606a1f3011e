//! Sparse matrices for large constraint and FEM systems, and the Schur operator `A = J H⁻¹ Jᵀ` of a non-smooth Newton step (Macklin
//! et al. 2019, eq. 59; digest-000 §4) for large problems: `J` a compressed-row matrix
//! (constraint rows over the velocity coordinates), `H⁻¹` block diagonal (the inverse
//! mass of each rigid body or FEM node, or the inverse of the Newton system's diagonal
//! blocks), and plain symmetric sparse matrices ([`CsrMatrix`]) for systems that come
//! assembled, such as an FEM Hessian.
//!
//! These are the operators the conjugate-residual solvers iterate on (both are
//! `crate::solver::DelassusOperator`s): the CPU one (`crate::solver::ncp::pcr_solve`) and
//! the GPU one (`crate::gpu`, feature `cuda`), which uploads exactly these arrays. The
//! stopping rule and report both solvers share ([`PcrOptions`], [`PcrReport`]) are here
//! too, so that the GPU module depends on no solver.

use crate::error::{Error, Result};
use nalgebra::DMatrix;
use sprs::TriMat;

/// Stopping rule of a Jacobi-preconditioned conjugate-residual solve
/// (`crate::solver::ncp::pcr_solve` and its GPU twin).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PcrOptions {
    /// At most this many iterations (the paper runs a fixed count: 10–80).
    pub max_iterations: usize,
    /// Stop once `‖r‖_{P⁻¹} ≤ tolerance · ‖b‖_{P⁻¹}` (0: run every iteration).
    pub tolerance: f64,
}

impl Default for PcrOptions {
    fn default() -> Self {
        Self { max_iterations: 100, tolerance: 1e-10 }
    }
}

/// What a conjugate-residual solve did.
#[derive(Clone, Debug, PartialEq)]
pub struct PcrReport {
    /// Iterations run.
    pub iterations: usize,
    /// `‖r‖_{P⁻¹}` at the start and after each iteration (non-increasing in exact
    /// arithmetic for a positive semi-definite `A`).
    pub residuals: Vec<f64>,
    /// Whether the tolerance was reached.
    pub converged: bool,
}

/// The block size of [`blocked_sum`] (the GPU kernels' threads per block).
pub const REDUCTION_BLOCK: usize = 256;

/// `s[0] + … + s[255]` by a fixed binary tree (halving strides).
fn tree_sum(s: &mut [f64; REDUCTION_BLOCK]) -> f64 {
    let mut o = REDUCTION_BLOCK / 2;
    while o > 0 {
        for i in 0..o {
            s[i] += s[i + o];
        }
        o /= 2;
    }
    s[0]
}

/// `Σ_{i<n} term(i)` in the order of the GPU kernels' deterministic two-pass reduction:
/// blocks of [`REDUCTION_BLOCK`] terms each summed by a fixed tree; then the block sums
/// strided over [`REDUCTION_BLOCK`] lanes, each lane summing its share in order, and the
/// lanes by the same tree. Pairwise, so also more accurate than a running sum; the
/// conjugate-residual solvers sum their dot products this way so that the CPU and GPU
/// solvers agree bit for bit in f64.
pub fn blocked_sum(n: usize, term: impl Fn(usize) -> f64) -> f64 {
    let blocks = n.div_ceil(REDUCTION_BLOCK).max(1);
    let mut s = [0.0; REDUCTION_BLOCK];
    let mut partials = Vec::with_capacity(blocks);
    for b in 0..blocks {
        for (t, v) in s.iter_mut().enumerate() {
            let i = b * REDUCTION_BLOCK + t;
            *v = if i < n { term(i) } else { 0.0 };
        }
        partials.push(tree_sum(&mut s));
    }
    for (t, v) in s.iter_mut().enumerate() {
        *v = 0.0;
        for p in partials.iter().skip(t).step_by(REDUCTION_BLOCK) {
            *v += p;
        }
    }
    tree_sum(&mut s)
}

/// `a · b` summed by [`blocked_sum`].
pub fn blocked_dot(a: &[f64], b: &[f64]) -> f64 {
    blocked_sum(a.len().min(b.len()), |i| a[i] * b[i])
}

/// A sparse matrix in compressed-row form (sorted column indices, no duplicates).
#[derive(Clone, Debug, PartialEq)]
pub struct CsrMatrix {
    rows: usize,
    cols: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<usize>,
    values: Vec<f64>,
}

impl CsrMatrix {
    /// The `rows × cols` matrix with entries `(i, j, a)`; repeated positions are summed.
    ///
    /// Errors: an index out of range ([`Error::InvalidInput`]) or a non-finite value
    /// ([`Error::NonFinite`]).
    pub fn from_triplets(rows: usize, cols: usize, entries: &[(usize, usize, f64)]) -> Result<CsrMatrix> {
        let mut tri = TriMat::with_capacity((rows, cols), entries.len());
        for (k, &(i, j, a)) in entries.iter().enumerate() {
            if i >= rows || j >= cols {
                return Err(Error::InvalidInput(format!(
                    "sparse entry {k} at ({i}, {j}) is outside the {rows} × {cols} matrix"
                )));
            }
            if !a.is_finite() {
                return Err(Error::NonFinite { what: "sparse matrix entries", index: k, value: a });
            }
            tri.add_triplet(i, j, a);
        }
        let csr: sprs::CsMat<f64> = tri.to_csr();
        Ok(CsrMatrix {
            rows,
            cols,
            row_ptr: csr.indptr().raw_storage().to_vec(),
            col_idx: csr.indices().to_vec(),
            values: csr.data().to_vec(),
        })
    }

    /// The nonzero entries of the dense matrix `a` (exact zeros are not stored).
    ///
    /// Errors: a non-finite entry ([`Error::NonFinite`], indexed column-major).
    pub fn from_dense(a: &DMatrix<f64>) -> Result<CsrMatrix> {
        if let Some((index, &value)) = a.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(Error::NonFinite { what: "sparse matrix entries", index, value });
        }
        let (rows, cols) = a.shape();
        let mut out = CsrMatrix { rows, cols, row_ptr: Vec::with_capacity(rows + 1), col_idx: vec![], values: vec![] };
        out.row_ptr.push(0);
        for i in 0..rows {
            for j in 0..cols {
                let v = a[(i, j)];
                if v != 0.0 {
                    out.col_idx.push(j);
                    out.values.push(v);
                }
            }
            out.row_ptr.push(out.values.len());
        }
        Ok(out)
    }

    /// The dense matrix.
    pub fn to_dense(&self) -> DMatrix<f64> {
        let mut d = DMatrix::zeros(self.rows, self.cols);
        for i in 0..self.rows {
            for k in self.row_ptr[i]..self.row_ptr[i + 1] {
                d[(i, self.col_idx[k])] = self.values[k];
            }
        }
        d
    }

    /// The principal submatrix over the rows and columns `keep` (increasing, each below
    /// both dimensions): entry `(r, s)` is the entry `(keep[r], keep[s])`.
    pub fn principal_submatrix(&self, keep: &[usize]) -> CsrMatrix {
        let mut new_index = vec![usize::MAX; self.rows.max(self.cols)];
        for (r, &i) in keep.iter().enumerate() {
            new_index[i] = r;
        }
        let mut out = CsrMatrix {
            rows: keep.len(),
            cols: keep.len(),
            row_ptr: Vec::with_capacity(keep.len() + 1),
            col_idx: vec![],
            values: vec![],
        };
        out.row_ptr.push(0);
        for &i in keep {
            let (lo, hi) = (self.row_ptr[i], self.row_ptr[i + 1]);
            for (&j, &v) in self.col_idx[lo..hi].iter().zip(&self.values[lo..hi]) {
                if new_index[j] != usize::MAX {
                    out.col_idx.push(new_index[j]);
                    out.values.push(v);
                }
            }
            out.row_ptr.push(out.values.len());
        }
        out
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Row `i`'s entries start at `row_ptr()[i]` and end before `row_ptr()[i + 1]`.
    pub fn row_ptr(&self) -> &[usize] {
        &self.row_ptr
    }

    /// The column of each stored entry.
    pub fn col_idx(&self) -> &[usize] {
        &self.col_idx
    }

    /// The value of each stored entry.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// `out = self · x`.
    pub fn multiply(&self, x: &[f64], out: &mut [f64]) {
        for (i, o) in out.iter_mut().enumerate().take(self.rows) {
            let (lo, hi) = (self.row_ptr[i], self.row_ptr[i + 1]);
            *o = self.col_idx[lo..hi].iter().zip(&self.values[lo..hi]).map(|(&j, a)| a * x[j]).sum();
        }
    }

    /// The transpose, in compressed-row form.
    pub fn transpose(&self) -> CsrMatrix {
        let mut count = vec![0usize; self.cols + 1];
        for &j in &self.col_idx {
            count[j + 1] += 1;
        }
        for j in 0..self.cols {
            count[j + 1] += count[j];
        }
        let row_ptr = count.clone();
        let mut next = count;
        let mut col_idx = vec![0; self.nnz()];
        let mut values = vec![0.0; self.nnz()];
        for i in 0..self.rows {
            for k in self.row_ptr[i]..self.row_ptr[i + 1] {
                let j = self.col_idx[k];
                col_idx[next[j]] = i;
                values[next[j]] = self.values[k];
                next[j] += 1;
            }
        }
        CsrMatrix { rows: self.cols, cols: self.rows, row_ptr, col_idx, values }
    }

    /// The diagonal (zero where no entry is stored).
    pub fn diagonal(&self) -> Vec<f64> {
        (0..self.rows.min(self.cols))
            .map(|i| {
                let (lo, hi) = (self.row_ptr[i], self.row_ptr[i + 1]);
                self.col_idx[lo..hi].binary_search(&i).map(|k| self.values[lo + k]).unwrap_or(0.0)
            })
            .collect()
    }
}

/// A block-diagonal matrix of dense square blocks (row-major), e.g. the inverse mass of
/// a set of rigid bodies (6 × 6) or FEM nodes (3 × 3).
#[derive(Clone, Debug, PartialEq)]
pub struct BlockDiagonal {
    /// Block `b` covers rows and columns `offsets[b]..offsets[b + 1]`.
    offsets: Vec<usize>,
    /// Block `b`'s entries start at `data_offsets[b]` in `data`.
    data_offsets: Vec<usize>,
    data: Vec<f64>,
}

/// The largest block a [`BlockDiagonal`] may hold (a rigid body's six coordinates).
pub const MAX_BLOCK: usize = 6;

impl BlockDiagonal {
    /// The matrix with the dense row-major `blocks` (each `s × s` for its size `s`,
    /// `1 ≤ s ≤` [`MAX_BLOCK`]) along its diagonal.
    ///
    /// Errors: a block that is not square, is empty or larger than [`MAX_BLOCK`]
    /// ([`Error::InvalidInput`]), or holds a non-finite entry ([`Error::NonFinite`]).
    pub fn new(blocks: &[Vec<f64>]) -> Result<BlockDiagonal> {
        let mut offsets = vec![0];
        let mut data_offsets = vec![0];
        let mut data = Vec::new();
        for (b, block) in blocks.iter().enumerate() {
            let s = (block.len() as f64).sqrt().round() as usize;
            if s * s != block.len() || s == 0 || s > MAX_BLOCK {
                return Err(Error::InvalidInput(format!(
                    "block {b} of a block-diagonal matrix has {} entries: it must be s × s with 1 ≤ s ≤ {MAX_BLOCK}",
                    block.len()
                )));
            }
            if let Some((i, &v)) = block.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(Error::NonFinite { what: "block-diagonal entries", index: data.len() + i, value: v });
            }
            data.extend_from_slice(block);
            offsets.push(offsets[b] + s);
            data_offsets.push(data.len());
        }
        Ok(BlockDiagonal { offsets, data_offsets, data })
    }

    /// The number of rows (and columns).
    pub fn dim(&self) -> usize {
        *self.offsets.last().unwrap_or(&0)
    }

    /// The number of blocks.
    pub fn blocks(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Block `b` covers rows `offsets()[b]..offsets()[b + 1]`.
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// Block `b`'s row-major entries start at `data_offsets()[b]` in [`Self::data`].
    pub fn data_offsets(&self) -> &[usize] {
        &self.data_offsets
    }

    /// All blocks' entries, row-major, one after the other.
    pub fn data(&self) -> &[f64] {
        &self.data
    }

    /// `out = self · x`.
    pub fn multiply(&self, x: &[f64], out: &mut [f64]) {
        for b in 0..self.blocks() {
            let (lo, hi) = (self.offsets[b], self.offsets[b + 1]);
            let s = hi - lo;
            let d = &self.data[self.data_offsets[b]..self.data_offsets[b + 1]];
            for r in 0..s {
                out[lo + r] = (0..s).map(|c| d[r * s + c] * x[lo + c]).sum();
            }
        }
    }
}

/// The Schur operator `A = J H⁻¹ Jᵀ` with sparse `J` and block-diagonal `H⁻¹`.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseSchur {
    j: CsrMatrix,
    jt: CsrMatrix,
    h_inverse: BlockDiagonal,
}

impl SparseSchur {
    /// `A = J H⁻¹ Jᵀ` for constraint rows `j` (m × n) and `h_inverse` (n × n).
    ///
    /// Errors: `j`'s columns differ from `h_inverse`'s size ([`Error::Dimension`]).
    pub fn new(j: CsrMatrix, h_inverse: BlockDiagonal) -> Result<SparseSchur> {
        if j.cols() != h_inverse.dim() {
            return Err(Error::Dimension { what: "Schur operator H⁻¹", expected: j.cols(), got: h_inverse.dim() });
        }
        let jt = j.transpose();
        Ok(SparseSchur { j, jt, h_inverse })
    }

    /// The constraint rows `J`.
    pub fn j(&self) -> &CsrMatrix {
        &self.j
    }

    /// `Jᵀ`, in compressed-row form.
    pub fn jt(&self) -> &CsrMatrix {
        &self.jt
    }

    /// The block-diagonal `H⁻¹`.
    pub fn h_inverse(&self) -> &BlockDiagonal {
        &self.h_inverse
    }

    /// `out = J H⁻¹ Jᵀ x`.
    pub fn multiply(&self, x: &[f64], out: &mut [f64]) {
        let n = self.jt.rows();
        let mut t = vec![0.0; n];
        self.jt.multiply(x, &mut t);
        let mut u = vec![0.0; n];
        self.h_inverse.multiply(&t, &mut u);
        self.j.multiply(&u, out);
    }

    /// The diagonal of `A`: `A_ii = J_i H⁻¹ J_iᵀ`, row by row.
    pub fn diagonal(&self) -> Vec<f64> {
        let h = &self.h_inverse;
        // The block of each velocity coordinate.
        let mut block_of = vec![0; h.dim()];
        for b in 0..h.blocks() {
            block_of[h.offsets[b]..h.offsets[b + 1]].fill(b);
        }
        (0..self.j.rows())
            .map(|i| {
                let (lo, hi) = (self.j.row_ptr[i], self.j.row_ptr[i + 1]);
                let mut sum = 0.0;
                for k in lo..hi {
                    let (c, a) = (self.j.col_idx[k], self.j.values[k]);
                    let b = block_of[c];
                    let (o, s) = (h.offsets[b], h.offsets[b + 1] - h.offsets[b]);
                    let d = &h.data[h.data_offsets[b]..];
                    for l in lo..hi {
                        let c2 = self.j.col_idx[l];
                        if block_of[c2] == b {
                            sum += a * d[(c - o) * s + (c2 - o)] * self.j.values[l];
                        }
                    }
                }
                sum
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DMatrix;

    fn dense(m: &CsrMatrix) -> DMatrix<f64> {
        let mut d = DMatrix::zeros(m.rows(), m.cols());
        for i in 0..m.rows() {
            for k in m.row_ptr()[i]..m.row_ptr()[i + 1] {
                d[(i, m.col_idx()[k])] += m.values()[k];
            }
        }
        d
    }

    #[test]
    fn schur_operator_equals_dense_product() {
        // Two bodies of unequal blocks (a 3 × 3 and a 2 × 2 and a 1 × 1).
        let h = BlockDiagonal::new(&[
            vec![2.0, 0.3, 0.1, 0.3, 1.5, 0.2, 0.1, 0.2, 1.0],
            vec![0.7, -0.1, -0.1, 0.4],
            vec![3.0],
        ])
        .unwrap();
        let j = CsrMatrix::from_triplets(
            4,
            6,
            &[(0, 0, 1.0), (0, 4, -0.5), (1, 2, 0.3), (1, 3, 2.0), (1, 5, 1.0), (2, 1, -1.2), (3, 0, 0.4), (3, 0, 0.1)],
        )
        .unwrap();
        let mut hd = DMatrix::zeros(6, 6);
        for b in 0..h.blocks() {
            let (o, s) = (h.offsets()[b], h.offsets()[b + 1] - h.offsets()[b]);
            for r in 0..s {
                for c in 0..s {
                    hd[(o + r, o + c)] = h.data()[h.data_offsets()[b] + r * s + c];
                }
            }
        }
        let jd = dense(&j);
        assert_eq!(jd[(3, 0)], 0.5, "repeated triplets are summed");
        let a = &jd * hd * jd.transpose();
        let schur = SparseSchur::new(j.clone(), h).unwrap();
        assert_eq!(dense(schur.jt()), jd.transpose());
        let x = [0.3, -1.1, 0.7, 2.0];
        let mut out = [0.0; 4];
        schur.multiply(&x, &mut out);
        let expect = &a * nalgebra::DVector::from_column_slice(&x);
        for i in 0..4 {
            assert!((out[i] - expect[i]).abs() < 1e-14, "row {i}: {} vs {}", out[i], expect[i]);
        }
        let diag = schur.diagonal();
        for i in 0..4 {
            assert!((diag[i] - a[(i, i)]).abs() < 1e-14, "diagonal {i}: {} vs {}", diag[i], a[(i, i)]);
        }
    }

    #[test]
    fn blocked_sums_are_exact_on_integers_and_close_to_running_sums() {
        for n in [0, 1, 255, 256, 257, 70_000] {
            let exact = (n * (n + 1) / 2) as f64;
            assert_eq!(blocked_sum(n, |i| (i + 1) as f64), exact, "n = {n}");
        }
        let a: Vec<f64> = (0..10_000).map(|i| ((i * 7919) % 1000) as f64 * 1e-3 - 0.5).collect();
        let running: f64 = a.iter().map(|x| x * x).sum();
        assert!((blocked_dot(&a, &a) - running).abs() <= 1e-12 * running);
    }

    #[test]
    fn a_dense_matrix_and_its_principal_submatrices_in_compressed_rows() {
        let a = DMatrix::from_row_slice(
            4,
            4,
            &[
                4.0, 0.0, 1.0, 0.0, //
                0.0, 3.0, 0.0, -2.0, //
                1.0, 0.0, 5.0, 0.5, //
                0.0, -2.0, 0.5, 6.0,
            ],
        );
        let csr = CsrMatrix::from_dense(&a).unwrap();
        assert_eq!(csr.nnz(), 10);
        let expected = CsrMatrix::from_triplets(
            4,
            4,
            &(0..4)
                .flat_map(|i| (0..4).map(move |j| (i, j)))
                .map(|(i, j)| (i, j, a[(i, j)]))
                .filter(|e| e.2 != 0.0)
                .collect::<Vec<_>>(),
        )
        .unwrap();
        assert_eq!(csr, expected, "the same matrix as from its triplets (zeros dropped)");
        let keep = [0, 2, 3];
        let sub = csr.principal_submatrix(&keep);
        let dense_sub = DMatrix::from_fn(3, 3, |r, s| a[(keep[r], keep[s])]);
        assert_eq!(sub, CsrMatrix::from_dense(&dense_sub).unwrap());
        let x = [1.0, -2.0, 0.25];
        let mut out = [0.0; 3];
        sub.multiply(&x, &mut out);
        let expect = &dense_sub * nalgebra::DVector::from_column_slice(&x);
        assert_eq!(out.as_slice(), expect.as_slice());
        assert_eq!(csr.principal_submatrix(&[]).nnz(), 0);
        assert_eq!(csr.to_dense(), a);
        let mut bad = a.clone();
        bad[(1, 2)] = f64::INFINITY;
        assert!(matches!(CsrMatrix::from_dense(&bad), Err(Error::NonFinite { index: 9, .. })));
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(CsrMatrix::from_triplets(2, 2, &[(2, 0, 1.0)]).is_err());
        assert!(matches!(CsrMatrix::from_triplets(2, 2, &[(0, 0, f64::NAN)]), Err(Error::NonFinite { .. })));
        assert!(BlockDiagonal::new(&[vec![1.0, 2.0]]).is_err());
        assert!(BlockDiagonal::new(&[vec![1.0; 49]]).is_err());
        let j = CsrMatrix::from_triplets(1, 3, &[(0, 0, 1.0)]).unwrap();
        let h = BlockDiagonal::new(&[vec![1.0; 4]]).unwrap();
        assert!(matches!(SparseSchur::new(j, h), Err(Error::Dimension { .. })));
    }
}
