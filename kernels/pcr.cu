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
// coordinate), Jᵀ in CSR.
extern "C" __global__ void schur_jt(const int* skip, int n, const int* jt_ptr, const int* jt_col, const mat* jt_val,
                                    const real* z, real* t) {
    if (*skip) return;
    int d = row_index();
    if (d >= n) return;
    acc v = 0;
    for (int k = jt_ptr[d]; k < jt_ptr[d + 1]; ++k) v += (acc)jt_val[k] * (acc)z[jt_col[k]];
    t[d] = (real)v;
}

// Row i's share of the two dot products z·Az and r·z.
__device__ __forceinline__ void row_dots(int i, int m, real azi, const real* z, const real* r, real* az,
                                         double* zaz, double* rz) {
    if (i < m) {
        az[i] = azi;
        *zaz = (double)z[i] * (double)azi;
        *rz = (double)r[i] * (double)z[i];
    }
}

// Writes the block's partial sums of z·Az and r·z.
__device__ __forceinline__ void write_dots(double zaz, double rz, double* part_zaz, double* part_rz) {
    zaz = block_sum(zaz);
    rz = block_sum(rz);
    if (threadIdx.x == 0) {
        part_zaz[blockIdx.x] = zaz;
        part_rz[blockIdx.x] = rz;
    }
}

// Az = J H⁻¹ t + diag(c) z (second half of the Schur operator, with the compliance and
// shift `c`), one thread per row, with the partial sums of z·Az and r·z. H⁻¹ is applied
// entry by entry: column d of J lies in block b = block_of[d] (rows off[b]..off[b+1],
// row-major entries from data_off[b]), and (H⁻¹ t)_d = Σ_c H⁻¹_b[d − off[b], c] t[off[b] + c].
extern "C" __global__ void schur_j_dots(const int* skip, int m, const int* j_ptr, const int* j_col,
                                        const mat* j_val, const int* block_of, const int* off, const int* data_off,
                                        const mat* hinv, const real* t, const real* c, const real* z, const real* r,
                                        real* az, double* part_zaz, double* part_rz) {
    if (*skip) return;
    int i = row_index();
    double zaz = 0.0, rz = 0.0;
    if (i < m) {
        acc v = 0;
        for (int k = j_ptr[i]; k < j_ptr[i + 1]; ++k) {
            int d = j_col[k];
            int b = block_of[d];
            int o = off[b], s = off[b + 1] - o;
            const mat* h = hinv + data_off[b] + (d - o) * s;
            acc u = 0;
            for (int e = 0; e < s; ++e) u += (acc)h[e] * (acc)t[o + e];
            v += (acc)j_val[k] * u;
        }
        v += (acc)c[i] * (acc)z[i];
        row_dots(i, m, (real)v, z, r, az, &zaz, &rz);
    }
    write_dots(zaz, rz, part_zaz, part_rz);
}

// Az = A z + diag(c) z for an assembled CSR matrix A, one thread per row, with the
// partial sums of z·Az and r·z.
extern "C" __global__ void csr_dots(const int* skip, int m, const int* a_ptr, const int* a_col, const mat* a_val,
                                    const real* c, const real* z, const real* r, real* az, double* part_zaz,
                                    double* part_rz) {
    if (*skip) return;
    int i = row_index();
    double zaz = 0.0, rz = 0.0;
    if (i < m) {
        acc v = 0;
        for (int k = a_ptr[i]; k < a_ptr[i + 1]; ++k) v += (acc)a_val[k] * (acc)z[a_col[k]];
        v += (acc)c[i] * (acc)z[i];
        row_dots(i, m, (real)v, z, r, az, &zaz, &rz);
    }
    write_dots(zaz, rz, part_zaz, part_rz);
}

// Az = A z + diag(c) z for a 3×3-block CSR matrix A, one thread per block row, with the
// partial sums of z·Az and r·z.
extern "C" __global__ void bsr3_dots(const int* skip, int mb, const int* a_ptr, const int* a_col, const mat* a_val,
                                     const real* c, const real* z, const real* r, real* az, double* part_zaz,
                                     double* part_rz) {
    if (*skip) return;
    int b = row_index();
    double zaz = 0.0, rz = 0.0;
    if (b < mb) {
        acc s0 = 0, s1 = 0, s2 = 0;
        for (int k = a_ptr[b]; k < a_ptr[b + 1]; ++k) {
            const mat* a = a_val + 9 * (size_t)k;
            const real* xc = z + 3 * a_col[k];
            acc x0 = xc[0], x1 = xc[1], x2 = xc[2];
            s0 += (acc)a[0] * x0 + (acc)a[1] * x1 + (acc)a[2] * x2;
            s1 += (acc)a[3] * x0 + (acc)a[4] * x1 + (acc)a[5] * x2;
            s2 += (acc)a[6] * x0 + (acc)a[7] * x1 + (acc)a[8] * x2;
        }
        acc s[3] = {s0, s1, s2};
        for (int d = 0; d < 3; ++d) {
            int i = 3 * b + d;
            double zi = 0.0, ri = 0.0;
            row_dots(i, 3 * mb, (real)(s[d] + (acc)c[i] * (acc)z[i]), z, r, az, &zi, &ri);
            zaz += zi;
            rz += ri;
        }
    }
    write_dots(zaz, rz, part_zaz, part_rz);
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
    if (flags[2 * k]) {
        if (threadIdx.x == 0) {
            flags[2 * k + 1] = 1;
            flags[2 * k + 2] = 1;
        }
        return;
    }
    double denom = sum_partials(part_apq, np_apq);
    if (!(denom > 0.0 && isfinite(denom))) {
        if (threadIdx.x == 0) {
            flags[2 * k + 1] = 1;
            flags[2 * k + 2] = 1;
        }
        return;
    }
    real alpha = (real)(zaz[k] / denom);
    int i = row_index();
    if (i < m) {
        x[i] += alpha * p[i];
        r[i] -= alpha * ap[i];
        z[i] -= alpha * q[i];
    }
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
    double zaz_old = zaz[k];
    real beta = (real)(zaz_old != 0.0 ? zaz_new / zaz_old : 0.0);
    int i = row_index();
    double apq = 0.0;
    if (i < m) {
        real pi = z[i] + beta * p[i];
        real api = az[i] + beta * ap[i];
        real qi = pinv[i] * api;
        p[i] = pi;
        ap[i] = api;
        q[i] = qi;
        apq = (double)api * (double)qi;
    }
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
// blocks meet at a grid barrier between the phases that need all rows. The arithmetic,
// the chunks of the partial sums and their summation order are those of the kernels
// above, so the iterates are the same bit for bit; only the launches are saved. Vectors
// written inside the kernel are read with __ldcg (L2, not the non-coherent L1).

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
// pcr_direction.
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
    bool stop = __ldcg(flags + 2 * k0) != 0;
    double goal = __ldcg(target);
    for (int k = k0; k < k_end; ++k) {
        if (stop) {
            if (lead) {
                flags[2 * k + 1] = 1;
                flags[2 * k + 2] = 1;
            }
            break;
        }
        // pcr_update
        double denom = sum_partials_cg(part_apq, np_rows);
        if (!(denom > 0.0 && isfinite(denom))) {
            if (lead) {
                flags[2 * k + 1] = 1;
                flags[2 * k + 2] = 1;
            }
            break;
        }
        real alpha = (real)(zaz_k / denom);
        for (int ch = blockIdx.x; ch < row_chunks; ch += gridDim.x) {
            int i = ch * BLOCK + threadIdx.x;
            if (i < m) {
                x[i] = __ldcg(x + i) + alpha * __ldcg(p + i);
                r[i] = __ldcg(r + i) - alpha * __ldcg(ap + i);
                z[i] = __ldcg(z + i) - alpha * __ldcg(q + i);
            }
        }
        grid_barrier(bar);
        // The operator: Az = A z + diag(c) z, with the partial sums of z·Az and r·z.
        if (op == OP_SCHUR) {
            for (int ch = blockIdx.x; ch < (n + BLOCK - 1) / BLOCK; ch += gridDim.x) {
                int d = ch * BLOCK + threadIdx.x;
                if (d < n) {
                    acc v = 0;
                    for (int e = jt_ptr[d]; e < jt_ptr[d + 1]; ++e) v += (acc)jt_val[e] * (acc)__ldcg(z + jt_col[e]);
                    t[d] = (real)v;
                }
            }
            grid_barrier(bar);
        }
        const int op_chunks = op == OP_BSR3 ? (m / 3 + BLOCK - 1) / BLOCK : row_chunks;
        for (int ch = blockIdx.x; ch < op_chunks; ch += gridDim.x) {
            double zs = 0.0, rs = 0.0;
            if (op == OP_BSR3) {
                int b = ch * BLOCK + threadIdx.x;
                if (b < m / 3) {
                    acc s0 = 0, s1 = 0, s2 = 0;
                    for (int e = a_ptr[b]; e < a_ptr[b + 1]; ++e) {
                        const mat* a = a_val + 9 * (size_t)e;
                        const real* xc = z + 3 * a_col[e];
                        acc x0 = __ldcg(xc), x1 = __ldcg(xc + 1), x2 = __ldcg(xc + 2);
                        s0 += (acc)a[0] * x0 + (acc)a[1] * x1 + (acc)a[2] * x2;
                        s1 += (acc)a[3] * x0 + (acc)a[4] * x1 + (acc)a[5] * x2;
                        s2 += (acc)a[6] * x0 + (acc)a[7] * x1 + (acc)a[8] * x2;
                    }
                    acc s[3] = {s0, s1, s2};
                    for (int dd = 0; dd < 3; ++dd) {
                        int i = 3 * b + dd;
                        real zi = __ldcg(z + i);
                        real v = (real)(s[dd] + (acc)c[i] * (acc)zi);
                        az[i] = v;
                        zs += (double)zi * (double)v;
                        rs += (double)__ldcg(r + i) * (double)zi;
                    }
                }
            } else {
                int i = ch * BLOCK + threadIdx.x;
                if (i < m) {
                    acc v = 0;
                    if (op == OP_SCHUR) {
                        for (int e = a_ptr[i]; e < a_ptr[i + 1]; ++e) {
                            int d = a_col[e];
                            int b = block_of[d];
                            int o = off[b], s = off[b + 1] - o;
                            const mat* h = hinv + data_off[b] + (d - o) * s;
                            acc u = 0;
                            for (int f = 0; f < s; ++f) u += (acc)h[f] * (acc)__ldcg(t + o + f);
                            v += (acc)a_val[e] * u;
                        }
                    } else {
                        for (int e = a_ptr[i]; e < a_ptr[i + 1]; ++e) v += (acc)a_val[e] * (acc)__ldcg(z + a_col[e]);
                    }
                    real zi = __ldcg(z + i);
                    v += (acc)c[i] * (acc)zi;
                    az[i] = (real)v;
                    zs = (double)zi * (double)(real)v;
                    rs = (double)__ldcg(r + i) * (double)zi;
                }
            }
            zs = block_sum(zs);
            rs = block_sum(rs);
            if (threadIdx.x == 0) {
                part_zaz[ch] = zs;
                part_rz[ch] = rs;
            }
        }
        grid_barrier(bar);
        // pcr_direction
        double zaz_new = sum_partials_cg(part_zaz, np_op);
        double rz = sum_partials_cg(part_rz, np_op);
        real beta = (real)(zaz_k != 0.0 ? zaz_new / zaz_k : 0.0);
        for (int ch = blockIdx.x; ch < row_chunks; ch += gridDim.x) {
            int i = ch * BLOCK + threadIdx.x;
            double apq = 0.0;
            if (i < m) {
                real pi = __ldcg(z + i) + beta * __ldcg(p + i);
                real api = __ldcg(az + i) + beta * __ldcg(ap + i);
                real qi = pinv[i] * api;
                p[i] = pi;
                ap[i] = api;
                q[i] = qi;
                apq = (double)api * (double)qi;
            }
            apq = block_sum(apq);
            if (threadIdx.x == 0) part_apq[ch] = apq;
        }
        double rk = sqrt(fmax(rz, 0.0));
        stop = !(rk > goal);
        zaz_k = zaz_new;
        if (lead) {
            zaz[k + 1] = zaz_new;
            res[k + 1] = rk;
            flags[2 * k + 2] = stop;
        }
        grid_barrier(bar);
    }
}
