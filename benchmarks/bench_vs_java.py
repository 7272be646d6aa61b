"""Our AnDE learners against the Java references, paired in one run: train + classify CPU seconds.

    python benchmarks/bench_vs_java.py [--datasets adult connect-4 ...] [--repeats 5]
        [--seed 1] [--only A1DE ...]

Per data set (default: kr-vs-kp nursery magic letter adult splice optdigits connect-4
poker-hand, found along the catalog search path, e.g. with
``WORKBENCH_DATA=../shared/datasets/fetched``): a seeded 50/50 split, MDL fitted on the
training half, both halves written as discretised ARFF. Each row pairs one of our learners
with a Java classifier on the same halves, timed in CPU seconds inside its own process
(ours: `time.process_time` around `fit` and `predict_proba`; Java: the thread CPU time
around `buildClassifier` and `distributionForInstance` over the test rows, through our
helper ``benchmarks/weka/JavaTime.java``), so JVM start-up and ARFF parsing are counted on
neither side (Weka's Instances are built before its timing; our halves' value codes are
made at the first fit and kept by each Dataset, `Dataset.column_codes`). Both sides are
warm: our kernels are compiled and loaded before any timing,
and each Java measurement is the second of two runs in its JVM (the first warms its JIT).
The repeats are interleaved — Java, ours, Java, ours … — so the machine's drift hits both
alike. A repeat averages as many runs as make ~0.2 s of ours (small data sets take
milliseconds). The table prints the minimum and the median over the repeats; ratio = ours /
Java (< 1: we are faster).

References: Weka 3.6 (Debian ``weka``; ``WEKA_JAR`` overrides ``/usr/share/java/weka.jar``)
gives ``NaiveBayes`` for NB (the authors' package has no NB of its own; the paper ran
Weka's), ``AODE -F 1 -M -W 1`` for A1DE and ``AODEsr -C 100 -F 1 -M 1`` for A1DE-S. The
authors' own code is used when ``ANDE_CP`` names its class path: each learner's Java class
is ``ANDE_CLASS_<LEARNER>`` (e.g. ``ANDE_CLASS_A2DE``; ``ANDE_CLASS`` for any learner not
named), its options ``ANDE_OPTS_<LEARNER>`` as that class takes them (``-`` in a learner's
name becomes ``_``); a learner with no class is skipped with a line. The JVM's heap is half
the machine's memory (``JAVA_HEAP`` overrides, e.g. ``6g``); a data set that does not fit
in it is skipped with a line naming the heap.
No Java code of Weka or of the authors is part of this repository.

Building the authors' classes (outside this repository): fetch ``ptorrijos99/mAnDE``, copy
``src/main/java/weka/classifiers/bayes/AveragedNDependenceEstimators/{A1DE,A2DE}.java``,
change ``weka.classifiers.AbstractClassifier`` to ``weka.classifiers.Classifier`` (Debian's
Weka 3.6 has no AbstractClassifier), ``javac -cp /usr/share/java/weka.jar -d classes *.java``
and run with::

    P=weka.classifiers.bayes.AveragedNDependenceEstimators
    ANDE_CP=classes ANDE_CLASS_A1DE=$P.A1DE ANDE_OPTS_A1DE="-F 1 -M 1" \
    ANDE_CLASS_A1DE_SW=$P.A1DE ANDE_OPTS_A1DE_SW="-F 1 -M 1 -S 100 -W" \
    ANDE_CLASS_A2DE=$P.A2DE ANDE_OPTS_A2DE="-F 1 -M 1" \
    ANDE_CLASS_A2DE_SW=$P.A2DE ANDE_OPTS_A2DE_SW="-F 1 -M 1 -S 100 -W" \
    python benchmarks/bench_vs_java.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
WEKA_JAR = Path(os.environ.get("WEKA_JAR", "/usr/share/java/weka.jar"))
DATASETS = ["kr-vs-kp", "nursery", "magic", "letter", "adult", "splice", "optdigits",
            "connect-4", "poker-hand", "musk1"]
# (our learner, reference label, Java class or None for the authors' code, Java options)
WEKA_ROWS = [("NB", "Weka NaiveBayes", "weka.classifiers.bayes.NaiveBayes", []),
             ("A1DE", "Weka AODE -F 1 -M -W 1", "weka.classifiers.bayes.AODE",
              ["-F", "1", "-M", "-W", "1"]),
             ("A1DE-S", "Weka AODEsr -C 100", "weka.classifiers.bayes.AODEsr",
              ["-C", "100", "-F", "1", "-M", "1"])]
AUTHOR_ROWS = ["A1DE", "A1DE-SW", "A2DE", "A2DE-SW"]


class JavaOutOfMemory(Exception):
    """The JVM's heap could not hold the classifier."""


def java_heap() -> str:
    """``-Xmx`` for the helper: $JAVA_HEAP, else half the machine's physical memory."""
    text = os.environ.get("JAVA_HEAP", "").strip()
    if text:
        return text
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return f"{max(1, total // 2 // (1 << 20))}m"


def java_time(classpath: str, cls: str, options: list[str], train: Path, test: Path,
              inner: int) -> float:
    """Train + classify CPU seconds of a warm Java classifier (the mean of `inner` runs):
    the second of two repeats in one JVM."""
    proc = subprocess.run(["java", f"-Xmx{java_heap()}", "-cp", classpath, "JavaTime", cls,
                           str(train), str(test), "2", str(inner), *options],
                          capture_output=True, text=True)
    if "OutOfMemoryError" in proc.stderr:
        raise JavaOutOfMemory(java_heap())
    if proc.returncode:
        raise SystemExit(f"error: {cls} failed:\n{proc.stderr[-2000:]}")
    times = [float(f[3]) + float(f[5]) for f in
             (line.split() for line in proc.stdout.splitlines()) if f and f[0] == "repeat"]
    return times[-1]


def our_times(name: str, train, test, repeats: int, inner: int,
              params: dict | None = None) -> list[float]:
    """Train + classify CPU seconds of each repeat (the mean of `inner` runs)."""
    from workbench.learners.registry import create

    times = []
    for _ in range(repeats):
        c0 = time.process_time()
        for _ in range(inner):
            learner = create(name, **(params or {}))
            learner.fit(train)
            learner.predict_proba(test)
        times.append((time.process_time() - c0) / inner)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=DATASETS)
    ap.add_argument("--only", nargs="+", help="only these of our learners")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bridge", action="store_true",
                    help="time the Weka rows' own classes through `learner: weka` (our JPype "
                         "bridge, whole process CPU: ARFF text, Weka's parse, one call per "
                         "test row) against the same classes in their own JVM")
    args = ap.parse_args(argv)
    if not WEKA_JAR.is_file():
        print(f"error: Weka jar not found at {WEKA_JAR} (apt-get install weka)", file=sys.stderr)
        return 2

    from bench_learners import warm_up
    from compare_rf_weka import compile_helper
    from workbench.data.arff import save_arff
    from halves import each_split

    rows = [(ours, label, [str(WEKA_JAR)], cls, opts, None)
            for ours, label, cls, opts in WEKA_ROWS]
    if args.bridge:  # the same Java classes through our bridge: its overhead
        rows = [("weka", label, jars, cls, opts, {"scheme": cls, "options": " ".join(opts)})
                for _, label, jars, cls, opts, _ in rows]
    ande_cp = os.environ.get("ANDE_CP")
    if ande_cp:
        for ours in AUTHOR_ROWS:
            key = ours.replace("-", "_")
            cls = os.environ.get(f"ANDE_CLASS_{key}") or os.environ.get("ANDE_CLASS")
            if not cls:
                print(f"note: no ANDE_CLASS_{key} (or ANDE_CLASS): the row of the authors' "
                      f"{ours} is skipped")
                continue
            opts = os.environ.get(f"ANDE_OPTS_{key}", "").split()
            rows.append((ours, f"authors' {cls.rsplit('.', 1)[-1]} {' '.join(opts)}".strip(),
                         [str(WEKA_JAR), ande_cp], cls, opts, None))
    else:
        print("note: ANDE_CP not set: the rows against the authors' A1DE/A2DE code are "
              "skipped (Weka rows only)")
    if args.only:
        rows = [r for r in rows if r[0] in args.only]
    warm_up()
    hdr = (f"{'data set':<11} {'learner':<8} {'reference':<26} {'java_min':>8} {'ours_min':>8} "
           f"{'ratio_min':>9} {'ratio_med':>9}")
    print(hdr)
    print("-" * len(hdr), flush=True)
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        classes = compile_helper(tmp, "JavaTime.java")
        for slug, train, test in each_split(args.datasets, args.seed, 11):
            save_arff(train, tmp / "train.arff")
            save_arff(test, tmp / "test.arff")
            for ours, label, jars, cls, opts, params in rows:
                cp = os.pathsep.join([*jars, str(classes)])
                # runs per repeat: a repeat of at least ~0.2 s of our time (small sets)
                once = min(our_times(ours, train, test, 2, 1, params))  # 1st: compile/JVM
                inner = max(1, min(50, int(0.2 / max(once, 1e-4))))
                java, mine = [], []
                try:
                    for _ in range(args.repeats):  # interleaved: Java, ours, Java, ours …
                        java.append(java_time(cp, cls, opts, tmp / "train.arff",
                                              tmp / "test.arff", inner))
                        mine += our_times(ours, train, test, 1, inner, params)
                except JavaOutOfMemory as exc:
                    print(f"{slug:<11} {ours:<8} {label:<26} (skipped: Java ran out of its "
                          f"{exc} heap; set JAVA_HEAP)", flush=True)
                    continue
                rmin = min(mine) / min(java)
                rmed = statistics.median(mine) / statistics.median(java)
                worst = max(worst, rmin)
                print(f"{slug:<11} {ours:<8} {label:<26} {min(java):8.3f} {min(mine):8.3f} "
                      f"{rmin:9.2f} {rmed:9.2f}", flush=True)
    print(f"worst ratio (min over repeats): {worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
