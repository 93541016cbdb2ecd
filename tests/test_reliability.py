"""Reliability probes: outputs never delete what they should not, one writer per folder, content-keyed stages,
readable outputs, and recovery from interrupted swaps."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from safetensors import SafetensorError
from typer.testing import CliRunner

import st_static
import st_static.stages.extraction as stages_module
from st_static import save_model
from st_static.cli import app
from st_static.errors import FolderInUseError, StStaticError, UnsafeDestinationError
from st_static.files import folder_lock, recover_interrupted_swaps, staged_folder
from st_static.pipeline.publish import build

from .teachers import TINY_CORPUS, make_tiny_teacher
from .test_build import tiny_settings

runner = CliRunner()


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp("teacher"))


# ------------------------------------------------------------------------------------------ safe destinations
def test_save_refuses_a_folder_of_other_files_and_keeps_them(word_model, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("mine")
    with pytest.raises(UnsafeDestinationError, match="not an st-static output"):
        save_model(word_model, project)
    assert (project / "notes.txt").read_text() == "mine"


def test_force_replaces_a_folder_of_other_files(word_model, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("mine")
    save_model(word_model, project, force=True)
    assert not (project / "notes.txt").exists()
    assert (project / "modules.json").is_file()


def test_an_earlier_model_is_replaced_without_force(word_model, tmp_path):
    save_model(word_model, tmp_path / "model")
    (tmp_path / "model" / "stale.txt").write_text("from the old model")
    save_model(word_model, tmp_path / "model")
    assert not (tmp_path / "model" / "stale.txt").exists()


@pytest.mark.parametrize("name", ["", ".", "cwd-parent", "home"])
def test_the_current_folder_home_and_empty_paths_are_never_outputs(word_model, tmp_path, monkeypatch, name):
    work = tmp_path / "here"
    work.mkdir()
    (work / "keep.txt").write_text("keep")
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(work))
    destination = {"": "", ".": ".", "cwd-parent": str(tmp_path), "home": "~"}[name]
    with pytest.raises(UnsafeDestinationError):
        save_model(word_model, destination, force=True)
    assert (work / "keep.txt").read_text() == "keep"


def test_a_file_at_the_destination_is_an_error(word_model, tmp_path):
    (tmp_path / "model").write_text("a file")
    with pytest.raises(UnsafeDestinationError, match="is a file"):
        save_model(word_model, tmp_path / "model", force=True)
    assert (tmp_path / "model").read_text() == "a file"


def test_compress_to_the_current_folder_is_refused_and_deletes_nothing(word_model, tmp_path, monkeypatch):
    model = save_model(word_model, tmp_path / "model")
    monkeypatch.chdir(tmp_path)
    for output in (".", ""):
        result = runner.invoke(app, ["compress", str(model), "-o", output, "-s", "float16"])
        assert result.exit_code == 1, result.output
        assert result.output.startswith("error:")
    assert (tmp_path / "model" / "modules.json").is_file()


def test_build_into_the_corpus_folder_is_refused_before_the_teacher_runs(teacher, tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    corpus = project / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    monkeypatch.setattr(stages_module, "extract_word_vectors", lambda *a, **k: pytest.fail("teacher ran"))
    with pytest.raises(UnsafeDestinationError, match="an input of this run"):
        build(tiny_settings(teacher, corpus=str(corpus)), project, force=True)
    assert corpus.is_file()


# ------------------------------------------------------------------------------------------ one writer per folder
LOCK_HOLDER = textwrap.dedent(
    """
    import sys, time
    from st_static.files import folder_lock
    with folder_lock(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(60)
    """
)


def test_a_second_writer_is_told_who_holds_the_folder(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(tmp_path / "out.work")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(FolderInUseError, match=rf"process {holder.pid}"), folder_lock(tmp_path / "out.work"):
            pass
    finally:
        holder.kill()
        holder.wait()
    with folder_lock(tmp_path / "out.work"):  # free again once the holder is gone
        pass


def test_the_lock_is_reentrant_within_a_process_and_leaves_nothing_beside_the_folder(tmp_path):
    with folder_lock(tmp_path / "x"), folder_lock(tmp_path / "x"):
        pass
    assert [path.name for path in tmp_path.iterdir()] == ["x"]


# ------------------------------------------------------------------------------------------ content-keyed stages
def test_a_corpus_edited_in_place_is_read_again(teacher, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    first = build(tiny_settings(teacher, corpus=str(corpus)), tmp_path / "model")
    stat_before = corpus.stat()
    corpus.write_text("\n".join([*TINY_CORPUS, "zebras graze on the savannah", "zebras graze"] * 3) + "\n")
    os.utime(corpus, ns=(stat_before.st_atime_ns, stat_before.st_mtime_ns))  # same mtime: content decides
    second = build(tiny_settings(teacher, corpus=str(corpus)), tmp_path / "model")
    assert "zebras" not in first.model[0].vocabulary
    assert "zebras" in second.model[0].vocabulary


# ------------------------------------------------------------------------------------------ permissions
def test_published_folders_and_files_follow_the_umask(word_model, tmp_path):
    previous = os.umask(0o022)
    try:
        folder = save_model(word_model, tmp_path / "model")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    for path in folder.rglob("*"):
        expected = 0o755 if path.is_dir() else 0o644
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


# ------------------------------------------------------------------------------------------ interrupted swaps
def test_a_backup_left_by_a_killed_swap_is_restored(word_model, tmp_path):
    save_model(word_model, tmp_path / "model")
    backup = tmp_path / f".model.old-{dead_pid()}"
    os.rename(tmp_path / "model", backup)  # killed between the two renames: nothing at the destination
    recover_interrupted_swaps(tmp_path / "model")
    assert (tmp_path / "model" / "modules.json").is_file()
    assert not backup.exists()


def test_stale_staging_folders_of_dead_processes_are_removed(word_model, tmp_path):
    save_model(word_model, tmp_path / "model")
    stale = tmp_path / f".model.tmp-{dead_pid()}-abc"
    stale.mkdir()
    old = tmp_path / f".model.old-{dead_pid()}"
    old.mkdir()
    save_model(word_model, tmp_path / "model")
    assert not stale.exists()
    assert not old.exists()


KILLED_BETWEEN_RENAMES = textwrap.dedent(
    """
    import os, signal, sys
    import st_static.files.swaps as swaps
    from st_static import load_model, save_model
    swaps._exchange = lambda first, second: False   # the two-rename path of systems without an atomic exchange
    real_rename = os.rename
    def rename(source, destination):
        real_rename(source, destination)
        if ".old-" in str(destination):
            os.kill(os.getpid(), signal.SIGKILL)
    os.rename = rename
    save_model(load_model(sys.argv[1]), sys.argv[1])
    """
)


def test_a_save_killed_between_the_two_renames_loses_nothing(word_model, tmp_path):
    folder = save_model(word_model, tmp_path / "model")
    before = word_model.encode(["the cat sat"])
    killed = subprocess.run([sys.executable, "-c", KILLED_BETWEEN_RENAMES, str(folder)], check=False)
    assert killed.returncode == -signal.SIGKILL
    assert not folder.exists()  # the window the recovery is for
    save_model(word_model, tmp_path / "other")  # any later run repairs it ...
    recover_interrupted_swaps(folder)  # ... as does the next save to the same place (it calls this first)
    from st_static import load_model

    np.testing.assert_allclose(load_model(folder).encode(["the cat sat"]), before, atol=1e-6)
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".model.")] == []


def test_a_failed_block_leaves_the_destination_and_no_staging(word_model, tmp_path):
    folder = save_model(word_model, tmp_path / "model")
    with pytest.raises(RuntimeError), staged_folder(folder, replaceable=lambda _: True) as staging:
        (staging / "half").write_text("half written")
        raise RuntimeError("interrupted")
    assert (folder / "modules.json").is_file()
    assert [path.name for path in tmp_path.iterdir()] == ["model"]


def test_project_errors_share_one_base():
    assert issubclass(UnsafeDestinationError, StStaticError)
    assert issubclass(FolderInUseError, StStaticError)


# ------------------------------------------------------------------------------------------ unwritable outputs
def test_a_full_disk_during_compress_is_one_error_line_and_changes_nothing(word_model, tmp_path, monkeypatch):
    import errno

    import st_static.model.module_folder as module

    model = save_model(word_model, tmp_path / "model")
    save_model(word_model, tmp_path / "small")
    before = sorted(path.name for path in (tmp_path / "small").iterdir())

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", "model.safetensors")

    monkeypatch.setattr(module, "save_file", full_disk)
    result = runner.invoke(app, ["compress", str(model), "-o", str(tmp_path / "small"), "-s", "float16"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"error: Cannot write the model folder {tmp_path / 'small'}: No space left on device (model.safetensors). "
        f"Nothing was changed at {tmp_path / 'small'}; free space or choose a writable folder."
    ]
    assert sorted(path.name for path in (tmp_path / "small").iterdir()) == before
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".small.")]


def test_cli_errors_are_one_line(tmp_path, word_model):
    model = save_model(word_model, tmp_path / "model")
    cases = [
        (
            [
                "build",
                "--out",
                str(tmp_path / "m"),
                "--corpus",
                str(model / "tokenizer.json"),
                "--matryoshka-dims",
                "a,b",
            ],
            "--matryoshka-dims takes comma-separated integers",
        ),
        (["card", str(model), "--output", str(tmp_path)], "is a folder"),
    ]
    for arguments, fragment in cases:
        result = runner.invoke(app, arguments)
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0], result.output


def test_a_speed_corpus_that_is_not_utf8_is_read_as_far_as_it_is(tmp_path, word_model):
    model = save_model(word_model, tmp_path / "model")
    corpus = tmp_path / "latin1.txt"
    corpus.write_bytes("the cat sat\ncaf\xe9 cr\xe8me\n".encode("latin-1") + b"the mat\n")
    result = runner.invoke(app, ["card", str(model), "--speed-corpus", str(corpus), "--speed-sentences", "10"])
    assert result.exit_code == 0, result.output
    assert "sentences/s" in result.output


# ------------------------------------------------------------------------------------------ round three (issue 31)
def assert_one_error_line(result, fragment: str) -> None:
    """Exit code 1, no traceback, and one ``error:`` line (last) naming ``fragment``; progress lines may precede it."""
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert [line for line in lines if line.startswith("error:")] == lines[-1:], result.output
    assert fragment in lines[-1], result.output


def teacher_without_tokenizer(teacher: Path, folder: Path) -> Path:
    shutil.copytree(teacher, folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        (folder / name).unlink(missing_ok=True)
    return folder


def test_a_teacher_without_its_tokenizer_files_is_refused_before_its_pass(teacher, tmp_path, monkeypatch):
    broken = teacher_without_tokenizer(teacher, tmp_path / "teacher")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    monkeypatch.setattr(stages_module, "extract_word_vectors", lambda *a, **k: pytest.fail("teacher ran"))
    result = runner.invoke(
        app, ["build", "--teacher", str(broken), "--corpus", str(corpus), "--out", str(tmp_path / "m"), "--dim", "8"]
    )
    assert_one_error_line(result, "tokenizer files")
    assert not (tmp_path / "m").exists()


def test_a_loaded_teacher_without_its_tokenizer_is_refused(teacher, tmp_path):
    from sentence_transformers import SentenceTransformer

    from st_static.extraction.teacher_model import check_teacher
    from st_static.teachers import TeacherError

    check_teacher(SentenceTransformer(str(teacher), device="cpu"))  # the whole teacher passes
    loaded = SentenceTransformer(str(teacher_without_tokenizer(teacher, tmp_path / "teacher")), device="cpu")
    with pytest.raises(TeacherError, match="tokenizer has 5 tokens but its token embedding table has"):
        check_teacher(loaded)


@pytest.mark.parametrize(
    "writer_error",
    [
        lambda: SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)"),
        lambda: Exception("No space left on device (os error 28)"),  # what the tokenizers writer raises
    ],
    ids=["safetensors", "tokenizers"],
)
def test_the_rust_writers_full_disk_errors_are_one_error_line(word_model, tmp_path, monkeypatch, writer_error):
    import st_static.model.module_folder as module

    model = save_model(word_model, tmp_path / "model")
    save_model(word_model, tmp_path / "small")
    before = {path.name: path.read_bytes() for path in (tmp_path / "small").iterdir() if path.is_file()}

    def full_disk(*args, **kwargs):
        raise writer_error()

    monkeypatch.setattr(module, "save_file", full_disk)
    result = runner.invoke(app, ["compress", str(model), "-o", str(tmp_path / "small"), "-s", "float16"])
    assert_one_error_line(result, f"Cannot write the model folder {tmp_path / 'small'}: No space left on device")
    assert {path.name: path.read_bytes() for path in (tmp_path / "small").iterdir() if path.is_file()} == before
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".small.")]


def test_a_failed_atomic_write_is_an_output_write_error_and_keeps_the_old_file(tmp_path):
    from st_static.errors import OutputWriteError
    from st_static.files import write_file_atomically

    target = tmp_path / "tokenizer.json"
    target.write_text("old")

    def full_disk(path: Path) -> None:
        path.write_text("half")
        raise Exception("No space left on device (os error 28)")

    with pytest.raises(OutputWriteError, match="No space left on device"):
        write_file_atomically(target, full_disk)
    assert target.read_text() == "old" and [path.name for path in tmp_path.iterdir()] == ["tokenizer.json"]
    with pytest.raises(ValueError, match="a bug"):  # anything else keeps its own type
        write_file_atomically(target, lambda path: (_ for _ in ()).throw(ValueError("a bug")))


def test_card_on_a_read_only_folder_is_one_error_line(word_model, tmp_path, monkeypatch):
    import errno

    import st_static.files.atomic as atomic

    model = save_model(word_model, tmp_path / "model")
    card = (model / "README.md").read_text()

    apply_umask_modes = atomic.apply_umask_modes

    def read_only_model_folder(path):
        if Path(path).parent == model:
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        apply_umask_modes(path)

    monkeypatch.setattr(atomic, "apply_umask_modes", read_only_model_folder)
    assert_one_error_line(runner.invoke(app, ["card", str(model)]), "README.md: Read-only file system")
    assert (model / "README.md").read_text() == card


def test_a_read_only_work_folder_is_one_error_line(tmp_path, monkeypatch):
    import errno

    import st_static.files.locks as locks
    from st_static.errors import OutputWriteError

    class ReadOnlyLock:
        is_locked = False

        def __init__(self, path, **kwargs):
            self.path = path

        def acquire(self):
            raise OSError(errno.EROFS, "Read-only file system", self.path)

    monkeypatch.setattr(locks, "FileLock", ReadOnlyLock)
    message = r"Cannot write the working folder .*out\.work: Read-only file system"
    with pytest.raises(OutputWriteError, match=message), folder_lock(tmp_path / "out.work"):
        pytest.fail("the block ran")


# ------------------------------------------------------------------------------------------ work folders (issue 46)
def test_a_work_dir_through_a_symbolic_link_is_refused_and_nothing_is_written_through_it(teacher, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    with pytest.raises(UnsafeDestinationError, match="is a symbolic link"):
        build(tiny_settings(teacher, corpus=str(corpus)), tmp_path / "m", work_dir=tmp_path / "link")
    assert list(real.iterdir()) == []


@pytest.mark.parametrize("kind", ["user folder", "model folder"])
def test_a_non_empty_folder_that_is_no_work_folder_is_refused_as_work_dir(teacher, word_model, tmp_path, kind):
    folder = tmp_path / "folder"
    if kind == "model folder":
        save_model(word_model, folder)
    else:
        folder.mkdir()
        (folder / "notes.txt").write_text("mine")
    before = sorted(path.name for path in folder.iterdir())
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    with pytest.raises(UnsafeDestinationError, match="not an st-static work folder"):
        build(tiny_settings(teacher, corpus=str(corpus)), tmp_path / "m", work_dir=folder)
    with pytest.raises(UnsafeDestinationError, match="not an st-static work folder"):
        st_static.distill(str(teacher), corpus, work_dir=folder)
    assert sorted(path.name for path in folder.iterdir()) == before


def test_distill_checks_its_work_dir_as_a_build_does(teacher, tmp_path, monkeypatch):
    corpus = tmp_path / "data" / "corpus.txt"
    corpus.parent.mkdir()
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnsafeDestinationError, match="is a file, not a folder"):
        st_static.distill(str(teacher), corpus, work_dir=tmp_path / "a-file")
    with pytest.raises(UnsafeDestinationError, match="holds the current folder"):
        st_static.distill(str(teacher), corpus, work_dir=".")
    with pytest.raises(UnsafeDestinationError, match="an input of this run"):
        st_static.distill(str(teacher), corpus, work_dir=corpus.parent)
    assert sorted(path.name for path in corpus.parent.iterdir()) == ["corpus.txt"]


def test_failed_checks_leave_no_empty_work_folder(teacher, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat\nsat\n")
    with pytest.raises(StStaticError, match="only 2 sentence"):
        build(tiny_settings(teacher, corpus=str(corpus)), tmp_path / "m")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["corpus.txt"]
    with pytest.raises(StStaticError, match="only 2 sentence"):
        st_static.distill(str(teacher), corpus, work_dir=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()
    (tmp_path / "empty").mkdir()  # a folder the caller made stays
    with pytest.raises(StStaticError, match="only 2 sentence"):
        build(tiny_settings(teacher, corpus=str(corpus)), tmp_path / "m", work_dir=tmp_path / "empty")
    assert (tmp_path / "empty").is_dir()
