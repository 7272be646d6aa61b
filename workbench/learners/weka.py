"""Any Weka classifier as a workbench learner, through one JVM per process (JPype).

    learners:
      AODE-weka: {learner: weka, scheme: weka.classifiers.bayes.AODE, options: "-M -W 1",
                  preprocessing: mdl}
      RF10-weka: {learner: weka, scheme: weka.classifiers.trees.RandomForest,
                  options: "-I 10 -S 1"}

The scheme is fitted and scored on exactly the rows the workbench gives it, after the
preprocessing this learner column declares (default ``none``: Weka sees the raw data; a
scheme that takes nominal attributes only needs ``preprocessing: mdl``, the cut points then
being the workbench's, fitted on the training fold). The header travels as ARFF text
(`data.arff.arff_text`), the rows as their values (the same doubles; a missing value NaN,
as Weka marks it), and Weka's ``distributionForInstance`` gives each test row's
distribution, so a Weka scheme's probabilities are Weka's own.

The jar: the ``jar`` parameter, else ``$WEKA_JAR``, else Debian's ``/usr/share/java/weka.jar``
(``apt-get install weka``, Weka 3.6.14). The bridge is JPype (``pip install
'snb-workbench[weka]'``): the JVM starts once per process, in the warm-up before any fold is
timed, and stays for every later fold; a JVM cannot change its class path, so one process
uses one jar. A fitted model pickles as Weka's own serialised form.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from workbench.data.arff import arff_text
from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.base import Learner, Param
from workbench.learners.registry import register

DEBIAN_JAR = "/usr/share/java/weka.jar"
_CLASS_NAME = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+$")
_started_with: str | None = None


def weka_jar(jar: str | None = None) -> Path:
    """The Weka jar to use (see the module docstring); `LearnerError` naming where it
    looked when there is none. A jar that is named (the parameter, ``$WEKA_JAR``) must
    exist: another one is never used in its place."""
    for named, what in ((jar, "the 'jar' parameter"), (os.environ.get("WEKA_JAR"),
                                                        "$WEKA_JAR")):
        if named:
            if Path(named).expanduser().is_file():
                return Path(named).expanduser().resolve()
            raise LearnerError(f"learner 'weka': {what} names {named}, which is not a file")
    tried = [DEBIAN_JAR]
    for p in tried:
        if Path(p).expanduser().is_file():
            return Path(p).expanduser().resolve()
    raise LearnerError(f"learner 'weka': no Weka jar (looked at {', '.join(tried)}); install "
                       "Debian's weka (apt-get install weka), set WEKA_JAR or the 'jar' "
                       "parameter")


def jvm(jar: str | None = None):
    """The `jpype` module with a JVM running on `jar`'s class path (started on first use)."""
    global _started_with
    try:
        import jpype
        import jpype.imports  # noqa: F401  (Java packages importable)
    except ImportError:
        raise LearnerError("learner 'weka' needs JPype1: pip install 'snb-workbench[weka]' "
                           "(or pip install JPype1)") from None
    path = str(weka_jar(jar))
    if not jpype.isJVMStarted():
        jpype.startJVM(classpath=[path], convertStrings=True)
        _started_with = path
    elif _started_with not in (None, path):
        raise LearnerError(f"learner 'weka': this process's JVM runs {_started_with}; one "
                           f"process uses one Weka jar (asked for {path})")
    return jpype


def _instances(jpype, data: Dataset):
    """`data` as Weka Instances, class attribute last: the header from ARFF text with no
    rows (the attributes and their declared values, in our order), then one instance per
    row from its values — a nominal value's code is its index in the header, a missing
    value (or class) NaN, Weka's missing value (2.7x faster than Weka parsing the rows
    as ARFF: 0.05 against 0.14 s CPU for adult's 24,421 rows)."""
    reader = jpype.JClass("java.io.StringReader")(arff_text(data.take(np.arange(0))))
    header = jpype.JClass("weka.core.Instances")(jpype.JClass("java.io.BufferedReader")(reader))
    rows = np.column_stack([data.X, np.where(data.y < 0, np.nan, data.y.astype(np.float64))])
    out = jpype.JClass("weka.core.Instances")(header, data.n_instances)
    try:  # Weka 3.7+: Instance is an interface, DenseInstance the class
        make = jpype.JClass("weka.core.DenseInstance")
    except Exception:  # Weka 3.6 (Debian's)
        make = jpype.JClass("weka.core.Instance")
    values = jpype.JArray(jpype.JDouble)
    for row in rows:
        out.add(make(1.0, values(row)))
    out.setClassIndex(out.numAttributes() - 1)
    return out


def scheme_problem(scheme: str, options: str, jar: str | None) -> str | None:
    """What Weka says of a classifier class and its options (None: it takes them) — with
    a JVM in this process."""
    jpype = jvm(jar)
    try:
        cls = jpype.JClass(scheme)
    except Exception:
        return f"learner 'weka': no class {scheme} in {weka_jar(jar)}"
    if not jpype.JClass("weka.classifiers.Classifier").class_.isAssignableFrom(cls.class_):
        return f"learner 'weka': {scheme} is not a Weka classifier"
    try:
        if options:
            cls().setOptions(jpype.JClass("weka.core.Utils").splitOptions(options))
    except jpype.JException as exc:
        return f"learner 'weka' ({scheme} {options}): {exc.getMessage()}"
    return None


def _check_scheme(scheme: str, options: str, jar: str | None) -> None:
    """`scheme_problem` in a short-lived process (a JVM in a run's own process would not
    survive the fork of its worker), once per (scheme, options, jar) and process."""
    key = (scheme, options, jar)
    if key in _CHECKED:
        return
    code = ("import sys; from workbench.learners.weka import scheme_problem; "
            "print(scheme_problem(sys.argv[1], sys.argv[2], sys.argv[3] or None) or '')")
    try:
        proc = subprocess.run([sys.executable, "-c", code, scheme, options, jar or ""],
                              capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        raise LearnerError(f"learner 'weka': cannot check {scheme} ({exc})") from None
    said = proc.stdout.strip().splitlines()
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise LearnerError(f"learner 'weka': cannot check {scheme}: {last}")
    if said:
        raise LearnerError(said[-1])
    _CHECKED.add(key)


_CHECKED: set[tuple[str, str, str | None]] = set()


class WekaClassifier(Learner):
    """A Weka classifier by class name and options (see the module docstring)."""

    preprocessing = "none"
    order_free = False  # whatever the scheme does (random seeds by row position) is Weka's
    parameters = (
        Param("scheme", "weka.classifiers.bayes.NaiveBayes",
              "a Java class name such as 'weka.classifiers.bayes.NaiveBayes'",
              lambda v: isinstance(v, str) and bool(_CLASS_NAME.match(v))),
        Param("options", "", "a string of Weka command-line options, e.g. '-I 10 -S 1'",
              lambda v: isinstance(v, str)),
        Param("jar", None, "null or the path of weka.jar",
              lambda v: v is None or (isinstance(v, str) and bool(v))),
    )

    def preflight(self) -> None:
        """JPype, a Java runtime and the jar (the scheme and options are Weka's to judge:
        they are checked when the first fold builds the classifier)."""
        import importlib.util
        import shutil

        if importlib.util.find_spec("jpype") is None:
            raise LearnerError("learner 'weka' needs JPype1: pip install "
                               "'snb-workbench[weka]' (or pip install JPype1)")
        weka_jar(self.jar)
        java_home = os.environ.get("JAVA_HOME")
        if not shutil.which("java") and not (java_home and Path(java_home).is_dir()):
            raise LearnerError("learner 'weka' needs Java: install a JRE (e.g. apt-get "
                               "install default-jre) or set JAVA_HOME")
        _check_scheme(self.scheme, self.options, self.jar)

    def _reset(self) -> None:
        super()._reset()
        self._model = None

    def _fit(self, rows: Dataset) -> None:
        jpype = jvm(self.jar)
        try:
            cls = jpype.JClass(self.scheme)
        except Exception:
            raise LearnerError(f"learner 'weka': no class {self.scheme} in "
                               f"{weka_jar(self.jar)}") from None
        classifier = jpype.JClass("weka.classifiers.Classifier")
        if not classifier.class_.isAssignableFrom(cls.class_):
            raise LearnerError(f"learner 'weka': {self.scheme} is not a Weka classifier")
        model = cls()
        try:
            if self.options:
                model.setOptions(jpype.JClass("weka.core.Utils").splitOptions(self.options))
            model.buildClassifier(_instances(jpype, rows))
        except jpype.JException as exc:
            raise LearnerError(f"learner 'weka' ({self.scheme} {self.options}): "
                               f"{exc.getMessage()}") from None
        self._model = model

    def predict_proba(self, data: Dataset) -> np.ndarray:
        """Weka's ``distributionForInstance`` of every row (n, K)."""
        self._check_fitted(data)
        jpype = jvm(self.jar)
        test = _instances(jpype, data)
        out = np.empty((data.n_instances, data.n_classes))
        dist = self._model.distributionForInstance
        for i in range(data.n_instances):
            out[i] = np.asarray(dist(test.instance(i)), dtype=np.float64)
        return out

    # a fitted model pickles as Weka's serialised form (Java objects do not pickle)
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self._model is not None:
            jpype = jvm(self.jar)
            buf = jpype.JClass("java.io.ByteArrayOutputStream")()
            jpype.JClass("weka.core.SerializationHelper").write(buf, self._model)
            state["_model"] = bytes(buf.toByteArray())
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if isinstance(self._model, (bytes, bytearray)):
            jpype = jvm(self.jar)
            stream = jpype.JClass("java.io.ByteArrayInputStream")(self._model)
            self._model = jpype.JClass("weka.core.SerializationHelper").read(stream)


register("weka", WekaClassifier,
         description="any Weka classifier (scheme: its class name, options: its options) "
                     "through one JVM per process")
