//! The constraint stage per island: the rows of a step split into groups that share no
//! degree of freedom through `M̃⁻¹`, each solved over its own degrees of freedom.
//!
//! `M̃ = M + diag(armature + h·damping)` is block-diagonal over the *trees* of the model
//! (the subtrees hanging from bodies welded to the world: their degrees of freedom share
//! no composite inertia, Featherstone 2008, §6.2 — a dof couples only to the dofs of its
//! ancestors and descendants). A row couples the trees its Jacobian touches; the
//! islands are the connected components of trees and rows (union–find). With `D_I` the
//! dofs of island `I` (the dofs of its trees, in model order) and `R_I` its rows,
//!
//! ```text
//! A_I = J_{R_I D_I} M̃_{D_I D_I}⁻¹ J_{R_I D_I}ᵀ + R_I,    Δv_{D_I} = M̃_{D_I D_I}⁻¹ J_{R_I D_I}ᵀ f_{R_I}
//! ```
//!
//! which is the island's block of `J M̃⁻¹ Jᵀ` exactly (the other blocks are zero), so the
//! LCP of the step is the independent LCPs of its islands. `A_I` itself is assembled tree
//! by tree ([`super::island_delassus`]): its cost is the sum over the island's trees
//! `t` of `n_t³ + |R_t| n_t² + |R_t|² n_t` (`R_t`: the rows acting on tree `t`), not
//! `|D_I|³ + |R_I|² |D_I|`. The trees (`Trees`, `M̃` by trees) are in [`super::trees`].

use nalgebra::{DMatrix, DVector};

use super::island_delassus::IslandDelassus;
use super::trees::{TreeInertia, Trees};
use crate::constraint::SparseRows;
use crate::error::Result;
use crate::solver::lcp::{solve_validated, BoxedLcp, LcpOptions, LcpSolution, LcpStats, RowBound, RowState, SolvePath};
use crate::solver::ncp::mode::SlidingCone;
use crate::solver::ncp::NcpSolver;

/// One island: its rows (increasing) and its dofs (increasing).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Island {
    /// The rows.
    pub rows: Vec<usize>,
    /// The dofs.
    pub dofs: Vec<usize>,
}

/// The root of `i` in the union–find forest `parent` (paths halved on the way).
pub(crate) fn root(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

/// Joins the sets of `i` and `k` in `parent`; the lower root stays the root.
pub(crate) fn join(parent: &mut [usize], i: usize, k: usize) {
    let (ri, rk) = (root(parent, i), root(parent, k));
    if ri != rk {
        let (lo, hi) = if ri < rk { (ri, rk) } else { (rk, ri) };
        parent[hi] = lo;
    }
}

/// The islands of rows that act on the trees `row_trees` (per row, up to two trees;
/// `usize::MAX` for none), friction rows joined to their normal rows. A row on no tree
/// is an island without dofs. Rows marked in `waiting` (empty: none) belong to no
/// island. Islands are ordered by their first row.
pub(crate) fn islands(trees: &Trees, row_trees: &[[usize; 2]], bounds: &[RowBound], waiting: &[bool]) -> Vec<Island> {
    let m = row_trees.len();
    let nt = trees.dofs.len();
    // Union–find over rows (0..m) and trees (m..m + nt).
    let mut parent: Vec<usize> = (0..m + nt).collect();
    let waits = |r: usize| waiting.get(r).copied().unwrap_or(false);
    for (r, pair) in row_trees.iter().enumerate().filter(|&(r, _)| !waits(r)) {
        for &t in pair.iter().filter(|&&t| t < nt) {
            join(&mut parent, r, m + t);
        }
    }
    for (r, bound) in bounds.iter().enumerate().filter(|&(r, _)| !waits(r)) {
        if let RowBound::Friction { normal, .. } = *bound {
            if normal < m {
                join(&mut parent, r, normal);
            }
        }
    }
    let mut slot = vec![usize::MAX; m + nt];
    let mut out: Vec<Island> = Vec::new();
    for r in (0..m).filter(|&r| !waits(r)) {
        let k = root(&mut parent, r);
        if slot[k] == usize::MAX {
            slot[k] = out.len();
            out.push(Island::default());
        }
        out[slot[k]].rows.push(r);
    }
    for (t, dofs) in trees.dofs.iter().enumerate() {
        let k = root(&mut parent, m + t);
        if slot[k] != usize::MAX {
            out[slot[k]].dofs.extend_from_slice(dofs);
        }
    }
    for island in &mut out {
        island.dofs.sort_unstable();
    }
    out
}

/// The rows of a step's LCP over the dofs: `w = J Δv + b + R f`, `M̃ Δv = Jᵀ f`.
pub(crate) struct RowSystem<'a> {
    /// The row Jacobian (`m × nv`); row `r` is zero outside the dofs of the trees
    /// `row_trees[r]`.
    pub j: &'a SparseRows,
    /// The trees each row acts on (up to two; `usize::MAX` for none).
    pub row_trees: &'a [[usize; 2]],
    /// The free relative velocities `b` (`m`).
    pub b: &'a DVector<f64>,
    /// The row bounds (`m`).
    pub bounds: &'a [RowBound],
    /// The diagonal regularization `R` (`m`).
    pub regularization: &'a [f64],
    /// Rows held at `f = 0` outside the LCP (`m`, or empty for none): the caller checks
    /// their `w` in the solution.
    pub waiting: &'a [bool],
}

/// The solution of a [`RowSystem`]: the LCP solution over all rows (islands merged) and
/// the velocity change `Δv = M̃⁻¹ Jᵀ f` (`nv`).
pub(crate) struct IslandSolution {
    /// Forces, relative velocities, states and statistics over all rows.
    pub lcp: LcpSolution,
    /// `Δv`.
    pub dv: DVector<f64>,
    /// The NCP solver's sliding cones (their rows numbered over all rows; empty for the
    /// LCP).
    pub sliding: Vec<SlidingCone>,
}

/// The solver of each island of a [`RowSystem`].
#[derive(Clone, Copy)]
pub(crate) enum IslandSolver<'a> {
    /// The boxed LCP, with optional warm-start states over all rows.
    Lcp { options: &'a LcpOptions, guess: Option<&'a [RowState]> },
    /// The non-smooth Newton NCP solver (isotropic friction cones), started from the
    /// given forces over all rows (zero when `None`).
    Ncp { solver: &'a NcpSolver, start: Option<&'a [f64]> },
}

/// Solves `system` island by island with `M̃ = inertia` (by trees). `guess`: warm-start
/// states over all rows. The row Jacobian must be zero outside the trees of each row
/// (checked in debug builds).
///
/// Errors: an island's block of `M̃` that is not positive definite, and the LCP
/// solver's errors.
pub(crate) fn solve_islands(
    trees: &Trees,
    inertia: &TreeInertia,
    system: &RowSystem,
    solver: IslandSolver,
) -> Result<IslandSolution> {
    let guess = match solver {
        IslandSolver::Lcp { guess, .. } => guess,
        IslandSolver::Ncp { .. } => None,
    };
    let (m, nv) = system.j.shape();
    let mut f = DVector::zeros(m);
    let mut w = DVector::zeros(m);
    let mut states = vec![RowState::Separating; m];
    let mut dv = DVector::zeros(nv);
    let mut stats = LcpStats {
        warm_start_attempted: guess.is_some() || matches!(solver, IslandSolver::Ncp { start: Some(_), .. }),
        warm_start_hit: guess.is_some(),
        standardized: true,
        ..LcpStats::default()
    };
    let mut local = vec![usize::MAX; m];
    let mut sliding = vec![];
    // Scratch of the island assembly: the slot of each tree in the current island.
    let mut slot = vec![usize::MAX; trees.dofs.len()];
    for island in islands(trees, system.row_trees, system.bounds, system.waiting) {
        let (rows, dofs) = (&island.rows, &island.dofs);
        for (p, &r) in rows.iter().enumerate() {
            local[r] = p;
        }
        let (k, n) = (rows.len(), dofs.len());
        debug_assert!(rows.iter().all(|&r| {
            let own = |c: usize| system.row_trees[r].contains(&trees.of_dof[c]);
            system.j.row(r).all(|(c, v)| own(c) || v == 0.0)
        }));
        // A = J M̃⁻¹ Jᵀ = L Lᵀ tree by tree (`IslandDelassus`).
        let delassus = IslandDelassus::new(trees, inertia, system.j, rows, system.row_trees, dofs, &mut slot)?;
        let mut a = DMatrix::zeros(0, 0);
        delassus.delassus_into(&mut a);
        let regularized = rows.iter().any(|&r| system.regularization[r] != 0.0);
        // Every row regularized (the position stage without limit rows): `A = J M̃⁻¹ Jᵀ + R`
        // with `R > 0` is positive definite.
        let positive_definite = rows.iter().all(|&r| system.regularization[r] > 0.0);
        // More rows than dofs and no regularization: A = L Lᵀ with L = J_RD C⁻ᵀ
        // (M̃_DD = C Cᵀ), through which the minimum-norm solves of clamping sets with more
        // rows than dofs go (`crate::solver::lcp::standardize`).
        let factor = (n > 0 && k > n && !regularized).then(|| delassus.factor());
        for (p, &r) in rows.iter().enumerate() {
            a[(p, p)] += system.regularization[r];
        }
        let b = DVector::from_iterator(k, rows.iter().map(|&r| system.b[r]));
        let bounds: Vec<RowBound> = rows
            .iter()
            .map(|&r| match system.bounds[r] {
                RowBound::Friction { normal, mu } => RowBound::Friction { normal: local[normal], mu },
                other => other,
            })
            .collect();
        let sol = match solver {
            IslandSolver::Lcp { options, .. } => {
                let island_guess: Option<Vec<RowState>> = guess.map(|g| rows.iter().map(|&r| g[r]).collect());
                let mut problem = BoxedLcp::new(a, b, bounds)?;
                if let Some(l) = factor {
                    problem = problem.with_factor(l)?;
                }
                if positive_definite {
                    problem = problem.with_positive_definite();
                }
                solve_validated(&problem, options, island_guess.as_deref())?
            }
            IslandSolver::Ncp { solver, start } => {
                let island_start = start.map(|s| DVector::from_iterator(k, rows.iter().map(|&r| s[r])));
                let out = solver.solve_dense(&a, &b, &bounds, island_start.as_ref(), factor.as_ref())?;
                sliding.extend(out.sliding.iter().map(|c| SlidingCone {
                    normal: rows[c.normal],
                    rows: c.rows.map(|t| rows[t]),
                    ..*c
                }));
                let warm = island_start.is_some();
                LcpSolution {
                    stats: LcpStats {
                        path: SolvePath::Newton,
                        islands: 1,
                        residual: out.residual,
                        warm_start_attempted: warm,
                        // Hit: the start's contact mode was the solution's (no Newton step).
                        warm_start_hit: warm && out.iterations == 0,
                        standardized: out.standardized,
                        newton_iterations: out.iterations,
                        fallbacks: usize::from(out.fallback_sweeps > 0),
                        pgs_iterations: out.fallback_sweeps,
                        gpu_linear_solves: out.gpu.solves,
                        gpu_fallbacks: out.gpu.fallbacks,
                        ..LcpStats::default()
                    },
                    f: out.f,
                    w: out.w,
                    states: out.states,
                }
            }
        };
        for (p, &r) in rows.iter().enumerate() {
            f[r] = sol.f[p];
            w[r] = sol.w[p];
            states[r] = sol.states[p];
        }
        for (&dof, d) in dofs.iter().zip(delassus.velocity_change(sol.f.as_slice())) {
            dv[dof] += d;
        }
        merge_stats(&mut stats, &sol.stats);
    }
    // The waiting rows: no force, `w = J Δv + b`.
    for r in (0..m).filter(|&r| system.waiting.get(r).copied().unwrap_or(false)) {
        w[r] = system.j.dot(r, dv.as_slice()) + system.b[r];
    }
    Ok(IslandSolution { lcp: LcpSolution { f, w, states, stats }, dv, sliding })
}

/// Folds an island's statistics into the step's: the worst path, sums of islands, pivots,
/// sweeps and fallbacks, the largest residual, warm-start hits on every island.
fn merge_stats(total: &mut LcpStats, island: &LcpStats) {
    if island.path.rank() > total.path.rank() {
        total.path = island.path;
    }
    total.islands += island.islands;
    total.pivots += island.pivots;
    total.pgs_iterations += island.pgs_iterations;
    total.fallbacks += island.fallbacks;
    total.work_limited += island.work_limited;
    total.residual = total.residual.max(island.residual);
    total.warm_start_hit &= island.warm_start_hit;
    total.standardized &= island.standardized;
    total.newton_iterations += island.newton_iterations;
    total.gpu_linear_solves += island.gpu_linear_solves;
    total.gpu_fallbacks += island.gpu_fallbacks;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::SplitMix64;
    use crate::math::{Inertia, Vec3, SE3};
    use crate::model::{Body, WORLD};
    use crate::solver::lcp::solve;
    use crate::{Joint, Model, ModelBuilder};
    use nalgebra::Cholesky;

    /// A base welded to the world carrying two 2-link arms, and a free box: three trees.
    fn three_trees() -> Model {
        let mut b = ModelBuilder::new("three_trees");
        let inertia = Inertia::solid_box(1.0, Vec3::new(0.1, 0.2, 0.3));
        b.add_body(WORLD, Joint::fixed("weld"), Body::new("base", inertia));
        for arm in ["a", "b"] {
            b.add_body("base", Joint::revolute(format!("{arm}1"), Vec3::z()), Body::new(format!("{arm}_l1"), inertia));
            b.add_body(
                &format!("{arm}_l1"),
                Joint::revolute(format!("{arm}2"), Vec3::y()).with_placement(SE3::from_translation(Vec3::x())),
                Body::new(format!("{arm}_l2"), inertia),
            );
        }
        b.add_body(WORLD, Joint::free("free"), Body::new("box", inertia));
        b.build().unwrap()
    }

    #[test]
    fn trees_are_the_subtrees_below_the_bodies_welded_to_the_world() {
        let model = three_trees();
        let trees = Trees::new(&model);
        assert_eq!(trees.dofs.len(), 3);
        // Arm a: dofs 0 and 1; arm b: 2 and 3; the box: 4..10.
        assert_eq!(trees.dofs[0], vec![0, 1]);
        assert_eq!(trees.dofs[1], vec![2, 3]);
        assert_eq!(trees.dofs[2], (4..10).collect::<Vec<_>>());
        assert_eq!(trees.of_dof, vec![0, 0, 1, 1, 2, 2, 2, 2, 2, 2]);
        assert_eq!(trees.local, vec![0, 1, 0, 1, 0, 1, 2, 3, 4, 5]);
    }

    /// Rows on arm a, rows coupling arm b and the box, a row with no Jacobian, and a
    /// friction row following a normal of another island's tree: the islands and the
    /// per-island solution against one dense LCP over all rows and dofs.
    #[test]
    fn per_island_solution_equals_the_dense_solution() {
        let model = three_trees();
        let trees = Trees::new(&model);
        let nv = model.nv();
        let mut rng = SplitMix64::new(7);
        // A block-diagonal SPD M̃ (one random SPD block per tree).
        let mut inertia = DMatrix::zeros(nv, nv);
        for dofs in &trees.dofs {
            let n = dofs.len();
            let g = DMatrix::from_fn(n, n, |_, _| rng.range(-1.0, 1.0));
            let block = &g * g.transpose() + DMatrix::identity(n, n) * 0.5;
            for (r, &i) in dofs.iter().enumerate() {
                for (c, &k) in dofs.iter().enumerate() {
                    inertia[(i, k)] = block[(r, c)];
                }
            }
        }
        // Rows: 0 on arm a; 1, 2 on arm b and the box (2 follows 1 as its friction row);
        // 3 zero; 4 on the box alone.
        let m = 5;
        let mut j = DMatrix::zeros(m, nv);
        for c in 0..2 {
            j[(0, c)] = rng.range(-1.0, 1.0);
        }
        for r in 1..3 {
            for c in [2, 3, 5, 8] {
                j[(r, c)] = rng.range(-1.0, 1.0);
            }
        }
        for c in 4..10 {
            j[(4, c)] = rng.range(-1.0, 1.0);
        }
        let b = DVector::from_vec(vec![-1.0, -0.5, 0.3, 0.2, -0.7]);
        let unilateral = RowBound::Box { lo: 0.0, hi: f64::INFINITY };
        let bounds = vec![unilateral, unilateral, RowBound::Friction { normal: 1, mu: 0.8 }, unilateral, unilateral];
        let regularization = vec![0.0, 1e-3, 0.0, 0.0, 0.0];
        let row_trees = [[0, usize::MAX], [1, 2], [1, 2], [usize::MAX; 2], [2, usize::MAX]];
        let found = islands(&trees, &row_trees, &bounds, &[]);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0], Island { rows: vec![0], dofs: vec![0, 1] });
        assert_eq!(found[1], Island { rows: vec![1, 2, 4], dofs: (2..10).collect() });
        assert_eq!(found[2], Island { rows: vec![3], dofs: vec![] });

        let sparse = SparseRows::from_dense(&j);
        let blocks = TreeInertia::from_dense(&trees, &inertia);
        assert_eq!(blocks.to_dense(&trees), inertia);
        let system = RowSystem {
            j: &sparse,
            row_trees: &row_trees,
            b: &b,
            bounds: &bounds,
            regularization: &regularization,
            waiting: &[],
        };
        let options = LcpOptions::default();
        let out =
            solve_islands(&trees, &blocks, &system, IslandSolver::Lcp { options: &options, guess: None }).unwrap();
        let chol = Cholesky::new(inertia.clone()).unwrap();
        let y = chol.solve(&j.transpose());
        let a = &j * &y + DMatrix::from_diagonal(&DVector::from_column_slice(&regularization));
        let dense = solve(&BoxedLcp::new(a, b.clone(), bounds.clone()).unwrap(), &options, None).unwrap();
        assert!((&out.lcp.f - &dense.f).amax() <= 1e-12 * dense.f.amax(), "{} vs {}", out.lcp.f, dense.f);
        assert_eq!(out.lcp.states, dense.states);
        assert!((&out.lcp.w - &dense.w).amax() <= 1e-12);
        assert!((&out.dv - &y * &dense.f).amax() <= 1e-12);
        assert!(out.lcp.f.iter().any(|&x| x > 0.0), "some row pushes");
        assert_eq!(out.lcp.stats.islands, 3);
        assert!(out.lcp.stats.residual <= options.tolerance);

        // Row 4 waiting: no force, in no island, its w from the others' Δv.
        let waiting = [false, false, false, false, true];
        let system = RowSystem { waiting: &waiting, ..system };
        let out =
            solve_islands(&trees, &blocks, &system, IslandSolver::Lcp { options: &options, guess: None }).unwrap();
        assert_eq!(out.lcp.f[4], 0.0);
        assert_eq!(out.lcp.states[4], RowState::Separating);
        let w4 = j.row(4).iter().zip(out.dv.iter()).map(|(a, b)| a * b).sum::<f64>() + b[4];
        assert!((out.lcp.w[4] - w4).abs() <= 1e-15, "{} vs {w4}", out.lcp.w[4]);
        assert_eq!(out.lcp.stats.islands, 3);
        let kept = islands(&trees, &row_trees, &bounds, &waiting);
        assert_eq!(kept[1], Island { rows: vec![1, 2], dofs: (2..10).collect() });
    }

    #[test]
    fn an_island_with_a_singular_inertia_block_is_an_error() {
        let model = three_trees();
        let trees = Trees::new(&model);
        let nv = model.nv();
        let mut inertia = DMatrix::identity(nv, nv);
        inertia[(1, 1)] = 0.0;
        let mut j = DMatrix::zeros(1, nv);
        j[(0, 0)] = 1.0;
        let b = DVector::from_vec(vec![-1.0]);
        let bounds = vec![RowBound::Box { lo: 0.0, hi: f64::INFINITY }];
        let sparse = SparseRows::from_dense(&j);
        let blocks = TreeInertia::from_dense(&trees, &inertia);
        assert_eq!(blocks.to_dense(&trees), inertia);
        let system = RowSystem {
            j: &sparse,
            row_trees: &[[0, usize::MAX]],
            b: &b,
            bounds: &bounds,
            regularization: &[0.0],
            waiting: &[],
        };
        let err =
            solve_islands(&trees, &blocks, &system, IslandSolver::Lcp { options: &LcpOptions::default(), guess: None })
                .err()
                .expect("an error");
        assert!(err.to_string().contains("not positive definite"), "{err}");
        // The singular block belongs to a tree no row touches: solved.
        let mut j2 = DMatrix::zeros(1, nv);
        j2[(0, 5)] = 1.0;
        let j2 = SparseRows::from_dense(&j2);
        let system = RowSystem { j: &j2, row_trees: &[[2, usize::MAX]], ..system };
        let out =
            solve_islands(&trees, &blocks, &system, IslandSolver::Lcp { options: &LcpOptions::default(), guess: None })
                .unwrap();
        assert!((out.lcp.f[0] - 1.0).abs() < 1e-14 && (out.dv[5] - 1.0).abs() < 1e-14);
    }
}
