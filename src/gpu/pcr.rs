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
use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits};
use std::sync::Arc;

/// Threads per block (`BLOCK` in `kernels/common.cuh`).
const BLOCK: u32 = 256;
/// Rows per block of the warp-per-row kernels (`WARP_ROWS`).
const WARP_ROWS: u32 = 8;
/// Rows of at least this many entries on average are multiplied one warp per row.
const WARP_ROW_NNZ: usize = 24;
/// With a tolerance, the host reads the convergence flag after every this many
/// iterations (the kernels of later iterations are no-ops once it is set).
pub const CHECK_EVERY: usize = 8;

/// The system matrix of a [`GpuPcr`], before the diagonal `C + shift` is added.
#[derive(Clone, Copy, Debug)]
pub enum GpuOperator<'a> {
    /// The Schur operator `J H⁻¹ Jᵀ` (sparse `J`, block-diagonal `H⁻¹`), applied in
    /// factored form.
    Schur(&'a SparseSchur),
    /// An assembled symmetric matrix (both triangles stored), one thread per row (or one
    /// warp per row for long rows).
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

/// A scalar type of the device vectors.
trait DeviceReal: DeviceRepr + ValidAsZeroBits + Copy + Default + Unpin + 'static {
    const PRECISION: Precision;
    fn of(x: f64) -> Self;
    fn to(self) -> f64;
}

impl DeviceReal for f64 {
    const PRECISION: Precision = Precision::F64;
    fn of(x: f64) -> f64 {
        x
    }
    fn to(self) -> f64 {
        self
    }
}

impl DeviceReal for f32 {
    const PRECISION: Precision = Precision::F32;
    fn of(x: f64) -> f32 {
        x as f32
    }
    fn to(self) -> f64 {
        self as f64
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

/// The operator on the device.
enum DeviceOperator<T> {
    Schur {
        blocks: usize,
        off: CudaSlice<i32>,
        data_off: CudaSlice<i32>,
        hinv: CudaSlice<T>,
        jt: DeviceCsr<T>,
        j: DeviceCsr<T>,
        u: CudaSlice<T>,
    },
    Csr {
        warp: bool,
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
                DeviceOperator::Schur {
                    blocks: h.blocks(),
                    off: upload_i32(stream, "block offset", h.offsets())?,
                    data_off: upload_i32(stream, "block data offset", h.data_offsets())?,
                    hinv: upload(stream, h.data())?,
                    jt: DeviceCsr::new(stream, s.jt())?,
                    j: DeviceCsr::new(stream, s.j())?,
                    u: stream.alloc_zeros::<T>(h.dim().max(1)).map_err(gpu_err("allocation"))?,
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
                DeviceOperator::Csr { warp: a.nnz() >= WARP_ROW_NNZ * a.rows().max(1), a: DeviceCsr::new(stream, a)? }
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
            DeviceOperator::Csr { warp: false, .. } => blocks(m, BLOCK),
            DeviceOperator::Csr { warp: true, .. } => blocks(m, WARP_ROWS),
            DeviceOperator::Bsr3 { block_rows, .. } => blocks(*block_rows, BLOCK),
        }
    }
}

/// Work vectors and device scalars of one solver.
struct State<T> {
    op: DeviceOperator<T>,
    /// `C + shift`, the preconditioner `P⁻¹` and the start/right-hand-side vectors.
    c: CudaSlice<T>,
    pinv: CudaSlice<T>,
    b: CudaSlice<T>,
    x: CudaSlice<T>,
    ax: CudaSlice<T>,
    r: CudaSlice<T>,
    z: CudaSlice<T>,
    p: CudaSlice<T>,
    ap: CudaSlice<T>,
    az: CudaSlice<T>,
    q: CudaSlice<T>,
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
}

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

/// `1 / (d + c + shift)` for positive finite sums, 1 otherwise (as the CPU solver).
fn jacobi(diagonal: &[f64], compliance: &[f64], shift: f64) -> (Vec<f64>, Vec<f64>) {
    let c: Vec<f64> = compliance.iter().map(|c| c + shift).collect();
    let pinv = diagonal
        .iter()
        .zip(&c)
        .map(|(d, c)| {
            let a = d + c;
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
    /// Uploads `operator`, the diagonal `compliance` (one per row) and `shift`, in
    /// `precision`.
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
        let stream = gpu.stream();
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

    /// The precision of the device vectors.
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
        let stream = self.gpu.stream().clone();
        match &mut self.state {
            Precisioned::F64(s) => s.set_diagonal(&stream, &c, &pinv),
            Precisioned::F32(s) => s.set_diagonal(&stream, &c, &pinv),
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
        let zeros = |n: usize| stream.alloc_zeros::<T>(n).map_err(gpu_err("allocation"));
        let zeros64 = |n: usize| stream.alloc_zeros::<f64>(n).map_err(gpu_err("allocation"));
        let capacity = 0;
        Ok(State {
            c: upload(stream, c)?,
            pinv: upload(stream, pinv)?,
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
            zaz: zeros64(capacity + 1)?,
            res: zeros64(capacity + 1)?,
            target: zeros64(1)?,
            flags: stream.alloc_zeros::<i32>(2 * capacity + 3).map_err(gpu_err("allocation"))?,
            never: stream.alloc_zeros::<i32>(1).map_err(gpu_err("allocation"))?,
            capacity,
            op,
        })
    }

    fn set_diagonal(&mut self, stream: &Arc<CudaStream>, c: &[f64], pinv: &[f64]) -> Result<()> {
        let host: Vec<T> = c.iter().map(|&v| T::of(v)).collect();
        stream.memcpy_htod(&host, &mut self.c).map_err(gpu_err("upload"))?;
        let host: Vec<T> = pinv.iter().map(|&v| T::of(v)).collect();
        stream.memcpy_htod(&host, &mut self.pinv).map_err(gpu_err("upload"))
    }

    /// Room for `iterations` iterations in the device scalars.
    fn reserve(&mut self, stream: &Arc<CudaStream>, iterations: usize) -> Result<()> {
        if iterations > self.capacity {
            self.zaz = stream.alloc_zeros::<f64>(iterations + 1).map_err(gpu_err("allocation"))?;
            self.res = stream.alloc_zeros::<f64>(iterations + 1).map_err(gpu_err("allocation"))?;
            self.flags = stream.alloc_zeros::<i32>(2 * iterations + 3).map_err(gpu_err("allocation"))?;
            self.capacity = iterations;
        }
        Ok(())
    }

    /// Launches `out = (A + diag(c)) input`, with the partial sums of `input·out` and
    /// `second·input`, skipped when `*skip` is set. Returns the number of partial sums.
    #[allow(clippy::too_many_arguments)]
    fn launch_operator(
        op: &DeviceOperator<T>,
        gpu: &Gpu,
        m: usize,
        skip: &cudarc::driver::CudaView<'_, i32>,
        c: &CudaSlice<T>,
        input: &CudaSlice<T>,
        second: &CudaSlice<T>,
        out: &CudaSlice<T>,
        part_zaz: &CudaSlice<f64>,
        part_rz: &CudaSlice<f64>,
    ) -> Result<i32> {
        let stream = gpu.stream();
        let p = T::PRECISION;
        let m32 = m as i32;
        let grid = op.dots_grid(m);
        let launched = match op {
            DeviceOperator::Schur { blocks: nb, off, data_off, hinv, jt, j, u } => {
                let nb32 = *nb as i32;
                let f = gpu.function(p, "schur_jt_hinv");
                let mut l = stream.launch_builder(f);
                l.arg(skip).arg(&nb32).arg(off).arg(data_off).arg(hinv).arg(&jt.ptr).arg(&jt.col).arg(&jt.val);
                l.arg(input).arg(u);
                // SAFETY: the arguments match the kernel's signature and sizes.
                unsafe { l.launch(cfg(blocks(*nb, BLOCK))) }.map_err(gpu_err("schur_jt_hinv"))?;
                let f = gpu.function(p, "schur_j_dots");
                let mut l = stream.launch_builder(f);
                l.arg(skip).arg(&m32).arg(&j.ptr).arg(&j.col).arg(&j.val).arg(u).arg(c).arg(input).arg(second);
                l.arg(out).arg(part_zaz).arg(part_rz);
                // SAFETY: as above.
                unsafe { l.launch(cfg(grid)) }
            }
            DeviceOperator::Csr { warp, a } => {
                let f = gpu.function(p, if *warp { "csr_dots_warp" } else { "csr_dots" });
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
        let stream = gpu.stream();
        let m = x.len();
        let host: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
        stream.memcpy_htod(&host, &mut self.x).map_err(gpu_err("upload"))?;
        let never = self.never.slice(..);
        Self::launch_operator(
            &self.op,
            gpu,
            m,
            &never,
            &self.c,
            &self.x,
            &self.x,
            &self.ax,
            &self.part_zaz,
            &self.part_rz,
        )?;
        let out = stream.clone_dtoh(&self.ax.slice(..m)).map_err(gpu_err("download"))?;
        Ok(out.into_iter().map(T::to).collect())
    }

    fn solve(&mut self, gpu: &Gpu, b: &[f64], x: &mut [f64], options: &PcrOptions) -> Result<PcrReport> {
        let stream = gpu.stream().clone();
        let p = T::PRECISION;
        let m = b.len();
        let m32 = m as i32;
        let max = options.max_iterations;
        self.reserve(&stream, max)?;
        stream.memset_zeros(&mut self.flags).map_err(gpu_err("memset"))?;
        let host: Vec<T> = b.iter().map(|&v| T::of(v)).collect();
        stream.memcpy_htod(&host, &mut self.b).map_err(gpu_err("upload"))?;
        let host: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
        stream.memcpy_htod(&host, &mut self.x).map_err(gpu_err("upload"))?;
        let rows_grid = blocks(m, BLOCK);
        let np_rows = rows_grid as i32;

        // r = b − A x; z = P⁻¹ r; Az = A z; p = z; Ap = Az.
        let never = self.never.slice(..);
        let s = &*self;
        Self::launch_operator(&s.op, gpu, m, &never, &s.c, &s.x, &s.x, &s.ax, &s.part_zaz, &s.part_rz)?;
        let mut l = stream.launch_builder(gpu.function(p, "pcr_start"));
        l.arg(&m32).arg(&s.b).arg(&s.ax).arg(&s.pinv).arg(&s.r).arg(&s.z).arg(&s.part_bb);
        // SAFETY: the arguments match the kernel's signature and sizes.
        unsafe { l.launch(cfg(rows_grid)) }.map_err(gpu_err("pcr_start"))?;
        let np_op = Self::launch_operator(&s.op, gpu, m, &never, &s.c, &s.z, &s.r, &s.az, &s.part_zaz, &s.part_rz)?;
        let mut l = stream.launch_builder(gpu.function(p, "pcr_init"));
        l.arg(&m32).arg(&options.tolerance).arg(&s.z).arg(&s.az).arg(&s.pinv).arg(&s.p).arg(&s.ap).arg(&s.q);
        l.arg(&s.part_zaz).arg(&np_op).arg(&s.part_rz).arg(&np_op).arg(&s.part_bb).arg(&np_rows);
        l.arg(&s.part_apq).arg(&s.zaz).arg(&s.res).arg(&s.target).arg(&s.flags);
        // SAFETY: as above.
        unsafe { l.launch(cfg(rows_grid)) }.map_err(gpu_err("pcr_init"))?;

        let check = if options.tolerance > 0.0 { CHECK_EVERY } else { max.max(1) };
        let mut launched = 0;
        while launched < max {
            let chunk_end = (launched + check).min(max);
            for k in launched..chunk_end {
                let k32 = k as i32;
                let mut l = stream.launch_builder(gpu.function(p, "pcr_update"));
                l.arg(&k32).arg(&m32).arg(&s.part_apq).arg(&np_rows).arg(&s.zaz).arg(&s.flags);
                l.arg(&s.x).arg(&s.r).arg(&s.z).arg(&s.p).arg(&s.ap).arg(&s.q);
                // SAFETY: as above.
                unsafe { l.launch(cfg(rows_grid)) }.map_err(gpu_err("pcr_update"))?;
                let skip = s.flags.slice(2 * k + 1..2 * k + 2);
                Self::launch_operator(&s.op, gpu, m, &skip, &s.c, &s.z, &s.r, &s.az, &s.part_zaz, &s.part_rz)?;
                let mut l = stream.launch_builder(gpu.function(p, "pcr_direction"));
                l.arg(&k32).arg(&m32).arg(&s.part_zaz).arg(&np_op).arg(&s.part_rz).arg(&np_op);
                l.arg(&s.zaz).arg(&s.res).arg(&s.target).arg(&s.flags).arg(&s.z).arg(&s.az).arg(&s.pinv);
                l.arg(&s.p).arg(&s.ap).arg(&s.q).arg(&s.part_apq);
                // SAFETY: as above.
                unsafe { l.launch(cfg(rows_grid)) }.map_err(gpu_err("pcr_direction"))?;
            }
            launched = chunk_end;
            if launched < max {
                let stop =
                    stream.clone_dtoh(&s.flags.slice(2 * launched..2 * launched + 1)).map_err(gpu_err("download"))?;
                if stop[0] != 0 {
                    break;
                }
            }
        }
        let flags = stream.clone_dtoh(&s.flags.slice(..2 * launched + 1)).map_err(gpu_err("download"))?;
        let iterations = (0..launched).find(|&k| flags[2 * k + 1] != 0).unwrap_or(launched);
        let residuals = stream.clone_dtoh(&s.res.slice(..iterations + 1)).map_err(gpu_err("download"))?;
        let target = stream.clone_dtoh(&s.target).map_err(gpu_err("download"))?[0];
        let xs = stream.clone_dtoh(&s.x.slice(..m)).map_err(gpu_err("download"))?;
        for (xi, v) in x.iter_mut().zip(xs) {
            *xi = v.to();
        }
        let converged = residuals[iterations] <= target;
        Ok(PcrReport { iterations, residuals, converged })
    }
}
