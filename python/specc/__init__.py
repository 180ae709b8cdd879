"""specc from Python: a ``.spec`` file compiled to one fused, JIT-compiled
training step, trained on pandas DataFrames and numpy arrays.

    import pandas as pd
    import specc

    df = pd.read_csv("specs/data/digits.csv")
    model = specc.compile("specs/digits_mlp.spec", steps=500)
    model.fit(df, checkpoint_dir="runs/digits")
    model.predict(df.drop(columns="label"))

The same compiled step, the same bits and the same TF checkpoints as the
``specc`` CLI: :func:`compile` makes a :class:`Model`; :meth:`Model.fit`
trains it as ``specc run`` does; :meth:`Model.train_step`,
:meth:`Model.evaluate`, :meth:`Model.predict`, :meth:`Model.variables`,
:meth:`Model.save` and :meth:`Model.restore` work a step or an array at a
time. Errors are :class:`SpecError` (a bad spec, with the CLI's caret
text), :class:`DataError`, :class:`CheckpointError` and
:class:`TrainingError`. See docs/python.md.
"""

from ._errors import CheckpointError, DataError, SpecError, TrainingError
from ._model import Model, compile
from ._specc import __version__

__all__ = [
    "CheckpointError",
    "DataError",
    "Model",
    "SpecError",
    "TrainingError",
    "compile",
    "__version__",
]
