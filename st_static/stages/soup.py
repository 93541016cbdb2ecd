"""The soup stage: the refinement (and the second contrastive pass, when the build has one) trained again with each
seed of ``soup_seeds`` from the same reduced table, and the trained tables averaged row by row into one (a model
soup, Wortsman et al. 2022), in ``soup-KEY/`` (a saved model), before the fallback and piece rows.

Each seed's training is the refinement (and second pass) of the build with that seed, in its own
``contrastive-KEY/`` (``distillation-KEY/``) and ``second-pass-KEY/`` folders: a finished one is reused, an
interrupted build resumes with the seeds it lacks. The seeds train in child processes, started when the refinement
stage trains the first seed (:func:`trainings_at_once` at a time) and awaited by this stage, so the first seed's
second pass runs beside them; each child writes its log to ``seed-N-training.log`` in the work folder.

Issue 65 (benchmarks/results/2026-11-30-thirteen-languages-seed-soup.md): the 13-language recipe with seeds 0 and 1,
averaged after their second passes, reads Tatoeba 89.44 (88.78 and 89.18 apart), Tux Paint 54.84 (54.60, 54.66) and
stsb-en-dev 78.53 (78.35, 78.56); averaged before one second pass, 89.32, 54.79 and 78.42. The seeds' tables start
from one reduced table, so their rows stay in one basis and their mean is a table, not a blur.

Runs when ``soup_seeds``. Keyed by the trained tables' keys of every seed, so a build without it keeps every key it
had.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TextIO

import torch
from filelock import FileLock, Timeout
from sentence_transformers import SentenceTransformer

from st_static.distributed import barrier, is_first_process, launched_processes
from st_static.errors import FolderInUseError
from st_static.files import staged_folder
from st_static.model.empty_text import attach_empty_text_dense
from st_static.model.save_load import load_model, write_model
from st_static.settings import BuildSettings
from st_static.signals import sigterm_raises_terminated, stop_signal
from st_static.stages.base import Build, FolderStage, prepare_build, stage_key
from st_static.stages.order import TRAINING_STAGES
from st_static.stages.refinement import Refinement
from st_static.stages.second_pass import SecondPass

logger = logging.getLogger(__name__)

STAGE = "soup"
"""The stage's entry in the model's ``stages``."""

STOP_SECONDS = 10.0
"""How long a child stopped by SIGTERM may take to unwind (its staging folder removed) before it is killed."""
PARENT_POLL_SECONDS = 1.0
"""How often a seed's child checks that the build that started it still runs (:func:`watch_parent`)."""
EARLIER_CHILD_SECONDS = 3 * (PARENT_POLL_SECONDS + STOP_SECONDS)
"""How long a build waits for a seed's child of an earlier run of its work folder (whose build was killed) to stop
before it refuses to start that seed again (:meth:`SeedChildren.start`)."""


class Soup(FolderStage):
    """The first process trains the missing seeds and averages; every process reads its folder."""

    name = STAGE

    def applies(self, build: Build) -> bool:
        return bool(build.settings.refinement.soup_seeds)

    def key(self, build: Build) -> str:
        return stage_key(build.trained_key, STAGE, [seed_trained_key(build, seed) for seed in soup_seeds(build)])

    def run_in(self, build: Build, folder: Path) -> SentenceTransformer:
        finished = (folder / "modules.json").is_file()
        if not finished:
            wait_for_seeds(build)  # every process: under torchrun they train the missing seeds together
        if is_first_process() and not finished:
            seeds = soup_seeds(build)
            others = [seed_trained_folder(build, seed) for seed in seeds]
            average_tables(build.trained(), others, folder, [build.settings.refinement.seed, *seeds])
        barrier()
        build.soup_path = build.model_path = folder
        build.model = build.record_inputs(load_model(folder))
        return build.model


def soup_seeds(build: Build) -> list[int]:
    """The seeds trained beside the build's own (``soup_seeds``; none without it)."""
    return list(build.settings.refinement.soup_seeds or [])


def seed_settings(settings: BuildSettings, seed: int) -> BuildSettings:
    """The build's settings with the refinement's ``seed`` and no soup of its own."""
    refinement = dataclasses.replace(settings.refinement, seed=seed, soup_seeds=None)
    return dataclasses.replace(settings, refinement=refinement)


def seeded_build(build: Build, seed: int) -> Build:
    """The build with ``seed``, its refinement (and second pass) keyed; the earlier stages keep their keys."""
    seeded = dataclasses.replace(build, settings=seed_settings(build.settings, seed), keys=dict(build.keys))
    for stage in (Refinement(), SecondPass()):
        if stage.applies(seeded):
            seeded.keys[stage.name] = stage.key(seeded)
    return seeded


def seed_trained_key(build: Build, seed: int) -> str:
    """The key of the trained table (the second pass's, else the refinement's) of the build with ``seed``."""
    keys = seeded_build(build, seed).keys
    return keys.get(SecondPass.name, keys[Refinement.name])


def seed_trained_folder(build: Build, seed: int) -> Path:
    """The trained table's folder (the second pass's, else the refinement's) of the build with ``seed``."""
    seeded = seeded_build(build, seed)
    last = SecondPass() if SecondPass().applies(seeded) else Refinement()
    return last.keyed_folder(seeded)


def missing_seeds(build: Build) -> list[int]:
    """The soup's seeds whose trained table's folder is not finished."""
    return [seed for seed in soup_seeds(build) if not (seed_trained_folder(build, seed) / "modules.json").is_file()]


def trainings_at_once(build: Build) -> int:
    """How many of the soup's trainings (the build's own included) run at once: as many full rounds of one training
    per place of the CPU (its cores over ``num_threads``) as the trainings fill, the rest spread over those rounds,
    so that no last round leaves a place idle. Three seeds on two cores train at once: a core shared by two of them
    gives each about half its speed (a tenth or so lost to the sharing), where a last round of one would leave a
    core idle for a whole training (``benchmarks/results/2026-11-30-thirteen-languages-three-seeds.md``). Each
    training holds its own copy of the pairs and the table in memory."""
    threads = build.settings.refinement.num_threads or torch.get_num_threads()
    places = max(1, (os.cpu_count() or 1) // threads)
    trainings = 1 + len(soup_seeds(build))
    return math.ceil(trainings / max(1, trainings // places))


def start_seeds_beside_own_training(build: Build) -> None:
    """The refinement stage's ``beside_training``: start the soup's missing seeds in child processes as the first
    seed's training starts, leaving them to :func:`wait_for_seeds` (the first seed's second pass runs meanwhile;
    the pipeline stops them if a stage fails). Under ``torchrun`` the soup stage trains them instead."""
    missing = missing_seeds(build)
    if missing and launched_processes() == 1 and build.background_trainings is None:
        children = SeedChildren(build, missing)
        children.start(trainings_at_once(build) - 1)
        build.background_trainings = children


def wait_for_seeds(build: Build) -> None:
    """Run the soup's seeds to their end: await the children the refinement stage started, and train the seeds still
    missing (a reused refinement started none) in children, :func:`trainings_at_once` at a time. Under ``torchrun``
    the launched processes train the missing seeds one after another, together.

    Raises:
        RuntimeError: Naming the seed and its log when a child's training failed.
    """
    if launched_processes() > 1:
        for seed in missing_seeds(build):
            _train_seed(seed_settings(build.settings, seed), build.work_dir)
        return
    children = build.background_trainings or SeedChildren(build, missing_seeds(build))
    build.background_trainings = children  # the pipeline stops them if one fails or the build is interrupted
    children.finish(trainings_at_once(build))
    build.background_trainings = None


def stop_seeds(build: Build) -> None:
    """Stop the seeds' children the build started, if any still run (a stage failed or was interrupted)."""
    if build.background_trainings is not None:
        build.background_trainings.stop()
        build.background_trainings = None


class SeedChildren:
    """The child processes that train a soup's seeds, each the build with its seed up to the soup."""

    def __init__(self, build: Build, seeds: list[int]) -> None:
        self.build = build
        self.waiting = list(seeds)
        self.running: dict[int, BaseProcess] = {}
        self.context = multiprocessing.get_context("spawn")

    def log(self, seed: int) -> Path:
        """Where the child training ``seed`` writes its log and progress lines."""
        return self.build.work_dir / f"seed-{seed}-training.log"

    def start(self, at_once: int) -> None:
        """Start waiting seeds until ``at_once`` children run.

        Raises:
            FolderInUseError: If a child of an earlier run of the work folder still trains a seed to start (its
                build was killed) and does not stop within :data:`EARLIER_CHILD_SECONDS`.
        """
        while self.waiting and len(self.running) < at_once:
            seed = self.waiting.pop(0)
            _wait_for_earlier_child(Path(self.build.work_dir), seed)
            logger.info("Training seed %d in a child process (log: %s).", seed, self.log(seed).name)
            child = self.context.Process(
                target=_train_seed_logged,
                args=(seed_settings(self.build.settings, seed), str(self.build.work_dir), str(self.log(seed))),
                name=f"st-static-seed-{seed}",
            )
            child.start()
            self.running[seed] = child

    def finish(self, at_once: int) -> None:
        """Run every seed to its end, ``at_once`` at a time.

        Raises:
            RuntimeError: Naming the seed and its log when a child failed.
        """
        while self.waiting or self.running:
            self.start(at_once)
            for seed, child in list(self.running.items()):
                child.join(timeout=1)
                if child.exitcode is None:
                    continue
                del self.running[seed]
                if child.exitcode != 0:
                    raise RuntimeError(
                        f"the training with seed {seed} failed (exit code {child.exitcode}); its log: {self.log(seed)}"
                    )

    def stop(self) -> None:
        """Stop every child by SIGTERM, which unwinds its training: its finished folders stay, its staging folder
        is removed. One still running after :data:`STOP_SECONDS` is killed (a rerun removes what it left)."""
        self.waiting.clear()
        for child in self.running.values():
            child.terminate()
        deadline = time.monotonic() + STOP_SECONDS
        for child in self.running.values():
            child.join(timeout=max(0.0, deadline - time.monotonic()))
            if child.exitcode is None:
                child.kill()
                child.join()
        self.running.clear()


def _train_seed_logged(settings: BuildSettings, work_dir: str, log: str) -> None:
    """A child process's job: :func:`_train_seed`, its log, progress lines and any error written to ``log``. SIGTERM
    (the parent stopping it) and Ctrl-C unwind it as they do the command line, so its staging folder is removed and
    its semaphores (tqdm's lock) released; it then exits with 128 + the signal number.

    Raises:
        SystemExit: With 143 (SIGTERM) or 130 (Ctrl-C) when stopped.
    """
    seed = settings.refinement.seed
    with open(log, "a", encoding="utf-8", buffering=1) as stream, sigterm_raises_terminated():
        try:
            _log_to(stream)
            watch_parent()
            with _seed_lock(Path(work_dir), seed):
                _train_seed(settings, Path(work_dir))
        except Exception:
            logger.exception("The training with seed %d failed.", settings.refinement.seed)
            raise
        except KeyboardInterrupt as error:
            number = stop_signal(error)
            logger.info("The training with seed %d was stopped by %s.", settings.refinement.seed, number.name)
            raise SystemExit(128 + number) from None
        finally:
            sys.stderr = sys.__stderr__


def _seed_lock_path(work_dir: Path, seed: int) -> Path:
    """The lock a seed's child holds while it trains (its pid in the file of the same name plus ``.owner``)."""
    return work_dir / f".seed-{seed}-training.lock"


@contextmanager
def _seed_lock(work_dir: Path, seed: int) -> Iterator[None]:
    """Hold the lock of ``seed``'s training in ``work_dir`` (a child's whole training), its pid written beside it.

    Raises:
        FolderInUseError: If another process trains the seed in this work folder.
    """
    path = _seed_lock_path(work_dir, seed)
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise FolderInUseError(f"{work_dir}: another process trains seed {seed} ({_lock_owner(path)}).") from None
    owner = path.with_name(path.name + ".owner")
    try:
        owner.write_text(str(os.getpid()), encoding="utf-8")
        yield
    finally:
        owner.unlink(missing_ok=True)
        lock.release()


def _lock_owner(path: Path) -> str:
    """Who holds a seed's lock: ``process PID``, else ``another process``."""
    try:
        return f"process {int(path.with_name(path.name + '.owner').read_text(encoding='utf-8'))}"
    except (OSError, ValueError):
        return "another process"


def _wait_for_earlier_child(work_dir: Path, seed: int) -> None:
    """Wait until no process trains ``seed`` in ``work_dir``: a child of an earlier run whose build was SIGKILLed
    (or OOM-killed) trains on until its :func:`watch_parent` notices, so a rerun would start a second one beside it.

    Raises:
        FolderInUseError: Naming the seed and the process when it still trains after :data:`EARLIER_CHILD_SECONDS`.
    """
    path = _seed_lock_path(work_dir, seed)
    lock = FileLock(str(path), timeout=0)
    deadline, told = time.monotonic() + EARLIER_CHILD_SECONDS, False
    while True:
        try:
            with lock.acquire():
                return
        except Timeout:
            if time.monotonic() > deadline:
                raise FolderInUseError(
                    f"seed {seed}: a training of an earlier run of {work_dir} still runs ({_lock_owner(path)}, "
                    f"log: seed-{seed}-training.log); wait for it to stop, or stop it, then run the build again."
                ) from None
            if not told:
                logger.warning("Seed %d: waiting for the training of an earlier run to stop (%s).", seed, path.name)
                told = True
            time.sleep(0.2)


def watch_parent(poll_seconds: float | None = None) -> threading.Thread | None:
    """In a spawned child, stop this process when the process that started it is gone (SIGKILLed or OOM-killed, so
    it stopped no child): a daemon thread checks every ``poll_seconds`` (:data:`PARENT_POLL_SECONDS`) whether the
    parent's sentinel closed or the parent pid changed (the child was re-parented), then sends this process SIGTERM,
    which unwinds a training as the parent's own stop does, and ends it after :data:`STOP_SECONDS` if it has not
    ended. (Linux's ``PR_SET_PDEATHSIG`` would fire when the parent's starting thread ends, not the parent.)

    Returns:
        The thread, or ``None`` in a process that multiprocessing did not start.
    """
    parent = multiprocessing.parent_process()
    if parent is None:
        return None
    poll = PARENT_POLL_SECONDS if poll_seconds is None else poll_seconds
    parent_pid = os.getppid()

    def watch() -> None:
        while parent.is_alive() and os.getppid() == parent_pid:
            time.sleep(poll)
        logger.warning("The build that started this training (process %s) is gone; stopping.", parent.pid)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(STOP_SECONDS)
        os._exit(128 + signal.SIGTERM)

    thread = threading.Thread(target=watch, name="st-static-parent-watch", daemon=True)
    thread.start()
    return thread


def _log_to(stream: TextIO) -> None:
    """Send this process's stderr (progress lines) and the package's log records (INFO and up) to ``stream``."""
    sys.stderr = stream
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    package = logging.getLogger("st_static")
    package.addHandler(handler)
    package.setLevel(logging.INFO)


def _train_seed(settings: BuildSettings, work_dir: Path) -> None:
    """Run (or reuse) the build's stages before the soup with ``settings`` (a seed of the soup): up to its
    refinement and its second pass."""
    build = prepare_build(settings, work_dir)
    for stage in TRAINING_STAGES:
        if stage.applies(build):
            stage.run(build)


def average_tables(first: Path, others: list[Path], destination: Path, seeds: list[int]) -> None:
    """Average the table of the trained model in ``first`` with those in ``others`` (same rows, same dimensions);
    save the result with ``first``'s metadata, ``seeds`` (the first's, then the others') recorded, in
    ``destination``.

    Raises:
        ValueError: If a table's shape differs from the first's.
    """
    model = load_model(first)
    module = model[0]
    weight = module.embedding.weight
    total = weight.detach().to(torch.float32).clone()
    for other in others:
        table = load_model(other)[0].embedding.weight.detach().to(torch.float32)
        if table.shape != total.shape:
            raise ValueError(f"{other}: its table is {tuple(table.shape)}, the first seed's {tuple(total.shape)}.")
        total += table
    with torch.no_grad():
        weight.copy_((total / (len(others) + 1)).to(weight.dtype))
    if module.fallback is not None:
        attach_empty_text_dense(model)  # its scale follows the largest row, which the average moved
    module.metadata.soup_seeds = list(seeds)
    module.metadata.add_stage(STAGE)
    with staged_folder(destination, replaceable=lambda _: True) as staging:
        write_model(model, staging)
