//! Device detection and the loaded kernels. Nothing here panics when CUDA is missing:
//! the driver library, NVRTC and a device are each checked before use, and every CUDA
//! failure becomes [`Error::Gpu`] with the reason.

use super::kernels::{architecture, compile, guarded, nvrtc_present, Precision, KERNELS};
use crate::error::{Error, Result};
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream};
use std::collections::HashMap;
use std::sync::Arc;

/// What [`available`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuInfo {
    /// The device's name (e.g. `"NVIDIA H100 80GB HBM3"`).
    pub name: String,
    /// Its compute capability `(major, minor)`.
    pub compute_capability: (i32, i32),
    /// Its memory (bytes).
    pub memory_bytes: usize,
    /// The NVRTC version `(major, minor)` that compiles the kernels.
    pub nvrtc_version: (i32, i32),
}

/// Maps a CUDA driver or NVRTC failure to [`Error::Gpu`].
pub(crate) fn gpu_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::Gpu(format!("{what}: {e}"))
}

/// Checks for a usable GPU: the CUDA driver library, NVRTC and at least one device.
/// Never panics; the error says what is missing (no driver, no device, NVRTC missing).
pub fn available() -> Result<GpuInfo> {
    // SAFETY: only tries to open the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::Gpu("no CUDA driver: libcuda.so was not found (is an NVIDIA driver installed?)".into()));
    }
    let nvrtc_version = nvrtc_present()?;
    guarded("device query", move || {
        let count =
            CudaContext::device_count().map_err(gpu_err("no CUDA device (cuInit or cuDeviceGetCount failed)"))?;
        if count < 1 {
            return Err(Error::Gpu("no CUDA device: the driver reports 0 devices".into()));
        }
        let ctx = CudaContext::new(0).map_err(gpu_err("creating a context on device 0"))?;
        Ok(GpuInfo {
            name: ctx.name().map_err(gpu_err("device name"))?,
            compute_capability: ctx.compute_capability().map_err(gpu_err("compute capability"))?,
            memory_bytes: ctx.total_mem().map_err(gpu_err("device memory"))?,
            nvrtc_version,
        })
    })
}

/// Device 0 with the kernels compiled for it, in both precisions. Build
/// one per process and share it (`Arc<Gpu>`): compiling takes a fraction of a second.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    functions: HashMap<(Precision, &'static str), CudaFunction>,
    info: GpuInfo,
    /// Blocks of the persistent PCR kernel that fit on the device at once, per precision
    /// (0: no cooperative launch).
    resident: HashMap<Precision, u32>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.info).finish_non_exhaustive()
    }
}

impl Gpu {
    /// Device 0, with the kernels compiled by NVRTC for its architecture and loaded.
    /// Errors: those of [`available`], and a failed compilation or module load.
    pub fn new() -> Result<Arc<Gpu>> {
        let info = available()?;
        let (major, minor) = info.compute_capability;
        let arch = architecture(major, minor);
        let ptx = [(Precision::F64, compile(Precision::F64, arch)?), (Precision::F32, compile(Precision::F32, arch)?)];
        guarded("loading the kernels", move || {
            let ctx = CudaContext::new(0).map_err(gpu_err("creating a context on device 0"))?;
            // Each solver's buffers live on that solver's stream only: cudarc's
            // cross-stream event tracking is not needed.
            // SAFETY: no buffer of this crate is used on two streams.
            unsafe { ctx.disable_event_tracking() };
            let mut functions = HashMap::new();
            for (real, ptx) in ptx {
                let module = ctx.load_module(ptx).map_err(gpu_err("loading the kernel module"))?;
                for name in KERNELS {
                    let f = module.load_function(name).map_err(gpu_err("loading a kernel"))?;
                    functions.insert((real, name), f);
                }
            }
            let cooperative =
                ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH).unwrap_or(0) != 0;
            let sms =
                ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).unwrap_or(0).max(0) as u32;
            let mut resident = HashMap::new();
            for precision in [Precision::F64, Precision::F32] {
                let per_sm = functions[&(precision, "pcr_persistent")]
                    .occupancy_max_active_blocks_per_multiprocessor(256, 0, None)
                    .unwrap_or(0);
                resident.insert(precision, if cooperative { per_sm * sms } else { 0 });
            }
            Ok(Arc::new(Gpu { ctx, functions, info, resident }))
        })
    }

    /// What the device is.
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// A new stream on the device (each solver works on its own).
    pub(crate) fn new_stream(&self) -> Result<Arc<CudaStream>> {
        self.ctx.new_stream().map_err(gpu_err("creating a stream"))
    }

    pub(crate) fn function(&self, real: Precision, name: &'static str) -> &CudaFunction {
        &self.functions[&(real, name)]
    }

    /// How many blocks of the persistent PCR kernel can be resident at once (0 when the
    /// device has no cooperative launch).
    pub(crate) fn resident_blocks(&self, precision: Precision) -> u32 {
        self.resident.get(&precision).copied().unwrap_or(0)
    }

    /// Waits for the device to finish the work queued so far.
    pub fn synchronize(&self) -> Result<()> {
        self.ctx.synchronize().map_err(gpu_err("synchronize"))
    }
}
