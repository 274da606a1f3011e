//! Splitting a boxed LCP into independent islands: rows `i` and `j` are coupled when `A_ij ≠ 0`,
//! `A_ji ≠ 0`, or one is a friction row whose bounds follow the other (its normal). Islands are the
//! connected components (union–find); each is solved on its own sub-problem and scattered back. No
//! equations of the paper: the split is exact because uncoupled rows do not interact in `w = A f + b` nor
//! in the bounds.

use nalgebra::{DMatrix, DVector};

use super::problem::{BoxedLcp, RowBound};

/// The rows of each island, in increasing order; islands ordered by their first row.
pub fn split(problem: &BoxedLcp) -> Vec<Vec<usize>> {
    let m = problem.b.len();
    let mut parent: Vec<usize> = (0..m).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let join = |parent: &mut Vec<usize>, i: usize, j: usize| {
        let (ri, rj) = (root(parent, i), root(parent, j));
        if ri != rj {
            let (lo, hi) = if ri < rj { (ri, rj) } else { (rj, ri) };
            parent[hi] = lo;
        }
    };
    if problem.a.nrows() == m && problem.a.ncols() == m {
        // Each pair once: the components do not depend on the order of the joins.
        for j in 0..m {
            for i in j + 1..m {
                if problem.a[(i, j)] != 0.0 || problem.a[(j, i)] != 0.0 {
                    join(&mut parent, i, j);
                }
            }
        }
    }
    for (i, bound) in problem.bounds.iter().enumerate().take(m) {
        if let RowBound::Friction { normal, .. } = *bound {
            if normal < m {
                join(&mut parent, i, normal);
            }
        }
    }
    let mut slot = vec![usize::MAX; m];
    let mut islands: Vec<Vec<usize>> = Vec::new();
    for i in 0..m {
        let r = root(&mut parent, i);
        if slot[r] == usize::MAX {
            slot[r] = islands.len();
            islands.push(Vec::new());
        }
        islands[slot[r]].push(i);
    }
    islands
}

/// The sub-problem of the rows `rows` (friction normals renumbered). `rows` must come from [`split`] on
/// a valid problem, so every friction normal lies in the same island.
pub fn extract(problem: &BoxedLcp, rows: &[usize]) -> BoxedLcp {
    let k = rows.len();
    let mut local = std::collections::HashMap::with_capacity(k);
    for (p, &i) in rows.iter().enumerate() {
        local.insert(i, p);
    }
    let a = DMatrix::from_fn(k, k, |r, c| problem.a[(rows[r], rows[c])]);
    let b = DVector::from_fn(k, |r, _| problem.b[rows[r]]);
    let bounds = rows
        .iter()
        .map(|&i| match problem.bounds[i] {
            RowBound::Friction { normal, mu } => {
                RowBound::Friction { normal: local.get(&normal).copied().unwrap_or(usize::MAX), mu }
            }
            other => other,
        })
        .collect();
    let factor = problem.factor.as_ref().map(|l| l.select_rows(rows.iter()));
    BoxedLcp { a, b, bounds, factor }
}
