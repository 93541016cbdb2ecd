"""Teachers with a Dense head (EmbeddingGemma's shape), teachers' own prompts, and the long-text targets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Dense, Normalize

import st_static
from st_static.extraction.corpus import CorpusError
from st_static.extraction.extract import extract_word_vectors
from st_static.extraction.long_texts import make_long_texts, pick_passages
from st_static.extraction.teacher_model import sentence_head
from st_static.model.tokenization import build_word_tokenizer
from st_static.settings import BuildSettings, ExtractionSettings, SettingsError
from st_static.teachers import TeacherError, default_prompt

from .teachers import TINY_CORPUS, make_tiny_teacher

TINY = {"dim": 8, "min_sentences": 1, "steps": 8, "batch_size": 4, "eval_steps": 4, "pca_sample_size": 100}


@pytest.fixture(scope="module")
def teacher_folder(tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp("teacher"))


def _with_head(folder: Path, activation: torch.nn.Module | None = None) -> SentenceTransformer:
    """The tiny teacher with Dense 32 -> 48 -> 16 between pooling and Normalize (EmbeddingGemma's shape)."""
    base = SentenceTransformer(str(folder), device="cpu")
    torch.manual_seed(1)
    first = Dense(32, 48, bias=False, activation_function=activation or torch.nn.Identity())
    second = Dense(48, 16, bias=False, activation_function=torch.nn.Identity())
    return SentenceTransformer(modules=[base[0], base[1], first, second, Normalize()], device="cpu")


def test_the_head_maps_mean_token_vectors_onto_the_teachers_sentence_vector(teacher_folder):
    teacher = _with_head(teacher_folder)
    features = teacher.preprocess(["the cat sat on the mat"])
    with torch.inference_mode():
        output = teacher.forward(features)
    mean = output["token_embeddings"][0].mean(dim=0, keepdim=True).numpy()
    mapped = sentence_head(teacher)(mean)[0]
    cosine = mapped @ output["sentence_embedding"][0].numpy() / np.linalg.norm(mapped)
    assert cosine == pytest.approx(1.0, abs=1e-5)
    assert sentence_head(SentenceTransformer(str(teacher_folder), device="cpu")) is None  # no Dense: nothing to map


def test_extraction_puts_word_vectors_in_the_heads_space(teacher_folder):
    teacher = _with_head(teacher_folder)
    words = ["cat", "dog", "mat"]
    tokenizer = build_word_tokenizer(words, teacher_tokenizer=teacher[0].tokenizer._tokenizer)
    result = extract_word_vectors(teacher, ["cat", "the dog", "a mat"], tokenizer)
    assert result.word_vectors.shape == (3, 16)
    assert result.sentence_embeddings.shape == (3, 16)
    features = teacher.preprocess(["cat"])  # [CLS] cat [SEP]: the word is token 1
    with torch.inference_mode():
        token_vectors = teacher.forward(features)["token_embeddings"][0]
    expected = sentence_head(teacher)(token_vectors[1:2].numpy())[0]
    np.testing.assert_allclose(result.word_vectors[0], expected, rtol=1e-4, atol=1e-5)


def test_a_head_that_is_not_linear_and_changes_the_dimension_is_refused(teacher_folder):
    teacher = _with_head(teacher_folder, activation=torch.nn.Tanh())
    assert sentence_head(teacher) is None
    tokenizer = build_word_tokenizer(["cat"], teacher_tokenizer=teacher[0].tokenizer._tokenizer)
    with pytest.raises(TeacherError, match="not linear"):
        extract_word_vectors(teacher, ["cat"], tokenizer)


def test_a_teachers_own_prompt_is_the_default(tmp_path, teacher_folder):
    assert default_prompt("google/embeddinggemma-300m") == "task: sentence similarity | query: "
    assert default_prompt("intfloat/multilingual-e5-small") == "query: "
    assert default_prompt(teacher_folder) == ""
    config_path = teacher_folder / "config_sentence_transformers.json"
    config = json.loads(config_path.read_text())
    prompted = tmp_path / "prompted"
    prompted.mkdir()
    for item in teacher_folder.iterdir():
        (prompted / item.name).symlink_to(item)
    (prompted / config_path.name).unlink()
    (prompted / config_path.name).write_text(
        json.dumps({**config, "prompts": {"query": "q: ", "document": "d: "}, "default_prompt_name": "query"})
    )
    assert default_prompt(prompted) == "q: "
    assert ExtractionSettings(teacher=str(prompted)).with_teacher_prompt().prompt == "q: "
    assert ExtractionSettings(teacher=str(prompted), prompt="").with_teacher_prompt().prompt == ""
    (prompted / config_path.name).write_text(json.dumps({**config, "default_prompt_name": "missing"}))
    with pytest.raises(TeacherError, match="does not define it"):
        default_prompt(prompted)


def test_long_texts_join_consecutive_lines_and_are_cut():
    sentences = [f"sentence {index} here" for index in range(10)]
    texts = make_long_texts(sentences, count=3, sentences_per_text=3, seed=0)
    assert len(texts) == 3
    for text in texts:
        first = int(text.split()[1])
        assert text == " ".join(f"sentence {index} here" for index in range(first, first + 3))
    assert all(len(text.split()) == 4 for text in make_long_texts(sentences, 2, 3, cut=4))
    with pytest.raises(ValueError, match="fewer than one long text"):
        make_long_texts(sentences[:2], 1, 3)
    with pytest.raises(SettingsError, match="long_text_sentences"):
        ExtractionSettings(long_text_sentences=1)


def test_long_texts_join_the_distillation_and_key_their_own_stage(teacher_folder, tmp_path):
    work = tmp_path / "work"
    plain = st_static.distill(str(teacher_folder), TINY_CORPUS * 3, work_dir=work, **TINY)
    with_long = st_static.distill(str(teacher_folder), TINY_CORPUS * 3, work_dir=work, long_texts=6, **TINY)
    assert len(list(work.glob("extraction-*"))) == 1  # the teacher pass is shared
    (long_stage,) = work.glob("long-texts-*")
    texts = (long_stage / "texts.txt").read_text().split("\n")
    assert len(texts) == 6 and np.load(long_stage / "targets.npy").shape[0] == 6
    assert len(list(work.glob("distillation-*"))) == 2
    assert not np.allclose(plain.encode(["the cat sat"]), with_long.encode(["the cat sat"]))


def test_long_texts_are_the_teachers_vectors_in_order_and_another_prompt_discards_the_kept_chunks(
    teacher_folder, tmp_path, monkeypatch
):
    from st_static.extraction import long_texts

    monkeypatch.setattr(long_texts, "CHUNK", 3)
    teacher = SentenceTransformer(str(teacher_folder), device="cpu")
    texts = make_long_texts(list(dict.fromkeys(TINY_CORPUS)), count=7, sentences_per_text=3, seed=1)
    partial = tmp_path / "partial"
    vectors = long_texts.encode_long_texts(teacher, texts, "", partial)
    np.testing.assert_allclose(vectors, teacher.encode(texts, normalize_embeddings=True), atol=1e-5)
    assert len(texts) > 3 and len(list(partial.glob("chunk-*.npy"))) == -(-len(texts) // 3)
    prompted = long_texts.encode_long_texts(teacher, texts, "query: ", partial)
    expected = teacher.encode(texts, prompt="query: ", normalize_embeddings=True)
    np.testing.assert_allclose(prompted, expected, atol=1e-5)  # not the chunks of the pass without the prompt


def test_passages_are_kept_whole_in_file_order_chosen_by_count_and_cut():
    passages = ["one two  three", "", "four five six seven", "  ", "eight nine"]
    assert pick_passages(passages, 0) == ["one two three", "four five six seven", "eight nine"]
    whole = pick_passages(passages, 0)
    chosen = pick_passages(passages, 2, seed=3)
    assert len(chosen) == 2 and chosen == sorted(chosen, key=whole.index)
    assert pick_passages(passages, 0, cut=2) == ["one two", "four five", "eight nine"]
    with pytest.raises(ValueError, match="no text"):
        pick_passages(["", " "], 0)


def test_passages_replace_corpus_runs_as_long_texts_and_key_their_stage(teacher_folder, tmp_path):
    work = tmp_path / "work"
    passages = tmp_path / "passages.txt"
    passages.write_text("the cat sat on the mat. the dog ran in the park.\na bird sang. the sun is out today.\n")
    st_static.distill(str(teacher_folder), TINY_CORPUS * 3, work_dir=work, passages=str(passages), **TINY)
    (stage,) = work.glob("long-texts-*")
    assert sorted((stage / "texts.txt").read_text().split("\n")) == [
        "a bird sang. the sun is out today.",
        "the cat sat on the mat. the dog ran in the park.",
    ]
    passages.write_text("the cat sat on the mat. a bird sang.\n")
    st_static.distill(str(teacher_folder), TINY_CORPUS * 3, work_dir=work, passages=str(passages), **TINY)
    assert len(list(work.glob("long-texts-*"))) == 2  # new passages, new teacher targets
    with pytest.raises(SettingsError, match="one-language"):
        BuildSettings(passages=str(passages), parallel=["pairs.tsv"], languages=["en", "de"])
    with pytest.raises(CorpusError, match=r"passages: .*does not exist"):
        st_static.distill(
            str(teacher_folder), TINY_CORPUS * 3, work_dir=work, passages=str(tmp_path / "no.txt"), **TINY
        )


def test_an_interrupted_pass_of_a_teacher_with_a_head_resumes_to_the_same_table(teacher_folder, tmp_path, monkeypatch):
    teacher = _with_head(teacher_folder)
    tokenizer = build_word_tokenizer(
        ["cat", "dog", "mat", "red", "log"], teacher_tokenizer=teacher[0].tokenizer._tokenizer
    )
    arguments = {"batch_tokens": 16, "max_batch_size": 2, "checkpoint_seconds": 0.0}
    reference = extract_word_vectors(teacher, TINY_CORPUS, tokenizer, **arguments)
    original_forward, calls = teacher.forward, {"count": 0}

    def interrupted_forward(features, **kwargs):
        calls["count"] += 1
        if calls["count"] == 4:
            raise KeyboardInterrupt  # what Ctrl-C (SIGINT) raises in the middle of the pass
        return original_forward(features, **kwargs)

    monkeypatch.setattr(teacher, "forward", interrupted_forward)
    with pytest.raises(KeyboardInterrupt):
        extract_word_vectors(teacher, TINY_CORPUS, tokenizer, checkpoint_dir=tmp_path, **arguments)
    monkeypatch.setattr(teacher, "forward", original_forward)
    resumed = extract_word_vectors(teacher, TINY_CORPUS, tokenizer, checkpoint_dir=tmp_path, resume=True, **arguments)
    assert resumed.word_vectors.shape == (5, 16)
    np.testing.assert_array_equal(resumed.word_vectors, reference.word_vectors)
    np.testing.assert_array_equal(resumed.sentence_embeddings, reference.sentence_embeddings)
