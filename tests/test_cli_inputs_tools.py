"""Bad input to the table tools (extend, neighbours and dedup, pieces, fallback, disentangle): one ``error:`` line
naming the option, before any work, or a defined result; never a traceback from numpy, torch or the file system."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from typer.testing import CliRunner

import st_static
from st_static.cli import app

from .conftest import teacher_like_tokenizer
from .test_disentangle import crosslingual_table, translation_pairs, write_pairs

runner = CliRunner()


def run_cli(*arguments: object):
    return runner.invoke(app, [str(argument) for argument in arguments])


def assert_one_error_line(result, *parts: str) -> None:
    """Exit code 1, a single ``error:`` line holding every one of ``parts``, no traceback."""
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    for part in parts:
        assert part in errors[0], errors[0]


def small_table(words: list[str], teacher: str | None = None) -> SentenceTransformer:
    """A table of ``words`` (random rows) read with the tiny WordPiece tokenizer, recording ``teacher``."""
    vectors = np.random.default_rng(0).standard_normal((len(words), 8)).astype(np.float32)
    metadata = {"teacher": teacher, "prompt": "", "languages": ["en"], "vocab_size": len(words)}
    module = st_static.StaticWordAverage.from_word_vectors(
        words, vectors, teacher_tokenizer=teacher_like_tokenizer(), metadata=metadata
    )
    return SentenceTransformer(modules=[module, Normalize()], device="cpu")


@pytest.fixture
def texts(tmp_path) -> Path:
    path = tmp_path / "texts.txt"
    path.write_text("the cat sat\nThe cat sat!\nhello world\ntoken\nhello, world\ncafé 12\nthe mat\n", encoding="utf-8")
    return path


@pytest.fixture
def saved(word_model, tmp_path) -> Path:
    st_static.save_model(word_model, tmp_path / "model")
    return tmp_path / "model"


# ------------------------------------------------------------------------------------------------ extend
def test_extend_refuses_a_device_torch_cannot_parse_before_any_work(saved, texts, tmp_path):
    result = run_cli("extend", saved, "--corpus", texts, "-o", tmp_path / "new", "--device", "nope")
    assert_one_error_line(result, "device 'nope' is not a torch device")
    assert not (tmp_path / "new").exists()


def test_extend_maps_a_small_table_whose_words_the_documents_all_hold(teacher_folder, tmp_path):
    st_static.save_model(small_table(["the", "cat", "sat", "on", "mat"], str(teacher_folder)), tmp_path / "small")
    documents = tmp_path / "docs.txt"
    documents.write_text("the zebra cat sat on the mat\na zebra sat on the cat mat\n", encoding="utf-8")
    result = run_cli("extend", tmp_path / "small", "--corpus", documents, "-o", tmp_path / "new")
    assert result.exit_code == 0, result.output
    assert "zebra" in st_static.load_model(tmp_path / "new")[0].vocabulary


def test_extend_refuses_a_table_of_one_word_in_one_line(teacher_folder, tmp_path):
    st_static.save_model(small_table(["cat"], str(teacher_folder)), tmp_path / "one")
    documents = tmp_path / "docs.txt"
    documents.write_text("the cat sat\nthe zebra sat\na zebra on the mat\n", encoding="utf-8")
    result = run_cli("extend", tmp_path / "one", "--corpus", documents, "-o", tmp_path / "new")
    assert_one_error_line(result, "1 word(s)", "at least 2")
    assert not (tmp_path / "new").exists()


# ------------------------------------------------------------------------------------------------ pieces, fallback
@pytest.fixture
def tokenizer_teacher(tmp_path) -> Path:
    """A teacher folder of which pieces reads the tokenizer only."""
    from transformers import PreTrainedTokenizerFast

    folder = tmp_path / "teacher"
    PreTrainedTokenizerFast(tokenizer_object=teacher_like_tokenizer(), unk_token="[UNK]").save_pretrained(folder)
    return folder


def test_pieces_refuses_a_table_of_too_few_words_in_one_line(tokenizer_teacher, tmp_path):
    st_static.save_model(small_table(["the", "cat", "sat", "on", "mat"]), tmp_path / "small")
    result = run_cli("pieces", tmp_path / "small", "-o", tmp_path / "new", "--teacher", tokenizer_teacher)
    assert_one_error_line(result, "at least 10 vocabulary words", "got 5")
    assert not (tmp_path / "new").exists()


def test_fallback_refuses_a_table_of_too_few_words_before_the_teacher(tmp_path):
    st_static.save_model(small_table(["the", "cat", "sat", "on", "mat"]), tmp_path / "small")
    result = run_cli("fallback", tmp_path / "small", "-o", tmp_path / "new", "--teacher", tmp_path / "no-teacher")
    assert_one_error_line(result, "at least 10 vocabulary words", "got 5")  # not the missing teacher: not loaded
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("command", ["pieces", "fallback"])
def test_a_teacher_that_cannot_be_loaded_names_the_teacher_option(command, word_model, tmp_path):
    word_model[0].metadata.teacher = str(tmp_path / "moved-teacher")
    st_static.save_model(word_model, tmp_path / "model")
    recorded = run_cli(command, tmp_path / "model", "-o", tmp_path / "new")
    assert_one_error_line(recorded, "moved-teacher", "metadata.teacher", "give it with --teacher")
    given = run_cli(command, tmp_path / "model", "-o", tmp_path / "new", "--teacher", tmp_path / "nowhere")
    assert_one_error_line(given, f"error: --teacher {tmp_path / 'nowhere'}: ")
    assert not (tmp_path / "new").exists()


# ------------------------------------------------------------------------------------------------ neighbours, dedup
@pytest.mark.parametrize("command", ["neighbours", "dedup"])
@pytest.mark.parametrize("k", ["0", "-3"])
def test_a_k_below_one_is_refused_naming_k_before_any_work(command, k, saved, texts, tmp_path):
    result = run_cli(command, texts, "--model", saved, "-o", tmp_path / "out.parquet", "-k", k)
    assert result.exit_code == 2 and "'-k'" in result.output, result.output
    assert "Embedding" not in result.output and not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("threshold", ["1.5", "-2", "nan", "inf"])
def test_a_threshold_that_is_no_cosine_is_refused_naming_it_before_any_work(threshold, saved, texts, tmp_path):
    result = run_cli("dedup", texts, "--model", saved, "-o", tmp_path / "out.parquet", "--threshold", threshold)
    assert result.exit_code == 2 and "'--threshold'" in result.output, result.output
    assert "Embedding" not in result.output and not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("command", ["neighbours", "dedup"])
def test_a_k_beyond_the_rows_gives_every_other_row_without_allocating_k(command, saved, texts, tmp_path):
    import pyarrow.parquet as pq

    huge = run_cli(command, texts, "--model", saved, "-o", tmp_path / "huge.parquet", "-k", str(10**15))
    assert huge.exit_code == 0, huge.output
    every = run_cli(command, texts, "--model", saved, "-o", tmp_path / "every.parquet", "-k", "6")
    assert every.exit_code == 0, every.output
    assert pq.read_table(tmp_path / "huge.parquet").equals(pq.read_table(tmp_path / "every.parquet"))


@pytest.mark.parametrize("option", ["--column", "--id-column"])
def test_columns_of_a_text_file_are_refused_naming_the_option(option, saved, texts, tmp_path):
    result = run_cli("neighbours", texts, "--model", saved, "-o", tmp_path / "out.parquet", option, "id")
    assert_one_error_line(result, "--column and --id-column", "texts.txt is a text file")
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize(
    ("options", "named"),
    [(["--model", "{model}"], "--model is"), (["--column", "text", "--id-column", "id"], "--column and --id-column")],
)
def test_options_of_text_inputs_are_refused_for_an_embeddings_folder(options, named, saved, texts, tmp_path):
    st_static.embed_files(saved, texts, tmp_path / "vectors", show_progress_bar=False)
    given = [option.format(model=saved) for option in options]
    result = run_cli("dedup", tmp_path / "vectors", "-o", tmp_path / "out.parquet", *given)
    assert_one_error_line(result, "is an embeddings folder", named, "for text inputs")
    assert not (tmp_path / "out.parquet").exists()


# ------------------------------------------------------------------------------------------------ disentangle
@pytest.fixture(scope="module")
def crosslingual(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("crosslingual")
    st_static.save_model(crosslingual_table(), folder / "model")
    write_pairs(folder / "en-de.tsv", translation_pairs())
    return folder


@pytest.mark.parametrize(
    ("pairs", "message"),
    [("missing.tsv", "does not exist"), ("folder", "is not a file"), ("empty.tsv", "is empty")],
)
def test_disentangle_names_a_pair_file_it_cannot_read(pairs, message, crosslingual, tmp_path):
    (tmp_path / "empty.tsv").write_bytes(b"")
    (tmp_path / "folder").mkdir()
    path = tmp_path / pairs
    result = run_cli("disentangle", crosslingual / "model", "--parallel", f"de={path}", "-o", tmp_path / "new")
    assert_one_error_line(result, f"--parallel de={path}: ", message)
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--keep-sources", "forum"], "has an aligned FILE-STEM.source.txt"),  # a filter that chooses nothing
        (["--leave-out-sources", "forum"], "has an aligned FILE-STEM.source.txt"),
        (["--keep-sources", ","], "--keep-sources ',' names no source glob"),
        (["--language-weight", "-1"], "--language-weight must be a finite number >= 0, got -1.0"),  # out of range
        (["--language-weight", "nan"], "--language-weight must be a finite number >= 0, got nan"),
        (["--language-weight", "inf"], "--language-weight must be a finite number >= 0, got inf"),
        (["--constraints", "all"], "--constraints must be one of intra, inter, both"),
    ],
)
def test_disentangle_refuses_settings_it_cannot_use_naming_their_option(options, message, crosslingual, tmp_path):
    pairs = f"de={crosslingual / 'en-de.tsv'}"
    result = run_cli("disentangle", crosslingual / "model", "--parallel", pairs, "-o", tmp_path / "new", *options)
    assert_one_error_line(result, message)
    assert not (tmp_path / "new").exists()
