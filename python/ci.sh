#!/usr/bin/env bash
# The Python package's CI: builds the dpml wheel for a portable x86-64 target, installs it
# into a fresh virtual environment with pinned requirements, and runs the Rust and Python
# tests. dpml-python is not a member of the root workspace (PyO3 needs a Python
# interpreter to build), so its format check, clippy and tests run here.
#
#   python/ci.sh                                            newest pinned versions
#   DPML_REQUIREMENTS=requirements-oldest.txt python/ci.sh  oldest supported versions
#   DPML_REUSE_WHEEL=1 ...                                  test the wheel an earlier run built
#   DPML_OLD_CPU=1 ...                                      also run pytest under qemu -cpu Nehalem
#   DPML_OLD_CPU=only ...                                   pytest under qemu only (scikit-learn's
#                                                           check battery natively, see below)
#   DPML_PREPARE_ONLY=1 ...                                 only create and fill the environments
#
# The first run (the default requirements) also installs requirements-spark.txt and runs
# dpml.spark's tests (markers spark, slow: a local[2] Spark on Java 17); the oldest-
# requirements run and the emulated-CPU run deselect them (Spark's JVM under qemu would
# take minutes and tests nothing about the CPU).
#
# The wheel is abi3 and its Rust code does not depend on the numpy or scikit-learn version,
# so a second run against other requirements may reuse the first run's wheel and skip the
# Rust checks, which would repeat the first run's exactly.
set -euo pipefail
cd "$(dirname "$0")"
here="$(pwd)"
root="$(cd .. && pwd)"
export CARGO_TARGET_DIR="${DPML_TARGET_DIR:-$root/target/python}"
requirements="${DPML_REQUIREMENTS:-requirements-test.txt}"
venv="${DPML_VENV:-$CARGO_TARGET_DIR/venv-$(basename "$requirements" .txt)}"
# A wheel built for the building machine (the workspace's target-cpu=native) crashes on
# older processors: build for x86-64-v2, which every x86-64 machine since about 2009 runs
# (faer picks AVX2/AVX-512 kernels at run time). RUSTFLAGS replaces build.rustflags.
if [ "$(uname -m)" = "x86_64" ]; then
    export RUSTFLAGS="${DPML_RUSTFLAGS:--C target-cpu=x86-64-v2}"
fi

echo "== python: virtual environment $venv ($requirements)"
if [ ! -x "$venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
# Spark's tests run in an environment of their own: pyarrow's wheels need AVX2, and pandas
# imports pyarrow whenever it is installed, so in this environment the emulated pre-AVX run
# below would die of an illegal instruction before any test of ours.
spark_tests=0
if [ "$requirements" = requirements-test.txt ] && [ "${DPML_SPARK:-1}" = 1 ]; then
    spark_tests=1
fi
spark_venv="${DPML_SPARK_VENV:-$CARGO_TARGET_DIR/venv-spark}"
spark_environment() {
    if [ ! -x "$spark_venv/bin/python" ]; then
        "${PYTHON:-python3}" -m venv "$spark_venv"
    fi
    "$spark_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$here/requirements-test.txt" -r "$here/requirements-spark.txt"
}
# DPML_PREPARE_ONLY=1: only the environments (.ci/run prepares them in the background while
# the workspace builds; the run proper then finds them installed).
if [ "${DPML_PREPARE_ONLY:-}" = 1 ]; then
    if [ "$spark_tests" = 1 ]; then
        echo "== python: Spark's environment $spark_venv"
        spark_environment
    fi
    exit 0
fi
export PYO3_PYTHON="$venv/bin/python"

if [ "${DPML_REUSE_WHEEL:-}" = 1 ] && ls "$CARGO_TARGET_DIR"/wheels/*.whl >/dev/null 2>&1; then
    echo "== python: reusing the wheel built earlier: $(ls "$CARGO_TARGET_DIR"/wheels/*.whl)"
else
    # The lints ship nothing, so they need no portable build: they run with the
    # workspace's own flags in its target folder, where `cargo clippy --workspace` has
    # already checked most of the dependencies (about 230 of this crate's 241 locked
    # versions are the workspace's; the others, and crates whose features differ, are
    # checked again).
    (
        unset RUSTFLAGS
        export CARGO_TARGET_DIR="${DPML_CHECK_TARGET_DIR:-$root/target}"
        echo "== python: cargo fmt --check, clippy (warnings are errors)"
        cargo fmt --manifest-path Cargo.toml -- --check
        # No code is compiled only without the `python` feature, so one lint covers all.
        cargo clippy --locked --all-targets -- -D warnings
    )

    echo "== python: wheel (RUSTFLAGS=${RUSTFLAGS:-})"
    start=$(date +%s)
    rm -rf "$CARGO_TARGET_DIR/wheels"
    "$venv/bin/maturin" build --release --locked --quiet --interpreter "$venv/bin/python" \
        --out "$CARGO_TARGET_DIR/wheels"
    echo "wheel built in $(( $(date +%s) - start )) s: $(ls "$CARGO_TARGET_DIR"/wheels/*.whl)"

    # In the wheel's build (release, the same flags and features): only PyO3, numpy and
    # this crate compile again (maturin builds PyO3 for an extension module).
    echo "== python: Rust tests (the reference fits the Python tests compare with)"
    cargo test --release --locked
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall \
    --no-deps "$CARGO_TARGET_DIR"/wheels/*.whl

# From tests/ with the pytest script (not `python -m`): the source tree's dpml/, which
# lacks the compiled core, must not shadow the installed package.
cd "$here/tests"
export DPML_FIXTURES="$here/tests/data"
if [ "${DPML_OLD_CPU:-}" != only ]; then
    echo "== python: pytest against the installed wheel"
    start=$(date +%s)
    "$venv/bin/pytest" -q -p no:cacheprovider --import-mode=importlib -m "not spark" "$@"
    echo "pytest took $(( $(date +%s) - start )) s"
fi

if [ "$spark_tests" = 1 ]; then
    echo "== python: dpml.spark's tests (local[2] Spark, Java 17) in $spark_venv"
    spark_environment
    "$spark_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --force-reinstall --no-deps "$CARGO_TARGET_DIR"/wheels/*.whl
    start=$(date +%s)
    "$spark_venv/bin/pytest" -q -p no:cacheprovider --import-mode=importlib -m spark "$@"
    echo "Spark's tests took $(( $(date +%s) - start )) s"
fi

# DPML_OLD_CPU=1: the suite again on an emulated older processor (qemu-x86_64 -cpu Nehalem:
# x86-64-v2, SSE4.2, no AVX), where a build for the building machine's features dies of an
# illegal instruction (the workspace's native `dpml` command does there: checked by hand).
# scikit-learn's estimator checks (test_sklearn_checks.py, about 760 small fits) run there
# only with DPML_OLD_CPU=1; with `only` they run natively, against this environment's
# versions: under emulation they took 217 of the suite's 255 s (one process, 27 November
# 2026) and exercise the wheel's code through the same fits, predictions and input
# conversions as the rest of the suite, on smaller data; what they add is scikit-learn's
# contract, which the versions decide, not the processor.
if [ "${DPML_OLD_CPU:-}" = only ]; then
    echo "== python: scikit-learn's estimator checks against this environment's versions"
    start=$(date +%s)
    "$venv/bin/pytest" -q -p no:cacheprovider --import-mode=importlib -m "not spark" \
        test_sklearn_checks.py "$@"
    echo "the estimator checks took $(( $(date +%s) - start )) s"
    emulated=(--ignore=test_sklearn_checks.py)
else
    emulated=()
fi
if [ "${DPML_OLD_CPU:-}" = 1 ] || [ "${DPML_OLD_CPU:-}" = only ]; then
    echo "== python: pytest on an emulated older processor (qemu-x86_64 -cpu Nehalem)"
    if ! command -v qemu-x86_64 >/dev/null 2>&1; then
        echo "qemu-x86_64 not found: apt-get install -y qemu-user" >&2
        exit 1
    fi
    # Two emulated processes side by side, each half of the tests (DPML_SHARD, conftest.py):
    # the emulation runs on one core each. (pytest-xdist would not do: its workers are new
    # processes, which qemu-user does not emulate.)
    start=$(date +%s)
    logs="$(mktemp -d)"
    pids=()
    for shard in 0 1; do
        DPML_SHARD="$shard/2" qemu-x86_64 -cpu Nehalem "$venv/bin/python" "$venv/bin/pytest" \
            -q -p no:cacheprovider --import-mode=importlib -m "not spark" \
            ${emulated[@]+"${emulated[@]}"} "$@" >"$logs/shard-$shard.log" 2>&1 &
        pids+=("$!")
    done
    failed=0
    for shard in 0 1; do
        wait "${pids[$shard]}" || failed=1
        echo "-- shard $shard/2:"
        cat "$logs/shard-$shard.log"
    done
    rm -rf "$logs"
    echo "pytest under qemu took $(( $(date +%s) - start )) s"
    if [ "$failed" = 1 ]; then
        echo "pytest under qemu failed" >&2
        exit 1
    fi
fi
