//! The GPU conjugate-residual solver (Macklin et al. 2019 §8.2; digest-000 §4) through
//! CUDA, behind the `cuda` feature (the modules below exist with it).
//!
//! - `kernels`: the CUDA sources of `kernels/*.cu`, compiled at run time by NVRTC
//!   (f64 and f32); compiling needs only NVRTC, not a device.
//! - `device`: device detection that never panics ([`available`]) and the loaded
//!   kernels (`Gpu`).
//! - `pcr`: Jacobi-preconditioned conjugate residuals on the device (`GpuPcr`), on
//!   the Schur operator `A = J H⁻¹ Jᵀ + C` of a Newton step (sparse `J`, block-diagonal
//!   `H⁻¹`, diagonal `C`: paper 000 eq. 59) or on an assembled sparse matrix (CSR, or
//!   3 × 3-block CSR for FEM Hessians), with the stopping rule and statistics of the CPU
//!   solver (`crate::solver::ncp::pcr_solve`).
//!
//! The crate loads `libcuda` and NVRTC (`libnvrtc.so.13`, e.g. from the pip package
//! `nvidia-cuda-nvrtc`) when first asked, so it builds and runs on machines without
//! CUDA; there every entry point returns [`crate::Error::Gpu`] with the reason. Without
//! the `cuda` feature, [`available`] says so.

#[cfg(feature = "cuda")]
pub mod device;
#[cfg(feature = "cuda")]
pub mod kernels;
#[cfg(feature = "cuda")]
pub mod pcr;

#[cfg(feature = "cuda")]
pub use device::{available, Gpu, GpuInfo};
#[cfg(feature = "cuda")]
pub use pcr::{GpuOperator, GpuPcr, Precision};

/// Without the `cuda` feature no GPU is ever available.
#[cfg(not(feature = "cuda"))]
pub fn available() -> crate::Result<std::convert::Infallible> {
    Err(crate::Error::Gpu("stiction was built without the `cuda` feature".into()))
}
