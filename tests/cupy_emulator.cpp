// Host emulation of the CUDA kernels of scatterx_cupy, built by tests/test_cupy_emulated.py:
//   g++ -std=c++20 -shared -fPIC -pthread -DSCX_KERNELS='"<_kernels.cu>"'
//       -DSCX_FAST_KERNELS='"<_kernels_fast.cu>"' -DSCX_GATHER_KERNELS='"<_kernels_gather.cu>"'
//       -I<folder of entries.inc>
// The kernels' very text becomes host functions; scx_run launches one as CUDA would, with
// args[i] pointing at parameter i: one thread at a time in a shuffled order, or, for
// scx_warps, each warp's 32 lanes as threads that meet where the warp intrinsics stand.
#include <algorithm>
#include <barrier>
#include <cstring>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>
#define __global__
#define __device__
#define __host__
struct scx_dim {
    unsigned int x;
};
static thread_local scx_dim blockIdx, threadIdx;
static scx_dim blockDim, gridDim;
template <typename To, typename From> static To scx_cast(From from) {
    To to;
    std::memcpy(&to, &from, sizeof(To));
    return to;
}
static unsigned int __float_as_uint(float f) { return scx_cast<unsigned int>(f); }
static float __uint_as_float(unsigned int u) { return scx_cast<float>(u); }
static long long __double_as_longlong(double d) { return scx_cast<long long>(d); }
static double __longlong_as_double(long long u) { return scx_cast<double>(u); }
template <typename F> static F scx_add_rn(F a, F b) { return a + b; }
template <typename F> static F scx_sub_rn(F a, F b) { return a - b; }
template <typename F> static F scx_mul_rn(F a, F b) { return a * b; }
#define __fadd_rn scx_add_rn<float>
#define __fsub_rn scx_sub_rn<float>
#define __fmul_rn scx_mul_rn<float>
#define __dadd_rn scx_add_rn<double>
#define __dsub_rn scx_sub_rn<double>
#define __dmul_rn scx_mul_rn<double>
static std::mutex scx_atomic_lock;
template <typename W> static W atomicMin(W* a, W v) {
    std::lock_guard<std::mutex> hold(scx_atomic_lock);
    W old = *a;
    if (v < old) *a = v;
    return old;
}
template <typename W> static W atomicMax(W* a, W v) {
    std::lock_guard<std::mutex> hold(scx_atomic_lock);
    W old = *a;
    if (v > old) *a = v;
    return old;
}
template <typename W> static W atomicAdd(W* a, W v) {
    std::lock_guard<std::mutex> hold(scx_atomic_lock);
    W old = *a;
    *a = old + v;
    return old;
}
template <typename W> static W atomicCAS(W* a, W compare, W v) {
    std::lock_guard<std::mutex> hold(scx_atomic_lock);
    W old = *a;
    if (old == compare) *a = v;
    return old;
}
// One warp at a time: its lanes meet at this barrier, and share their values in slots.
static std::barrier<>* scx_warp;
static long long scx_slots[32];
static unsigned int __match_any_sync(unsigned int, long long value) {
    scx_slots[threadIdx.x & 31u] = value;
    scx_warp->arrive_and_wait();
    unsigned int peers = 0;
    for (int lane = 0; lane < 32; ++lane) {
        if (scx_slots[lane] == value) peers |= 1u << lane;
    }
    scx_warp->arrive_and_wait();
    return peers;
}
static void __syncwarp() { scx_warp->arrive_and_wait(); }
static int __ffs(unsigned int x) { return __builtin_ffs((int)x); }

#include SCX_KERNELS
#include SCX_FAST_KERNELS
#include SCX_GATHER_KERNELS

static std::mt19937_64 scx_order(5);

// Every thread of the launch, one at a time, in a shuffled order.
template <typename F> static void scx_shuffled(long long threads, F body) {
    std::vector<long long> order(threads);
    std::iota(order.begin(), order.end(), 0LL);
    std::shuffle(order.begin(), order.end(), scx_order);
    for (long long t : order) {
        blockIdx.x = (unsigned int)(t / blockDim.x);
        threadIdx.x = (unsigned int)(t % blockDim.x);
        body();
    }
}

// Warps one at a time, last first; the 32 lanes of each run together as threads.
template <typename F> static void scx_lanes(long long threads, F body) {
    for (long long warp = threads / 32 - 1; warp >= 0; --warp) {
        std::barrier<> meet(32);
        scx_warp = &meet;
        std::vector<std::thread> lanes;
        for (long long lane = 0; lane < 32; ++lane) {
            lanes.emplace_back([&, lane] {
                long long t = warp * 32 + lane;
                blockIdx.x = (unsigned int)(t / blockDim.x);
                threadIdx.x = (unsigned int)(t % blockDim.x);
                body();
            });
        }
        for (auto& lane : lanes) lane.join();
    }
}

// A kernel's parameters as CUDA's launch passes them: args[i] points at parameter i.
template <typename... A> constexpr std::size_t scx_arity(void (*)(A...)) { return sizeof...(A); }
template <typename... A, std::size_t... I>
static void scx_call(void (*kernel)(A...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<A*>(args[I])...);
}

template <auto KERNEL, bool LANES> static void scx_launch(long long threads, void** args) {
    auto body = [&] { scx_call(KERNEL, args, std::make_index_sequence<scx_arity(KERNEL)>()); };
    if constexpr (LANES) {
        scx_lanes(threads, body);
    } else {
        scx_shuffled(threads, body);
    }
}

// "*8" for a pointer to 8-byte elements, "8" for an 8-byte value: what cupy must pass.
template <typename A> static std::string scx_kind() {
    if constexpr (std::is_pointer_v<A>) {
        return "*" + std::to_string(sizeof(std::remove_pointer_t<A>));
    } else {
        return std::to_string(sizeof(A));
    }
}
template <typename... A> static std::string scx_kinds(void (*)(A...)) {
    std::string kinds;
    ((kinds += scx_kind<A>() + " "), ...);
    return kinds;
}

struct scx_entry {
    const char* name;
    std::string kinds;
    void (*launch)(long long, void**);
};
static const scx_entry scx_entries[] = {
#include "entries.inc"  // written by the test: the kernels of _compile.name_expressions
};

extern "C" int scx_count() { return (int)(sizeof(scx_entries) / sizeof(scx_entries[0])); }
extern "C" const char* scx_name(int i) { return scx_entries[i].name; }
extern "C" const char* scx_signature(int i) { return scx_entries[i].kinds.c_str(); }
extern "C" void scx_run(int i, unsigned int grid, unsigned int block, void** args) {
    blockDim.x = block;
    gridDim.x = grid;
    scx_entries[i].launch((long long)grid * block, args);
}
