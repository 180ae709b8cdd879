"""`specc.compile` and `specc.Model`: the Python face of the extension module.

What is here converts: overrides to ``--set`` strings, DataFrame and dict
columns to the float64 arrays and byte strings the extension reads through
the spec's feature columns, numpy arrays to C-contiguous float32, and the
spec's outputs to a DataFrame. The numbers are all the extension's (the
same compiled step as ``specc run``).
"""

import os

import numpy as np

from . import _specc


def compile(spec, **overrides):
    """Compiles a spec into a :class:`Model` (its variables initialized).

    ``spec`` is a path to a ``.spec`` file (a ``str`` naming an existing
    file, or an ``os.PathLike``), or the text of a spec (a ``str`` with a
    newline, or one that names no file). A spec file's relative paths (its
    ``data``) are relative to its directory; a spec text's to the current
    directory.

    ``overrides`` are what ``specc run --set KEY=VALUE`` sets, written into
    the spec before it is checked and compiled: the ``train`` block's keys
    (``steps=500``, ``batch=32``, ``epochs=3``, ``seed=1``, ...), a block's
    keys as a dict or a dotted name (``checkpoint={"every_steps": 100}``,
    ``**{"evaluate.every_steps": 1000}``), an argument of the optimizer
    (``optimizer={"learning_rate": 0.01}``). Values are Python numbers,
    bools, strings, paths or lists. An unknown key raises ``ValueError``
    naming the closest one.

    A spec with errors raises :class:`specc.SpecError`, whose text is the
    CLI's caret diagnostics and whose ``code``, ``line``, ``column`` and
    ``path`` say where.
    """
    sets = _sets(overrides)
    if isinstance(spec, os.PathLike) or (
        isinstance(spec, str) and "\n" not in spec and os.path.isfile(spec)
    ):
        inner = _specc.compile(path=os.fspath(spec), sets=sets)
    elif isinstance(spec, str):
        if "\n" not in spec and spec.endswith(".spec"):
            raise FileNotFoundError(f"no spec file {spec!r}")
        inner = _specc.compile(text=spec, sets=sets)
    else:
        raise TypeError(f"compile takes a spec path or text, not {type(spec).__name__}")
    return Model(inner)


class Model:
    """A compiled spec and its trained state (variables, optimizer slots,
    the global step).

    Made by :func:`specc.compile`. Train it a step at a time
    (:meth:`train_step`) or a whole run (:meth:`fit`), evaluate, predict,
    read its variables, save and restore TF checkpoints. Calls on one model
    from several threads run one at a time; the GIL is released while a step
    or a run computes.
    """

    def __init__(self, inner):
        self._m = inner

    @property
    def name(self):
        """The model's name (its ``model`` item, or the file name)."""
        return self._m.name

    @property
    def global_step(self):
        """TF's ``global_step``: the training steps taken (restored with a checkpoint)."""
        return self._m.global_step

    @property
    def max_batch(self):
        """The most rows one :meth:`train_step` takes (the spec's batch)."""
        return self._m.max_batch

    @property
    def inputs(self):
        """The compiled model's inputs, in order: dicts of ``name``,
        ``per_example`` (elements per row), ``integer`` (ids: whole numbers)
        and ``label``. A feature column's inputs are named
        ``COLUMN/ids`` and ``COLUMN/weights``."""
        return [
            {"name": n, "per_example": p, "integer": i, "label": l}
            for n, p, i, l in self._m.inputs()
        ]

    @property
    def outputs(self):
        """The names of the spec's ``outputs``, in order."""
        return [n for n, _ in self._m.outputs()]

    def train_step(self, batch):
        """One training step (forward, backward, the optimizer's update; the
        global step advances by one) on ``batch``: a dict of every model
        input, the label included, by name (:attr:`inputs`) to an array of
        at most :attr:`max_batch` rows (first axis). Returns the batch's
        loss. Ids (labels, feature ids) are given as whole numbers."""
        return self._m.train_step(_arrays(batch))

    def evaluate(self, data):
        """The mean loss and the spec's metrics over ``data``, in batches:
        a DataFrame or a dict of columns (read through the spec's feature
        columns, as :meth:`fit` reads them), a CSV file's path (read with
        the spec's CSV options but its filter), or a dict of the model's
        inputs by name. Returns ``{"loss": ..., "rows": ..., METRIC: ...}``."""
        loss, rows, metrics = self._m.evaluate(self._inputs(data, label=True))
        return _evaluation((loss, rows, metrics))

    def predict(self, data):
        """The spec's ``outputs`` for every row of ``data`` (as
        :meth:`evaluate` takes it; the label is not needed).

        Returns a pandas DataFrame with the columns ``specc predict``
        writes: an output of one value per row is a column of its name, one
        of several values is the columns ``NAME_0``, ``NAME_1``, ... (row
        major); an output of ids (``argmax``) is int64, the rest float32.
        Without pandas, a dict of each output's array (``[rows, ...]``)."""
        out = self._m.predict(self._inputs(data, label=False))
        integer = dict(self._m.outputs())
        arrays = [(n, a.astype(np.int64) if integer.get(n) else a) for n, a in out]
        try:
            import pandas as pd
        except ImportError:
            return dict(arrays)
        columns = {}
        for n, a in arrays:
            if a.ndim == 1:
                columns[n] = a
            else:
                flat = a.reshape(len(a), -1)
                for k in range(flat.shape[1]):
                    columns[f"{n}_{k}"] = flat[:, k]
        return pd.DataFrame(columns)

    def variables(self):
        """Every variable a TF checkpoint of the model holds, by its TF name
        (parameters, optimizer slots such as ``W/Adam``, optimizer variables
        such as ``beta1_power``, moving averages): a dict of float32 arrays
        (copies)."""
        return dict(self._m.variables())

    def set_variable(self, name, value):
        """Sets the variable ``name`` (a key of :meth:`variables`) to ``value``,
        an array of its shape."""
        self._m.set_variable(name, np.ascontiguousarray(value, dtype=np.float32))

    def save(self, directory):
        """Saves every variable and the global step as a TF checkpoint
        ``DIRECTORY/model.ckpt-<global step>`` (the directory's ``checkpoint``
        file names it the latest; TF's ``tf.train.load_checkpoint`` reads
        it). Returns the checkpoint's prefix."""
        return str(self._m.save(os.fspath(directory)))

    def restore(self, path):
        """Restores every variable and the global step from a TF checkpoint:
        a prefix (``DIR/model.ckpt-100``) or a directory (its latest).
        Returns the prefix read. Raises :class:`specc.CheckpointError` when
        it is missing, damaged or does not fit the model."""
        return str(self._m.restore(os.fspath(path)))

    def export_tflite(
        self,
        path,
        *,
        fetch=None,
        batch=None,
        quantize=None,
        representative_data=None,
        samples=32,
        inference_input_type=None,
        inference_output_type=None,
        use_averages=None,
        raw_inputs=False,
    ):
        """Writes the model's inference graph with its current values as a
        TensorFlow Lite model at ``path``, and ``<path>.features.json``
        beside it (the feature columns the model expects in front of it):
        the file ``specc export --format tflite`` writes from a checkpoint
        of the same values with the same options.

        ``fetch``: the spec's bindings to export as the outputs (a name or a
        list; default: the spec's ``outputs`` item). ``batch``: a fixed
        batch size (default: dynamic). ``quantize``: ``"dynamic"`` (int8
        weights, float activations) or ``"int8"`` (full-integer: the ranges
        of the spec's fake quantizations, the others calibrated on the
        first ``samples`` rows of ``representative_data``, a CSV or
        TFRecord file the spec reads), whose inputs and float outputs are
        of the types ``inference_input_type`` and ``inference_output_type``
        name (``"float32"``, ``"int8"``, ``"uint8"``). ``use_averages``:
        export the ``ema`` item's moving averages (default: the spec's
        ``use_averages``). ``raw_inputs``: the model takes the raw columns
        and computes the feature columns itself.

        Returns a dict of what was written: ``path``, ``features``,
        ``bytes``, ``operators``, ``tensors``, ``inputs``, ``outputs``,
        ``moving_averages`` and ``quantization`` (None, or a dict with its
        ``mode``). A spec the export refuses raises :class:`specc.SpecError`
        with a caret under the spec; an option that does not fit,
        ``ValueError``; unreadable representative data,
        :class:`specc.DataError`."""
        return _specc.export_tflite(
            self._m,
            os.fspath(path),
            fetch=_names(fetch),
            batch=batch,
            quantize=quantize,
            representative_data=(
                None if representative_data is None else os.fspath(representative_data)
            ),
            samples=samples,
            inference_input_type=inference_input_type,
            inference_output_type=inference_output_type,
            use_averages=use_averages,
            raw_inputs=raw_inputs,
        )

    def export_object(self, path, *, fetch=None, symbol="specc_predict", use_averages=None):
        """Writes the model's inference function with its current values as
        a relocatable object file at ``path``, its C header (``path`` with
        the extension ``.h``) and ``<path>.features.json``: the files
        ``specc export --format object`` writes from a checkpoint of the
        same values. Link the object into a C or C++ program and call
        ``SYMBOL(in, out, rows)`` (see the header).

        ``fetch``: the spec's bindings the function computes (a name or a
        list; default: the spec's ``outputs`` item). ``symbol``: the C
        function's name. ``use_averages``: as for :meth:`export_tflite`.

        Returns a dict of what was written: ``path``, ``header``,
        ``features``, ``bytes``, ``symbol``, ``in_width`` and ``out_width``
        (floats per row of ``in`` and ``out``), ``max_batch`` (rows per
        call of the compiled code; larger calls are chunked), ``raw_keys``
        (the cells ``SYMBOL_raw`` takes per row, or None) and
        ``moving_averages``."""
        return _specc.export_object(
            self._m,
            os.fspath(path),
            fetch=_names(fetch),
            symbol=symbol,
            use_averages=use_averages,
        )

    def fit(
        self,
        data=None,
        steps=None,
        epochs=None,
        eval_data=None,
        checkpoint_dir=None,
        summary_dir=None,
        checkpoint_every_steps=None,
        callbacks=None,
        every_steps=1,
        progress=None,
        **overrides,
    ):
        """Trains the model as ``specc run`` trains the spec, from the
        model's current state; the trained state stays in the model.

        ``data``: ``None`` (the spec's ``data``), a data file's path (as
        ``specc run --data``: a CSV read with the spec's CSV options, or the
        path that replaces an image source's), or a pandas DataFrame or a
        dict of 1-D arrays, whose columns the spec's columns and feature
        columns read exactly as a CSV file's columns (numeric columns as
        numbers, string columns as text; a CSV's ``na_value``,
        ``column_defaults`` and ``filter`` do not apply: fill or drop NaNs
        first). The rows are split into training and held-out rows, shuffled
        and batched as the spec's data would be, so a DataFrame of a CSV's
        rows trains to the same bits as ``specc run`` on the CSV.

        ``steps``: the global step training ends at (``specc run --steps``);
        ``epochs``: instead, whole passes over the training rows; neither:
        the spec's ``train`` duration. ``eval_data``: data evaluated
        instead of a held-out split: a file's path (``--eval-data``), or a
        DataFrame or a dict of columns, read as ``data`` is (every row). ``checkpoint_dir``:
        where TF checkpoints are written; a directory that holds one is
        resumed from, to the same bits as a run that never stopped
        (``--checkpoint-dir``). ``checkpoint_every_steps``,
        ``summary_dir``: as ``specc run``'s flags. ``overrides``: as
        :func:`compile`'s, for this run.

        The GIL is released while the run computes. Returns a dict:
        ``global_step``, ``steps`` (taken by this run), ``epochs``,
        ``loss`` (the last step's), ``train`` and ``held_out`` (the
        evaluations after training, ``{"loss", "rows", METRIC...}`` or
        ``None``), ``checkpoint`` (the last one written, or ``None``) and
        ``stopped`` (a callback ended training early).

        ``callbacks``: a callable ``cb(step, logs)`` or an object with
        ``on_step(step, logs)`` and/or ``on_evaluation(step, logs)`` (and
        optionally ``on_train_begin(logs)``, ``on_train_end(logs)``), or a
        list of them. ``on_step`` (a callable) is called every
        ``every_steps`` global steps with the global step and ``logs``:
        ``loss`` (the step's, the value ``specc run --json`` reports),
        ``rows``, and ``learning_rate``/``global_norm`` when the spec has
        them. ``on_evaluation`` is called after each periodic evaluation
        (``evaluate { every_steps }``) with ``loss``, ``rows`` and the
        metrics by name. A callback returning ``False`` (not ``None``) or
        raising ``StopIteration`` ends training at that step boundary (after
        an evaluation: after the next step); the run then ends as a run of
        that many steps would (its checkpoint written, the final
        evaluations done) and ``fit`` returns with ``stopped`` true. Any
        other exception a callback raises ends training the same way and is
        raised by ``fit``.

        ``progress``: a tqdm progress bar (when tqdm is installed); ``None``
        (the default): when stderr is a terminal.

        Ctrl-C (SIGINT) ends training at the next step boundary: the
        checkpoint of that step is written (with ``checkpoint_dir``), the
        model keeps the state trained so far, and ``fit`` raises
        ``KeyboardInterrupt``.
        """
        from ._watch import Watcher

        if steps is not None and epochs is not None:
            raise ValueError("fit takes steps or epochs, not both")
        watcher = Watcher(callbacks, progress, every_steps)
        sets = _sets(overrides)
        if epochs is not None:
            sets.append(f"epochs={int(epochs)}")
        kwargs = dict(
            steps=None if steps is None else int(steps),
            sets=sets,
            checkpoint_dir=_path(checkpoint_dir),
            checkpoint_every_steps=checkpoint_every_steps,
            summary_dir=_path(summary_dir),
            watcher=watcher if watcher.wanted() else None,
            every_steps=watcher.every_steps,
        )
        if eval_data is None or isinstance(eval_data, (str, os.PathLike)):
            kwargs["eval_data"] = _path(eval_data)
        else:
            columns, frame = _columns(eval_data)
            kwargs.update(eval_columns=columns, eval_frame_name=frame)
        try:
            if data is None:
                r = self._m.fit(**kwargs)
            elif isinstance(data, (str, os.PathLike)):
                r = self._m.fit(data=os.fspath(data), **kwargs)
            else:
                columns, frame = _columns(data)
                r = self._m.fit(columns=columns, frame_name=frame, **kwargs)
        finally:
            watcher.close()
        r["train"] = _evaluation(r["train"])
        r["held_out"] = _evaluation(r["held_out"])
        if r["checkpoint"] is not None:
            r["checkpoint"] = str(r["checkpoint"])
        return r

    def _inputs(self, data, label):
        """``data`` as the model's inputs: a list of (name, float32 array)."""
        if isinstance(data, (str, os.PathLike)):
            return self._m.read_csv(os.fspath(data), label)
        names = {i[0] for i in self._m.inputs()}
        if isinstance(data, dict) and set(data) <= names:
            return _arrays(data)
        columns, frame = _columns(data)
        return self._m.read_frame(columns, frame, label)

    def __repr__(self):
        return repr(self._m)


def _sets(overrides):
    """Keyword overrides as ``--set KEY=VALUE`` strings."""
    out = []
    for key, value in overrides.items():
        if isinstance(value, dict):
            for k, v in value.items():
                out.append(f"{key}.{k}={_yaml(v)}")
        else:
            out.append(f"{key}={_yaml(value)}")
    return out


def _yaml(v):
    """A Python value as a YAML scalar or flow list."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, np.integer, np.floating)):
        return repr(v.item() if isinstance(v, np.generic) else v)
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_yaml(x) for x in v) + "]"
    return str(v)


def _path(p):
    return None if p is None else os.fspath(p)


def _arrays(batch):
    """A dict of arrays as (name, C-contiguous float32 array) pairs."""
    if not isinstance(batch, dict):
        raise TypeError(f"expected a dict of arrays by input name, not {type(batch).__name__}")
    return [(str(k), np.ascontiguousarray(v, dtype=np.float32)) for k, v in batch.items()]


def _columns(data):
    """A DataFrame's or a dict's columns as (name, float64 array or list of
    bytes) pairs, and how errors name the frame."""
    frame = type(data).__name__
    if isinstance(data, dict):
        items = list(data.items())
    elif hasattr(data, "columns") and hasattr(data, "__getitem__"):
        items = [(c, data[c]) for c in data.columns]
    else:
        raise TypeError(
            f"expected a pandas DataFrame, a dict of columns or a path, not {frame}"
        )
    return [(str(name), _column(str(name), col)) for name, col in items], frame


def _column(name, col):
    """One column: a float64 array (numbers, bools) or a list of bytes (text)."""
    if hasattr(col, "dtype") and hasattr(col, "to_numpy"):  # a pandas Series
        try:
            from pandas.api.types import is_bool_dtype, is_numeric_dtype
        except ImportError:  # pragma: no cover - a Series without pandas
            is_bool_dtype = is_numeric_dtype = None
        if is_numeric_dtype is not None and (is_numeric_dtype(col) or is_bool_dtype(col)):
            return np.ascontiguousarray(col.to_numpy(dtype=np.float64, na_value=np.nan))
        values = col.to_numpy(dtype=object)
    else:
        a = np.asarray(col)
        if a.ndim != 1:
            raise ValueError(f"column `{name}` has shape {a.shape}: a column is 1-D")
        if a.dtype.kind in "biuf":
            return np.ascontiguousarray(a, dtype=np.float64)
        values = a.astype(object)
    return [_cell(v) for v in values]


def _cell(v):
    """A text column's cell as bytes (a missing value: an empty cell)."""
    if v is None or (isinstance(v, float) and v != v):
        return b""
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (float, np.floating)):
        return repr(float(v)).encode()
    return str(v).encode("utf-8")


def _evaluation(e):
    """An evaluation ``(loss, rows, metrics)`` as a dict."""
    if e is None:
        return None
    loss, rows, metrics = e
    out = {"loss": loss, "rows": rows}
    out.update(metrics)
    return out


def _names(fetch):
    """``fetch`` as a list of names: None (none), a name, or names."""
    if fetch is None:
        return []
    if isinstance(fetch, str):
        return [fetch]
    return [str(n) for n in fetch]
