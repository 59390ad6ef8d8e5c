#!/usr/bin/env bash
# GPU check of the cupy backend, for a machine with an NVIDIA GPU, cupy and scatterx
# installed (pip install -e '.[cupy,test]'; torch optional). For each set of strategies,
# the default ones and then the opt-in fast paths (SCATTERX_CUPY_FAST_PATHS=1, unverified
# on hardware until this passes): the conformance matrix with the cupy backend required and
# the cupy GPU tests, then a benchmark table (tools/gpu_bench.py).
# About 3 minutes per set on an H200.
# Usage: tools/gpu_check.sh [--paths default|fast|both] [--no-bench] [peak TB/s, default 4.8]
set -uo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1

paths=both
bench=yes
peak=4.8
while [ $# -gt 0 ]; do
    case "$1" in
        --paths) paths="${2:-}"; shift 2 ;;
        --paths=*) paths="${1#--paths=}"; shift ;;
        --no-bench) bench=no; shift ;;
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

failed=""
for fast in $sets; do
    name=$([ "$fast" = 1 ] && echo "fast paths" || echo "default strategies")
    export SCATTERX_CUPY_FAST_PATHS="$fast"
    # The opt-in must really be on (or off): a stale install would verify nothing.
    if ! "$python" -c "import sys, scatterx_cupy as c; sys.exit(c.fast_paths_enabled() != $fast)"; then
        echo "scatterx_cupy here does not take SCATTERX_CUPY_FAST_PATHS=$fast" >&2
        failed="$failed [$name: opt-in]"
        continue
    fi

    echo "== $name: conformance matrix and cupy tests (--require-backend cupy)"
    tests=(tests/test_conformance.py tests/test_cupy_gpu.py)
    [ "$fast" = 0 ] && tests+=(tests/test_cupy_backend.py)
    "$python" -m pytest -q -p no:cacheprovider --require-backend cupy --scatterx-backend cupy \
        "${tests[@]}" || failed="$failed [$name: tests]"

    if [ "$bench" = yes ]; then
        echo "== $name: benchmark"
        "$python" tools/gpu_bench.py "$peak" || failed="$failed [$name: benchmark]"
    fi
done
unset SCATTERX_CUPY_FAST_PATHS

if [ -n "$failed" ]; then
    echo "gpu_check FAILED:$failed"
    exit 1
fi
echo "gpu_check passed ($paths)"
