#!/usr/bin/env bash
# The whole GPU run, on the GPU machine, in one call: the GPU suite (tests/gpu) and the GPU benchmark
# (bench/gpu.py), every log under $OUT. Run from a checkout that carries .gpu-kit (python tests/gpu/kit.py
# makes it here): the machine has Python 3.12 with torch, cupy, onnx and onnxruntime, and no tritonserver,
# perf_analyzer, package index or numpy 1 (DESIGN.md, "The GPU machine").
#
#   bash tests/gpu/device.sh            # PYTHON (default python3): the frameworks' Python
#
# The server's Python is a venv of that Python whose path puts numpy 1.26.4 (the kit's) before the frameworks'
# packages: NGC pins numpy<2, and the 2.51 stub cannot send numpy 2's arrays. The test and benchmark processes
# keep the frameworks' own numpy.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/repogen-gpu-out}
PY=${PYTHON:-python3}
KIT=.gpu-kit
WORK=${REPOGEN_GPU_WORK:-/tmp/repogen-gpu}
export REPOGEN_CACHE_DIR=$WORK/cache PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
mkdir -p "$OUT" "$WORK"
log() { echo "== $(date +%T) $*" | tee -a "$OUT/steps.log"; }

log "the machine"
{ nvidia-smi; nvidia-smi -L; "$PY" --version; } >"$OUT/machine.txt" 2>&1

log "unpacking the kit into $WORK"
"$PY" - "$KIT" "$WORK" <<'EOF' || exit 1
import sys, tarfile
kit, work = sys.argv[1:]
for name, into in (("tritonserver-2.51.0", "cache"), ("perf-analyzer-2.41.0", "cache"), ("numpy-1.26.4", "numpy126")):
    with tarfile.open(f"{kit}/{name}.tar.xz") as tar:
        tar.extractall(f"{work}/{into}")
EOF
"$PY" -m pip install --quiet --no-index --no-deps --no-compile --target "$WORK/site" "$KIT"/wheels/*.whl || exit 1
export PYTHONPATH=$WORK/site:$PWD  # the checkout: bench/gpu.py imports repogen

log "the server's Python: $WORK/venv (numpy 1.26.4, then the frameworks)"
BASE=$("$PY" -c 'import sys; print(sys._base_executable)')
FRAMEWORKS=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$BASE" -m venv --without-pip "$WORK/venv" || exit 1
SITE=$("$WORK/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n%s\n' "$WORK/numpy126" "$FRAMEWORKS" >"$SITE/repogen-gpu.pth"
"$WORK/venv/bin/python" - <<'EOF' 2>&1 | tee "$OUT/server-python.txt"
import importlib
for name in ("numpy", "torch", "cupy", "onnxruntime"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as exc:  # cupy 14 refuses numpy 1: the suite skips its models, saying so
        print(name, "does not import:", type(exc).__name__, exc)
EOF
export REPOGEN_GPU_SERVER_VENV=$WORK/venv REPOGEN_TRITON_RELEASE=2.51.0

log "the GPU suite"
timeout "${SUITE_TIMEOUT_S:-330}" "$PY" -m pytest -q -rA -p no:cacheprovider tests/gpu \
    --junitxml "$OUT/gpu-junit.xml" 2>&1 | tee "$OUT/gpu-suite.log"
suite=${PIPESTATUS[0]}

log "the GPU benchmark"
timeout "${BENCH_TIMEOUT_S:-200}" "$PY" bench/gpu.py --out "$OUT/gpu-bench.json" 2>&1 | tee "$OUT/gpu-bench.log"
bench=${PIPESTATUS[0]}

tar -czf "$OUT/server-logs.tgz" /tmp/pytest-of-*/pytest-*/gpu-server*/tritonserver.log 2>/dev/null
log "suite exit $suite, benchmark exit $bench"
[ "$suite" -eq 0 ] && [ "$bench" -eq 0 ]
