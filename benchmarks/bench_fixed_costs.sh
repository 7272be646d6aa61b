#!/usr/bin/env bash
# Fixed costs: whole-process CPU seconds (user + sys) of a 20 x 2 cross-validation of A1DE on
# iris — ours (`python -m workbench run --no-report`, MDL per training fold) against Weka 3.6's
# AODE -F 1 -M -W 1 behind its supervised Discretize filter, 20 x 2 CV in one JVM through our
# helper benchmarks/weka/JavaCV.java — alternating, REPEATS times; prints each pair, the
# medians and the ratio ours / Weka. Also: the start-up alone (`python -m workbench --version`,
# and importing the runner with a learner's kernels loaded), and the floor any process of ours
# pays before doing anything: the interpreter with numpy, then pyarrow (which imports pandas
# on its first numpy conversion), then numba's import and first compiled-kernel load.
# Python runs as the interpreter itself (a version manager's shim script would add its own
# start-up), with the package byte-compiled as an installed wheel is.
#
#   benchmarks/bench_fixed_costs.sh [REPEATS]        (default 5)
#
# Needs java, javac and Weka 3.6 (Debian: apt-get install weka; WEKA_JAR overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-5}
WEKA_JAR=${WEKA_JAR:-/usr/share/java/weka.jar}
[ -f "$WEKA_JAR" ] || { echo "error: Weka jar not found at $WEKA_JAR" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
javac -cp "$WEKA_JAR" -d "$TMP" benchmarks/weka/JavaCV.java
PY=$(command python -c 'import sys; print(sys.executable)')
"$PY" -m compileall -q workbench || true
"$PY" - "$TMP/iris.arff" <<'PY'
import sys
from workbench.data.arff import save_arff
from workbench.data.catalog import find_dataset, load_dataset
save_arff(load_dataset(find_dataset("iris")), sys.argv[1])
PY
cat > "$TMP/iris.yaml" <<YAML
name: iris-a1de-20x2
datasets: [iris]
protocol: {rounds: 20, folds: 2, seed: 1}
learners: [A1DE]
output: $TMP/out
YAML
cpu() { /usr/bin/time -f "%U %S" "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.3f", $1 + $2}'; }
"$PY" -m workbench -q run --no-report "$TMP/iris.yaml" >/dev/null  # compile kernels once
ours=(); weka=(); start=(); kernels=(); floor=()
for i in $(seq "$REPEATS"); do
    rm -rf "$TMP/out"
    ours+=("$(cpu "$PY" -m workbench -q run --no-report "$TMP/iris.yaml")")
    weka+=("$(cpu java -cp "$WEKA_JAR:$TMP" JavaCV "$TMP/iris.arff" 20 2 \
              weka.classifiers.bayes.AODE -F 1 -M -W 1)")
    start+=("$(cpu "$PY" -m workbench --version)")
    kernels+=("$(cpu "$PY" -c 'import workbench.experiment.runner
from workbench.learners.registry import create
from workbench.data.catalog import find_dataset, load_dataset
d = load_dataset(find_dataset("iris"))
from workbench.discretize import fit_discretizer
d = fit_discretizer("mdl", d).transform(d)
create("A1DE").fit(d).predict_proba(d)')")
    floor+=("$(cpu "$PY" -c 'import numpy') $(cpu "$PY" -c 'import numpy, pyarrow
pyarrow.array(numpy.zeros(1))') $(cpu "$PY" -c 'import workbench.data.gather as g, numpy
g.used_codes(numpy.zeros(1, numpy.int32), 1)')")
    echo "repeat $i: ours ${ours[-1]} s, Weka ${weka[-1]} s" \
         "(our start-up: --version ${start[-1]} s, imports + one A1DE fit ${kernels[-1]} s)"
done
"$PY" - "${ours[*]}" "${weka[*]}" "${start[*]}" "${kernels[*]}" "${floor[*]}" <<'PY'
import statistics, sys
o, w, s, k, f = ([float(v) for v in a.split()] for a in sys.argv[1:6])
mo, mw = statistics.median(o), statistics.median(w)
print(f"median whole-process CPU: ours {mo:.3f} s, Weka {mw:.3f} s, ratio ours/Weka {mo / mw:.2f}")
print(f"of ours: start-up (--version) {statistics.median(s):.3f} s; imports, compiled-kernel "
      f"loading and one A1DE fit on iris {statistics.median(k):.3f} s")
numpy, arrow, kernel = (statistics.median(f[i::3]) for i in range(3))
print(f"floor: python + numpy {numpy:.3f} s; + pyarrow (and the pandas it imports) "
      f"{arrow:.3f} s; numpy + numba + one cached kernel's first call {kernel:.3f} s")
PY
