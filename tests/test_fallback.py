"""Fallback rows (issue 45): every text gets a unit vector through st_static.encode, model.encode after load_model and
a bare SentenceTransformer (model2vec agrees except on ``""``), and a text with a known word keeps its vector."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from typer.testing import CliRunner

import st_static
from st_static.cli import app
from st_static.errors import ModelFolderError
from st_static.extraction.fallback import (
    EMPTY_TEXT_LARGEST_ENTRY,
    EMPTY_TEXT_SCALE,
    FALLBACK_CHARACTER_SCALE,
    add_fallback_rows,
    fallback_characters,
    teacher_characters,
)
from st_static.model.ascii_words import AsciiWordRows
from st_static.model.empty_text import BIAS_LARGEST_ENTRY, empty_text_dense, is_empty_text_dense
from st_static.model.tokenization import (
    SENTINEL,
    add_fallback_layout,
    fallback_layout,
    remove_fallback_layout,
    split_words,
)

from .conftest import ADVERSARIAL_TEXTS, FALLBACK_CHARACTERS, FALLBACK_TEXTS, WORDS, with_fallback
from .teachers import SYMBOL_PIECES, TINY_CORPUS, make_tiny_teacher
from .test_load_checks import forget_hashes

PIECES = [*WORDS, *FALLBACK_CHARACTERS, "Hello", ",", " ", "  ", "\t", "🙂", "東京", "Привет", "x" * 101, "e\u0301"]
PIECES += ["\u200b", "\ufeff", "\x00", "don't", "#tag", "a-b", "<\u0338", "\u3002", "zzqq", "_", "ÉTÉ"]
FIT_WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "log", "was", "red", "old", "and", "token", "piece"]
FIT_WORDS += ["friend", "young", "word", "into", "of", "are", "hello", "world"]


def random_texts(count: int, seed: int, ascii_only: bool = False) -> list[str]:
    rng = random.Random(seed)
    alphabet = [piece for piece in PIECES if piece.isascii()] if ascii_only else PIECES
    alphabet += list("?!#.,;:'\"()[]{}<>@$%^&*+=/\\|~`") if ascii_only else []
    return [
        "".join(rng.choice(alphabet) + rng.choice(["", " "]) for _ in range(rng.randint(0, 12))) for _ in range(count)
    ]


def tokenizer_rows(module: st_static.StaticWordAverage, text: str) -> list[int]:
    """The rows the Rust tokenizer gives ``text`` (``""``: the empty-text row), sorted, without the dropped ones."""
    token_ids = module.tokenizer.encode(text, add_special_tokens=False).ids
    rows = module.token_rows.numpy()[token_ids].tolist() or [module.fallback.sentinel_row]
    return sorted(row for row in rows if row != module.num_words)


def kept(rows: np.ndarray, module: st_static.StaticWordAverage) -> list[int]:
    return sorted(rows[rows != module.num_words].tolist())


def norms(vectors: np.ndarray) -> np.ndarray:
    return np.linalg.norm(vectors, axis=1)


# ------------------------------------------------------------------------------------------------ the tokenizer
def test_the_fallback_layout_keeps_every_word_and_adds_symbols_and_the_sentinel(fallback_module):
    plain_module = fallback_module.without_fallback()
    plain, fallback = plain_module.tokenizer, fallback_module.tokenizer
    layout = fallback_module.fallback
    for text in [*ADVERSARIAL_TEXTS, *random_texts(300, seed=1)]:
        plain_rows = plain_module.token_rows.numpy()[plain.encode(text, add_special_tokens=False).ids]
        rows = fallback_module.token_rows.numpy()[fallback.encode(text, add_special_tokens=False).ids]
        words = sorted(row for row in rows.tolist() if row < layout.sentinel_row)
        assert words == sorted(row for row in plain_rows.tolist() if row != plain_module.num_words), text
        assert (rows == layout.sentinel_row).sum() == (1 if text else 0)
    assert fallback.encode("the?cat", add_special_tokens=False).tokens == [SENTINEL, "the", "?", "cat"]
    assert fallback.encode("Привет", add_special_tokens=False).tokens == [SENTINEL, "п", *("##" + c for c in "ривет")]


def test_the_layout_comes_off_and_on_again(fallback_module, word_module):
    plain = remove_fallback_layout(fallback_module.tokenizer)
    assert fallback_layout(plain) is None
    assert plain.get_vocab()["[UNK]"] == word_module.num_words
    assert set(plain.get_vocab()) == set(fallback_module.tokenizer.get_vocab()) - {SENTINEL}
    again = add_fallback_layout(plain, FALLBACK_CHARACTERS)
    assert json.loads(again.to_str()) == json.loads(fallback_module.tokenizer.to_str())
    assert fallback_module.vocabulary == word_module.vocabulary
    assert fallback_module.fallback_characters == FALLBACK_CHARACTERS
    assert fallback_module.num_fallback_rows == 1 + len(FALLBACK_CHARACTERS)


@pytest.mark.parametrize("character", ["a", "7", " ", "\x00", "the", "É", SENTINEL])
def test_characters_that_cannot_have_a_fallback_row_are_refused(word_module, character):
    with pytest.raises(ValueError):
        add_fallback_layout(word_module.tokenizer, [character])


def test_a_word_of_the_table_gets_no_fallback_row():
    module = st_static.StaticWordAverage.from_word_vectors(["the", "п"], np.eye(2, dtype=np.float32))
    with pytest.raises(ValueError, match="already reads a row"):
        add_fallback_layout(module.tokenizer, ["п"])
    with pytest.raises(ValueError, match="twice"):
        add_fallback_layout(module.tokenizer, ["?", "?"])
    assert with_fallback(module, ["?", "\u0440"]).fallback_characters == ["?", "\u0440"]


# ------------------------------------------------------------------------------------------------ rows of texts
def test_ascii_look_up_gives_the_tokenizers_rows_with_symbols_and_the_sentinel(fallback_module):
    module = fallback_module
    lookup = AsciiWordRows.from_tokenizer(module.tokenizer, module.token_rows.numpy(), module.num_words)
    assert lookup is not None and lookup.sentinel_row == module.fallback.sentinel_row
    texts = [text for text in [*ADVERSARIAL_TEXTS, *random_texts(400, seed=2, ascii_only=True)] if text.isascii()]
    rows, counts = lookup.rows(texts)
    assert [kept(part, module) for part in np.split(rows, np.cumsum(counts)[:-1])] == [
        tokenizer_rows(module, text) for text in texts
    ]
    assert [kept(np.array(lookup.text_rows(text)), module) for text in texts] == [
        tokenizer_rows(module, text) for text in texts
    ]


def test_word_rows_match_the_tokenizer_on_mixed_batches_and_long_texts(fallback_module):
    module = fallback_module
    texts = [*random_texts(300, seed=3), "the cat? " * 30_000, "東京 Привет! " * 20_000]
    rows, offsets = module.word_rows.rows(texts)
    assert [kept(part, module) for part in np.split(rows, offsets[1:])] == [
        tokenizer_rows(module, text) for text in texts
    ]


def test_the_fast_path_equals_model_encode(fallback_model):
    texts = [*ADVERSARIAL_TEXTS, *FALLBACK_TEXTS, *random_texts(200, seed=4)]
    fast = st_static.encode(fallback_model, texts)
    np.testing.assert_allclose(fast, fallback_model.encode(texts), atol=1e-6)
    np.testing.assert_allclose(np.stack([st_static.encode(fallback_model, text) for text in texts]), fast, atol=1e-6)
    np.testing.assert_allclose(norms(fast), 1.0, atol=1e-5)


def test_a_text_with_a_known_word_keeps_its_vector(fallback_model):
    word_model = SentenceTransformer(modules=[fallback_model[0].without_fallback(), Normalize()], device="cpu")
    texts = [*ADVERSARIAL_TEXTS, "Hello, world!", "the cat sat on the mat.", "東京 the cat", "the 🙂 cat?!"]
    texts += random_texts(200, seed=5)
    before, after = st_static.encode(word_model, texts), st_static.encode(fallback_model, texts)
    known = norms(before) > 0
    cosines = (before[known] * after[known]).sum(axis=1)
    assert cosines.min() > 1 - 1e-5  # fallback rows weigh 1e-3 of a word row
    assert not known.all() and np.allclose(norms(after), 1.0, atol=1e-5)


def test_training_never_moves_the_fallback_rows(fallback_model):
    module = fallback_model[0]
    features = module.preprocess(["the cat? 東京", "?!", "hello world."])
    module.embedding.weight.grad = None
    output = module(features)["sentence_embedding"]
    output.sum().backward()
    gradient = module.embedding.weight.grad.to_dense()
    assert gradient[: module.fallback.sentinel_row].abs().sum() > 0
    assert gradient[module.fallback.sentinel_row :].abs().sum() == 0


# ------------------------------------------------------------------------------------------------ saved folders
def test_every_path_gives_the_fallback_texts_unit_vectors(fallback_model, tmp_path):
    pytest.importorskip("model2vec")
    from model2vec import StaticModel

    folder = tmp_path / "model"
    st_static.save_model(fallback_model, folder)
    types = [module["type"].rsplit(".", 1)[-1] for module in json.loads((folder / "modules.json").read_text())]
    assert types == ["StaticEmbedding", "Dense", "Normalize"]
    texts = [*FALLBACK_TEXTS, "the cat sat", "Hello, world!"]
    loaded = st_static.load_model(folder)
    assert isinstance(loaded[0], st_static.StaticWordAverage) and isinstance(loaded[2], Normalize)
    assert is_empty_text_dense(loaded[1]) and not any(parameter.requires_grad for parameter in loaded[1].parameters())
    bare = SentenceTransformer(str(folder), device="cpu")
    assert is_empty_text_dense(bare[1])
    fast = st_static.encode(fallback_model, texts)
    for vectors in (
        loaded.encode(texts),
        bare.encode(texts),
        st_static.encode(bare, texts),
        st_static.encode(loaded, texts),
    ):
        np.testing.assert_allclose(norms(vectors), 1.0, atol=1e-5)
        np.testing.assert_allclose(vectors, fast, atol=1e-5)
    model2vec = StaticModel.from_pretrained(str(folder)).encode(texts)
    assert norms(model2vec[:1]) == pytest.approx([0.0])  # model2vec gives "" no token, hence zeros
    np.testing.assert_allclose(model2vec[1:], fast[1:], atol=1e-5)


def test_a_saved_fallback_model_saves_again_alike(fallback_model, tmp_path):
    st_static.save_model(fallback_model, tmp_path / "a")
    card = (tmp_path / "a" / "README.md").read_text(encoding="utf-8")
    assert f"knows and the table lacks, {len(FALLBACK_CHARACTERS)} of them" in card
    assert f"{len(WORDS)} words (lowercased)" in card
    bare = SentenceTransformer(str(tmp_path / "a"), device="cpu")
    st_static.save_model(bare, tmp_path / "b")  # a bare load (with its Dense) saved by st-static
    st_static.save_model(st_static.load_model(tmp_path / "a"), tmp_path / "c")
    for name in ("b", "c"):
        assert (tmp_path / name / "modules.json").read_text() == (tmp_path / "a" / "modules.json").read_text()
        np.testing.assert_allclose(
            SentenceTransformer(str(tmp_path / name), device="cpu").encode(FALLBACK_TEXTS),
            bare.encode(FALLBACK_TEXTS),
            atol=1e-6,
        )


def test_the_empty_text_dense_is_checked_on_load(fallback_model, tmp_path):
    from safetensors.torch import load_file, save_file

    st_static.save_model(fallback_model, tmp_path / "model")
    weights_path = tmp_path / "model" / "1_Dense" / "model.safetensors"
    weights = load_file(str(weights_path))
    bias_key = next(key for key in weights if key.endswith("bias"))
    expected = empty_text_dense(fallback_model).linear
    torch.testing.assert_close(weights[bias_key], expected.bias, rtol=1e-6, atol=0)
    assert float(weights[bias_key].abs().max()) == pytest.approx(BIAS_LARGEST_ENTRY, rel=1e-6)  # float16 keeps it
    weight = weights[next(key for key in weights if key.endswith("weight"))]
    scale = float(weight[0, 0])
    assert scale == expected.weight[0, 0] and scale >= 2 and torch.equal(weight, scale * torch.eye(len(weight)))
    weights[bias_key] = -weights[bias_key]
    save_file(weights, str(weights_path))
    with pytest.raises(ModelFolderError, match=r"1_Dense/model\.safetensors has changed"):
        st_static.load_model(tmp_path / "model")
    config_path = tmp_path / "model" / "st_static_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["files"] = {name: digest for name, digest in config["files"].items() if "/" not in name}
    config_path.write_text(json.dumps(config), encoding="utf-8")  # as saved before module files were hashed
    with pytest.raises(ModelFolderError, match="empty-text row"):
        st_static.load_model(tmp_path / "model")


def test_a_load_reads_the_table_for_its_empty_text_dense_once(fallback_model, tmp_path, monkeypatch):
    """Each ``empty_text_dense`` takes every row's norm (about 20 ms on a real table): a load computes it once."""
    from st_static.model import empty_text

    st_static.save_model(fallback_model, tmp_path / "model")
    calls = []
    original = empty_text.empty_text_dense
    monkeypatch.setattr(empty_text, "empty_text_dense", lambda model: calls.append(1) or original(model))
    loaded = st_static.load_model(tmp_path / "model")
    assert len(calls) == 1
    assert sum(is_empty_text_dense(module) for module in loaded) == 1


def test_a_folder_whose_normaliser_prepends_the_sentinel_needs_the_symbol_split(fallback_model, tmp_path):
    st_static.save_model(fallback_model, tmp_path / "model")
    path = tmp_path / "model" / "tokenizer.json"
    state = json.loads(path.read_text(encoding="utf-8"))
    state["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "[^\\p{L}\\p{M}\\p{N}]+"}, "behavior": "Removed"}
    path.write_text(json.dumps(state), encoding="utf-8")
    with pytest.raises(ModelFolderError, match="keeps symbols"):
        st_static.load_model(tmp_path / "model")


# ------------------------------------------------------------------------------------------------ compression
@pytest.mark.parametrize("storage", ["float32", "float16", "int8-row", "int8-column", "binary"])
def test_quantised_tables_keep_the_fallback_rows(fallback_model, tmp_path, storage):
    from st_static.compression import quantize

    st_static.save_model(quantize(fallback_model, storage), tmp_path / storage)
    for model in (st_static.load_model(tmp_path / storage), SentenceTransformer(str(tmp_path / storage), device="cpu")):
        vectors = model.encode(FALLBACK_TEXTS)
        np.testing.assert_allclose(norms(vectors), 1.0, atol=1e-4)
        if storage != "binary":
            cosines = (vectors * st_static.encode(fallback_model, FALLBACK_TEXTS)).sum(axis=1)
            assert cosines.min() > 0.95


def test_pruning_and_truncation_keep_the_fallback_rows(fallback_model):
    from st_static.compression import prune_vocabulary, truncate_dimensions

    pruned = prune_vocabulary(fallback_model, 5)
    assert pruned[0].num_vocabulary_words == 5 and pruned[0].fallback_characters == FALLBACK_CHARACTERS
    truncated = truncate_dimensions(fallback_model, 4)
    for model in (pruned, truncated):
        np.testing.assert_allclose(norms(st_static.encode(model, FALLBACK_TEXTS)), 1.0, atol=1e-5)


def test_an_ensemble_keeps_its_members_fallback_rows(fallback_model, word_model):
    from st_static.compression import ensemble

    combined = ensemble([fallback_model, word_model])
    assert combined[0].fallback is not None
    raw = SentenceTransformer(modules=[combined[0]], device="cpu").encode(FALLBACK_TEXTS)
    own = SentenceTransformer(modules=[fallback_model[0]], device="cpu").encode(FALLBACK_TEXTS)
    dim = fallback_model.get_embedding_dimension()
    cosines = (raw[:, :dim] * own).sum(1) / (np.linalg.norm(raw[:, :dim], axis=1) * np.linalg.norm(own, axis=1))
    np.testing.assert_allclose(cosines, 1.0, atol=1e-5)  # each text reads the member's own fallback rows
    assert np.abs(raw[:, dim:]).max() == 0  # the other member knows no word or symbol of these texts


# ------------------------------------------------------------------------------------------------ from the teacher
@pytest.fixture(scope="module")
def symbols_teacher(tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp("symbols"), kind="symbols")


@pytest.fixture(scope="module")
def plain_table(symbols_teacher) -> SentenceTransformer:
    teacher = SentenceTransformer(str(symbols_teacher), device="cpu")
    vectors = np.random.default_rng(0).standard_normal((len(FIT_WORDS), 8)).astype(np.float32)
    module = st_static.StaticWordAverage.from_word_vectors(
        FIT_WORDS, vectors, teacher_tokenizer=teacher[0].tokenizer, metadata={"teacher": str(symbols_teacher)}
    )
    return SentenceTransformer(modules=[module, Normalize()], device="cpu")


def test_the_fallback_characters_are_the_teachers_that_the_table_lacks(symbols_teacher, plain_table):
    teacher = SentenceTransformer(str(symbols_teacher), device="cpu")
    assert set(SYMBOL_PIECES) <= set(teacher_characters(teacher[0].tokenizer._tokenizer))
    characters = fallback_characters(plain_table[0], teacher[0].tokenizer._tokenizer)
    assert set(characters) == set(SYMBOL_PIECES)  # not the ASCII letters: continuation pieces of ASCII words
    assert all(split_words(character) in ([character], []) for character in characters)


def test_add_fallback_rows_from_the_teacher(symbols_teacher, plain_table, tmp_path):
    model, report = add_fallback_rows(plain_table, str(symbols_teacher))
    module = model[0]
    assert report["characters"] == len(SYMBOL_PIECES) and module.metadata.fallback.characters == len(SYMBOL_PIECES)
    word_norm = float(np.median(plain_table[0].word_vectors.detach().norm(dim=1).numpy()))
    rows = module.word_vectors.detach()
    empty = rows[module.fallback.sentinel_row]
    largest = float(empty.abs().max())  # float16 holds zero there, or the row is EMPTY_TEXT_SCALE of a word row
    assert largest <= EMPTY_TEXT_LARGEST_ENTRY * (1 + 1e-6) and 0 < float(empty.norm()) <= EMPTY_TEXT_SCALE * word_norm
    assert largest == pytest.approx(EMPTY_TEXT_LARGEST_ENTRY, rel=1e-5) or float(empty.norm()) == pytest.approx(
        EMPTY_TEXT_SCALE * word_norm, rel=1e-3
    )
    assert not empty.half().any()
    character_norms = rows[module.fallback.character_rows.start :].norm(dim=1)
    assert float(np.median(character_norms.numpy())) == pytest.approx(FALLBACK_CHARACTER_SCALE * word_norm, rel=1e-3)
    st_static.save_model(model, tmp_path / "model")
    for vectors in (
        st_static.encode(model, FALLBACK_TEXTS),
        st_static.load_model(tmp_path / "model").encode(FALLBACK_TEXTS),
        SentenceTransformer(str(tmp_path / "model"), device="cpu").encode(FALLBACK_TEXTS),
    ):
        np.testing.assert_allclose(norms(vectors), 1.0, atol=1e-5)
    again, _ = add_fallback_rows(model, str(symbols_teacher))  # replaces the rows it had
    assert again[0].num_words == module.num_words


def test_the_fallback_command_adds_the_rows_in_place(symbols_teacher, plain_table, tmp_path):
    st_static.save_model(plain_table, tmp_path / "model")
    (tmp_path / "model" / "notes.txt").write_text("kept", encoding="utf-8")
    result = CliRunner().invoke(app, ["fallback", str(tmp_path / "model"), "--output", str(tmp_path / "model")])
    assert result.exit_code == 0, result.output
    assert f"{len(SYMBOL_PIECES)} characters" in result.output
    assert (tmp_path / "model" / "notes.txt").read_text(encoding="utf-8") == "kept"
    vectors = SentenceTransformer(str(tmp_path / "model"), device="cpu").encode(FALLBACK_TEXTS)
    np.testing.assert_allclose(norms(vectors), 1.0, atol=1e-5)


def test_a_build_ends_with_fallback_rows(symbols_teacher, tmp_path):
    tiny = {"dim": 8, "min_sentences": 1, "steps": 8, "batch_size": 4, "eval_steps": 4, "pca_sample_size": 100}
    corpus = [*TINY_CORPUS, "a red cat? yes!", "the dog. the log, the mat"] * 3
    model = st_static.distill(str(symbols_teacher), corpus, complete_words=0, work_dir=tmp_path / "work", **tiny)
    assert model[0].fallback is not None and model[0].metadata.fallback is not None
    np.testing.assert_allclose(norms(st_static.encode(model, FALLBACK_TEXTS)), 1.0, atol=1e-5)
    assert len(list((tmp_path / "work").glob("fallback-*/model/modules.json"))) == 1
    without = st_static.distill(
        str(symbols_teacher), corpus, complete_words=0, fallback_rows=False, work_dir=tmp_path / "work", **tiny
    )
    assert without[0].fallback is None
    sentences = ["the cat sat on the mat", "a red dog, on a log!"]
    cosines = (st_static.encode(model, sentences) * st_static.encode(without, sentences)).sum(axis=1)
    assert cosines.min() > 1 - 1e-5
    assert torch.equal(model[0].word_vectors.detach()[: without[0].num_words], without[0].word_vectors.detach())


def test_a_text_among_dropped_tokens_keeps_its_vector_in_a_bare_load(fallback_model, tmp_path):
    # sentence-transformers' mean counts the tokens the table drops, so dropped tokens shrink a text's mean towards
    # the empty-text bias: the bias must stay negligible for a symbol among 1,000 of them and a word among 300,000,
    # and "" gets the unit vector of the empty-text row.
    st_static.save_model(fallback_model, tmp_path / "model")
    texts = ["?", "? " + "\u00a7 " * 1000, "the cat? " + "\u00a7 " * 300_000]  # "§": no row, no fallback row
    bare = SentenceTransformer(str(tmp_path / "model"), device="cpu").encode(texts)
    ours = st_static.encode(st_static.load_model(tmp_path / "model"), texts)
    assert np.einsum("ij,ij->i", bare, ours).min() > 1 - 1e-6
    empty = SentenceTransformer(str(tmp_path / "model"), device="cpu").encode([""])
    assert float(np.linalg.norm(empty)) == pytest.approx(1)
    assert float((empty * st_static.encode(fallback_model, [""])).sum()) > 0.99999


@pytest.mark.parametrize("row_norm", [1.0, 6.4, 40.0])  # a tiny table's, the README table's median, a large one
def test_a_half_precision_load_gives_every_text_a_unit_vector(tmp_path, row_norm):
    """Issue 66: a bare ``SentenceTransformer(folder).half()`` gave ``""`` NaN (the bias fell below float16's
    range) and a lone emoji cosine 0.86; the saved bias now stays in it, the scale keeps every mean below float16's
    largest norm, and every text keeps its float32 direction on both load paths."""
    from tests.conftest import teacher_like_tokenizer

    vectors = np.random.default_rng(0).standard_normal((len(WORDS), 256)).astype(np.float32) * (row_norm / 16)
    module = with_fallback(
        st_static.StaticWordAverage.from_word_vectors(WORDS, vectors, teacher_tokenizer=teacher_like_tokenizer())
    )
    st_static.save_model(SentenceTransformer(modules=[module, Normalize()], device="cpu"), tmp_path / "model")
    texts = [*FALLBACK_TEXTS, "", " ", "😀", "hello😀world", "the cat sat on the mat", "the cat " * 2000]
    floats = SentenceTransformer(str(tmp_path / "model"), device="cpu").encode(texts)
    for model in (SentenceTransformer(str(tmp_path / "model"), device="cpu"), st_static.load_model(tmp_path / "model")):
        halves = model.half().encode(texts, convert_to_tensor=True).float().numpy()
        assert np.isfinite(halves).all()
        np.testing.assert_allclose(np.linalg.norm(halves, axis=1), 1.0, atol=5e-3)
        assert np.einsum("ij,ij->i", floats, halves).min() >= 0.999


def full_width(text: str) -> str:
    """``text`` as Japanese and Chinese keyboards often type it: ASCII letters, digits, symbols, spaces full-width."""
    return "".join(
        "\u3000" if char == " " else chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else char for char in text
    )


# Full-width forms, a ligature (ff) and superscripts, each with the text its NFKC form is.
COMPATIBILITY_PAIRS = [
    (full_width("the cat sat!"), "the cat sat!"),
    (full_width("Hello, world?"), "Hello, world?"),
    ("the " + full_width("1990s"), "the 1990s"),
    ("ca\ufb00\u00e9 \u00b9\u00b2", "caff\u00e9 12"),
    ("\u6771\u4eac" + full_width("?"), "\u6771\u4eac?"),
]


def test_the_fallback_layout_reads_compatibility_forms_as_their_plain_forms(fallback_model, tmp_path):
    pytest.importorskip("model2vec")
    from model2vec import StaticModel

    folder = tmp_path / "model"
    st_static.save_model(fallback_model, folder)
    folded, plain = zip(*COMPATIBILITY_PAIRS, strict=True)
    bare = SentenceTransformer(str(folder), device="cpu")
    expected = st_static.encode(fallback_model, list(plain))
    for vectors in (
        st_static.encode(fallback_model, list(folded)),
        st_static.encode(bare, list(folded)),
        st_static.load_model(folder).encode(list(folded)),
        bare.encode(list(folded)),
        StaticModel.from_pretrained(str(folder)).encode(list(folded)),
    ):
        np.testing.assert_allclose(vectors, expected, atol=1e-5)
    tokens = fallback_model[0].tokenizer.encode(full_width("the cat!"), add_special_tokens=False).tokens
    assert tokens == [SENTINEL, "the", "cat", "!"]
    # Training reads the plain layout, NFC: the table's words are what the corpus held.
    plain_layout = remove_fallback_layout(fallback_model[0].tokenizer)
    assert plain_layout.encode(full_width("the"), add_special_tokens=False).tokens != ["the"]


def test_an_older_fallback_layout_is_read_as_saved_and_laid_out_again_with_nfkc(fallback_model, tmp_path):
    from st_static.model.tokenization import fallback_characters_of, normalization_form

    folder = tmp_path / "model"
    st_static.save_model(fallback_model, folder)
    state = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    assert state["normalizer"]["normalizers"][0] == {"type": "NFKC"}
    state["normalizer"]["normalizers"][0] = {"type": "NFC"}  # as tables laid out before compatibility folding
    (folder / "tokenizer.json").write_text(json.dumps(state), encoding="utf-8")
    forget_hashes(folder)
    older = st_static.load_model(folder)
    assert normalization_form(older[0].tokenizer) == "NFC"
    np.testing.assert_allclose(older.encode(["the cat"]), fallback_model.encode(["the cat"]), atol=1e-5)  # + the bias
    assert older[0].tokenizer.encode(full_width("cat"), add_special_tokens=False).tokens != [SENTINEL, "cat"]
    # A character NFKC folds keeps its row when an older table is laid out again (the row is never read).
    again = add_fallback_layout(older[0].tokenizer, [*fallback_characters_of(older[0].tokenizer), "\uff1f"])
    assert normalization_form(again) == "NFKC"
    assert again.encode(full_width("cat?"), add_special_tokens=False).tokens == [SENTINEL, "cat", "?"]


def test_no_row_goes_to_a_character_piece_or_word_nfkc_folds(symbols_teacher, plain_table, fallback_module):
    from st_static.model.tokenization import addable_words, is_fallback_character, is_piece

    teacher = SentenceTransformer(str(symbols_teacher), device="cpu")
    characters = fallback_characters(plain_table[0], teacher[0].tokenizer._tokenizer)
    assert all(is_fallback_character(character, plain_table[0].lowercase) for character in characters)
    assert not is_fallback_character("\uff1f", lowercase=True)  # full-width "?": read as "?"
    assert is_fallback_character("\uff1f", lowercase=True, form="NFC")
    assert not is_piece("\u00b2", lowercase=True) and is_piece("\u00b2", lowercase=True, form="NFC")  # superscript 2
    # A word with the ligature fi would never be looked up: the table reads it as "file".
    assert addable_words(fallback_module.tokenizer, ["\ufb01le", "file"]) == ["file"]
    assert addable_words(remove_fallback_layout(fallback_module.tokenizer), ["\ufb01le"]) == ["\ufb01le"]


def test_a_half_precision_load_gives_the_fallback_texts_their_float32_directions(tmp_path):
    """Issue 66: float16 rounds the fallback rows (1e-3 and 1e-7 of a word row) to a few bits or to zero; a model of
    ``load_model(...).half()`` reads float32 copies of them and scales tiny means up, so every text keeps its
    direction, and ``.float()`` again gives the rows back as they were."""
    from tests.conftest import teacher_like_tokenizer

    vectors = (np.random.default_rng(0).standard_normal((len(WORDS), 256)) / 16).astype(np.float32)  # norms ~1
    module = with_fallback(
        st_static.StaticWordAverage.from_word_vectors(WORDS, vectors, teacher_tokenizer=teacher_like_tokenizer())
    )
    st_static.save_model(SentenceTransformer(modules=[module, Normalize()], device="cpu"), tmp_path / "model")
    texts = [*FALLBACK_TEXTS, "😀", "hello😀world", "the cat", "the cat sat on the mat"]
    model = st_static.load_model(tmp_path / "model")
    floats = model.encode(texts, convert_to_numpy=True)
    rows = model[0].embedding.weight.detach()[model[0].fallback_start : model[0].num_words].clone()
    halves = model.half().encode(texts, convert_to_tensor=True).float().numpy()
    assert np.isfinite(halves).all()
    np.testing.assert_allclose(np.linalg.norm(halves, axis=1), 1.0, atol=2e-3)
    assert np.einsum("ij,ij->i", floats, halves).min() >= 0.999
    model.float()
    np.testing.assert_array_equal(
        model[0].embedding.weight.detach()[model[0].fallback_start : model[0].num_words], rows
    )
