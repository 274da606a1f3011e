// The Jacobi-preconditioned conjugate-residual iteration (Saad 2003, Alg. 6.20; Macklin et
// al. 2019 §8.2) on the device, in the same arithmetic as the CPU solver
// (src/solver/ncp/pcr.rs), with no host round trip inside an iteration. One iteration k:
//
//   pcr_update(k)      α = (z·Az)/(Ap·q);  x += α p;  r −= α Ap;  z −= α q     (q = P⁻¹Ap)
//   <operator>_dots    Az = A z, with the partial sums of z·Az and r·z
//   pcr_direction(k)   β = (z·Az)'/(z·Az);  p = z + β p;  Ap = Az + β Ap;  q = P⁻¹Ap,
//                      with the partial sums of Ap·q; the residual ‖r‖_{P⁻¹} = √(r·z)
//
// The scalars stay on the device: `zaz[k]` (z·Az at the start of iteration k) and
// `res[k]` (the residual after k iterations). `flags[2k]` is set when iteration k must
// not run (the tolerance was reached); `flags[2k+1]` when iteration k did not complete
// (also when its step is undefined, Ap·q ≤ 0). Every kernel of iteration k tests its
// flag first, so a converged solve turns the remaining launches into no-ops, and the
// host reads a flag only every few iterations. All blocks of a kernel compute the same
// sums from the same partials in the same order, so they agree on every decision.

// The rows of one iteration, shared by the one-kernel-per-phase launches and the
// persistent kernel (so the two compute the same numbers). `L` is how vectors written
// during the iteration are loaded: `Plain` between kernels, `Coherent` (through L2, not
// the non-coherent L1) inside the persistent kernel.
struct Plain {
    static __device__ __forceinline__ real ld(const real* p) { return *p; }
};
struct Coherent {
    static __device__ __forceinline__ real ld(const real* p) { return __ldcg(p); }
};

// The step of row i: x += α p; r −= α Ap; z −= α q.
template <class L>
__device__ __forceinline__ void update_row(int i, real alpha, real* x, real* r, real* z, const real* p,
                                           const real* ap, const real* q) {
    x[i] = L::ld(x + i) + alpha * L::ld(p + i);
    r[i] = L::ld(r + i) - alpha * L::ld(ap + i);
    z[i] = L::ld(z + i) - alpha * L::ld(q + i);
}

// (Jᵀ z)_d, row d of Jᵀ in CSR.
template <class L>
__device__ __forceinline__ real jt_row(int d, const int* jt_ptr, const int* jt_col, const mat* jt_val, const real* z) {
    acc v = 0;
    for (int k = jt_ptr[d]; k < jt_ptr[d + 1]; ++k) v += (acc)jt_val[k] * (acc)L::ld(z + jt_col[k]);
    return (real)v;
}

// (J H⁻¹ t)_i. H⁻¹ is applied entry by entry: column d of J lies in block b = block_of[d]
// (rows off[b]..off[b+1], row-major entries from data_off[b]), and
// (H⁻¹ t)_d = Σ_c H⁻¹_b[d − off[b], c] t[off[b] + c].
template <class L>
__device__ __forceinline__ acc schur_row(int i, const int* j_ptr, const int* j_col, const mat* j_val,
                                         const int* block_of, const int* off, const int* data_off, const mat* hinv,
                                         const real* t) {
    acc v = 0;
    for (int k = j_ptr[i]; k < j_ptr[i + 1]; ++k) {
        int d = j_col[k];
        int b = block_of[d];
        int o = off[b], s = off[b + 1] - o;
        const mat* h = hinv + data_off[b] + (d - o) * s;
        acc u = 0;
        for (int e = 0; e < s; ++e) u += (acc)h[e] * (acc)L::ld(t + o + e);
        v += (acc)j_val[k] * u;
    }
    return v;
}

// (A z)_i, A in CSR.
template <class L>
__device__ __forceinline__ acc csr_row(int i, const int* a_ptr, const int* a_col, const mat* a_val, const real* z) {
    acc v = 0;
    for (int k = a_ptr[i]; k < a_ptr[i + 1]; ++k) v += (acc)a_val[k] * (acc)L::ld(z + a_col[k]);
    return v;
}

// Finishes row i of Az from its matrix part `v` (adding c_i z_i, as the CPU does after the
// product) and adds the row's terms of z·Az and r·z.
template <class L>
__device__ __forceinline__ void finish_row(int i, acc v, const real* c, const real* z, const real* r, real* az,
                                           double* zaz, double* rz) {
    real zi = L::ld(z + i);
    real azi = (real)(v + (acc)c[i] * (acc)zi);
    az[i] = azi;
    *zaz += (double)zi * (double)azi;
    *rz += (double)L::ld(r + i) * (double)zi;
}

// Block row b of Az = A z + diag(c) z, A with 3×3 blocks, with its terms of z·Az and r·z.
template <class L>
__device__ __forceinline__ void bsr3_rows(int b, const int* a_ptr, const int* a_col, const mat* a_val, const real* c,
                                          const real* z, const real* r, real* az, double* zaz, double* rz) {
    acc s[3] = {0, 0, 0};
    for (int k = a_ptr[b]; k < a_ptr[b + 1]; ++k) {
        const mat* a = a_val + 9 * (size_t)k;
        const real* xc = z + 3 * a_col[k];
        acc x0 = L::ld(xc), x1 = L::ld(xc + 1), x2 = L::ld(xc + 2);
        s[0] += (acc)a[0] * x0 + (acc)a[1] * x1 + (acc)a[2] * x2;
        s[1] += (acc)a[3] * x0 + (acc)a[4] * x1 + (acc)a[5] * x2;
        s[2] += (acc)a[6] * x0 + (acc)a[7] * x1 + (acc)a[8] * x2;
    }
    for (int d = 0; d < 3; ++d) finish_row<L>(3 * b + d, s[d], c, z, r, az, zaz, rz);
}

// The new direction of row i: p = z + β p; Ap = Az + β Ap; q = P⁻¹ Ap. Returns Ap·q's term.
template <class L>
__device__ __forceinline__ double direction_row(int i, real beta, const real* z, const real* az, const real* pinv,
                                                real* p, real* ap, real* q) {
    real pi = L::ld(z + i) + beta * L::ld(p + i);
    real api = L::ld(az + i) + beta * L::ld(ap + i);
    real qi = pinv[i] * api;
    p[i] = pi;
    ap[i] = api;
    q[i] = qi;
    return (double)api * (double)qi;
}

// Writes the block's partial sums of z·Az and r·z into slot `slot`.
__device__ __forceinline__ void write_dots(int slot, double zaz, double rz, double* part_zaz, double* part_rz) {
    zaz = block_sum(zaz);
    rz = block_sum(rz);
    if (threadIdx.x == 0) {
        part_zaz[slot] = zaz;
        part_rz[slot] = rz;
    }
}

// The step length α = zaz/denom, or 0 with `*ok` false when Ap·q is not positive (the
// step is undefined and the iteration stops).
__device__ __forceinline__ real step_length(double zaz, double denom, bool* ok) {
    *ok = denom > 0.0 && isfinite(denom);
    return *ok ? (real)(zaz / denom) : (real)0;
}

// β = (z·Az)' / (z·Az), 0 when the old product is 0.
__device__ __forceinline__ real direction_ratio(double zaz_new, double zaz_old) {
    return (real)(zaz_old != 0.0 ? zaz_new / zaz_old : 0.0);
}

// Start: r = b − Ax, z = P⁻¹ r, and the partial sums of b·P⁻¹b.
extern "C" __global__ void pcr_start(int m, const real* b, const real* ax, const real* pinv, real* r, real* z,
                                     double* part_bb) {
    int i = row_index();
    double bb = 0.0;
    if (i < m) {
        real ri = b[i] - ax[i];
        r[i] = ri;
        z[i] = pinv[i] * ri;
        bb = (double)b[i] * (double)b[i] * (double)pinv[i];
    }
    bb = block_sum(bb);
    if (threadIdx.x == 0) part_bb[blockIdx.x] = bb;
}

// Az = J H⁻¹ Jᵀ z, first half: t = Jᵀ z, one thread per row of Jᵀ (a velocity
// coordinate).
extern "C" __global__ void schur_jt(const int* skip, int n, const int* jt_ptr, const int* jt_col, const mat* jt_val,
                                    const real* z, real* t) {
    if (*skip) return;
    int d = row_index();
    if (d < n) t[d] = jt_row<Plain>(d, jt_ptr, jt_col, jt_val, z);
}

// Az = J H⁻¹ t + diag(c) z (second half of the Schur operator, with the compliance and
// shift `c`), one thread per row, with the partial sums of z·Az and r·z.
extern "C" __global__ void schur_j_dots(const int* skip, int m, const int* j_ptr, const int* j_col,
                                        const mat* j_val, const int* block_of, const int* off, const int* data_off,
                                        const mat* hinv, const real* t, const real* c, const real* z, const real* r,
                                        real* az, double* part_zaz, double* part_rz) {
    if (*skip) return;
    int i = row_index();
    double zaz = 0.0, rz = 0.0;
    if (i < m) {
        acc v = schur_row<Plain>(i, j_ptr, j_col, j_val, block_of, off, data_off, hinv, t);
        finish_row<Plain>(i, v, c, z, r, az, &zaz, &rz);
    }
    write_dots(blockIdx.x, zaz, rz, part_zaz, part_rz);
}

// Az = A z + diag(c) z for an assembled CSR matrix A, one thread per row, with the
// partial sums of z·Az and r·z.
extern "C" __global__ void csr_dots(const int* skip, int m, const int* a_ptr, const int* a_col, const mat* a_val,
                                    const real* c, const real* z, const real* r, real* az, double* part_zaz,
                                    double* part_rz) {
    if (*skip) return;
    int i = row_index();
    double zaz = 0.0, rz = 0.0;
    if (i < m) finish_row<Plain>(i, csr_row<Plain>(i, a_ptr, a_col, a_val, z), c, z, r, az, &zaz, &rz);
    write_dots(blockIdx.x, zaz, rz, part_zaz, part_rz);
}

// Az = A z + diag(c) z for a 3×3-block CSR matrix A, one thread per block row, with the
// partial sums of z·Az and r·z.
extern "C" __global__ void bsr3_dots(const int* skip, int mb, const int* a_ptr, const int* a_col, const mat* a_val,
                                     const real* c, const real* z, const real* r, real* az, double* part_zaz,
                                     double* part_rz) {
    if (*skip) return;
    int b = row_index();
    double zaz = 0.0, rz = 0.0;
    if (b < mb) bsr3_rows<Plain>(b, a_ptr, a_col, a_val, c, z, r, az, &zaz, &rz);
    write_dots(blockIdx.x, zaz, rz, part_zaz, part_rz);
}

// After the start's operator product: p = z, Ap = Az, q = P⁻¹ Ap with the partial sums
// of Ap·q; block 0 stores z·Az, the start residual and the target, and flags[0].
extern "C" __global__ void pcr_init(int m, double tolerance, const real* z, const real* az, const real* pinv,
                                    real* p, real* ap, real* q, const double* part_zaz, int np_zaz,
                                    const double* part_rz, int np_rz, const double* part_bb, int np_bb,
                                    double* part_apq, double* zaz, double* res, double* target, int* flags) {
    double zaz0 = sum_partials(part_zaz, np_zaz);
    double rz = sum_partials(part_rz, np_rz);
    double bb = sum_partials(part_bb, np_bb);
    int i = row_index();
    double apq = 0.0;
    if (i < m) {
        p[i] = z[i];
        ap[i] = az[i];
        q[i] = pinv[i] * az[i];
        apq = (double)ap[i] * (double)q[i];
    }
    apq = block_sum(apq);
    if (threadIdx.x == 0) part_apq[blockIdx.x] = apq;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        double r0 = sqrt(fmax(rz, 0.0));
        double t = tolerance * sqrt(bb);
        zaz[0] = zaz0;
        res[0] = r0;
        target[0] = t;
        flags[0] = !(r0 > t);
    }
}

// Iteration k, first kernel: the step length and the update of x, r and z.
extern "C" __global__ void pcr_update(int k, int m, const double* part_apq, int np_apq, const double* zaz,
                                      int* flags, real* x, real* r, real* z, const real* p, const real* ap,
                                      const real* q) {
    bool ok = !flags[2 * k];
    real alpha = ok ? step_length(zaz[k], sum_partials(part_apq, np_apq), &ok) : (real)0;
    if (!ok) {
        if (threadIdx.x == 0) {
            flags[2 * k + 1] = 1;
            flags[2 * k + 2] = 1;
        }
        return;
    }
    int i = row_index();
    if (i < m) update_row<Plain>(i, alpha, x, r, z, p, ap, q);
}

// Iteration k, last kernel: the new direction, its preconditioned product and the
// residual; sets flags[2k+2] when the tolerance is reached.
extern "C" __global__ void pcr_direction(int k, int m, const double* part_zaz, int np_zaz, const double* part_rz,
                                         int np_rz, double* zaz, double* res, const double* target, int* flags,
                                         const real* z, const real* az, const real* pinv, real* p, real* ap,
                                         real* q, double* part_apq) {
    if (flags[2 * k + 1]) return;
    double zaz_new = sum_partials(part_zaz, np_zaz);
    double rz = sum_partials(part_rz, np_rz);
    real beta = direction_ratio(zaz_new, zaz[k]);
    int i = row_index();
    double apq = i < m ? direction_row<Plain>(i, beta, z, az, pinv, p, ap, q) : 0.0;
    apq = block_sum(apq);
    double rk = sqrt(fmax(rz, 0.0));
    if (threadIdx.x == 0) {
        part_apq[blockIdx.x] = apq;
        flags[2 * k + 2] = !(rk > target[0]);
        if (blockIdx.x == 0) {
            zaz[k + 1] = zaz_new;
            res[k + 1] = rk;
        }
    }
}

// ---------------------------------------------------------------------------------------
// The whole iteration loop in one persistent kernel: every block stays resident (a
// cooperative launch guarantees it), works through 256-row chunks grid-stride, and the
// blocks meet at a grid barrier between the phases that need all rows. The rows are those
// of the kernels above (the same functions, loading through L2), and so are the chunks of
// the partial sums and their summation order: the iterates are the same bit for bit; only
// the launches are saved.

// All blocks of the grid wait here until every block has arrived. bar[0] counts the
// arrivals, bar[1] is the generation (both 0 before the first launch; the last block of
// each barrier resets the count).
__device__ void grid_barrier(unsigned int* bar) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned int* gen = bar + 1;
        unsigned int g = *gen;
        __threadfence();
        if (atomicAdd(bar, 1u) == gridDim.x - 1) {
            atomicExch(bar, 0u);
            __threadfence();
            atomicAdd(bar + 1, 1u);
        } else {
            while (*gen == g) {
            }
        }
        __threadfence();
    }
    __syncthreads();
}

// As `sum_partials`, reading through L2.
__device__ double sum_partials_cg(const double* part, int np) {
    double v = 0.0;
    for (int i = threadIdx.x; i < np; i += BLOCK) v += __ldcg(part + i);
    return block_sum(v);
}

// The operators of `pcr_persistent`.
#define OP_SCHUR 0
#define OP_CSR 1
#define OP_BSR3 2

// Iterations k0..k_end, from the state `pcr_init` (or an earlier launch) left: the same
// recurrences, flags, scalars and partial sums as pcr_update / <operator>_dots /
// pcr_direction. For OP_SCHUR the a_* arrays are J's.
extern "C" __global__ void pcr_persistent(int op, int m, int n, int k0, int k_end, const int* jt_ptr,
                                          const int* jt_col, const mat* jt_val, const int* a_ptr, const int* a_col,
                                          const mat* a_val, const int* block_of, const int* off, const int* data_off,
                                          const mat* hinv, real* t, const real* c, const real* pinv, real* x,
                                          real* r, real* z, real* p, real* ap, real* az, real* q, double* part_zaz,
                                          double* part_rz, double* part_apq, int np_rows, int np_op, double* zaz,
                                          double* res, const double* target, int* flags, unsigned int* bar) {
    const bool lead = blockIdx.x == 0 && threadIdx.x == 0;
    const int row_chunks = (m + BLOCK - 1) / BLOCK;
    double zaz_k = __ldcg(zaz + k0);
    bool ok = __ldcg(flags + 2 * k0) == 0;
    double goal = __ldcg(target);
    for (int k = k0; k < k_end; ++k) {
        // pcr_update
        real alpha = ok ? step_length(zaz_k, sum_partials_cg(part_apq, np_rows), &ok) : (real)0;
        if (!ok) {
            if (lead) {
                flags[2 * k + 1] = 1;
                flags[2 * k + 2] = 1;
            }
            break;
        }
        for (int ch = blockIdx.x; ch < row_chunks; ch += gridDim.x) {
            int i = ch * BLOCK + threadIdx.x;
            if (i < m) update_row<Coherent>(i, alpha, x, r, z, p, ap, q);
        }
        grid_barrier(bar);
        // The operator, with the partial sums of z·Az and r·z.
        if (op == OP_SCHUR) {
            for (int ch = blockIdx.x; ch < (n + BLOCK - 1) / BLOCK; ch += gridDim.x) {
                int d = ch * BLOCK + threadIdx.x;
                if (d < n) t[d] = jt_row<Coherent>(d, jt_ptr, jt_col, jt_val, z);
            }
            grid_barrier(bar);
        }
        const int op_chunks = op == OP_BSR3 ? (m / 3 + BLOCK - 1) / BLOCK : row_chunks;
        for (int ch = blockIdx.x; ch < op_chunks; ch += gridDim.x) {
            int i = ch * BLOCK + threadIdx.x;
            double zs = 0.0, rs = 0.0;
            if (op == OP_BSR3) {
                if (i < m / 3) bsr3_rows<Coherent>(i, a_ptr, a_col, a_val, c, z, r, az, &zs, &rs);
            } else if (i < m) {
                acc v = op == OP_SCHUR ? schur_row<Coherent>(i, a_ptr, a_col, a_val, block_of, off, data_off, hinv, t)
                                       : csr_row<Coherent>(i, a_ptr, a_col, a_val, z);
                finish_row<Coherent>(i, v, c, z, r, az, &zs, &rs);
            }
            write_dots(ch, zs, rs, part_zaz, part_rz);
        }
        grid_barrier(bar);
        // pcr_direction
        double zaz_new = sum_partials_cg(part_zaz, np_op);
        double rz = sum_partials_cg(part_rz, np_op);
        real beta = direction_ratio(zaz_new, zaz_k);
        for (int ch = blockIdx.x; ch < row_chunks; ch += gridDim.x) {
            int i = ch * BLOCK + threadIdx.x;
            double apq = i < m ? direction_row<Coherent>(i, beta, z, az, pinv, p, ap, q) : 0.0;
            apq = block_sum(apq);
            if (threadIdx.x == 0) part_apq[ch] = apq;
        }
        double rk = sqrt(fmax(rz, 0.0));
        ok = rk > goal;
        zaz_k = zaz_new;
        if (lead) {
            zaz[k + 1] = zaz_new;
            res[k + 1] = rk;
            flags[2 * k + 2] = !ok;
        }
        grid_barrier(bar);
    }
}
