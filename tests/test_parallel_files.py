"""Several translation-pair files per language (``--parallel LANG=FILE``) and pair rows chosen by their source."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import st_static
from st_static.cli import app
from st_static.cli.build import portable_command
from st_static.errors import StStaticError
from st_static.extraction.corpus import CorpusError
from st_static.extraction.pair_sources import (
    PairSourceError,
    SourceFilter,
    check_pair_sources,
    read_pairs,
    source_file,
)
from st_static.files import content_digest
from st_static.model_card import render_model_card
from st_static.settings import BuildSettings, SettingsError
from st_static.stages.base import distinct_file_names
from st_static.stages.extraction import pair_file_digests

from .teachers import TINY_CORPUS, make_tiny_teacher
from .test_build import GERMAN

TINY = {
    "dim": 8,
    "min_sentences": 1,
    "steps": 8,
    "batch_size": 4,
    "eval_steps": 4,
    "validation_size": 8,
    "pca_sample_size": 100,
}
PAIRS = list(zip(TINY_CORPUS, GERMAN, strict=True))
EXTRA = [(f"{english} word{chr(97 + i)}", f"{german} wort{chr(97 + i)}") for i, (english, german) in enumerate(PAIRS)]
"""The extra pairs: each row has a word of its own (worda ... wordl)."""
SOURCES = ["mo.wesnoth-1.16-httt", "ddtp", "mo.gcc-12-locales", "lohelp"] * 3


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp("teacher"))


def write_pairs(path: Path, pairs: list[tuple[str, str]], sources: list[str] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("en\tother\n" + "".join(f"{first}\t{second}\n" for first, second in pairs), encoding="utf-8")
    if sources is not None:
        source_file(path).write_text("".join(f"{source}\n" for source in sources), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    """A base en-de file and an extra one of the same name in extra/, with an aligned .source.txt."""
    return {
        "base": write_pairs(tmp_path / "en-de.tsv", PAIRS),
        "extra": write_pairs(tmp_path / "extra" / "en-de.tsv", EXTRA, SOURCES),
    }


# -------------------------------------------------------------------------------- several files per language
def test_lang_file_entries_group_the_files_by_language(tmp_path):
    settings = BuildSettings(parallel=["ja=c.tsv", "de=a.tsv", "de=b.tsv"], languages=["en", "de", "ja"])
    assert settings.parallel_files() == {"de": ["a.tsv", "b.tsv"], "ja": ["c.tsv"]}
    assert settings.inputs == ["a.tsv", "b.tsv", "c.tsv"]
    positional = BuildSettings(parallel=["a.tsv", "c.tsv"], languages=["en", "de", "ja"])
    assert positional.parallel_files() == {"de": ["a.tsv"], "ja": ["c.tsv"]}
    mapping = BuildSettings(parallel={"de": ["a.tsv", Path("b.tsv")], "ja": "c.tsv"}, languages=["en", "de", "ja"])
    assert mapping.parallel == ["de=a.tsv", "de=b.tsv", "ja=c.tsv"]
    assert mapping.parallel_files() == settings.parallel_files()
    assert BuildSettings(parallel=["runs/x=1/a.tsv"], languages=["en", "de"]).parallel_files() == {
        "de": ["runs/x=1/a.tsv"]
    }


@pytest.mark.parametrize(
    ("parallel", "message"),
    [
        (["de=a.tsv", "c.tsv"], "not both forms"),
        (["de=a.tsv", "fr=b.tsv"], "'fr' is not one of the paired languages"),
        (["de=a.tsv"], "names no file pairing en with ja"),
        (["a.tsv"], "needs 2 parallel file"),
        (["de=a.tsv", "ja=./a.tsv"], "given twice"),
    ],
)
def test_unusable_parallel_entries_are_refused(parallel, message):
    with pytest.raises(SettingsError, match=message):
        BuildSettings(parallel=parallel, languages=["en", "de", "ja"])


def test_the_cli_takes_lang_file_more_than_once_and_refuses_mixed_forms(files, tmp_path, monkeypatch):
    import st_static.pipeline.publish as build_module

    captured: dict[str, BuildSettings] = {}

    def fake_build(settings, out, **kwargs):
        captured["settings"] = settings
        raise StStaticError("stopped after reading the settings")

    monkeypatch.setattr(build_module, "build", fake_build)
    base, extra = files["base"], files["extra"]
    arguments = ["build", "--out", str(tmp_path / "m"), "--languages", "en,de", "--parallel", f"de={base}"]
    result = CliRunner().invoke(
        app, [*arguments, "--parallel", f"de={extra}", "--leave-out-sources", "mo.*, ddtp", "--keep-sources", "*"]
    )
    assert "stopped after reading the settings" in result.output
    settings = captured["settings"]
    assert settings.parallel_files() == {"de": [str(base), str(extra)]}
    assert settings.leave_out_sources == ["mo.*", "ddtp"] and settings.keep_sources == ["*"]
    result = CliRunner().invoke(app, [*arguments, "--parallel", str(extra)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.count("error:") == 1 and "not both forms" in result.output
    command = portable_command(["build", "--parallel", f"de={tmp_path / 'en-de.tsv'}", "--extra-pairs=ja=/x/y.tsv"])
    assert str(tmp_path) not in command and "de=en-de.tsv" in command and "--extra-pairs=ja=y.tsv" in command


def test_one_file_per_language_keeps_its_extraction_key(files):
    base = str(files["base"])
    positional = BuildSettings(parallel=[base], languages=["en", "de"])
    named = BuildSettings(parallel=[f"de={base}"], languages=["en", "de"])
    assert pair_file_digests(positional) == pair_file_digests(named) == [content_digest(base)]  # the old key's input
    a, b, c = (str(files["base"]), str(files["extra"]), str(source_file(files["extra"])))
    split_one = BuildSettings(parallel=[f"de={a}", f"de={b}", f"ja={c}"], languages=["en", "de", "ja"])
    split_two = BuildSettings(parallel=[f"de={a}", f"ja={b}", f"ja={c}"], languages=["en", "de", "ja"])
    assert pair_file_digests(split_one) != pair_file_digests(split_two)


def test_two_files_give_the_table_of_their_concatenation_and_both_are_named(teacher, files, tmp_path):
    joined = write_pairs(tmp_path / "joined" / "en-de.tsv", PAIRS + EXTRA)
    work = tmp_path / "work"
    texts = ["the cat sat on the mat", "die katze sitzt"]
    both = st_static.distill(
        str(teacher), parallel={"de": [files["base"], files["extra"]]}, languages=["en", "de"], work_dir=work, **TINY
    )
    one = st_static.distill(str(teacher), parallel=[joined], languages=["en", "de"], **TINY)
    np.testing.assert_allclose(both.encode(texts), one.encode(texts), atol=1e-6)
    metadata = both[0].metadata
    assert metadata.parallel == [f"{tmp_path.name}/en-de.tsv", "extra/en-de.tsv"]
    assert metadata.corpus == f"{tmp_path.name}/en-de.tsv, extra/en-de.tsv"
    assert "`extra/en-de.tsv` (parallel)" in render_model_card(both)
    # The same files as LANG=FILE strings reuse every stage; the base file alone is another extraction.
    st_static.distill(
        str(teacher), parallel=[f"de={files['base']}", f"de={files['extra']}"], languages=["en", "de"], work_dir=work,
        **TINY,
    )  # fmt: skip
    assert len(list(work.glob("extraction-*"))) == 1
    st_static.distill(str(teacher), parallel=[files["base"]], languages=["en", "de"], work_dir=work, **TINY)
    assert len(list(work.glob("extraction-*"))) == 2


def test_every_pair_file_is_checked_before_the_teacher_is_loaded(files, tmp_path):
    with pytest.raises(CorpusError, match=r"absent\.tsv does not exist"):
        st_static.distill(
            "never-loaded", parallel={"de": [files["base"], tmp_path / "absent.tsv"]}, languages=["en", "de"]
        )


def test_distinct_file_names_add_folders_only_where_names_repeat():
    assert distinct_file_names(["/d/parallel/en-de.tsv", "/d/parallel/extra/en-de.tsv", "/d/en-ja.tsv"]) == [
        "parallel/en-de.tsv",
        "extra/en-de.tsv",
        "en-ja.tsv",
    ]


# -------------------------------------------------------------------------------- pairs chosen by their source
def test_a_filter_keeps_then_leaves_out_and_files_without_sources_are_read_whole(files):
    extra = files["extra"]
    left_out = read_pairs(extra, SourceFilter.of(None, ["mo.*"]))
    assert left_out == [pair for pair, source in zip(EXTRA, SOURCES, strict=True) if not source.startswith("mo.")]
    kept = read_pairs(extra, SourceFilter.of(["mo.*", "lohelp"], ["mo.gcc-*"]))
    assert kept == [
        pair for pair, source in zip(EXTRA, SOURCES, strict=True) if source in ("mo.wesnoth-1.16-httt", "lohelp")
    ]
    assert read_pairs(extra) == read_pairs(extra, SourceFilter()) == EXTRA
    assert read_pairs(files["base"], SourceFilter.of(None, ["*"])) == PAIRS


def test_left_out_sources_never_reach_the_table_and_each_filter_keys_the_stages(teacher, files, tmp_path, caplog):
    work = tmp_path / "work"
    parallel = {"de": [files["base"], files["extra"]]}
    with caplog.at_level(logging.WARNING, logger="st_static"):
        filtered = st_static.distill(
            str(teacher), parallel=parallel, languages=["en", "de"], work_dir=work, leave_out_sources=["mo.*"],
            keep_sources=["*"], **TINY,
        )  # fmt: skip
    assert not [record for record in caplog.records if "matches no source" in record.getMessage()]
    vocabulary = set(filtered[0].vocabulary)
    for i, source in enumerate(SOURCES):
        words = {f"word{chr(97 + i)}", f"wort{chr(97 + i)}"}
        assert (words <= vocabulary) if not source.startswith("mo.") else not (words & vocabulary), source
    assert {"cat", "katze"} <= vocabulary  # the base file (no .source.txt) is read whole
    assert filtered[0].metadata.leave_out_sources == ["mo.*"] and filtered[0].metadata.keep_sources == ["*"]
    card = render_model_card(filtered)
    assert "only sources `*` kept and sources `mo.*` left out" in card
    # Each filter is another extraction; an unfiltered build of the same files yet another.
    st_static.distill(
        str(teacher), parallel=parallel, languages=["en", "de"], work_dir=work, leave_out_sources=["ddtp"], **TINY
    )
    unfiltered = st_static.distill(str(teacher), parallel=parallel, languages=["en", "de"], work_dir=work, **TINY)
    assert len(list(work.glob("extraction-*"))) == 3
    assert {"worda", "wordb"} <= set(unfiltered[0].vocabulary)


def test_sources_left_out_of_the_training_keep_their_rows_and_key_only_the_training(teacher, files, tmp_path):
    import json

    work = tmp_path / "work"
    parallel = {"de": [files["base"], files["extra"]]}
    plain = st_static.distill(str(teacher), parallel=parallel, languages=["en", "de"], work_dir=work, **TINY)
    trained = st_static.distill(
        str(teacher), parallel=parallel, languages=["en", "de"], work_dir=work,
        training_leave_out_sources=["mo.*"], **TINY,
    )  # fmt: skip
    assert len(list(work.glob("extraction-*"))) == 1 and len(list(work.glob("contrastive-*"))) == 2
    assert {"worda", "wortc"} <= set(trained[0].vocabulary)  # mo.* rows: read by the extraction, so they keep rows

    def train_size(folder: Path) -> int:
        record = json.loads((folder / "training" / "training_history.json").read_text(encoding="utf-8"))
        return record["settings"]["train_size"]

    sizes = {train_size(folder) for folder in work.glob("contrastive-*")}
    mo_rows = sum(source.startswith("mo.") for source in SOURCES)
    assert len(sizes) == 2 and max(sizes) - min(sizes) == mo_rows  # the training read every row but the mo.* ones
    assert trained[0].metadata.training_leave_out_sources == ["mo.*"]
    assert plain[0].metadata.training_leave_out_sources is None
    assert "`mo.*` read by the extraction only, not by the contrastive training" in render_model_card(trained)
    with pytest.raises(SettingsError, match="give --parallel files too"):
        BuildSettings(corpus=["a.txt"], training_leave_out_sources=["mo.*"])
    only_extra = {"de": [files["extra"]]}
    with pytest.raises(StStaticError, match=re.escape("training's pairs (--training-leave-out-sources *)")):
        st_static.distill("never-loaded", parallel=only_extra, languages=["en", "de"], training_leave_out_sources=["*"])


def test_a_pattern_that_matches_nothing_is_a_warning_before_the_teacher_loads(files, caplog):
    parallel = {"de": [files["base"], files["extra"]]}
    with caplog.at_level(logging.WARNING, logger="st_static"), pytest.raises(StStaticError, match="never-loaded"):
        st_static.distill(
            "never-loaded", parallel=parallel, languages=["en", "de"], leave_out_sources=["mo.x*", "ddtp"]
        )
    warnings = [record.getMessage() for record in caplog.records if "matches no source" in record.getMessage()]
    assert len(warnings) == 1 and "'mo.x*'" in warnings[0]
    assert check_pair_sources({"de": [str(files["base"]), str(files["extra"])]}, SourceFilter.of(None, ["ddtp"])) == {
        str(files["extra"]): (9, 12)
    }


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        (["ddtp"] * 11, "has 11 line"),  # one row without a source
        (["ddtp"] * 13, "has 13 line"),
        (None, "none of the pair files"),
    ],
)
def test_missing_or_misaligned_source_files_stop_the_build_before_the_teacher(tmp_path, sources, message):
    base = write_pairs(tmp_path / "en-de.tsv", PAIRS)
    extra = write_pairs(tmp_path / "extra" / "en-de.tsv", EXTRA, sources)
    result = CliRunner().invoke(
        app,
        [
            "build", "--teacher", "never-loaded", "--out", str(tmp_path / "m"), "--languages", "en,de",
            "--parallel", f"de={base}", "--parallel", f"de={extra}", "--leave-out-sources", "mo.*",
        ],
    )  # fmt: skip
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert message in result.output and result.output.count("error:") == 1


def test_a_filter_that_leaves_a_language_without_pairs_is_refused(files):
    extra = str(files["extra"])
    with pytest.raises(PairSourceError, match="leaves no translation pair for de"):
        st_static.distill("never-loaded", parallel=[extra], languages=["en", "de"], keep_sources=["nothing-*"])
    with pytest.raises(SettingsError, match="give such files too"):
        BuildSettings(leave_out_sources=["mo.*"])


def test_the_filter_also_chooses_the_training_only_pairs(teacher, files, tmp_path):
    from st_static.pipeline.publish import build

    settings = BuildSettings.from_flat(
        teacher=str(teacher),
        parallel=[str(files["base"])],
        languages=["en", "de"],
        extra_pairs={"de": str(files["extra"])},
        leave_out_sources=["mo.*"],
        **TINY,
    )
    result = build(settings, tmp_path / "model")
    history = json.loads((result.output / "training" / "training_history.json").read_text(encoding="utf-8"))
    assert history["settings"]["training_only_pairs"] == {"en-de": 6}  # 6 of the 12 extra pairs: no mo.* source
    assert history["settings"]["train_size"] == len(PAIRS) + 6
    assert result.model[0].metadata.extra_pairs == ["extra/en-de.tsv"]
