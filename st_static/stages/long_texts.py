"""The long-texts stage: runs of consecutive corpus lines (or the lines of ``--passages``) and the teacher's vectors
of them, in ``long-texts-KEY/`` (:mod:`st_static.extraction.long_texts`); the refinement trains on them next to the
sentence targets.

Runs when ``long_texts`` > 0 or ``passages`` is given, in one-language builds with a corpus. Keyed by the teacher,
its prompt and precision, the corpus's content, the long-text settings and the passages' content.
"""

from __future__ import annotations

from pathlib import Path

from st_static.distributed import barrier, is_first_process
from st_static.extraction.corpus import CorpusSource, corpus_digest, iter_sentences
from st_static.extraction.long_texts import LongTexts, run_long_texts
from st_static.extraction.teacher_model import load_teacher, teacher_precision
from st_static.files import content_digest
from st_static.settings import BuildSettings
from st_static.stages.base import Build, FolderStage, stage_key, stage_settings


class LongTextTargets(FolderStage):
    """Step 1c: one process makes the long texts and their vectors; the others read its folder."""

    name = "long texts"

    def applies(self, build: Build) -> bool:
        settings = build.settings
        return bool(settings.extraction.long_texts or settings.passages) and _corpus(build) is not None

    def key(self, build: Build) -> str:
        settings = build.settings
        extraction = settings.extraction
        return stage_key(
            extraction.teacher,
            extraction.prompt,
            teacher_precision(extraction.teacher_precision, settings.device),
            corpus_digest(_corpus(build)),
            stage_settings(extraction, "long texts"),
            *([content_digest(settings.passages)] if settings.passages else []),
        )

    def run_in(self, build: Build, folder: Path) -> None:
        corpus = _corpus(build)
        if corpus is None:
            raise RuntimeError("the long-texts stage needs a one-language corpus")
        build.long_texts = long_texts(build.settings, corpus, folder)


def _corpus(build: Build) -> CorpusSource | None:
    """The corpus the long texts come from: none in a cross-lingual build."""
    return None if build.settings.crosslingual else build.corpus


def long_texts(settings: BuildSettings, corpus: CorpusSource, destination: Path) -> LongTexts:
    """The long texts and their teacher vectors (one process makes them; the others read its folder)."""
    if is_first_process() and not (destination / "targets.npy").is_file():
        passages = None
        if settings.passages:
            passages = list(iter_sentences(settings.passages))
        teacher = load_teacher(
            settings.extraction.teacher, device=settings.device, precision=settings.extraction.teacher_precision
        )
        run_long_texts(
            list(iter_sentences(corpus)),
            teacher,
            destination,
            count=settings.extraction.long_texts,
            sentences_per_text=settings.extraction.long_text_sentences,
            prompt=settings.extraction.prompt or "",
            passages=passages,
        )
    barrier()
    return LongTexts.open(destination)
