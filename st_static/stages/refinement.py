"""The refinement stage: the reduced table trained on the teacher's sentence targets (distillation) or on
translation pairs (contrastive) with :func:`st_static.training.refine`, in ``distillation-KEY/`` or
``contrastive-KEY/`` (a saved model with ``training/``).

Keyed by the reduction's key, the ``RefinementSettings``, the content of the training-only pairs (with their source
filter), the sources left out of the training (``training_leave_out_sources``, with their ``.source.txt`` files),
and, when they ran, the long-texts key and the second-teacher key with its weight (a build without them keeps the
key it always had).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from sentence_transformers import SentenceTransformer

from st_static.distributed import barrier, is_first_process
from st_static.extraction.long_texts import LongTexts
from st_static.extraction.multilingual import read_multilingual_corpus
from st_static.extraction.pair_sources import SourceFilter, read_pairs
from st_static.extraction.target_mix import SecondTeacherTargets
from st_static.files import content_digest, staged_folder
from st_static.model.save_load import load_model, write_model
from st_static.settings import BuildSettings
from st_static.stages.base import Build, FolderStage, stage_key
from st_static.stages.extraction import source_file_digests, source_filter_key
from st_static.stages.extraction_folder import ExtractionStage

TRAINING_FOLDER = "training"
"""The refinement's record in its folder (and in the published model folder)."""


class Refinement(FolderStage):
    """Step 3: every process trains (DDP); the first one writes the folder."""

    name = "refinement"

    def label(self, build: Build) -> str:
        return "contrastive" if build.settings.crosslingual else "distillation"

    def key(self, build: Build) -> str:
        settings = build.settings
        extra_pairs = [content_digest(path) for path in (settings.extra_pairs or {}).values()]
        inputs: list[Any] = [extra_pairs]
        if settings.extra_pairs and SourceFilter.of(settings.keep_sources, settings.leave_out_sources).active:
            inputs += source_filter_key(settings, {"": list(settings.extra_pairs.values())})
        if settings.training_leave_out_sources:
            pair_files = [path for paths in settings.parallel_files().values() for path in paths]
            read = [*pair_files, *(settings.extra_pairs or {}).values()]
            inputs.append(
                {
                    "training_leave_out_sources": settings.training_leave_out_sources,
                    "source_files": source_file_digests(read),
                }
            )
        if "long texts" in build.keys:
            inputs.append(build.keys["long texts"])
        if "second teacher" in build.keys:
            mixing = [build.keys["second teacher"], settings.extraction.second_teacher_weight]
            if settings.extraction.second_teacher_mix != "cosines":  # cosine builds keep the folders they had
                mixing.append(settings.extraction.second_teacher_mix)
            inputs.append(mixing)
        return stage_key(build.keys["pca"], refinement_key_settings(settings), *inputs)

    def run_in(self, build: Build, folder: Path) -> SentenceTransformer:
        if not (folder / "modules.json").is_file():
            if build.reduced is None:
                raise RuntimeError("the stages ran out of order: no reduced table yet")
            pairs = training_pairs(build)
            if build.beside_training is not None:
                build.beside_training(build)  # a soup's other seeds start training meanwhile
            refine_table(
                build.reduced,
                build.extracted(),
                build.settings,
                folder,
                pairs,
                build.long_texts,
                build.second_targets,
            )
        barrier()
        build.refined_path = build.model_path = folder
        build.model = build.record_inputs(load_model(folder))
        return build.model


def refinement_key_settings(settings: BuildSettings) -> dict[str, Any]:
    """``asdict`` of the ``RefinementSettings`` that key the refinement, less ``language_weights`` when it is unset (a
    build without weights keeps the folder it always had) and less ``soup_seeds``."""
    values = asdict(settings.refinement)
    if not values["language_weights"]:
        del values["language_weights"]
    del values["soup_seeds"]  # keys the soup stage: each seed's refinement is a plain build's
    return values


def training_pairs(build: Build) -> dict[tuple[str, str], list[tuple[str, str]]] | None:
    """The translation pairs the contrastive training reads (``None`` for a one-language build): the extraction's,
    or, with ``training_leave_out_sources``, the pair files read again without those sources' rows."""
    settings = build.settings
    if build.multilingual is None:
        return None
    if not settings.training_leave_out_sources:
        return build.multilingual.pairs
    corpus = read_multilingual_corpus(
        settings.parallel_files(), settings.languages, None, SourceFilter.for_training(settings)
    )
    return corpus.pairs


def extra_pairs(settings: BuildSettings) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """``settings.extra_pairs`` read into ``{(pivot, language): pairs}`` (they join the training split only)."""
    source_filter = SourceFilter.for_training(settings)
    return {
        (settings.languages[0], language): read_pairs(path, source_filter)
        for language, path in (settings.extra_pairs or {}).items()
    }


def refine_table(
    reduced: SentenceTransformer,
    extraction: ExtractionStage,
    settings: BuildSettings,
    destination: Path,
    pairs: dict[tuple[str, str], list[tuple[str, str]]] | None,
    long_texts: LongTexts | None = None,
    second_targets: SecondTeacherTargets | None = None,
) -> None:
    """Train the reduced table on the cached teacher targets and/or translation pairs; save the refined model with
    its training record (``training/``) in ``destination``."""
    from st_static.training import refine

    sentences: Sequence[str] | None = None
    targets = None
    loss_arguments = None
    if pairs is None or settings.refinement.crosslingual_distillation:
        sentences = extraction.sentences()
        targets = np.asarray(extraction.teacher_embeddings(), dtype=np.float32)
        if second_targets is not None:  # the sample both teachers read
            sentences = [sentences[index] for index in second_targets.sample]
            weight = settings.extraction.second_teacher_weight
            if settings.extraction.second_teacher_mix == "cosines":
                targets = second_targets.mixed_with(targets, weight)
            else:
                targets, loss_arguments = second_targets.side_by_side(targets, weight)
        if long_texts is not None:
            sentences = [*sentences, *long_texts.texts]
            targets = np.concatenate([targets, long_texts.targets])
    training_only = extra_pairs(settings) if pairs is not None else None

    def run(output_dir: Path | None) -> SentenceTransformer:
        return refine(
            reduced,
            settings.refinement,
            sentences=sentences,
            teacher_embeddings=targets,
            teacher_loss_arguments=loss_arguments,
            pairs=pairs,
            training_only_pairs=training_only,
            output_dir=output_dir,
            device=settings.device,
        ).model

    if not is_first_process():  # the other processes train their share; the first one writes
        run(None)
        return
    with staged_folder(destination, replaceable=lambda _: True) as staging:
        write_model(run(staging / TRAINING_FOLDER), staging)
