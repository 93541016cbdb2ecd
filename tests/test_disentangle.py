"""The disentangler (issue 68): the meaning map trains on translation pairs, folds into the table exactly (every load
path, every kind of row), is recorded in the metadata, and its command and build flag refuse what they cannot use."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from typer.testing import CliRunner

import st_static
from st_static.cli import app
from st_static.compression import quantize
from st_static.errors import ModelFolderError
from st_static.extraction.pieces import add_piece_rows
from st_static.model.meaning_map import FULL_EMBEDDING, MeaningMap
from st_static.model.metadata import MeaningMapRecord, ModelMetadata
from st_static.settings import DISENTANGLE_MAX_EPOCHS, BuildSettings, DisentangleSettings, SettingsError
from st_static.training import fold_meaning_map, train_meaning_map
from st_static.training.disentangle import DEFAULT_MAX_EPOCHS, DisentangleError, split_pairs
from st_static.training.meaning_fold import check_disentangle_model, disentangle_table

from .conftest import teacher_like_tokenizer, with_fallback

ENGLISH = ["the", "cat", "dog", "sees", "eats", "big", "small", "red", "house", "tree", "runs", "bird", "fish", "green"]
GERMAN = ["die", "katze", "hund", "sieht", "isst", "gross", "klein", "rot", "haus", "baum", "rennt", "vogel", "fisch"]
GERMAN += ["grün"]
LETTERS = [chr(code) for code in range(ord("a"), ord("z") + 1)]
TEXTS = {
    "ordinary": ["the big cat sees a dog", "die katze sieht den hund", "red house"],
    "unknown words (pieces)": ["the cats eats fishes", "katzen und hunde", "xqzt"],
    "fallback only": ["😀", "?!", "東京"],
    "empty": [""],
}
DIM = 16


def crosslingual_table(seed: int = 0) -> SentenceTransformer:
    """English and German words that share a meaning vector per concept and differ by a language direction, with
    fallback rows and piece rows, metadata naming both languages."""
    rng = np.random.default_rng(seed)
    meanings = rng.standard_normal((len(ENGLISH), DIM))
    languages = rng.standard_normal((2, DIM)) * 1.5
    rows = [meanings[index] + languages[0] for index in range(len(ENGLISH))]
    rows += [meanings[index] + languages[1] for index in range(len(GERMAN))]
    rows += list(rng.standard_normal((len(LETTERS), DIM)))
    vectors = (np.stack(rows) + 0.1 * rng.standard_normal((len(rows), DIM))).astype(np.float32)
    module = st_static.StaticWordAverage.from_word_vectors(
        ENGLISH + GERMAN + LETTERS, vectors, teacher_tokenizer=teacher_like_tokenizer()
    )
    module = with_fallback(module)
    module.metadata.languages = ["en", "de"]
    model, _ = add_piece_rows(SentenceTransformer(modules=[module, Normalize()], device="cpu"), pieces=LETTERS)
    return model


def translation_pairs(count: int = 400, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs: dict[str, str] = {}
    while len(pairs) < count:
        words = [rng.randrange(len(ENGLISH)) for _ in range(rng.randint(3, 6))]
        pairs[" ".join(ENGLISH[word] for word in words)] = " ".join(GERMAN[word] for word in words)
    return list(pairs.items())


@pytest.fixture(scope="module")
def table() -> SentenceTransformer:
    return crosslingual_table()


@pytest.fixture(scope="module")
def pairs() -> dict[tuple[str, str], list[tuple[str, str]]]:
    return {("en", "de"): translation_pairs()}


def random_map(seed: int = 3) -> MeaningMap:
    meaning_map = MeaningMap(DIM)
    with torch.no_grad():
        meaning_map.linear.weight.add_(0.5 * torch.randn(DIM, DIM, generator=torch.Generator().manual_seed(seed)))
    return meaning_map.eval()


def unfolded(model: SentenceTransformer, meaning_map: MeaningMap, texts: list[str]) -> np.ndarray:
    """The model before folding: the table, Normalize, then the map (normalised)."""
    chain = SentenceTransformer(modules=[model[0], Normalize(), meaning_map], device="cpu")
    return chain.encode(texts, normalize_embeddings=True)


def cosines(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    first = first / np.linalg.norm(first, axis=1, keepdims=True)
    return np.sum(first * (second / np.linalg.norm(second, axis=1, keepdims=True)), axis=1)


# ---------------------------------------------------------------- the module
def test_the_meaning_map_starts_as_the_identity_and_keeps_the_full_embedding():
    meaning_map = MeaningMap(4)
    embedding = torch.randn(3, 4)
    features = meaning_map({"sentence_embedding": embedding})
    assert torch.equal(features[FULL_EMBEDDING], embedding)
    assert torch.allclose(features["sentence_embedding"], embedding)
    assert meaning_map.get_config_dict() == {"dim": 4, "bias": False} and meaning_map.linear.bias is None


def test_the_meaning_map_saves_as_safetensors_and_loads_back(tmp_path):
    meaning_map = random_map()
    meaning_map.save(str(tmp_path))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["config.json", "model.safetensors"]
    loaded = MeaningMap.load(str(tmp_path))
    assert torch.equal(loaded.weight, meaning_map.weight) and not loaded.bias
    with pytest.raises(ValueError, match="dim"):
        MeaningMap(0)


# ---------------------------------------------------------------- training
@pytest.mark.parametrize("constraints", ["intra", "inter", "both"])
def test_training_lowers_the_validation_loss_and_keeps_the_best_map(table, pairs, constraints):
    result = train_meaning_map(
        table, pairs, constraints=constraints, learning_rate=1e-2, max_epochs=4, min_pairs=100, seed=1
    )
    before = result.history[0][1]
    assert result.history[0][0] == 0.0 and len(result.history) == result.epochs + 1
    assert result.best_validation_loss < before and result.best_epoch >= 1
    assert result.best_validation_loss == min(loss for _, loss in result.history)
    assert result.train_pairs + result.validation_pairs == 400 and result.validation_pairs == 40
    assert not torch.allclose(result.meaning_map.weight, torch.eye(DIM))


def test_the_meaning_parts_of_translations_move_together(table, pairs):
    result = train_meaning_map(table, pairs, constraints="intra", learning_rate=1e-2, max_epochs=6, min_pairs=100)
    held_out = translation_pairs(60, seed=9)
    english, german = [x for x, _ in held_out], [y for _, y in held_out]
    before = cosines(st_static.encode(table, english), st_static.encode(table, german)).mean()
    folded = fold_meaning_map(table, result.meaning_map)
    after = cosines(st_static.encode(folded, english), st_static.encode(folded, german)).mean()
    assert after > before + 0.05


def test_too_few_pairs_say_how_many_are_needed(table):
    few = {("en", "de"): translation_pairs(120)}
    with pytest.raises(DisentangleError, match=r"en-de has 120 distinct translation pair\(s\); .* at least 300"):
        train_meaning_map(table, few)
    with pytest.raises(DisentangleError, match="constraints must be one of"):
        train_meaning_map(table, few, constraints="all")


def test_the_split_keeps_each_sentence_once_and_each_language_its_share():
    many = {("en", "de"): translation_pairs(400), ("en", "ja"): [(f"s{i}", f"t{i}") for i in range(200)]}
    many[("en", "de")] = many[("en", "de")] + many[("en", "de")][:50]  # repeated pairs are left out
    splits = split_pairs(many, validation_share=0.1, max_pairs=300, seed=0, min_pairs=50)
    assert {name: len(train) + len(held) for name, (train, held) in splits.items()} == {"en-de": 200, "en-ja": 100}
    assert all(len(held) == len(train + held) // 10 for train, held in splits.values())


# ---------------------------------------------------------------- folding
@pytest.mark.parametrize("storage", ["float32", "float16"])
def test_the_folded_table_equals_the_unfolded_model_on_every_load_path(table, storage, tmp_path):
    model2vec = pytest.importorskip("model2vec")
    stored = table if storage == "float32" else quantize(table, storage)
    meaning_map = random_map()
    folded = fold_meaning_map(stored, meaning_map, MeaningMapRecord(constraints="both", pairs=360))
    st_static.save_model(folded, tmp_path / "model")
    paths = {
        "bare": SentenceTransformer(str(tmp_path / "model"), device="cpu").encode,
        "load_model": st_static.load_model(tmp_path / "model").encode,
        "st_static.encode": lambda texts: st_static.encode(st_static.load_model(tmp_path / "model"), texts),
        "model2vec": model2vec.StaticModel.from_pretrained(tmp_path / "model").encode,
    }
    for kind, texts in TEXTS.items():
        expected = unfolded(stored, meaning_map, texts)
        for path, encode in paths.items():
            if path == "model2vec" and kind == "empty":
                continue  # model2vec gives "" the zero vector, folded or not
            similarity = cosines(np.asarray(encode(texts), dtype=np.float64), expected.astype(np.float64))
            assert similarity.min() >= 0.99999, (path, kind, similarity)
    loaded = st_static.load_model(tmp_path / "model")
    assert loaded[0].metadata.quantization == (None if storage == "float32" else storage)
    assert [type(module).__name__ for module in SentenceTransformer(str(tmp_path / "model"), device="cpu")] == [
        "StaticEmbedding",
        "Dense",
        "Normalize",
    ]


def test_folding_leaves_the_model_untouched_and_records_the_map(table, tmp_path):
    rows = table[0].word_vectors.detach().clone()
    record = MeaningMapRecord(constraints="intra", language_weight=0.5, languages=["en", "de"], files=["en-de.tsv"])
    folded = fold_meaning_map(table, random_map(), record)
    assert torch.equal(table[0].word_vectors, rows) and table[0].metadata.meaning_map is None
    st_static.save_model(folded, tmp_path / "model")
    metadata = st_static.load_model(tmp_path / "model")[0].metadata
    assert metadata.meaning_map == record and metadata.stages[-1] == "disentangle"
    card = (tmp_path / "model" / "README.md").read_text(encoding="utf-8")
    assert "holds the meaning parts" in card and "nonomura-etal-2026" in card


def test_a_map_with_a_bias_or_another_width_is_not_folded(table):
    with pytest.raises(DisentangleError, match="bias"):
        fold_meaning_map(table, MeaningMap(DIM, bias=True))
    with pytest.raises(DisentangleError, match="8-dimensional"):
        fold_meaning_map(table, MeaningMap(8))


def test_the_metadata_record_is_checked_on_load_and_optional():
    assert ModelMetadata.from_dict({"teacher": "t"}).meaning_map is None
    parsed = ModelMetadata.from_dict({"meaning_map": {"pairs": 10, "constraints": "both"}})
    assert parsed.meaning_map == MeaningMapRecord(pairs=10, constraints="both")
    with pytest.raises(ModelFolderError, match=r"meaning_map\.pairs"):
        ModelMetadata.from_dict({"meaning_map": {"pairs": "many"}})


def test_only_a_crosslingual_table_that_holds_no_meaning_parts_is_disentangled(table, word_model):
    with pytest.raises(DisentangleError, match="not cross-lingual"):
        check_disentangle_model(word_model)
    folded = fold_meaning_map(table, random_map(), MeaningMapRecord(constraints="both"))
    with pytest.raises(DisentangleError, match="already holds meaning parts"):
        check_disentangle_model(folded)


def test_disentangle_trains_folds_and_records(table, pairs):
    folded, result = disentangle_table(table, pairs, max_epochs=2, file_names=["en-de.tsv"])
    record = folded[0].metadata.meaning_map
    assert record.files == ["en-de.tsv"] and record.pairs == result.train_pairs == 360 and record.epochs == 2
    assert record.languages == ["en", "de"] and record.best_validation_loss == pytest.approx(
        result.best_validation_loss
    )
    texts = TEXTS["ordinary"]
    np.testing.assert_allclose(st_static.encode(folded, texts), unfolded(table, result.meaning_map, texts), atol=1e-5)


# ---------------------------------------------------------------- the command and the build flag
def write_pairs(path, pairs: list[tuple[str, str]]) -> None:
    path.write_text("en\tde\n" + "".join(f"{x}\t{y}\n" for x, y in pairs), encoding="utf-8")


@pytest.fixture(scope="module")
def saved(table, tmp_path_factory):
    folder = tmp_path_factory.mktemp("disentangle")
    st_static.save_model(table, folder / "model")
    write_pairs(folder / "en-de.tsv", translation_pairs())
    write_pairs(folder / "few.tsv", translation_pairs(120))
    return folder


def run_cli(*arguments: str):
    return CliRunner().invoke(app, ["disentangle", *map(str, arguments)])


def test_the_command_writes_a_disentangled_table(saved, tmp_path):
    result = run_cli(
        saved / "model", "--parallel", f"de={saved / 'en-de.tsv'}", "--max-epochs", "2", "--out", tmp_path / "new"
    )
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and "validation loss" in result.output
    record = st_static.load_model(tmp_path / "new")[0].metadata.meaning_map
    assert record.files == ["en-de.tsv"] and record.constraints == "both" and record.pairs == 360


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--parallel", "de={few}", "--out", "{tmp}/new"], "few.tsv hold(s) 120 translation pair(s) for en-de"),
        (["--parallel", "de={pairs}", "--out", "{model}"], "an input of this run"),
        (["--parallel", "fr={pairs}", "--out", "{tmp}/new"], "paired languages are de"),
        (["--parallel", "de={pairs}", "--constraints", "all", "--out", "{tmp}/new"], "constraints must be one of"),
    ],
)
def test_the_command_refuses_what_it_cannot_use_in_one_line(saved, tmp_path, arguments, message):
    values = {"few": saved / "few.tsv", "pairs": saved / "en-de.tsv", "model": saved / "model", "tmp": tmp_path}
    result = run_cli(saved / "model", *(argument.format(**values) for argument in arguments))
    assert result.exit_code == 1, result.output
    assert message in result.output and "Traceback" not in result.output
    assert result.output.count("error:") == 1


def test_the_command_reads_the_pairs_its_source_filter_keeps(saved, tmp_path):
    write_pairs(tmp_path / "en-de.tsv", translation_pairs())
    (tmp_path / "en-de.source.txt").write_text("forum\n" * 300 + "manual\n" * 100, encoding="utf-8")
    arguments = ["--parallel", f"de={tmp_path / 'en-de.tsv'}", "--out", tmp_path / "new"]
    result = run_cli(saved / "model", *arguments, "--leave-out-sources", "for*")
    assert result.exit_code == 1 and "hold(s) 100 translation pair(s)" in result.output


def test_the_command_refuses_a_table_that_is_not_crosslingual(word_model, saved, tmp_path):
    st_static.save_model(word_model, tmp_path / "english")
    result = run_cli(tmp_path / "english", "--parallel", f"de={saved / 'en-de.tsv'}", "--out", tmp_path / "new")
    assert result.exit_code == 1 and "not cross-lingual" in result.output


def test_the_build_flag_is_for_crosslingual_builds_and_keys_its_own_stage():
    assert DISENTANGLE_MAX_EPOCHS == DEFAULT_MAX_EPOCHS
    with pytest.raises(SettingsError, match="cross-lingual builds"):
        BuildSettings.from_flat(corpus=["en.txt"], disentangle=True)
    with pytest.raises(SettingsError, match="disentangle_constraints"):
        DisentangleSettings(disentangle_constraints="all")
    settings = BuildSettings.from_flat(
        parallel=["de=en-de.tsv"], languages=["en", "de"], disentangle=True, disentangle_language_weight=0.5
    )
    assert settings.disentanglement == DisentangleSettings(disentangle=True, disentangle_language_weight=0.5)


def test_the_build_stage_folds_the_map_after_the_last_table(table, pairs, tmp_path):
    from st_static.extraction.multilingual import MultilingualCorpus
    from st_static.stages.base import Build
    from st_static.stages.disentangle import Disentangle

    st_static.save_model(table, tmp_path / "pieces" / "model")
    settings = BuildSettings.from_flat(
        parallel=["de=en-de.tsv"], languages=["en", "de"], disentangle=True, disentangle_max_epochs=2
    )
    build = Build(settings=settings, work_dir=tmp_path, model_path=tmp_path / "pieces" / "model")
    build.multilingual = MultilingualCorpus(sentences={}, pairs=pairs)
    build.keys = {"refinement": "r", "fallback": "f", "pieces": "p"}
    stage = Disentangle()
    assert stage.applies(build) and not stage.applies(Build(settings=BuildSettings(), work_dir=tmp_path))
    folder = stage.folder(build)
    assert folder.name.startswith("disentangle-")
    intra = BuildSettings.from_flat(
        parallel=["x.tsv"], languages=["en", "de"], disentangle=True, disentangle_constraints="intra"
    )
    other = Build(settings=intra, work_dir=tmp_path)
    other.keys = dict(build.keys)
    assert stage.folder(other) != folder
    model = stage.run(build)
    assert model[0].metadata.meaning_map.constraints == "both" and build.model_path == folder / "model"
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert report["history"][0]["epoch"] == 0.0 and report["pairs"] == 360


def test_a_crosslingual_build_with_the_flag_ends_with_a_folded_table(tmp_path):
    from st_static.pipeline.publish import build

    from .teachers import TINY_CORPUS, make_tiny_teacher
    from .test_build import GERMAN as GERMAN_SENTENCES
    from .test_build import tiny_settings

    teacher = make_tiny_teacher(tmp_path / "teacher")
    combinations = [(a, b, c) for a in range(12) for b in range(12) for c in range(12) if len({a, b, c}) == 3][:320]
    rows = [
        " ".join(TINY_CORPUS[index] for index in chosen) + "\t" + " ".join(GERMAN_SENTENCES[index] for index in chosen)
        for chosen in combinations
    ]
    (tmp_path / "en-de.tsv").write_text("en\tde\n" + "\n".join(rows) + "\n", encoding="utf-8")
    settings = tiny_settings(
        teacher,
        parallel=[str(tmp_path / "en-de.tsv")],
        languages=["en", "de"],
        disentangle=True,
        disentangle_max_epochs=2,
    )
    result = build(settings, tmp_path / "model", work_dir=tmp_path / "work")
    assert list(result.seconds)[-2:] == ["disentangle", "storage (float16)"]
    assert len(list((tmp_path / "work").glob("disentangle-*"))) == 1
    loaded = st_static.load_model(tmp_path / "model")
    assert loaded[0].metadata.meaning_map.files == ["en-de.tsv"] and loaded[0].storage == "float16"
    assert loaded[0].metadata.stages[-1] == "disentangle"
