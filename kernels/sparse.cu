// Sparse matrix–vector products and vector kernels (BLAS level 1): matrices of `mat`
// entries, vectors of `real` (double). Index arrays are 32-bit; the launch code checks
// the sizes.

// y = A x, CSR, one thread per row (short rows: contact Jacobians, FEM rows).
extern "C" __global__ void csr_spmv(int m, const int* row_ptr, const int* col, const mat* val, const real* x,
                                    real* y) {
    int i = row_index();
    if (i >= m) return;
    real s = 0;
    for (int k = row_ptr[i]; k < row_ptr[i + 1]; ++k) s += val[k] * x[col[k]];
    y[i] = s;
}

// The sum of `v` over a warp by a fixed butterfly; lane 0 holds the result.
__device__ __forceinline__ real warp_sum(real v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// y = A x, CSR, one warp per row (long rows: assembled Delassus matrices).
extern "C" __global__ void csr_spmv_warp(int m, const int* row_ptr, const int* col, const mat* val, const real* x,
                                         real* y) {
    int i = blockIdx.x * WARP_ROWS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (i >= m) return;
    real s = 0;
    for (int k = row_ptr[i] + lane; k < row_ptr[i + 1]; k += 32) s += val[k] * x[col[k]];
    s = warp_sum(s);
    if (lane == 0) y[i] = s;
}

// y = A x, 3×3-block CSR (BSR): block row `b` holds blocks `row_ptr[b]..row_ptr[b+1]`,
// block `k` at block column `col[k]` with row-major entries `val[9k..9k+9]`.
extern "C" __global__ void bsr3_spmv(int mb, const int* row_ptr, const int* col, const mat* val, const real* x,
                                     real* y) {
    int b = row_index();
    if (b >= mb) return;
    real s0 = 0, s1 = 0, s2 = 0;
    for (int k = row_ptr[b]; k < row_ptr[b + 1]; ++k) {
        const mat* a = val + 9 * (size_t)k;
        const real* xc = x + 3 * col[k];
        real x0 = xc[0], x1 = xc[1], x2 = xc[2];
        s0 += a[0] * x0 + a[1] * x1 + a[2] * x2;
        s1 += a[3] * x0 + a[4] * x1 + a[5] * x2;
        s2 += a[6] * x0 + a[7] * x1 + a[8] * x2;
    }
    y[3 * b] = s0;
    y[3 * b + 1] = s1;
    y[3 * b + 2] = s2;
}

// y = D x for a block-diagonal D of dense row-major blocks: block `b` covers rows
// `off[b]..off[b+1]` (at most 6) with entries from `data_off[b]`.
extern "C" __global__ void blockdiag_spmv(int nb, const int* off, const int* data_off, const mat* data,
                                          const real* x, real* y) {
    int b = row_index();
    if (b >= nb) return;
    int o = off[b], s = off[b + 1] - o;
    const mat* d = data + data_off[b];
    for (int r = 0; r < s; ++r) {
        real v = 0;
        for (int c = 0; c < s; ++c) v += d[r * s + c] * x[o + c];
        y[o + r] = v;
    }
}

// y += a x.
extern "C" __global__ void vec_axpy(int n, double a, const real* x, real* y) {
    int i = row_index();
    if (i < n) y[i] += (real)a * x[i];
}

// x *= a.
extern "C" __global__ void vec_scal(int n, double a, real* x) {
    int i = row_index();
    if (i < n) x[i] *= (real)a;
}

// The Jacobi preconditioner `pinv = 1 / d` of a diagonal `d` (see `jacobi_entry`).
extern "C" __global__ void jacobi_inverse(int n, const real* d, real* pinv) {
    int i = row_index();
    if (i < n) pinv[i] = jacobi_entry(d[i]);
}

// out = a ⊙ b (the Jacobi preconditioner applied: z = P⁻¹ r).
extern "C" __global__ void vec_mul(int n, const real* a, const real* b, real* out) {
    int i = row_index();
    if (i < n) out[i] = a[i] * b[i];
}

// First pass of x·y: one partial sum per block (grid-stride over n).
extern "C" __global__ void dot_partial(int n, const real* x, const real* y, double* part) {
    double v = 0.0;
    for (int i = row_index(); i < n; i += gridDim.x * BLOCK) v += (double)x[i] * (double)y[i];
    v = block_sum(v);
    if (threadIdx.x == 0) part[blockIdx.x] = v;
}

// Second pass: out[0] = the sum of the np partials (one block).
extern "C" __global__ void dot_final(int np, const double* part, double* out) {
    double v = sum_partials(part, np);
    if (threadIdx.x == 0) out[0] = v;
}
