# The types of specc's Python API (specc/_model.py; its docstrings say what
# each call does).
from os import PathLike
from typing import Any, Callable, Literal, Mapping, Optional, Protocol, Sequence, Union

import numpy as np
import numpy.typing as npt

_Path = Union[str, PathLike[str]]
# A pandas DataFrame, a dict of 1-D columns, a CSV path, or (evaluate,
# predict) a dict of the model's inputs by name.
_Data = Union[Any, Mapping[str, npt.ArrayLike], _Path]

# A callback of `Model.fit`: `cb(step, logs)` (False: stop), or an object
# with `on_step(step, logs)` and/or `on_evaluation(step, logs)` (and
# optionally `on_train_begin(logs)`, `on_train_end(logs)`).
class _StepCallback(Protocol):
    def on_step(self, step: int, logs: dict[str, float]) -> Optional[bool]: ...

class _EvaluationCallback(Protocol):
    def on_evaluation(self, step: int, logs: dict[str, float]) -> Optional[bool]: ...

_Callback = Union[
    Callable[[int, dict[str, float]], Optional[bool]], _StepCallback, _EvaluationCallback
]

def compile(spec: _Path, **overrides: Any) -> Model: ...

class Model:
    @property
    def name(self) -> str: ...
    @property
    def global_step(self) -> int: ...
    @property
    def max_batch(self) -> int: ...
    @property
    def inputs(self) -> list[dict[str, Any]]: ...
    @property
    def outputs(self) -> list[str]: ...
    def train_step(self, batch: Mapping[str, npt.ArrayLike]) -> float: ...
    def evaluate(self, data: _Data) -> dict[str, float]: ...
    # A pandas DataFrame, or without pandas a dict of arrays.
    def predict(self, data: _Data) -> Any: ...
    def variables(self) -> dict[str, npt.NDArray[np.float32]]: ...
    def set_variable(self, name: str, value: npt.ArrayLike) -> None: ...
    def save(self, directory: _Path) -> str: ...
    def restore(self, path: _Path) -> str: ...
    def export_tflite(
        self,
        path: _Path,
        *,
        fetch: Union[None, str, Sequence[str]] = None,
        batch: Optional[int] = None,
        quantize: Optional[Literal["dynamic", "int8"]] = None,
        representative_data: Optional[_Path] = None,
        samples: int = 32,
        inference_input_type: Optional[Literal["float32", "int8", "uint8"]] = None,
        inference_output_type: Optional[Literal["float32", "int8", "uint8"]] = None,
        use_averages: Optional[bool] = None,
        raw_inputs: bool = False,
    ) -> dict[str, Any]: ...
    def export_object(
        self,
        path: _Path,
        *,
        fetch: Union[None, str, Sequence[str]] = None,
        symbol: str = "specc_predict",
        use_averages: Optional[bool] = None,
    ) -> dict[str, Any]: ...
    def fit(
        self,
        data: Optional[_Data] = None,
        steps: Optional[int] = None,
        epochs: Optional[int] = None,
        eval_data: Optional[_Data] = None,
        checkpoint_dir: Optional[_Path] = None,
        summary_dir: Optional[_Path] = None,
        checkpoint_every_steps: Optional[int] = None,
        callbacks: Optional[Union[_Callback, Sequence[_Callback]]] = None,
        every_steps: int = 1,
        progress: Optional[bool] = None,
        **overrides: Any,
    ) -> dict[str, Any]: ...
