"""``st_static.distill``: one call from a teacher and a corpus (file, list or dataset) to a model in memory; corpus
checks before the teacher runs."""

from __future__ import annotations

import codecs
import logging
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

import st_static
import st_static.stages.extraction as stages_module
from st_static.extraction.corpus import CorpusError, check_corpus
from st_static.teachers import TeacherError

from .teachers import TINY_CORPUS, make_tiny_teacher

TINY = {"dim": 8, "min_sentences": 1, "steps": 8, "batch_size": 4, "eval_steps": 4, "pca_sample_size": 100}


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp("teacher"))


def test_distill_from_a_list_returns_a_model_and_writes_nothing(teacher, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = st_static.distill(str(teacher), TINY_CORPUS * 3, **TINY)
    assert isinstance(model, SentenceTransformer)
    assert model.encode(["the cat sat"]).shape == (1, 8)
    assert model[0].metadata.corpus == "36 sentences given in memory"
    assert list(tmp_path.iterdir()) == []
    model.save_pretrained(str(tmp_path / "saved"))
    reloaded = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    np.testing.assert_allclose(reloaded.encode(["the cat sat"]), model.encode(["the cat sat"]), atol=1e-6)


def test_distill_from_a_file_a_dataset_and_a_loaded_teacher_agree(teacher, tmp_path):
    from datasets import Dataset

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    from_file = st_static.distill(str(teacher), corpus, **TINY)
    from_dataset = st_static.distill(
        SentenceTransformer(str(teacher), device="cpu"), Dataset.from_dict({"text": TINY_CORPUS * 3}), **TINY
    )
    texts = ["the cat sat on the mat", "a red dog"]
    np.testing.assert_allclose(from_file.encode(texts), from_dataset.encode(texts), atol=1e-5)
    assert from_file[0].metadata.corpus == "corpus.txt"


def test_a_work_dir_makes_a_second_call_reuse_the_stages(teacher, tmp_path, monkeypatch):
    st_static.distill(str(teacher), TINY_CORPUS * 3, work_dir=tmp_path / "cache", **TINY)
    monkeypatch.setattr(stages_module, "extract_word_vectors", lambda *a, **k: pytest.fail("teacher ran again"))
    st_static.distill(str(teacher), TINY_CORPUS * 3, work_dir=tmp_path / "cache", **TINY)


def test_a_small_corpus_builds_with_a_warning(teacher, caplog):
    with caplog.at_level(logging.WARNING):
        st_static.distill(str(teacher), TINY_CORPUS * 3, **TINY)
    assert "the table will be weak" in caplog.text
    assert "without early stopping" in caplog.text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"the cat\nsat\n", "only 2 sentence"),
        (codecs.BOM_UTF16_LE + "the cat sat\n".encode("utf-16-le") * 20, "UTF-16"),
        (b"caf\xe9\n" * 20 + b"the cat\n", "not valid UTF-8"),
    ],
)
def test_unusable_corpora_fail_before_the_teacher_loads(tmp_path, content, message):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(content)
    started = time.perf_counter()
    with pytest.raises(CorpusError, match=message):
        st_static.distill("never-loaded/teacher", corpus)
    assert time.perf_counter() - started < 5


def test_a_few_invalid_lines_are_counted_and_left_out(tmp_path, caplog):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"the cat sat\n" * 50 + b"caf\xe9\n" * 2)
    with caplog.at_level(logging.WARNING):
        report = check_corpus(corpus)
    assert (report.sentences, report.skipped_lines) == (50, 2)
    assert "2 of 52 lines are not valid UTF-8" in caplog.text


def test_an_unknown_teacher_fails_before_the_corpus_is_read(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    with pytest.raises(TeacherError, match="no such folder"):
        st_static.distill(str(tmp_path / "missing-teacher"), corpus)
    with pytest.raises(TeacherError, match="Cannot load the teacher org/not-cached"):
        st_static.distill("org/not-cached", corpus)


def test_a_generator_corpus_is_refused(teacher):
    with pytest.raises(CorpusError, match="generator"):
        st_static.distill(str(teacher), (line for line in TINY_CORPUS))


def test_an_uncached_hub_teacher_fails_at_once_without_the_hubs_retries(monkeypatch):
    from huggingface_hub import constants
    from huggingface_hub.errors import RepositoryNotFoundError

    from st_static.extraction.teacher_model import load_teacher_tokenizer

    def never(*args, **kwargs):
        pytest.fail("the model was loaded from the Hub after the Hub was found unreachable or without it")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr("transformers.AutoTokenizer.from_pretrained", never)

    def unreachable(*args, **kwargs):
        raise OSError("[Errno -2] Name or service not known")

    monkeypatch.setattr("huggingface_hub.HfApi.model_info", unreachable)
    with pytest.raises(TeacherError, match="not in the Hugging Face cache and the Hub cannot be reached"):
        load_teacher_tokenizer("org/not-cached")

    def missing(*args, **kwargs):
        response = SimpleNamespace(headers={}, request=None, status_code=404)
        raise RepositoryNotFoundError("404 Client Error: Repository Not Found", response=response)

    monkeypatch.setattr("huggingface_hub.HfApi.model_info", missing)
    with pytest.raises(TeacherError, match="there is no model org/not-cached on the Hugging Face Hub"):
        load_teacher_tokenizer("org/not-cached")


def test_a_loaded_teacher_named_dot_dot_is_saved_inside_the_scratch_folder(teacher, tmp_path, monkeypatch):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    loaded = SentenceTransformer(str(teacher), device="cpu")
    loaded.model_card_data.model_id = ".."
    model = st_static.distill(loaded, TINY_CORPUS * 3, **TINY)
    assert model.encode(["the cat sat"]).shape == (1, 8)
    # The scratch folder is gone and nothing was written next to it (the card template's private folder aside).
    assert [path.name for path in temporary.iterdir() if not path.name.startswith("st-static-card-")] == []


def test_a_teacher_whose_model_type_transformers_lacks_names_the_release_it_needs(tmp_path, monkeypatch):
    """nomic-embed-text-v1.5 is a ``nomic_bert`` model: an older transformers gets one clear error, up front."""
    import json

    from transformers.models.auto import configuration_auto

    from st_static.extraction.teacher_model import load_teacher, load_teacher_tokenizer

    teacher = make_tiny_teacher(tmp_path)
    config_file = teacher / "config.json"
    config = json.loads(config_file.read_text())
    config_file.write_text(json.dumps({**config, "model_type": "nomic_bert"}))
    monkeypatch.delitem(configuration_auto.CONFIG_MAPPING_NAMES, "nomic_bert")
    for load in (load_teacher_tokenizer, load_teacher):
        with pytest.raises(
            TeacherError, match=r"`nomic_bert` model, which the installed transformers .* transformers >= 5\.5\.0"
        ):
            load(str(teacher))


def test_an_unknown_model_type_asks_for_a_newer_transformers(tmp_path, monkeypatch):
    from transformers.models.auto import configuration_auto

    from st_static.extraction.teacher_model import load_teacher_tokenizer

    teacher = make_tiny_teacher(tmp_path)
    monkeypatch.delitem(configuration_auto.CONFIG_MAPPING_NAMES, "bert")
    with pytest.raises(TeacherError, match=r"`bert` model.*a newer transformers release that knows it"):
        load_teacher_tokenizer(str(teacher))
