"""Build inputs read late in a build (``--extra-pairs``, ``--passages``) are checked before the teacher pass, with the
checks of the files read early: one ``error:`` line naming the option, and no teacher loaded (issue 38)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import st_static.stages.extraction as stages_module
from st_static.cli import app
from st_static.data_files import DataFormatError, read_translation_pairs
from st_static.extraction.corpus import CorpusError, check_corpus, iter_sentences

from .teachers import TINY_CORPUS, make_tiny_teacher
from .test_build import GERMAN
from .test_hostile_inputs import assert_one_error_line, build_arguments

runner = CliRunner()


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp("teacher"))


def binary_file(path: Path) -> Path:
    path.write_bytes(os.urandom(20_000))  # random bytes: almost no line is UTF-8
    return path


# ------------------------------------------------------------------------------------------------ --extra-pairs
def extra_pairs_arguments(teacher: Path, tmp_path: Path, extra: Path) -> list[str]:
    parallel = tmp_path / "en-de.tsv"
    rows = [f"{english}\t{german}" for english, german in zip(TINY_CORPUS, GERMAN, strict=True)]
    parallel.write_text("en\tother\n" + "\n".join(rows) + "\n", encoding="utf-8")
    arguments = ["build", "--teacher", str(teacher), "--parallel", str(parallel), "--languages", "en,de"]
    return [*arguments, "--extra-pairs", f"de={extra}", "--out", str(tmp_path / "m"), "--dim", "8"]


def make_extra_pairs(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.tsv"
    if kind == "binary":
        binary_file(path)
    elif kind == "device":
        path.symlink_to(os.devnull)  # a character device: reading it for lines never ends on /dev/zero
    elif kind == "bad-line":
        path.write_bytes(b"en\tother\ncat\tkatze\n\xff\xfe dog\thund\n" + b"mat\tmatte\n" * 20)  # under 10%
    elif kind == "header-only":
        path.write_text("en\tother\n", encoding="utf-8")
    return path  # "missing": never written


@pytest.mark.skipif(os.name != "posix", reason="symbolic links to devices")
@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("binary", "lines are not valid UTF-8"),
        ("missing", "missing.tsv does not exist"),
        ("device", "device.tsv is not a file"),
        ("bad-line", "bad-line.tsv:3: not UTF-8 text"),
        ("header-only", "header-only.tsv: no rows"),
    ],
)
def test_extra_pairs_are_checked_before_the_teacher_like_parallel_files(teacher, tmp_path, no_teacher, kind, message):
    extra = make_extra_pairs(tmp_path, kind)
    result = runner.invoke(app, extra_pairs_arguments(teacher, tmp_path, extra))
    assert_one_error_line(result, f"error: --extra-pairs de={extra}: ")
    assert message in result.output
    assert not (tmp_path / "m").exists()


def test_a_line_of_a_data_file_that_is_not_utf8_is_a_data_format_error_naming_it(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_bytes(b"en\tother\ncat\tkatze\ndog\thund\xe9\n")
    with pytest.raises(DataFormatError, match=r"pairs.tsv:3: not UTF-8 text \(invalid continuation byte"):
        read_translation_pairs(path)
    path.write_bytes(b"en\xff\tother\ncat\tkatze\n")
    with pytest.raises(DataFormatError, match=r"pairs.tsv:1: not UTF-8 text"):
        read_translation_pairs(path)
    path.write_bytes(b"en\tother\r\ncat\tkatze\r\n")  # Windows line ends read as before
    assert read_translation_pairs(path) == [("cat", "katze")]


# ------------------------------------------------------------------------------------------------ --passages
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "lines are not valid UTF-8 text; is it a binary file?"),  # random bytes
        (b"a passage\n" + b"\0" * 300 + b"\n", "1 of 2 lines are not valid UTF-8 text"),  # NULs decode as UTF-8
        (b" \n\t\n", "has only 0 sentence(s); at least 1 are needed."),
    ],
)
def test_passages_get_the_corpus_checks_before_the_teacher(teacher, tmp_path, no_teacher, content, message):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n", encoding="utf-8")
    passages = tmp_path / "passages.txt"
    binary_file(passages) if content is None else passages.write_bytes(content)
    arguments = [*build_arguments(teacher, corpus, tmp_path / "m"), "--passages", str(passages)]
    result = runner.invoke(app, arguments)
    assert_one_error_line(result, f"error: passages: {passages}")
    assert message in result.output


def test_lines_with_nul_bytes_are_left_out_of_a_corpus_like_invalid_utf8(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes("\n".join(TINY_CORPUS).encode() + b"\nbinary\0junk\n")
    assert check_corpus(corpus, min_sentences=1).skipped_lines == 1
    assert list(iter_sentences(corpus)) == TINY_CORPUS
    corpus.write_bytes(b"\0\0\0\n" * 20 + b"the cat\n")
    with pytest.raises(CorpusError, match="20 of 21 lines are not valid UTF-8 text"):
        check_corpus(corpus)


def test_a_data_file_line_with_nul_bytes_is_refused_naming_it(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_bytes(b"en\tother\ncat\tkatze\ndog\thu\0nd\n")
    with pytest.raises(DataFormatError, match=r"pairs.tsv:3: holds NUL bytes"):
        read_translation_pairs(path)


# ------------------------------------------------------------------------ what the inputs leave (issue 46)
def test_a_source_filter_that_keeps_too_few_lines_is_refused_before_the_teacher(teacher, tmp_path, no_teacher):
    corpus = tmp_path / "modern.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 25) + "\n", encoding="utf-8")
    names = ["facts" if index < 3 else "chat" for index in range(300)]
    (tmp_path / "modern.source.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
    arguments = [*build_arguments(teacher, corpus, tmp_path / "m"), "--keep-sources", "facts"]
    result = runner.invoke(app, arguments)
    assert_one_error_line(result, "error: modern.txt: --keep-sources facts keeps only 3 sentence(s); at least 10")
    assert not (tmp_path / "m").exists()


def test_a_corpus_too_small_for_the_pca_is_refused_before_the_teacher_pass(teacher, tmp_path, no_teacher_pass):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS) + "\n", encoding="utf-8")
    arguments = ["build", "--teacher", str(teacher), "--corpus", str(corpus), "--out", str(tmp_path / "m")]
    result = runner.invoke(app, [*arguments, "--dim", "16", "--pca-sample-size", "100"])
    assert_one_error_line(result, "error: The corpus has 12 sentence(s): a PCA to 16 dimensions (after removing 0)")


def test_a_pair_file_without_a_full_pair_is_refused_before_the_teacher(teacher, tmp_path, no_teacher):
    parallel = tmp_path / "en-de.tsv"
    parallel.write_text("en\tother\n" + "a\t\n" * 12, encoding="utf-8")
    arguments = ["build", "--teacher", str(teacher), "--parallel", str(parallel), "--languages", "en,de"]
    result = runner.invoke(app, [*arguments, "--out", str(tmp_path / "m"), "--dim", "8"])
    assert_one_error_line(result, f"error: --parallel {parallel}: only 0 translation pair(s) have text on both sides")


@pytest.fixture
def no_teacher_pass(monkeypatch) -> None:
    """Fail the test if the build loads the teacher model or runs its pass (its tokenizer may be read)."""

    def fail(*args, **kwargs):
        pytest.fail("the teacher pass ran")

    monkeypatch.setattr(stages_module, "load_teacher", fail)
    monkeypatch.setattr(stages_module, "extract_word_vectors", fail)


def test_dim_and_the_removed_components_are_checked_against_the_teacher_before_its_pass(tmp_path, no_teacher_pass):
    wide = make_tiny_teacher(tmp_path / "wide", hidden_size=100)  # ABTT removes floor(100 / 100) = 1 component
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 20) + "\n", encoding="utf-8")
    arguments = ["build", "--teacher", str(wide), "--corpus", str(corpus), "--out", str(tmp_path / "m")]
    result = runner.invoke(app, [*arguments, "--dim", "100"])
    assert_one_error_line(result, "error: --dim 100 after removing 1 leading component(s) needs 101 dimensions")
    assert "use --dim 99 or less, or --removed-components 0" in result.output
    result = runner.invoke(app, [*arguments, "--dim", "98", "--removed-components", "3"])
    assert_one_error_line(result, "error: --dim 98 after removing 3 leading component(s) needs 101 dimensions")


# ------------------------------------------------------------------------ messages that name the right thing
def test_a_source_filter_without_any_source_file_names_the_corpus_files(teacher, tmp_path, no_teacher):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n", encoding="utf-8")
    result = runner.invoke(app, [*build_arguments(teacher, corpus, tmp_path / "m"), "--leave-out-sources", "chat"])
    assert_one_error_line(result, "error: --leave-out-sources chat: none of the corpus files (corpus.txt) has an")
    assert "pair files" not in result.output and "()" not in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("en\n" + "the cat\n" * 12, "expected at least two tab-separated columns"),
        ("en\tother\n", "en-de.tsv: no rows"),
        ("en\tother\tsource\ncat\tkatze\tx\ndog\thund\ty\n", "only 2 translation pair(s) have text on both sides"),
    ],
    ids=["one column", "header only", "three columns"],
)
def test_a_short_or_malformed_pair_file_is_reported_as_pairs(teacher, tmp_path, no_teacher, content, message):
    parallel = tmp_path / "en-de.tsv"
    parallel.write_text(content, encoding="utf-8")
    arguments = ["build", "--teacher", str(teacher), "--parallel", str(parallel), "--languages", "en,de"]
    result = runner.invoke(app, [*arguments, "--out", str(tmp_path / "m"), "--dim", "8"])
    assert_one_error_line(result, message)
    assert "sentence(s)" not in result.output


def test_a_corpus_with_cr_line_endings_is_told_so(teacher, tmp_path, no_teacher):
    corpus = tmp_path / "mac.txt"
    corpus.write_bytes("\r".join(TINY_CORPUS * 3).encode() + b"\r")
    result = runner.invoke(app, build_arguments(teacher, corpus, tmp_path / "m"))
    assert_one_error_line(result, "ends its lines with CR (\\r) alone, not LF (\\n)")


@pytest.mark.parametrize("value", [",", " , ,"])
def test_a_source_option_that_names_nothing_is_refused(teacher, tmp_path, no_teacher, value):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n", encoding="utf-8")
    result = runner.invoke(app, [*build_arguments(teacher, corpus, tmp_path / "m"), "--keep-sources", value])
    assert_one_error_line(result, f"error: --keep-sources {value!r} names no value")
