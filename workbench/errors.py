"""The one exception type the CLI turns into a single-line error message."""


class WorkbenchError(Exception):
    """A user-facing error: bad input file, config field, learner name or parameter.

    The message must say *where* (file and line, config field, parameter name) and *what*.
    The CLI prints it as one line and exits non-zero, without a traceback.
    """


class FieldError(WorkbenchError):
    """A bad value of one named field (``protocol.folds``, ...): the field and the reason
    travel apart, so a config reader can point at the field's line without parsing the
    message."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class ArffError(WorkbenchError):
    """A malformed ARFF file (message names the file and line)."""


class ConfigError(WorkbenchError):
    """An invalid experiment config (message names the field or line)."""


class LearnerError(WorkbenchError):
    """Unknown learner, bad learner parameter, or data a learner cannot take."""


class CannotWrite(WorkbenchError):
    """A file could not be written (disk full, quota, permissions): the message names it.
    Mid-run the runner turns it into `WriteFailure` (exit status 3)."""


class PartialFailure(WorkbenchError):
    """Some tasks failed and the others' results are kept: exit status 1, not 2."""

    exit_code = 1


class WriteFailure(WorkbenchError):
    """A file could not be written mid-way (disk full, quota, permissions changed): exit
    status 3; what was stored before is kept and a re-run resumes."""

    exit_code = 3


class Interrupted(KeyboardInterrupt):
    """Stopped by the user (Ctrl-C, SIGINT): exit status 130."""

    exit_code = 130


class Terminated(Interrupted):
    """Stopped by SIGTERM (handled like Ctrl-C): exit status 143."""

    exit_code = 143
