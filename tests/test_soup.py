"""The seed soup (issue 65): settings, stage keys, the averaged table, its record, and seeds trained in children."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from multiprocessing.process import BaseProcess
from pathlib import Path

import numpy as np
import pytest
import torch
from tqdm import tqdm

import st_static
from st_static.files import staged_folder
from st_static.pipeline.publish import build
from st_static.pipeline.run import prepare_build
from st_static.settings import BuildSettings, RefinementSettings, SettingsError
from st_static.stages import soup
from st_static.stages.base import Build
from st_static.stages.refinement import refinement_key_settings
from st_static.stages.second_pass import SecondPass
from st_static.stages.soup import SeedChildren, average_tables, stop_seeds, trainings_at_once

from .conftest import REPO_ROOT
from .teachers import make_tiny_teacher
from .test_build import tiny_settings
from .test_second_pass import write_pairs


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("soup")
    teacher = make_tiny_teacher(folder / "teacher")
    write_pairs(folder / "en-de.tsv", 320)
    return folder, teacher


def settings_for(inputs, **overrides) -> BuildSettings:
    folder, teacher = inputs
    return tiny_settings(teacher, parallel=[f"de={folder / 'en-de.tsv'}"], languages=["en", "de"], **overrides)


def table(folder) -> np.ndarray:
    return st_static.load_model(folder)[0].embedding.weight.detach().float().numpy()


def test_the_seeds_are_distinct_and_other_than_the_builds_own():
    assert RefinementSettings(soup_seeds=[1, 2]).soup_seeds == [1, 2]
    for seeds, message in [
        ([], "must be seeds"),
        ([1, -1], "must be seeds"),
        ([True], "must be seeds"),
        (["1"], "must be seeds"),
        ([1, 1], "must differ"),
        ([0], "must differ from each other and from seed \\(0\\)"),
    ]:
        with pytest.raises(SettingsError, match=message):
            RefinementSettings(soup_seeds=seeds)
    assert BuildSettings.from_flat(corpus=["en.txt"], soup_seeds=[3]).refinement.soup_seeds == [3]


def test_a_soup_leaves_the_refinement_key_of_each_seed_as_a_plain_build_has_it():
    plain = refinement_key_settings(BuildSettings.from_flat(corpus=["en.txt"]))
    souped = refinement_key_settings(BuildSettings.from_flat(corpus=["en.txt"], soup_seeds=[1]))
    assert plain == souped and "soup_seeds" not in plain


def test_the_soup_is_the_mean_of_the_seeds_tables_and_records_them(inputs, tmp_path):
    work = tmp_path / "work"
    seed_one = build(settings_for(inputs, seed=1), tmp_path / "seed-1", work_dir=work)
    seed_zero = build(settings_for(inputs), tmp_path / "seed-0", work_dir=work)
    assert len(list(work.glob("contrastive-*"))) == 2
    souped = build(settings_for(inputs, soup_seeds=[1]), tmp_path / "soup", work_dir=work)

    assert len(list(work.glob("contrastive-*"))) == 2  # both seeds' trainings reused
    assert list(souped.seconds)[-5:] == ["contrastive", "soup", "fallback", "pieces", "storage (float16)"]
    refined = [st_static.load_model(path) for path in sorted(work.glob("contrastive-*"))]
    first, second = (model[0].embedding.weight.detach().float() for model in refined)
    soup_folder = next(work.glob("soup-*"))
    averaged = st_static.load_model(soup_folder)[0].embedding.weight.detach().float()
    assert torch.allclose(averaged, (first + second) / 2, atol=1e-6)
    assert not torch.allclose(first, second)  # the seeds trained differently
    metadata = st_static.load_model(tmp_path / "soup")[0].metadata
    assert metadata.soup_seeds == [0, 1]
    assert metadata.stages.index("soup") == metadata.stages.index("contrastive") + 1
    assert metadata.training == seed_zero.model[0].metadata.training  # the first seed's record
    card = (tmp_path / "soup" / "README.md").read_text(encoding="utf-8")
    assert "**Seed soup.**" in card and "2 trainings (seeds 0, 1)" in card
    assert not np.allclose(table(tmp_path / "soup"), table(tmp_path / "seed-0"))
    assert seed_one.model[0].metadata.soup_seeds is None


def test_a_missing_seed_trains_its_refinement_and_second_pass_in_a_child_process(inputs, tmp_path):
    folder, _ = inputs
    write_pairs(folder / "close" / "en-de.tsv", 120, offset=320)
    second_pass = {"second_pass_pairs": [f"de={folder / 'close' / 'en-de.tsv'}"], "second_pass_steps": 8}
    work = tmp_path / "work"
    souped = build(settings_for(inputs, soup_seeds=[2], **second_pass), tmp_path / "soup", work_dir=work)

    assert list(souped.seconds)[-6:] == [
        "contrastive",
        "second pass",
        "soup",
        "fallback",
        "pieces",
        "storage (float16)",
    ]
    assert len(list(work.glob("contrastive-*"))) == 2 and len(list(work.glob("second-pass-*"))) == 2
    seeds = sorted(work.glob("second-pass-*"))
    tables = [st_static.load_model(path)[0].embedding.weight.detach().float() for path in seeds]
    averaged = st_static.load_model(next(work.glob("soup-*")))[0].embedding.weight.detach().float()
    assert torch.allclose(averaged, (tables[0] + tables[1]) / 2, atol=1e-6)  # the second passes' tables averaged
    log = (work / "seed-2-training.log").read_text(encoding="utf-8")
    assert "Refining (contrastive)" in log
    metadata = st_static.load_model(tmp_path / "soup")[0].metadata
    assert metadata.stages[-2:] == ["second pass", "soup"] and metadata.second_pass.steps == 8
    alone = build(settings_for(inputs, seed=2, **second_pass), tmp_path / "seed-2", work_dir=work)
    assert len(list(work.glob("second-pass-*"))) == 2  # the child's folders are the plain build's with seed 2
    assert alone.model[0].metadata.soup_seeds is None


def test_tables_of_other_shapes_are_refused(inputs, tmp_path):
    first = build(settings_for(inputs), tmp_path / "a", work_dir=tmp_path / "work")
    other = build(settings_for(inputs, dim=6), tmp_path / "b", work_dir=tmp_path / "work")
    assert first.model[0].embedding.weight.shape != other.model[0].embedding.weight.shape
    folders = sorted((tmp_path / "work").glob("contrastive-*"))
    with pytest.raises(ValueError, match="its table is"):
        average_tables(folders[0], [folders[1]], tmp_path / "soup", [0, 1])
    assert not (tmp_path / "soup").exists()


def test_a_failed_child_is_named_with_its_log(inputs, tmp_path):
    folder, _ = inputs
    settings = tiny_settings(
        tmp_path / "no-teacher", parallel=[f"de={folder / 'en-de.tsv'}"], languages=["en", "de"], soup_seeds=[1]
    )
    children = SeedChildren(prepare_build(settings, tmp_path), [1])
    children.start(1)
    with pytest.raises(RuntimeError, match=r"the training with seed 1 failed .*seed-1-training\.log"):
        children.finish(1)
    assert "The training with seed 1 failed" in (tmp_path / "seed-1-training.log").read_text(encoding="utf-8")


def test_an_interrupted_build_stops_its_children(inputs, tmp_path):
    build_ = prepare_build(settings_for(inputs, soup_seeds=[1, 2]), tmp_path)
    children = SeedChildren(build_, [1, 2])
    children.start(1)
    started = list(children.running.values())
    assert len(started) == 1 and children.waiting == [2]
    children.stop()
    assert not started[0].is_alive() and not children.running and not children.waiting


def hold_a_staging_folder(settings: BuildSettings, work_dir: Path) -> None:
    """A child's training, fast: it takes tqdm's lock (a semaphore the resource tracker follows, as a real training's
    progress bar does) and holds its refinement's staging folder until stopped."""
    tqdm.get_lock()
    with staged_folder(work_dir / f"contrastive-seed-{settings.refinement.seed}"):
        time.sleep(120)


def held_seed_training(settings: BuildSettings, work_dir: str, log: str) -> None:
    """The child's own job (its log, its signals) around :func:`hold_a_staging_folder`."""
    soup._train_seed = hold_a_staging_folder
    soup._train_seed_logged(settings, work_dir, log)


def staging_folders(work: Path) -> list[str]:
    """The names of the staging folders (``.NAME.tmp-PID-*``) in ``work``."""
    return [path.name for path in work.glob(".*.tmp-*")]


def stop_a_seed_in_its_staging_folder(build_: Build) -> BaseProcess:
    """Start seed 1 in a child (its job :func:`held_seed_training` once the caller patches ``_train_seed_logged``)
    and stop it as the pipeline does once its staging folder is there; return the stopped child."""
    children = SeedChildren(build_, [1])
    children.start(1)
    build_.background_trainings = children
    [child] = children.running.values()
    deadline = time.monotonic() + 120
    while not staging_folders(build_.work_dir) and child.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert staging_folders(build_.work_dir), "the child never opened its staging folder"
    stop_seeds(build_)
    return child


def test_a_child_stopped_by_sigterm_removes_its_staging_folder(inputs, tmp_path, monkeypatch):
    monkeypatch.setattr(soup, "_train_seed_logged", held_seed_training)
    child = stop_a_seed_in_its_staging_folder(prepare_build(settings_for(inputs, soup_seeds=[1]), tmp_path))
    assert child.exitcode == 143  # 128 + SIGTERM: it unwound, where a default SIGTERM ends it at once (-15)
    assert staging_folders(tmp_path) == [] and not (tmp_path / "contrastive-seed-1").exists()
    log = (tmp_path / "seed-1-training.log").read_text(encoding="utf-8")
    assert "The training with seed 1 was stopped by SIGTERM." in log and "Traceback" not in log


def ignore_sigterm(settings: BuildSettings, work_dir: str, log: str) -> None:
    """A child's job that ignores SIGTERM (stuck where no signal handler runs) and holds its staging folder."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    hold_a_staging_folder(settings, Path(work_dir))


def test_a_child_that_does_not_stop_is_killed_after_the_grace_time(inputs, tmp_path, monkeypatch):
    monkeypatch.setattr(soup, "_train_seed_logged", ignore_sigterm)
    monkeypatch.setattr(soup, "STOP_SECONDS", 1.0)
    started = time.monotonic()
    child = stop_a_seed_in_its_staging_folder(prepare_build(settings_for(inputs, soup_seeds=[1]), tmp_path))
    assert child.exitcode == -9 and not child.is_alive()  # SIGKILL, once the grace time had passed
    assert time.monotonic() - started < 60
    # what it left is a dead process's staging folder, which the next build of that stage removes
    assert len(staging_folders(tmp_path)) == 1 and not (tmp_path / "contrastive-seed-1").exists()


STOP_SCRIPT = """
import sys
from pathlib import Path
from st_static.pipeline.run import prepare_build
from st_static.stages import soup
from tests.test_soup import held_seed_training, settings_for, staging_folders, stop_a_seed_in_its_staging_folder

if __name__ == "__main__":
    soup._train_seed_logged = held_seed_training
    work = Path(sys.argv[3])
    built = prepare_build(settings_for((Path(sys.argv[1]), Path(sys.argv[2])), soup_seeds=[1]), work)
    child = stop_a_seed_in_its_staging_folder(built)
    print(child.exitcode, staging_folders(work))
"""


def test_a_stopped_child_leaks_no_semaphore(inputs, tmp_path):
    """The child's tqdm lock is a named semaphore: a child ended by a bare SIGTERM never releases it, and the
    resource tracker warns at exit (on stderr, after the parent has ended, so the run is a process of its own)."""
    folder, teacher = inputs
    arguments = [sys.executable, "-c", STOP_SCRIPT, str(folder), str(teacher), str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(arguments, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "leaked semaphore" not in result.stderr, result.stderr
    assert result.stdout.split() == ["143", "[]"], result.stdout  # stopped by SIGTERM, its staging folder removed


@pytest.mark.parametrize(
    ("seeds", "threads", "at_once"),
    [([1], 1, 2), ([1, 2], 1, 3), ([1, 2, 3], 1, 2), ([1, 2, 3, 4], 1, 3), ([1, 2], 2, 1), ([1, 2, 3], None, 2)],
)
def test_no_last_round_of_trainings_leaves_a_core_idle(inputs, tmp_path, monkeypatch, seeds, threads, at_once):
    """Two cores: full rounds of one training per place, the rest spread over them."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)  # what None (torch's own setting) reads
    built = prepare_build(settings_for(inputs, soup_seeds=seeds, num_threads=threads), tmp_path)
    assert trainings_at_once(built) == at_once


def test_the_seeds_train_on_past_the_refinement_and_a_later_failure_stops_them(inputs, tmp_path, monkeypatch):
    """Three seeds on two cores train at once; the first seed's second pass does not wait for the others (the soup
    stage does), and a stage failing meanwhile stops them."""
    folder, _ = inputs
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    started: list = []
    original_start = SeedChildren.start

    def recording_start(self, at_once):
        original_start(self, at_once)
        started.extend(child for child in self.running.values() if child not in started)

    seen_at_the_second_pass: list = []

    def failing_second_pass(self, build_, folder_):
        seen_at_the_second_pass.append((build_.background_trainings, len(started)))
        raise RuntimeError("the second pass failed")

    monkeypatch.setattr(SeedChildren, "start", recording_start)
    monkeypatch.setattr(SecondPass, "run_in", failing_second_pass)
    second_pass = {"second_pass_pairs": [f"de={folder / 'en-de.tsv'}"], "second_pass_steps": 8}
    with pytest.raises(RuntimeError, match="the second pass failed"):
        build(settings_for(inputs, soup_seeds=[1, 2], **second_pass), tmp_path / "soup", work_dir=tmp_path / "work")
    [(children, count)] = seen_at_the_second_pass
    assert isinstance(children, SeedChildren) and count == 2  # both started with the first seed, still awaited
    assert not any(child.is_alive() for child in started)
    assert not (tmp_path / "soup").exists()
