//! The sparse `LᵀDL` factorization of a joint-space inertia matrix (Featherstone, *Rigid
//! Body Dynamics Algorithms*, 2008, §6.5, Tables 6.3 and 6.4): branch-induced sparsity.
//!
//! With the dofs numbered so that every dof's parent `λ(k)` comes before it (the previous
//! dof of its joint, or the last dof of its body's parent joint), `H[k][i] ≠ 0` only when
//! i is k, an ancestor of k, or a descendant. Factoring from the last dof back,
//!
//! ```text
//! for k = n−1 … 0:  for each ancestor i of k:  a = H[k][i] / H[k][k];
//!                   for each ancestor j of i, and i itself:  H[i][j] −= a H[k][j];   H[k][i] = a
//! ```
//!
//! leaves `H = Lᵀ D L` with D the diagonal and L unit lower triangular, `L[k][i]` nonzero
//! only for ancestors i of k: no fill-in, O(n d²) work for depth d (a dense Cholesky is
//! O(n³)). A solve `H x = b` is `Lᵀ z = b` (from the last dof back, each dof pushing onto
//! its ancestors), `w = D⁻¹ z`, `L x = w` (from the first dof on, each dof pulling from its
//! ancestors): O(n d). Free bodies are their own branches, so a world of n free bodies
//! factors and solves in O(n). This is the building block of the per-island constraint
//! stage (issue #19).

use crate::error::{Error, Result};
use crate::Model;
use nalgebra::DMatrix;

/// `λ(k)` of a dof without a parent dof.
const ROOT: usize = usize::MAX;

/// The `LᵀDL` factors of a joint-space inertia matrix of one model (module doc), in
/// compact storage: per dof its pivot and the entries of its row of L at its ancestors,
/// nearest first, so that the factors take O(n d) memory and time.
#[derive(Clone, Debug)]
pub struct InertiaFactor {
    /// `λ(k)` per dof ([`ROOT`] for none).
    parent: Vec<usize>,
    /// Row k of L sits at `lower[start[k]..start[k + 1]]`, one entry per ancestor of k
    /// (`λ(k)`, `λ(λ(k))`, …).
    start: Vec<usize>,
    lower: Vec<f64>,
    /// The ancestor dof of each entry of `lower` (`λ(k)`, `λ(λ(k))`, … for row k), so
    /// that the loops read them in sequence instead of walking `parent`.
    anc: Vec<usize>,
    /// D, the pivots.
    diag: Vec<f64>,
}

impl InertiaFactor {
    /// Storage for the inertia matrices of `model` (nv × nv).
    pub fn new(model: &Model) -> InertiaFactor {
        let nv = model.nv();
        let mut parent = vec![ROOT; nv];
        for (b, joint) in model.joints.iter().enumerate() {
            let v0 = model.v_idx[b];
            // The last dof of the nearest ancestor body that has dofs.
            let mut up = model.parents[b];
            let mut above = ROOT;
            while let Some(p) = up {
                let n = model.joints[p].nv();
                if n > 0 {
                    above = model.v_idx[p] + n - 1;
                    break;
                }
                up = model.parents[p];
            }
            for k in v0..v0 + joint.nv() {
                parent[k] = if k == v0 { above } else { k - 1 };
            }
        }
        let mut depth = vec![0usize; nv];
        let mut start = vec![0usize; nv + 1];
        for k in 0..nv {
            depth[k] = if parent[k] == ROOT { 0 } else { depth[parent[k]] + 1 };
            start[k + 1] = start[k] + depth[k];
        }
        let mut anc = Vec::with_capacity(start[nv]);
        for k in 0..nv {
            let mut i = parent[k];
            while i != ROOT {
                anc.push(i);
                i = parent[i];
            }
        }
        InertiaFactor { parent, lower: vec![0.0; start[nv]], anc, start, diag: vec![0.0; nv] }
    }

    /// The number of dofs.
    pub fn nv(&self) -> usize {
        self.parent.len()
    }

    /// Factors `m` (the symmetric joint-space inertia of the model, or that matrix plus a
    /// diagonal; only its entries at (dof, ancestor) are read). Entries outside the branch
    /// structure are ignored: the matrix must have it (every joint-space inertia of the
    /// model does). Errors on a wrong size, a non-finite entry or a pivot that is not
    /// positive (the matrix is not positive definite).
    pub fn factor(&mut self, m: &DMatrix<f64>) -> Result<()> {
        let n = self.nv();
        if m.shape() != (n, n) {
            return Err(Error::Dimension { what: "inertia matrix", expected: n, got: m.nrows() });
        }
        for k in 0..n {
            let mut i = k;
            let mut p = 0;
            while i != ROOT {
                let x = m[(k, i)];
                if !x.is_finite() {
                    return Err(Error::NonFinite { what: "inertia matrix", index: k * n + i, value: x });
                }
                if i == k {
                    self.diag[k] = x;
                } else {
                    self.lower[self.start[k] + p] = x;
                    p += 1;
                }
                i = self.parent[i];
            }
        }
        for k in (0..n).rev() {
            let d = self.diag[k];
            if d <= 0.0 || !d.is_finite() {
                return Err(Error::Numerical {
                    algorithm: "inertia LᵀDL factorization",
                    detail: format!("pivot {d:e} at dof {k}: the matrix is not positive definite"),
                });
            }
            let sk = self.start[k];
            let len_k = self.start[k + 1] - sk;
            for p in 0..len_k {
                let i = self.anc[sk + p];
                // H[i][j] −= a H[k][j] for j = i and the ancestors of i: the ancestors of i
                // are k's ancestors after position p.
                let hki = self.lower[sk + p];
                let a = hki / d;
                self.diag[i] -= a * hki;
                let si = self.start[i];
                for q in 0..self.start[i + 1] - si {
                    self.lower[si + q] -= a * self.lower[sk + p + 1 + q];
                }
                self.lower[sk + p] = a;
            }
        }
        Ok(())
    }

    /// Solves `M x = b` in place with the factors (`x` holds b on entry).
    pub fn solve_in_place(&self, x: &mut [f64]) {
        let n = self.nv();
        assert_eq!(x.len(), n, "InertiaFactor::solve_in_place: length");
        // Lᵀ z = b: the last dof first, each pushing onto its ancestors.
        for k in (0..n).rev() {
            let zk = x[k];
            if zk == 0.0 {
                continue;
            }
            let r = self.start[k]..self.start[k + 1];
            for (l, &i) in self.lower[r.clone()].iter().zip(&self.anc[r]) {
                x[i] -= l * zk;
            }
        }
        // D w = z, then L x = w: the first dof first, each pulling from its ancestors.
        for k in 0..n {
            let mut acc = x[k] / self.diag[k];
            let r = self.start[k]..self.start[k + 1];
            for (l, &i) in self.lower[r.clone()].iter().zip(&self.anc[r]) {
                acc -= l * x[i];
            }
            x[k] = acc;
        }
    }

    /// Writes `M⁻¹` into `out` (resized to nv × nv if needed), with the branch
    /// structure: `M⁻¹ = L⁻¹ X` for `X = D⁻¹ L⁻ᵀ`. Column j of `L⁻ᵀ` solves `Lᵀ z = e_j`
    /// and is nonzero only at j and its ancestors (O(d²) each); then `L M⁻¹ = X` gives
    /// the rows of `M⁻¹` in dof order, row k being row k of X less `L[k][i]` times the
    /// finished row i for each ancestor i of k (O(n d) each, contiguous: rows are stored
    /// as columns, `M⁻¹` being symmetric). O(n² d) in all, where a dense inverse is O(n³).
    pub fn inverse_into(&self, out: &mut DMatrix<f64>) {
        let n = self.nv();
        if out.shape() != (n, n) {
            *out = DMatrix::zeros(n, n);
        } else {
            out.as_mut_slice().fill(0.0);
        }
        let m = out.as_mut_slice();
        // X: for each j, z = L⁻ᵀ e_j on the path j, λ(j), …; row k of X at column j is
        // z_k / D_k, stored in column k (that is, the transpose).
        let mut z = vec![0.0; n];
        for j in 0..n {
            z[j] = 1.0;
            let mut k = j;
            while k != ROOT {
                let zk = z[k];
                let r = self.start[k]..self.start[k + 1];
                for (l, &i) in self.lower[r.clone()].iter().zip(&self.anc[r]) {
                    z[i] -= l * zk;
                }
                m[k * n + j] = zk / self.diag[k];
                z[k] = 0.0;
                k = self.parent[k];
            }
        }
        // Row k of M⁻¹ (column k of `out`) −= L[k][i] · row i, ancestors i < k finished.
        // By symmetry only the entries j ≥ k are needed (X is zero below its diagonal,
        // and the finished rows' entries j ≥ k > i are themselves computed): the others
        // are mirrored after.
        for k in 0..n {
            let r = self.start[k]..self.start[k + 1];
            let (done, rest) = m.split_at_mut(k * n);
            let row = &mut rest[k..n];
            for (&l, &i) in self.lower[r.clone()].iter().zip(&self.anc[r]) {
                for (x, y) in row.iter_mut().zip(&done[i * n + k..(i + 1) * n]) {
                    *x -= l * y;
                }
            }
        }
        for k in 0..n {
            for j in 0..k {
                m[k * n + j] = m[j * n + k];
            }
        }
    }

    /// Solves `M X = B` in place for every column of `b`.
    pub fn solve_columns(&self, b: &mut DMatrix<f64>) {
        let n = self.nv();
        assert_eq!(b.nrows(), n, "InertiaFactor::solve_columns: rows");
        for c in 0..b.ncols() {
            self.solve_in_place(&mut b.as_mut_slice()[c * n..(c + 1) * n]);
        }
    }
}
