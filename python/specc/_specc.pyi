# The extension module's types (python/src/); users call the wrappers of
# specc/_model.py.
from os import PathLike
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

_Path = Union[str, PathLike[str]]
_Eval = Tuple[float, int, list[Tuple[str, float]]]
_Named = list[Tuple[str, npt.NDArray[np.float32]]]

__version__: str

def compile(
    path: Optional[_Path] = None,
    text: Optional[str] = None,
    name: str = "<string>",
    sets: Sequence[str] = (),
) -> Model: ...

class Model:
    @property
    def name(self) -> str: ...
    @property
    def global_step(self) -> int: ...
    @property
    def max_batch(self) -> int: ...
    def inputs(self) -> list[Tuple[str, int, bool, bool]]: ...
    def outputs(self) -> list[Tuple[str, bool]]: ...
    def train_step(self, batch: Sequence[Tuple[str, npt.NDArray[np.float32]]]) -> float: ...
    def evaluate(self, batch: Sequence[Tuple[str, npt.NDArray[np.float32]]]) -> _Eval: ...
    def predict(self, batch: Sequence[Tuple[str, npt.NDArray[np.float32]]]) -> _Named: ...
    def read_csv(self, path: _Path, label: bool) -> _Named: ...
    def read_frame(
        self, columns: Sequence[Tuple[str, Any]], frame_name: str, label: bool
    ) -> _Named: ...
    def variables(self) -> _Named: ...
    def set_variable(self, name: str, value: npt.NDArray[np.float32]) -> None: ...
    def save(self, dir: _Path) -> str: ...
    def restore(self, path: _Path) -> str: ...
    def fit(
        self,
        data: Optional[_Path] = None,
        columns: Optional[Sequence[Tuple[str, Any]]] = None,
        frame_name: str = "DataFrame",
        steps: Optional[int] = None,
        sets: Sequence[str] = (),
        checkpoint_dir: Optional[_Path] = None,
        checkpoint_every_steps: Optional[int] = None,
        summary_dir: Optional[_Path] = None,
        eval_data: Optional[_Path] = None,
        eval_columns: Optional[Sequence[Tuple[str, Any]]] = None,
        eval_frame_name: str = "DataFrame",
        # specc/_watch.py's Watcher: begin, step, evaluation, end.
        watcher: Optional[Any] = None,
        every_steps: int = 1,
    ) -> dict[str, Any]: ...

def export_tflite(
    model: Model,
    path: _Path,
    fetch: Sequence[str] = (),
    batch: Optional[int] = None,
    quantize: Optional[str] = None,
    representative_data: Optional[_Path] = None,
    samples: int = 32,
    inference_input_type: Optional[str] = None,
    inference_output_type: Optional[str] = None,
    use_averages: Optional[bool] = None,
    raw_inputs: bool = False,
) -> dict[str, Any]: ...
def export_object(
    model: Model,
    path: _Path,
    fetch: Sequence[str] = (),
    symbol: str = "specc_predict",
    use_averages: Optional[bool] = None,
) -> dict[str, Any]: ...
