// GatherElements kernel of scatterx_cupy: out[i] = data[j], j = i with j[axis] = indices[i].
//
// Self-contained, as _kernels.cu is: NVRTC compiles this file alone into the "gather" module,
// and the tests compile it with nvcc and in the host emulation next to the other sources,
// so every name here starts with scx_gather. A gather moves bits and computes nothing: T is
// an unsigned type of the dtype's itemsize (one kernel per itemsize), I the index type (int
// or long long); BOOL reads bool data as its canonical 0/1, whatever bytes it held.

// 16-byte elements (complex128) as two words; 8-byte alignment is all an element of a
// cupy array is sure to have, so no 16-byte loads.
struct alignas(8) scx_gather_bits16 {
    unsigned long long lo, hi;
};

// geom = [n_dims, then (length, index stride, data stride) of each dim], over the dims of
// indices, merged and without those of length 1 on the host. Strides count elements and may
// be zero or negative; the axis's data stride is 0 there, its index adding j * stride.
template <typename T, typename I, bool BOOL>
__global__ void scx_gather(T* out, const T* data, const I* idx, const long long* geom,
                           long long n, long long size, long long stride,
                           unsigned long long* err) {
    const int n_dims = (int)geom[0];
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        long long rest = i, at_idx = 0, at_data = 0;
        for (int d = n_dims - 1; d >= 0; --d) {
            const long long* dim = geom + 1 + 3 * d;
            long long q = rest / dim[0];
            long long position = rest - q * dim[0];
            at_idx += position * dim[1];
            at_data += position * dim[2];
            rest = q;
        }
        long long j = (long long)idx[at_idx];
        if (j < 0) j += size;
        if (j < 0 || j >= size) {
            // i grows along a thread's loop: its first bad position is its smallest.
            atomicMin(err, (unsigned long long)i);
            return;
        }
        T value = data[at_data + j * stride];
        if constexpr (BOOL) value = (T)(value != 0);
        out[i] = value;
    }
}
