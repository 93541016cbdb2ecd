"""Subword pieces (issue 53): a word the table lacks reads its longest known prefix and its pieces' rows; known words
keep their vectors; every path (st_static.encode, model.encode, a bare load, load_model, model2vec) agrees."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from tokenizers import Tokenizer, models
from typer.testing import CliRunner

import st_static
from st_static.cli import app
from st_static.compression import prune_vocabulary, quantize
from st_static.extraction.pieces import add_piece_rows, candidate_pieces, teacher_pieces
from st_static.model.tokenization import (
    DROPPED,
    add_piece_layout,
    is_piece,
    pieces_of,
    remove_piece_layout,
    token_targets,
)
from st_static.settings import STORAGE_FORMATS as SETTINGS_STORAGE_FORMATS

from .conftest import ADVERSARIAL_TEXTS, teacher_like_tokenizer, with_fallback
from .test_fallback import random_texts

STEMS = ["play", "walk", "jump", "talk", "look", "work", "call", "cook", "clean", "open", "mark", "paint"]
SUFFIXES = ["", "s", "ed", "ing", "er"]
LETTERS = [chr(code) for code in range(ord("a"), ord("z") + 1)]


def morphology_model(
    seed: int = 0, held_out: tuple[str, ...] = ()
) -> tuple[SentenceTransformer, dict[str, np.ndarray]]:
    """A table whose word rows are sums of a stem's and a suffix's vector (plus a little noise): pieces can learn it.

    Returns the model and every word's true row (also the words left out of the table, ``held_out``).
    """
    rng = np.random.default_rng(seed)
    dim = 16
    stems = {stem: rng.standard_normal(dim) for stem in STEMS}
    suffixes = {suffix: rng.standard_normal(dim) * (0.0 if suffix == "" else 0.7) for suffix in SUFFIXES}
    truth = {
        stem + suffix: stems[stem] + suffixes[suffix] + 0.05 * rng.standard_normal(dim)
        for stem in STEMS
        for suffix in SUFFIXES
    }
    words = [word for word in truth if word not in held_out] + LETTERS
    vectors = np.stack([truth.get(word, rng.standard_normal(dim)) for word in words]).astype(np.float32)
    module = st_static.StaticWordAverage.from_word_vectors(words, vectors, teacher_tokenizer=teacher_like_tokenizer())
    return SentenceTransformer(modules=[module, Normalize()], device="cpu"), truth


@pytest.fixture
def pieces_model() -> SentenceTransformer:
    model, _ = morphology_model()
    with_pieces, _ = add_piece_rows(model, pieces=["ed", "ing", "er", *LETTERS])
    return with_pieces


def test_an_unknown_word_reads_its_prefix_and_its_pieces():
    model, _ = morphology_model(held_out=("painted",))
    with_pieces, _ = add_piece_rows(model, pieces=["ed", "ing", "er", *LETTERS])
    tokens = with_pieces[0].tokenizer.encode("painted").tokens
    assert tokens == ["paint", "##ed"]
    before, after = st_static.encode(model, ["painted"]), st_static.encode(with_pieces, ["painted"])
    prefix_only = st_static.encode(model, ["paint"])
    assert np.allclose(before, prefix_only)  # the prefix rule: "painted" read as "paint"
    assert not np.allclose(after, prefix_only)


def test_pieces_predict_held_out_words_better_than_their_prefix():
    held_out = ("painted", "marking", "cooks", "talker", "opened", "jumping")
    model, truth = morphology_model(held_out=held_out)
    with_pieces, report = add_piece_rows(model, pieces=["ed", "ing", "er", *LETTERS])
    target = np.stack([truth[word] for word in held_out])
    target /= np.linalg.norm(target, axis=1, keepdims=True)
    before = (st_static.encode(model, list(held_out)) * target).sum(axis=1)
    after = (st_static.encode(with_pieces, list(held_out)) * target).sum(axis=1)
    assert after.mean() > before.mean() + 0.05
    assert report["fitted_on"] > 0 and 0 < report["pieces"] <= report["candidates"]


def test_a_piece_no_word_uses_gets_no_row_and_the_other_rows_do_not_move():
    model, _ = morphology_model(held_out=("painted",))
    used = ["ed", "ing", "er", *LETTERS]
    with_unused, report = add_piece_rows(model, pieces=["edx", "ingq", *used])  # no word is cut into these two
    without, _ = add_piece_rows(model, pieces=used)
    assert report["candidates"] == len(used) + 2 and with_unused[0].pieces == without[0].pieces
    assert "##edx" not in with_unused[0].tokenizer.get_vocab()
    assert torch.equal(with_unused[0].word_vectors, without[0].word_vectors)
    assert with_unused[0].metadata.pieces.pieces == with_unused[0].metadata.pieces.used == with_unused[0].num_piece_rows
    # An unknown word that would have matched the unused piece reads the shorter, fitted ones instead.
    assert with_unused[0].tokenizer.encode("paintedx").tokens == ["paint", "##ed", "##x"]


def test_known_words_keep_exactly_their_vectors(pieces_model):
    model, _ = morphology_model()
    texts = ["play walks jumping", "cook cleaner", "a b c", "paint"]
    assert np.array_equal(st_static.encode(model, texts), st_static.encode(pieces_model, texts))
    assert torch.equal(model[0].word_vectors[: model[0].num_words], pieces_model[0].word_vectors[: model[0].num_words])


def test_every_path_reads_the_same_pieces(pieces_model, tmp_path):
    from model2vec import StaticModel

    texts = ["paintings walkers", "the playeds talkinger", "zzz qqq", "Painted, JUMPERS!", "", "cafés jumpé"]
    texts += random_texts(200, seed=3, ascii_only=True) + ADVERSARIAL_TEXTS[:15]
    expected = pieces_model.encode(texts, convert_to_numpy=True)
    assert np.allclose(st_static.encode(pieces_model, texts), expected, atol=1e-6)
    for text in texts[:40]:  # one text at a time: the single-text fast path
        assert np.allclose(st_static.encode(pieces_model, [text]), pieces_model.encode([text]), atol=1e-6)
    st_static.save_model(pieces_model, tmp_path / "m")
    bare = SentenceTransformer(str(tmp_path / "m"), device="cpu")
    assert np.allclose(bare.encode(texts), expected, atol=1e-6)
    loaded = st_static.load_model(tmp_path / "m")
    assert loaded[0].pieces == pieces_of(pieces_model[0].tokenizer)
    assert np.allclose(st_static.encode(loaded, texts), expected, atol=1e-6)
    vectors = StaticModel.from_pretrained(str(tmp_path / "m")).encode(texts[:5])
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    assert np.allclose(vectors, expected[:5], atol=1e-5)


def test_the_ascii_route_gives_the_tokenizers_rows(pieces_model):
    module = pieces_model[0]
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdeilmnoprstwgkj") for _ in range(rng.randint(1, 12))) for _ in range(500)] + [
        "painted",
        "walkinger",
        "x" * 120,
    ]
    for word in words:
        rows, _ = module.token_ids([word])
        token_rows = module.token_rows.numpy()[module.tokenizer.encode(word).ids]
        assert sorted(rows[rows != module.num_words].tolist()) == sorted(
            token_rows[token_rows != module.num_words].tolist()
        ), word
    batch_rows, offsets = module.token_ids(words)
    single = [module.token_ids([word])[0] for word in words]
    assert np.array_equal(batch_rows, np.concatenate(single))
    assert offsets.tolist() == np.cumsum([0] + [len(rows) for rows in single[:-1]]).tolist()


def test_pieces_and_fallback_rows_together(tmp_path):
    model, _ = morphology_model()
    fallback = with_fallback(model[0], ["?", "é", "東"])
    with_pieces, _ = add_piece_rows(SentenceTransformer(modules=[fallback, Normalize()], device="cpu"))
    module = with_pieces[0]
    assert module.num_piece_rows > 0 and module.fallback is not None
    assert module.fallback_characters == ["?", "é", "東"]
    assert module.num_vocabulary_words == fallback.num_vocabulary_words
    assert module.vocabulary == fallback.vocabulary
    texts = ["?", "é", "東", "", "painted?", "cooks"]
    assert np.allclose(st_static.encode(with_pieces, texts), with_pieces.encode(texts), atol=1e-6)
    assert np.linalg.norm(st_static.encode(with_pieces, texts), axis=1) == pytest.approx(1.0, abs=1e-5)
    without = module.without_fallback()
    assert without.num_piece_rows == module.num_piece_rows and without.fallback is None
    again, _ = add_piece_rows(with_pieces)  # replaced, not added twice
    assert again[0].num_piece_rows == module.num_piece_rows
    assert again[0].fallback_characters == module.fallback_characters


def test_pieces_keep_a_fallback_layout_without_characters():
    model, _ = morphology_model()
    empty_text_only = with_fallback(model[0], [])  # the empty-text row alone (a teacher without symbols)
    with_pieces, _ = add_piece_rows(SentenceTransformer(modules=[empty_text_only, Normalize()], device="cpu"))
    assert with_pieces[0].fallback is not None and with_pieces[0].num_fallback_rows == 1
    assert with_pieces[0].num_vocabulary_words == empty_text_only.num_vocabulary_words
    assert np.linalg.norm(st_static.encode(with_pieces, [""])) == pytest.approx(1.0, abs=1e-5)


def test_pruning_and_float16_keep_the_pieces(pieces_model, tmp_path):
    pruned = prune_vocabulary(pieces_model, 30)
    assert pruned[0].pieces == pieces_model[0].pieces
    texts = ["painted walkers", "cooking"]
    assert np.allclose(st_static.encode(pruned, texts), pruned.encode(texts), atol=1e-6)
    half = quantize(pieces_model, "float16")
    st_static.save_model(half, tmp_path / "half")
    bare = SentenceTransformer(str(tmp_path / "half"), device="cpu")
    assert np.allclose(bare.encode(texts), pieces_model.encode(texts), atol=2e-3)
    assert st_static.load_model(tmp_path / "half")[0].num_piece_rows == pieces_model[0].num_piece_rows


def test_training_never_moves_the_piece_rows(pieces_model):
    module = pieces_model[0]
    module.train()
    before = module.word_vectors.detach()[module.piece_rows.start : module.piece_rows.stop].clone()
    features = module.preprocess(["paintings walkers cooks", "talkinger"])
    loss = module(features)["sentence_embedding"].sum()
    loss.backward()
    grad = module.embedding.weight.grad
    assert grad[module.piece_rows.start : module.piece_rows.stop].abs().sum() == 0
    assert grad[: module.num_vocabulary_words].abs().sum() > 0
    assert torch.equal(before, module.word_vectors.detach()[module.piece_rows.start : module.piece_rows.stop])


def test_teacher_pieces_are_its_continuations_as_the_table_reads_them():
    pieces = teacher_pieces(teacher_like_tokenizer(), lowercase=True)
    assert pieces[0] == "ise" and set(pieces) == {"ise", *LETTERS}  # "the": a word start, not a piece
    model, _ = morphology_model()
    candidates = candidate_pieces(model[0], teacher_like_tokenizer())
    assert set(LETTERS) <= set(candidates) and len(candidates) == len(set(candidates))
    assert not is_piece("Ing", lowercase=True) and not is_piece("a-b", lowercase=False) and is_piece("ing", True)


def test_a_sentencepiece_teachers_pieces_are_its_tokens_that_do_not_start_a_word():
    # A SentencePiece vocabulary may hold "###" (markdown); that does not make it a WordPiece one.
    vocab = [("<unk>", 0.0), ("\u2581the", -1.0), ("\u2581Dusch", -2.0), ("gel", -3.0), ("sch", -3.0), ("###", -4.0)]
    vocab += [("ü", -5.0), ("\u2581", -5.0)]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=0))
    assert teacher_pieces(tokenizer, lowercase=False) == ["gel", "sch", "ü"]


def test_the_piece_layout_round_trips():
    model, _ = morphology_model()
    tokenizer = add_piece_layout(model[0].tokenizer, ["ing", "ed"])
    assert pieces_of(tokenizer) == ["ing", "ed"]
    removed = remove_piece_layout(tokenizer)
    original = model[0].tokenizer.get_vocab()
    assert removed.get_vocab().keys() == original.keys() | {"##ing", "##ed"}  # the pieces stay as dropped keys
    assert all(removed.get_vocab()[word] == original[word] for word in model[0].vocabulary)
    targets, num_words = token_targets(removed)
    assert targets[removed.token_to_id("##ing")] == DROPPED and num_words == model[0].num_words
    with pytest.raises(ValueError, match="twice"):
        add_piece_layout(tokenizer, ["ing", "ing"])
    with pytest.raises(ValueError, match="cannot be a piece"):
        add_piece_layout(tokenizer, ["ING"])


def test_the_pieces_command_adds_rows_to_a_saved_table(tmp_path):
    model, _ = morphology_model()
    model[0].metadata = {"teacher": str(tmp_path / "teacher")}
    st_static.save_model(model, tmp_path / "plain")
    from transformers import PreTrainedTokenizerFast  # the teacher folder: only its tokenizer is read

    PreTrainedTokenizerFast(tokenizer_object=teacher_like_tokenizer(), unk_token="[UNK]").save_pretrained(
        tmp_path / "teacher"
    )
    result = CliRunner().invoke(
        app, ["pieces", str(tmp_path / "plain"), "-o", str(tmp_path / "pieces"), "--teacher", str(tmp_path / "teacher")]
    )
    assert result.exit_code == 0, result.output
    assert "piece rows:" in result.output
    loaded = st_static.load_model(tmp_path / "pieces")
    assert loaded[0].num_piece_rows > 0 and loaded[0].metadata.pieces.pieces == loaded[0].num_piece_rows
    assert np.array_equal(st_static.encode(loaded, ["play cooks"]), st_static.encode(model, ["play cooks"]))


def test_a_float16_folder_loads_and_saves_again_as_float16(pieces_model, tmp_path):
    from safetensors.torch import load_file

    st_static.save_model(quantize(pieces_model, "float16"), tmp_path / "half")
    loaded = st_static.load_model(tmp_path / "half")
    assert loaded[0].storage == "float16" and loaded[0].metadata.quantization == "float16"
    st_static.save_model(loaded, tmp_path / "again")
    assert load_file(str(tmp_path / "again" / "model.safetensors"))["embeddings"].dtype == torch.float16
    texts = ["painted walkers", "cooking?"]
    assert np.array_equal(
        st_static.encode(st_static.load_model(tmp_path / "again"), texts), st_static.encode(loaded, texts)
    )
    with_pieces, _ = add_piece_rows(loaded)  # a float32 table now: its metadata must not say float16
    assert with_pieces[0].metadata.quantization is None


def test_the_settings_know_the_storage_formats():
    assert set(SETTINGS_STORAGE_FORMATS) == set(st_static.compression.STORAGE_FORMATS)


def test_the_plain_mean_counts_words_and_pieces_not_fallback_rows():
    """encode(normalize=False) is the mean of the words' rows: a known word's vector is its row (issue 52, low)."""
    model, _ = morphology_model()
    fallback = with_fallback(model[0], ["?", "é"])
    with_rows = SentenceTransformer(modules=[fallback, Normalize()], device="cpu")
    row = fallback.word_vectors.detach()[fallback.vocabulary.index("play")].numpy()
    for texts in (["play"], ["play", "?", "play ? é"]):  # one text (numpy path) and a batch
        plain = st_static.encode(with_rows, texts, normalize=False)
        assert np.allclose(plain[0], row, atol=1e-4)  # the empty-text row (1e-7 of a word's) adds, not counts
    symbols = st_static.encode(with_rows, ["?"], normalize=False)
    assert np.linalg.norm(symbols) > 0  # a text without a word: the mean of its fallback rows
