#!/usr/bin/env bash
# Speed yardstick: our A1DE vs Weka 3.6 weka.classifiers.bayes.AODE on the same seeded 50/50
# splits after the same MDL discretisation (fitted on the training half).
#
#   benchmarks/bench_vs_weka.sh [DATASET ...]      (default: the medium/large benchmark sets)
#
# Needs java and Weka 3.6 (Debian: apt-get install weka -> /usr/share/java/weka.jar; override
# with WEKA_JAR=...). No Weka code is part of this repository.
#
# Weka 3.6's command line prints "Time taken to build model" and, for classification, only
# "Time taken to test model on training data"; with a 50/50 split the training half has the
# same size as the test half, so that figure is used as Weka's classification time. Weka's
# times include JVM warm-up (JIT), ours exclude numba compilation (done on a tiny set first).
set -euo pipefail
cd "$(dirname "$0")/.."
WEKA_JAR=${WEKA_JAR:-/usr/share/java/weka.jar}
[ -f "$WEKA_JAR" ] || { echo "error: Weka jar not found at $WEKA_JAR" >&2; exit 2; }
if [ $# -gt 0 ]; then DATASETS="$*"; else DATASETS="adult letter magic nursery kr-vs-kp splice connect-4"; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# shellcheck disable=SC2086
python benchmarks/bench_learners.py --datasets $DATASETS --learners A1DE \
    --export "$TMP" --json "$TMP/ours.json" > "$TMP/ours.txt"

for ds in $DATASETS; do
    java -Xmx4g -cp "$WEKA_JAR" weka.classifiers.bayes.AODE \
        -t "$TMP/$ds-train.arff" -T "$TMP/$ds-test.arff" -o > "$TMP/$ds-weka.txt" 2>&1 || {
        echo "error: Weka failed on $ds:" >&2; head -5 "$TMP/$ds-weka.txt" >&2; exit 1; }
done

python - "$TMP" $DATASETS <<'PY'
import json, re, sys
tmp, names = sys.argv[1], sys.argv[2:]
ours = {r["dataset"]: r for r in json.load(open(f"{tmp}/ours.json"))}
print(f"{'dataset':<10} {'weka_build':>10} {'weka_test':>10} {'ours_fit':>9} {'ours_pred':>9}"
      f" {'ratio_train':>11} {'ratio_test':>10} {'ratio_total':>11}")
for ds in names:
    text = open(f"{tmp}/{ds}-weka.txt").read()
    build = float(re.search(r"Time taken to build model: ([0-9.]+)", text).group(1))
    test = float(re.search(r"Time taken to test model on training data: ([0-9.]+)", text).group(1))
    o = ours[ds]
    fit, pred = o["train_wall"], o["test_wall"]
    ratio = lambda a, b: f"{a / b:.1f}x" if b > 0 else "inf"
    print(f"{ds:<10} {build:10.3f} {test:10.3f} {fit:9.3f} {pred:9.3f} "
          f"{ratio(build, fit):>11} {ratio(test, pred):>10} {ratio(build + test, fit + pred):>11}")
PY
