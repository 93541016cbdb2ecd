"""Ensembles with members that are not st-static tables: model2vec folders, StaticEmbedding folders, WordLlama."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
from typer.testing import CliRunner

from st_static.cli import app
from st_static.compression import BlockNormalize, ensemble, fold_block_normalization, read_member
from st_static.compression.members import TokenTable, cosine_agreement, read_token_table
from st_static.errors import ModelFolderError
from st_static.model.save_load import load_model, save_model
from st_static.model.static_word_average import StaticWordAverage
from st_static.model.tokenization import split_words

from .conftest import ADVERSARIAL_TEXTS, FALLBACK_CHARACTERS, with_fallback
from .teachers import TINY_CORPUS

# Words of the corpus lines and of the adversarial texts, as the tables split them: the st-static member knows them
# all, so the ensemble cuts every text at the same word boundaries as the WordPiece members do.
CORPUS_WORDS = sorted({word for line in TINY_CORPUS for word in line.split()})
ADVERSARIAL_WORDS = sorted(
    {word.lower() for text in ADVERSARIAL_TEXTS for word in split_words(text)}
    - set(CORPUS_WORDS)
    - set(FALLBACK_CHARACTERS)
)
SYMBOLS = list(".,!?;:'\"-()")


# Texts a BERT pre-tokenizer keeps as one word where the ensemble's tokenizer cuts them (an emoji or a zero-width
# space between letters), so the member reads one [UNK] where the ensemble reads two known words; and, for a
# StaticEmbedding (which averages [UNK] in), a word over 100 characters that WordPiece reads as [UNK].
ONE_WORD_FOR_BERT = {"hello😀world", "\u200b\u200bzero\u200bwidth"}
UNK_FOR_STATIC_EMBEDDING = {"a" * 500}


def corpus_lines(count: int = 1000, seed: int = 0) -> list[str]:
    """``count`` lines of 3-12 corpus words with punctuation between some of them."""
    generator = random.Random(seed)
    lines = []
    for _ in range(count):
        words = generator.choices(CORPUS_WORDS, k=generator.randint(3, 12))
        text = " ".join(word + (generator.choice(SYMBOLS) if generator.random() < 0.2 else "") for word in words)
        lines.append(text[0].upper() + text[1:] if generator.random() < 0.5 else text)
    return lines


def wordpiece_tokenizer() -> Tokenizer:
    """A BERT-style WordPiece tokenizer (lowercase, accents stripped) over part of the corpus words, with pieces."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *CORPUS_WORDS[::2], "token", "##isation", "##s", *SYMBOLS]
    vocab += [chr(code) for code in range(ord("a"), ord("z") + 1)] + [str(digit) for digit in range(10)]
    vocab += ["##" + chr(code) for code in range(ord("a"), ord("z") + 1)] + [f"##{digit}" for digit in range(10)]
    vocab = list(dict.fromkeys(vocab))
    tokenizer = Tokenizer(models.WordPiece({token: index for index, token in enumerate(vocab)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tokenizer


@pytest.fixture
def table_member() -> SentenceTransformer:
    words = [*CORPUS_WORDS, *ADVERSARIAL_WORDS]
    vectors = np.random.default_rng(3).standard_normal((len(words), 12)).astype(np.float32)
    module = with_fallback(StaticWordAverage.from_word_vectors(words, vectors))
    return SentenceTransformer(modules=[module, Normalize()], device="cpu")


@pytest.fixture
def model2vec_folder(tmp_path: Path) -> Path:
    from model2vec import StaticModel

    tokenizer = wordpiece_tokenizer()
    vectors = np.random.default_rng(4).standard_normal((tokenizer.get_vocab_size(), 6)).astype(np.float32)
    StaticModel(vectors, tokenizer, normalize=True).save_pretrained(str(tmp_path / "m2v"))
    return tmp_path / "m2v"


@pytest.fixture
def static_embedding_folder(tmp_path: Path) -> Path:
    tokenizer = wordpiece_tokenizer()
    vectors = np.random.default_rng(5).standard_normal((tokenizer.get_vocab_size(), 7)).astype(np.float32)
    module = StaticEmbedding(tokenizer, embedding_weights=vectors)
    SentenceTransformer(modules=[module, Normalize()], device="cpu").save(str(tmp_path / "static"))
    return tmp_path / "static"


def blocks(model: SentenceTransformer, texts: list[str]) -> list[np.ndarray]:
    """Each member's block of the averaged (not yet normalised) vectors."""
    raw = SentenceTransformer(modules=[model[0]], device="cpu").encode(texts, batch_size=1024)
    edges = np.cumsum([0, *model[1].block_dims])
    return [raw[:, start:end] for start, end in itertools.pairwise(edges)]


def test_folders_are_read_as_their_own_library_reads_them(model2vec_folder, static_embedding_folder):
    m2v = read_member(str(model2vec_folder))
    static = read_member(str(static_embedding_folder))
    assert isinstance(m2v, TokenTable) and m2v.kind == "model2vec"
    assert isinstance(static, TokenTable) and static.kind == "static-embedding"
    assert m2v.dropped_ids == {1}  # model2vec leaves [UNK] out of the mean; a StaticEmbedding averages it in
    assert static.dropped_ids == frozenset()


def test_a_model2vec_members_block_is_its_own_encode(table_member, model2vec_folder):
    from model2vec import StaticModel

    combined = ensemble([table_member, read_member(str(model2vec_folder))], names=["table", "m2v"])
    texts = corpus_lines() + ADVERSARIAL_TEXTS
    own = StaticModel.from_pretrained(str(model2vec_folder)).encode(texts, max_length=None, normalize=False)
    agreement = cosine_agreement(blocks(combined, texts)[1], own)
    assert {texts[index] for index in np.flatnonzero(agreement < 0.9999)} == ONE_WORD_FOR_BERT


def test_a_static_embedding_members_block_is_its_own_encode(table_member, static_embedding_folder):
    combined = ensemble([table_member, read_member(str(static_embedding_folder))])
    texts = corpus_lines() + [text for text in ADVERSARIAL_TEXTS if "😀" not in text]  # 😀 reads [UNK], averaged in
    own = SentenceTransformer(str(static_embedding_folder), device="cpu")
    agreement = cosine_agreement(blocks(combined, texts)[1], own.encode(texts, normalize_embeddings=False))
    differing = {texts[index] for index in np.flatnonzero(agreement < 0.9999)}
    assert differing == (ONE_WORD_FOR_BERT | UNK_FOR_STATIC_EMBEDDING) - {"hello😀world"}


def test_the_st_static_members_block_is_its_own_encode(table_member, model2vec_folder):
    combined = ensemble([table_member, read_member(str(model2vec_folder))])
    texts = corpus_lines() + ADVERSARIAL_TEXTS
    own = SentenceTransformer(modules=[table_member[0]], device="cpu").encode(texts)
    assert cosine_agreement(blocks(combined, texts)[0], own).min() >= 0.9999


def test_a_mixed_ensemble_saves_loads_and_folds_for_a_bare_load(table_member, model2vec_folder, tmp_path):
    combined = ensemble([table_member, read_member(str(model2vec_folder))], [2.0, 1.0], names=["table", "m2v"])
    save_model(combined, tmp_path / "exact")
    reloaded = load_model(tmp_path / "exact")
    assert isinstance(reloaded[1], BlockNormalize)
    record = reloaded[0].metadata.ensemble
    assert [member.kind for member in record.members] == ["st-static", "model2vec"]
    assert [member.name for member in record.members] == ["table", "m2v"]
    texts = corpus_lines(50)
    np.testing.assert_allclose(reloaded.encode(texts), combined.encode(texts), atol=1e-6)

    folded = fold_block_normalization(combined, corpus_lines(200, seed=1))
    save_model(folded, tmp_path / "folded")
    bare = SentenceTransformer(str(tmp_path / "folded"), device="cpu")
    np.testing.assert_allclose(bare.encode(texts), folded.encode(texts), atol=1e-6)
    exact = combined.encode(texts)
    cosines = (bare.encode(texts) * exact).sum(1) / np.linalg.norm(exact, axis=1)
    assert cosines.mean() > 0.95  # per-text block norms replaced by their mean: close, not equal


def test_reading_foreign_folders_refuses_what_is_not_a_static_model(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelFolderError, match="not a static model folder"):
        read_token_table(str(tmp_path / "empty"))
    (tmp_path / "transformer").mkdir()
    (tmp_path / "transformer" / "modules.json").write_text(
        json.dumps([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}])
    )
    with pytest.raises(ModelFolderError, match="not a static table"):
        read_token_table(str(tmp_path / "transformer"))
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ModelFolderError, match="not a file"):
        read_member(str(tmp_path / "file.txt"))
    with pytest.raises(ValueError, match="wordllama:CONFIG:DIM"):
        read_member("wordllama:l2_supercat")


def test_wordllama_members_read_the_packaged_table():
    pytest.importorskip("wordllama")
    member = read_member("wordllama:l2_supercat:256")
    assert member.kind == "wordllama" and member.embedding_dim == 256 and member.license == "mit"
    assert member.words == []  # its ▁ tokens are word beginnings, not keys of the union
    words = ["the", "cat", "tokenisation"]  # one word alone: the sum of its rows has the direction of their mean
    np.testing.assert_allclose(cosine_agreement(member.word_rows(words), member.encode(words)), 1.0, atol=1e-6)
    with pytest.raises(ModelFolderError, match="holds no such table"):
        read_member("wordllama:l2_supercat:64")


def test_cli_compress_takes_foreign_members(table_member, model2vec_folder, tmp_path):
    save_model(table_member, tmp_path / "table")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(100)) + "\n", encoding="utf-8")
    members = [str(tmp_path / "table"), str(model2vec_folder)]
    result = CliRunner().invoke(
        app, ["compress", *members, "--weights", "2,1", "-o", str(tmp_path / "out"), "--fold-norms", str(corpus)]
    )
    assert result.exit_code == 0, result.output
    record = load_model(tmp_path / "out")[0].metadata.ensemble
    assert record.block_weights == [2.0, 1.0] and record.folded is not None
    assert [member.kind for member in record.members] == ["st-static", "model2vec"]
    assert [member.name for member in record.members] == ["table", "m2v"]  # folder names, never machine paths


def test_a_fallback_character_that_reads_another_members_word_gets_no_row_of_its_own():
    rng = np.random.default_rng(6)
    cased = ["\u0432", "Paris", "house"]  # Cyrillic ve; "Paris": the union keeps case
    words = SentenceTransformer(
        modules=[StaticWordAverage.from_word_vectors(cased, rng.standard_normal((3, 5)).astype(np.float32))],
        device="cpu",
    )
    symbols = with_fallback(
        StaticWordAverage.from_word_vectors(["Paris", "tree"], rng.standard_normal((2, 4)).astype(np.float32)),
        characters=["\u0412", "?"],
    )
    combined = ensemble([words, SentenceTransformer(modules=[symbols], device="cpu")], names=["words", "symbols"])
    assert "\u0412" not in combined[0].fallback_characters and "?" in combined[0].fallback_characters
    own = words.encode(["\u0432"])
    assert cosine_agreement(blocks(combined, ["\u0412"])[0], own).min() >= 0.9999  # capital reads small
    assert np.isfinite(combined.encode(["\u0412 ?", "?"])).all()


def test_a_lowercase_member_in_a_union_that_keeps_case_is_named_in_a_warning(table_member, caplog):
    cased = StaticWordAverage.from_word_vectors(["Paris", "house"], np.ones((2, 3), dtype=np.float32))
    with caplog.at_level("WARNING", logger="st_static.compression.ensemble"):
        members = [table_member, SentenceTransformer(modules=[cased], device="cpu")]
        combined = ensemble(members, names=["lower", "cased"])
    assert "lower lowercase every word" in caplog.text and "iPhone" in caplog.text
    assert not combined[0].lowercase  # "Paris" keeps its case: the union does
    caplog.clear()
    with caplog.at_level("WARNING", logger="st_static.compression.ensemble"):
        ensemble([table_member, table_member], names=["a", "b"])
    assert "lowercase every word" not in caplog.text  # all lowercase: the union lowercases too


def test_whether_a_foreign_member_reads_case_comes_from_its_rows_not_its_normalizer(model2vec_folder, tmp_path):
    from model2vec import StaticModel

    from st_static.compression.ensemble import reads_case
    from st_static.compression.members import member_reader

    assert not reads_case(member_reader(read_member(str(model2vec_folder)), "lowercasing normalizer"))
    vocab = ["[UNK]", "[PAD]", "The", "the", "Paris", "paris", "iPhone", "iphone", "NASA", "nasa"]
    cased = Tokenizer(models.WordLevel({token: index for index, token in enumerate(vocab)}, unk_token="[UNK]"))
    cased.pre_tokenizer = pre_tokenizers.Whitespace()
    vectors = np.random.default_rng(7).standard_normal((len(vocab), 4)).astype(np.float32)
    StaticModel(vectors, cased, normalize=True).save_pretrained(str(tmp_path / "cased"))
    assert reads_case(member_reader(read_member(str(tmp_path / "cased")), "cased"))
    vectors[2::2] = vectors[3::2]  # every cased word reads its lowercase form's row: case-blind in effect
    StaticModel(vectors, cased, normalize=True).save_pretrained(str(tmp_path / "same-rows"))
    assert not reads_case(member_reader(read_member(str(tmp_path / "same-rows")), "same rows"))


def _rewrite_tensors(path: Path, **changes: np.ndarray) -> None:
    """Replace or add tensors of the safetensors file ``path``."""
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(path))
    tensors.update(changes)
    save_file(tensors, str(path))


def _broken_model2vec(folder: Path, how: str) -> None:
    """Break the model2vec folder ``folder`` in one way: its table's bytes, mapping, weights or values, or its
    modules.json (left as the only sign of the model's kind)."""
    table = folder / "model.safetensors"
    rows = wordpiece_tokenizer().get_vocab_size()
    if how == "garbage":
        table.write_bytes(b"\x00" * 7)
    elif how == "mapping":
        _rewrite_tensors(table, mapping=np.full(rows, 10**6, dtype=np.int32))
    elif how == "weights":
        _rewrite_tensors(table, weights=np.ones(3, dtype=np.float32))
    elif how == "nan":
        _rewrite_tensors(table, embeddings=np.full((rows, 6), np.nan, dtype=np.float32))
    elif how == "modules":
        (folder / "config.json").unlink()
        table.unlink()
        (folder / "modules.json").write_text("{", encoding="utf-8")


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("garbage", "not a readable safetensors file"),
        ("mapping", "mapping"),
        ("weights", "weights"),
        ("nan", "NaN or infinite"),
        ("modules", "modules.json"),
    ],
)
def test_a_corrupt_foreign_member_is_refused_naming_its_folder(table_member, model2vec_folder, tmp_path, how, message):
    """Each went out as a traceback (safetensors' own error, numpy's IndexError) or a line naming no file."""
    _broken_model2vec(model2vec_folder, how)
    with pytest.raises(ModelFolderError, match=message) as error:
        read_member(str(model2vec_folder))
    assert str(model2vec_folder) in str(error.value)
    save_model(table_member, tmp_path / "table")
    members = [str(tmp_path / "table"), str(model2vec_folder)]
    result = CliRunner().invoke(app, ["compress", *members, "-o", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert result.output.startswith("error: ") and message in result.output
    assert not (tmp_path / "out").exists()
