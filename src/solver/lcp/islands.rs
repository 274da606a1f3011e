//! Splitting a boxed LCP into independent islands: rows `i` and `j` are coupled when `A_ij ≠ 0`,
//! `A_ji ≠ 0`, or one is a friction row whose bounds follow the other (its normal). Islands are the
//! connected components (union–find); each is solved on its own sub-problem and scattered back. No
//! equations of the paper: the split is exact because uncoupled rows do not interact in `w = A f + b` nor
//! in the bounds.

use nalgebra::{DMatrix, DVector};

use super::problem::{BoxedLcp, RowBound};

/// The rows of each island, in increasing order; islands ordered by their first row.
///
/// A depth-first search over the rows not yet reached: each row taken from the stack scans only
/// those, so a dense island of `m` rows costs one pass over `m` pairs (the first row reaches them
/// all) instead of the `m²/2` pairs of a scan of every pair, and independent islands cost the pairs
/// between their rows and the rows still unreached.
pub fn split(problem: &BoxedLcp) -> Vec<Vec<usize>> {
    let m = problem.b.len();
    let a = (problem.a.nrows() == m && problem.a.ncols() == m).then_some(&problem.a);
    // The normal of each friction row (`usize::MAX`: none).
    let mut normal_of = vec![usize::MAX; m];
    for (i, bound) in problem.bounds.iter().enumerate().take(m) {
        if let RowBound::Friction { normal, .. } = *bound {
            if normal < m {
                normal_of[i] = normal;
            }
        }
    }
    let coupled = |i: usize, j: usize| {
        normal_of[i] == j || normal_of[j] == i || a.is_some_and(|a| a[(i, j)] != 0.0 || a[(j, i)] != 0.0)
    };
    let mut island = vec![usize::MAX; m];
    let mut unreached: Vec<usize> = (0..m).collect();
    let mut stack = Vec::new();
    let mut count = 0;
    for s in 0..m {
        if island[s] != usize::MAX {
            continue;
        }
        island[s] = count;
        stack.push(s);
        while let Some(u) = stack.pop() {
            unreached.retain(|&v| {
                if island[v] != usize::MAX {
                    return false;
                }
                if coupled(u, v) {
                    island[v] = count;
                    stack.push(v);
                    return false;
                }
                true
            });
        }
        count += 1;
    }
    let mut islands: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (i, &k) in island.iter().enumerate() {
        islands[k].push(i);
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
    // A principal submatrix of a positive definite matrix is positive definite.
    BoxedLcp { a, b, bounds, factor, positive_definite: problem.positive_definite }
}
