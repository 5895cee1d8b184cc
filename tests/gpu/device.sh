#!/usr/bin/env bash
# The whole GPU run, on the GPU machine, in one device call of at most 9.5 minutes: the kit unpacked, the server's
# Python made, a first light (the kit's tritonserver serving a KIND_CPU torch model), the GPU suite (tests/gpu)
# and the GPU benchmark (bench/gpu.py). Everything lands under $OUT as it happens: steps.log, each test's result
# as a JSON line (gpu-results.jsonl) beside pytest's log, each benchmark point as a JSON line
# (gpu-bench-points.jsonl) and the figures after every round (gpu-bench.json), the servers' logs at the end; on
# exit, every file but those six goes into logs.tgz (the device tool brings back 8 files at most).
#
#   timeout -k 20 540 bash tests/gpu/device.sh     # PYTHON (default python3): the frameworks' Python; timeout_s 570
#
# Budgets: first light 70 s, the suite 150 s (74 s on an H200), the benchmark what is left of TOTAL_S (540 s, the
# call's `timeout`) less 25 s to stop its server and pack the logs: 330 s or more (it warms every model up, then
# fills its budget with rounds: 3 workloads x 3 models x c=1, 8, 32, the ensembles and a reference pair, 3 rounds,
# then only the points whose ratios straddle a goal; its report is written before its budget ends).
#
# Run from a checkout that carries .gpu-kit (`make gpu-kit` here): the machine has Python 3.12 with torch, numpy 2
# and onnxruntime, and no tritonserver, perf_analyzer, package index, pip to count on, or numpy 1 (DESIGN.md, "The
# GPU machine"). The kit brings the rest; nothing here calls pip.
#
# The server's Python is a venv of that Python whose path puts numpy 1.26.4 (the kit's) before the frameworks'
# packages: NGC pins numpy<2, and the 2.51 stub cannot send numpy 2's arrays. The test and benchmark processes keep
# the frameworks' own numpy.
#
# REPOGEN_GPU_REHEARSAL=1 (`make gpu-rehearsal`, on a machine without a GPU): every step that needs no GPU, then
# stop at the GPU check, saying so; exit 0 when everything up to there worked.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/repogen-gpu-out}
PY=${PYTHON:-python3}
KIT=${REPOGEN_GPU_KIT:-.gpu-kit}
WORK=${REPOGEN_GPU_WORK:-/tmp/repogen-gpu}
REHEARSAL=${REPOGEN_GPU_REHEARSAL:-}
STARTED=$(date +%s) TOTAL_S=${TOTAL_S:-540}
export REPOGEN_CACHE_DIR=$WORK/cache PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# Every tritonserver the run starts leaves its pid here (repogen.testing.gpu.record_server); each step's end and
# the exit kill what is left of those process groups, also when a `timeout` killed pytest before its teardown.
export REPOGEN_GPU_PIDS=$WORK/pids
mkdir -p "$OUT" "$WORK" "$REPOGEN_GPU_PIDS"
log() { echo "== $(date +%T) $*" | tee -a "$OUT/steps.log"; }
stop_servers() {
    local file pid
    for file in "$REPOGEN_GPU_PIDS"/*; do
        [ -f "$file" ] || continue
        pid=$(cat "$file")
        if kill -0 -- "-$pid" 2>/dev/null; then
            log "stopping server group $pid, left running by $(basename "$file")"
            kill -KILL -- "-$pid" 2>/dev/null
        fi
        rm -f "$file"
    done
}
# The device tool brings back at most 8 files of $OUT (2026-11-30: 13 were written, and steps.log was one of the five
# left behind): the figures and the logs read first stay as they are, everything else goes into logs.tgz.
KEPT=(steps.log gpu-results.jsonl gpu-suite.log gpu-bench.json gpu-bench-points.jsonl gpu-bench.log)
finish() {
    stop_servers
    find "$WORK" -name 'tritonserver*.log' -newer "$WORK/started" 2>/dev/null \
        | tar -czf "$OUT/server-logs.tgz" -T - 2>/dev/null
    local rest=() file
    for file in "$OUT"/*; do
        [[ " ${KEPT[*]} logs.tgz " == *" $(basename "$file") "* ]] || rest+=("$(basename "$file")")
    done
    [ ${#rest[@]} -eq 0 ] || { tar -czf "$OUT/logs.tgz" -C "$OUT" "${rest[@]}" && (cd "$OUT" && rm -f "${rest[@]}"); }
}
trap finish EXIT
trap 'log "stopped by a signal"; exit 143' TERM INT
: >"$OUT/steps.log"
: >"$WORK/started"  # the servers' logs of this run are newer

log "the machine"
{ nvidia-smi; nvidia-smi -L; "$PY" --version; } >"$OUT/machine.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ -n "$REHEARSAL" ] || [ "$gpus" -gt 0 ] || { log "no GPU listed by nvidia-smi: not a GPU machine"; exit 1; }

log "unpacking the kit $KIT into $WORK"
"$PY" - "$KIT" "$WORK" <<'EOF' 2>&1 | tee -a "$OUT/steps.log"
import json, sys, tarfile
kit, work = sys.argv[1:]
manifest = json.load(open(f"{kit}/kit.json"))
mine = "%d.%d" % sys.version_info[:2]
if manifest["python"] != mine:
    sys.exit(f"the kit is for Python {manifest['python']}, this Python is {mine}: make it with --python {mine}")
parts = {f"tritonserver-{manifest['tritonserver']}": "cache", manifest["perf_analyzer"]: "cache",
         "numpy-1.26.4": "numpy126", "site": "site"}
for name, into in parts.items():
    with tarfile.open(f"{kit}/{name}.tar.xz") as tar:
        tar.extractall(f"{work}/{into}", filter="tar")
print(f"kit: {manifest['mib']} MiB for Python {mine}, {len(manifest['site'])} distributions in site/")
EOF
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
export PYTHONPATH=$WORK/site:$PWD  # the checkout: bench/gpu.py imports repogen

log "what the test process imports"
"$PY" - <<'EOF' 2>&1 | tee "$OUT/test-python.txt"
import importlib
for name in ("numpy", "torch", "onnxruntime", "tritonclient.grpc", "tritonclient.http", "grpc", "google.protobuf",
             "ml_dtypes", "pytest", "click", "filelock", "cloudpickle", "cyclonedx.model.bom", "sortedcontainers",
             "repogen.cli", "repogen.sbom"):
    module = importlib.import_module(name)
    print(name, getattr(module, "__version__", ""), module.__file__)
EOF
[ "${PIPESTATUS[0]}" -eq 0 ] || { log "the test process lacks a module (above)"; exit 1; }

log "the server's Python: $WORK/venv (numpy 1.26.4, then the frameworks, then the kit's site)"
BASE=$("$PY" -c 'import sys; print(sys._base_executable)')
FRAMEWORKS=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if ! "$BASE" -m venv --without-pip "$WORK/venv"; then  # a Python without its venv module: a venv by hand
    VERSION=$("$BASE" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    mkdir -p "$WORK/venv/bin" "$WORK/venv/lib/python$VERSION/site-packages" && ln -sf "$BASE" "$WORK/venv/bin/python"
    printf 'home = %s\ninclude-system-site-packages = false\nversion = %s\n' "$(dirname "$BASE")" "$VERSION" \
        >"$WORK/venv/pyvenv.cfg"
fi
SITE=$("$WORK/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# The kit's site last: builds name what the server's Python provides (repogen.testing.gpu.FRAMEWORKS), since
# shipping a package would need a pip and an index that the machine does not have.
printf '%s\n%s\n%s\n' "$WORK/numpy126" "$FRAMEWORKS" "$WORK/site" >"$SITE/repogen-gpu.pth"
"$WORK/venv/bin/python" - <<'EOF' 2>&1 | tee "$OUT/server-python.txt"
import importlib
for name in ("numpy", "torch", "cupy", "onnxruntime", "array_api_strict"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as exc:  # cupy 14 refuses numpy 1: the suite skips its models, saying so
        print(name, "does not import:", type(exc).__name__, exc)
EOF
grep -q '^numpy 1.26.4$' "$OUT/server-python.txt" || { log "the server's Python does not have numpy 1.26.4 first"; exit 1; }
export REPOGEN_GPU_SERVER_VENV=$WORK/venv REPOGEN_TRITON_RELEASE=2.51.0

log "first light: the kit's tritonserver serving a KIND_CPU torch model (tests/gpu/first_light.py)"
timeout -k 10 "${FIRST_LIGHT_TIMEOUT_S:-70}" "$PY" tests/gpu/first_light.py "$WORK/first-light" 2>&1 \
    | tee "$OUT/first-light.log"
light=${PIPESTATUS[0]}
stop_servers
[ "$light" -eq 0 ] || { log "first light failed ($light): the suite and the benchmark would too"; exit 1; }

if [ -n "$REHEARSAL" ]; then
    log "rehearsal: every build the suite and the benchmark make (tests/gpu/builds.py)"
    "$PY" tests/gpu/builds.py "$WORK/builds" 2>&1 | tee "$OUT/builds.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
fi

log "the GPU suite"
export REPOGEN_GPU_RESULTS=$OUT/gpu-results.jsonl
# The main module first (pytest keeps the order of the files it is given): if the budget runs out, what is cut is
# the placement and cupy checks.
files=(tests/gpu/test_gpu_tensors.py)
for file in tests/gpu/test_*.py; do [ "$file" = "${files[0]}" ] || files+=("$file"); done
timeout -k 15 "${SUITE_TIMEOUT_S:-150}" "$PY" -m pytest -q -rA -p no:cacheprovider --basetemp "$WORK/pytest" "${files[@]}" \
    --junitxml "$OUT/gpu-junit.xml" 2>&1 | tee "$OUT/gpu-suite.log"
suite=${PIPESTATUS[0]}
stop_servers

left=$(( TOTAL_S - ($(date +%s) - STARTED) - 25 ))
BENCH_TIMEOUT_S=${BENCH_TIMEOUT_S:-$left}
log "the GPU benchmark (${BENCH_TIMEOUT_S} s)"
timeout -k 15 "$BENCH_TIMEOUT_S" "$PY" bench/gpu.py --out "$OUT/gpu-bench.json" \
    --points "$OUT/gpu-bench-points.jsonl" --budget-s "$(( BENCH_TIMEOUT_S - 20 ))" 2>&1 \
    | tee "$OUT/gpu-bench.log"
bench=${PIPESTATUS[0]}
stop_servers

if [ -n "$REHEARSAL" ]; then
    collected=$(grep -c '"when": "setup"' "$OUT/gpu-results.jsonl" 2>/dev/null)
    skipped=$(grep -c '"outcome": "skipped"' "$OUT/gpu-results.jsonl" 2>/dev/null)
    log "rehearsal: the suite collected ${collected:-0} tests, ${skipped:-0} skipped at the GPU check (pytest exit $suite);" \
        "the benchmark built its repository and stopped at its GPU check (exit $bench)"
    [ "$suite" -eq 0 ] && [ "${collected:-0}" -gt 0 ] && [ "$collected" = "$skipped" ] && [ "$bench" -eq 3 ] || exit 1
    log "rehearsal passed: everything up to the GPU checks works; the GPU run itself needs a GPU machine"
    exit 0
fi
log "suite exit $suite, benchmark exit $bench"
[ "$suite" -eq 0 ] && [ "$bench" -eq 0 ]
