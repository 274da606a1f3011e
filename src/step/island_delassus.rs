//! The Delassus matrix of one island, assembled tree by tree.
//!
//! `M̃` is block-diagonal over the trees of the model ([`super::trees`]), `M̃_t = C_t C_tᵀ`
//! per tree, and a row acts on at most two trees (a contact or a limit between two
//! bodies). With `L = J C⁻ᵀ`, whose row `r` is zero outside the dofs of the trees of `r`,
//!
//! ```text
//! A = J M̃⁻¹ Jᵀ = L Lᵀ = Σ_t L_{R_t t} L_{R_t t}ᵀ,      M̃⁻¹ Jᵀ f = C⁻ᵀ Lᵀ f
//! ```
//!
//! with `R_t` the rows acting on tree `t`: entry `(i, j)` sums, over the trees the two
//! rows share, the dot product of their segments of `L`. The cost is
//! `Σ_t (n_t³ + |R_t| n_t² + |R_t|² n_t)` for trees of `n_t` dofs, where the dense
//! island (`C` over all its dofs, `J M̃⁻¹ Jᵀ` as one product) costs
//! `n³ + k n² + k² n` for `k` rows over `n` dofs: a pile of 54 free tables (876 rows
//! over 324 dofs, 54 trees of 6) takes under a million flops instead of 350 million.
//! `A` is exactly symmetric (both triangles get the same sums, in the same order), and
//! it is exactly `L Lᵀ` for the factored minimum-norm solves that use `L`.

use nalgebra::{Cholesky, DMatrix, Dyn};

use super::trees::{lower_solve, lower_transpose_solve, TreeInertia, Trees};
use crate::constraint::SparseRows;
use crate::error::{Error, Result};

/// One tree of an island: its factor, its dofs' island columns, the rows acting on it.
struct IslandTree {
    /// `M̃_t = C_t C_tᵀ`.
    factor: Cholesky<f64, Dyn>,
    /// The island column of each of the tree's dofs (in the tree's dof order).
    columns: Vec<usize>,
    /// The island rows acting on the tree, increasing, with the offset of each one's
    /// segment of `L` in [`IslandDelassus::segments`].
    rows: Vec<(usize, usize)>,
}

/// The factored Delassus operator `J M̃⁻¹ Jᵀ` of one island (module notes).
pub(crate) struct IslandDelassus {
    /// The number of rows `k`.
    rows: usize,
    /// The number of dofs `n`.
    dofs: usize,
    /// The island's trees, in the order of their first dof.
    trees: Vec<IslandTree>,
    /// The segments of `L = J C⁻ᵀ`: per tree and row acting on it, the row's `n_t`
    /// entries on the tree's dofs.
    segments: Vec<f64>,
}

impl IslandDelassus {
    /// Factors the island's trees and computes `L` over its rows. `rows`: the island's
    /// rows of `j` (model numbering); `row_trees`: the trees of every row of `j`
    /// (`usize::MAX`: none); `dofs`: the island's dofs, increasing, whole trees;
    /// `slot`: scratch of one entry per tree of the model, all `usize::MAX` (left so).
    ///
    /// Errors: a tree whose block of `M̃` is not positive definite.
    pub fn new(
        trees: &Trees,
        inertia: &TreeInertia,
        j: &SparseRows,
        rows: &[usize],
        row_trees: &[[usize; 2]],
        dofs: &[usize],
        slot: &mut [usize],
    ) -> Result<IslandDelassus> {
        let mut out = IslandDelassus { rows: rows.len(), dofs: dofs.len(), trees: Vec::new(), segments: Vec::new() };
        // A tree enters where its first dof comes (the island's dofs are increasing).
        for &d in dofs.iter().filter(|&&d| trees.local[d] == 0) {
            let t = trees.of_dof[d];
            let factor = Cholesky::new(inertia.blocks[t].clone()).ok_or_else(|| Error::Numerical {
                algorithm: "contact stage",
                detail: "the effective inertia M + diag(armature + h·damping) is not positive definite".into(),
            })?;
            let columns = trees.dofs[t]
                .iter()
                .map(|dof| dofs.binary_search(dof).expect("an island holds its trees' dofs whole"))
                .collect();
            slot[t] = out.trees.len();
            out.trees.push(IslandTree { factor, columns, rows: Vec::new() });
        }
        for (p, &r) in rows.iter().enumerate() {
            let [t0, t1] = row_trees[r];
            // A row between two bodies of one tree (a self-contact) has one segment there.
            for t in [t0, if t1 == t0 { usize::MAX } else { t1 }].into_iter().filter(|&t| t != usize::MAX) {
                let tree = &mut out.trees[slot[t]];
                let n = tree.columns.len();
                let offset = out.segments.len();
                out.segments.resize(offset + n, 0.0);
                let segment = &mut out.segments[offset..];
                for (c, v) in j.row(r) {
                    if trees.of_dof[c] == t {
                        segment[trees.local[c]] = v;
                    }
                }
                lower_solve(tree.factor.l_dirty().as_slice(), segment);
                tree.rows.push((p, offset));
            }
        }
        for &d in dofs.iter().filter(|&&d| trees.local[d] == 0) {
            slot[trees.of_dof[d]] = usize::MAX;
        }
        Ok(out)
    }

    /// `A = L Lᵀ` (`k × k`) into `a`, resized.
    pub fn delassus_into(&self, a: &mut DMatrix<f64>) {
        crate::math::reshape(a, self.rows, self.rows);
        a.fill(0.0);
        for tree in &self.trees {
            let n = tree.columns.len();
            for (q, &(i, oi)) in tree.rows.iter().enumerate() {
                let si = &self.segments[oi..oi + n];
                for &(k, ok) in &tree.rows[q..] {
                    let v: f64 = si.iter().zip(&self.segments[ok..ok + n]).map(|(x, y)| x * y).sum();
                    a[(i, k)] += v;
                    if k != i {
                        a[(k, i)] += v;
                    }
                }
            }
        }
    }

    /// `L = J C⁻ᵀ` as a dense `k × n` matrix over the island's rows and dofs.
    pub fn factor(&self) -> DMatrix<f64> {
        let mut l = DMatrix::zeros(self.rows, self.dofs);
        for tree in &self.trees {
            let n = tree.columns.len();
            for &(i, offset) in &tree.rows {
                for (&c, &v) in tree.columns.iter().zip(&self.segments[offset..offset + n]) {
                    l[(i, c)] = v;
                }
            }
        }
        l
    }

    /// `M̃⁻¹ Jᵀ f = C⁻ᵀ Lᵀ f` over the island's dofs (`f`: one force per island row).
    pub fn velocity_change(&self, f: &[f64]) -> Vec<f64> {
        let mut dv = vec![0.0; self.dofs];
        let mut z = Vec::new();
        for tree in &self.trees {
            let n = tree.columns.len();
            z.clear();
            z.resize(n, 0.0);
            for &(i, offset) in &tree.rows {
                if f[i] != 0.0 {
                    for (zc, &s) in z.iter_mut().zip(&self.segments[offset..offset + n]) {
                        *zc += f[i] * s;
                    }
                }
            }
            lower_transpose_solve(tree.factor.l_dirty().as_slice(), &mut z);
            for (&c, &x) in tree.columns.iter().zip(&z) {
                dv[c] = x;
            }
        }
        dv
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{Inertia, SplitMix64, Vec3, SE3};
    use crate::model::{Body, WORLD};
    use crate::{Joint, ModelBuilder};

    /// Two free boxes and a two-link arm on a welded base, bodies declared interleaved so
    /// that the trees' dofs interleave in model order.
    fn interleaved() -> crate::Model {
        let mut b = ModelBuilder::new("interleaved");
        let inertia = |s: f64| Inertia::solid_box(1.0 + s, Vec3::new(0.1 + s, 0.2, 0.3 - s / 2.0));
        b.add_body(WORLD, Joint::fixed("weld"), Body::new("base", inertia(0.0)));
        b.add_body("base", Joint::revolute("a1", Vec3::z()), Body::new("l1", inertia(0.1)));
        b.add_body(WORLD, Joint::free("free1"), Body::new("box1", inertia(0.2)));
        b.add_body(
            "l1",
            Joint::revolute("a2", Vec3::y()).with_placement(SE3::from_translation(Vec3::x())),
            Body::new("l2", inertia(0.3)),
        );
        b.add_body(WORLD, Joint::free("free2"), Body::new("box2", inertia(0.4)));
        b.build().unwrap()
    }

    #[test]
    fn the_tree_by_tree_delassus_equals_the_dense_product() {
        let model = interleaved();
        let trees = Trees::new(&model);
        assert_eq!(trees.dofs.len(), 3);
        let nv = trees.of_dof.len();
        // M̃: a random SPD block per tree.
        let mut rng = SplitMix64::new(7);
        let mut inertia = TreeInertia::default();
        inertia.reset(&trees);
        for block in &mut inertia.blocks {
            let n = block.nrows();
            let g = DMatrix::from_fn(n, n, |_, _| rng.range(-1.0, 1.0));
            *block = &g * g.transpose() + DMatrix::identity(n, n);
        }
        // Rows on one tree, on two trees, twice on one tree (a self-contact), and on none.
        let row_trees = [[0, usize::MAX], [0, 1], [1, 2], [2, usize::MAX], [usize::MAX, usize::MAX], [2, 0], [1, 1]];
        let mut entries = Vec::new();
        for (r, pair) in row_trees.iter().enumerate() {
            for &t in pair.iter().filter(|&&t| t != usize::MAX) {
                for &d in &trees.dofs[t] {
                    entries.push((r, d, rng.range(-1.0, 1.0) / 2.0));
                }
            }
        }
        let mut jd = DMatrix::zeros(row_trees.len(), nv);
        for (r, c, v) in entries {
            jd[(r, c)] += v;
        }
        let j = SparseRows::from_dense(&jd);
        let rows: Vec<usize> = (0..row_trees.len()).collect();
        let dofs: Vec<usize> = (0..nv).collect();
        let mut slot = vec![usize::MAX; trees.dofs.len()];
        let island = IslandDelassus::new(&trees, &inertia, &j, &rows, &row_trees, &dofs, &mut slot).unwrap();
        assert!(slot.iter().all(|&s| s == usize::MAX), "the scratch is left clean");
        let m = inertia.to_dense(&trees);
        let minv_jt = m.clone().cholesky().unwrap().solve(&jd.transpose());
        let expected = &jd * &minv_jt;
        let mut a = DMatrix::zeros(0, 0);
        island.delassus_into(&mut a);
        assert!((&a - &expected).amax() <= 1e-13 * expected.amax(), "{a} vs {expected}");
        assert_eq!(a, a.transpose(), "exactly symmetric");
        let l = island.factor();
        assert!((&l * l.transpose() - &a).amax() <= 1e-13 * expected.amax());
        let f: Vec<f64> = (0..rows.len()).map(|_| rng.range(-1.0, 1.0)).collect();
        let dv = island.velocity_change(&f);
        let expected_dv = &minv_jt * nalgebra::DVector::from_column_slice(&f);
        assert!((nalgebra::DVector::from_vec(dv) - &expected_dv).amax() <= 1e-13 * expected_dv.amax());
    }

    #[test]
    fn a_tree_whose_inertia_is_not_positive_definite_is_an_error() {
        let model = interleaved();
        let trees = Trees::new(&model);
        let mut inertia = TreeInertia::default();
        inertia.reset(&trees);
        for block in &mut inertia.blocks {
            block.fill_with_identity();
        }
        inertia.blocks[1][(2, 2)] = -1.0;
        let mut jd = DMatrix::zeros(1, trees.of_dof.len());
        jd[(0, trees.dofs[1][0])] = 1.0;
        let j = SparseRows::from_dense(&jd);
        let dofs: Vec<usize> = (0..trees.of_dof.len()).collect();
        let mut slot = vec![usize::MAX; trees.dofs.len()];
        let err = IslandDelassus::new(&trees, &inertia, &j, &[0], &[[1, usize::MAX]], &dofs, &mut slot)
            .err()
            .expect("an error");
        assert!(err.to_string().contains("not positive definite"), "{err}");
    }
}
