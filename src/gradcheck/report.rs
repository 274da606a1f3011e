//! Comparison of analytic Jacobian blocks with finite-difference estimates:
//! [`BlockReport`] for one block, [`GradReport`] for several, printed as an aligned table.
//!
//! Error measures of a block with analytic entries `a_ij`, finite-difference entries
//! `f_ij` and `s = max_ij |f_ij|`:
//!
//! ```text
//! abs_ij = |a_ij − f_ij|
//! rel_ij = abs_ij / max(|f_ij|, abs_floor · max(s, 1), n_j)
//! n_j    = 2 ε_j / rel_tol   if ε_j ≤ rel_tol · max(s, 1),   else 0
//! ```
//!
//! (`rel_ij = 0` when `abs_ij = 0`, and `∞` when the denominator is 0 otherwise,
//! i.e. only with `abs_floor = 0`). The block passes when `max rel_ij ≤ rel_tol`
//! and every entry is finite. The worst entry is the one of largest `rel_ij`.
//!
//! `ε_j` is Ridders' error estimate of column j (absent for central differences). The
//! noise term `n_j` stops the comparison from demanding more than the finite differences
//! can resolve: an entry passes when it is within twice the estimated error of its
//! column — but only where that error is itself at most `rel_tol · max(s, 1)` (the scale
//! the floor uses), so an entry passing this way is still within `2 rel_tol · max(s, 1)` of
//! the estimate, and any error larger than that fails whatever the estimate says. (Finite differences through a
//! contact solve carry rounding noise of ~10⁻¹⁰ of the block's scale, amplified by the
//! conditioning of the contact problem; without the term, near-zero entries of a block
//! would be held to that noise.)

use super::{FdMethod, GradcheckConfig};
use crate::error::{Error, Result};
use nalgebra::{DMatrix, DVector};
use std::fmt;

/// The comparison of one analytic block with its finite-difference estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockReport {
    /// Block name (e.g. `"dq+/dq"`).
    pub name: String,
    /// The finite-difference method of the estimate (`Central` or `Ridders`).
    pub method: FdMethod,
    /// Rows and columns of the block.
    pub shape: (usize, usize),
    /// Largest `|a − f|`.
    pub max_abs_error: f64,
    /// Largest relative error (see the module documentation).
    pub max_rel_error: f64,
    /// `(row, col)` of the entry with the largest relative error (`(0, 0)` for an empty block).
    pub worst: (usize, usize),
    /// Analytic value at `worst`.
    pub analytic: f64,
    /// Finite-difference value at `worst`.
    pub fd: f64,
    /// Ridders' error estimate of the worst entry's column, if available.
    pub fd_error_estimate: Option<f64>,
    /// Largest `|f|` of the block (the scale `s`).
    pub scale: f64,
    /// Names of the block's rows and columns, when known (used in the worst-entry label).
    pub labels: Option<(Vec<String>, Vec<String>)>,
    /// Whether the block passes.
    pub passed: bool,
}

impl BlockReport {
    /// Compares `analytic` with the finite-difference estimate `fd` (same shape) under `config`;
    /// `fd_error` holds Ridders' per-column error estimates when available.
    pub fn compare(
        name: impl Into<String>,
        method: FdMethod,
        analytic: &DMatrix<f64>,
        fd: &DMatrix<f64>,
        fd_error: Option<&DVector<f64>>,
        config: &GradcheckConfig,
    ) -> Result<BlockReport> {
        let name = name.into();
        if analytic.shape() != fd.shape() {
            return Err(Error::InvalidInput(format!(
                "block '{name}': analytic Jacobian is {}×{}, finite differences give {}×{}",
                analytic.nrows(),
                analytic.ncols(),
                fd.nrows(),
                fd.ncols()
            )));
        }
        let scale = fd.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let floor = config.abs_floor * scale.max(1.0);
        let noise: Vec<f64> = (0..fd.ncols())
            .map(|c| match fd_error.and_then(|e| e.get(c).copied()) {
                Some(e) if e.is_finite() && e <= config.rel_tol * scale.max(1.0) => 2.0 * e / config.rel_tol,
                _ => 0.0,
            })
            .collect();
        let (mut max_abs, mut max_rel, mut worst) = (0.0f64, 0.0f64, (0, 0));
        let mut finite = true;
        for c in 0..fd.ncols() {
            for r in 0..fd.nrows() {
                let (a, f) = (analytic[(r, c)], fd[(r, c)]);
                if !(a.is_finite() && f.is_finite()) {
                    finite = false;
                    if max_rel != f64::INFINITY {
                        (max_rel, worst) = (f64::INFINITY, (r, c));
                    }
                    max_abs = f64::INFINITY;
                    continue;
                }
                let abs = (a - f).abs();
                let den = f.abs().max(floor).max(noise[c]);
                let rel = if abs == 0.0 {
                    0.0
                } else if den == 0.0 {
                    f64::INFINITY
                } else {
                    abs / den
                };
                max_abs = max_abs.max(abs);
                if rel > max_rel {
                    (max_rel, worst) = (rel, (r, c));
                }
            }
        }
        let empty = fd.is_empty();
        Ok(BlockReport {
            name,
            method,
            shape: fd.shape(),
            max_abs_error: max_abs,
            max_rel_error: max_rel,
            worst,
            analytic: if empty { 0.0 } else { analytic[worst] },
            fd: if empty { 0.0 } else { fd[worst] },
            fd_error_estimate: if empty { None } else { fd_error.and_then(|e| e.get(worst.1).copied()) },
            scale,
            labels: None,
            passed: finite && max_rel <= config.rel_tol,
        })
    }

    /// Attaches row and column names (shown for the worst entry).
    pub fn with_labels(mut self, rows: Vec<String>, cols: Vec<String>) -> BlockReport {
        self.labels = Some((rows, cols));
        self
    }

    /// `"(r, c)"`, or `"(row name, col name)"` when labels are attached.
    pub fn worst_label(&self) -> String {
        match &self.labels {
            Some((rows, cols)) if self.worst.0 < rows.len() && self.worst.1 < cols.len() => {
                format!("{} / {}", rows[self.worst.0], cols[self.worst.1])
            }
            _ => format!("({}, {})", self.worst.0, self.worst.1),
        }
    }
}

/// A gradient check over several blocks.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct GradReport {
    /// A one-line description of what was checked (model, state), printed as the title.
    pub title: String,
    /// One report per block (and per method with [`FdMethod::Both`]).
    pub blocks: Vec<BlockReport>,
    /// The relative tolerance the blocks were judged with.
    pub rel_tol: f64,
}

impl GradReport {
    /// True when every block passes.
    pub fn passed(&self) -> bool {
        self.blocks.iter().all(|b| b.passed)
    }
    /// The blocks that fail.
    pub fn failures(&self) -> Vec<&BlockReport> {
        self.blocks.iter().filter(|b| !b.passed).collect()
    }
    /// The block named `name` (the first one, with several methods).
    pub fn block(&self, name: &str) -> Option<&BlockReport> {
        self.blocks.iter().find(|b| b.name == name)
    }
    /// The largest relative error over all blocks.
    pub fn max_rel_error(&self) -> f64 {
        self.blocks.iter().fold(0.0, |m, b| m.max(b.max_rel_error))
    }
}

impl fmt::Display for GradReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.title.is_empty() {
            writeln!(f, "{}", self.title)?;
        }
        let rows: Vec<[String; 10]> = self
            .blocks
            .iter()
            .map(|b| {
                [
                    b.name.clone(),
                    b.method.name().to_string(),
                    format!("{}x{}", b.shape.0, b.shape.1),
                    format!("{:.2e}", b.max_abs_error),
                    format!("{:.2e}", b.max_rel_error),
                    b.worst_label(),
                    format!("{:.6e}", b.analytic),
                    format!("{:.6e}", b.fd),
                    b.fd_error_estimate.map_or_else(|| "-".to_string(), |e| format!("{e:.1e}")),
                    if b.passed { "ok".into() } else { "FAIL".into() },
                ]
            })
            .collect();
        let header = [
            "block",
            "method",
            "size",
            "max abs err",
            "max rel err",
            "worst entry",
            "analytic",
            "fd",
            "fd err",
            "status",
        ];
        let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for r in &rows {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |f: &mut fmt::Formatter<'_>, cells: &[String]| -> fmt::Result {
            let mut s = String::new();
            for (k, (c, w)) in cells.iter().zip(&width).enumerate() {
                let pad = w - c.chars().count();
                // Text columns left-aligned, numbers right-aligned.
                if matches!(k, 0 | 1 | 5 | 9) {
                    s.push_str(c);
                    s.extend(std::iter::repeat_n(' ', pad));
                } else {
                    s.extend(std::iter::repeat_n(' ', pad));
                    s.push_str(c);
                }
                s.push_str("  ");
            }
            writeln!(f, "{}", s.trim_end())
        };
        line(f, &header.map(String::from))?;
        for r in &rows {
            line(f, r)?;
        }
        let failed = self.failures().len();
        write!(
            f,
            "{}: {} of {} blocks within rel_tol {:.1e} (max rel err {:.2e})",
            if failed == 0 { "PASS" } else { "FAIL" },
            self.blocks.len() - failed,
            self.blocks.len(),
            self.rel_tol,
            self.max_rel_error()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> GradcheckConfig {
        GradcheckConfig::default()
    }

    #[test]
    fn relative_error_and_floor() {
        let fd = DMatrix::from_row_slice(2, 2, &[10.0, 1e-9, -3.0, 0.0]);
        // Exact match passes with zero error.
        let r = BlockReport::compare("b", FdMethod::Ridders, &fd, &fd, None, &cfg()).unwrap();
        assert!(r.passed && r.max_rel_error == 0.0 && r.max_abs_error == 0.0);
        // A tiny entry off by 1e-12: relative to its own size that is 1e-3, but the floor
        // (1e-6 · 10) makes it 1e-7: passes.
        let cfg = || GradcheckConfig { abs_floor: 1e-6, ..GradcheckConfig::default() };
        let mut a = fd.clone();
        a[(0, 1)] += 1e-12;
        let r = BlockReport::compare("b", FdMethod::Ridders, &a, &fd, None, &cfg()).unwrap();
        assert!(r.passed, "{}", r.max_rel_error);
        assert!((r.max_rel_error - 1e-12 / 1e-5).abs() < 1e-12);
        assert_eq!(r.worst, (0, 1));
        // Without the floor the same entry fails.
        let strict = GradcheckConfig { abs_floor: 0.0, ..cfg() };
        let r = BlockReport::compare("b", FdMethod::Ridders, &a, &fd, None, &strict).unwrap();
        assert!(!r.passed);
        // A nonzero analytic value where the estimate is exactly zero, floor 0: infinite.
        let mut a = fd.clone();
        a[(1, 1)] = 1e-20;
        let r = BlockReport::compare("b", FdMethod::Ridders, &a, &fd, None, &strict).unwrap();
        assert_eq!(r.max_rel_error, f64::INFINITY);
        assert_eq!(r.worst, (1, 1));
    }

    #[test]
    fn wrong_jacobian_is_caught_and_reported() {
        let fd = DMatrix::from_row_slice(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let mut a = fd.clone();
        a[(1, 2)] = 6.01;
        let errs = DVector::from_vec(vec![1e-12, 2e-12, 3e-12]);
        let r = BlockReport::compare("dq+/dv", FdMethod::Ridders, &a, &fd, Some(&errs), &cfg())
            .unwrap()
            .with_labels(vec!["r0".into(), "r1".into()], vec!["c0".into(), "c1".into(), "c2".into()]);
        assert!(!r.passed);
        assert_eq!(r.worst, (1, 2));
        assert_eq!((r.analytic, r.fd, r.fd_error_estimate), (6.01, 6.0, Some(3e-12)));
        assert!((r.max_rel_error - 0.01 / 6.0).abs() < 1e-12);
        assert_eq!(r.worst_label(), "r1 / c2");
        let ok = BlockReport::compare("dq+/dq", FdMethod::Central, &fd, &fd, None, &cfg()).unwrap();
        let report = GradReport { title: "test".into(), blocks: vec![ok, r], rel_tol: 1e-6 };
        assert!(!report.passed());
        assert_eq!(report.failures().len(), 1);
        let text = report.to_string();
        assert!(text.contains("FAIL") && text.contains("dq+/dv") && text.contains("r1 / c2"), "{text}");
        // Aligned: every table line (header and rows) has its status column at the same place.
        let lines: Vec<&str> = text.lines().skip(1).take(3).collect();
        let col = lines[0].find("worst entry").unwrap();
        assert!(lines[1..].iter().all(|l| l.len() > col));
        // Non-finite entries fail.
        let mut nan = fd.clone();
        nan[(0, 0)] = f64::NAN;
        assert!(!BlockReport::compare("x", FdMethod::Ridders, &nan, &fd, None, &cfg()).unwrap().passed);
        // Shape mismatch is an error.
        assert!(BlockReport::compare("x", FdMethod::Ridders, &fd.transpose(), &fd, None, &cfg()).is_err());
    }
}
