"""The whole job in one call: extraction -> PCA/ABTT -> refinement -> a saved, evaluated model folder.

:func:`build` runs the cached stages of :mod:`st_static.pipeline.run` in a locked work directory (default
``<output>.work``; a re-run resumes there) and publishes the final model atomically, with ``evaluation.json``, the
per-stage scores (``stage_scores.json`` and ``.md``), the training record (``training/``) and a fresh card.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from st_static.distributed import is_first_process
from st_static.errors import UnsafeDestinationError
from st_static.evaluation.report import (
    evaluation_document,
    stage_scores_markdown,
    write_json,
)
from st_static.files import check_destination, check_work_folder, folder_lock, staged_folder, write_text_atomically
from st_static.model.metadata import ModelMetadata
from st_static.model.save_load import holds_st_static_output, load_model, write_model
from st_static.model_card.speed import machine_description
from st_static.pipeline.run import TRAINING_FOLDER, Evaluator, PipelineResult, run_pipeline
from st_static.settings import BuildSettings
from st_static.training.records import CURVE_FILE_NAME

STAGE_SCORES_FILE_NAME = "stage_scores"
SECOND_PASS_TRAINING_FOLDER = "second-pass"
"""The second contrastive pass's record in the published ``training/`` folder."""


@dataclass(kw_only=True)
class BuildResult(PipelineResult):
    """What ``build`` produced: the stages' result and the published folder."""

    output: Path

    @property
    def training_curve(self) -> Path | None:
        """The plot of the validation loss, if the refinement had a validation split."""
        path = self.output / TRAINING_FOLDER / CURVE_FILE_NAME
        return path if path.is_file() else None


def default_work_dir(output: str | os.PathLike[str]) -> Path:
    """``<output>.work`` next to the output folder."""
    output = Path(output).resolve()
    return output.with_name(output.name + ".work")


def build(
    settings: BuildSettings,
    output: str | os.PathLike[str],
    work_dir: str | os.PathLike[str] | None = None,
    evaluate: Evaluator | None = None,
    build_command: str | None = None,
    force: bool = False,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> BuildResult:
    """Build a static model from a teacher and a corpus, caching every stage.

    Args:
        settings: What to build.
        output: The final model folder (written atomically): new, empty, or an earlier st-static model.
        work_dir: Where stages are cached; defaults to ``<output>.work``. Locked while the build runs.
        evaluate: Scores a model (task name -> result); applied after each stage, the last result is saved
            as the model's ``evaluation.json``, all of them as ``stage_scores.json``/``.md``.
        build_command: The command line that ran the build, recorded in the model card.
        force: Replace ``output`` even when it is a non-empty folder that is not an st-static model.
        inputs: Other files or folders the run reads (e.g. the evaluation data), besides the settings' corpus,
            passages, parallel files and teacher folder; the output may neither hold nor lie inside one.

    Returns:
        The final model, stage scores and timings.

    Raises:
        UnsafeDestinationError: If ``output`` may not be written (checked before anything heavy runs).
        FolderInUseError: If another build uses the same work directory.
        CorpusError, TeacherError, SettingsError: For unusable inputs, before the teacher pass.
    """
    read: list[str] = [*settings.inputs, *map(str, inputs)]
    if os.path.isdir(settings.extraction.teacher):
        read.append(settings.extraction.teacher)
    output = check_destination(output, replaceable=holds_st_static_output, inputs=read, force=force)
    work = check_work_folder(work_dir if work_dir is not None else default_work_dir(output), inputs=read)
    if work == output or work.is_relative_to(output):
        raise UnsafeDestinationError(f"The work folder {work} must not be inside the output folder {output}.")
    if output.is_relative_to(work):
        raise UnsafeDestinationError(f"The output folder {output} must not be inside the work folder {work}.")
    metadata = ModelMetadata(build_command=build_command) if build_command else None
    with folder_lock(work, remove_if_unused=True) if is_first_process() else contextlib.nullcontext():
        scorer = evaluate if is_first_process() else None  # under torchrun the first process evaluates and writes
        result = run_pipeline(settings, work, evaluate=scorer, metadata=metadata)
        if is_first_process():
            publish(result, output, inputs=read, force=force)
    published = load_model(output) if is_first_process() else result.model
    return BuildResult(**{**vars(result), "model": published}, output=output)


def publish(result: PipelineResult, output: Path, *, inputs: list[str] | None = None, force: bool = False) -> None:
    """Write the refined model to ``output`` atomically, with its evaluation, stage scores and training record."""
    with staged_folder(output, replaceable=holds_st_static_output, inputs=inputs or [], force=force) as staging:
        final_scores = list(result.stage_scores.values())[-1] if result.stage_scores else None
        if final_scores is not None:
            write_json(evaluation_document(output.name, final_scores), staging / "evaluation.json")
            write_json(
                {
                    "stages": result.stage_scores,
                    "seconds": result.seconds,
                    "machine": machine_description(),
                    "vocabulary": result.vocabulary,
                },
                staging / f"{STAGE_SCORES_FILE_NAME}.json",
            )
            write_text_atomically(
                staging / f"{STAGE_SCORES_FILE_NAME}.md", stage_scores_markdown(result.stage_scores) + "\n"
            )
        shutil.copytree(result.folder / TRAINING_FOLDER, staging / TRAINING_FOLDER)
        if result.second_pass_folder is not None:  # the second contrastive pass's record beside the refinement's
            shutil.copytree(
                result.second_pass_folder / TRAINING_FOLDER, staging / TRAINING_FOLDER / SECOND_PASS_TRAINING_FOLDER
            )
        write_model(result.model, staging)
