#!/usr/bin/env bash
# GPU check of the cupy backend, for a machine with an NVIDIA GPU, cupy and scatterx
# installed (pip install -e '.[cupy,test]'; torch with CUDA for the torch steps). One script,
# aimed at 5 minutes on an H200, whose steps are:
#   1. for each set of strategies (the default ones, then the opt-in fast paths,
#      SCATTERX_CUPY_FAST_PATHS=1): the conformance matrix with the cupy backend required,
#      on cupy arrays and, where torch sees CUDA, on torch CUDA tensors (required too), and
#      the cupy GPU tests (tests/test_cupy_gpu.py; scatter_nd and gather_nd,
#      tests/test_cupy_nd.py, not yet run on a GPU);
#   2. the benchmark (tools/gpu_bench.py, with the fast paths on when they are checked, so
#      that its "other strategy" column times the default one): the twelve standard cells
#      against torch.scatter_reduce and torch's deterministic mode, and `none` on 1 GiB as a
#      share of the device's bandwidth, each judged against performance.md's targets;
#   3. torch CUDA tensors through the cupy backend: the kernel must receive the tensors' own
#      device memory (DLPack, no copy), ordered on the caller's stream, and return a tensor
#      on the same device (contract section 6), and with out= write into the tensor's own
#      memory (section 7); skipped, with the reason, where torch has no CUDA;
#   4. the torch operators (contract 12) on CUDA tensors: torch.compile, torch.export and
#      torch.func against eager (tests/test_torch_ops.py -k cuda), where torch has CUDA.
# It ends with one table of the steps, their results and seconds. Exit status: 0 when all
# is correct and every target met, 3 when all is correct but a target is missed, 1 when a
# step failed, 2 for bad usage.
#
# On this project's device machine (no network; cupy, torch, numba, pytest there already):
# carry array-api-compat and array-api-strict as wheels (/work/.library/device/README.md)
# and install scatterx without build isolation, in one command with a timeout of 420 s:
#   here, once: echo /.whl/ >> .git/info/exclude &&
#     python3 -m pip download --no-deps -d .whl array-api-compat array-api-strict
#   run (carry .whl): python3 -m pip install -q --no-index --no-deps --target /tmp/site
#     .whl/*.whl && export PYTHONPATH=/tmp/site && python3 -m pip install -q --no-index
#     --no-deps --no-build-isolation -e . && tools/gpu_check.sh 2>&1 | tee $OUT/gpu_check.log
# Usage: tools/gpu_check.sh [--paths default|fast|both] [--no-bench] [--no-torch]
#                           [peak TB/s, default 4.8]
set -uo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1

paths=both
bench=yes
torch_step=yes
peak=4.8
while [ $# -gt 0 ]; do
    case "$1" in
        --paths) paths="${2:-}"; shift 2 ;;
        --paths=*) paths="${1#--paths=}"; shift ;;
        --no-bench) bench=no; shift ;;
        --no-torch) torch_step=no; shift ;;
        *) peak="$1"; shift ;;
    esac
done
case "$paths" in
    default) sets="0" ;;
    fast) sets="1" ;;
    both) sets="0 1" ;;
    *) echo "--paths must be default, fast or both; got '$paths'" >&2; exit 2 ;;
esac

if ! "$python" -c "import scatterx_cupy" 2>/dev/null; then
    echo "scatterx is not installed here: pip install -e '.[cupy,test]'" >&2
    exit 2
fi
"$python" -m scatterx backends 2>/dev/null || true

# The steps' table: one line per step, "name|result|seconds".
summary=()
started=$SECONDS
step() {  # step NAME RESULT SECONDS
    summary+=("$1|$2|$3")
}

# torch CUDA tensors are a required column of the matrix where torch sees a CUDA device.
libraries=()
torch_cuda=$("$python" -c "import torch; print(int(torch.cuda.is_available()))" 2>/dev/null || echo 0)
if [ "$torch_cuda" = 1 ]; then
    libraries=(--require-library torch)
else
    echo "note: torch has no CUDA device here: the torch CUDA column of the matrix is skipped"
fi

failed=""
targets=met
for fast in $sets; do
    name=$([ "$fast" = 1 ] && echo "fast paths" || echo "default strategies")
    export SCATTERX_CUPY_FAST_PATHS="$fast"
    # The opt-in must really be on (or off): a stale install would verify nothing.
    if ! "$python" -c "import sys, scatterx_cupy as c; sys.exit(c.fast_paths_enabled() != $fast)"; then
        echo "scatterx_cupy here does not take SCATTERX_CUPY_FAST_PATHS=$fast" >&2
        failed="$failed [$name: opt-in]"
        step "$name: opt-in" FAILED 0
        continue
    fi

    echo "== $name: conformance matrix and cupy tests (--require-backend cupy)"
    tests=(tests/test_conformance.py tests/test_cupy_gpu.py tests/test_cupy_nd.py)
    [ "$fast" = 0 ] && tests+=(tests/test_cupy_backend.py)
    begin=$SECONDS
    if "$python" -m pytest -q -p no:cacheprovider --maxprocesses=8 --require-backend cupy \
        --scatterx-backend cupy "${libraries[@]}" "${tests[@]}"; then
        step "$name: conformance and GPU tests" passed $((SECONDS - begin))
    else
        failed="$failed [$name: tests]"
        step "$name: conformance and GPU tests" FAILED $((SECONDS - begin))
    fi
done

if [ "$bench" = yes ]; then
    # With the fast paths on when they are checked: the table's "other strategy" column
    # then times the default strategy of each cell beside the fast one.
    case "$sets" in *1*) export SCATTERX_CUPY_FAST_PATHS=1 ;; *) export SCATTERX_CUPY_FAST_PATHS=0 ;; esac
    echo "== benchmark against torch (fast paths: $SCATTERX_CUPY_FAST_PATHS)"
    begin=$SECONDS
    "$python" tools/gpu_bench.py --peak "$peak"
    code=$?
    case "$code" in
        0) step "benchmark: targets" met $((SECONDS - begin)) ;;
        3) targets=missed; step "benchmark: targets" "missed (see above)" $((SECONDS - begin)) ;;
        *) failed="$failed [benchmark]"; step "benchmark" "FAILED ($code)" $((SECONDS - begin)) ;;
    esac
fi
unset SCATTERX_CUPY_FAST_PATHS

# torch CUDA tensors in, torch CUDA tensors out, with no host copy: a recording backend
# stands in for the installed cupy backend (scatterx.testing.scoped_registry) and notes the
# device pointers, device and stream of the cupy arrays the front-end hands it; they must be
# the tensors' own (data_ptr()), and the result must be the cupy result's memory, as a torch
# tensor on the device of data. Exit status 0: passed or skipped (the reason is printed).
torch_cuda_check() {
    "$python" - <<'PY'
import sys

try:
    import torch
except ImportError:
    print("torch CUDA check skipped: torch is not installed")
    sys.exit(0)
if not torch.cuda.is_available():
    cuda = torch.version.cuda or "none (a CPU build)"
    print(f"torch CUDA check skipped: torch {torch.__version__} has no CUDA device (CUDA {cuda})")
    sys.exit(0)

try:
    import cupy
except ImportError as error:
    print(f"torch CUDA check FAILED: torch has CUDA but cupy does not import: {error}")
    sys.exit(1)

import scatterx
import scatterx_cupy
from scatterx.testing import scoped_registry


class Recording:
    """The installed cupy backend, noting what each call receives and returns."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []

    name = property(lambda self: self.inner.name)
    array_types = property(lambda self: self.inner.array_types)
    priority = property(lambda self: self.inner.priority)
    capabilities = property(lambda self: self.inner.capabilities)
    version = property(lambda self: self.inner.version)

    def available(self):
        return self.inner.available()

    def can_run(self, request):
        return self.inner.can_run(request)

    def scatter_elements(self, request):
        seen = {"stream": cupy.cuda.get_current_stream().ptr}
        for role in ("data", "indices", "updates"):
            array = getattr(request, role)
            seen[role] = (type(array), array.data.ptr, array.device.id)
        if request.out is not None:
            seen["out"] = (type(request.out), request.out.data.ptr, request.out is request.data)
        result = self.inner.scatter_elements(request)
        seen["result"] = (type(result), result.data.ptr, result.device.id)
        self.calls.append(seen)
        return result


failures = []


def check(what, ok, detail=""):
    print(f"  {'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail else ""))
    if not ok:
        failures.append(what)


def run_case(title, data, indices, updates, reduction, recording, stream=None):
    print(f"-- {title}")
    recording.calls.clear()
    with torch.cuda.device(data.device), torch.cuda.stream(stream):  # None: the current one
        before = data.clone()
        caller_stream = torch.cuda.current_stream().cuda_stream
        out = scatterx.scatter_elements(data, indices, updates, reduction=reduction)
    torch.cuda.synchronize(data.device)
    check("one call of the cupy backend", len(recording.calls) == 1, f"{len(recording.calls)}")
    if len(recording.calls) != 1:
        return
    seen = recording.calls[0]
    for role, tensor in (("data", data), ("indices", indices), ("updates", updates)):
        kind, pointer, device = seen[role]
        check(
            f"{role}: the kernel got the tensor's memory",
            kind is cupy.ndarray and pointer == tensor.data_ptr() and device == tensor.device.index,
            f"{kind.__module__}.{kind.__name__} at {pointer:#x} on device {device}; "
            f"tensor at {tensor.data_ptr():#x} on {tensor.device}",
        )
    kind, pointer, device = seen["result"]
    check(
        "result: a torch tensor on the device of data, the kernel's own memory",
        isinstance(out, torch.Tensor) and out.device == data.device and out.data_ptr() == pointer,
        f"{type(out).__module__}.{type(out).__name__} on {getattr(out, 'device', '?')} at "
        f"{out.data_ptr() if isinstance(out, torch.Tensor) else 0:#x}; kernel wrote {pointer:#x}",
    )
    # The values below are what says the kernel was ordered after the caller's work (DLPack
    # lets the library order it with an event instead); the stream itself is a note.
    same = "the caller's stream" if seen["stream"] == caller_stream else "another stream"
    print(f"  note kernel ran on {same}: {seen['stream']:#x}; caller's {caller_stream:#x}")
    check("data is not written", torch.equal(data, before))
    # The same call on the host (numpy backend, explicit copies made here): the same bits.
    expected = scatterx.scatter_elements(
        data.cpu().numpy(),
        indices.cpu().numpy(),
        updates.cpu().numpy(),
        reduction=reduction,
        backend="numpy",
    )
    got = out.cpu().numpy()
    check(
        "the bits of the numpy backend",
        got.tobytes() == expected.tobytes() and got.shape == expected.shape,
    )


print(
    f"torch {torch.__version__} (CUDA {torch.version.cuda}), cupy {cupy.__version__}, "
    f"{torch.cuda.device_count()} device(s): {torch.cuda.get_device_name(0)}"
)
recording = Recording(scatterx_cupy.backend)
generator = torch.Generator().manual_seed(0)
with scoped_registry(recording):
    for device in [f"cuda:{n}" for n in range(min(torch.cuda.device_count(), 2))]:
        data = torch.randn(512, 300, generator=generator).to(device)
        indices = torch.randint(0, 512, (700, 300), generator=generator).to(device)
        updates = torch.randn(700, 300, generator=generator).to(device)
        run_case(f"float32 add, int64 indices, {device}", data, indices, updates, "add", recording)
        if device == "cuda:0":
            print(scatterx.explain(data, indices, updates, reduction="add"))

    data = torch.randn(300, 512, generator=generator).cuda()
    indices = torch.randint(0, 512, (300, 700), generator=generator).cuda()
    updates = torch.randn(300, 700, generator=generator).cuda()
    run_case(
        "non-contiguous views (transposed), float32 max",
        data.T,
        indices.T,
        updates.T,
        "max",
        recording,
    )

    # Inputs made on a side stream just before the call: the kernel must be ordered after
    # them (a 1 GiB fill is long enough for a kernel on another stream to overtake it).
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        big = torch.empty(1 << 28, device="cuda").fill_(1.0)
        indices = torch.randint(0, 1 << 28, (1 << 20,), device="cuda")
        updates = torch.full((1 << 20,), 2.0, device="cuda")
    run_case(
        "made on a side stream, called on it (1 GiB float32, mul)",
        big,
        indices,
        updates,
        "mul",
        recording,
        stream=side,
    )

    # out= with torch CUDA tensors: the kernels write into the tensor's own memory, with no
    # copy of the result (in place: not even of data), and the call returns the tensor.
    for in_place in (False, True):
        data = torch.randn(600, 300, generator=generator).cuda()
        indices = torch.randint(0, 600, (700, 300), generator=generator).cuda()
        updates = torch.randn(700, 300, generator=generator).cuda()
        expected = torch.scatter_reduce(data, 0, indices, updates, "amax", include_self=True)
        target = data if in_place else torch.empty_like(data)
        what = "out=data (in place)" if in_place else "out= a tensor of its own"
        print(f"-- {what}, float32 max")
        recording.calls.clear()
        returned = scatterx.scatter_elements(data, indices, updates, reduction="max", out=target)
        torch.cuda.synchronize()
        seen = recording.calls[0] if len(recording.calls) == 1 else {}
        kind, pointer, is_data = seen.get("out", (None, 0, False))
        check("the call returns out itself", returned is target)
        check(
            "the backend got out's memory, and wrote the result there",
            pointer == target.data_ptr()
            and seen.get("result", (0, 0))[1] == pointer
            and is_data == in_place,
            f"out at {pointer:#x}, result at {seen.get('result', (0, 0))[1]:#x}, "
            f"tensor at {target.data_ptr():#x}, out is data: {is_data}",
        )
        check("the bits of torch's amax", torch.equal(target, expected))

    # What the cupy backend does not serve stays on the GPU and is refused: BackendError.
    print("-- bfloat16 (no cupy kernels): refused, not sent to the host")
    recording.calls.clear()
    half = torch.ones(8, dtype=torch.bfloat16, device="cuda")
    try:
        scatterx.scatter_elements(half, torch.tensor([0], device="cuda"), half[:1])
    except scatterx.BackendError as error:
        check("scatterx.BackendError", not recording.calls, str(error).splitlines()[0])
    except Exception as error:
        check("scatterx.BackendError", False, f"{type(error).__name__}: {error}")
    else:
        check("scatterx.BackendError", False, "the call returned")

if failures:
    print(f"torch CUDA check FAILED: {len(failures)} check(s): {failures}")
    sys.exit(1)
print("torch CUDA check passed: zero-copy in and out, on the caller's device, in order")
PY
}

if [ "$torch_step" = yes ]; then
    echo "== torch CUDA tensors through the cupy backend (DLPack, no copy)"
    begin=$SECONDS
    if torch_cuda_check; then
        step "torch CUDA: zero copy" "passed or skipped (see above)" $((SECONDS - begin))
    else
        failed="$failed [torch CUDA: zero copy]"
        step "torch CUDA: zero copy" FAILED $((SECONDS - begin))
    fi
fi

# The torch operators (contract 12) on CUDA tensors: compiled, exported, torch.func.
if [ "$torch_step" = yes ] && [ "$torch_cuda" = 1 ]; then
    echo "== torch operators on CUDA tensors (tests/test_torch_ops.py -k cuda)"
    begin=$SECONDS
    if "$python" -m pytest -q -p no:cacheprovider -n 0 tests/test_torch_ops.py -k cuda; then
        step "torch operators: CUDA" passed $((SECONDS - begin))
    else
        failed="$failed [torch operators: CUDA]"
        step "torch operators: CUDA" FAILED $((SECONDS - begin))
    fi
fi

echo
echo "| step | result | seconds |"
echo "|---|---|---|"
for line in "${summary[@]}"; do
    IFS="|" read -r what result seconds <<<"$line"
    echo "| $what | $result | $seconds |"
done
echo "| all ($paths) | | $((SECONDS - started)) |"

if [ -n "$failed" ]; then
    echo "gpu_check FAILED:$failed"
    exit 1
fi
if [ "$targets" = missed ]; then
    echo "gpu_check: correct, but performance targets missed ($paths)"
    exit 3
fi
echo "gpu_check passed ($paths)"
