// Shared definitions of stiction's CUDA kernels (compiled at run time with NVRTC; see
// src/gpu/kernels.rs). Matrix entries have the type `mat`, `double` or `float`, chosen by
// the option -DREAL=...: most of an iteration's memory traffic is the matrix. Vectors
// (`real`) and every sum are double in both precisions.
//
// The kernels are compiled with --fmad=false and sum in the CPU solver's order (a row's
// entries first, then the diagonal term), and the CPU conjugate-residual solver sums its
// dot products in the same blocked order as `block_sum`/`sum_partials`: in f64 the device
// iterates equal the CPU ones bit for bit.
//
// Every reduction is deterministic: a kernel writes one partial sum per block, reduced
// inside the block by a fixed tree, and its consumer sums the partials in a fixed order
// (`sum_partials`). The same inputs give bit-identical results from run to run.

#ifndef REAL
#define REAL double
#endif
typedef REAL mat;
typedef double real;
// Row sums of matrix–vector products.
typedef double acc;

// Threads per block of every row-wise kernel; the launch code uses the same number.
#define BLOCK 256

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

