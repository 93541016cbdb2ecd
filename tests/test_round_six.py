"""Reliability round six (issue 52): the empty-text Dense stays out of training and in every save, fallback rows
on ensembles, module files checked as the table files are, and the other defects of the round."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

import st_static
from st_static.model.empty_text import is_empty_text_dense

from .test_model2vec_interop import fine_tune

TEXTS = ["", "the cat sat on the mat", "hello world", "token", "the cat? 東京", " ", "?", "!!!", "#", "東京", "Привет"]
"""Texts without a dropped token (a bare ``StaticEmbedding`` counts those in its mean, st-static does not)."""


def dense_tensors(folder) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "1_Dense" / "model.safetensors"))


# ------------------------------------------------------------------------------------------------ the empty-text Dense
@pytest.mark.parametrize("loaded_with", ["st_static", "bare"])
def test_fine_tuning_leaves_the_empty_text_dense_alone(fallback_model, tmp_path, loaded_with):
    model2vec = pytest.importorskip("model2vec")
    folder = st_static.save_model(fallback_model, tmp_path / "model")
    saved = dense_tensors(folder)
    model = (
        st_static.load_model(folder) if loaded_with == "st_static" else SentenceTransformer(str(folder), device="cpu")
    )
    before = model.encode(TEXTS[1:2])
    fine_tune(model, tmp_path / "trainer")
    assert not np.allclose(model.encode(TEXTS[1:2]), before)  # it did train
    expected = model.encode(TEXTS)
    model.save_pretrained(str(folder))  # ST's own save, in place
    if loaded_with == "bare":  # ST built a trainable Dense: the load folds it, a save writes a fresh one
        st_static.save_model(st_static.load_model(folder), folder)
    else:
        for key, tensor in dense_tensors(folder).items():
            torch.testing.assert_close(tensor, saved[key], rtol=0, atol=0)
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    assert [entry["type"].rsplit(".", 1)[-1] for entry in modules] == ["StaticEmbedding", "Dense", "Normalize"]
    loaded = st_static.load_model(folder)
    bare = SentenceTransformer(str(folder), device="cpu")
    assert is_empty_text_dense(loaded[1]) and is_empty_text_dense(bare[1])
    for vectors in (
        loaded.encode(TEXTS),
        st_static.encode(loaded, TEXTS),
        bare.encode(TEXTS),
        model2vec.StaticModel.from_pretrained(str(folder)).encode(TEXTS),
    ):
        np.testing.assert_allclose(vectors[1:], expected[1:], atol=1e-5)
    for vectors in (loaded.encode(TEXTS[:1]), st_static.encode(loaded, TEXTS[:1]), bare.encode(TEXTS[:1])):
        np.testing.assert_allclose(vectors, st_static.encode(loaded, TEXTS[:1]), atol=1e-6)
        assert np.linalg.norm(vectors) == pytest.approx(1.0, abs=1e-5)


def test_a_bare_fine_tune_saved_by_st_static_loads_with_its_vectors(fallback_model, tmp_path):
    model2vec = pytest.importorskip("model2vec")
    folder = st_static.save_model(fallback_model, tmp_path / "model")
    model = SentenceTransformer(str(folder), device="cpu")
    fine_tune(model, tmp_path / "trainer")  # trains sentence-transformers' plain Dense too
    expected = model.encode(TEXTS)
    st_static.save_model(model, folder)  # keeps the trained Dense (and writes no model2vec config)
    loaded = st_static.load_model(folder)  # folds it into the table
    for vectors in (loaded.encode(TEXTS), st_static.encode(loaded, TEXTS)):
        np.testing.assert_allclose(vectors[1:], expected[1:], atol=1e-5)
    st_static.save_model(loaded, folder)
    np.testing.assert_allclose(
        model2vec.StaticModel.from_pretrained(str(folder)).encode(TEXTS[1:]), expected[1:], atol=1e-5
    )


def test_no_optimiser_reaches_the_empty_text_dense(fallback_model, tmp_path):
    loaded = st_static.load_model(st_static.save_model(fallback_model, tmp_path / "model"))
    dense = loaded[1]
    saved = {key: tensor.clone() for key, tensor in dense.state_dict().items()}
    loaded.requires_grad_(True)  # even a model made trainable as a whole, its tensors handed to an optimiser
    optimiser = torch.optim.SGD([*loaded.parameters(), *loaded.buffers()], lr=1.0)
    features = loaded[0].preprocess(["the cat sat", "hello world"])
    loaded(features)["sentence_embedding"].sum().backward()
    optimiser.step()
    assert is_empty_text_dense(dense) and list(dense.parameters()) == []
    for key, tensor in dense.state_dict().items():
        torch.testing.assert_close(tensor, saved[key], rtol=0, atol=0)


def saved_types(folder) -> list[str]:
    return [entry["type"].rsplit(".", 1)[-1] for entry in json.loads((folder / "modules.json").read_text())]


def test_every_model_st_static_returns_saves_its_empty_text_dense_with_save_pretrained(fallback_model, tmp_path):
    from st_static.compression import quantize

    loaded = st_static.load_model(st_static.save_model(fallback_model, tmp_path / "model"))
    for name, model in {"loaded": loaded, "quantised": quantize(fallback_model, "int8-row")}.items():
        model.save_pretrained(str(tmp_path / name))  # sentence-transformers' own save
        assert saved_types(tmp_path / name) == ["StaticEmbedding", "Dense", "Normalize"], name
        bare = SentenceTransformer(str(tmp_path / name), device="cpu")
        assert np.linalg.norm(bare.encode([""])) == pytest.approx(1.0, abs=1e-5), name


def test_a_distilled_model_saved_with_save_pretrained_keeps_the_empty_text_dense(tmp_path):
    from .teachers import TINY_CORPUS, make_tiny_teacher

    teacher = make_tiny_teacher(tmp_path / "teacher", kind="symbols")
    tiny = {"dim": 8, "min_sentences": 1, "steps": 4, "batch_size": 4, "eval_steps": 4, "pca_sample_size": 100}
    corpus = [*TINY_CORPUS, "a red cat? yes!"] * 3
    model = st_static.distill(str(teacher), corpus, complete_words=0, work_dir=tmp_path / "work", **tiny)
    model.save_pretrained(str(tmp_path / "distilled"))
    assert saved_types(tmp_path / "distilled") == ["StaticEmbedding", "Dense", "Normalize"]
    bare = SentenceTransformer(str(tmp_path / "distilled"), device="cpu")
    assert np.linalg.norm(bare.encode([""])) == pytest.approx(1.0, abs=1e-5)


def test_a_folder_without_the_empty_text_dense_is_named_by_load_and_push(fallback_model, tmp_path, caplog, monkeypatch):
    from st_static.hub import push as hub_module
    from st_static.hub.bare_load import BareLoadResult

    from .test_hub import check_folder

    fallback_model.save_pretrained(str(tmp_path / "model"))  # a model st-static did not return: no Dense
    with caplog.at_level("WARNING"):
        loaded = st_static.load_model(tmp_path / "model")
    assert "no empty-text Dense" in caplog.text
    assert np.linalg.norm(st_static.encode(loaded, [""])) == pytest.approx(1.0, abs=1e-5)

    def bare_encode(folder, texts, env=None, timeout=600.0):
        return BareLoadResult(SentenceTransformer(str(folder), device="cpu").encode(list(texts)), "StaticEmbedding")

    monkeypatch.setattr(hub_module, "bare_encode", bare_encode)
    with pytest.raises(hub_module.PushRefusedError) as refused:
        check_folder(tmp_path / "model")
    assert "empty text's Dense module is missing" in str(refused.value)
    assert "Normalize missing" not in str(refused.value)


# ------------------------------------------------------------------------------------------ fallback rows on ensembles
def test_fallback_rows_are_refused_on_an_unfolded_ensemble_of_different_vocabularies(word_model, tmp_path):
    from sentence_transformers.base.modules import Normalize
    from typer.testing import CliRunner

    from st_static.cli import app
    from st_static.compression import ensemble
    from st_static.extraction.fallback import FallbackRowsError, add_fallback_rows

    from .conftest import WORDS, teacher_like_tokenizer

    words = [*WORDS[:8], "dog", "log", "red", "old"]
    vectors = np.random.default_rng(1).standard_normal((len(words), 8)).astype(np.float32)
    other = st_static.StaticWordAverage.from_word_vectors(words, vectors, teacher_tokenizer=teacher_like_tokenizer())
    combined = ensemble([word_model, SentenceTransformer(modules=[other, Normalize()], device="cpu")])
    with pytest.raises(FallbackRowsError, match="fold"):
        add_fallback_rows(combined, "a-teacher-never-loaded")
    folder = st_static.save_model(combined, tmp_path / "ensemble")
    result = CliRunner().invoke(app, ["fallback", str(folder), "-o", str(tmp_path / "out"), "--teacher", "unused"])
    assert result.exit_code == 1 and result.output.startswith("error:") and "fold" in result.output


# ------------------------------------------------------------------------------------------------ module files
def permute_weight(folder) -> None:
    from safetensors.torch import save_file

    tensors = dense_tensors(folder)
    key = next(key for key in tensors if key.endswith("weight"))
    tensors[key] = tensors[key].flip(0).contiguous()
    save_file(tensors, str(folder / "1_Dense" / "model.safetensors"))


def large_bias(folder) -> None:
    from safetensors.torch import save_file

    tensors = dense_tensors(folder)
    key = next(key for key in tensors if key.endswith("bias"))
    tensors[key] = tensors[key] * 1e11
    save_file(tensors, str(folder / "1_Dense" / "model.safetensors"))


def edit_config(folder, **changes) -> None:
    path = folder / "1_Dense" / "config.json"
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")) | changes), encoding="utf-8")


def truncate_weights(folder) -> None:
    path = folder / "1_Dense" / "model.safetensors"
    path.write_bytes(path.read_bytes()[:100])


def replace_by_a_file(folder) -> None:
    import shutil

    shutil.rmtree(folder / "1_Dense")
    (folder / "1_Dense").write_text("not a folder", encoding="utf-8")


@pytest.mark.parametrize(
    ("corrupt", "named"),
    [
        (permute_weight, "1_Dense/model.safetensors"),
        (large_bias, "1_Dense/model.safetensors"),
        (lambda folder: edit_config(folder, activation_function="torch.nn.modules.activation.Tanh"), "1_Dense/config"),
        (lambda folder: edit_config(folder, in_features=8), "1_Dense/config.json"),
        (truncate_weights, "1_Dense/model.safetensors"),
        (replace_by_a_file, "1_Dense is a file"),
    ],
    ids=["permuted", "large-bias", "tanh", "in-features", "truncated", "file"],
)
def test_changed_module_files_are_named_on_load(fallback_model, tmp_path, corrupt, named):
    from typer.testing import CliRunner

    from st_static.cli import app
    from st_static.errors import ModelFolderError

    folder = st_static.save_model(fallback_model, tmp_path / "model")
    corrupt(folder)
    with pytest.raises(ModelFolderError, match=named) as error:
        st_static.load_model(folder)
    assert "disagrees" not in str(error.value)
    result = CliRunner().invoke(app, ["info", str(folder)])
    assert result.exit_code == 1 and result.output.startswith("error:") and named in result.output


# ------------------------------------------------------------------------------------------------ stage folders
@pytest.fixture(scope="module")
def built_work(tmp_path_factory):
    """A tiny build's stage cache (``OUT.work``), and the teacher and corpus it was built from."""
    from .teachers import TINY_CORPUS, make_tiny_teacher

    root = tmp_path_factory.mktemp("stages")
    teacher = make_tiny_teacher(root / "teacher")
    corpus = [*TINY_CORPUS, "the dog sat on the log"] * 3
    settings = {"dim": 8, "min_sentences": 1, "steps": 4, "batch_size": 4, "eval_steps": 4, "pca_sample_size": 100}
    st_static.distill(str(teacher), corpus, complete_words=0, fallback_rows=False, work_dir=root / "work", **settings)
    return root / "work", teacher, corpus, settings


def truncate(path) -> None:
    path.write_bytes(path.read_bytes()[: max(len(path.read_bytes()) // 2, 1)])


@pytest.mark.parametrize(
    ("relative", "corrupt"),
    [
        ("stats.json", truncate),
        ("targets/teacher_embeddings.npy", truncate),
        ("targets/sentences.txt", truncate),
        ("pca_sentences.txt", lambda path: path.write_text("", encoding="utf-8")),
    ],
    ids=["stats", "targets", "sentences", "pca-sentences"],
)
def test_a_corrupted_stage_folder_is_named(built_work, tmp_path, relative, corrupt):
    import shutil

    from st_static.errors import StStaticError

    work, teacher, corpus, settings = built_work
    copy = tmp_path / "work"
    shutil.copytree(work, copy)
    (stage,) = copy.glob("extraction-*")
    corrupt(stage / relative)
    changed = settings | {"steps": 5, "dim": 6}  # the later stages read the extraction folder again
    with pytest.raises(StStaticError, match=rf"{stage.name}.*{relative.rsplit('/', 1)[-1]}.*delete") as error:
        st_static.distill(str(teacher), corpus, complete_words=0, fallback_rows=False, work_dir=copy, **changed)
    assert str(stage) in str(error.value)


# ------------------------------------------------------------------------------------------------ output names
def test_an_output_name_too_long_for_its_temporary_names_is_refused_up_front(word_model, tmp_path):
    from typer.testing import CliRunner

    from st_static.cli import app
    from st_static.errors import UnsafeDestinationError
    from st_static.files import check_file_destination

    name = "m" * 240  # a legal name (255 bytes at most), but not with the staging prefix and suffix
    with pytest.raises(UnsafeDestinationError, match="255 bytes"):
        st_static.save_model(word_model, tmp_path / name)
    with pytest.raises(UnsafeDestinationError, match="255 bytes"):
        check_file_destination(tmp_path / f"{name}.json")
    assert sorted(path.name for path in tmp_path.iterdir()) == []
    folder = st_static.save_model(word_model, tmp_path / "model")
    result = CliRunner().invoke(app, ["fallback", str(folder), "-o", str(tmp_path / name), "--teacher", "unused"])
    assert result.exit_code == 1 and "255 bytes" in result.output and "teacher" not in result.output.lower()


# ------------------------------------------------------------------------------------------------ command options
def test_fallback_refuses_a_device_that_is_not_a_torch_device_before_any_work(word_model, tmp_path):
    from typer.testing import CliRunner

    from st_static.cli import app
    from st_static.extraction.fallback import add_fallback_rows
    from st_static.settings import SettingsError

    folder = st_static.save_model(word_model, tmp_path / "model")
    result = CliRunner().invoke(app, ["fallback", str(folder), "-o", str(tmp_path / "out"), "--device", "bogus"])
    assert result.exit_code == 1 and result.output.startswith("error:") and "bogus" in result.output
    assert not (tmp_path / "out").exists()
    with pytest.raises(SettingsError, match="not a torch device"):
        add_fallback_rows(word_model, "unused", device="bogus")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "does not exist"),
        (b"caf\xe9\t3\n", "not UTF-8"),
        (b"the\t3\ncat\tnan\n", "not a finite number"),
        (b"the\t3\ncat\tinf\n", "not a finite number"),
    ],
    ids=["missing", "latin-1", "nan", "inf"],
)
def test_compress_frequencies_errors_name_the_file(word_model, tmp_path, content, expected):
    from typer.testing import CliRunner

    from st_static.cli import app

    folder = st_static.save_model(word_model, tmp_path / "model")
    frequencies = tmp_path / "frequencies.tsv"
    if content is not None:
        frequencies.write_bytes(content)
    arguments = ["compress", str(folder), "-o", str(tmp_path / "out"), "--vocab-size", "5"]
    result = CliRunner().invoke(app, [*arguments, "--frequencies", str(frequencies)])
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error:") and expected in result.output and str(frequencies) in result.output


# ------------------------------------------------------------------------------------------------ fallback rows on int8
@pytest.fixture(scope="module")
def teacher_and_table(tmp_path_factory) -> tuple[str, SentenceTransformer]:
    """The tiny teacher with symbol pieces and a table of its words (as test_fallback's ``plain_table``)."""
    from sentence_transformers.base.modules import Normalize

    from .teachers import make_tiny_teacher
    from .test_fallback import FIT_WORDS

    teacher = make_tiny_teacher(tmp_path_factory.mktemp("symbols"), kind="symbols")
    vectors = np.random.default_rng(0).standard_normal((len(FIT_WORDS), 8)).astype(np.float32)
    tokenizer = SentenceTransformer(str(teacher), device="cpu")[0].tokenizer
    module = st_static.StaticWordAverage.from_word_vectors(FIT_WORDS, vectors, teacher_tokenizer=tokenizer)
    return str(teacher), SentenceTransformer(modules=[module, Normalize()], device="cpu")


@pytest.mark.parametrize("storage", ["int8-row", "int8-column"])
def test_fallback_rows_on_an_int8_table_say_the_table_is_float32_again(teacher_and_table, tmp_path, storage):
    from st_static.compression import quantize
    from st_static.extraction.fallback import add_fallback_rows
    from st_static.model.model2vec_config import MODEL2VEC_CONFIG_FILE_NAME

    teacher, table = teacher_and_table
    model, _ = add_fallback_rows(quantize(table, storage), teacher)
    assert model[0].metadata.quantization is None and type(model[0]) is st_static.StaticWordAverage
    folder = st_static.save_model(model, tmp_path / "model")
    config = json.loads((folder / "st_static_config.json").read_text(encoding="utf-8"))
    assert "quantization" not in config["metadata"]
    assert (folder / MODEL2VEC_CONFIG_FILE_NAME).is_file()  # a float32 table: model2vec reads it
    assert "int8" not in (folder / "README.md").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------------ teachers
def test_a_static_model_given_as_teacher_is_called_one(word_model, tmp_path):
    from st_static.extraction.teacher_model import load_teacher, load_teacher_tokenizer
    from st_static.teachers import TeacherError

    folder = st_static.save_model(word_model, tmp_path / "static")
    for load in (load_teacher_tokenizer, load_teacher):
        with pytest.raises(TeacherError, match=r"static model.*not a transformer") as error:
            load(str(folder))
        assert "transformers >=" not in str(error.value) and "pip install" not in str(error.value)


# ------------------------------------------------------------------------------------------------ signals
def test_sigterm_during_an_import_stops_the_command_after_the_import(tmp_path):
    import subprocess
    import sys
    import textwrap

    from .conftest import REPO_ROOT

    (tmp_path / "slow_module.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(0.3)\nDONE = True\n"
    )
    script = textwrap.dedent(
        f"""
        import signal, sys, time
        from st_static.signals import Terminated, _raise_terminated
        signal.signal(signal.SIGTERM, _raise_terminated)
        sys.path.insert(0, {str(tmp_path)!r})
        try:
            import slow_module
            time.sleep(5)
            print("not stopped")
        except Terminated:
            print("whole" if getattr(sys.modules.get("slow_module"), "DONE", False) else "partial")
        """
    )
    env = {"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "whole", result.stdout + result.stderr


# ------------------------------------------------------------------------------------------------ the low ones
@pytest.mark.parametrize("value", ["nan", "inf", "-5", "0"])
def test_card_refuses_a_teacher_speed_that_is_not_a_positive_number(word_model, tmp_path, value):
    from typer.testing import CliRunner

    from st_static.cli import app

    folder = st_static.save_model(word_model, tmp_path / "model")
    corpus = tmp_path / "speed.txt"
    corpus.write_text("the cat sat\nhello world\n", encoding="utf-8")
    config = (folder / "st_static_config.json").read_text(encoding="utf-8")
    arguments = ["card", str(folder), "--speed-corpus", str(corpus), "--speed-sentences", "2"]
    result = CliRunner().invoke(app, [*arguments, "--teacher-speed", value])
    assert result.exit_code != 0 and "teacher-speed" in result.output
    assert (folder / "st_static_config.json").read_text(encoding="utf-8") == config  # nothing recorded


def test_compress_prints_the_words_it_kept(fallback_model, tmp_path):
    from typer.testing import CliRunner

    from st_static.cli import app

    folder = st_static.save_model(fallback_model, tmp_path / "model")
    result = CliRunner().invoke(app, ["compress", str(folder), "-o", str(tmp_path / "out"), "-k", "5"])
    assert result.exit_code == 0, result.output
    assert "words: 5," in result.output


def test_a_missing_pair_file_is_called_a_pair_file(tmp_path):
    from st_static.extraction.corpus import CorpusError
    from st_static.pipeline.input_checks import check_input_files
    from st_static.settings import BuildSettings

    corpus = tmp_path / "en.txt"
    corpus.write_text("the cat sat\n" * 20, encoding="utf-8")
    settings = BuildSettings.from_flat(corpus=str(corpus), languages=["en", "de"], parallel=["de=/missing.tsv"])
    with pytest.raises(CorpusError, match=r"/missing\.tsv") as error:
        check_input_files(settings, str(corpus), _no_filter())
    assert "Corpus file" not in str(error.value) and "pair" in str(error.value).lower()


def _no_filter():
    from st_static.extraction.pair_sources import SourceFilter

    return SourceFilter.of(None, None)


def test_cr_only_line_endings_in_part_of_a_corpus_are_warned_about(tmp_path, caplog):
    from st_static.extraction.corpus import check_corpus

    corpus = tmp_path / "mixed.txt"
    corpus.write_bytes(b"the cat sat\nhello world\n" * 10 + b"one\rtwo\rthree\rfour\n" + b"a dog\n" * 10)
    with caplog.at_level("WARNING"):
        check_corpus(corpus, name="mixed.txt", min_sentences=1)
    assert "CR" in caplog.text and "1 line" in caplog.text


def test_misused_arguments_get_clear_errors(word_model, tmp_path):
    from st_static.errors import UnsafeDestinationError
    from st_static.extraction.corpus import CorpusError

    from .conftest import WORDS

    with pytest.raises(UnsafeDestinationError, match="empty"):
        st_static.save_model(word_model, None)
    with pytest.raises(TypeError, match="SentenceTransformer, got NoneType"):
        st_static.save_model(None, tmp_path / "model")
    with pytest.raises(CorpusError, match="got int"):
        st_static.distill("a-teacher", corpus=123, work_dir=tmp_path / "work")
    with pytest.raises(TypeError, match="prompt must be a str"):
        st_static.encode(word_model, ["the cat"], prompt=123)
    vectors = np.ones((len(WORDS), 4), dtype=np.float32)
    with pytest.raises(FileNotFoundError, match=r"missing\.json"):
        st_static.StaticWordAverage.from_word_vectors(WORDS, vectors, teacher_tokenizer=str(tmp_path / "missing.json"))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_16_bit_model_encodes_long_texts_to_finite_vectors(fallback_model, tmp_path, dtype):
    texts = ["the cat sat " * 100_000, "hello world", "?"]
    expected = st_static.encode(fallback_model, texts)
    low = st_static.load_model(st_static.save_model(fallback_model, tmp_path / "model")).to(dtype)
    for vectors in (st_static.encode(low, texts), low.encode(texts, convert_to_tensor=True).float().numpy()):
        assert np.isfinite(vectors).all()
        np.testing.assert_allclose(vectors[:2], expected[:2], atol=2e-2)


@pytest.mark.parametrize("truncate_dim", [0, -1, 17])
def test_a_truncate_dim_that_cannot_load_is_refused_by_the_save(word_model, tmp_path, truncate_dim):
    word_model.truncate_dim = truncate_dim
    with pytest.raises(ValueError, match="truncate_dim"):
        st_static.save_model(word_model, tmp_path / "model")
    assert not (tmp_path / "model").exists()


def test_a_truncated_model_gets_no_model2vec_config(word_model, tmp_path):
    from st_static.errors import ModelFolderError
    from st_static.model.model2vec_config import MODEL2VEC_CONFIG_FILE_NAME

    model2vec_config = st_static.save_model(word_model, tmp_path / "full") / MODEL2VEC_CONFIG_FILE_NAME
    word_model.truncate_dim = 4
    folder = st_static.save_model(word_model, tmp_path / "model")
    assert not (folder / MODEL2VEC_CONFIG_FILE_NAME).exists()  # model2vec would return all 16 dimensions
    assert "does not load in model2vec: the model keeps the first 4" in (folder / "README.md").read_text()
    assert st_static.load_model(folder).encode(["the cat"]).shape == (1, 4)
    (folder / MODEL2VEC_CONFIG_FILE_NAME).write_bytes(model2vec_config.read_bytes())
    with pytest.raises(ModelFolderError, match="truncate_dim"):
        st_static.load_model(folder)
