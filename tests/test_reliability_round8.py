"""Reliability round eight (issue 86): ensembles in float16, ensemble weights, bfloat16 members, the --fold-norms
text, seeds numpy cannot take, and a soup's seed children outliving a killed build."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from sentence_transformers.sentence_transformer.modules import StaticEmbedding

from st_static.compression import ensemble, read_member
from st_static.errors import FolderInUseError
from st_static.model.save_load import load_model, save_model
from st_static.settings import BuildSettings, ExtractionSettings, RefinementSettings, SettingsError
from st_static.stages import soup

from .conftest import ADVERSARIAL_TEXTS, REPO_ROOT
from .test_compress_inputs import members, refused  # noqa: F401 (members is a fixture)
from .test_compression import WORDS_A, WORDS_B, make_model
from .test_ensemble_members import wordpiece_tokenizer

# 1. An unfolded ensemble in float16.


def test_an_unfolded_ensemble_in_half_precision_gives_no_nan(tmp_path):
    """BlockNormalize divided a zero block (a text no member's word reads) by its norm in float16: 0/0."""
    save_model(ensemble([make_model(WORDS_A, 8, seed=1), make_model(WORDS_B, 5, seed=2)]), tmp_path / "e")
    model = load_model(tmp_path / "e")
    texts = [*ADVERSARIAL_TEXTS, "", " ", "😀", "\u200b", "x" * 10_000, " ".join(WORDS_A), " ".join(WORDS_B)]
    full = model.encode(texts, convert_to_numpy=True)
    half = model.half().encode(texts, convert_to_tensor=True).float().numpy()
    assert np.isfinite(half).all()
    np.testing.assert_allclose(half, full, atol=2e-3)


# 2. Ensemble weights whose sum overflows or whose ratio makes a member vanish.


@pytest.mark.parametrize(
    ("weights", "message"),
    [("1e308,1e308", "add up past the largest float"), ("1e-300,1", "over 1e+06 times"), ("1,2e6", "over 1e+06 times")],
)
def test_weights_that_overflow_or_drop_a_member_are_refused(members, tmp_path, weights, message):  # noqa: F811
    refused([*members, "--weights", weights], tmp_path / "out", "--weight", message)


def test_huge_equal_weights_in_python_are_refused_and_a_block_normalize_never_overflows(members):  # noqa: F811
    from st_static.compression import BlockNormalize

    models = [load_model(name) for name in members]
    with pytest.raises(ValueError, match="add up past the largest float"):
        ensemble(models, [1e308, 1e308])
    with pytest.raises(ValueError, match="finite positive"):
        ensemble(models, [0.0, 1.0])
    with pytest.raises(ValueError, match="vanish"):
        ensemble(models, [1e-300, 1.0])
    scales = BlockNormalize([2, 2], [1.5e308, 1.5e308]).block_scales  # an older folder's config: its sum is inf
    np.testing.assert_allclose(scales.numpy(), [0.5**0.5] * 2)
    assert ensemble(models, [1e6, 1.0])[1].block_weights == [1e6, 1.0]  # at the bound: kept


# 3. A StaticEmbedding member stored in bfloat16.


def test_a_bfloat16_static_embedding_member_is_read_as_float32(tmp_path):
    tokenizer = wordpiece_tokenizer()
    vectors = np.random.default_rng(5).standard_normal((tokenizer.get_vocab_size(), 7)).astype(np.float32)
    model = SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_weights=vectors), Normalize()])
    model.save(str(tmp_path / "static"))
    weights = tmp_path / "static" / "model.safetensors"
    save_file({key: tensor.to(torch.bfloat16) for key, tensor in load_file(weights).items()}, weights)
    assert SentenceTransformer(str(tmp_path / "static"), device="cpu").encode(["the"]).shape == (1, 7)  # valid
    member = read_member(str(tmp_path / "static"))
    assert member.token_vectors.dtype == np.float32
    expected = torch.from_numpy(vectors).to(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(member.token_vectors, expected)


# 4. --fold-norms texts that are no text.


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (np.random.default_rng(0).bytes(200_000), "not valid UTF-8 text"),
        ("😀😀 🙂\n!!! ??? ...\n— … ¿¡\n🎉 #@%\n".encode() * 50, "holds no word"),
    ],
)
def test_fold_norms_refuses_binary_data_and_files_without_a_word(members, tmp_path, content, message):  # noqa: F811
    path = tmp_path / "norms.txt"
    path.write_bytes(content)
    refused([*members, "--fold-norms", str(path)], tmp_path / "out", "--fold-norms", message)


# 5. Seeds numpy cannot take.


@pytest.mark.parametrize("seed", [99999999999999999999999, 2**32, -1, True])
def test_seeds_numpy_cannot_take_are_refused_up_front(seed):
    with pytest.raises(SettingsError, match=r"--soup-seeds\) must be seeds, integers from 0 to 4294967295"):
        RefinementSettings(soup_seeds=[1, seed])
    with pytest.raises(SettingsError, match=r"seed \(--seed\) must be a seed, an integer from 0 to 4294967295"):
        RefinementSettings(seed=seed)
    with pytest.raises(SettingsError, match="pca_sample_seed"):
        ExtractionSettings(pca_sample_seed=seed)
    assert RefinementSettings(seed=2**32 - 1, soup_seeds=[0]).seed == 2**32 - 1


def test_the_build_command_refuses_a_huge_soup_seed_before_any_work(tmp_path):
    from typer.testing import CliRunner

    from st_static.cli import app

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a line\n", encoding="utf-8")
    arguments = ["build", "--corpus", str(corpus), "--out", str(tmp_path / "m"), "--soup-seeds", "1,99999999999999"]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 1 and "--soup-seeds" in result.output and "4294967295" in result.output, result.output
    assert not (tmp_path / "m").exists() and not (tmp_path / "m.work").exists()


# 6. A soup's seed children after their build is killed.


def sleeping_training(settings: BuildSettings, work_dir: Path) -> None:
    """A fake seed training: it writes ``started-SEED`` in the work folder, then sleeps for ``seed`` seconds."""
    (work_dir / f"started-{settings.refinement.seed}").touch()
    time.sleep(settings.refinement.seed)


def fake_seed_child(settings: BuildSettings, work_dir: str, log: str) -> None:
    """A seed child's own job (its log, signals, parent watch and lock) around :func:`sleeping_training`."""
    soup._train_seed = sleeping_training
    soup._train_seed_logged(settings, work_dir, log)


def seed_children(work: Path, seed: int) -> soup.SeedChildren:
    """Children of a build in ``work`` training ``seed`` (a fake training: ``seed`` seconds of sleep)."""
    settings = BuildSettings.from_flat(corpus=["en.txt"], soup_seeds=[seed])
    return soup.SeedChildren(types.SimpleNamespace(settings=settings, work_dir=work), [seed])


KILLED_PARENT_SCRIPT = """
import sys, time
from pathlib import Path
from st_static.stages import soup
from tests.test_reliability_round8 import fake_seed_child, seed_children

if __name__ == "__main__":
    soup._train_seed_logged = fake_seed_child
    children = seed_children(Path(sys.argv[1]), 300)
    children.start(1)
    print(next(iter(children.running.values())).pid, flush=True)
    time.sleep(300)
"""


def running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie no one reaps has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def wait_until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)
    return condition()


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads process states from /proc")
def test_a_seed_child_stops_when_its_build_is_sigkilled(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    parent = subprocess.Popen(
        [sys.executable, "-c", KILLED_PARENT_SCRIPT, str(tmp_path)], env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE
    )
    try:
        child = int(parent.stdout.readline())
        assert wait_until((tmp_path / "started-300").is_file, 300), "the child never started its training"
        parent.send_signal(signal.SIGKILL)  # as the OOM killer does: no clean-up runs in the build
        parent.wait()
        assert wait_until(lambda: not running(child), 30), "the seed's child trains on without its build"
        log = (tmp_path / "seed-300-training.log").read_text(encoding="utf-8")
        assert "is gone; stopping" in log and "was stopped by SIGTERM" in log
        assert not (tmp_path / ".seed-300-training.lock.owner").exists()
    finally:
        parent.kill()
        parent.wait()


def test_a_rerun_starts_no_second_child_beside_a_running_one(tmp_path, monkeypatch):
    monkeypatch.setattr(soup, "_train_seed_logged", fake_seed_child)
    earlier = seed_children(tmp_path, 120)
    earlier.start(1)
    try:
        assert wait_until((tmp_path / "started-120").is_file, 300)
        monkeypatch.setattr(soup, "EARLIER_CHILD_SECONDS", 1.0, raising=False)
        rerun = seed_children(tmp_path, 120)
        pid = next(iter(earlier.running.values())).pid
        with pytest.raises(FolderInUseError, match=rf"seed 120: a training of an earlier run .* \(process {pid},"):
            rerun.start(1)
        assert not rerun.running
    finally:
        earlier.stop()


def test_a_rerun_waits_for_an_earlier_child_that_stops(tmp_path, monkeypatch):
    monkeypatch.setattr(soup, "_train_seed_logged", fake_seed_child)
    earlier, rerun = seed_children(tmp_path, 5), seed_children(tmp_path, 5)
    earlier.start(1)
    try:
        assert wait_until((tmp_path / "started-5").is_file, 300)
        rerun.start(1)  # waits the earlier one's last seconds out, then starts its own
        assert len(rerun.running) == 1
        earlier.finish(1)  # it ended well (exit code 0)
        rerun.finish(1)
    finally:
        earlier.stop()
        rerun.stop()


# Low: bitext files.


def concept_encoder(concepts: dict[str, int]):
    """An encoder giving a text the unit vector of its concept (a text and its translation share one)."""

    def encode(texts: list[str]) -> np.ndarray:
        return np.eye(8, dtype=np.float32)[[concepts[text] for text in texts]]

    return encode


def test_repeated_pairs_in_a_bitext_file_count_as_found(tmp_path):
    from st_static.evaluation.translation import evaluate_translation_retrieval

    path = tmp_path / "kor-eng.tsv"
    path.write_text("eng\tother\nHello\tHallo\nCat\tKatze\nHello\tHallo\nHello\tServus\n", encoding="utf-8")
    encoder = concept_encoder({"Hello": 0, "Hallo": 0, "Servus": 0, "Cat": 1, "Katze": 1})
    result = evaluate_translation_retrieval(encoder, path, diagnostics=False)
    assert result["accuracy_1_to_2"] == 100.0 and result["accuracy_2_to_1"] == 100.0  # ties went to row 1: 50, 75


def test_a_bitext_file_without_its_header_is_refused_not_read_one_pair_short(tmp_path):
    from st_static.data_files import DataFormatError
    from st_static.evaluation.translation import read_bitext_file

    path = tmp_path / "deu-eng.tsv"
    path.write_text("The cat sleeps.\tDie Katze schläft.\nHello!\tHallo!\nA dog.\tEin Hund.\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"deu-eng\.tsv:1: .*is no header .*eng<TAB>other"):
        read_bitext_file(path)
    path.write_text("eng\tother\nThe cat sleeps.\tDie Katze schläft.\nHello!\tHallo!\n", encoding="utf-8")
    assert len(read_bitext_file(path)) == 2


# Low: STS files no correlation can score.


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("the cat\tthe mat\t1\na dog\ta log\t4\n", "only 2 pairs; a Spearman correlation of two pairs is"),
        ("the cat\tthe cat\t1\na dog\ta dog\t4\nhi\thi\t2\n", "every pair pairs a text with itself"),
        ("the cat\tthe mat\t1\nthe mat\tthe cat\t4\nthe cat\tthe mat\t2\n", "every pair holds the same two texts"),
    ],
)
def test_sts_files_whose_correlation_is_noise_are_refused(tmp_path, rows, message):
    from st_static.data_files import DataFormatError
    from st_static.evaluation.sts import read_sts_file

    path = tmp_path / "stsb-en-dev.tsv"
    path.write_text("sentence1\tsentence2\tscore\n" + rows, encoding="utf-8")
    with pytest.raises(DataFormatError, match=message):
        read_sts_file(path)


def test_cosines_equal_but_for_rounding_give_no_correlation():
    from st_static.evaluation.sts import spearman_cosine

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((20, 16)).astype(np.float32)
    noisy = vectors * (1 + rng.uniform(-1e-7, 1e-7, size=(20, 1))).astype(np.float32)  # the same texts, rounded
    assert np.isnan(spearman_cosine(vectors, noisy, np.arange(20.0)))


# Low: option names in messages, checks before the work.


def test_second_pass_pairs_on_a_one_language_build_name_the_option():
    with pytest.raises(SettingsError, match=r"^--second-pass-pairs \(second_pass_pairs\) continue"):
        BuildSettings.from_flat(corpus=["en.txt"], second_pass_pairs=["de=en-de.tsv"])


def test_compress_checks_a_wordllama_spec_before_reading_any_member(members, tmp_path, monkeypatch):  # noqa: F811
    import st_static.compression

    def no_reading(name: str) -> None:
        raise AssertionError(f"read {name} before checking the members' names")

    monkeypatch.setattr(st_static.compression, "read_member", no_reading)
    refused([members[0], "wordllama:l2_supercat"], tmp_path / "out", "wordllama:CONFIG:DIM")


def test_compress_refuses_a_huge_vocab_size_before_building_the_ensemble(members, tmp_path, monkeypatch):  # noqa: F811
    import st_static.compression

    def no_building(*args: object, **kwargs: object) -> None:
        raise AssertionError("built the ensemble before checking --vocab-size")

    monkeypatch.setattr(st_static.compression, "ensemble", no_building)
    refused([*members, "--vocab-size", str(10**12)], tmp_path / "out", "--vocab-size 1000000000000", "tokens")


# Low: st-static disentangle's messages.


def test_disentangle_names_a_model2vec_folder_for_what_it_is(tmp_path):
    from model2vec import StaticModel
    from typer.testing import CliRunner

    from st_static.cli import app

    tokenizer = wordpiece_tokenizer()
    vectors = np.random.default_rng(4).standard_normal((tokenizer.get_vocab_size(), 6)).astype(np.float32)
    StaticModel(vectors, tokenizer, normalize=True).save_pretrained(str(tmp_path / "m2v"))
    (tmp_path / "p.tsv").write_text("en\tde\n" + "".join(f"a{i}\tb{i}\n" for i in range(30)), encoding="utf-8")
    arguments = ["disentangle", str(tmp_path / "m2v"), "--parallel", str(tmp_path / "p.tsv"), "-o", str(tmp_path / "o")]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 1 and "not a st-static table" in result.output, result.output
    assert "word tokenizer" not in result.output


def test_disentangle_asks_for_files_by_the_tables_languages_not_an_option_it_lacks(tmp_path):
    from typer.testing import CliRunner

    from st_static.cli import app

    model = make_model(WORDS_A, 8)
    model[0].metadata.languages = ["en", "de", "ja"]
    save_model(model, tmp_path / "table")
    (tmp_path / "p.tsv").write_text("en\tde\n" + "".join(f"a{i}\tb{i}\n" for i in range(30)), encoding="utf-8")
    arguments = [
        "disentangle",
        str(tmp_path / "table"),
        "--parallel",
        str(tmp_path / "p.tsv"),
        "-o",
        str(tmp_path / "o"),
    ]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 1 and "the table pairs en with de, ja" in result.output, result.output
    assert "--languages" not in result.output


# Low: the bundled corpus cache.


def test_a_changed_copy_of_the_bundled_corpus_is_decompressed_again(tmp_path):
    import hashlib

    from st_static import bundled

    path = bundled.default_corpus(tmp_path)
    with path.open("r+b") as handle:
        handle.truncate(1_000_000)  # a disk that filled up, an edit
    assert bundled.default_corpus(tmp_path) == path
    assert hashlib.sha256(path.read_bytes()).hexdigest() == bundled.DEFAULT_CORPUS_SHA256


# Low: the pair scripts.


def run_script(name: str, *arguments: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(REPO_ROOT / "scripts" / f"{name}.py"), *arguments]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)


def test_traditional_pairs_never_writes_over_an_input_and_gives_no_traceback(tmp_path):
    source = tmp_path / "en-zh.tsv"
    source.write_text("en\tother\nWe should go to sleep.\t我们该去睡觉了。\n", encoding="utf-8")
    before = source.read_bytes()
    done = run_script("traditional_pairs", str(source), "--out", str(source))
    assert done.returncode != 0 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr, done.stderr
    assert source.read_bytes() == before
    done = run_script("traditional_pairs", str(tmp_path / "missing.tsv"), "--out", str(tmp_path / "out.tsv"))
    assert done.returncode != 0 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr, done.stderr


def test_debian_pairs_never_writes_over_an_exclude_file(tmp_path):
    exclude = tmp_path / "fra-eng.tsv"
    exclude.write_text("eng\tother\nHello there my friend\tBonjour mon ami\n", encoding="utf-8")
    before = exclude.read_bytes()
    done = run_script("debian_pairs", "fr", "--debs", str(tmp_path), "--exclude", str(exclude), "--out", str(exclude))
    assert done.returncode != 0 and "error: " in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "--out file" in done.stderr and exclude.read_bytes() == before


# Newcomer 10: one sentence-transformers in .venv and .venv-clients.


def test_the_main_venv_and_the_clients_venv_get_the_same_sentence_transformers():
    from importlib.metadata import version

    constraints = (REPO_ROOT / "scripts" / "clients-constraints.txt").read_text(encoding="utf-8").splitlines()
    [pin] = [line for line in constraints if line.startswith("sentence-transformers==")]
    assert pin == f"sentence-transformers=={version('sentence-transformers')}"  # what scripts/setup.sh installed
    setup = (REPO_ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert "grep -E '^sentence-transformers==' scripts/clients-constraints.txt" in setup and '"$ST_PIN"' in setup
