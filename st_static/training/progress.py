"""What the refinement shows while it runs: one progress bar with its losses, or the trainer's own bars and logs.

The trainer's own display (``transformers.ProgressCallback``) prints a dict per logging and evaluation step
(``{'loss': '3.854', 'grad_norm': ...}``) between nested progress bars. By default the refinement shows one bar
instead (:class:`RefinementProgress`); the dicts stay in ``state.log_history``, which ``training_history.json``
keeps. Inside :func:`trainer_logs` (``st-static build --verbose``) the trainer's display is back. This is how the run
looks, not what it builds: it is no setting and keys no stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm
from transformers import PrinterCallback, ProgressCallback, TrainerCallback, TrainerControl, TrainerState

if TYPE_CHECKING:
    from transformers import Trainer, TrainingArguments

    from st_static.training.callbacks import BestTableCallback

_TRAINER_LOGS: ContextVar[bool] = ContextVar("st_static_trainer_logs", default=False)


@contextmanager
def trainer_logs(shown: bool = True) -> Iterator[None]:
    """Within the block, refinements show the trainer's own progress bars and log dicts (``shown=False``: one bar)."""
    token = _TRAINER_LOGS.set(shown)
    try:
        yield
    finally:
        _TRAINER_LOGS.reset(token)


def trainer_logs_shown() -> bool:
    """Whether refinements now show the trainer's own display (see :func:`trainer_logs`)."""
    return _TRAINER_LOGS.get()


class RefinementProgress(TrainerCallback):
    """One bar over the refinement's steps; its postfix holds the last training loss and validation loss.

    Args:
        description: The bar's label.
        validation: The callback that records the validation losses (summed over datasets), if there is one.
    """

    def __init__(self, description: str, validation: BestTableCallback | None = None) -> None:
        self.description = description
        self.validation = validation
        self.bar: tqdm | None = None
        self.postfix: dict[str, str] = {}

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if state.is_world_process_zero:
            self.bar = tqdm(
                total=state.max_steps, desc=self.description, unit=" steps", dynamic_ncols=True, mininterval=2.0
            )

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        if self.bar is not None:
            self.bar.update(state.global_step - self.bar.n)

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, float] | None = None,
        **kwargs: Any,
    ) -> None:
        if self.bar is not None and logs and "loss" in logs:
            self._show("loss", float(logs["loss"]))

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        if self.bar is not None and self.validation is not None and self.validation.history:
            self._show("validation", self.validation.history[-1].loss)

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _show(self, name: str, value: float) -> None:
        self.postfix[name] = f"{value:.4g}"
        ordered = {key: self.postfix[key] for key in ("loss", "validation") if key in self.postfix}
        self.bar.set_postfix(ordered, refresh=False)


def use_refinement_progress(trainer: Trainer, description: str, validation: BestTableCallback | None = None) -> None:
    """Replace the trainer's display by a :class:`RefinementProgress` bar, unless :func:`trainer_logs` is on."""
    if trainer_logs_shown():
        return
    for callback in list(trainer.callback_handler.callbacks):
        if isinstance(callback, ProgressCallback | PrinterCallback):
            trainer.remove_callback(callback)
    trainer.add_callback(RefinementProgress(description, validation))
