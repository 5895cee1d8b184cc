#!/usr/bin/env bash
# The serving pairings of `make test` and `make test-releases` (Makefile): tests/pairings.sh SPEC..., each SPEC
# <tritonserver release>+<Python>=<all|smoke>. Every pairing runs. An `all` pairing runs in two parts at once: the
# container tests (tests/containers: image builds, Docker's and the kubelet's probe periods, mostly waiting) into a
# file, and everything else with its output as it comes; then the smoke pairings run together, each into a file of
# its own. A part that runs beside others is printed whole as it ends. On two cores their servers mostly wait on
# their clients (the full pairing alone kept the cores about 55% busy), and together they take about the longest
# one's time instead of the sum (2026-11-28, this machine: the three smokes, 2.39 + 3.10, 2.41 + 3.10 and 2.51 + 3.12, took
# 6:37 together against 12:49 one after the other in the last CI run, every test passing).
# The smoke pairings run one by one (PAIRINGS_AT_ONCE=0 runs them together): three at once beside nothing else left
# CI's machine without threads now and then (2026-11-28: `repogen infer` aborted in gRPC on "pthread_create failed:
# Resource temporarily unavailable", in two .ci/run runs of five).
#
# The summary names each run's result and pytest's closing line, then each skip's reason (pytest -ra's SKIPPED
# lines: a test skips only for what CI cannot provide, repogen/testing/prerequisites.py); its last line counts
# pairings, runs and skipped tests, and the exit status is 1 if any run failed. Before that line, a failed run's
# FAILED lines and the first of its assertion ('E') lines are repeated: a log cut to its tail still says what failed.
#
# From the Makefile's environment: PY, PYTEST_ARGS, SMOKE_ARGS, SAME_PYTHON_ARGS (shell words, quotes kept),
# FULL_PAIRING.
set -uo pipefail
: "${PY:?}" "${FULL_PAIRING:?}"
specs=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The pytest arguments of one pairing, into the array `args`.
pairing_args() {
    local scope=$1 python=$2
    eval "args=($PYTEST_ARGS)"
    [ "$scope" = all ] || eval "args+=($SMOKE_ARGS)"
    # After the full run, a smoke pairing with the full pairing's Python changes only the release.
    if [ "$scope" = smoke ] && [ "$python" = "${FULL_PAIRING#*+}" ] && [[ " ${specs[*]} " == *" $FULL_PAIRING=all "* ]]; then
        eval "args+=($SAME_PYTHON_ARGS)"
    fi
}

# Run part $1 (spec $2, more pytest arguments in $4...); its output goes to $work/$1.out, and to the terminal as it
# comes with $3 = live, whole as it ends with $3 empty, or later (the caller prints $work/$1.shown) with $3 = later.
run() {
    local number=$1 spec=$2 live=${3:-} pairing scope release python start rc args
    shift 3
    pairing=${spec%=*} scope=${spec#*=} release=${pairing%+*} python=${pairing#*+}
    pairing_args "$scope" "$python"
    args+=("$@")
    start=$SECONDS
    if [ "$live" = live ]; then
        echo "== $scope tests${*:+ ($*)} on tritonserver $release + Python $python"
        REPOGEN_TRITON_RELEASE=$release REPOGEN_SERVER_PYTHON=$python "$PY" -m pytest "${args[@]}" 2>&1 \
            | tee "$work/$number.out"
        rc=${PIPESTATUS[0]}
    else
        REPOGEN_TRITON_RELEASE=$release REPOGEN_SERVER_PYTHON=$python "$PY" -m pytest "${args[@]}" \
            >"$work/$number.out" 2>&1
        rc=$?
        { echo "== $scope tests${*:+ ($*)} on tritonserver $release + Python $python (run beside other parts)"
          cat "$work/$number.out"; } >"$work/$number.shown"
        [ "$live" = later ] || cat "$work/$number.shown"  # whole, as one write: the parts' outputs do not interleave
    fi
    echo "$rc $((SECONDS - start))" >"$work/$number.rc"
}

# Parts: each `all` pairing's two, then one per smoke pairing; parts[i] is part i's pairing spec.
CONTAINERS=tests/containers
FAILURE_LINES=20
parts=() smokes=()
for spec in "${specs[@]}"; do
    if [[ $spec == *=all ]]; then
        containers=${#parts[@]}
        parts+=("$spec")
        run "$containers" "$spec" later "$CONTAINERS" &
        parts+=("$spec")
        run "$((containers + 1))" "$spec" live --ignore="$CONTAINERS"
        wait
        cat "$work/$containers.shown"
    else
        smokes+=("${#parts[@]}")
        parts+=("$spec")
    fi
done
if [ "${PAIRINGS_AT_ONCE:-1}" = 1 ]; then  # one by one unless PAIRINGS_AT_ONCE=0 (see the head of this file)
    for number in "${smokes[@]}"; do run "$number" "${parts[$number]}" live; done
elif [ ${#smokes[@]} -gt 0 ]; then
    names=()
    for number in "${smokes[@]}"; do names+=("${parts[$number]%=*}"); done
    echo "== ${#smokes[@]} smoke pairing(s) together: ${names[*]} (each one's output as it ends)"
    for number in "${smokes[@]}"; do run "$number" "${parts[$number]}" "" & done
    wait
fi

failed=0 passed=0 skipped=0 summary=() failures=()
for number in "${!parts[@]}"; do
    spec=${parts[$number]} out=$work/$number.out
    pairing=${spec%=*} scope=${spec#*=}
    read -r rc took <"$work/$number.rc"
    label=$(sed -n 's/^repogen served on: //p' "$out" | tail -n 1)
    closing=$(grep -v '^[[:space:]]*$' "$out" | tail -n 1 | sed 's/^[= ]*//; s/[= ]*$//')
    if [ "$rc" -eq 0 ]; then result=passed passed=$((passed + 1)); else
        result="FAILED (pytest exit $rc)" failed=$((failed + 1)); fi
    part=$scope
    [ "$scope" != all ] || { [ "${parts[$((number + 1))]:-}" = "$spec" ] && part="all, $CONTAINERS" || part="all, the rest"; }
    summary+=("$(printf '  %-22s %s: %s in %ss (%s)' "$part" "${label:-tritonserver ${pairing%+*} + Python ${pairing#*+}}" \
        "$result" "$took" "$closing")")
    skips=$(sed -n 's/.*[^0-9]\([0-9][0-9]*\) skipped.*/\1/p' <<<" $closing")
    skipped=$((skipped + ${skips:-0}))
    while IFS= read -r line; do summary+=("        $line"); done < <(grep '^SKIPPED ' "$out")
    [ "$rc" -eq 0 ] || {
        failures+=("  $part, ${label:-tritonserver ${pairing%+*} + Python ${pairing#*+}}:")
        while IFS= read -r line; do failures+=("        $line"); done < <(
            grep -E '^(FAILED|ERROR) ' "$out"; grep -E '^E  ' "$out" | head -n "$FAILURE_LINES")
    }
done
echo "== serving pairings"
printf '%s\n' "${summary[@]}"
if [ ${#failures[@]} -gt 0 ]; then  # last, beside the count: a log cut to its tail still says what failed
    echo "== what failed (each failed run's FAILED and ERROR lines, then its first $FAILURE_LINES 'E' lines)"
    printf '%s\n' "${failures[@]}"
fi
echo "pairings: ${#specs[@]} in ${#parts[@]} runs, $passed passed, $failed failed; $skipped test(s) skipped (reasons above)"
[ "$failed" -eq 0 ]
