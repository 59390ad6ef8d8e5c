#!/usr/bin/env bash
# GPU check of the cupy backend, for a machine with an NVIDIA GPU, cupy and scatterx
# installed (pip install -e '.[cupy,test]'; torch optional): the conformance matrix with
# the cupy backend required, the cupy tests, then a benchmark table (tools/gpu_bench.py).
# About 3 minutes on an H200. Usage: tools/gpu_check.sh [peak TB/s, default 4.8]
set -uo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1

if ! "$python" -c "import scatterx_cupy" 2>/dev/null; then
    echo "scatterx is not installed here: pip install -e '.[cupy,test]'" >&2
    exit 2
fi
"$python" -m scatterx backends 2>/dev/null || true

echo "== conformance matrix and cupy tests (--require-backend cupy)"
"$python" -m pytest -q -p no:cacheprovider --require-backend cupy --scatterx-backend cupy \
    tests/test_conformance.py tests/test_cupy_backend.py tests/test_cupy_gpu.py
tests=$?

echo "== benchmark"
"$python" tools/gpu_bench.py "${1:-4.8}"
bench=$?

if [ "$tests" -ne 0 ] || [ "$bench" -ne 0 ]; then
    echo "gpu_check FAILED (tests: $tests, benchmark: $bench)"
    exit 1
fi
echo "gpu_check passed"
