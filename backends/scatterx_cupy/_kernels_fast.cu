// Fast paths of scatterx_cupy, off unless the user opts in (SCATTERX_CUPY_FAST_PATHS=1):
// compiled after _kernels.cu, whose helpers they use. They keep the contract's order without a
// full sort. Integer atomics only, and only where their order cannot change a bit: each
// target's winner is a unique maximum, whatever order it is found in.
// Not yet run on a GPU: tools/gpu_check.sh verifies them; until then the tests emulate them.

// Flat target of position p of indices (any layout); false for a bad index.
template <typename I>
__device__ inline bool scx_flat_target(const I* idx, const long long* geom, long long p,
                                       long long inner_n, long long axis_len, long long size,
                                       long long stride, long long& target) {
    long long j = (long long)idx[p];
    if (!scx_wrap(j, size)) return false;
    long long q = p / inner_n;
    long long n = p - q * inner_n;
    target = scx_column_base(geom, q / axis_len, n) + j * stride;
    return true;
}

// A kernel with one thread per position p of indices: its arguments, then the start of its
// body, which finds the target of p; ON_BAD runs for a bad index (and must leave the thread).
#define SCX_FLAT_ARGS                                                              \
    const long long *geom, long long count, long long inner_n, long long axis_len, \
        long long size, long long stride
#define SCX_FLAT_BEGIN(ON_BAD)                                                     \
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;                \
    if (p >= count) return;                                                        \
    long long target;                                                              \
    if (!scx_flat_target(idx, geom, p, inner_n, axis_len, size, stride, target)) { \
        ON_BAD;                                                                    \
    }

// (d) Winners, `none`: the last update of a target is the one of the largest position.
// Pass 1 keeps position + 1 of each target's last update (0: none); pass 2 lets it write.
template <typename I>
__global__ void scx_win_last(unsigned int* win, const I* idx, SCX_FLAT_ARGS,
                             unsigned long long* err) {
    SCX_FLAT_BEGIN(atomicMin(err, (unsigned long long)p); return)
    atomicMax(win + target, (unsigned int)(p + 1));
}

template <typename T, typename I>
__global__ void scx_put_last(T* out, const unsigned int* win, const I* idx, const T* upd,
                             SCX_FLAT_ARGS) {
    SCX_FLAT_BEGIN(return)
    if (win[target] == (unsigned int)(p + 1)) out[target] = upd[p];
}

// (d) Winners, float16/float32 max and min. np.maximum's fold over a target's updates keeps
// the first NaN, else the largest value, ties (0.0 == -0.0 too) going to the later update for
// float32 and to the earlier one for float16. That choice is associative, so the fold is
// scx_apply(out, the updates' winner); a 64-bit key orders the updates by it, value in the
// high word, position in the low word, and its unsigned maximum is the winner. 0: none.
template <int RED, bool LATER_WINS_TIES>
__host__ __device__ inline unsigned long long scx_win_key(unsigned int fbits,
                                                          unsigned long long p) {
    unsigned int mag = fbits & 0x7fffffffu;
    if (mag > 0x7f800000u) {
        return 0xffffffff00000000ull | (0xffffffffull - p);  // NaN above all: the first wins
    }
    if (mag == 0) fbits = 0;  // -0.0 ties with 0.0
    unsigned int order = (fbits & 0x80000000u) ? ~fbits : (fbits | 0x80000000u);
    if (RED == SCX_MIN) order = ~order;  // within [0x007fffff, 0xff800000] either way
    unsigned long long low = LATER_WINS_TIES ? p : 0xffffffffull - p;
    return ((unsigned long long)order << 32) | low;
}

__device__ inline unsigned int scx_float_bits(float v) { return __float_as_uint(v); }
__device__ inline unsigned int scx_float_bits(scx_half h) {
    return scx_half_to_float_bits(h.bits);
}
template <typename T> struct scx_ties {
    static constexpr bool later = true;  // np.maximum on float32: the update wins a tie
};
template <> struct scx_ties<scx_half> {
    static constexpr bool later = false;  // on float16 the old value stays
};

template <typename T, int RED>
__device__ inline unsigned long long scx_key_of(const T* upd, long long p) {
    return scx_win_key<RED, scx_ties<T>::later>(scx_float_bits(upd[p]), (unsigned long long)p);
}

template <typename T, typename I, int RED>
__global__ void scx_win_best(unsigned long long* win, const I* idx, const T* upd, SCX_FLAT_ARGS,
                             unsigned long long* err) {
    SCX_FLAT_BEGIN(atomicMin(err, (unsigned long long)p); return)
    atomicMax(win + target, scx_key_of<T, RED>(upd, p));
}

template <typename T, typename I, int RED>
__global__ void scx_put_best(T* out, const unsigned long long* win, const I* idx, const T* upd,
                             SCX_FLAT_ARGS) {
    SCX_FLAT_BEGIN(return)
    if (win[target] == scx_key_of<T, RED>(upd, p)) {
        out[target] = scx_apply<RED>(out[target], upd[p]);  // the only writer of its target
    }
}

// (e) Warps: when the axis is innermost in indices (n_inner == 1), one warp per column reads
// 32 consecutive steps at once. Lanes that meet at one target are grouped (__match_any_sync);
// the group's first lane applies their updates in lane order (`none`: its last lane stores),
// and __syncwarp orders one chunk's stores before the next chunk's loads.
template <typename T, typename I, int RED>
__global__ void scx_warps(T* out, const I* idx, const T* upd, const long long* geom,
                          long long n_cols, long long axis_len, long long size, long long stride,
                          unsigned long long* err) {
    long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    unsigned int lane = threadIdx.x & 31u;
    if (w >= n_cols) return;  // the whole warp: blockDim is a multiple of 32
    long long base = scx_column_base(geom, w, 0);
    long long first = w * axis_len;
    for (long long k = 0; k < axis_len; k += 32) {
        long long p = first + k + lane;
        long long target = -1 - (long long)lane;  // a lane of its own past the end or if bad
        bool valid = k + lane < axis_len;
        if (valid) {
            long long j = (long long)idx[p];
            valid = scx_wrap(j, size);
            if (valid) {
                target = base + j * stride;
            } else {
                atomicMin(err, (unsigned long long)p);
            }
        }
        unsigned int peers = __match_any_sync(0xffffffffu, target);
        if (valid) {
            if constexpr (RED == SCX_NONE) {
                if ((peers >> lane) == 1u) out[target] = upd[p];
            } else if ((peers & ((1u << lane) - 1u)) == 0) {
                T acc = out[target];
                for (unsigned int m = peers; m != 0; m &= m - 1) {
                    acc = scx_apply<RED>(acc, upd[first + k + (__ffs(m) - 1)]);
                }
                out[target] = acc;
            }
        }
        __syncwarp();
    }
}

// (f) Rows, step 1: the flat targets of every update (for the sort, if it comes to that), a
// key per index row (o, k) = o * size + j, and mixed[0] = 0 when some row's targets are not
// one j (indices not constant along the inner dims: not an embedding's backward).
template <typename I, typename K>
__global__ void scx_row_keys(K* keys, K* rows, unsigned long long* mixed, const I* idx,
                             SCX_FLAT_ARGS, unsigned long long* err) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= count) return;
    long long j = (long long)idx[p];
    if (!scx_wrap(j, size)) {
        atomicMin(err, (unsigned long long)p);
        keys[p] = 0;  // a valid placeholder: the result is never returned
        return;
    }
    long long q = p / inner_n;
    long long n = p - q * inner_n;
    long long o = q / axis_len;
    keys[p] = (K)(scx_column_base(geom, o, n) + j * stride);
    if (n == 0) {
        rows[q] = (K)(o * size + j);
    } else {
        long long j0 = (long long)idx[q * inner_n];
        scx_wrap(j0, size);
        if (j0 != j) mixed[0] = 0;
    }
}

// (f) Rows, step 2: after a stable sort of the row keys, thread (i, n) with i the first row
// of a run of equal keys walks the run in order: its updates meet at one target, and
// neighbouring threads read neighbouring updates.
template <typename T, typename K, int RED>
__global__ void scx_row_runs(T* out, const K* sorted, const long long* order, const T* upd,
                             const long long* geom, long long rows, long long inner_n,
                             long long size, long long stride) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long i = t / inner_n;
    if (i >= rows) return;
    long long n = t - i * inner_n;
    K key = sorted[i];
    if (i > 0 && sorted[i - 1] == key) return;
    long long o = (long long)key / size;
    long long j = (long long)key - o * size;
    T* target = out + scx_column_base(geom, o, n) + j * stride;
    T acc = *target;
    for (long long r = i; r < rows && sorted[r] == key; ++r) {
        acc = scx_apply<RED>(acc, upd[order[r] * inner_n + n]);
    }
    *target = acc;
}
