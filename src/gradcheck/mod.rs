//! Gradient checking: compares analytic Jacobians with finite differences.
//!
//! * [`fd`]: derivatives of vector-valued functions of a scalar by central
//!   differences and by Ridders' extrapolation (Numerical Recipes §5.7), and
//!   finite-difference Jacobians built column by column from them;
//! * [`manifold`]: perturbations of configurations on the manifold (`q ⊕ ε eᵢ`) and
//!   differences of configurations (`q₁ ⊖ q₀`), the tangent-space convention every
//!   derivative with respect to q follows;
//! * [`report`]: the comparison of one analytic block with its finite-difference
//!   estimate ([`BlockReport`]) and a report over several blocks ([`GradReport`]);
//! * [`check_step`] (in `step.rs`): the eight Jacobian blocks of one simulator step;
//! * [`check_jacobian`] (in `jacobian.rs`): any user function with Euclidean input;
//! * [`check_soft_step`] (in `soft.rs`): the ten Jacobian blocks of one soft-body step;
//! * [`scene`]: JSON scene files read by the `stiction gradcheck` command — rigid
//!   ([`Scene`]) or soft-body ([`SoftScene`], in [`soft_scene`]), either read by [`AnyScene`].

pub mod fd;
mod jacobian;
pub mod manifold;
pub mod report;
pub mod scene;
mod soft;
pub mod soft_scene;
mod step;

pub use fd::{FdEstimate, FdJacobian};
pub use jacobian::check_jacobian;
pub use report::{BlockReport, GradReport};
pub use scene::{AnyScene, Scene};
pub use soft::{check_soft_step, SOFT_STEP_BLOCKS};
pub use soft_scene::{SoftCase, SoftScene};
pub use step::{check_step, fd_step_jacobians, STEP_BLOCKS};

use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The text of the scene file at `path` and the directory its relative paths resolve
/// against (`.` for a bare file name).
fn read_scene(path: &Path) -> crate::Result<(String, &Path)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::InvalidInput(format!("cannot read scene '{}': {e}", path.display())))?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Ok((text, dir))
}

/// An error of the scene file at `path`, naming it: input and JSON errors keep their kind
/// with the file's name in front, a model or mesh file that fails to load stays a load
/// error (it names that file), and any other error becomes [`Error::InvalidInput`].
fn in_scene(path: &Path, e: Error) -> Error {
    match e {
        Error::InvalidInput(m) => Error::InvalidInput(format!("scene '{}': {m}", path.display())),
        Error::Serde(m) => Error::Serde(format!("scene '{}': {m}", path.display())),
        Error::Load(e) => Error::Load(e),
        other => Error::InvalidInput(format!("scene '{}': {other}", path.display())),
    }
}

/// How finite differences are taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FdMethod {
    /// Central differences `(f(h) − f(−h)) / 2h` with the configured step.
    Central,
    /// Ridders' extrapolation of central differences from the configured initial step.
    #[default]
    Ridders,
    /// Both: every block is compared against each estimate (one [`BlockReport`] per method).
    Both,
}

impl FdMethod {
    /// The single methods this choice stands for (`Both` → central then Ridders).
    pub fn methods(&self) -> &'static [FdMethod] {
        match self {
            FdMethod::Central => &[FdMethod::Central],
            FdMethod::Ridders => &[FdMethod::Ridders],
            FdMethod::Both => &[FdMethod::Central, FdMethod::Ridders],
        }
    }
    /// Lowercase name (`"central"`, `"ridders"`, `"both"`).
    pub fn name(&self) -> &'static str {
        match self {
            FdMethod::Central => "central",
            FdMethod::Ridders => "ridders",
            FdMethod::Both => "both",
        }
    }
    /// Parses a lowercase name.
    pub fn parse(s: &str) -> Option<FdMethod> {
        [FdMethod::Central, FdMethod::Ridders, FdMethod::Both].into_iter().find(|m| m.name() == s)
    }
}

/// Settings of a gradient check.
///
/// An entry passes when its relative error
/// `|a − f| / max(|f|, abs_floor · max(s, 1))` is at most `rel_tol`, where `a` is the
/// analytic value, `f` the finite-difference value and `s` the largest `|f|` of its
/// block; a block passes when every entry does (see [`BlockReport`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradcheckConfig {
    /// Finite-difference method.
    pub method: FdMethod,
    /// Step: `h` of central differences and the initial (largest) step `h₀` of Ridders'
    /// extrapolation. Per input, it is scaled as described in [`check_step`].
    pub step: f64,
    /// Largest relative error an entry may have.
    pub rel_tol: f64,
    /// Floor of the relative error's denominator, as a fraction of `max(s, 1)` with `s`
    /// the block's largest finite-difference entry: entries much smaller than the rest
    /// of their block (or than 1) are measured against this floor instead of their own size.
    pub abs_floor: f64,
}

impl Default for GradcheckConfig {
    /// Ridders from `h₀ = 10⁻³`, `rel_tol = 10⁻⁶`, `abs_floor = 10⁻⁵`.
    ///
    /// The floor reflects what finite differences of a step can resolve: `q⁺ = q ⊕ h v⁺`
    /// rounds at `~10⁻¹⁶ |q|`, so columns with small steps carry absolute noise of
    /// `~10⁻¹⁶ / step`, which would dominate the relative error of the small entries
    /// of `∂q⁺/∂·` (`~h²/m`).
    fn default() -> Self {
        Self { method: FdMethod::Ridders, step: 1e-3, rel_tol: 1e-6, abs_floor: 1e-5 }
    }
}

impl GradcheckConfig {
    /// Checks that the settings are usable (positive finite step and tolerances).
    pub fn validate(&self) -> crate::Result<()> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if !(ok(self.step) && ok(self.rel_tol) && self.abs_floor.is_finite() && self.abs_floor >= 0.0) {
            return Err(crate::Error::InvalidInput(format!(
                "gradcheck settings must be positive and finite: step {}, rel_tol {}, abs_floor {}",
                self.step, self.rel_tol, self.abs_floor
            )));
        }
        Ok(())
    }
}
