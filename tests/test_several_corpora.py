"""Several corpus files read as one corpus: ``--corpus`` repeated, a list of ``pathlib.Path`` in ``distill``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import st_static
from st_static.cli import app
from st_static.errors import StStaticError
from st_static.extraction.corpus import CorpusError, CorpusFiles, corpus_digest, corpus_files, iter_sentences
from st_static.extraction.pair_sources import PairSourceError, SourceFilter, check_corpus_sources
from st_static.settings import BuildSettings

from .teachers import TINY_CORPUS, make_tiny_teacher

TINY = {"dim": 8, "min_sentences": 1, "steps": 8, "batch_size": 4, "eval_steps": 4, "pca_sample_size": 100}


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp("teacher"))


def _halves(folder: Path) -> tuple[Path, Path, Path]:
    lines = TINY_CORPUS * 3
    first, second, joined = folder / "a.txt", folder / "b.txt", folder / "joined.txt"
    first.write_text("\n".join(lines[:20]) + "\n", encoding="utf-8")
    second.write_text("\n".join(lines[20:]) + "\n", encoding="utf-8")
    joined.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return first, second, joined


def test_two_files_give_the_table_of_their_concatenation(teacher, tmp_path):
    first, second, joined = _halves(tmp_path)
    texts = ["the cat sat on the mat", "a red dog"]
    from_two = st_static.distill(str(teacher), [first, second], **TINY)
    from_one = st_static.distill(str(teacher), joined, **TINY)
    np.testing.assert_allclose(from_two.encode(texts), from_one.encode(texts), atol=1e-6)
    assert from_two[0].metadata.corpus == "a.txt, b.txt"


def test_each_file_keys_the_stages(teacher, tmp_path):
    first, second, _ = _halves(tmp_path)
    work = tmp_path / "work"
    st_static.distill(str(teacher), [first, second], work_dir=work, **TINY)
    second.write_text(second.read_text(encoding="utf-8") + "a new line about birds\n", encoding="utf-8")
    st_static.distill(str(teacher), [first, second], work_dir=work, **TINY)
    assert len(list(work.glob("extraction-*"))) == 2
    assert corpus_digest(CorpusFiles((first, second))) != corpus_digest(CorpusFiles((second, first)))


def test_the_cli_takes_corpus_more_than_once(tmp_path, monkeypatch):
    import st_static.pipeline.publish as build_module

    captured: dict[str, BuildSettings] = {}

    def fake_build(settings, out, **kwargs):
        captured["settings"] = settings
        raise StStaticError("stopped after reading the settings")

    monkeypatch.setattr(build_module, "build", fake_build)
    first, second, _ = _halves(tmp_path)
    arguments = ["build", "--out", str(tmp_path / "m"), "--corpus", str(first), "--corpus", str(second)]
    result = CliRunner().invoke(app, arguments)
    assert "stopped after reading the settings" in result.output
    assert captured["settings"].corpus == [str(first), str(second)]
    assert captured["settings"].inputs == [str(first), str(second)]


def test_every_file_is_checked_before_the_teacher_is_loaded(tmp_path):
    first, _, _ = _halves(tmp_path)
    missing = tmp_path / "missing.txt"
    result = CliRunner().invoke(
        app,
        [
            "build",
            "--teacher",
            "never-loaded",
            "--out",
            str(tmp_path / "m"),
            "--corpus",
            str(first),
            "--corpus",
            str(missing),
        ],
    )
    assert result.exit_code == 1
    assert "missing.txt does not exist" in result.output and "Traceback" not in result.output
    (tmp_path / "utf16.txt").write_bytes("hello there\n".encode("utf-16"))
    with pytest.raises(CorpusError, match="UTF-16"):
        st_static.distill("never-loaded", [first, tmp_path / "utf16.txt"])


def test_one_file_twice_and_file_names_as_sentences_are_refused(tmp_path):
    first, second, _ = _halves(tmp_path)
    with pytest.raises(CorpusError, match="given twice"):
        corpus_files([str(first), str(tmp_path / "." / "a.txt")])
    with pytest.raises(CorpusError, match=r"pathlib\.Path"):
        st_static.distill("never-loaded", [str(first), str(second)])
    assert list(iter_sentences(corpus_files([first, second]))) == [" ".join(line.split()) for line in TINY_CORPUS * 3]
    assert corpus_files([first]) == str(first)


def _with_sources(folder: Path) -> tuple[Path, list[str], list[str]]:
    lines = TINY_CORPUS * 3
    names = ["chat" if index % 3 == 0 else "news" for index in range(len(lines))]
    corpus = folder / "modern.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "modern.source.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
    return corpus, lines, names


def test_a_source_filter_chooses_corpus_lines_by_their_aligned_source_file(tmp_path):
    corpus, lines, names = _with_sources(tmp_path)
    other = tmp_path / "old.txt"
    other.write_text("an old line without sources\n", encoding="utf-8")
    source = corpus_files([corpus, other], SourceFilter.of(None, ["chat"]))
    kept = [line for line, name in zip(lines, names, strict=True) if name != "chat"]
    assert list(iter_sentences(source)) == [*kept, "an old line without sources"]
    assert corpus_digest(source) != corpus_digest(corpus_files([corpus, other]))
    assert corpus_files([corpus], SourceFilter.of(None, None)) == str(corpus)
    assert check_corpus_sources([corpus, other], SourceFilter.of(["news"], None)) == {str(corpus): (len(kept), 36)}


def test_left_out_corpus_sources_never_reach_the_table(teacher, tmp_path):
    corpus, lines, names = _with_sources(tmp_path)
    only = tmp_path / "only-news.txt"
    only.write_text("\n".join(line for line, name in zip(lines, names, strict=True) if name != "chat") + "\n")
    filtered = st_static.distill(str(teacher), corpus, leave_out_sources=["chat"], **TINY)
    plain = st_static.distill(str(teacher), only, **TINY)
    texts = ["the cat sat on the mat", "a red dog"]
    np.testing.assert_allclose(filtered.encode(texts), plain.encode(texts), atol=1e-6)
    assert filtered[0].metadata.leave_out_sources == ["chat"]


def test_a_misaligned_corpus_source_file_stops_the_build_before_the_teacher(tmp_path):
    corpus, _, names = _with_sources(tmp_path)
    (tmp_path / "modern.source.txt").write_text("\n".join(names[:-1]) + "\n", encoding="utf-8")
    arguments = ["build", "--teacher", "never-loaded", "--out", str(tmp_path / "m"), "--corpus", str(corpus)]
    result = CliRunner().invoke(app, [*arguments, "--leave-out-sources", "chat"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "modern.source.txt has 35 line(s) but modern.txt has 36 line(s)" in result.output
    (tmp_path / "modern.source.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
    with pytest.raises(PairSourceError, match="leaves out every line"):
        check_corpus_sources([corpus], SourceFilter.of(["nothing"], None))


def test_a_byte_order_mark_is_no_part_of_the_first_source_name(tmp_path):
    from st_static.extraction.pair_sources import read_pairs

    corpus, lines, names = _with_sources(tmp_path)
    (tmp_path / "modern.source.txt").write_text("\ufeff" + "\n".join(names) + "\n", encoding="utf-8")
    chat = [line for line, name in zip(lines, names, strict=True) if name == "chat"]
    assert names[0] == "chat"
    assert list(iter_sentences(corpus_files([corpus], SourceFilter.of(["chat"], None)))) == chat
    assert check_corpus_sources([corpus], SourceFilter.of(["chat"], None)) == {str(corpus): (len(chat), 36)}
    pairs = tmp_path / "en-de.tsv"
    pairs.write_text("en\tother\nthe cat\tdie katze\nthe dog\tder hund\n", encoding="utf-8")
    (tmp_path / "en-de.source.txt").write_text("\ufeffddtp\nlohelp\n", encoding="utf-8")
    assert read_pairs(pairs, SourceFilter.of(["ddtp"], None)) == [("the cat", "die katze")]


def test_one_file_through_a_hard_link_is_given_twice(tmp_path):
    first, _, _ = _halves(tmp_path)
    (tmp_path / "hard.txt").hardlink_to(first)
    with pytest.raises(CorpusError, match=r"hard\.txt is given twice \(also as .*a\.txt\)"):
        corpus_files([first, tmp_path / "hard.txt"])
    pairs = tmp_path / "en-de.tsv"
    pairs.write_text("en\tother\nthe cat\tdie katze\n", encoding="utf-8")
    (tmp_path / "same.tsv").hardlink_to(pairs)
    with pytest.raises(StStaticError, match=r"same\.tsv is given twice"):
        BuildSettings(parallel=[f"de={pairs}", f"de={tmp_path / 'same.tsv'}"], languages=["en", "de"])
