#!/usr/bin/env bash
# `make gpu-rehearsal`: tests/gpu/device.sh on this machine, which has no GPU, in an environment made to be the
# GPU machine's: a fresh venv holding only torch (CPU build), numpy 2 and onnxruntime, no pip inside it, no
# package index (PIP_NO_INDEX), everything else from a kit that tests/gpu/kit.py makes here for that venv's
# Python. device.sh goes through every step that needs no GPU (the kit unpacked, the server's Python with numpy
# 1.26 first, first light on the kit's tritonserver, every build the suite and the benchmark make, pytest
# collecting tests/gpu) and stops at the GPU checks, saying so.
#
# The GPU machine's Python is 3.12; the rehearsal's is the one a CPU build of torch can be had for without a
# download of several GB: this machine keeps torch 2.13.0's CPU wheel for Python 3.11 on disk (PyPI's Linux
# x86_64 wheels of torch are CUDA builds), so the rehearsal runs on 3.11 with a kit made for 3.11 (the same
# code, a cp311 stub, numpy and site). REHEARSAL_PYTHON names another interpreter.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=.venv/bin/python
BASE=${REHEARSAL_PYTHON:-$("$PY" -c 'import sys; print(sys._base_executable)')}
VERSION=$("$BASE" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
CACHE=$("$PY" -c 'from repogen.server.provision.install import default_cache_dir as d; print(d())')
FRAMEWORKS=$CACHE/gpu-rehearsal/frameworks-py$VERSION  # made once per machine: torch's install is the slow part
SPEC=(torch==2.13.0 'numpy>=2,<3' onnxruntime)
start=$SECONDS

if [ ! -f "$FRAMEWORKS/.installed" ]; then
    echo "== the frameworks' venv $FRAMEWORKS: ${SPEC[*]}, no pip"
    rm -rf "$FRAMEWORKS"
    "$BASE" -m venv --without-pip "$FRAMEWORKS"
    "$PY" -m pip --python "$FRAMEWORKS/bin/python" install --quiet --no-warn-script-location "${SPEC[@]}" 2>&1 \
        | { grep -v "^WARNING: Location 'file:" || true; }
    touch "$FRAMEWORKS/.installed"
fi
"$FRAMEWORKS/bin/python" -c 'import pip' 2>/dev/null && { echo "$FRAMEWORKS has pip: the GPU machine's may not"; exit 1; }

WORK=$(mktemp -d /tmp/repogen-gpu-rehearsal-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
echo "== the kit for Python $VERSION"
"$PY" tests/gpu/kit.py --python "$VERSION" --out "$WORK/kit" 2>&1 | { grep -v "^WARNING: Location 'file:" || true; }
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
kit_s=$((SECONDS - start))

echo "== tests/gpu/device.sh, rehearsing (output in $WORK/out)"
rc=0
env -u PYTHONPATH -u VIRTUAL_ENV PIP_NO_INDEX=1 PIP_FIND_LINKS= PATH="/usr/bin:/bin" \
    PYTHON="$FRAMEWORKS/bin/python" REPOGEN_GPU_KIT="$WORK/kit" REPOGEN_GPU_WORK="$WORK/run" OUT="$WORK/out" \
    REPOGEN_GPU_REHEARSAL=1 timeout -k 20 600 bash tests/gpu/device.sh || rc=$?
if [ $rc -ne 0 ]; then
    echo "== the rehearsal FAILED (device.sh exit $rc); its logs:"
    [ ! -f "$WORK/out/logs.tgz" ] || tar -xzf "$WORK/out/logs.tgz" -C "$WORK/out"
    tail -n 60 "$WORK"/out/*.log
    exit 1
fi
files=$(find "$WORK/out" -type f | wc -l)
[ "$files" -le 8 ] || { echo "== device.sh left $files files in \$OUT: the device tool brings back 8"; exit 1; }
echo "== gpu-rehearsal passed in $((SECONDS - start)) s (kit and frameworks $kit_s s); the kit: $(sed -n 's/.*"mib": \(.*\)/\1/p' "$WORK/kit/kit.json") MiB"
