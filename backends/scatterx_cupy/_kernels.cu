// ScatterElements kernels of scatterx_cupy: every update applied in the contract's order.
//
// Self-contained on purpose: cupy.RawModule compiles this with NVRTC, and the test suite
// compiles the very same text with nvcc, so no header beyond the compiler's built-ins.
// Templates: T is the element type, I the index type (int or long long), K the type of a
// flat target position (int or long long), RED one of the SCX_* reductions below.

#define SCX_NONE 0
#define SCX_ADD 1
#define SCX_MUL 2
#define SCX_MAX 3
#define SCX_MIN 4

// The NaN an x86 CPU makes from non-NaN operands (inf - inf, 0 * inf). The host passes its
// own pattern with -D, so that float results match the CPU backends bit for bit.
#ifndef SCX_DNAN32
#define SCX_DNAN32 0xffc00000u
#endif
#ifndef SCX_DNAN64
#define SCX_DNAN64 0xfff8000000000000ull
#endif

struct scx_half {
    unsigned short bits;
};
struct alignas(8) scx_c64 {
    float re, im;
};
struct alignas(16) scx_c128 {
    double re, im;
};

// ---- float16 <-> float32 on bit patterns, rounding exactly as NumPy's npy_half does ----

__host__ __device__ inline unsigned int scx_half_to_float_bits(unsigned short h) {
    unsigned int sign = ((unsigned int)h & 0x8000u) << 16;
    unsigned int exp = h & 0x7c00u;
    unsigned int man = h & 0x03ffu;
    if (exp == 0x7c00u) {
        return sign | 0x7f800000u | (man << 13);  // inf, or NaN with its payload kept
    }
    if (exp == 0) {
        if (man == 0) {
            return sign;
        }
        unsigned int e = 113;  // subnormal: shift the leading one into the implicit bit
        while ((man & 0x0400u) == 0) {
            man <<= 1;
            --e;
        }
        return sign | (e << 23) | ((man & 0x03ffu) << 13);
    }
    return sign | ((((unsigned int)h & 0x7fffu) << 13) + 0x38000000u);
}

__host__ __device__ inline unsigned short scx_float_bits_to_half(unsigned int f) {
    unsigned short sign = (unsigned short)((f >> 16) & 0x8000u);
    unsigned int mag = f & 0x7fffffffu;
    if (mag >= 0x7f800000u) {
        if (mag == 0x7f800000u) {
            return sign | 0x7c00u;
        }
        // NaN: keep the top of the payload, but never let it collapse into inf
        unsigned short nan = (unsigned short)(0x7c00u + ((mag & 0x007fffffu) >> 13));
        return sign | (nan == 0x7c00u ? (unsigned short)0x7c01u : nan);
    }
    if (mag >= 0x477ff000u) {
        return sign | 0x7c00u;  // 65520 and above round to inf
    }
    unsigned int keep, rest, half;
    if (mag < 0x38800000u) {  // below the smallest normal half: a subnormal or zero
        unsigned int e = mag >> 23;
        if (e < 102) {
            return sign;  // under half of the smallest subnormal
        }
        unsigned int shift = 126 - e;
        unsigned int man = (mag & 0x007fffffu) | 0x00800000u;
        keep = man >> shift;
        rest = man & ((1u << shift) - 1);
        half = 1u << (shift - 1);
    } else {
        unsigned int rebased = mag - 0x38000000u;
        keep = rebased >> 13;
        rest = rebased & 0x1fffu;
        half = 0x1000u;
    }
    if (rest > half || (rest == half && (keep & 1u))) {
        ++keep;  // ties to even; a carry into the exponent is the right answer
    }
    return sign | (unsigned short)keep;
}

// ---- float arithmetic with the CPU's NaN rules ----
// A GPU returns one canonical NaN; x86 returns the first NaN operand, quieted, or its own
// default NaN. The __f*_rn intrinsics are never fused into an FMA, as NumPy's loops are not.

__device__ inline float scx_nan_of(float a, float b) {
    if (a != a) return __uint_as_float(__float_as_uint(a) | 0x00400000u);
    if (b != b) return __uint_as_float(__float_as_uint(b) | 0x00400000u);
    return __uint_as_float(SCX_DNAN32);
}
__device__ inline double scx_nan_of(double a, double b) {
    if (a != a) return __longlong_as_double(__double_as_longlong(a) | 0x0008000000000000ll);
    if (b != b) return __longlong_as_double(__double_as_longlong(b) | 0x0008000000000000ll);
    return __longlong_as_double((long long)SCX_DNAN64);
}
// r = op(a, b) rounded as on the CPU; a NaN result becomes the NaN the CPU would make.
#define SCX_CPU_OP(T, NAME, ROUNDED)          \
    __device__ inline T NAME(T a, T b) {      \
        T r = ROUNDED(a, b);                  \
        return r != r ? scx_nan_of(a, b) : r; \
    }
SCX_CPU_OP(float, scx_fadd, __fadd_rn)
SCX_CPU_OP(float, scx_fsub, __fsub_rn)
SCX_CPU_OP(float, scx_fmul, __fmul_rn)
SCX_CPU_OP(double, scx_fadd, __dadd_rn)
SCX_CPU_OP(double, scx_fsub, __dsub_rn)
SCX_CPU_OP(double, scx_fmul, __dmul_rn)
#undef SCX_CPU_OP

// ---- the reductions, one overload set per dtype family ----

template <typename T> struct scx_wide {
    typedef unsigned int type;  // integer arithmetic wraps in an unsigned type of >= 32 bits
};
template <> struct scx_wide<long long> {
    typedef unsigned long long type;
};
template <> struct scx_wide<unsigned long long> {
    typedef unsigned long long type;
};

template <typename T> __device__ inline T scx_add(T a, T b) {
    typedef typename scx_wide<T>::type W;
    return (T)((W)a + (W)b);
}
template <typename T> __device__ inline T scx_mul(T a, T b) {
    typedef typename scx_wide<T>::type W;
    return (T)((W)a * (W)b);
}
template <typename T> __device__ inline T scx_max(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ inline T scx_min(T a, T b) { return a < b ? a : b; }

__device__ inline bool scx_add(bool a, bool b) { return a || b; }
__device__ inline bool scx_mul(bool a, bool b) { return a && b; }
__device__ inline bool scx_max(bool a, bool b) { return a || b; }
__device__ inline bool scx_min(bool a, bool b) { return a && b; }

__device__ inline float scx_add(float a, float b) { return scx_fadd(a, b); }
__device__ inline float scx_mul(float a, float b) { return scx_fmul(a, b); }
__device__ inline double scx_add(double a, double b) { return scx_fadd(a, b); }
__device__ inline double scx_mul(double a, double b) { return scx_fmul(a, b); }
// np.maximum on float32/64: a NaN already there stays; on a tie the update wins (-0.0 vs 0.0).
__device__ inline float scx_max(float a, float b) { return (a != a || a > b) ? a : b; }
__device__ inline float scx_min(float a, float b) { return (a != a || a < b) ? a : b; }
__device__ inline double scx_max(double a, double b) { return (a != a || a > b) ? a : b; }
__device__ inline double scx_min(double a, double b) { return (a != a || a < b) ? a : b; }

// float16 computes in float32 and rounds after every step, as NumPy's half loops do.
__device__ inline float scx_widen(scx_half h) {
    return __uint_as_float(scx_half_to_float_bits(h.bits));
}
__device__ inline scx_half scx_narrow(float f) {
    scx_half h;
    h.bits = scx_float_bits_to_half(__float_as_uint(f));
    return h;
}
__device__ inline scx_half scx_add(scx_half a, scx_half b) {
    return scx_narrow(scx_fadd(scx_widen(a), scx_widen(b)));
}
__device__ inline scx_half scx_mul(scx_half a, scx_half b) {
    return scx_narrow(scx_fmul(scx_widen(a), scx_widen(b)));
}
// np.maximum on float16 compares half values directly: on a tie the old value stays.
__device__ inline scx_half scx_max(scx_half a, scx_half b) {
    float x = scx_widen(a), y = scx_widen(b);
    return (x != x || x >= y) ? a : b;
}
__device__ inline scx_half scx_min(scx_half a, scx_half b) {
    float x = scx_widen(a), y = scx_widen(b);
    return (x != x || x <= y) ? a : b;
}

// Complex: NumPy's scalar formulas, each real step with the CPU's rounding and NaN rules.
template <typename C> __device__ inline C scx_cadd(C a, C b) {
    C r;
    r.re = scx_fadd(a.re, b.re);
    r.im = scx_fadd(a.im, b.im);
    return r;
}
template <typename C> __device__ inline C scx_cmul(C a, C b) {
    C r;
    r.re = scx_fsub(scx_fmul(a.re, b.re), scx_fmul(a.im, b.im));
    r.im = scx_fadd(scx_fmul(a.re, b.im), scx_fmul(a.im, b.re));
    return r;
}
__device__ inline scx_c64 scx_add(scx_c64 a, scx_c64 b) { return scx_cadd(a, b); }
__device__ inline scx_c64 scx_mul(scx_c64 a, scx_c64 b) { return scx_cmul(a, b); }
__device__ inline scx_c128 scx_add(scx_c128 a, scx_c128 b) { return scx_cadd(a, b); }
__device__ inline scx_c128 scx_mul(scx_c128 a, scx_c128 b) { return scx_cmul(a, b); }

template <int RED, typename T> __device__ inline T scx_apply(T a, T b) {
    if constexpr (RED == SCX_ADD) return scx_add(a, b);
    else if constexpr (RED == SCX_MUL) return scx_mul(a, b);
    else if constexpr (RED == SCX_MAX) return scx_max(a, b);
    else if constexpr (RED == SCX_MIN) return scx_min(a, b);
    else return b;
}

// ---- atomics: integer and bool only, where the order of updates cannot change a bit ----

template <int RED, typename T, typename W> __device__ inline void scx_cas(W* word, T value) {
    // Compare-and-swap on the bit pattern of the aligned word that holds the element; the
    // loop ends as soon as the word is unchanged, so it cannot spin on a value.
    const unsigned int size = sizeof(T);
    const unsigned long long offset =
        size < sizeof(W) ? ((unsigned long long)word & (sizeof(W) - 1)) : 0;
    W* aligned = (W*)((unsigned long long)word - offset);
    const unsigned int shift = (unsigned int)offset * 8;
    const W mask = size < sizeof(W) ? (W)((((W)1) << (8 * size)) - 1) : ~(W)0;
    W old = *aligned, assumed;
    do {
        assumed = old;
        T current = (T)((assumed >> shift) & mask);
        T updated = scx_apply<RED>(current, value);
        W bits = (W)(typename scx_wide<T>::type)updated & mask;
        W next = (assumed & ~(mask << shift)) | (bits << shift);
        if (next == assumed) return;
        old = atomicCAS(aligned, assumed, next);
    } while (old != assumed);
}

template <int RED, typename T> __device__ inline void scx_atomic(T* target, T value) {
    if constexpr (sizeof(T) == 8 && RED == SCX_ADD) {
        atomicAdd((unsigned long long*)target, (unsigned long long)value);
    } else if constexpr (sizeof(T) == 4 && RED == SCX_ADD) {
        atomicAdd((unsigned int*)target, (unsigned int)value);
    } else if constexpr (sizeof(T) >= 4 && RED == SCX_MAX) {
        atomicMax(target, value);
    } else if constexpr (sizeof(T) >= 4 && RED == SCX_MIN) {
        atomicMin(target, value);
    } else if constexpr (sizeof(T) == 8) {
        scx_cas<RED>((unsigned long long*)target, value);
    } else {
        scx_cas<RED>((unsigned int*)target, value);
    }
}

// ---- geometry: where an index position's column starts in data ----
// geom = [n_outer, n_inner, (length, stride) of each outer dim, then of each inner dim],
// dims already merged on the host; strides count elements of the C-ordered result.

__device__ inline long long scx_offset(const long long* dims, int n, long long flat) {
    long long offset = 0;
    for (int d = n - 1; d > 0; --d) {
        long long length = dims[2 * d];
        long long q = flat / length;
        offset += (flat - q * length) * dims[2 * d + 1];
        flat = q;
    }
    return n > 0 ? offset + flat * dims[1] : 0;
}

__device__ inline long long scx_column_base(const long long* geom, long long o, long long n) {
    int n_outer = (int)geom[0];
    int n_inner = (int)geom[1];
    return scx_offset(geom + 2, n_outer, o) + scx_offset(geom + 2 + 2 * n_outer, n_inner, n);
}

__device__ inline bool scx_wrap(long long& j, long long size) {
    if (j < 0) j += size;
    return j >= 0 && j < size;
}

// (a) One thread per column walks the axis in ascending order. Chunks of steps load their
// old values together (to hide latency) and resolve repeated targets in registers; `none`
// loads nothing, since storing in order already leaves the last update.
// Steps per chunk: long for `none` (stores only); shorter where repeats are resolved in
// registers, whose cost grows with the square of the chunk.
template <typename T, int RED> struct scx_chunk {
    static constexpr int steps = RED == SCX_NONE ? 32 : (sizeof(T) <= 8 ? 16 : 8);
};

template <typename T, typename I, int RED>
__global__ void scx_columns(T* out, const I* idx, const T* upd, const long long* geom,
                            long long n_cols, long long inner_n, long long axis_len,
                            long long size, long long stride, unsigned long long* err) {
    constexpr int U = scx_chunk<T, RED>::steps;
    long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cols) return;
    long long o = c / inner_n, n = c - o * inner_n;
    long long base = scx_column_base(geom, o, n);
    long long p = o * axis_len * inner_n + n;
    long long k = 0;
    for (; k + U <= axis_len; k += U, p += U * inner_n) {
        long long target[U];
        T value[U];
#pragma unroll
        for (int s = 0; s < U; ++s) {
            long long j = (long long)idx[p + s * inner_n];
            if (!scx_wrap(j, size)) {
                atomicMin(err, (unsigned long long)(p + s * inner_n));
                return;
            }
            target[s] = base + j * stride;
        }
        if constexpr (RED == SCX_NONE) {
#pragma unroll
            for (int s = 0; s < U; ++s) value[s] = upd[p + s * inner_n];
        } else {
#pragma unroll
            for (int s = 0; s < U; ++s) value[s] = out[target[s]];
#pragma unroll
            for (int s = 0; s < U; ++s) {
                T current = value[s];
                for (int r = s - 1; r >= 0; --r) {
                    if (target[r] == target[s]) {
                        current = value[r];
                        break;
                    }
                }
                value[s] = scx_apply<RED>(current, upd[p + s * inner_n]);
            }
        }
#pragma unroll
        for (int s = 0; s < U; ++s) out[target[s]] = value[s];  // in order: last wins
    }
    for (; k < axis_len; ++k, p += inner_n) {
        long long j = (long long)idx[p];
        if (!scx_wrap(j, size)) {
            atomicMin(err, (unsigned long long)p);
            return;
        }
        T* t = out + base + j * stride;
        *t = scx_apply<RED>(*t, upd[p]);
    }
}

// Strands: thread t takes column t % n_cols and every strands-th step of its axis from
// t / n_cols, so neighbouring threads read neighbouring positions whatever the shape.
// ON_BAD runs after a bad index is flagged: the first bad one of a strand is its smallest.
#define SCX_STRAND_BEGIN(ON_BAD)                                                 \
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;              \
    if (t >= n_cols * strands) return;                                           \
    long long c = t % n_cols, s = t / n_cols;                                    \
    long long o = c / inner_n, n = c - o * inner_n;                              \
    long long base = scx_column_base(geom, o, n);                                \
    long long p = (o * axis_len + s) * inner_n + n;                              \
    for (long long k = s; k < axis_len; k += strands, p += strands * inner_n) {  \
        long long j = (long long)idx[p];                                         \
        if (!scx_wrap(j, size)) {                                                \
            atomicMin(err, (unsigned long long)p);                               \
            ON_BAD;                                                              \
        }

// (c) Integer and bool add/mul/max/min: any order gives the same bits.
template <typename T, typename I, int RED>
__global__ void scx_atomics(T* out, const I* idx, const T* upd, const long long* geom,
                            long long n_cols, long long inner_n, long long axis_len,
                            long long size, long long stride, long long strands,
                            unsigned long long* err) {
    SCX_STRAND_BEGIN(return)
        scx_atomic<RED>(out + base + j * stride, upd[p]);
    }
}

// (b) Sorting, step 1: the flat target of every update. A bad index is flagged and gets
// target 0, so that every key stays a valid position for step 2.
template <typename I, typename K>
__global__ void scx_targets(K* keys, const I* idx, const long long* geom, long long n_cols,
                            long long inner_n, long long axis_len, long long size,
                            long long stride, long long strands, unsigned long long* err) {
    SCX_STRAND_BEGIN(keys[p] = 0; continue)
        keys[p] = (K)(base + j * stride);
    }
}

// out=: every index checked before the first write into the caller's memory, so that a
// call that raises leaves out untouched (contract section 7). Grid-stride over the
// C-ordered indices; the first bad position wins, as in every kernel.
template <typename I>
__global__ void scx_bounds(const I* idx, long long count, long long size,
                           unsigned long long* err) {
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < count; p += step) {
        long long j = (long long)idx[p];
        if (!scx_wrap(j, size)) atomicMin(err, (unsigned long long)p);
    }
}

// (b) Sorting, step 2: after a stable sort of the targets, the first thread of each run of
// equal targets applies the run's updates in their original order.
template <typename T, typename K, int RED>
__global__ void scx_runs(T* out, const K* sorted, const long long* order, const T* upd,
                         long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    K target = sorted[i];
    if (i > 0 && sorted[i - 1] == target) return;
    T acc = out[target];
    for (long long r = i; r < n && sorted[r] == target; ++r) {
        acc = scx_apply<RED>(acc, upd[order[r]]);
    }
    out[target] = acc;
}
