"""The exceptions specc raises (the extension module raises these classes)."""


class SpecError(ValueError):
    """The spec has errors.

    ``str(e)`` is the text the CLI prints for them (``specc check``, ``specc
    run``): each diagnostic with its code, ``file:line:column`` and a caret
    under the spec, then ``error: specc found N errors in FILE``.

    Attributes (of the first diagnostic; ``None`` when it is not known):

    - ``code``: its stable code, as the CLI prints it (``unknown-name``);
      ``specc explain CODE`` explains it.
    - ``line``, ``column``: where it is, 1-based (column in characters).
    - ``path``: the spec file (or the name a spec text was given).
    - ``diagnostics``: every diagnostic, as ``(code, message, line, column)``.
    """

    def __init__(self, text, code=None, line=None, column=None, path=None, diagnostics=()):
        super().__init__(text)
        self.code = code
        self.line = line
        self.column = column
        self.path = path
        self.diagnostics = list(diagnostics)

    def __str__(self):
        return self.args[0]


class DataError(ValueError):
    """The data: a file that cannot be read, a bad cell (its column and row),
    a missing column, an input array of the wrong shape or with ids out of
    range."""


class CheckpointError(OSError):
    """A TF checkpoint could not be read or written, or does not fit the model."""


class TrainingError(RuntimeError):
    """Training stopped: a non-finite loss (with the value of the spec it came
    from, when known) or a failed runtime check, with its caret."""
