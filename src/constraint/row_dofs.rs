//! The non-zero columns of each row of a row Jacobian held in dense `m × nv` storage.
//!
//! A contact row acts on the dofs of the two chains from its bodies up to their lowest
//! common ancestor (`contact_rows`, the `J_r[k]` of its module doc), a joint row on one
//! dof. Products of a row with a vector then cost the row's dofs instead of `nv`: a pile
//! of 100 free boxes has 600 dofs and 12 per contact row. The dofs of a row are kept in
//! increasing order, so that [`RowDofs::dot`] adds the same products in the same order
//! as the dense product (the skipped terms are zeros): the sums are bitwise equal for
//! finite vectors.

use nalgebra::DMatrix;

/// The non-zero columns of each row (compressed: one offset per row into one list).
#[derive(Debug, PartialEq)]
pub struct RowDofs {
    /// Row `r`'s dofs are `list[start[r]..start[r + 1]]`.
    start: Vec<usize>,
    /// The dofs of every row, each row's in increasing order.
    list: Vec<usize>,
}

impl Clone for RowDofs {
    fn clone(&self) -> Self {
        RowDofs { start: self.start.clone(), list: self.list.clone() }
    }

    /// Reuses the storage of `self` (the backward sweep copies assemblies step after step).
    fn clone_from(&mut self, other: &Self) {
        self.start.clone_from(&other.start);
        self.list.clone_from(&other.list);
    }
}

impl Default for RowDofs {
    fn default() -> Self {
        RowDofs { start: vec![0], list: Vec::new() }
    }
}

impl RowDofs {
    /// Removes every row, keeping the storage.
    pub fn clear(&mut self) {
        self.start.clear();
        self.start.push(0);
        self.list.clear();
    }

    /// Appends a row acting on `dofs`, which must increase strictly (checked in debug
    /// builds).
    pub fn push(&mut self, dofs: &[usize]) {
        debug_assert!(dofs.windows(2).all(|w| w[0] < w[1]), "row dofs not increasing: {dofs:?}");
        self.list.extend_from_slice(dofs);
        self.start.push(self.list.len());
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.start.len() - 1
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The dofs of row `r`, increasing.
    pub fn dofs(&self, r: usize) -> &[usize] {
        &self.list[self.start[r]..self.start[r + 1]]
    }

    /// `J_r · x` over the dofs of row `r` of `j` (whose other entries must be zero).
    pub fn dot(&self, j: &DMatrix<f64>, r: usize, x: &[f64]) -> f64 {
        row_dot(j, r, self.dofs(r), x)
    }
}

/// `J_r · x` summed over `dofs` (increasing) only: row `r` of `j` must be zero elsewhere.
pub fn row_dot(j: &DMatrix<f64>, r: usize, dofs: &[usize], x: &[f64]) -> f64 {
    dofs.iter().map(|&k| j[(r, k)] * x[k]).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sparse products equal the dense ones bitwise, and the rows keep their dofs.
    #[test]
    fn sparse_row_products_equal_the_dense_ones() {
        let mut rng = crate::math::SplitMix64::new(3);
        let (m, nv) = (5, 9);
        let rows: [&[usize]; 5] = [&[0, 1, 2], &[4], &[], &[2, 5, 6, 8], &[0, 8]];
        let mut j = DMatrix::zeros(m, nv);
        let mut dofs = RowDofs::default();
        for (r, d) in rows.iter().enumerate() {
            for &k in *d {
                j[(r, k)] = rng.range(-1.0, 1.0) * 10f64.powi((k % 5) as i32 - 2);
            }
            dofs.push(d);
        }
        assert_eq!(dofs.len(), m);
        let x: Vec<f64> = (0..nv).map(|_| rng.range(-3.0, 3.0)).collect();
        let dense = &j * nalgebra::DVector::from_column_slice(&x);
        for r in 0..m {
            assert_eq!(dofs.dofs(r), rows[r]);
            let plain: f64 = j.row(r).iter().zip(&x).map(|(a, b)| a * b).sum();
            // Bitwise, but for the sign of an empty row's zero (an empty sum is −0).
            let sparse = dofs.dot(&j, r, &x);
            assert!(sparse == dense[r] && (sparse == 0.0 || sparse.to_bits() == dense[r].to_bits()), "row {r}");
            assert_eq!(plain.to_bits(), dense[r].to_bits(), "row {r}");
        }
        dofs.clear();
        assert!(dofs.is_empty());
    }
}
