"""The stages' folder names stay what they were before the stages moved into ``st_static/stages/`` (issue 52): a
work folder made by an earlier build resumes without recomputing anything.

``old_stage_folders`` is the key composition of ``pipeline/run.py`` before the move, kept here verbatim (reading
settings and file digests only); the stages of today must name the same folders for every kind of build.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import asdict
from typing import Any

import pytest

from st_static.extraction.corpus import corpus_digest, corpus_files
from st_static.extraction.pair_sources import SourceFilter, source_file
from st_static.extraction.teacher_model import teacher_precision
from st_static.files import content_digest
from st_static.model.languages import has_spaceless_language
from st_static.pipeline.run import STAGES, prepare_build
from st_static.settings import BuildSettings
from st_static.stages.base import plan_folders

from .teachers import TINY_CORPUS, make_tiny_teacher

GERMAN = ["die katze sitzt", "ein hund", "die matte war rot", "katzen sitzen"] * 3


def _key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:10]


def _filter_key(settings: BuildSettings, files: dict[str, list[str]]) -> list[Any]:
    if not (settings.keep_sources or settings.leave_out_sources):
        return []
    source_files = [source_file(path) for paths in files.values() for path in paths]
    return [
        {
            "keep_sources": settings.keep_sources,
            "leave_out_sources": settings.leave_out_sources,
            "source_files": [content_digest(path) if path.is_file() else None for path in source_files],
        }
    ]


def old_stage_folders(settings: BuildSettings) -> set[str]:
    """The folder names the build named before its stages moved (the old ``run_pipeline``'s keys)."""
    source_filter = SourceFilter.of(settings.keep_sources, settings.leave_out_sources)
    corpus = corpus_files(settings.corpus, source_filter) if settings.corpus else None
    settings = dataclasses.replace(
        settings, extraction=settings.extraction.with_teacher_prompt().with_second_teacher_prompt()
    )
    parallel_files = settings.parallel_files()
    folders = set()
    extraction_settings = asdict(settings.extraction)
    completion_settings = {name: extraction_settings.pop(name) for name in ("complete_words", "complete_spaceless")}
    long_text_settings = {name: extraction_settings.pop(name) for name in ("long_texts", "long_text_sentences")}
    second_fields = (
        "second_teacher",
        "second_teacher_prompt",
        "second_teacher_sentences",
        "second_teacher_weight",
        "second_teacher_mix",
    )
    second_teacher_settings = {name: extraction_settings.pop(name) for name in second_fields}
    for name in ("fallback_rows", "piece_rows", "storage"):
        extraction_settings.pop(name)
    if extraction_settings["language_vocab_sizes"] is None:  # a later field, keying only builds that give it
        extraction_settings.pop("language_vocab_sizes")
    extraction_settings["teacher_precision"] = teacher_precision(settings.extraction.teacher_precision, settings.device)
    pair_digests = [
        corpus_digest(paths[0]) if len(paths) == 1 else [corpus_digest(path) for path in paths]
        for paths in parallel_files.values()
    ]
    extraction_inputs = [*([corpus_digest(corpus)] if corpus is not None else []), *pair_digests]
    extraction_key = _key(
        extraction_settings, settings.languages, extraction_inputs, *_filter_key(settings, parallel_files)
    )
    folders.add(f"extraction-{extraction_key}")
    if settings.crosslingual:
        completes = settings.extraction.complete_spaceless and has_spaceless_language(settings.languages)
    else:
        completes = settings.extraction.complete_words > 0
    if completes:
        version = {"digit_placeholders": "left out"}
        extraction_key = _key(extraction_key, "completion", completion_settings, version)
        folders.add(f"completion-{extraction_key}")
    reduction_key = _key(extraction_key, asdict(settings.reduction))
    folders.add(f"pca-{reduction_key}")
    refinement_inputs: list[Any] = [[content_digest(path) for path in (settings.extra_pairs or {}).values()]]
    if settings.extra_pairs and source_filter.active:
        refinement_inputs += _filter_key(settings, {"": list(settings.extra_pairs.values())})
    if (settings.extraction.long_texts or settings.passages) and corpus is not None and not settings.crosslingual:
        long_key = _key(
            extraction_settings["teacher"],
            extraction_settings["prompt"],
            extraction_settings["teacher_precision"],
            corpus_digest(corpus),
            long_text_settings,
            *([content_digest(settings.passages)] if settings.passages else []),
        )
        folders.add(f"long-texts-{long_key}")
        refinement_inputs.append(long_key)
    if settings.extraction.second_teacher is not None:
        weight = second_teacher_settings.pop("second_teacher_weight")
        mix = second_teacher_settings.pop("second_teacher_mix")  # cosines, the only mix before the setting
        second_key = _key(extraction_key, second_teacher_settings, extraction_settings["teacher_precision"])
        folders.add(f"second-teacher-{second_key}")
        refinement_inputs.append([second_key, weight, *([mix] if mix != "cosines" else [])])
    refinement_settings = asdict(settings.refinement)
    if not refinement_settings["language_weights"]:  # the field came later: unset, the key is the one it was
        del refinement_settings["language_weights"]
    del refinement_settings["soup_seeds"]  # a later field, which keys the soup stage alone
    refinement_key = _key(reduction_key, refinement_settings, *refinement_inputs)
    folders.add(f"{'contrastive' if settings.crosslingual else 'distillation'}-{refinement_key}")
    if settings.extraction.fallback_rows:
        from st_static.extraction.fallback import (
            EMPTY_TEXT_LARGEST_ENTRY,
            EMPTY_TEXT_SCALE,
            FALLBACK_CHARACTER_SCALE,
            FIT_WORDS,
        )

        version = {"characters": FALLBACK_CHARACTER_SCALE, "empty_text": EMPTY_TEXT_SCALE}
        version["empty_text_largest_entry"] = EMPTY_TEXT_LARGEST_ENTRY  # since float16 holds zero there (issue 66)
        version["fit_words"] = FIT_WORDS
        version["normalization"] = "NFKC"  # since the fallback layout reads NFKC (2026-11-28)
        folders.add(f"fallback-{_key(refinement_key, 'fallback', version)}")
    if settings.extraction.piece_rows:
        from st_static.extraction.pieces import MAX_PIECE_CHARS, PIECES_VERSION, RIDGE

        version = {"ridge": RIDGE, "max_piece_chars": MAX_PIECE_CHARS, "version": PIECES_VERSION}
        folders.add(f"pieces-{_key(refinement_key, 'pieces', version, settings.extraction.fallback_rows)}")
    return folders


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("inputs")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n", encoding="utf-8")
    passages = folder / "passages.txt"
    passages.write_text("\n".join(TINY_CORPUS[:4]) + "\n", encoding="utf-8")
    pairs = folder / "en-de.tsv"
    pairs.write_text("en\tother\n" + "\n".join(f"{e}\t{g}" for e, g in zip(TINY_CORPUS, GERMAN, strict=True)) + "\n")
    (folder / "en-de.source.txt").write_text("a\nb\n" * 6, encoding="utf-8")
    more = folder / "more" / "en-de.tsv"
    more.parent.mkdir()
    more.write_text("en\tother\ncat\tkatze\n", encoding="utf-8")
    words = folder / "words.tsv"
    words.write_text("en\tother\ncat\tkatze\ndog\thund\n", encoding="utf-8")
    chinese = folder / "en-zh.tsv"
    chinese.write_text("en\tother\nthe cat\t猫\na dog\t狗\n", encoding="utf-8")
    teacher = make_tiny_teacher(folder / "teacher")
    second = make_tiny_teacher(folder / "second", hidden_size=24, seed=7)
    paths = {"corpus": corpus, "passages": passages, "pairs": pairs, "more": more, "words": words}
    paths |= {"chinese": chinese, "teacher": teacher, "second": second}
    return {name: str(path) for name, path in paths.items()}


VARIANTS = {
    "default": lambda i: {"corpus": [i["corpus"]]},
    "no completion": lambda i: {"corpus": [i["corpus"]], "complete_words": 0},
    "second teacher": lambda i: {"corpus": [i["corpus"]], "second_teacher": i["second"], "second_teacher_weight": 0.3},
    "second teacher, cosines": lambda i: {
        "corpus": [i["corpus"]],
        "second_teacher": i["second"],
        "second_teacher_mix": "cosines",
    },
    "long texts": lambda i: {"corpus": [i["corpus"]], "long_texts": 4, "long_text_sentences": 2},
    "passages": lambda i: {"corpus": [i["corpus"]], "passages": i["passages"]},
    "bare table": lambda i: {
        "corpus": [i["corpus"]],
        "fallback_rows": False,
        "piece_rows": False,
        "storage": "float32",
    },
    "no fallback": lambda i: {"corpus": [i["corpus"]], "fallback_rows": False, "dim": 16, "steps": 7},
    "cross-lingual": lambda i: {
        "parallel": [i["pairs"]],
        "languages": ["en", "de"],
        "extra_pairs": {"de": i["words"]},
        "keep_sources": ["a"],
    },
    "cross-lingual, two files": lambda i: {
        "corpus": [i["corpus"]],
        "parallel": {"de": [i["pairs"], i["more"]]},
        "languages": ["en", "de"],
        "crosslingual_distillation": True,
    },
    "cross-lingual, chinese": lambda i: {"parallel": [i["chinese"]], "languages": ["en", "zh"]},
    "cross-lingual, sizes per language": lambda i: {
        "parallel": [i["pairs"]],
        "languages": ["en", "de"],
        "language_vocab_sizes": {"de": 5},
    },
    "cross-lingual, language weights": lambda i: {
        "parallel": [i["pairs"]],
        "languages": ["en", "de"],
        "language_weights": {"de": 2},
    },
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_stage_keeps_the_folder_name_it_had_before_the_move(inputs, tmp_path, variant):
    settings = BuildSettings.from_flat(**{"teacher": inputs["teacher"], "dim": 8, **VARIANTS[variant](inputs)})
    planned = plan_folders(prepare_build(settings, tmp_path), STAGES)
    assert {folder.name for folder in planned.values()} == old_stage_folders(settings)
    assert all(folder.parent == tmp_path for folder in planned.values())


def test_the_plan_lists_the_stages_that_apply_in_their_order(inputs, tmp_path):
    settings = BuildSettings.from_flat(teacher=inputs["teacher"], corpus=[inputs["corpus"]], complete_words=0)
    planned = plan_folders(prepare_build(settings, tmp_path), STAGES)
    assert list(planned) == ["extraction", "pca", "distillation", "fallback", "pieces"]


def test_language_weights_key_the_refinement_and_leave_the_earlier_stages_as_they_were(inputs, tmp_path):
    common = {"teacher": inputs["teacher"], "dim": 8, "parallel": [inputs["pairs"]], "languages": ["en", "de"]}
    plain = plan_folders(prepare_build(BuildSettings.from_flat(**common), tmp_path / "a"), STAGES)
    weighted_settings = BuildSettings.from_flat(**common, language_weights={"de": 2})
    weighted = plan_folders(prepare_build(weighted_settings, tmp_path / "b"), STAGES)
    assert plain["extraction"].name == weighted["extraction"].name
    assert plain["pca"].name == weighted["pca"].name
    assert plain["contrastive"].name != weighted["contrastive"].name
