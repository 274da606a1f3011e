// Shared definitions of stiction's CUDA kernels (compiled at run time with NVRTC; see
// src/gpu/kernels.rs). The scalar type `real` is `double` or `float`, chosen by the
// option -DREAL=...; reductions always accumulate in double.
//
// Every reduction is deterministic: a kernel writes one partial sum per block, reduced
// inside the block by a fixed tree, and its consumer sums the partials in a fixed order
// (`sum_partials`). The same inputs give bit-identical results from run to run.

#ifndef REAL
#define REAL double
#endif
typedef REAL real;

// Threads per block of every row-wise kernel; the launch code uses the same number.
#define BLOCK 256
// Rows per block of the warp-per-row kernels (BLOCK / 32).
#define WARP_ROWS 8

// The sum of `v` over the block (blockDim.x == BLOCK), by a fixed tree; every thread
// gets the result.
__device__ double block_sum(double v) {
    __shared__ double s[BLOCK];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int o = BLOCK / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
        __syncthreads();
    }
    double r = s[0];
    __syncthreads();
    return r;
}

// The sum of the `np` partial sums `part`, in a fixed order; every thread of the block
// gets the result (each block that calls it computes the same value).
__device__ double sum_partials(const double* part, int np) {
    double v = 0.0;
    for (int i = threadIdx.x; i < np; i += BLOCK) v += part[i];
    return block_sum(v);
}

// Thread `t`'s row in a thread-per-row kernel.
__device__ __forceinline__ int row_index() { return blockIdx.x * BLOCK + threadIdx.x; }

// The Jacobi preconditioner's entry for a diagonal entry `d` (entries ≤ 0 or not finite
// give 1, as in the CPU solver).
__device__ __forceinline__ real jacobi_entry(real d) {
    return (d > (real)0 && isfinite(d)) ? (real)1 / d : (real)1;
}
