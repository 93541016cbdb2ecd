"""What a refinement run leaves: its validation history, the training curve, and the model's metadata."""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from st_static.files import write_file_atomically, write_text_atomically
from st_static.model.metadata import TrainingRecord

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from st_static.model.static_word_average import StaticWordAverage

logger = logging.getLogger(__name__)

HISTORY_FILE_NAME = "training_history.json"
CURVE_FILE_NAME = "training_curve.png"


@dataclass(frozen=True)
class ValidationRecord:
    """The validation loss at one evaluation step.

    Attributes:
        step: The optimiser step (0 is the table before training).
        loss: The validation loss; for several datasets (language pairs), the sum of their losses.
        components: The loss of each dataset (``"en-de"`` -> loss); empty for a single dataset.
    """

    step: int
    loss: float
    components: dict[str, float] = field(default_factory=dict)


@dataclass
class TrainingResult:
    """What a refinement run did.

    Attributes:
        model: The refined model (the same object that was passed in), holding the best table.
        history: The validation loss of every evaluation, in order (the first is before training).
        best_step: The step whose table the model holds.
        best_validation_loss: The validation loss at ``best_step`` (NaN without a validation split).
        steps: Optimiser steps run.
        stopped_early: Whether training stopped because the validation loss stopped improving.
        train_seconds: Wall time of training, evaluations included.
        steps_per_second: ``steps / train_seconds``.
        output_dir: The folder holding the history and the training curve, if one was given.
        log_history: The trainer's logs in order (``{"loss": ..., "grad_norm": ..., "step": ...}``, ``{"eval_loss":
            ...}``): what its own display prints (:mod:`st_static.training.progress`).
    """

    model: SentenceTransformer
    history: list[ValidationRecord]
    best_step: int
    best_validation_loss: float
    steps: int
    stopped_early: bool
    train_seconds: float
    steps_per_second: float
    output_dir: Path | None = None
    log_history: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The run as JSON-serialisable data (without the model)."""
        return {
            "best_step": self.best_step,
            "best_validation_loss": self.best_validation_loss if math.isfinite(self.best_validation_loss) else None,
            "steps": self.steps,
            "stopped_early": self.stopped_early,
            "train_seconds": self.train_seconds,
            "steps_per_second": self.steps_per_second,
            "history": [asdict(record) for record in self.history],
            "trainer_logs": [{key: _json_value(value) for key, value in logs.items()} for logs in self.log_history],
        }


def _json_value(value: Any) -> Any:
    """``value`` as JSON holds it: a non-finite float becomes ``None``."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def plot_training_curve(history: Sequence[ValidationRecord], path: str | os.PathLike[str], best_step: int) -> Path:
    """Plot the validation loss per evaluation step to a PNG file (written atomically).

    Raises:
        ImportError: If matplotlib is not installed (``pip install "st-static[eval]"``).
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError('Plotting the training curve needs matplotlib: pip install "st-static[eval]"') from error
    path = Path(path)
    figure = Figure(figsize=(6, 4), layout="constrained")
    axes = figure.subplots()
    steps = [record.step for record in history]
    names = sorted({name for record in history for name in record.components})
    for name in names:
        axes.plot(steps, [record.components.get(name, math.nan) for record in history], linewidth=1, label=name)
    axes.plot(steps, [record.loss for record in history], marker="o", markersize=3, color="black", label="validation")
    axes.axvline(best_step, color="tab:red", linestyle="--", linewidth=1, label=f"best (step {best_step})")
    axes.set_xlabel("step")
    axes.set_ylabel("validation loss" + (" (sum over datasets)" if names else ""))
    axes.grid(alpha=0.3)
    axes.legend()
    write_file_atomically(path, lambda temporary: figure.savefig(temporary, format="png", dpi=120))
    return path


def write_training_record(result: TrainingResult, output_dir: str | os.PathLike[str], settings: dict[str, Any]) -> Path:
    """Write ``training_history.json`` and, with a history and matplotlib, ``training_curve.png`` to ``output_dir``."""
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    write_text_atomically(output / HISTORY_FILE_NAME, json.dumps({"settings": settings, **result.to_dict()}, indent=2))
    if result.history:
        try:
            plot_training_curve(result.history, output / CURVE_FILE_NAME, result.best_step)
        except ImportError as error:
            logger.warning("Skipping %s: %s", CURVE_FILE_NAME, error)
    return output


def record_in_metadata(module: StaticWordAverage, stage: str, settings: dict[str, Any], result: TrainingResult) -> None:
    """Add ``stage`` to the model's finished stages and record the run's settings and outcome."""
    module.metadata.add_stage(stage)
    module.metadata.training = TrainingRecord.of_run(
        loss=settings["loss"],
        steps=result.steps,
        best_step=result.best_step,
        batch_size=settings["batch_size"],
        learning_rate=settings["learning_rate"],
        temperature=settings["temperature"],
        best_validation_loss=result.best_validation_loss,
    )
