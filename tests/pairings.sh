#!/usr/bin/env bash
# The serving pairings of `make test` and `make test-releases` (Makefile): tests/pairings.sh SPEC..., each SPEC
# <tritonserver release>+<Python>=<all|smoke>. Every pairing runs. An `all` pairing runs alone, its output as it
# comes; then the smoke pairings run together, each into a file of its own that is printed whole as it ends: on
# two cores their servers mostly wait on their clients, and together they take about the longest one's time
# instead of the sum (2026-11-28, this machine: the three smokes, 2.39 + 3.10, 2.41 + 3.10 and 2.51 + 3.12, took
# 6:37 together against 12:49 one after the other in the last CI run, every test passing).
# PAIRINGS_AT_ONCE=1 runs them one by one.
#
# The summary names each pairing's result and pytest's closing line, then each skip's reason (pytest -ra's
# SKIPPED lines: a test skips only for what CI cannot provide, repogen/testing/prerequisites.py); its last line
# counts pairings and skipped tests, and the exit status is 1 if any pairing failed.
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

# Run pairing number $1 (spec $2); its output goes to $work/$1.out, or also to the terminal with $3 = live.
run() {
    local number=$1 spec=$2 live=${3:-} pairing scope release python start rc args
    pairing=${spec%=*} scope=${spec#*=} release=${pairing%+*} python=${pairing#*+}
    pairing_args "$scope" "$python"
    start=$SECONDS
    if [ "$live" = live ]; then
        echo "== $scope tests on tritonserver $release + Python $python"
        REPOGEN_TRITON_RELEASE=$release REPOGEN_SERVER_PYTHON=$python "$PY" -m pytest "${args[@]}" 2>&1 \
            | tee "$work/$number.out"
        rc=${PIPESTATUS[0]}
    else
        REPOGEN_TRITON_RELEASE=$release REPOGEN_SERVER_PYTHON=$python "$PY" -m pytest "${args[@]}" \
            >"$work/$number.out" 2>&1
        rc=$?
        { echo "== $scope tests on tritonserver $release + Python $python (run beside the other smoke pairings)"
          cat "$work/$number.out"; } >"$work/$number.shown"
        cat "$work/$number.shown"  # whole, as one write, so that the pairings' outputs do not interleave
    fi
    echo "$rc $((SECONDS - start))" >"$work/$number.rc"
}

smokes=()
for number in "${!specs[@]}"; do
    if [[ ${specs[$number]} == *=all ]]; then
        run "$number" "${specs[$number]}" live
    else
        smokes+=("$number")
    fi
done
if [ "${PAIRINGS_AT_ONCE:-}" = 1 ]; then
    for number in "${smokes[@]}"; do run "$number" "${specs[$number]}" live; done
else
    if [ ${#smokes[@]} -gt 0 ]; then
        names=()
        for number in "${smokes[@]}"; do names+=("${specs[$number]%=*}"); done
        echo "== ${#smokes[@]} smoke pairing(s) together: ${names[*]} (each one's output as it ends)"
    fi
    for number in "${smokes[@]}"; do run "$number" "${specs[$number]}" & done
    wait
fi

failed=0 passed=0 skipped=0 summary=()
for number in "${!specs[@]}"; do
    spec=${specs[$number]} out=$work/$number.out
    pairing=${spec%=*} scope=${spec#*=}
    read -r rc took <"$work/$number.rc"
    label=$(sed -n 's/^repogen served on: //p' "$out" | tail -n 1)
    closing=$(grep -v '^[[:space:]]*$' "$out" | tail -n 1 | sed 's/^[= ]*//; s/[= ]*$//')
    if [ "$rc" -eq 0 ]; then result=passed passed=$((passed + 1)); else
        result="FAILED (pytest exit $rc)" failed=$((failed + 1)); fi
    summary+=("$(printf '  %-5s %s: %s in %ss (%s)' "$scope" "${label:-tritonserver ${pairing%+*} + Python ${pairing#*+}}" \
        "$result" "$took" "$closing")")
    skips=$(sed -n 's/.*[^0-9]\([0-9][0-9]*\) skipped.*/\1/p' <<<" $closing")
    skipped=$((skipped + ${skips:-0}))
    while IFS= read -r line; do summary+=("        $line"); done < <(grep '^SKIPPED ' "$out")
done
echo "== serving pairings"
printf '%s\n' "${summary[@]}"
echo "pairings: $passed passed, $failed failed; $skipped test(s) skipped (reasons above)"
[ "$failed" -eq 0 ]
