"""The completion stage: words the corpus missed (:mod:`st_static.extraction.completion`), in
``completion-KEY/``, laid out like the extraction's folder so the later stages read either.

Runs when ``complete_words`` > 0 (one language) or for a cross-lingual table with a spaceless language
(``complete_spaceless``). Keyed by the extraction's key, the completion settings and the version of the word list.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

from st_static.distributed import barrier, is_first_process, process_device
from st_static.extraction.teacher_model import load_teacher
from st_static.files import staged_folder
from st_static.model.languages import has_spaceless_language
from st_static.model.save_load import holds_st_static_output, load_model, save_model
from st_static.model.static_word_average import StaticWordAverage
from st_static.settings import BuildSettings, ExtractionSettings
from st_static.stages.base import Build, FolderStage, stage_key, stage_settings
from st_static.stages.extraction_folder import ExtractionStage

COMPLETION_VERSION = {"digit_placeholders": "left out"}  # wordfreq's a00, m000 (since 2026-11-27)


class Completion(FolderStage):
    """Step 1b: one process completes the table; the others wait and read its folder."""

    name = "completion"

    def applies(self, build: Build) -> bool:
        return completes(build.settings)

    def key(self, build: Build) -> str:
        settings = stage_settings(build.settings.extraction, "completion")
        return stage_key(build.keys["extraction"], "completion", settings, COMPLETION_VERSION)

    def run_in(self, build: Build, folder: Path) -> Path | None:
        settings = build.settings
        if is_first_process():
            run_completion(build.extracted(), folder, settings.extraction, settings.languages, settings.device)
        barrier()
        build.extraction = ExtractionStage.open(folder)
        added = build.extraction.stats.get("completion", {}).get("added", 0)
        return build.extraction.model_path if added else None  # scored when it added words


def completes(settings: BuildSettings) -> bool:
    """Whether the build adds words the corpus lacks (see :func:`run_completion`)."""
    if settings.crosslingual:
        return settings.extraction.complete_spaceless and has_spaceless_language(settings.languages)
    return settings.extraction.complete_words > 0


def run_completion(
    extraction: ExtractionStage,
    output: str | os.PathLike[str],
    settings: ExtractionSettings,
    languages: Sequence[str],
    device: str | None = None,
) -> ExtractionStage:
    """Step 1b: add words the corpus missed (:mod:`st_static.extraction.completion`).

    A cross-lingual table with Chinese or Japanese gets the teacher's tokens of those scripts
    (``settings.complete_spaceless``); a one-language table gets the language's most frequent words
    (``settings.complete_words``). Writes a folder laid out like the extraction's (its ``model`` holds the completed
    raw table; sentences, targets and the PCA sample are the extraction's), so the later stages read either.
    """
    from st_static.extraction.completion import complete_spaceless_vocabulary, complete_vocabulary, frequent_words

    output = Path(output)
    if (output / "stats.json").is_file():
        return ExtractionStage.open(output)
    started = time.perf_counter()
    settings = settings.with_teacher_prompt()  # prompt None: the teacher's own, as in the extraction
    raw_module: StaticWordAverage = load_model(extraction.model_path)[0]
    teacher = load_teacher(settings.teacher, device=process_device(device), precision=settings.teacher_precision)
    if len(languages) > 1:
        completed, report = complete_spaceless_vocabulary(raw_module, teacher, list(languages), prompt=settings.prompt)
    else:
        candidates = frequent_words(languages[0], settings.complete_words)
        completed, report = complete_vocabulary(
            raw_module, teacher, candidates, prompt=settings.prompt, skip_when_too_few=True
        )
    report["seconds"] = time.perf_counter() - started
    stats = {**extraction.stats, "completion": report}
    with staged_folder(output, replaceable=holds_st_static_output) as staging:
        save_model(SentenceTransformer(modules=[completed, Normalize()], device="cpu"), staging / "model")
        shutil.copytree(extraction.folder / "targets", staging / "targets", copy_function=_link_or_copy)
        _link_or_copy(extraction.pca_sentences_path, staging / "pca_sentences.txt")
        (staging / "stats.json").write_text(json.dumps(stats, indent=2), encoding="utf-8")
    return ExtractionStage(folder=output, stats=stats)


def _link_or_copy(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> None:
    """Hard-link a read-only stage file (copy where links are not possible)."""
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)
