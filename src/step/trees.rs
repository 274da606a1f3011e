//! The trees of a model and `M̃` by trees.
//!
//! `M̃ = M + diag(armature + h·damping)` is block-diagonal over the *trees* of the model
//! (the subtrees hanging from bodies welded to the world: their degrees of freedom share
//! no composite inertia, Featherstone 2008, §6.2 — a dof couples only to the dofs of its
//! ancestors and descendants). This module holds the trees ([`Trees`]), the blocks of
//! `M̃` ([`TreeInertia`]), their Cholesky factors ([`TreeCholesky`]) and the triangular
//! solves on one tree's factor that the constraint stage and the backward pass share.

use nalgebra::{Cholesky, DMatrix, DVector, Dyn};

use crate::error::{Error, Result};
use crate::Model;

/// The trees of a model: the tree of each dof (the topmost moving ancestor of its body,
/// numbered densely) and the dofs of each tree, in increasing order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Trees {
    /// The tree of each body (`None`: welded to the world).
    pub of_body: Vec<Option<usize>>,
    /// The tree of each dof.
    pub of_dof: Vec<usize>,
    /// The dofs of each tree, increasing.
    pub dofs: Vec<Vec<usize>>,
    /// The index of each dof in its tree's list ([`Trees::dofs`]).
    pub local: Vec<usize>,
}

impl Trees {
    /// The trees of `model`.
    pub fn new(model: &Model) -> Trees {
        let nb = model.nbodies();
        let mut root = vec![usize::MAX; nb];
        let mut number = vec![usize::MAX; nb];
        let mut dofs: Vec<Vec<usize>> = Vec::new();
        // Parents come before their children.
        for b in 0..nb {
            let inherited = model.parent(b).map_or(usize::MAX, |p| root[p]);
            root[b] = if inherited == usize::MAX && model.joints()[b].nv() > 0 { b } else { inherited };
            if root[b] == b {
                number[b] = dofs.len();
                dofs.push(Vec::new());
            }
        }
        let of_body: Vec<Option<usize>> = root.iter().map(|&r| (r != usize::MAX).then(|| number[r])).collect();
        let of_dof: Vec<usize> = model.dof_body().iter().map(|&b| number[root[b]]).collect();
        let mut local = vec![0; of_dof.len()];
        for (k, &t) in of_dof.iter().enumerate() {
            local[k] = dofs[t].len();
            dofs[t].push(k);
        }
        Trees { of_body, of_dof, dofs, local }
    }
}

/// `M̃ = M + diag(armature + h·damping)` by trees: one dense block per tree over its
/// dofs (in the order of [`Trees::dofs`]); the entries between trees are zero. Its
/// storage is the sum of the squares of the trees' sizes, not `nv²` (1,000 free bodies:
/// 36,000 entries instead of 36 million).
#[derive(Clone, Debug, Default)]
pub(crate) struct TreeInertia {
    /// The block of each tree.
    pub blocks: Vec<DMatrix<f64>>,
}

impl TreeInertia {
    /// Sizes the blocks for `trees`, zeroed, reusing their storage.
    pub fn reset(&mut self, trees: &Trees) {
        self.blocks.resize_with(trees.dofs.len(), || DMatrix::zeros(0, 0));
        for (block, dofs) in self.blocks.iter_mut().zip(&trees.dofs) {
            crate::math::reshape(block, dofs.len(), dofs.len());
        }
    }

    /// The entry `(a, b)` of `M̃` (dofs `a`, `b`).
    pub fn get(&self, trees: &Trees, a: usize, b: usize) -> f64 {
        let t = trees.of_dof[a];
        if trees.of_dof[b] == t {
            self.blocks[t][(trees.local[a], trees.local[b])]
        } else {
            0.0
        }
    }

    /// The block `M̃_{DD}` over the dofs `dofs`.
    pub fn block(&self, trees: &Trees, dofs: &[usize]) -> DMatrix<f64> {
        let n = dofs.len();
        DMatrix::from_fn(n, n, |r, c| self.get(trees, dofs[r], dofs[c]))
    }

    /// The blocks of a dense `M̃` (whose entries between trees must be zero).
    #[cfg(test)]
    pub fn from_dense(trees: &Trees, m: &DMatrix<f64>) -> TreeInertia {
        TreeInertia {
            blocks: trees.dofs.iter().map(|d| DMatrix::from_fn(d.len(), d.len(), |r, c| m[(d[r], d[c])])).collect(),
        }
    }

    /// The dense `nv × nv` matrix (for the solvers that take `M̃` whole).
    pub fn to_dense(&self, trees: &Trees) -> DMatrix<f64> {
        let all: Vec<usize> = (0..trees.of_dof.len()).collect();
        self.block(trees, &all)
    }
}

/// The Cholesky factors of `M̃` by trees ([`TreeInertia`]): `M̃_t = C_t C_tᵀ` per tree,
/// so `M̃ = C Cᵀ` with `C` block-diagonal. Solves with `M̃` and `C` cost the sum of the
/// squares of the trees' sizes per right-hand side instead of `nv²`, and the factors the
/// sum of their cubes instead of `nv³`. The arithmetic on a tree's entries is that of the
/// dense factorization of `M̃` (whose other entries are zero), in the same order.
#[derive(Clone, Debug, Default)]
pub(crate) struct TreeCholesky {
    /// One factor per tree (`None` before [`TreeCholesky::refactor`]).
    factors: Vec<Option<Cholesky<f64, Dyn>>>,
    /// Scratch: a tree's rows of one right-hand side.
    scratch: std::cell::RefCell<Vec<f64>>,
}

impl TreeCholesky {
    /// Factors the blocks of `inertia` in place of the previous factors, reusing their
    /// storage. Errors: a block that is not positive definite.
    pub fn refactor(&mut self, inertia: &TreeInertia) -> Result<()> {
        self.factors.resize_with(inertia.blocks.len(), || None);
        for (factor, block) in self.factors.iter_mut().zip(&inertia.blocks) {
            let mut m = factor.take().map_or_else(|| DMatrix::zeros(0, 0), |c| c.unpack());
            crate::math::reshape_for_overwrite(&mut m, block.nrows(), block.ncols());
            m.copy_from(block);
            *factor = Some(Cholesky::new(m).ok_or_else(|| Error::Numerical {
                algorithm: "contact stage",
                detail: "the effective inertia M + diag(armature + h·damping) is not positive definite".into(),
            })?);
        }
        Ok(())
    }

    /// Applies `M̃⁻¹` (or `C⁻¹` with `lower`) to the `ncols` columns of the column-major
    /// `nv × ncols` array `x`, tree by tree and column by column, in place. A column whose
    /// entries on a tree are all zero stays zero there and is skipped (the columns of the
    /// backward pass's right-hand sides are mostly zero outside one island). The
    /// substitutions are nalgebra's `Cholesky::solve_mut` and
    /// `solve_lower_triangular_mut`, operation for operation (same results, bit for bit),
    /// without gathering a tree's rows into a matrix.
    fn apply(&self, trees: &Trees, x: &mut [f64], ncols: usize, lower: bool) -> bool {
        let nv = trees.of_dof.len();
        debug_assert_eq!(x.len(), nv * ncols);
        assert_eq!(self.factors.len(), trees.dofs.len(), "M̃ factored by trees before use");
        if nv == 0 {
            return true;
        }
        let mut y = self.scratch.borrow_mut();
        let mut ok = true;
        for (factor, dofs) in self.factors.iter().zip(&trees.dofs) {
            let l = factor.as_ref().expect("factored before use").l_dirty();
            let n = dofs.len();
            let l = l.as_slice();
            if lower && (0..n).any(|i| l[i * n + i] == 0.0) {
                ok = false; // C singular: this tree's rows are left as they are
                continue;
            }
            y.clear();
            y.resize(n, 0.0);
            for col in x.chunks_exact_mut(nv) {
                let mut zero = true;
                for (yk, &d) in y.iter_mut().zip(dofs) {
                    *yk = col[d];
                    zero &= *yk == 0.0;
                }
                if zero {
                    continue;
                }
                lower_solve(l, &mut y);
                if !lower {
                    lower_transpose_solve(l, &mut y);
                }
                for (yk, &d) in y.iter().zip(dofs) {
                    col[d] = *yk;
                }
            }
        }
        ok
    }

    /// `x ← M̃⁻¹ x` (`x`: `nv` rows).
    pub fn solve_mut<X: ColumnMajor>(&self, trees: &Trees, x: &mut X) {
        let (data, k) = x.column_major();
        self.apply(trees, data, k, false);
    }

    /// `M̃⁻¹ x` (`x`: `nv` rows).
    pub fn solve<X: ColumnMajor + Clone>(&self, trees: &Trees, x: &X) -> X {
        let mut out = x.clone();
        self.solve_mut(trees, &mut out);
        out
    }

    /// `x ← C⁻¹ x` (`x`: `nv` rows); false where a diagonal entry of `C` is zero.
    pub fn solve_lower_mut<X: ColumnMajor>(&self, trees: &Trees, x: &mut X) -> bool {
        let (data, k) = x.column_major();
        self.apply(trees, data, k, true)
    }

    /// `x ← C⁻¹ x` over the dofs `dofs` only: `x` holds `dofs.len()` rows per column,
    /// column-major. `dofs` must be whole trees in increasing order (the dofs of an
    /// island or a clamping part); false where they are not, or where `C` is singular
    /// on them (then `x` is left partly solved).
    pub fn solve_lower_on(&self, trees: &Trees, dofs: &[usize], x: &mut [f64]) -> bool {
        let n = dofs.len();
        assert_eq!(self.factors.len(), trees.dofs.len(), "M̃ factored by trees before use");
        if n == 0 {
            return true;
        }
        debug_assert_eq!(x.len() % n, 0);
        let mut start = 0;
        while start < n {
            let t = trees.of_dof[dofs[start]];
            let tree = &trees.dofs[t];
            let end = start + tree.len();
            if end > n || dofs[start..end] != tree[..] {
                return false;
            }
            let l = self.factors[t].as_ref().expect("factored before use").l_dirty();
            let l = l.as_slice();
            if (0..tree.len()).any(|i| l[i * tree.len() + i] == 0.0) {
                return false;
            }
            for col in x.chunks_exact_mut(n) {
                lower_solve(l, &mut col[start..end]);
            }
            start = end;
        }
        true
    }
}

/// `y ← L⁻¹ y` for the lower triangle of the column-major n × n `l` (n = `y.len()`), by
/// columns: nalgebra's `solve_lower_triangular_vector_unchecked_mut`, in its order.
#[inline]
pub(crate) fn lower_solve(l: &[f64], y: &mut [f64]) {
    let n = y.len();
    for i in 0..n {
        let coeff = y[i] / l[i * n + i];
        y[i] = coeff;
        for (yk, lk) in y[i + 1..].iter_mut().zip(&l[i * n + i + 1..(i + 1) * n]) {
            *yk += -coeff * lk;
        }
    }
}

/// `y ← L⁻ᵀ y` for the lower triangle of the column-major n × n `l`, by dot products:
/// nalgebra's `ad_solve_lower_triangular_unchecked_mut` (its dot product's eight
/// accumulators included), in its order.
#[inline]
pub(crate) fn lower_transpose_solve(l: &[f64], y: &mut [f64]) {
    let n = y.len();
    for i in (0..n).rev() {
        let dot = unrolled_dot(&l[i * n + i + 1..(i + 1) * n], &y[i + 1..]);
        y[i] = (y[i] - dot) / l[i * n + i];
    }
}

/// The dot product of nalgebra's `dotx` for dynamic sizes: eight accumulators over
/// blocks of eight, combined pairwise, then the rest in order.
#[inline]
pub(crate) fn unrolled_dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let blocks = a.len() / 8;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut res = 0.0;
    res += acc[0] + acc[4];
    res += acc[1] + acc[5];
    res += acc[2] + acc[6];
    res += acc[3] + acc[7];
    for (x, y) in a[8 * blocks..].iter().zip(&b[8 * blocks..]) {
        res += x * y;
    }
    res
}

/// A dense matrix or vector as its column-major entries and its number of columns.
pub(crate) trait ColumnMajor {
    /// The entries, column after column, and the number of columns.
    fn column_major(&mut self) -> (&mut [f64], usize);
}

impl ColumnMajor for DMatrix<f64> {
    fn column_major(&mut self) -> (&mut [f64], usize) {
        let k = self.ncols();
        (self.as_mut_slice(), k)
    }
}

impl ColumnMajor for DVector<f64> {
    fn column_major(&mut self) -> (&mut [f64], usize) {
        (self.as_mut_slice(), 1)
    }
}
