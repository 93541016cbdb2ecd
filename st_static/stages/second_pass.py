"""The second contrastive pass: the refined cross-lingual table trained on for ``second_pass_steps`` more steps on the
translation pairs ``second_pass_pairs`` names, at ``second_pass_learning_rate`` with no early stop, in
``second-pass-KEY/`` (a saved model with ``training/``).

Issue 68: after the refinement on every pair file, a few thousand steps at a lower learning rate on the pairs closest
to the task pull translations together further than the first training does (cross-lingual STS 56.97 -> 60.43 on
the four-language table, monolingual STS and Tatoeba up too; ``benchmarks/experiments/sentence_teacher.py``).

Runs when ``second_pass_pairs`` (cross-lingual builds only), after the refinement and before the fallback and piece
rows, which then read its table. Keyed by the refinement's key, the ``SecondPassSettings``, the content of its pair
files and the training's source filter, so a build without it keeps every key it had.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import asdict
from pathlib import Path

from sentence_transformers import SentenceTransformer

from st_static.distributed import barrier, is_first_process
from st_static.extraction.pair_sources import SourceFilter, read_language_pairs
from st_static.files import content_digest, staged_folder
from st_static.model.metadata import SecondPassRecord, TrainingRecord
from st_static.model.save_load import load_model, write_model
from st_static.settings import BuildSettings
from st_static.stages.base import Build, FolderStage, distinct_file_names, stage_key
from st_static.stages.extraction import source_file_digests
from st_static.stages.refinement import TRAINING_FOLDER

STAGE = "second pass"
"""The stage's entry in the model's ``stages``."""


class SecondPass(FolderStage):
    """One process trains; every process reads its folder."""

    name = STAGE

    def applies(self, build: Build) -> bool:
        return bool(build.settings.second_pass.second_pass_pairs)

    def key(self, build: Build) -> str:
        settings = build.settings
        files = settings.second_pass_files()
        paths = [path for language_files in files.values() for path in language_files]
        digests = {language: [content_digest(path) for path in paths_] for language, paths_ in files.items()}
        inputs: list[object] = [digests]
        source_filter = SourceFilter.for_training(settings)
        if source_filter.active:
            inputs.append({"filter": source_filter.describe(), "source_files": source_file_digests(paths)})
        return stage_key(build.keys["refinement"], asdict(settings.second_pass), *inputs)

    def run_in(self, build: Build, folder: Path) -> SentenceTransformer:
        if is_first_process() and not (folder / "modules.json").is_file():
            train_second_pass(build.refined(), build.settings, folder)
        barrier()
        build.second_pass_path = build.model_path = folder
        build.model = build.record_inputs(load_model(folder))
        return build.model


def second_pass_pairs(settings: BuildSettings) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """``{(pivot, language): pairs}`` of ``second_pass_pairs``, read through the training's source filter."""
    return read_language_pairs(settings.second_pass_files(), settings.languages[0], SourceFilter.for_training(settings))


def train_second_pass(refined: Path, settings: BuildSettings, destination: Path) -> None:
    """Continue the refined table's contrastive training on the second pass's pairs; save the model with its training
    record (``training/``) in ``destination``. The metadata's ``training`` keeps the refinement's record; the pass is
    ``second_pass`` and the stage ``"second pass"``."""
    from st_static.training import refine

    model = load_model(refined)
    module = model[0]
    refinement = module.metadata.training
    chosen = settings.second_pass
    pass_settings = dataclasses.replace(
        settings.refinement,
        steps=chosen.second_pass_steps,
        batch_size=chosen.second_pass_batch_size,
        learning_rate=chosen.second_pass_learning_rate,
        patience=None,
        crosslingual_distillation=False,
    )
    with staged_folder(destination, replaceable=lambda _: True) as staging:
        refine(
            model,
            pass_settings,
            pairs=second_pass_pairs(settings),
            output_dir=staging / TRAINING_FOLDER,
            device=settings.device,
        )
        run = module.metadata.training or TrainingRecord()
        module.metadata.training = refinement
        module.metadata.second_pass = SecondPassRecord.of(run, second_pass_file_names(settings))
        module.metadata.add_stage(STAGE)
        write_model(model, staging)


def second_pass_file_names(settings: BuildSettings) -> list[str]:
    """The names the metadata gives the second pass's files: as the build names its ``parallel`` and ``extra_pairs``
    files (a file given there too gets the same name), never a path of this machine."""
    read = [path for paths in settings.parallel_files().values() for path in paths]
    read += list((settings.extra_pairs or {}).values())
    read += [path for paths in settings.second_pass_files().values() for path in paths]
    distinct = list(dict.fromkeys(os.path.abspath(path) for path in read))
    names = dict(zip(distinct, distinct_file_names(distinct), strict=True))
    return [names[os.path.abspath(path)] for paths in settings.second_pass_files().values() for path in paths]
