"""The trainer callback that keeps the table with the lowest validation loss and stops when it stops improving."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from st_static.training.records import ValidationRecord

if TYPE_CHECKING:
    from st_static.model.static_word_average import StaticWordAverage

logger = logging.getLogger(__name__)


class BestTableCallback(TrainerCallback):
    """Track the validation loss, keep the best table in memory, stop after ``patience`` evaluations without
    improvement, and put the best table back when training ends.

    Args:
        module: The table being trained.
        patience: Evaluations without a lower validation loss before training stops; ``None`` never stops early.
        dataset_names: Names of the evaluation datasets when there are several (their losses are summed), or
            ``None`` for a single evaluation dataset.
    """

    def __init__(
        self, module: StaticWordAverage, patience: int | None, dataset_names: Sequence[str] | None = None
    ) -> None:
        self.module = module
        self.patience = patience
        if dataset_names is None:
            self.metric_names = {"eval_loss": ""}
        else:
            self.metric_names = {f"eval_{name}_loss": name for name in dataset_names}
        self.history: list[ValidationRecord] = []
        self.best_loss = math.inf
        self.best_step = 0
        self.best_table: Any = None  # the table (a subclass keeps other weights)
        self.evaluations_without_improvement = 0
        self.stopped_early = False
        self._pending: dict[str, float] = {}

    def on_evaluate(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        metrics: dict[str, float] | None = None,
        **kwargs: Any,
    ) -> None:
        # With several evaluation datasets the trainer reports each one in its own call.
        for key, name in self.metric_names.items():
            if metrics and key in metrics:
                self._pending[name] = float(metrics[key])
        if len(self._pending) < len(self.metric_names):
            return
        components, self._pending = self._pending, {}
        loss = sum(components.values())
        self.history.append(ValidationRecord(state.global_step, loss, components if len(components) > 1 else {}))
        if loss < self.best_loss:
            self.best_loss = loss
            self.best_step = state.global_step
            self.best_table = self.snapshot()
            self.evaluations_without_improvement = 0
            return
        if not math.isfinite(loss):
            logger.warning("The validation loss at step %d is %s.", state.global_step, loss)
        self.evaluations_without_improvement += 1
        if self.patience is not None and self.evaluations_without_improvement >= self.patience:
            logger.info(
                "Stopping at step %d: no lower validation loss in %d evaluations (best %.5f at step %d).",
                state.global_step,
                self.evaluations_without_improvement,
                self.best_loss,
                self.best_step,
            )
            self.stopped_early = True
            control.should_training_stop = True

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.restore_best_table()

    def snapshot(self) -> Any:
        """A copy of what is trained now (the table), kept as the best so far."""
        return self.module.word_vectors.detach().clone()

    def restore_best_table(self) -> None:
        """Copy the best table seen back into the module (and its case-variant rows)."""
        if self.best_table is None:
            return
        with torch.no_grad():
            self.module.word_vectors.copy_(self.best_table)
        self.module.sync_token_rows()
