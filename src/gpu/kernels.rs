//! The CUDA sources (`kernels/common.cuh`, `kernels/pcr.cu`), put together into one NVRTC
//! program and compiled at run time for a chosen precision and
//! architecture. Compiling needs NVRTC only, no device: the CPU test suite compiles every
//! kernel to PTX.

use crate::error::{Error, Result};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};

/// Runs `f`, turning a panic inside the CUDA bindings (a missing symbol, say) into an
/// error.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T> + std::panic::UnwindSafe) -> Result<T> {
    std::panic::catch_unwind(f).unwrap_or_else(|_| Err(Error::Gpu(format!("{what}: the CUDA bindings panicked"))))
}

/// NVRTC can be loaded (`libnvrtc.so.13` on the library path, or already loaded).
pub fn nvrtc_present() -> Result<(i32, i32)> {
    // SAFETY: only tries to open the library.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Error::Gpu(
            "NVRTC is missing: libnvrtc.so.13 was not found (install the pip package \
             nvidia-cuda-nvrtc or the CUDA 13 toolkit and put its lib folder on LD_LIBRARY_PATH; \
             `import stiction.gpu` does this for the pip package)"
                .into(),
        ));
    }
    guarded("NVRTC version", || {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two valid out-pointers.
        unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
            .result()
            .map_err(|e| Error::Gpu(format!("NVRTC version: {e:?}")))?;
        Ok((major, minor))
    })
}

/// The program: the shared definitions, then the PCR kernels.
pub const SOURCE: &str = concat!(include_str!("../../kernels/common.cuh"), "\n", include_str!("../../kernels/pcr.cu"),);

/// Every kernel of [`SOURCE`] (each an `extern "C"` entry point).
pub const KERNELS: [&str; 9] = [
    "pcr_start",
    "schur_jt",
    "schur_j_dots",
    "csr_dots",
    "bsr3_dots",
    "pcr_init",
    "pcr_update",
    "pcr_direction",
    "pcr_persistent",
];

/// The precision of a compiled program's matrix entries. Vectors, scalars and every sum
/// are double either way: the matrices are most of an iteration's memory traffic, and a
/// single-precision recurrence drifts from the double one by more than 1e-4 within a few
/// dozen iterations on contact systems.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// `double` entries: the iterates equal the CPU solver's bit for bit.
    F64,
    /// `float` entries (half the matrix traffic).
    F32,
}

impl Precision {
    fn define(self) -> &'static str {
        match self {
            Precision::F64 => "-DREAL=double",
            Precision::F32 => "-DREAL=float",
        }
    }
}

/// The virtual architecture (`compute_XY`) to compile for a device of compute capability
/// `(major, minor)`: the device's own, capped to what NVRTC 13 knows.
pub fn architecture(major: i32, minor: i32) -> &'static str {
    match (major, minor) {
        (m, _) if m >= 12 => "compute_120",
        (10, _) | (11, _) => "compute_100",
        (9, _) => "compute_90",
        (8, 9) => "compute_89",
        (8, 6..) => "compute_86",
        (8, _) => "compute_80",
        _ => "compute_75",
    }
}

/// Compiles [`SOURCE`] to PTX for `precision` and the virtual architecture `arch`
/// (e.g. `"compute_90"`; see [`architecture`]).
///
/// Errors ([`Error::Gpu`]): NVRTC is missing, or the compilation failed (with NVRTC's
/// log).
pub fn compile(precision: Precision, arch: &'static str) -> Result<Ptx> {
    nvrtc_present()?;
    let options = CompileOptions {
        arch: Some(arch),
        // No fused multiply-adds: the device rounds as the CPU solver does.
        fmad: Some(false),
        options: vec![precision.define().to_string(), "--std=c++17".to_string()],
        name: Some("stiction_kernels.cu".to_string()),
        ..Default::default()
    };
    let source = SOURCE;
    std::panic::catch_unwind(move || compile_ptx_with_opts(source, options))
        .map_err(|_| Error::Gpu("NVRTC panicked while compiling the kernels".into()))?
        .map_err(|e| Error::Gpu(format!("NVRTC could not compile the kernels ({precision:?}, {arch}): {e:?}")))
}
