"""The second-teacher stage: a second teacher's vectors of a seeded sample of the distillation sentences, in
``second-teacher-KEY/`` (:mod:`st_static.extraction.target_mix`); the refinement trains on the sample with both
teachers' targets mixed.

Runs when ``second_teacher`` is given (one-language builds without long texts). Keyed by the raw table's key (its
sentences), the second teacher's settings but its weight, and the teacher precision; the weight keys the refinement,
so a new weight reuses the pass. Records the second teacher in the model's metadata.
"""

from __future__ import annotations

from pathlib import Path

from st_static.distributed import barrier, is_first_process
from st_static.extraction.target_mix import SAMPLE_FILE, SecondTeacherTargets, run_second_teacher
from st_static.extraction.teacher_model import load_teacher, teacher_precision
from st_static.model.metadata import ModelMetadata, SecondTeacherRecord
from st_static.settings import BuildSettings
from st_static.stages.base import Build, FolderStage, stage_key, stage_settings
from st_static.stages.extraction_folder import ExtractionStage
from st_static.teachers import teacher_record


class SecondTeacher(FolderStage):
    """Step 1d: one process encodes the sample with the second teacher; the others read its folder."""

    name = "second teacher"

    def applies(self, build: Build) -> bool:
        return build.settings.extraction.second_teacher is not None

    def key(self, build: Build) -> str:
        settings = build.settings
        second_teacher = stage_settings(settings.extraction, "second teacher")
        for name in ("second_teacher_weight", "second_teacher_mix"):  # they key the refinement
            second_teacher.pop(name)
        precision = teacher_precision(settings.extraction.teacher_precision, settings.device)
        return stage_key(build.table_key, second_teacher, precision)

    def run_in(self, build: Build, folder: Path) -> None:
        extraction = build.settings.extraction
        build.second_targets = second_teacher_targets(build.settings, build.extracted(), folder)
        record = SecondTeacherRecord(
            teacher=teacher_record(str(extraction.second_teacher)),
            prompt=extraction.second_teacher_prompt,
            weight=float(extraction.second_teacher_weight),
            mix=extraction.second_teacher_mix,
            sentences=len(build.second_targets.sample),
        )
        build.metadata = ModelMetadata(second_teacher=record).merged(build.metadata or ModelMetadata())


def second_teacher_targets(
    settings: BuildSettings, extraction: ExtractionStage, destination: Path
) -> SecondTeacherTargets:
    """The second teacher's vectors of a sample of the distillation sentences (one process makes them; the others
    read its folder)."""
    extraction_settings = settings.extraction
    if is_first_process() and not (destination / SAMPLE_FILE).is_file():
        teacher = load_teacher(
            str(extraction_settings.second_teacher),
            device=settings.device,
            precision=extraction_settings.teacher_precision,
        )
        run_second_teacher(
            teacher,
            extraction.sentences(),
            extraction_settings.second_teacher_prompt or "",
            extraction_settings.second_teacher_sentences,
            destination,
        )
    barrier()
    return SecondTeacherTargets.open(destination)
