"""Compact and combined tables: quantised storage, vocabulary pruning, ensembles and truncation."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense, Normalize
from typer.testing import CliRunner

import st_static
from st_static import ModelFolderError, StaticWordAverage
from st_static.cli import app
from st_static.compression import (
    STORAGE_FORMATS,
    BlockNormalize,
    CompactStaticWordAverage,
    ensemble,
    fold_block_normalization,
    folder_size,
    prune_vocabulary,
    quantize,
    quantize_table,
    to_float32,
    truncate_dimensions,
    union_vocabulary,
)
from st_static.hub.bare_load import BARE_LOAD_SCRIPT
from st_static.model.metadata import PruningRecord
from st_static.model.save_load import load_model, save_model

from .conftest import WORDS, teacher_like_tokenizer
from .test_static_word_average import word_rows

TEXTS = ["the cat sat on the mat", "Hello world!", "tokeniser tokens", "café 12 1990s", "", "qqq zzz", "word " * 50]
# Tolerances on the cosine between a sentence vector and its float32 original.
MIN_COSINE = {"float32": 1 - 1e-6, "float16": 1 - 1e-5, "int8-row": 1 - 1e-3, "int8-column": 1 - 1e-3, "binary": 0.5}


def make_model(words: list[str], dim: int, seed: int = 0) -> SentenceTransformer:
    vectors = np.random.default_rng(seed).standard_normal((len(words), dim)).astype(np.float32)
    module = StaticWordAverage.from_word_vectors(words, vectors, teacher_tokenizer=teacher_like_tokenizer())
    return SentenceTransformer(modules=[module, Normalize()], device="cpu")


def letters(index: int) -> str:
    return "".join(chr(ord("a") + (index // 26**k) % 26) for k in range(3))


@pytest.fixture
def larger_model() -> SentenceTransformer:
    """300 words x 32 dimensions: large enough for the table, not the tokenizer, to dominate the files."""
    return make_model(WORDS + [letters(index) for index in range(300)], 32)


def unit_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    known = (np.linalg.norm(a, axis=1) > 0) & (np.linalg.norm(b, axis=1) > 0)
    a, b = a[known], b[known]
    return (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


# ---------------------------------------------------------------------------------------------- quantisation
@pytest.mark.parametrize("storage", STORAGE_FORMATS)
def test_quantize_table_error_is_bounded(storage):
    table = torch.from_numpy(np.random.default_rng(1).standard_normal((50, 24)).astype(np.float32))
    table[3] = 0.0
    quantized = quantize_table(table, storage)
    restored = quantized.dequantize()
    error = (restored - table).abs()
    if storage == "float32":
        assert torch.equal(restored, table)
    elif storage == "float16":
        assert (error <= table.abs() * 2**-11 + 1e-7).all()
    elif storage == "int8-row":
        assert quantized.codes.dtype == torch.int8
        assert (error <= quantized.row_scale[:, None] / 2 + 1e-7).all()
    elif storage == "int8-column":
        assert quantized.codes.dtype == torch.int8
        assert (error <= quantized.column_scale[None, :] / 2 + 1e-7).all()
    else:
        assert set(quantized.codes.unique().tolist()) <= {-1, 1}
        torch.testing.assert_close(quantized.row_scale, table.abs().mean(dim=1))
        assert torch.equal(torch.sign(restored[table != 0]), torch.sign(table[table != 0]))
    assert restored[3].abs().max() == 0  # a zero row stays zero


def test_unknown_format_and_float16_overflow_are_refused():
    with pytest.raises(ValueError, match="int8-row"):
        quantize_table(torch.ones(2, 2), "int4")
    with pytest.raises(ValueError, match="float16's range"):
        quantize_table(torch.full((2, 2), 1e6), "float16")


@pytest.mark.parametrize("storage", STORAGE_FORMATS)
def test_each_format_saves_smaller_and_reloads_within_its_error(larger_model, storage, tmp_path):
    save_model(larger_model, tmp_path / "original")
    compressed = quantize(larger_model, storage)
    save_model(compressed, tmp_path / storage)
    original_bytes = os.path.getsize(tmp_path / "original" / "model.safetensors")
    compressed_bytes = os.path.getsize(tmp_path / storage / "model.safetensors")
    assert compressed_bytes < original_bytes
    if storage not in ("float32", "float16"):
        assert compressed_bytes < original_bytes / 3

    reference = larger_model.encode(TEXTS)
    in_memory = compressed.encode(TEXTS)
    bare = SentenceTransformer(str(tmp_path / storage), device="cpu")
    checked = load_model(tmp_path / storage)
    np.testing.assert_allclose(bare.encode(TEXTS), in_memory, atol=1e-6)
    np.testing.assert_allclose(checked.encode(TEXTS), in_memory, atol=1e-6)
    np.testing.assert_allclose(st_static.encode(checked, TEXTS), in_memory, atol=1e-6)
    assert unit_cosines(in_memory, reference).min() >= MIN_COSINE[storage]
    assert bare[0].embedding.weight.dtype == torch.float32  # averaged in float32 whatever the storage

    module = StaticWordAverage.load(str(tmp_path / storage))
    expected = quantize_table(larger_model[0].word_vectors.detach(), storage).dequantize()
    torch.testing.assert_close(module.word_vectors.detach(), expected, atol=1e-6, rtol=1e-5)
    assert module.metadata.quantization == storage


def test_compressed_and_pruned_folders_load_without_st_static(larger_model, tmp_path):
    folders = {storage: quantize(larger_model, storage) for storage in STORAGE_FORMATS}
    folders["pruned"] = prune_vocabulary(larger_model, 8)
    (tmp_path / "texts.json").write_text(json.dumps([text.strip() for text in TEXTS]), encoding="utf-8")
    arguments = []
    for name, model in folders.items():
        save_model(model, tmp_path / name)
        modules = json.loads((tmp_path / name / "modules.json").read_text())
        assert all(module["type"].startswith("sentence_transformers.") for module in modules)
        arguments += [str(tmp_path / name), str(tmp_path / "texts.json"), str(tmp_path / f"{name}.npy")]
    # One interpreter runs the shared bare-load script once per folder.
    loop = "import sys\nscript, *rest = sys.argv[1:]\nfor i in range(0, len(rest), 3):\n"
    loop += "    sys.argv = ['bare', *rest[i:i + 3]]\n    exec(script, {'__name__': '__main__'})\n"
    result = subprocess.run(
        [sys.executable, "-c", loop, BARE_LOAD_SCRIPT, *arguments],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["StaticEmbedding"] * len(folders)
    texts = [text.strip() for text in TEXTS]
    for name, model in folders.items():
        np.testing.assert_allclose(np.load(tmp_path / f"{name}.npy"), model.encode(texts), atol=1e-6)


def test_float16_table_is_averaged_in_float32_even_for_long_texts(larger_model, tmp_path):
    save_model(quantize(larger_model, "float16"), tmp_path / "half")
    bare = SentenceTransformer(str(tmp_path / "half"), device="cpu")
    long_text = " ".join(WORDS * 20_000)  # a float16 sum over 280k words would overflow
    embedding = bare.encode(long_text)
    assert embedding.dtype == np.float32
    assert np.isfinite(embedding).all()
    assert abs(np.linalg.norm(embedding) - 1) < 1e-4


def test_int8_column_scale_is_a_diagonal_dense_that_load_model_folds(larger_model, tmp_path):
    save_model(quantize(larger_model, "int8-column"), tmp_path / "column")
    bare = SentenceTransformer(str(tmp_path / "column"), device="cpu")
    assert [type(module).__name__ for module in bare] == ["StaticEmbedding", "Dense", "Normalize"]
    weight = bare[1].linear.weight.detach()
    assert torch.equal(weight, torch.diag(torch.diagonal(weight)))
    with pytest.raises(TypeError, match="Normalize only"):
        st_static.encode(bare, TEXTS)  # the fast path would skip the Dense scale
    checked = load_model(tmp_path / "column")
    assert [type(module) for module in checked] == [StaticWordAverage, Normalize]
    np.testing.assert_allclose(st_static.encode(checked, TEXTS), bare.encode(TEXTS), atol=1e-6)
    np.testing.assert_allclose(to_float32(bare).encode(TEXTS), bare.encode(TEXTS), atol=1e-6)
    save_model(checked, tmp_path / "resaved")  # now a plain float32 folder
    resaved = SentenceTransformer(str(tmp_path / "resaved"), device="cpu")
    assert [type(module).__name__ for module in resaved] == ["StaticEmbedding", "Normalize"]
    np.testing.assert_allclose(resaved.encode(TEXTS), bare.encode(TEXTS), atol=1e-6)


def test_int8_column_folder_with_a_foreign_dense_is_reported(larger_model, tmp_path):
    save_model(quantize(larger_model, "int8-column"), tmp_path / "column")
    dense_file = next((tmp_path / "column").glob("1_Dense/model.safetensors"))
    weights = load_file(dense_file)
    weights["linear.weight"] = weights["linear.weight"] * 2
    save_file(weights, str(dense_file))
    with pytest.raises(ModelFolderError, match="Dense"):
        load_model(tmp_path / "column")


def test_quantising_a_quantised_model_starts_from_its_dequantised_table(larger_model):
    once = quantize(larger_model, "int8-row")
    twice = quantize(quantize(larger_model, "int8-column"), "int8-row")
    assert [type(module) for module in twice] == [CompactStaticWordAverage, Normalize]
    assert unit_cosines(twice.encode(TEXTS), once.encode(TEXTS)).min() > 1 - 1e-3
    np.testing.assert_allclose(quantize(once, "int8-row").encode(TEXTS), once.encode(TEXTS), atol=1e-6)


# ---------------------------------------------------------------------------------------------- pruning
def test_pruning_keeps_the_first_rows_and_falls_back_by_prefix(word_model, tmp_path):
    pruned = prune_vocabulary(word_model, 6)
    module = pruned[0]
    assert module.vocabulary == WORDS[:6]
    rows = [WORDS.index(word) for word in WORDS[:6]]
    np.testing.assert_array_equal(module.word_vectors.detach().numpy(), word_model[0].word_vectors.detach()[rows])
    assert word_rows(module, "tokenise tokeniser hello The CAT") == ["token", "token", "the", "cat"]
    assert module.metadata.pruning == PruningRecord(kept_words=6, original_words=len(WORDS), ranked_by="row order")
    save_model(pruned, tmp_path / "pruned")
    assert folder_size(tmp_path / "pruned") < folder_size(save_model(word_model, tmp_path / "full"))
    np.testing.assert_allclose(
        SentenceTransformer(str(tmp_path / "pruned"), device="cpu").encode(TEXTS), pruned.encode(TEXTS)
    )


@pytest.mark.parametrize(
    ("frequencies", "kept"),
    [
        ({"world": 5.0, "hello": 9.0, "the": 1.0}, ["hello", "world", "the", "cat"]),
        (["mat", "world"], ["mat", "world", "the", "cat"]),
        (
            [float(len(WORDS) - index) if index % 2 else 0.0 for index in range(len(WORDS))],
            ["cat", "on", "token", "hello"],
        ),
    ],
)
def test_pruning_by_explicit_frequencies(word_model, frequencies, kept):
    pruned = prune_vocabulary(word_model, 4, frequencies)
    assert pruned[0].vocabulary == kept
    assert pruned[0].metadata.pruning.ranked_by == "frequencies"


def test_pruning_reads_word_counts_from_metadata(word_model):
    word_model[0].metadata.word_counts = list(range(len(WORDS)))  # the last word is the most frequent
    pruned = prune_vocabulary(word_model, 3)
    assert pruned[0].vocabulary == WORDS[::-1][:3]
    assert pruned[0].metadata.word_counts == [13, 12, 11]
    assert pruned[0].metadata.pruning.ranked_by == "word_counts"


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_pruning_refuses_a_bad_size(word_model, bad):
    with pytest.raises(ValueError, match="positive integer"):
        prune_vocabulary(word_model, bad)


def test_pruning_refuses_misaligned_counts(word_model):
    with pytest.raises(ValueError, match="one value per row"):
        prune_vocabulary(word_model, 3, [1.0, 2.0])


# ---------------------------------------------------------------------------------------------- ensembles
WORDS_A = ["the", "cat", "sat", "on", "mat", "zebra", "token", "dog"]
WORDS_B = ["the", "dog", "cat", "sat", "mat", "tokenise", "on", "lion"]
PAIRS = [
    ("the cat sat", "on the mat"),  # every word known to both members
    ("zebra cat", "the dog sat"),  # zebra: only A knows it (B has no prefix of it)
    ("lion mat", "the lion sat"),  # lion: only B knows it
    ("tokeniser mat", "tokenise cat"),  # prefix fallback: A reads token, B reads tokenise
    ("zebra", "the cat"),  # B knows no word of the first text: its block is zero
]


@pytest.fixture
def members() -> list[SentenceTransformer]:
    return [make_model(WORDS_A, 8, seed=1), make_model(WORDS_B, 5, seed=2)]


def weighted_member_cosine(members, weights, first, second):
    total = 0.0
    for member, weight in zip(members, weights, strict=True):
        a, b = member.encode([first, second])
        total += weight * float(a @ b)  # a zero vector gives cosine 0
    return total / sum(weights)


@pytest.mark.parametrize("weights", [[1.0, 1.0], [2.0, 1.0]])
def test_ensemble_dot_product_is_the_weighted_average_of_member_cosines(members, weights, tmp_path):
    combined = ensemble(members, weights)
    save_model(combined, tmp_path / "ensemble")
    reloaded = load_model(tmp_path / "ensemble")
    for model in (combined, reloaded):
        for first, second in PAIRS:
            a, b = model.encode([first, second])
            assert float(a @ b) == pytest.approx(weighted_member_cosine(members, weights, first, second), abs=1e-6)


def test_ensemble_is_one_table_over_the_union_vocabulary(members):
    combined = ensemble(members)
    module = combined[0]
    assert module.vocabulary == union_vocabulary([WORDS_A, WORDS_B])
    assert module.vocabulary[:4] == ["the", "cat", "dog", "sat"]  # best row across members first
    assert set(module.vocabulary) == set(WORDS_A) | set(WORDS_B)
    assert module.embedding_dim == 8 + 5
    assert isinstance(combined[1], BlockNormalize)
    assert combined.get_embedding_dimension() == 13
    rows, _ = module.token_ids(["the zebra sat on the lion"])
    assert len(rows) == 7  # one row of the concatenated table per word, and the empty-text row every text reads
    assert rows[0] == module.fallback.sentinel_row
    lion = module.word_vectors[module.vocabulary.index("lion")].detach()
    assert lion[:8].abs().max() == 0  # A does not know lion, nor any prefix of it
    assert module.metadata.ensemble.block_dims == [8, 5]


def test_ensemble_needs_st_static_to_load(members, tmp_path):
    save_model(ensemble(members), tmp_path / "ensemble")
    modules = json.loads((tmp_path / "ensemble" / "modules.json").read_text())
    assert modules[1]["type"] == "st_static.compression.BlockNormalize"
    with pytest.raises(ValueError, match="trust_remote_code"):
        SentenceTransformer(str(tmp_path / "ensemble"), device="cpu")


def test_quantised_ensemble_keeps_its_block_normalisation(members, tmp_path):
    combined = ensemble(members)
    save_model(quantize(combined, "int8-column"), tmp_path / "ensemble-int8")
    reloaded = load_model(tmp_path / "ensemble-int8")
    assert [type(module) for module in reloaded] == [StaticWordAverage, BlockNormalize]
    texts = [text for pair in PAIRS for text in pair]
    assert unit_cosines(reloaded.encode(texts), combined.encode(texts)).min() > 1 - 1e-3


@pytest.mark.parametrize(
    ("weights", "message"), [([1.0], "2 blocks"), ([0.0, 0.0], "finite positive"), ([1.0, -1.0], "finite positive")]
)
def test_ensemble_refuses_bad_weights(members, weights, message):
    with pytest.raises(ValueError, match=message):
        ensemble(members, weights)


def test_ensemble_refuses_one_model_and_non_plain_members(members):
    with pytest.raises(ValueError, match="at least two"):
        ensemble(members[:1])
    with pytest.raises(ValueError, match="other than Normalize"):
        ensemble([ensemble(members), members[0]])


# ---------------------------------------------------------------------------------------------- truncation
@pytest.mark.parametrize("storage", ["float32", "int8-column"])
def test_truncate_dim_works_on_saved_models(larger_model, storage, tmp_path):
    save_model(quantize(larger_model, storage), tmp_path / "model")
    full = SentenceTransformer(str(tmp_path / "model"), device="cpu")
    truncated = SentenceTransformer(str(tmp_path / "model"), device="cpu", truncate_dim=8)
    embeddings = truncated.encode(TEXTS)
    assert embeddings.shape == (len(TEXTS), 8)
    np.testing.assert_allclose(embeddings, full.encode(TEXTS)[:, :8], atol=1e-6)
    assert (np.linalg.norm(embeddings, axis=1) <= 1 + 1e-6).all()  # Normalize ran before the cut

    cut = truncate_dimensions(full, 8)
    save_model(cut, tmp_path / "cut")
    assert folder_size(tmp_path / "cut") < folder_size(tmp_path / "model")
    cut_embeddings = SentenceTransformer(str(tmp_path / "cut"), device="cpu").encode(TEXTS)
    np.testing.assert_allclose(
        truncated.similarity(embeddings, embeddings), cut.similarity(cut_embeddings, cut_embeddings), atol=1e-5
    )


def test_truncate_dimensions_refuses_bad_dims_and_ensembles(larger_model, members):
    for bad in (0, 33, 2.5):
        with pytest.raises(ValueError, match="between 1 and 32"):
            truncate_dimensions(larger_model, bad)
    with pytest.raises(ValueError, match="ensemble"):
        truncate_dimensions(ensemble(members), 4)


# ---------------------------------------------------------------------------------------------- command line
def test_cli_compress_prunes_and_quantises(word_model, tmp_path):
    save_model(word_model, tmp_path / "model")
    runner = CliRunner()
    result = runner.invoke(
        app, ["compress", str(tmp_path / "model"), "-o", str(tmp_path / "out"), "-s", "int8-row", "-k", "6"]
    )
    assert result.exit_code == 0, result.output
    assert "bare SentenceTransformer" in result.output
    module = StaticWordAverage.load(str(tmp_path / "out"))
    assert module.vocabulary == WORDS[:6]
    assert module.metadata.quantization == "int8-row"


def test_cli_compress_builds_an_ensemble(members, tmp_path):
    for index, member in enumerate(members):
        save_model(member, tmp_path / f"m{index}")
    output = str(tmp_path / "out")
    result = CliRunner().invoke(
        app, ["compress", str(tmp_path / "m0"), str(tmp_path / "m1"), "-o", output, "-w", "2", "-w", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "st_static.load_model" in result.output
    first, second = PAIRS[1]
    a, b = load_model(tmp_path / "out").encode([first, second])
    assert float(a @ b) == pytest.approx(weighted_member_cosine(members, [2, 1], first, second), abs=1e-5)


def block_norms(model: SentenceTransformer, texts: list[str], dims: list[int]) -> np.ndarray:
    """Norms of each block of the averaged (not yet normalised) vectors: one column per block."""
    raw = SentenceTransformer(modules=[model[0]], device="cpu").encode(texts)
    edges = np.cumsum([0, *dims])
    return np.stack([np.linalg.norm(raw[:, a:b], axis=1) for a, b in itertools.pairwise(edges)], 1)


def test_folded_ensemble_scales_blocks_to_their_weights_and_loads_bare(members, tmp_path):
    texts = [text for pair in PAIRS for text in pair]
    folded = fold_block_normalization(ensemble(members, [2.0, 1.0]), texts)
    assert [type(module) for module in folded] == [StaticWordAverage, Normalize]
    norms = block_norms(folded, texts, [8, 5])
    for block, weight in enumerate([2 / 3, 1 / 3]):
        known = norms[:, block] > 0
        assert norms[known, block].mean() == pytest.approx(weight**0.5, rel=1e-5)
    assert folded[0].metadata.ensemble.folded.texts == len(texts)
    save_model(folded, tmp_path / "folded")
    bare = SentenceTransformer(str(tmp_path / "folded"), device="cpu")
    assert np.allclose(bare.encode(texts), load_model(tmp_path / "folded").encode(texts), atol=1e-6)


def test_folding_refuses_a_plain_model_and_texts_a_member_cannot_read(members):
    with pytest.raises(ValueError, match="Only an ensemble"):
        fold_block_normalization(members[0], ["the cat"])
    with pytest.raises(ValueError, match="member 1"):
        fold_block_normalization(ensemble(members), ["zebra", "zebra zebra"])  # B knows no word of either
    with pytest.raises(ValueError, match="needs texts"):
        fold_block_normalization(ensemble(members), [])


def test_cli_compress_folds_an_ensemble_for_a_bare_load(members, tmp_path):
    for index, member in enumerate(members):
        save_model(member, tmp_path / f"m{index}")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\n\nthe dog sat\nlion mat\n", encoding="utf-8")
    models = [str(tmp_path / "m0"), str(tmp_path / "m1")]
    result = CliRunner().invoke(app, ["compress", *models, "-o", str(tmp_path / "out"), "--fold-norms", str(corpus)])
    assert result.exit_code == 0, result.output
    assert "bare SentenceTransformer" in result.output
    modules = json.loads((tmp_path / "out" / "modules.json").read_text())
    assert [module["type"].rsplit(".", 1)[-1] for module in modules] == ["StaticEmbedding", "Normalize"]
    assert load_model(tmp_path / "out")[0].metadata.ensemble.folded.texts == 3
    one = CliRunner().invoke(app, ["compress", models[0], "-o", str(tmp_path / "one"), "--fold-norms", str(corpus)])
    assert one.exit_code == 1
    assert "--fold-norms only applies to an ensemble" in one.output
    assert not (tmp_path / "one").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["-s", "int4"], "unknown storage format"), (["-w", "1", "-w", "2"], "--weight"), (["-k", "0"], "positive")],
)
def test_cli_compress_reports_bad_options(word_model, tmp_path, extra, message):
    save_model(word_model, tmp_path / "model")
    result = CliRunner().invoke(app, ["compress", str(tmp_path / "model"), "-o", str(tmp_path / "out"), *extra])
    assert result.exit_code == 1
    assert message in result.output
    assert not (tmp_path / "out").exists()


def test_fast_path_refuses_models_with_modules_it_would_skip(word_model):
    model = SentenceTransformer(
        modules=[word_model[0], Dense(16, 16, bias=False, activation_function=None), Normalize()], device="cpu"
    )
    with pytest.raises(TypeError, match="Dense"):
        st_static.encode(model, "the cat")


def test_the_fast_path_sends_an_ensemble_to_model_encode_only(word_model):
    """Issue 66: it said to load the model with st_static.load_model, which an ensemble's BlockNormalize outlives."""
    from st_static.compression import BlockNormalize

    model = SentenceTransformer(modules=[word_model[0], BlockNormalize([8, 8])], device="cpu")
    with pytest.raises(TypeError, match=r"has BlockNormalize\. Use model\.encode\.$"):
        st_static.encode(model, "the cat")


def test_a_folded_ensembles_card_names_both_teachers_and_a_bare_load(members, tmp_path):
    teachers = ["sentence-transformers/all-MiniLM-L6-v2", "sentence-transformers/all-mpnet-base-v2"]
    for member, teacher in zip(members, teachers, strict=True):
        member[0].metadata.teacher, member[0].metadata.languages, member[0].metadata.corpus = teacher, ["en"], "en.txt"
    texts = [text for pair in PAIRS for text in pair]
    save_model(fold_block_normalization(ensemble(members), texts), tmp_path / "folded")
    card = (tmp_path / "folded" / "README.md").read_text(encoding="utf-8")
    for teacher in teachers:
        assert f"[{teacher}](https://huggingface.co/{teacher})" in card
    assert "distilled from all-MiniLM-L6-v2 + all-mpnet-base-v2" in card
    assert "**Ensemble.**" in card
    assert "No `trust_remote_code`" in card
    assert "model2vec.StaticModel" in card or "from model2vec import StaticModel" in card
    assert (tmp_path / "folded" / "config.json").is_file()  # model2vec reads the folded table
    save_model(ensemble(members), tmp_path / "unfolded")
    assert "does not load in model2vec" in (tmp_path / "unfolded" / "README.md").read_text(encoding="utf-8")
