"""``st-static extend`` (issue 53, item 3): rows for the words of a user's documents that a table lacks, every row it
had unchanged, the same vectors through every load path, and bad input refused before the teacher runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from typer.testing import CliRunner

import st_static
from st_static.cli import app
from st_static.compression.quantization import quantize
from st_static.extraction.corpus import CorpusError
from st_static.extraction.extend import count_document_words, document_sentences, document_words
from st_static.extraction.pieces import add_piece_rows
from st_static.model.tokenization import add_words, addable_words, build_word_tokenizer
from st_static.teachers import TeacherError

from .conftest import ADVERSARIAL_TEXTS, FALLBACK_TEXTS, with_fallback
from .teachers import TINY_CORPUS
from .test_pieces import morphology_model

TABLE_WORDS = list(dict.fromkeys(word for sentence in TINY_CORPUS for word in sentence.split()))
TABLE_WORDS += ["token", "piece", "friend", "word", "hello", "world"]
DOCUMENTS = [
    *TINY_CORPUS,
    "the zebra sat on the mat. a quokka was red!",
    "the old zebra and the young quokka",
    "zebra zebra on a log in 2024, 2024 and 2024",
    "a wombat was old",
]
NEW_WORDS = ["zebra", "quokka"]
"""The words of :data:`DOCUMENTS` the table lacks that occur at least twice (``2024`` is a number)."""
TEXTS = ["the zebra sat", "a quokka and a dog", "Zebra!", "the cat sat on the mat", *FALLBACK_TEXTS]


@pytest.fixture(scope="module")
def teacher(teacher_folder) -> SentenceTransformer:
    return SentenceTransformer(str(teacher_folder), device="cpu")


@pytest.fixture
def table(teacher, teacher_folder) -> SentenceTransformer:
    vectors = np.random.default_rng(0).standard_normal((len(TABLE_WORDS), 8)).astype(np.float32)
    metadata = {"teacher": str(teacher_folder), "prompt": "", "languages": ["en"], "vocab_size": len(TABLE_WORDS)}
    module = st_static.StaticWordAverage.from_word_vectors(
        TABLE_WORDS, vectors, teacher_tokenizer=teacher[0].tokenizer, metadata=metadata
    )
    return SentenceTransformer(modules=[module, Normalize()], device="cpu")


@pytest.fixture
def documents(tmp_path) -> Path:
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(DOCUMENTS) + "\n", encoding="utf-8")
    return path


def rows_of(module: st_static.StaticWordAverage) -> dict[str, torch.Tensor]:
    """Each vocabulary word's row and each fallback row, by word (fallback rows by their character)."""
    table = module.word_vectors.detach()
    rows = {word: table[row] for row, word in enumerate(module.vocabulary)}
    rows.update({"##" + piece: table[row] for row, piece in zip(module.piece_rows, module.pieces, strict=True)})
    if module.fallback is not None:
        rows["<empty>"] = table[module.fallback.sentinel_row]
        for row, character in zip(module.fallback.character_rows, module.fallback_characters, strict=True):
            rows[character] = table[row]
    return rows


def assert_rows_kept(before: st_static.StaticWordAverage, after: st_static.StaticWordAverage) -> None:
    old, new = rows_of(before), rows_of(after)
    for key, row in old.items():
        assert torch.equal(new[key], row), key  # bit for bit


# ------------------------------------------------------------------------------------------------ the tokenizer
def test_adding_no_words_gives_the_same_tokenizer(word_module, fallback_module):
    for module in (word_module, fallback_module):
        assert json.loads(add_words(module.tokenizer, []).to_str()) == json.loads(module.tokenizer.to_str())


def test_added_words_go_before_the_fallback_rows_and_other_texts_read_the_same_rows(fallback_module):
    words = addable_words(fallback_module.tokenizer, ["zebra", "the", "zebra", "Big", "東京", "a b", "п"])
    assert words == ["zebra"]  # known, repeated, not lowercase, space-less, two words, a fallback character
    extended = fallback_module.with_words(words, np.ones((1, fallback_module.embedding_dim), dtype=np.float32))
    assert extended.vocabulary == [*fallback_module.vocabulary, "zebra"]
    assert extended.fallback.sentinel_row == fallback_module.fallback.sentinel_row + 1
    assert_rows_kept(fallback_module, extended)
    texts = [text for text in ADVERSARIAL_TEXTS if "zebra" not in text.lower()]
    np.testing.assert_array_equal(st_static.encode(extended, texts), st_static.encode(fallback_module, texts))
    with pytest.raises(ValueError, match="cannot be added"):
        fallback_module.with_words(["the"], np.ones((1, fallback_module.embedding_dim), dtype=np.float32))


def test_added_words_go_before_the_pieces(tmp_path):
    model, _ = morphology_model()
    pieces_model, _ = add_piece_rows(SentenceTransformer(modules=[with_fallback(model[0]), Normalize()]))
    module = pieces_model[0]
    assert json.loads(add_words(module.tokenizer, []).to_str()) == json.loads(module.tokenizer.to_str())
    extended = module.with_words(["zebra"], np.ones((1, module.embedding_dim), dtype=np.float32))
    assert extended.vocabulary == [*module.vocabulary, "zebra"] and extended.pieces == module.pieces
    assert extended.piece_rows.start == module.piece_rows.start + 1
    assert_rows_kept(module, extended)
    texts = ["painted cooks", "zebra", "zebras", "repainting?", *ADVERSARIAL_TEXTS]
    vectors = st_static.encode(extended, texts)
    st_static.save_model(SentenceTransformer(modules=[extended, Normalize()]), tmp_path / "model")
    np.testing.assert_allclose(SentenceTransformer(str(tmp_path / "model")).encode(texts), vectors, atol=1e-6)
    np.testing.assert_array_equal(vectors[[0, 3]], st_static.encode(module, [texts[0], texts[3]]))
    np.testing.assert_allclose(vectors[1], np.ones(module.embedding_dim) / module.embedding_dim**0.5, rtol=1e-5)


def test_a_case_sensitive_table_reads_a_new_words_case_variants():
    module = st_static.StaticWordAverage(
        build_word_tokenizer(["Berlin", "apple"], lowercase=False), np.eye(2, dtype=np.float32)
    )
    extended = module.with_words(["zebra"], np.full((1, 2), 3.0, dtype=np.float32))
    vectors = st_static.encode(extended, ["zebra", "Zebra", "ZEBRA", "Apple", "berlin"], normalize=False)
    np.testing.assert_array_equal(vectors[:3], np.full((3, 2), 3.0))
    np.testing.assert_array_equal(vectors[3], [0.0, 1.0])
    np.testing.assert_array_equal(vectors[4], [0.0, 0.0])  # case variants of upper-case words: none, as before


# ------------------------------------------------------------------------------------------------ the words
def test_the_documents_words_are_split_as_the_table_splits_them(table):
    counts = count_document_words(["Zebra, ZEBRA's zebra", "café 2024"], lowercase=True)
    # A table with fallback rows reads NFKC: a full-width word is counted as the word it reads as.
    full_width_zebra = "".join(chr(ord(char) + 0xFEE0) for char in "Zebra")
    assert count_document_words([full_width_zebra], lowercase=True, form="NFKC") == {"zebra": 1}
    assert count_document_words([full_width_zebra], lowercase=True) != {"zebra": 1}
    assert counts == {"zebra": 3, "s": 1, "café": 1, "2024": 1}
    words = document_words(table[0], count_document_words(DOCUMENTS, lowercase=True), min_count=2)
    assert words.new == NEW_WORDS and "the" in words.known
    with_numbers = document_words(table[0], count_document_words(DOCUMENTS, lowercase=True), numbers=True)
    assert set(with_numbers.new) == {"2024", *NEW_WORDS}
    once = document_words(table[0], count_document_words(DOCUMENTS, lowercase=True), min_count=1)
    assert "wombat" in once.new and "in" in once.new


def test_long_documents_are_cut_into_sentences():
    sentences = document_sentences(["One two. Three four! " + " ".join(["word"] * 70)], max_words=64)
    assert sentences[:2] == ["One two.", "Three four!"]
    assert [len(sentence.split()) for sentence in sentences[2:]] == [32, 32, 6]


# ------------------------------------------------------------------------------------------------ extend
def test_new_words_get_rows_and_every_row_stays(table, documents, teacher):
    extended = st_static.extend(table, documents, teacher)
    before, module = table[0], extended[0]
    assert module.vocabulary == [*before.vocabulary, *NEW_WORDS]
    assert_rows_kept(before, module)
    new_rows = module.word_vectors.detach()[len(TABLE_WORDS) :].numpy()
    assert np.isfinite(new_rows).all() and (np.linalg.norm(new_rows, axis=1) > 0).all()
    metadata = module.metadata
    assert metadata.vocab_size == len(TABLE_WORDS) + 2 and metadata.stages == ["extend"]
    (record,) = metadata.extend
    assert record.words == 2 and record.files == ["docs.txt"] and record.min_count == 2
    assert before.metadata.extend is None  # the input model is left as it was
    again = st_static.extend(extended, documents, teacher, min_count=1)  # adds the words seen once, records both
    assert "wombat" in again[0].vocabulary and [entry.words for entry in again[0].metadata.extend][:1] == [2]
    assert_rows_kept(module, again[0])


def test_the_extended_model_saves_and_loads_alike_on_every_path(table, documents, teacher, tmp_path):
    extended = st_static.extend(with_fallback_table(table), documents, teacher)
    assert extended[0].fallback is not None
    folder = tmp_path / "extended"
    st_static.save_model(extended, folder)
    expected = st_static.encode(extended, TEXTS)
    assert np.linalg.norm(expected[:3], axis=1).min() > 0.99  # the new words read their rows
    loaded = st_static.load_model(folder)
    assert_rows_kept(extended[0], loaded[0])
    # model.encode adds the empty text's bias: ~1e-5 of a fallback row on a tiny table (st_static.model.empty_text)
    np.testing.assert_allclose(loaded.encode(TEXTS), expected, atol=1e-5)
    np.testing.assert_allclose(SentenceTransformer(str(folder), device="cpu").encode(TEXTS), expected, atol=1e-5)
    pytest.importorskip("model2vec")
    from model2vec import StaticModel

    np.testing.assert_allclose(StaticModel.from_pretrained(str(folder)).encode(TEXTS[:4]), expected[:4], atol=1e-6)
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "2 words of `docs.txt`" in card


def with_fallback_table(table: SentenceTransformer) -> SentenceTransformer:
    return SentenceTransformer(modules=[with_fallback(table[0]), Normalize()], device="cpu")


def test_a_float16_table_stays_float16_with_its_rows(table, documents, teacher, tmp_path):
    compact = quantize(table, "float16")
    extended = st_static.extend(compact, documents, teacher)
    assert extended[0].metadata.quantization == "float16"
    assert_rows_kept(compact[0], extended[0])
    st_static.save_model(extended, tmp_path / "half")
    assert_rows_kept(compact[0], st_static.load_model(tmp_path / "half")[0])


# ------------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "does not exist"), (b"", "is empty"), (b"\xff\xfe\x00\x01" * 40 + b"\n", "UTF-16|not valid UTF-8")],
)
def test_unreadable_documents_are_refused_before_the_teacher(table, tmp_path, content, message):
    path = tmp_path / "docs.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(CorpusError, match=message):
        st_static.extend(table, path, teacher="/no/such/teacher")


def test_a_table_without_a_recorded_teacher_needs_one(table, documents):
    table[0].metadata.teacher = None
    with pytest.raises(TeacherError, match="--teacher"):
        st_static.extend(table, documents)


def test_word_counts_stay_aligned_with_the_rows(table, documents, teacher):
    table[0].metadata.word_counts = [float(100 - row) for row in range(len(TABLE_WORDS))]
    extended = st_static.extend(table, documents, teacher)
    assert extended[0].metadata.word_counts[: len(TABLE_WORDS)] == table[0].metadata.word_counts
    assert extended[0].metadata.word_counts[len(TABLE_WORDS) :] == [4.0, 2.0]  # zebra, quokka: their occurrences


def test_documents_without_new_words_are_refused_before_the_teacher(table):
    with pytest.raises(CorpusError, match="nothing to add"):
        st_static.extend(table, TINY_CORPUS, teacher="/no/such/teacher")
    with pytest.raises(CorpusError, match="nothing to add"):
        st_static.extend(table, ["wombat once, 2024 and 2024"], teacher="/no/such/teacher")


def test_the_command_writes_the_extended_model(table, documents, tmp_path):
    st_static.save_model(table, tmp_path / "model")
    result = CliRunner().invoke(
        app, ["extend", str(tmp_path / "model"), "--corpus", str(documents), "--out", str(tmp_path / "new")]
    )
    assert result.exit_code == 0, result.output
    assert "added 2 words from docs.txt (seen 2+ times): zebra, quokka\n" in result.output  # which, most frequent first
    assert st_static.load_model(tmp_path / "new")[0].vocabulary[-2:] == NEW_WORDS


def test_the_command_names_the_first_words_added_and_counts_the_rest():
    from st_static.cli.extend import word_list

    words = [f"w{index}" for index in range(14)]
    assert word_list(words) == "w0, w1, w2, w3, w4, w5, w6, w7, w8, w9, w10, w11, ... (+2 more)"
    assert word_list(words[:12]) == ", ".join(words[:12])
    assert word_list(["zebra"]) == "zebra"


def test_a_recorded_teacher_that_cannot_be_loaded_names_the_teacher_option(table, documents, tmp_path):
    table[0].metadata.teacher = str(tmp_path / "moved-teacher")
    st_static.save_model(table, tmp_path / "model")
    command = ["extend", str(tmp_path / "model"), "--corpus", str(documents), "--out", str(tmp_path / "new")]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 1 and result.output.startswith("error: Cannot load the teacher"), result.output
    assert "the teacher the table records (metadata.teacher)" in result.output
    assert "give it with --teacher" in result.output and "--teacher DIR, its folder on this machine" in result.output
    assert not (tmp_path / "new").exists()
    given = CliRunner().invoke(app, [*command, "--teacher", str(tmp_path / "nowhere")])
    assert given.exit_code == 1 and given.output.startswith(f"error: --teacher {tmp_path / 'nowhere'}: Cannot load")


def test_a_recorded_hub_teacher_that_is_not_here_says_how_to_give_a_copy(table, documents, monkeypatch):
    import st_static.extraction.teacher_model as teacher_model

    def unavailable(name, **_):
        raise TeacherError(f"Cannot load the teacher {name}: not in the cache and no Hub.")

    monkeypatch.setattr(teacher_model, "load_teacher", unavailable)
    table[0].metadata.teacher = "someone/teacher-model"
    with pytest.raises(TeacherError) as raised:
        st_static.extend(table, documents)
    message = str(raised.value)
    assert "give it with --teacher" in message
    assert "--teacher DIR, a copy fetched where the Hub can be reached (hf download someone/teacher-model" in message


def test_chinese_documents_for_an_english_table_name_what_extend_takes(table, tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("我们今天去北京看朋友\n他们明天在上海工作\n" * 5, encoding="utf-8")
    st_static.save_model(table, tmp_path / "model")
    result = CliRunner().invoke(
        app, ["extend", str(tmp_path / "model"), "--corpus", str(path), "--out", str(tmp_path / "new")]
    )
    assert result.exit_code == 1, result.output
    assert "give documents in English (--corpus), or extend a table built for Chinese" in result.output
    assert "(st-static build --languages zh)" in result.output
    assert "pass --languages" not in result.output  # extend has no --languages
    assert "--languages" not in options_of("extend")


def options_of(command: str) -> set[str]:
    import typer

    click_command = typer.main.get_command(app).commands[command]
    return {name for parameter in click_command.params for name in (*parameter.opts, *parameter.secondary_opts)}


@pytest.mark.parametrize("where", ["model", "docs", "system"])
def test_the_command_refuses_an_output_that_is_an_input_or_a_system_folder(table, documents, tmp_path, where):
    st_static.save_model(table, tmp_path / "model")
    before = sorted(tmp_path.rglob("*"))
    out = {"model": tmp_path / "model", "docs": tmp_path, "system": Path("/usr")}[where]
    result = CliRunner().invoke(app, ["extend", str(tmp_path / "model"), "--corpus", str(documents), "--out", str(out)])
    assert result.exit_code == 1 and result.output.startswith("error:"), result.output
    assert sorted(tmp_path.rglob("*")) == before  # nothing written, nothing staged
