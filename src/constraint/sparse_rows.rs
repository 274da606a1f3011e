//! A row Jacobian stored by rows, each row with its non-zero columns and their values
//! (compressed sparse rows).
//!
//! A contact row acts on the dofs of the two chains from its bodies up to their lowest
//! common ancestor (`contact_rows`, the `J_r[k]` of its module doc), a joint row on one
//! dof: a pile of 100 free boxes has 600 dofs and 12 per contact row, 1,000 boxes on a
//! plane 6,000 dofs and 6 per row. Held densely, `J` would cost `m · nv` to clear, fill
//! and copy at every step, more than everything else the step does. The columns of a
//! row are kept in increasing order, so that [`SparseRows::dot`] adds the same products
//! in the same order as a dense product over the whole row (the skipped terms are
//! zeros): the sums are bitwise equal for finite vectors, and so are the dense copies of
//! [`SparseRows::dense_into`].

use nalgebra::{DMatrix, DVector};

/// A matrix of `nrows × ncols` stored row by row with each row's non-zero columns.
#[derive(Debug, PartialEq)]
pub struct SparseRows {
    /// The number of columns.
    ncols: usize,
    /// Row `r`'s entries are `cols[start[r]..start[r + 1]]`, `values[...]`.
    start: Vec<usize>,
    /// The columns of every row, each row's increasing.
    cols: Vec<usize>,
    /// The values, one per column entry.
    values: Vec<f64>,
}

impl Clone for SparseRows {
    fn clone(&self) -> Self {
        SparseRows {
            ncols: self.ncols,
            start: self.start.clone(),
            cols: self.cols.clone(),
            values: self.values.clone(),
        }
    }

    /// Reuses the storage of `self` (the backward sweep copies assemblies step after step).
    fn clone_from(&mut self, other: &Self) {
        self.ncols = other.ncols;
        self.start.clone_from(&other.start);
        self.cols.clone_from(&other.cols);
        self.values.clone_from(&other.values);
    }
}

impl Default for SparseRows {
    fn default() -> Self {
        SparseRows::new(0)
    }
}

impl SparseRows {
    /// Turns rows `r1` and `r2`, which must have the same columns, by the rotation
    /// `(c, s)`: `row₁ ← c row₁ + s row₂`, `row₂ ← −s row₁ + c row₂` (a contact's friction
    /// rows into another tangent basis).
    ///
    /// # Panics
    /// When the two rows' columns differ (a caller's bug: a contact's friction rows
    /// always share theirs).
    pub fn turn_rows(&mut self, r1: usize, r2: usize, c: f64, s: f64) {
        let (a, b) = (self.start[r1]..self.start[r1 + 1], self.start[r2]..self.start[r2 + 1]);
        assert!(self.cols[a.clone()] == self.cols[b.clone()], "turn_rows: rows {r1} and {r2} have different columns");
        for (i, k) in a.zip(b) {
            let (x, y) = (self.values[i], self.values[k]);
            self.values[i] = c * x + s * y;
            self.values[k] = -s * x + c * y;
        }
    }

    /// No rows, `ncols` columns.
    pub fn new(ncols: usize) -> SparseRows {
        SparseRows { ncols, start: vec![0], cols: Vec::new(), values: Vec::new() }
    }

    /// The rows of a dense matrix, keeping its non-zero entries.
    pub fn from_dense(j: &DMatrix<f64>) -> SparseRows {
        let mut out = SparseRows::new(j.ncols());
        for r in 0..j.nrows() {
            for c in (0..j.ncols()).filter(|&c| j[(r, c)] != 0.0) {
                out.cols.push(c);
                out.values.push(j[(r, c)]);
            }
            out.start.push(out.cols.len());
        }
        out
    }

    /// Removes every row and sets the number of columns, keeping the storage.
    pub fn clear(&mut self, ncols: usize) {
        self.ncols = ncols;
        self.start.clear();
        self.start.push(0);
        self.cols.clear();
        self.values.clear();
    }

    /// Appends a row with the entries `values` at the columns `cols`, which must
    /// increase strictly and lie below [`SparseRows::ncols`] (checked in debug builds).
    pub fn push_row(&mut self, cols: &[usize], values: &[f64]) {
        debug_assert!(cols.windows(2).all(|w| w[0] < w[1]), "row columns not increasing: {cols:?}");
        debug_assert!(cols.iter().all(|&c| c < self.ncols), "row column out of range: {cols:?}");
        debug_assert_eq!(cols.len(), values.len());
        self.cols.extend_from_slice(cols);
        self.values.extend_from_slice(values);
        self.start.push(self.cols.len());
    }

    /// Appends row `r` of `other` (which must have as many columns).
    pub fn push_row_of(&mut self, other: &SparseRows, r: usize) {
        debug_assert_eq!(self.ncols, other.ncols);
        let (a, b) = (other.start[r], other.start[r + 1]);
        self.cols.extend_from_slice(&other.cols[a..b]);
        self.values.extend_from_slice(&other.values[a..b]);
        self.start.push(self.cols.len());
    }

    /// The rows `rows` of `self`, in that order.
    pub fn select_rows(&self, rows: &[usize]) -> SparseRows {
        let mut out = SparseRows::new(self.ncols);
        for &r in rows {
            out.push_row_of(self, r);
        }
        out
    }

    /// The number of rows.
    pub fn nrows(&self) -> usize {
        self.start.len() - 1
    }

    /// The number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// `(nrows, ncols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.nrows(), self.ncols)
    }

    /// The number of stored entries.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.nrows() == 0
    }

    /// The columns of row `r`, increasing.
    pub fn cols(&self, r: usize) -> &[usize] {
        &self.cols[self.start[r]..self.start[r + 1]]
    }

    /// The values of row `r`, one per column of [`SparseRows::cols`].
    pub fn values(&self, r: usize) -> &[f64] {
        &self.values[self.start[r]..self.start[r + 1]]
    }

    /// The entries `(column, value)` of row `r`, by increasing column.
    pub fn row(&self, r: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.cols(r).iter().copied().zip(self.values(r).iter().copied())
    }

    /// The entry `(r, c)` (zero where none is stored).
    pub fn get(&self, r: usize, c: usize) -> f64 {
        self.cols(r).binary_search(&c).map_or(0.0, |i| self.values(r)[i])
    }

    /// Whether every stored entry is finite.
    pub fn is_finite(&self) -> bool {
        self.values.iter().all(|v| v.is_finite())
    }

    /// `J_r · x` over the entries of row `r`, by increasing column.
    pub fn dot(&self, r: usize, x: &[f64]) -> f64 {
        self.row(r).map(|(c, v)| v * x[c]).sum()
    }

    /// `out += s · J_rᵀ` (`out`: `ncols`).
    pub fn add_row_to(&self, r: usize, s: f64, out: &mut [f64]) {
        for (c, v) in self.row(r) {
            out[c] += v * s;
        }
    }

    /// `J x` (`nrows`).
    pub fn mul(&self, x: &[f64]) -> DVector<f64> {
        DVector::from_fn(self.nrows(), |r, _| self.dot(r, x))
    }

    /// `Jᵀ y` (`ncols`), accumulated row after row.
    pub fn tr_mul(&self, y: &[f64]) -> DVector<f64> {
        let mut out = DVector::zeros(self.ncols);
        for (r, &yr) in y.iter().enumerate().take(self.nrows()) {
            self.add_row_to(r, yr, out.as_mut_slice());
        }
        out
    }

    /// The dense matrix into `out`, reusing its storage.
    pub fn dense_into(&self, out: &mut DMatrix<f64>) {
        crate::math::reshape(out, self.nrows(), self.ncols);
        for r in 0..self.nrows() {
            for (c, v) in self.row(r) {
                out[(r, c)] = v;
            }
        }
    }

    /// The dense matrix.
    pub fn to_dense(&self) -> DMatrix<f64> {
        let mut out = DMatrix::zeros(0, 0);
        self.dense_into(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sparse products equal the dense ones bitwise, and the rows keep their entries.
    #[test]
    fn sparse_row_products_equal_the_dense_ones() {
        let mut rng = crate::math::SplitMix64::new(3);
        let (m, nv) = (5, 9);
        let rows: [&[usize]; 5] = [&[0, 1, 2], &[4], &[], &[2, 5, 6, 8], &[0, 8]];
        let mut j = DMatrix::zeros(m, nv);
        let mut sparse = SparseRows::new(nv);
        for (r, d) in rows.iter().enumerate() {
            let values: Vec<f64> = d.iter().map(|&k| rng.range(-1.0, 1.0) * 10f64.powi((k % 5) as i32 - 2)).collect();
            for (&k, &v) in d.iter().zip(&values) {
                j[(r, k)] = v;
            }
            sparse.push_row(d, &values);
        }
        assert_eq!((sparse.shape(), sparse.nnz()), ((m, nv), 10));
        assert_eq!(sparse.to_dense(), j);
        assert_eq!(SparseRows::from_dense(&j), sparse);
        let x: Vec<f64> = (0..nv).map(|_| rng.range(-3.0, 3.0)).collect();
        let dense = &j * DVector::from_column_slice(&x);
        for r in 0..m {
            assert_eq!(sparse.cols(r), rows[r]);
            let plain: f64 = j.row(r).iter().zip(&x).map(|(a, b)| a * b).sum();
            // Bitwise, but for the sign of an empty row's zero (an empty sum is −0).
            let s = sparse.dot(r, &x);
            assert!(s == dense[r] && (s == 0.0 || s.to_bits() == dense[r].to_bits()), "row {r}");
            assert_eq!(plain.to_bits(), dense[r].to_bits(), "row {r}");
            for c in 0..nv {
                assert_eq!(sparse.get(r, c), j[(r, c)]);
            }
        }
        let y: Vec<f64> = (0..m).map(|_| rng.range(-3.0, 3.0)).collect();
        let t = sparse.tr_mul(&y);
        let td = j.tr_mul(&DVector::from_column_slice(&y));
        assert!((t - td).amax() <= 1e-14);
        let picked = sparse.select_rows(&[3, 0]);
        assert_eq!(picked.to_dense().row(0), j.row(3));
        assert_eq!(picked.to_dense().row(1), j.row(0));
        let mut copy = SparseRows::default();
        copy.clone_from(&sparse);
        assert_eq!(copy, sparse);
        sparse.clear(4);
        assert!(sparse.is_empty() && sparse.ncols() == 4);
    }
}
