//! Jacobi-preconditioned conjugate residuals on the GPU (Saad 2003, Alg. 6.20; Macklin et
//! al. 2019 §8.2, eq. 59), the device twin of `crate::solver::ncp::pcr_solve`: the same
//! recurrences, the same stopping rule (`‖r‖_{P⁻¹} ≤ tolerance · ‖b‖_{P⁻¹}`, or a step
//! whose `Ap·P⁻¹Ap` is not positive) and the same [`PcrReport`].
//!
//! The operator and the preconditioner are uploaded once ([`GpuPcr::new`]; a Newton
//! iteration that only changes the compliance re-uploads that diagonal,
//! [`GpuPcr::set_compliance`]); a solve uploads `b` and `x`, runs its iterations as three
//! or four kernels each (`kernels/pcr.cu`: the step, the operator with the two dot
//! products fused in, the new direction) with every scalar kept on the device, and reads
//! back a convergence flag every [`CHECK_EVERY`] iterations (never when the tolerance is
//! 0: a fixed iteration count, as the paper runs it) and `x` and the residuals at the end.
//! Dot products are reduced deterministically: a solve is bit-for-bit repeatable.

use super::device::{gpu_err, Gpu};
pub use super::kernels::Precision;
use crate::error::{Error, Result};
use crate::math::{CsrMatrix, PcrOptions, PcrReport, SparseSchur};
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{
    CudaGraph, CudaSlice, CudaStream, CudaView, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use std::collections::HashMap;
use std::sync::Arc;

/// Threads per block (`BLOCK` in `kernels/common.cuh`).
const BLOCK: u32 = 256;
/// With a tolerance, the host reads the convergence flag after every this many
/// iterations (the kernels of later iterations are no-ops once it is set).
pub const CHECK_EVERY: usize = 8;

/// The system matrix of a [`GpuPcr`], before the diagonal `C + shift` is added.
#[derive(Clone, Copy, Debug)]
pub enum GpuOperator<'a> {
    /// The Schur operator `J H⁻¹ Jᵀ` (sparse `J`, block-diagonal `H⁻¹`), applied in
    /// factored form.
    Schur(&'a SparseSchur),
    /// An assembled symmetric matrix (both triangles stored), one thread per row.
    Csr(&'a CsrMatrix),
    /// An assembled symmetric matrix with 3 × 3 blocks (FEM Hessians: rows a multiple of
    /// 3), multiplied as 3 × 3-block CSR; entries missing inside a block are stored as 0.
    Bsr3(&'a CsrMatrix),
}

impl GpuOperator<'_> {
    /// The number of rows.
    pub fn rows(&self) -> usize {
        match self {
            GpuOperator::Schur(s) => s.j().rows(),
            GpuOperator::Csr(a) | GpuOperator::Bsr3(a) => a.rows(),
        }
    }

    /// The operator's diagonal (the Jacobi preconditioner's, before `C + shift`).
    pub fn diagonal(&self) -> Vec<f64> {
        match self {
            GpuOperator::Schur(s) => s.diagonal(),
            GpuOperator::Csr(a) | GpuOperator::Bsr3(a) => a.diagonal(),
        }
    }
}

/// The scalar type of the device matrices' entries.
trait DeviceReal: DeviceRepr + ValidAsZeroBits + Copy + Default + Unpin + 'static {
    const PRECISION: Precision;
    fn of(x: f64) -> Self;
}

impl DeviceReal for f64 {
    const PRECISION: Precision = Precision::F64;
    fn of(x: f64) -> f64 {
        x
    }
}

impl DeviceReal for f32 {
    const PRECISION: Precision = Precision::F32;
    fn of(x: f64) -> f32 {
        x as f32
    }
}

fn index32(what: &str, n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::Gpu(format!("{what} ({n}) exceeds the kernels' 32-bit indices")))
}

fn indices(what: &str, v: &[usize]) -> Result<Vec<i32>> {
    v.iter().map(|&i| index32(what, i)).collect()
}

fn blocks(n: usize, per_block: u32) -> u32 {
    (n as u32).div_ceil(per_block).max(1)
}

fn cfg(grid: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
}

/// A compressed-row matrix on the device.
struct DeviceCsr<T> {
    ptr: CudaSlice<i32>,
    col: CudaSlice<i32>,
    val: CudaSlice<T>,
}

fn upload<T: DeviceReal>(stream: &Arc<CudaStream>, v: &[f64]) -> Result<CudaSlice<T>> {
    let host: Vec<T> = v.iter().map(|&x| T::of(x)).collect();
    stream.clone_htod(&host).map_err(gpu_err("upload"))
}

fn upload_i32(stream: &Arc<CudaStream>, what: &str, v: &[usize]) -> Result<CudaSlice<i32>> {
    stream.clone_htod(&indices(what, v)?).map_err(gpu_err("upload"))
}

impl<T: DeviceReal> DeviceCsr<T> {
    fn new(stream: &Arc<CudaStream>, a: &CsrMatrix) -> Result<Self> {
        index32("stored entries", a.nnz())?;
        Ok(DeviceCsr {
            ptr: upload_i32(stream, "row pointer", a.row_ptr())?,
            col: upload_i32(stream, "column index", a.col_idx())?,
            val: upload(stream, a.values())?,
        })
    }
}

/// The operator on the device (one per solver: the size of the largest variant is
/// irrelevant).
#[allow(clippy::large_enum_variant)]
enum DeviceOperator<T> {
    Schur {
        /// The number of velocity coordinates (rows of `Jᵀ`).
        n: usize,
        block_of: CudaSlice<i32>,
        off: CudaSlice<i32>,
        data_off: CudaSlice<i32>,
        hinv: CudaSlice<T>,
        jt: DeviceCsr<T>,
        j: DeviceCsr<T>,
        /// `Jᵀ z`.
        t: CudaSlice<f64>,
    },
    Csr {
        a: DeviceCsr<T>,
    },
    Bsr3 {
        block_rows: usize,
        a: DeviceCsr<T>,
    },
}

/// 3 × 3-block CSR arrays of a symmetric CSR matrix with `3k` rows: block pointer, block
/// columns and row-major block entries.
fn bsr3_arrays(a: &CsrMatrix) -> Result<(Vec<usize>, Vec<usize>, Vec<f64>)> {
    if a.rows() % 3 != 0 || a.cols() != a.rows() {
        return Err(Error::InvalidInput(format!(
            "a 3 × 3-block matrix needs a square matrix with a multiple of 3 rows, got {} × {}",
            a.rows(),
            a.cols()
        )));
    }
    let mb = a.rows() / 3;
    let (mut ptr, mut col, mut val) = (vec![0], Vec::new(), Vec::new());
    for b in 0..mb {
        let mut cols: Vec<usize> = (3 * b..3 * b + 3)
            .flat_map(|i| a.col_idx()[a.row_ptr()[i]..a.row_ptr()[i + 1]].iter().map(|c| c / 3))
            .collect();
        cols.sort_unstable();
        cols.dedup();
        let first = val.len();
        val.resize(first + 9 * cols.len(), 0.0);
        for d in 0..3 {
            let i = 3 * b + d;
            for k in a.row_ptr()[i]..a.row_ptr()[i + 1] {
                let c = a.col_idx()[k];
                let slot = cols.binary_search(&(c / 3)).unwrap_or_else(|_| unreachable!("block column listed"));
                val[first + 9 * slot + 3 * d + c % 3] = a.values()[k];
            }
        }
        col.extend(cols);
        ptr.push(col.len());
    }
    Ok((ptr, col, val))
}

impl<T: DeviceReal> DeviceOperator<T> {
    fn new(stream: &Arc<CudaStream>, op: GpuOperator<'_>) -> Result<Self> {
        Ok(match op {
            GpuOperator::Schur(s) => {
                let h = s.h_inverse();
                let mut block_of = vec![0; h.dim()];
                for b in 0..h.blocks() {
                    block_of[h.offsets()[b]..h.offsets()[b + 1]].fill(b);
                }
                DeviceOperator::Schur {
                    n: h.dim(),
                    block_of: upload_i32(stream, "block index", &block_of)?,
                    off: upload_i32(stream, "block offset", h.offsets())?,
                    data_off: upload_i32(stream, "block data offset", h.data_offsets())?,
                    hinv: upload(stream, h.data())?,
                    jt: DeviceCsr::new(stream, s.jt())?,
                    j: DeviceCsr::new(stream, s.j())?,
                    t: stream.alloc_zeros::<f64>(h.dim().max(1)).map_err(gpu_err("allocation"))?,
                }
            }
            GpuOperator::Csr(a) => {
                if a.rows() != a.cols() {
                    return Err(Error::InvalidInput(format!(
                        "the PCR matrix must be square, got {} × {}",
                        a.rows(),
                        a.cols()
                    )));
                }
                DeviceOperator::Csr { a: DeviceCsr::new(stream, a)? }
            }
            GpuOperator::Bsr3(a) => {
                let (ptr, col, val) = bsr3_arrays(a)?;
                index32("stored entries", val.len())?;
                DeviceOperator::Bsr3 {
                    block_rows: a.rows() / 3,
                    a: DeviceCsr {
                        ptr: upload_i32(stream, "block row pointer", &ptr)?,
                        col: upload_i32(stream, "block column", &col)?,
                        val: upload(stream, &val)?,
                    },
                }
            }
        })
    }

    /// The grid of the operator's dots kernel: its number of partial sums.
    fn dots_grid(&self, m: usize) -> u32 {
        match self {
            DeviceOperator::Schur { .. } => blocks(m, BLOCK),
            DeviceOperator::Csr { .. } => blocks(m, BLOCK),
            DeviceOperator::Bsr3 { block_rows, .. } => blocks(*block_rows, BLOCK),
        }
    }
}

/// Work vectors and device scalars of one solver.
struct State<T> {
    op: DeviceOperator<T>,
    /// `C + shift`, the preconditioner `P⁻¹` and the start/right-hand-side vectors.
    c: CudaSlice<f64>,
    pinv: CudaSlice<f64>,
    b: CudaSlice<f64>,
    x: CudaSlice<f64>,
    ax: CudaSlice<f64>,
    r: CudaSlice<f64>,
    z: CudaSlice<f64>,
    p: CudaSlice<f64>,
    ap: CudaSlice<f64>,
    az: CudaSlice<f64>,
    q: CudaSlice<f64>,
    part_zaz: CudaSlice<f64>,
    part_rz: CudaSlice<f64>,
    part_bb: CudaSlice<f64>,
    part_apq: CudaSlice<f64>,
    zaz: CudaSlice<f64>,
    res: CudaSlice<f64>,
    target: CudaSlice<f64>,
    flags: CudaSlice<i32>,
    /// A flag that stays 0 (the operator products of the start).
    never: CudaSlice<i32>,
    /// The iterations the scalar arrays have room for.
    capacity: usize,
    /// This solver's own stream (solvers on other threads do not interleave with it).
    stream: Arc<CudaStream>,
    /// Recorded CUDA graphs of the iteration launches, by iteration range: a solve
    /// replays one graph per range instead of launching 3–4 kernels per iteration.
    graphs: HashMap<(usize, usize), Graph>,
    /// Off after a capture failed: launch kernel by kernel.
    use_graphs: bool,
    /// Why the last capture failed, if one did.
    graph_error: Option<String>,
    /// Run the iterations in one persistent kernel (cooperative launch) when the device
    /// allows (off by default: slower than graph replay where measured, see
    /// [`GpuPcr::set_persistent`]); off after a launch failed.
    use_persistent: bool,
    /// Why the last persistent launch failed, if one did.
    persistent_error: Option<String>,
    /// The persistent kernel's grid barrier (arrivals, generation).
    barrier: CudaSlice<u32>,
}

/// A recorded CUDA graph.
struct Graph(CudaGraph);

// SAFETY: a graph is only touched through `&mut State`, by one thread at a time; CUDA
// requires no more of a graph than that (no concurrent use).
unsafe impl Send for Graph {}

/// Jacobi-preconditioned conjugate residuals on the GPU for one system
/// `(A + diag(C) + shift·1) x = b` (module notes).
pub struct GpuPcr {
    gpu: Arc<Gpu>,
    rows: usize,
    diagonal: Vec<f64>,
    state: Precisioned,
}

enum Precisioned {
    F64(Box<State<f64>>),
    F32(Box<State<f32>>),
}

impl std::fmt::Debug for GpuPcr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuPcr").field("rows", &self.rows).field("precision", &self.precision()).finish_non_exhaustive()
    }
}

/// `C + shift`, and `1 / (d + c + shift)` for positive finite sums, 1 otherwise (as the
/// CPU solver).
fn jacobi(diagonal: &[f64], compliance: &[f64], shift: f64) -> (Vec<f64>, Vec<f64>) {
    let c: Vec<f64> = compliance.iter().map(|c| c + shift).collect();
    let pinv = diagonal
        .iter()
        .zip(compliance)
        .map(|(d, c)| {
            // Summed as the CPU solver's `SchurOperator::diagonal`.
            let a = d + c + shift;
            if a > 0.0 && a.is_finite() {
                1.0 / a
            } else {
                1.0
            }
        })
        .collect();
    (c, pinv)
}

fn check_compliance(rows: usize, compliance: &[f64], shift: f64) -> Result<()> {
    if compliance.len() != rows {
        return Err(Error::Dimension { what: "Schur compliance", expected: rows, got: compliance.len() });
    }
    if let Some((i, &v)) = compliance.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(Error::NonFinite { what: "Schur compliance", index: i, value: v });
    }
    if !shift.is_finite() {
        return Err(Error::NonFinite { what: "Schur shift", index: 0, value: shift });
    }
    Ok(())
}

impl GpuPcr {
    /// Uploads `operator` with its entries in `precision`, and the diagonal `compliance`
    /// (one per row) and `shift`.
    ///
    /// Errors: mismatched lengths ([`Error::Dimension`]), non-finite entries
    /// ([`Error::NonFinite`]), sizes beyond 32-bit indices or a device failure
    /// ([`Error::Gpu`]).
    pub fn new(
        gpu: &Arc<Gpu>,
        precision: Precision,
        operator: GpuOperator<'_>,
        compliance: &[f64],
        shift: f64,
    ) -> Result<GpuPcr> {
        let rows = operator.rows();
        check_compliance(rows, compliance, shift)?;
        index32("rows", rows)?;
        let diagonal = operator.diagonal();
        let (c, pinv) = jacobi(&diagonal, compliance, shift);
        let stream = gpu.new_stream()?;
        let stream = &stream;
        let state = match precision {
            Precision::F64 => Precisioned::F64(Box::new(State::new(stream, operator, &c, &pinv)?)),
            Precision::F32 => Precisioned::F32(Box::new(State::new(stream, operator, &c, &pinv)?)),
        };
        Ok(GpuPcr { gpu: gpu.clone(), rows, diagonal, state })
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Whether solves replay recorded CUDA graphs (`Ok`), or launch kernel by kernel
    /// because recording failed (`Err` with the reason; the results are the same).
    pub fn graphs(&self) -> std::result::Result<(), String> {
        let (on, why) = match &self.state {
            Precisioned::F64(s) => (s.use_graphs, &s.graph_error),
            Precisioned::F32(s) => (s.use_graphs, &s.graph_error),
        };
        if on {
            Ok(())
        } else {
            Err(why.clone().unwrap_or_else(|| "graphs disabled".into()))
        }
    }

    /// Switches the replay of recorded CUDA graphs on (the default) or off (kernel by
    /// kernel launches; the results are the same, for timing comparisons).
    pub fn set_graphs(&mut self, on: bool) {
        match &mut self.state {
            Precisioned::F64(s) => s.use_graphs = on,
            Precisioned::F32(s) => s.use_graphs = on,
        }
    }

    /// Switches the persistent kernel (all iterations in one cooperative launch, blocks
    /// meeting at a grid barrier between phases) on or off (the default: recorded CUDA
    /// graphs). The results are the same bit for bit; on an H200 the persistent kernel
    /// took about twice as long per iteration as graph replay (docs/benchmarks.md).
    pub fn set_persistent(&mut self, on: bool) {
        match &mut self.state {
            Precisioned::F64(s) => s.use_persistent = on,
            Precisioned::F32(s) => s.use_persistent = on,
        }
    }

    /// Whether solves run as one persistent kernel (`Ok`), or why not (`Err`: switched
    /// off, no cooperative launch on the device, or a failed launch).
    pub fn persistent(&self) -> std::result::Result<(), String> {
        let (on, why) = match &self.state {
            Precisioned::F64(s) => (s.use_persistent, &s.persistent_error),
            Precisioned::F32(s) => (s.use_persistent, &s.persistent_error),
        };
        match (on, why, self.gpu.resident_blocks(self.precision())) {
            (_, Some(e), _) => Err(e.clone()),
            (false, None, _) => Err("switched off".into()),
            (true, None, 0) => Err("the device has no cooperative launch".into()),
            (true, None, _) => Ok(()),
        }
    }

    /// The precision of the device matrices' entries.
    pub fn precision(&self) -> Precision {
        match self.state {
            Precisioned::F64(_) => Precision::F64,
            Precisioned::F32(_) => Precision::F32,
        }
    }

    /// Replaces the diagonal `compliance` and `shift` (a new Newton iteration over the
    /// same operator); the preconditioner follows.
    pub fn set_compliance(&mut self, compliance: &[f64], shift: f64) -> Result<()> {
        check_compliance(self.rows, compliance, shift)?;
        let (c, pinv) = jacobi(&self.diagonal, compliance, shift);
        match &mut self.state {
            Precisioned::F64(s) => s.set_diagonal(&c, &pinv),
            Precisioned::F32(s) => s.set_diagonal(&c, &pinv),
        }
    }

    /// `(A + diag(C) + shift) x` computed on the device.
    pub fn apply(&mut self, x: &[f64]) -> Result<Vec<f64>> {
        crate::error::check_vector("GPU operator input", x, self.rows)?;
        let gpu = self.gpu.clone();
        match &mut self.state {
            Precisioned::F64(s) => s.apply(&gpu, x),
            Precisioned::F32(s) => s.apply(&gpu, x),
        }
    }

    /// Solves from the start `x` (updated in place) to the stopping rule of `options`,
    /// as `crate::solver::ncp::pcr_solve` does on the CPU.
    ///
    /// Errors: mismatched lengths ([`Error::Dimension`]), a non-finite right-hand side
    /// ([`Error::NonFinite`]), a device failure ([`Error::Gpu`]).
    pub fn solve(&mut self, b: &[f64], x: &mut [f64], options: &PcrOptions) -> Result<PcrReport> {
        let n = self.rows;
        for (what, len) in [("PCR right-hand side", b.len()), ("PCR start", x.len())] {
            if len != n {
                return Err(Error::Dimension { what, expected: n, got: len });
            }
        }
        if let Some((i, &v)) = b.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::NonFinite { what: "PCR right-hand side", index: i, value: v });
        }
        if n == 0 {
            return Ok(PcrReport { iterations: 0, residuals: vec![0.0], converged: true });
        }
        let gpu = self.gpu.clone();
        match &mut self.state {
            Precisioned::F64(s) => s.solve(&gpu, b, x, options),
            Precisioned::F32(s) => s.solve(&gpu, b, x, options),
        }
    }
}

impl<T: DeviceReal> State<T> {
    fn new(stream: &Arc<CudaStream>, operator: GpuOperator<'_>, c: &[f64], pinv: &[f64]) -> Result<Self> {
        let m = c.len().max(1);
        let op = DeviceOperator::new(stream, operator)?;
        let np = (blocks(m, BLOCK).max(op.dots_grid(m))) as usize;
        let zeros = |n: usize| stream.alloc_zeros::<f64>(n).map_err(gpu_err("allocation"));
        let zeros64 = |n: usize| stream.alloc_zeros::<f64>(n).map_err(gpu_err("allocation"));
        Ok(State {
            c: stream.clone_htod(c).map_err(gpu_err("upload"))?,
            pinv: stream.clone_htod(pinv).map_err(gpu_err("upload"))?,
            b: zeros(m)?,
            x: zeros(m)?,
            ax: zeros(m)?,
            r: zeros(m)?,
            z: zeros(m)?,
            p: zeros(m)?,
            ap: zeros(m)?,
            az: zeros(m)?,
            q: zeros(m)?,
            part_zaz: zeros64(np)?,
            part_rz: zeros64(np)?,
            part_bb: zeros64(np)?,
            part_apq: zeros64(np)?,
            zaz: zeros64(1)?,
            res: zeros64(1)?,
            target: zeros64(1)?,
            flags: stream.alloc_zeros::<i32>(3).map_err(gpu_err("allocation"))?,
            never: stream.alloc_zeros::<i32>(1).map_err(gpu_err("allocation"))?,
            capacity: 0,
            stream: stream.clone(),
            graphs: HashMap::new(),
            use_graphs: true,
            graph_error: None,
            use_persistent: false,
            persistent_error: None,
            barrier: stream.alloc_zeros::<u32>(2).map_err(gpu_err("allocation"))?,
            op,
        })
    }

    fn set_diagonal(&mut self, c: &[f64], pinv: &[f64]) -> Result<()> {
        self.stream.memcpy_htod(c, &mut self.c).map_err(gpu_err("upload"))?;
        self.stream.memcpy_htod(pinv, &mut self.pinv).map_err(gpu_err("upload"))
    }

    /// Room for `iterations` iterations in the device scalars (new buffers invalidate
    /// the recorded graphs, which hold their addresses).
    fn reserve(&mut self, iterations: usize) -> Result<()> {
        if iterations > self.capacity {
            let stream = &self.stream;
            self.zaz = stream.alloc_zeros::<f64>(iterations + 1).map_err(gpu_err("allocation"))?;
            self.res = stream.alloc_zeros::<f64>(iterations + 1).map_err(gpu_err("allocation"))?;
            self.flags = stream.alloc_zeros::<i32>(2 * iterations + 3).map_err(gpu_err("allocation"))?;
            self.capacity = iterations;
            self.graphs.clear();
        }
        Ok(())
    }

    /// Launches `out = (A + diag(c)) input`, with the partial sums of `input·out` and
    /// `second·input`, skipped when `*skip` is set. Returns the number of partial sums.
    #[allow(clippy::too_many_arguments)]
    fn launch_operator(
        &self,
        gpu: &Gpu,
        m: usize,
        skip: &CudaView<'_, i32>,
        input: &CudaSlice<f64>,
        second: &CudaSlice<f64>,
        out: &CudaSlice<f64>,
    ) -> Result<i32> {
        let stream = &self.stream;
        let (c, part_zaz, part_rz) = (&self.c, &self.part_zaz, &self.part_rz);
        let p = T::PRECISION;
        let m32 = m as i32;
        let grid = self.op.dots_grid(m);
        let launched = match &self.op {
            DeviceOperator::Schur { n, block_of, off, data_off, hinv, jt, j, t } => {
                let n32 = *n as i32;
                let f = gpu.function(p, "schur_jt");
                let mut l = stream.launch_builder(f);
                l.arg(skip).arg(&n32).arg(&jt.ptr).arg(&jt.col).arg(&jt.val).arg(input).arg(t);
                // SAFETY: the arguments match the kernel's signature and sizes.
                unsafe { l.launch(cfg(blocks(*n, BLOCK))) }.map_err(gpu_err("schur_jt"))?;
                let f = gpu.function(p, "schur_j_dots");
                let mut l = stream.launch_builder(f);
                l.arg(skip).arg(&m32).arg(&j.ptr).arg(&j.col).arg(&j.val).arg(block_of).arg(off).arg(data_off);
                l.arg(hinv).arg(t).arg(c).arg(input).arg(second).arg(out).arg(part_zaz).arg(part_rz);
                // SAFETY: as above.
                unsafe { l.launch(cfg(grid)) }
            }
            DeviceOperator::Csr { a } => {
                let f = gpu.function(p, "csr_dots");
                let mut l = stream.launch_builder(f);
                l.arg(skip).arg(&m32).arg(&a.ptr).arg(&a.col).arg(&a.val).arg(c).arg(input).arg(second);
                l.arg(out).arg(part_zaz).arg(part_rz);
                // SAFETY: as above.
                unsafe { l.launch(cfg(grid)) }
            }
            DeviceOperator::Bsr3 { block_rows, a } => {
                let mb = *block_rows as i32;
                let f = gpu.function(p, "bsr3_dots");
                let mut l = stream.launch_builder(f);
                l.arg(skip).arg(&mb).arg(&a.ptr).arg(&a.col).arg(&a.val).arg(c).arg(input).arg(second);
                l.arg(out).arg(part_zaz).arg(part_rz);
                // SAFETY: as above.
                unsafe { l.launch(cfg(grid)) }
            }
        };
        launched.map_err(gpu_err("operator product"))?;
        Ok(grid as i32)
    }

    fn apply(&mut self, gpu: &Gpu, x: &[f64]) -> Result<Vec<f64>> {
        let m = x.len();
        self.stream.memcpy_htod(x, &mut self.x).map_err(gpu_err("upload"))?;
        let never = self.never.slice(..);
        self.launch_operator(gpu, m, &never, &self.x, &self.x, &self.ax)?;
        self.stream.clone_dtoh(&self.ax.slice(..m)).map_err(gpu_err("download"))
    }

    /// Launches iterations `range` (three or four kernels each).
    fn launch_iterations(&self, gpu: &Gpu, m: usize, range: std::ops::Range<usize>) -> Result<()> {
        let (stream, p, m32) = (&self.stream, T::PRECISION, m as i32);
        let rows_grid = blocks(m, BLOCK);
        let np_rows = rows_grid as i32;
        let np_op = self.op.dots_grid(m) as i32;
        for k in range {
            let k32 = k as i32;
            let mut l = stream.launch_builder(gpu.function(p, "pcr_update"));
            l.arg(&k32).arg(&m32).arg(&self.part_apq).arg(&np_rows).arg(&self.zaz).arg(&self.flags);
            l.arg(&self.x).arg(&self.r).arg(&self.z).arg(&self.p).arg(&self.ap).arg(&self.q);
            // SAFETY: the arguments match the kernel's signature and sizes.
            unsafe { l.launch(cfg(rows_grid)) }.map_err(gpu_err("pcr_update"))?;
            let skip = self.flags.slice(2 * k + 1..2 * k + 2);
            self.launch_operator(gpu, m, &skip, &self.z, &self.r, &self.az)?;
            let mut l = stream.launch_builder(gpu.function(p, "pcr_direction"));
            l.arg(&k32).arg(&m32).arg(&self.part_zaz).arg(&np_op).arg(&self.part_rz).arg(&np_op);
            l.arg(&self.zaz).arg(&self.res).arg(&self.target).arg(&self.flags).arg(&self.z).arg(&self.az);
            l.arg(&self.pinv).arg(&self.p).arg(&self.ap).arg(&self.q).arg(&self.part_apq);
            // SAFETY: as above.
            unsafe { l.launch(cfg(rows_grid)) }.map_err(gpu_err("pcr_direction"))?;
        }
        Ok(())
    }

    /// Runs iterations `range` in one cooperative launch of `pcr_persistent`; `Ok(false)`
    /// (and persistent mode off, with the reason kept) when the device refuses it.
    fn run_persistent(&mut self, gpu: &Gpu, m: usize, range: std::ops::Range<usize>) -> Result<bool> {
        let resident = gpu.resident_blocks(T::PRECISION);
        if !self.use_persistent || resident == 0 {
            return Ok(false);
        }
        let stream = self.stream.clone();
        stream.memset_zeros(&mut self.barrier).map_err(gpu_err("memset"))?;
        let rows_grid = blocks(m, BLOCK);
        let (np_rows, np_op) = (rows_grid as i32, self.op.dots_grid(m) as i32);
        let grid = self.op.dots_grid(m).max(rows_grid).min(resident);
        let (m32, k0, k1) = (m as i32, range.start as i32, range.end as i32);
        let never = &self.never;
        // The operator's arrays, in the kernel's slots (unused slots get a dummy pointer).
        let (kind, n, jt_ptr, jt_col, jt_val, a, block_of, off, data_off, hinv, t): (
            i32,
            i32,
            _,
            _,
            _,
            _,
            _,
            _,
            _,
            _,
            _,
        ) = match &self.op {
            DeviceOperator::Schur { n, block_of, off, data_off, hinv, jt, j, t } => {
                (0, *n as i32, &jt.ptr, &jt.col, jt.val.slice(..), j, block_of, off, data_off, hinv.slice(..), t)
            }
            DeviceOperator::Csr { a } => {
                (1, 0, never, never, a.val.slice(..0), a, never, never, never, a.val.slice(..0), &self.x)
            }
            DeviceOperator::Bsr3 { a, .. } => {
                (2, 0, never, never, a.val.slice(..0), a, never, never, never, a.val.slice(..0), &self.x)
            }
        };
        let f = gpu.function(T::PRECISION, "pcr_persistent");
        let mut l = stream.launch_builder(f);
        l.arg(&kind).arg(&m32).arg(&n).arg(&k0).arg(&k1).arg(jt_ptr).arg(jt_col).arg(&jt_val);
        l.arg(&a.ptr).arg(&a.col).arg(&a.val).arg(block_of).arg(off).arg(data_off).arg(&hinv).arg(t);
        l.arg(&self.c).arg(&self.pinv).arg(&self.x).arg(&self.r).arg(&self.z).arg(&self.p).arg(&self.ap);
        l.arg(&self.az).arg(&self.q).arg(&self.part_zaz).arg(&self.part_rz).arg(&self.part_apq);
        l.arg(&np_rows).arg(&np_op).arg(&self.zaz).arg(&self.res).arg(&self.target).arg(&self.flags);
        l.arg(&self.barrier);
        // SAFETY: the arguments match the kernel's signature; a cooperative launch keeps
        // all `grid` blocks resident, which the kernel's grid barrier needs.
        match unsafe { l.launch_cooperative(cfg(grid)) } {
            Ok(_) => Ok(true),
            Err(e) => {
                self.use_persistent = false;
                self.persistent_error = Some(format!("cooperative launch of {grid} blocks failed: {e}"));
                Ok(false)
            }
        }
    }

    /// Runs iterations `range`: replays its recorded graph, recording it the first time;
    /// kernel by kernel when graphs are unavailable.
    fn run_iterations(&mut self, gpu: &Gpu, m: usize, range: std::ops::Range<usize>) -> Result<()> {
        let key = (range.start, range.end);
        if self.use_graphs && !self.graphs.contains_key(&key) {
            match self.record(gpu, m, range.clone()) {
                Ok(graph) => {
                    self.graphs.insert(key, Graph(graph));
                }
                Err(e) => {
                    self.use_graphs = false;
                    self.graph_error = Some(e.to_string());
                }
            }
        }
        match self.graphs.get(&key) {
            Some(g) if self.use_graphs => g.0.launch().map_err(gpu_err("graph launch")),
            _ => self.launch_iterations(gpu, m, range),
        }
    }

    /// Records the launches of iterations `range` as a CUDA graph.
    fn record(&self, gpu: &Gpu, m: usize, range: std::ops::Range<usize>) -> Result<CudaGraph> {
        self.stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(gpu_err("begin capture"))?;
        let launched = self.launch_iterations(gpu, m, range);
        let graph = self.stream.end_capture(CUgraphInstantiate_flags(0)).map_err(gpu_err("end capture"));
        launched?;
        graph?.ok_or_else(|| Error::Gpu("an empty graph was captured".into()))
    }

    fn solve(&mut self, gpu: &Gpu, b: &[f64], x: &mut [f64], options: &PcrOptions) -> Result<PcrReport> {
        let p = T::PRECISION;
        let m = b.len();
        let m32 = m as i32;
        let max = options.max_iterations;
        self.reserve(max)?;
        let stream = self.stream.clone();
        stream.memset_zeros(&mut self.flags).map_err(gpu_err("memset"))?;
        stream.memcpy_htod(b, &mut self.b).map_err(gpu_err("upload"))?;
        stream.memcpy_htod(&*x, &mut self.x).map_err(gpu_err("upload"))?;
        let rows_grid = blocks(m, BLOCK);
        let np_rows = rows_grid as i32;

        // r = b − A x; z = P⁻¹ r; Az = A z; p = z; Ap = Az.
        {
            let s = &*self;
            let never = s.never.slice(..);
            s.launch_operator(gpu, m, &never, &s.x, &s.x, &s.ax)?;
            let mut l = stream.launch_builder(gpu.function(p, "pcr_start"));
            l.arg(&m32).arg(&s.b).arg(&s.ax).arg(&s.pinv).arg(&s.r).arg(&s.z).arg(&s.part_bb);
            // SAFETY: the arguments match the kernel's signature and sizes.
            unsafe { l.launch(cfg(rows_grid)) }.map_err(gpu_err("pcr_start"))?;
            let np_op = s.launch_operator(gpu, m, &never, &s.z, &s.r, &s.az)?;
            let mut l = stream.launch_builder(gpu.function(p, "pcr_init"));
            l.arg(&m32).arg(&options.tolerance).arg(&s.z).arg(&s.az).arg(&s.pinv).arg(&s.p).arg(&s.ap).arg(&s.q);
            l.arg(&s.part_zaz).arg(&np_op).arg(&s.part_rz).arg(&np_op).arg(&s.part_bb).arg(&np_rows);
            l.arg(&s.part_apq).arg(&s.zaz).arg(&s.res).arg(&s.target).arg(&s.flags);
            // SAFETY: as above.
            unsafe { l.launch(cfg(rows_grid)) }.map_err(gpu_err("pcr_init"))?;
        }

        let check = if options.tolerance > 0.0 { CHECK_EVERY } else { max.max(1) };
        let mut launched = 0;
        if max > 0 && self.run_persistent(gpu, m, 0..max)? {
            launched = max;
        }
        while launched < max {
            let chunk_end = (launched + check).min(max);
            self.run_iterations(gpu, m, launched..chunk_end)?;
            launched = chunk_end;
            if launched < max {
                let flag = self.flags.slice(2 * launched..2 * launched + 1);
                if stream.clone_dtoh(&flag).map_err(gpu_err("download"))?[0] != 0 {
                    break;
                }
            }
        }
        let s = &*self;
        let flags = stream.clone_dtoh(&s.flags.slice(..2 * launched + 1)).map_err(gpu_err("download"))?;
        let iterations = (0..launched).find(|&k| flags[2 * k + 1] != 0).unwrap_or(launched);
        let residuals = stream.clone_dtoh(&s.res.slice(..iterations + 1)).map_err(gpu_err("download"))?;
        let target = stream.clone_dtoh(&s.target).map_err(gpu_err("download"))?[0];
        stream.memcpy_dtoh(&s.x.slice(..m), x).map_err(gpu_err("download"))?;
        let converged = residuals[iterations] <= target;
        Ok(PcrReport { iterations, residuals, converged })
    }
}
