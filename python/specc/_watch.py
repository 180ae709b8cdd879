"""What ``Model.fit`` calls while a run trains: the callbacks and the
progress bar, behind one watcher the extension module calls.

The extension module (python/src/observe.rs) calls, with the GIL taken
for the moment: ``begin(start, last)`` once, ``step(global_step, logs)``
every ``every_steps`` global steps (a true result stops the run at that
step boundary), ``evaluation(global_step, loss, rows, metrics)`` after each
periodic evaluation (``evaluate { every_steps }``), and ``end()``. An
exception raised here stops the run too and ``fit`` raises it once the
trained state is in the model (StopIteration only stops).

A callback is a callable ``cb(step, logs)``, or an object with
``on_step(step, logs)`` and/or ``on_evaluation(step, logs)`` (and, when
it has them, ``on_train_begin(logs)`` and ``on_train_end(logs)``, as a
Keras callback's). ``logs`` holds ``loss`` (the step's), ``rows`` (its
batch's rows) and ``learning_rate`` or ``global_norm`` when the spec has
them; an evaluation's ``logs`` holds ``loss``, ``rows`` and each metric by
its name. A callback returning ``False`` (not ``None``) or raising
StopIteration stops training after that step.
"""

import sys

# Past this, the run's end is the data's end, not a step count.
_UNKNOWN_END = 1 << 62


def _progress_bar(enabled):
    """tqdm's bar class when it is installed and ``enabled`` (``None``: when
    stderr is a terminal); otherwise ``None``."""
    if enabled is None:
        enabled = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


class Watcher:
    """The callbacks and the progress bar of one ``fit``."""

    def __init__(self, callbacks, progress, every_steps):
        if callbacks is None:
            callbacks = []
        elif callable(callbacks) or not isinstance(callbacks, (list, tuple)):
            callbacks = [callbacks]
        for cb in callbacks:
            if not (callable(cb) or hasattr(cb, "on_step") or hasattr(cb, "on_evaluation")):
                raise TypeError(
                    "a callback is a callable cb(step, logs) or an object with "
                    f"on_step(step, logs) or on_evaluation(step, logs), not {type(cb).__name__}"
                )
        self.callbacks = list(callbacks)
        self.every_steps = int(every_steps)
        if self.every_steps < 1:
            raise ValueError(f"every_steps must be at least 1, got {every_steps}")
        self._tqdm = _progress_bar(progress)
        self._bar = None
        self._at = 0

    def wanted(self):
        """Whether the run needs to call this watcher at all."""
        return bool(self.callbacks) or self._tqdm is not None

    def begin(self, start, last):
        self._at = start
        if self._tqdm is not None:
            total = last - start if last < _UNKNOWN_END else None
            self._bar = self._tqdm(total=total, unit="step", desc="fit")
        for cb in self.callbacks:
            f = getattr(cb, "on_train_begin", None)
            if f is not None:
                f({"global_step": start})

    def step(self, global_step, logs):
        if self._bar is not None:
            self._bar.update(global_step - self._at)
            self._bar.set_postfix(loss=f"{logs['loss']:.4g}", refresh=False)
        self._at = global_step
        stop = False
        for cb in self.callbacks:
            f = getattr(cb, "on_step", None)
            if f is None and callable(cb) and not hasattr(cb, "on_evaluation"):
                f = cb
            if f is not None and f(global_step, dict(logs)) is False:
                stop = True
        return stop

    def evaluation(self, global_step, loss, rows, metrics):
        logs = {"loss": loss, "rows": rows}
        logs.update(metrics)
        stop = False
        for cb in self.callbacks:
            f = getattr(cb, "on_evaluation", None)
            if f is not None and f(global_step, dict(logs)) is False:
                stop = True
        return stop

    def end(self):
        self.close()
        for cb in self.callbacks:
            f = getattr(cb, "on_train_end", None)
            if f is not None:
                f({"global_step": self._at})

    def close(self):
        """Closes the bar (also when the run failed)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
