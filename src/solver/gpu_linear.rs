//! Newton linear systems on the GPU (`docs/gpu.md`): the glue between the solvers that
//! ask for a GPU conjugate-residual solve ([`crate::solver::ncp::LinearSolve::GpuConjugateResidual`],
//! [`crate::soft::SoftLinearSolver::PcrGpu`]) and the device solver of [`crate::gpu`]
//! (feature `cuda`).
//!
//! The one piece of process state of the crate lives here: the device context
//! (`shared`, feature `cuda`), created on first use and kept, immutable, for the life of the process —
//! including the failure to create it, so that a machine without a GPU pays for the
//! detection once. Everything else is per call: a solve uploads its matrix, runs
//! `crate::gpu::GpuPcr` in double precision and reads the solution back.
//!
//! When no GPU is available (no driver, no device, NVRTC missing, or a build without the
//! `cuda` feature) [`gpu_pcr_solve`] returns `Ok(None)` and the caller solves on the CPU
//! instead; the caller counts that as a fallback ([`GpuLinearCounts`]) and the first
//! fallback of the process prints one warning with the reason to standard error.

use crate::error::Result;
use crate::math::{PcrOptions, PcrReport};
use crate::solver::CsrMatrix;
use std::sync::Once;

/// How many Newton linear systems that asked for the GPU were solved there, and how many
/// fell back to the CPU because no GPU was available.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuLinearCounts {
    /// Systems solved by conjugate residuals on the GPU.
    pub solves: usize,
    /// Systems solved on the CPU instead (no GPU available).
    pub fallbacks: usize,
}

impl std::ops::AddAssign for GpuLinearCounts {
    fn add_assign(&mut self, other: GpuLinearCounts) {
        self.solves += other.solves;
        self.fallbacks += other.fallbacks;
    }
}

/// How [`gpu_pcr_solve`] stores the matrix on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceLayout {
    /// Compressed rows (contact Schur matrices).
    #[default]
    Rows,
    /// 3 × 3-block compressed rows (FEM Hessians; needs a multiple of 3 rows).
    Blocks3,
}

/// The process-wide device context: device 0 with the kernels compiled (the first call
/// compiles them, about half a second), or the reason there is none. The first result —
/// a failure too — is cached for the life of the process; it is the crate's only
/// process state.
///
/// Errors: [`crate::Error::Gpu`] with the reason ([`crate::gpu::available`]'s, or a failed
/// kernel compilation).
#[cfg(feature = "cuda")]
pub fn shared() -> Result<std::sync::Arc<crate::gpu::Gpu>> {
    context().map(std::sync::Arc::clone).map_err(Clone::clone)
}

/// The cached result of [`shared`], borrowed.
#[cfg(feature = "cuda")]
fn context() -> std::result::Result<&'static std::sync::Arc<crate::gpu::Gpu>, &'static crate::Error> {
    static SHARED: std::sync::OnceLock<Result<std::sync::Arc<crate::gpu::Gpu>>> = std::sync::OnceLock::new();
    SHARED.get_or_init(crate::gpu::Gpu::new).as_ref()
}

/// Whether [`gpu_pcr_solve`] runs on the GPU (the device context could be created);
/// cheap after the first call. A caller that falls back without calling
/// [`gpu_pcr_solve`] checks this first (the first `false` prints the fallback warning).
#[cfg(feature = "cuda")]
pub fn gpu_ready() -> bool {
    context().map_err(|e| warn_fallback(&e.to_string())).is_ok()
}

/// Whether [`gpu_pcr_solve`] runs on the GPU: never without the `cuda` feature (the
/// first call prints the fallback warning).
#[cfg(not(feature = "cuda"))]
pub fn gpu_ready() -> bool {
    warn_fallback(&unavailable_reason().unwrap_or_default());
    false
}

/// Why the GPU solves fall back to the CPU, `None` when they run on the GPU (the
/// device context of `shared` could be created).
pub fn unavailable_reason() -> Option<String> {
    #[cfg(feature = "cuda")]
    {
        context().err().map(|e| e.to_string())
    }
    #[cfg(not(feature = "cuda"))]
    {
        crate::gpu::available().err().map(|e| e.to_string())
    }
}

/// Prints the one-time warning of the first fallback.
fn warn_fallback(reason: &str) {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "stiction: no GPU for the conjugate-residual solves ({reason}); solving on the CPU instead \
             (counted in the statistics' gpu_fallbacks)"
        );
    });
}

/// Solves `(A + diag(compliance) + shift·1) x = b` from `x = 0` by Jacobi-preconditioned
/// conjugate residuals on the GPU in double precision (`crate::gpu::GpuPcr`, the twin
/// of [`crate::solver::ncp::pcr_solve`]), with `a` symmetric (both triangles stored)
/// and stored as `layout` asks.
///
/// Returns `Ok(None)` when no GPU is available ([`unavailable_reason`]; always without
/// the `cuda` feature): the caller solves on the CPU and counts a fallback. The first
/// such fallback prints a warning with the reason.
///
/// Errors: mismatched sizes or non-finite entries, and a failure on an available device
/// ([`crate::Error::Gpu`]).
pub fn gpu_pcr_solve(
    a: &CsrMatrix,
    layout: DeviceLayout,
    compliance: &[f64],
    shift: f64,
    b: &[f64],
    options: &PcrOptions,
) -> Result<Option<(Vec<f64>, PcrReport)>> {
    #[cfg(feature = "cuda")]
    {
        use crate::gpu::{GpuOperator, GpuPcr, Precision};
        let gpu = match context() {
            Ok(gpu) => gpu,
            Err(e) => {
                warn_fallback(&e.to_string());
                return Ok(None);
            }
        };
        // One solve at a time on the context's single stream.
        static DEVICE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _guard = DEVICE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let operator = match layout {
            DeviceLayout::Rows => GpuOperator::Csr(a),
            DeviceLayout::Blocks3 => GpuOperator::Bsr3(a),
        };
        let mut pcr = GpuPcr::new(gpu, Precision::F64, operator, compliance, shift)?;
        let mut x = vec![0.0; b.len()];
        let report = pcr.solve(b, &mut x, options)?;
        Ok(Some((x, report)))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (a, layout, compliance, shift, b, options);
        warn_fallback(&unavailable_reason().unwrap_or_default());
        Ok(None)
    }
}
