"""Extraction: vocabulary, N-shortest selection, offset alignment, resume, two-process reduction, PCA/ABTT."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sklearn.decomposition import PCA

import st_static
from st_static.extraction import (
    CorpusError,
    ExtractionSettings,
    TeacherError,
    build_vocabulary,
    count_word_sentences,
    extract_word_vectors,
    fit_pca,
    run_extraction,
    run_reduction,
    select_sentences,
)
from st_static.extraction.extract import plan_batches, teacher_token_counts
from st_static.extraction.teacher_model import load_teacher, teacher_precision
from st_static.model.tokenization import build_word_tokenizer
from st_static.settings import ReductionSettings, SettingsError
from st_static.stages.extraction_folder import ExtractionStage

from .teachers import TINY_CORPUS, make_tiny_teacher

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", params=["wordpiece", "unigram"])
def tiny_teacher(request, tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp(request.param), kind=request.param)


@pytest.fixture
def corpus_file(tmp_path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(TINY_CORPUS * 2) + "\n", encoding="utf-8")
    return path


def tiny_vocabulary(min_sentences: int = 1):
    return build_vocabulary(count_word_sentences(TINY_CORPUS), size=1000, min_sentences=min_sentences)


def test_vocabulary_is_most_frequent_first_and_reports_rare_words():
    vocabulary = build_vocabulary(Counter({"the": 9, "cat": 4, "rare": 1, "dog": 4}), size=10, min_sentences=2)
    assert vocabulary.words == ["the", "cat", "dog"]
    assert vocabulary.too_rare == {"rare": 1}
    assert vocabulary.report()["left_out_too_rare"] == 1


def test_vocabulary_without_coverage_is_an_error():
    with pytest.raises(ValueError, match="too small"):
        build_vocabulary(Counter({"the": 1}), size=10, min_sentences=1, word_list=["absent", "missing"])


def test_selection_keeps_the_n_shortest_sentences_per_word():
    sentences = ["x " + "filler " * 5, "x a b", "x " + "filler " * 9, "x", "y y"]
    tokenizer = build_word_tokenizer(["x", "y", "a", "b"])
    selection = select_sentences(sentences, tokenizer, sentences_per_word=2, chunk_size=2, pca_sample_size=3)
    assert selection.sentences == ["x a b", "x", "y y"]  # corpus order, the two shortest with "x"
    assert selection.selected_per_word[0] == 2
    assert selection.corpus_size == 5
    assert len(selection.pca_sentences) == 3


def test_selection_respects_the_sentence_length_cap():
    tokenizer = build_word_tokenizer(["x"])
    selection = select_sentences(["x " * 10, "x x"], tokenizer, max_words=5, pca_sample_size=1)
    assert selection.sentences == ["x x"]


def test_multi_piece_words_average_their_pieces(tiny_teacher):
    teacher = SentenceTransformer(str(tiny_teacher), device="cpu")
    sentence = "unbelievable tokenisation"
    tokenizer = build_word_tokenizer(["unbelievable", "tokenisation"])
    result = extract_word_vectors(teacher, [sentence], tokenizer)
    encoded = teacher[0].tokenizer([sentence], return_offsets_mapping=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = teacher[0].model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"])
    hidden = hidden.last_hidden_state[0]
    offsets = encoded["offset_mapping"][0].tolist()
    for row, (start, end) in enumerate([(0, 12), (13, 25)]):
        pieces = [i for i, (s, e) in enumerate(offsets) if e > s and s < end and e > start]
        assert len(pieces) >= 2  # the word really is split into several teacher pieces
        np.testing.assert_allclose(result.word_vectors[row], hidden[pieces].mean(0).numpy(), atol=1e-5)
    np.testing.assert_allclose(result.sentence_embeddings[0], teacher.encode(sentence), atol=1e-5)


def test_words_average_over_their_occurrences(tiny_teacher):
    teacher = SentenceTransformer(str(tiny_teacher), device="cpu")
    tokenizer = build_word_tokenizer(["cat"])
    both = extract_word_vectors(teacher, ["the cat sat", "a red cat"], tokenizer)
    first = extract_word_vectors(teacher, ["the cat sat"], tokenizer)
    second = extract_word_vectors(teacher, ["a red cat"], tokenizer)
    assert both.occurrences.tolist() == [2]
    np.testing.assert_allclose(both.word_vectors[0], (first.word_vectors[0] + second.word_vectors[0]) / 2, atol=1e-5)


def test_a_bfloat16_teacher_gives_nearly_the_float32_vectors(tiny_teacher):
    tokenizer = build_word_tokenizer(["cat", "dog", "mat", "log"])
    exact = extract_word_vectors(load_teacher(str(tiny_teacher), "cpu", precision="float32"), TINY_CORPUS, tokenizer)
    fast_teacher = load_teacher(str(tiny_teacher), "cpu", precision="bfloat16")
    assert next(fast_teacher.parameters()).dtype == torch.bfloat16
    fast = extract_word_vectors(fast_teacher, TINY_CORPUS, tokenizer)
    assert fast.word_vectors.dtype == exact.word_vectors.dtype
    cosines = (fast.word_vectors * exact.word_vectors).sum(1) / (
        np.linalg.norm(fast.word_vectors, axis=1) * np.linalg.norm(exact.word_vectors, axis=1)
    )
    assert cosines.min() > 0.99
    assert not np.array_equal(fast.word_vectors, exact.word_vectors)


def test_an_int8_teacher_quantises_every_linear_layer_and_gives_nearly_the_float32_vectors(tiny_teacher):
    tokenizer = build_word_tokenizer(["cat", "dog", "mat", "log"])
    exact = extract_word_vectors(load_teacher(str(tiny_teacher), "cpu", precision="float32"), TINY_CORPUS, tokenizer)
    quantised = load_teacher(str(tiny_teacher), "cpu", precision="int8")
    assert not [name for name, module in quantised.named_modules() if type(module) is torch.nn.Linear]
    fast = extract_word_vectors(quantised, TINY_CORPUS, tokenizer)
    cosines = (fast.word_vectors * exact.word_vectors).sum(1) / (
        np.linalg.norm(fast.word_vectors, axis=1) * np.linalg.norm(exact.word_vectors, axis=1)
    )
    assert cosines.min() > 0.9
    assert not np.array_equal(fast.word_vectors, exact.word_vectors)
    assert teacher_precision("int8", "cpu") == "int8"


def test_int8_is_refused_off_the_cpu_and_unknown_precisions_are_refused(tiny_teacher):
    with pytest.raises(TeacherError, match="int8 is a CPU format"):
        load_teacher(str(tiny_teacher), "meta", precision="int8")
    assert ExtractionSettings(teacher="t", teacher_precision="int8").teacher_precision == "int8"
    with pytest.raises(SettingsError, match="int8"):
        ExtractionSettings(teacher="t", teacher_precision="int4")


def test_auto_precision_is_bfloat16_only_where_the_device_computes_it():
    assert teacher_precision("float32", "cpu") == "float32"
    assert teacher_precision("bfloat16", "cpu") == "bfloat16"
    native = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    assert teacher_precision("auto", "cpu") == ("bfloat16" if native else "float32")
    assert teacher_precision("auto", "meta") == "float32"


def test_prompt_is_respected(tiny_teacher):
    teacher = SentenceTransformer(str(tiny_teacher), device="cpu")
    tokenizer = build_word_tokenizer(["cat"])
    plain = extract_word_vectors(teacher, ["the cat sat"], tokenizer)
    prompted = extract_word_vectors(teacher, ["the cat sat"], tokenizer, prompt="a red mat: ")
    np.testing.assert_allclose(
        prompted.sentence_embeddings[0], teacher.encode("the cat sat", prompt="a red mat: "), atol=1e-5
    )
    assert not np.allclose(plain.word_vectors, prompted.word_vectors)
    assert np.abs(prompted.word_vectors).sum() > 0


def test_batches_planned_by_teacher_tokens_cover_every_sentence_within_the_budget():
    token_counts = np.random.default_rng(0).integers(3, 60, size=2000)
    sentences = [f"sentence {index}" for index in range(2000)]
    batches = plan_batches(sentences, 1024, 128, token_counts)
    covered = np.concatenate([batch.indices for batch in batches])
    assert sorted(covered.tolist()) == list(range(2000))
    assert all(batch.texts == [sentences[index] for index in batch.indices] for batch in batches)
    slots = [len(batch.indices) * int(token_counts[batch.indices].max()) for batch in batches]
    assert max(slots) <= 1024
    assert max(len(batch.indices) for batch in batches) <= 128
    assert sum(slots) / token_counts.sum() < 1.05  # sorted by token count: little padding
    with pytest.raises(ValueError, match="one count per sentence"):
        plan_batches(sentences, 1024, 128, token_counts[:10])


def test_token_counts_are_the_teachers_with_prompt_and_special_tokens(tiny_teacher):
    teacher = SentenceTransformer(str(tiny_teacher), device="cpu")
    sentences = ["the cat sat", "a dog"]
    counts = teacher_token_counts(teacher, sentences)
    features = teacher.preprocess(sentences)
    assert counts.tolist() == features["attention_mask"].sum(dim=1).tolist()
    assert (teacher_token_counts(teacher, sentences, prompt="query: ") > counts).all()


def test_interrupted_extraction_resumes_to_the_same_result(tiny_teacher, tmp_path, monkeypatch):
    teacher = SentenceTransformer(str(tiny_teacher), device="cpu")
    vocabulary = tiny_vocabulary()
    tokenizer = build_word_tokenizer(vocabulary.words)
    kwargs = {"batch_tokens": 16, "max_batch_size": 2, "checkpoint_seconds": 0.0}
    reference = extract_word_vectors(teacher, TINY_CORPUS, tokenizer, **kwargs)

    calls = {"count": 0}
    original_forward = teacher.forward

    def failing_forward(features, **forward_kwargs):
        calls["count"] += 1
        if calls["count"] == 4:
            raise KeyboardInterrupt
        return original_forward(features, **forward_kwargs)

    monkeypatch.setattr(teacher, "forward", failing_forward)
    with pytest.raises(KeyboardInterrupt):
        extract_word_vectors(teacher, TINY_CORPUS, tokenizer, checkpoint_dir=tmp_path, **kwargs)
    monkeypatch.setattr(teacher, "forward", original_forward)
    counted = {"count": 0}

    def counting_forward(features, **forward_kwargs):
        counted["count"] += 1
        return original_forward(features, **forward_kwargs)

    monkeypatch.setattr(teacher, "forward", counting_forward)
    resumed = extract_word_vectors(teacher, TINY_CORPUS, tokenizer, checkpoint_dir=tmp_path, resume=True, **kwargs)
    token_counts = teacher_token_counts(teacher, TINY_CORPUS)
    batches = len(plan_batches(TINY_CORPUS, kwargs["batch_tokens"], kwargs["max_batch_size"], token_counts))
    # One probe forward (the teacher check) plus the batches not finished before the interruption:
    # the interrupted run made the probe and two batches, so two batches are not run again.
    assert counted["count"] == 1 + batches - 2
    np.testing.assert_allclose(resumed.word_vectors, reference.word_vectors, atol=1e-6)
    np.testing.assert_allclose(resumed.sentence_embeddings, reference.sentence_embeddings, atol=1e-6)
    np.testing.assert_array_equal(resumed.occurrences, reference.occurrences)


def test_resume_refuses_a_checkpoint_of_another_job(tiny_teacher, tmp_path):
    teacher = SentenceTransformer(str(tiny_teacher), device="cpu")
    tokenizer = build_word_tokenizer(tiny_vocabulary().words)
    extract_word_vectors(teacher, TINY_CORPUS, tokenizer, checkpoint_dir=tmp_path)
    with pytest.raises(ValueError, match="different extraction"):
        extract_word_vectors(teacher, TINY_CORPUS[:5], tokenizer, checkpoint_dir=tmp_path, resume=True)


DISTRIBUTED_SCRIPT = """
import sys, numpy as np
from sentence_transformers import SentenceTransformer
from st_static.extraction import build_vocabulary, count_word_sentences, extract_word_vectors
from st_static.model.tokenization import build_word_tokenizer
sys.path.insert(0, sys.argv[3])
from tests.teachers import TINY_CORPUS
import torch.distributed as dist
teacher = SentenceTransformer(sys.argv[1], device="cpu")
words = build_vocabulary(count_word_sentences(TINY_CORPUS), size=1000, min_sentences=1).words
result = extract_word_vectors(teacher, TINY_CORPUS, build_word_tokenizer(words), batch_tokens=16, max_batch_size=2)
if dist.get_rank() == 0:
    np.savez(sys.argv[2], vectors=result.word_vectors, counts=result.occurrences, targets=result.sentence_embeddings)
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_two_processes_give_the_same_table_as_one(tiny_teacher, tmp_path):
    teacher = SentenceTransformer(str(tiny_teacher), device="cpu")
    tokenizer = build_word_tokenizer(tiny_vocabulary().words)
    single = extract_word_vectors(teacher, TINY_CORPUS, tokenizer, batch_tokens=16, max_batch_size=2)
    script = tmp_path / "extract.py"
    script.write_text(DISTRIBUTED_SCRIPT)
    torchrun = shutil.which("torchrun") or str(Path(sys.executable).with_name("torchrun"))
    result = subprocess.run(
        [
            torchrun,
            "--nproc-per-node",
            "2",
            "--master-port",
            str(free_port()),
            str(script),
            str(tiny_teacher),
            str(tmp_path / "out.npz"),
            str(REPO_ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    double = np.load(tmp_path / "out.npz")
    np.testing.assert_array_equal(double["counts"], single.occurrences)
    np.testing.assert_allclose(double["vectors"], single.word_vectors, atol=1e-5)
    np.testing.assert_allclose(double["targets"], single.sentence_embeddings, atol=1e-5)


def test_pca_matches_sklearn_after_dropping_top_components():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((500, 12)) * np.linspace(5, 0.5, 12)
    transform = fit_pca(data, dim=4, removed_components=2)
    reference = PCA(n_components=6).fit(data)
    ours = transform.apply(data)
    theirs = reference.transform(data)[:, 2:6]
    np.testing.assert_allclose(np.abs(ours), np.abs(theirs), atol=1e-4)


def test_pca_checks_its_arguments():
    with pytest.raises(ValueError, match="only 4"):
        fit_pca(np.ones((50, 4)), dim=4, removed_components=1)
    with pytest.raises(ValueError, match="needs more"):
        fit_pca(np.ones((3, 8)), dim=4, removed_components=0)


def test_reduced_table_gives_the_transformed_sentence_mean(tiny_teacher, corpus_file, tmp_path):
    settings = ExtractionSettings(
        teacher=str(tiny_teacher), min_sentences=1, pca_sample_size=50, teacher_precision="float32"
    )
    stage = run_extraction(corpus_file, settings, tmp_path / "extraction")
    reduction = ReductionSettings(dim=8, removed_components=1)
    reduced = run_reduction(stage, tmp_path / "reduced", reduction)
    raw = st_static.model.save_load.load_model(stage.model_path)
    from st_static.stages.reduction import fit_reduction

    transform = fit_reduction(raw[0], stage.pca_sentences(), reduction)
    texts = ["the cat sat on the mat", "a red dog"]
    expected = transform.apply(st_static.encode(raw, texts, normalize=False))
    np.testing.assert_allclose(st_static.encode(reduced, texts, normalize=False), expected, atol=1e-5)
    assert reduced[0].metadata.stages == ["extraction", "pca"]
    assert reduced[0].metadata.pca.to_dict() == {"level": "sentence", "removed_components": 1, "dim": 8}


def test_extraction_stage_writes_model_targets_and_stats(tiny_teacher, corpus_file, tmp_path):
    settings = ExtractionSettings(
        teacher=str(tiny_teacher), min_sentences=3, pca_sample_size=50, teacher_precision="float32"
    )
    stage = run_extraction(corpus_file, settings, tmp_path / "extraction")  # the corpus holds each line twice
    reopened = ExtractionStage.open(tmp_path / "extraction")
    sentences = reopened.sentences()
    targets = reopened.teacher_embeddings()
    assert len(sentences) == targets.shape[0] > 0
    teacher = SentenceTransformer(str(tiny_teacher), device="cpu")
    np.testing.assert_allclose(targets[:3], teacher.encode(sentences[:3]), atol=1e-5)
    stats = json.loads((tmp_path / "extraction" / "stats.json").read_text())
    assert stats["words_with_at_least"]["1"] == stats["words_kept"]
    assert stats["vocabulary"]["left_out_too_rare"] > 0  # words in two sentences are reported, not kept
    model = SentenceTransformer(str(stage.model_path), device="cpu")
    assert model.encode("the cat").shape == (32,)
    assert not list(tmp_path.glob(".*tmp*")) and not (tmp_path / "extraction.partial").exists()


def test_missing_empty_and_tiny_corpora_fail_before_loading_the_teacher(tmp_path):
    settings = ExtractionSettings(teacher=str(tmp_path / "no-such-teacher"))
    with pytest.raises(CorpusError, match="does not exist"):
        run_extraction(tmp_path / "absent.txt", settings, tmp_path / "out")
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(CorpusError, match="empty"):
        run_extraction(tmp_path / "empty.txt", settings, tmp_path / "out")


def test_tiny_corpus_is_refused(tiny_teacher, tmp_path):
    (tmp_path / "tiny.txt").write_text("the cat\nthe cat sat\n")
    with pytest.raises(CorpusError, match="only 2 sentence"):
        run_extraction(
            tmp_path / "tiny.txt", ExtractionSettings(teacher=str(tiny_teacher), min_sentences=1), tmp_path / "o"
        )


def test_a_static_model_cannot_be_a_teacher(word_model, tmp_path):
    word_model.save_pretrained(str(tmp_path / "static"))
    with pytest.raises(TeacherError, match="token embeddings"):
        extract_word_vectors(SentenceTransformer(str(tmp_path / "static")), ["the cat"], build_word_tokenizer(["cat"]))


def test_cli_extract_writes_raw_and_reduced_models(tiny_teacher, corpus_file, tmp_path):
    from typer.testing import CliRunner

    from st_static.cli import app

    arguments = ["extract", "--teacher", str(tiny_teacher), "--corpus", str(corpus_file), "--out", str(tmp_path / "x")]
    result = CliRunner().invoke(app, [*arguments, "--dim", "8", "--min-sentences", "1"])
    assert result.exit_code == 0, result.output
    assert SentenceTransformer(str(tmp_path / "x" / "reduced"), device="cpu").encode("the cat").shape == (8,)
    assert SentenceTransformer(str(tmp_path / "x" / "model"), device="cpu").encode("the cat").shape == (32,)
    assert (tmp_path / "x" / "targets" / "teacher_embeddings.npy").is_file()
    missing = CliRunner().invoke(app, ["extract", "--corpus", str(tmp_path / "none.txt"), "--out", str(tmp_path / "y")])
    assert missing.exit_code == 1
    assert "does not exist" in missing.output
