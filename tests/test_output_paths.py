"""Output paths (issue 38): every command refuses, before any work, an output that is a device, pipe or folder
where a file is expected, one of the files it reads, or a place it cannot write, and changes nothing there."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

import st_static.cli.evaluate as evaluate_command
import st_static.model.save_load as save_load
from st_static import save_model
from st_static.cli import app
from st_static.errors import UnsafeDestinationError
from st_static.files import check_destination, check_file_destination, file_sha256

runner = CliRunner()


@pytest.fixture
def model(word_model, tmp_path) -> Path:
    return save_model(word_model, tmp_path / "model")


@pytest.fixture
def data(tmp_path) -> Path:
    sts = tmp_path / "data" / "sts"
    sts.mkdir(parents=True)
    (sts / "stsb-en-test.tsv").write_text(
        "sentence1\tsentence2\tscore\nthe cat sat\tthe cat sat on the mat\t4.5\nhello world\tthe mat\t0.5\n"
        "the cat\tcat\t3.0\n"
    )
    return tmp_path / "data"


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if a command loads a model (the first piece of work of evaluate and card)."""

    def refuse(*args, **kwargs):
        pytest.fail("the command started working before checking its output path")

    monkeypatch.setattr(evaluate_command, "load_any_model", refuse)
    monkeypatch.setattr(save_load, "load_model", refuse)


def null_device(path: Path) -> Path:
    """A character device like /dev/null (major 1, minor 3), made in a temporary folder, or a skip."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    return path


def snapshot(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): file_sha256(path) for path in sorted(folder.rglob("*")) if path.is_file()}


def assert_refused(result, fragment: str) -> None:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0], result.output


def file_output_commands(model: Path, data: Path, target: Path) -> list[list[str]]:
    return [
        ["evaluate", str(model), "--data", str(data), "--json", str(target)],
        ["card", str(model), "--output", str(target)],
    ]


def test_a_device_node_is_never_replaced_by_a_file_output(model, data, tmp_path, no_work):
    device = null_device(tmp_path / "full")
    for arguments in file_output_commands(model, data, device):
        assert_refused(runner.invoke(app, arguments), "is a character device, not a regular file")
        assert stat.S_ISCHR(device.stat().st_mode), arguments


def test_a_named_pipe_is_never_replaced_by_a_file_output(model, data, tmp_path, no_work):
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    for arguments in file_output_commands(model, data, pipe):
        assert_refused(runner.invoke(app, arguments), "is a named pipe")
        assert stat.S_ISFIFO(pipe.stat().st_mode), arguments


@pytest.mark.parametrize("name", ["model.safetensors", "tokenizer.json", "modules.json", "1_Normalize/config.json"])
def test_a_file_output_never_replaces_a_file_of_the_model(model, data, no_work, name):
    before = snapshot(model)
    for arguments in file_output_commands(model, data, model / name):
        assert_refused(runner.invoke(app, arguments), "an input of this run")
    assert snapshot(model) == before


def test_evaluate_never_replaces_its_data_file(model, data, no_work):
    task_file = data / "sts" / "stsb-en-test.tsv"
    text = task_file.read_text()
    arguments = ["evaluate", str(model), "--data", str(data), "--json", str(task_file)]
    assert_refused(runner.invoke(app, arguments), "an input of this run")
    assert task_file.read_text() == text


def test_card_never_replaces_its_speed_corpus_or_the_evaluation_it_shows(model, no_work):
    corpus = model.parent / "corpus.txt"
    corpus.write_text("the cat sat\n")
    (model / "evaluation.json").write_text('{"results": {}}\n')
    for target, extra in ((corpus, ["--speed-corpus", str(corpus)]), (model / "evaluation.json", [])):
        result = runner.invoke(app, ["card", str(model), "--output", str(target), *extra])
        assert_refused(result, "an input of this run")
    assert corpus.read_text() == "the cat sat\n"
    assert (model / "evaluation.json").read_text() == '{"results": {}}\n'


def test_a_folder_where_a_file_is_expected_is_refused_before_the_work(model, data, tmp_path, no_work):
    for arguments in file_output_commands(model, data, tmp_path):
        assert_refused(runner.invoke(app, arguments), "is a folder")


def test_a_file_output_under_a_file_is_refused_before_the_work(model, data, tmp_path, no_work):
    (tmp_path / "notes.txt").write_text("mine")
    for arguments in file_output_commands(model, data, tmp_path / "notes.txt" / "out.json"):
        assert_refused(runner.invoke(app, arguments), "is not a folder")
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_an_unwritable_folder_is_refused_before_the_work(model, data, tmp_path, monkeypatch, no_work):
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    # root may write anywhere: the folder is made unwritable for the check the commands run
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != locked and real_access(path, mode))
    for arguments in file_output_commands(model, data, locked / "sub" / "out.json"):
        assert_refused(runner.invoke(app, arguments), f"the folder {locked} is not writable")
    assert_refused(runner.invoke(app, ["compress", str(model), "-o", str(locked / "small")]), "is not writable")
    assert list(locked.iterdir()) == []


def test_evaluate_may_write_evaluation_json_next_to_the_model_and_create_folders(model, data, tmp_path):
    before = snapshot(model)
    for target in (model / "evaluation.json", tmp_path / "new" / "sub" / "evaluation.json"):
        result = runner.invoke(app, ["evaluate", str(model), "--data", str(data), "--json", str(target)])
        assert result.exit_code == 0, result.output
        assert "stsb-en-test" in target.read_text()
    assert {name: digest for name, digest in snapshot(model).items() if name != "evaluation.json"} == before


def test_folder_outputs_refuse_devices_and_the_inside_of_an_input_model(model, tmp_path, monkeypatch):
    device = null_device(tmp_path / "device")
    monkeypatch.setattr(save_load, "load_model", lambda *a, **k: pytest.fail("compress loaded a model"))
    before = snapshot(model)
    cases = [
        (device, "is a character device, not a folder"),
        (model / "1_Normalize", "an input of this run"),  # replacing a module folder would break the input
        (model, "an input of this run"),
    ]
    for output, fragment in cases:
        assert_refused(runner.invoke(app, ["compress", str(model), "-o", str(output), "--force"]), fragment)
    assert stat.S_ISCHR(device.stat().st_mode)
    assert snapshot(model) == before


def test_compress_never_replaces_its_frequencies_file(model, tmp_path):
    frequencies = tmp_path / "words"
    frequencies.mkdir()
    (frequencies / "counts.tsv").write_text("the\t3\n")
    arguments = ["compress", str(model), "-o", str(frequencies), "-k", "2", "--frequencies"]
    result = runner.invoke(app, [*arguments, str(frequencies / "counts.tsv"), "--force"])
    assert_refused(result, "an input of this run")
    assert (frequencies / "counts.tsv").read_text() == "the\t3\n"


def test_the_checks_are_one_function_per_kind_of_output(tmp_path):
    (tmp_path / "input.txt").write_text("read me")
    with pytest.raises(UnsafeDestinationError, match="an input of this run"):
        check_file_destination(tmp_path / "input.txt", inputs=[tmp_path / "input.txt"])
    os.link(tmp_path / "input.txt", tmp_path / "alias.txt")  # the same file under another name
    with pytest.raises(UnsafeDestinationError, match="an input of this run"):
        check_file_destination(tmp_path / "alias.txt", inputs=[tmp_path / "input.txt"])
    (tmp_path / "link.json").symlink_to(tmp_path / "input.txt")
    with pytest.raises(UnsafeDestinationError, match="symbolic link"):
        check_file_destination(tmp_path / "link.json")
    with pytest.raises(UnsafeDestinationError, match="is inside"):
        check_destination(tmp_path / "teacher" / "out", inputs=[tmp_path / "teacher"])
    assert check_file_destination(tmp_path / "new" / "out.json") == (tmp_path / "new" / "out.json").resolve()


def test_build_refuses_an_output_inside_its_evaluation_data_before_any_work(data, tmp_path, monkeypatch):
    import st_static.pipeline.publish as publish

    monkeypatch.setattr(publish, "run_pipeline", lambda *a, **k: pytest.fail("the build started"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat\n")
    arguments = ["build", "--teacher", "x/y", "--corpus", str(corpus), "--eval-data", str(data)]
    for out in (data / "model", data / "sts"):
        result = runner.invoke(app, [*arguments, "--out", str(out), "--force"])
        assert result.exit_code == 1, result.output
        assert result.output.strip().splitlines()[-1].startswith("error:") and "an input of this run" in result.output
    assert [path.name for path in data.iterdir()] == ["sts"]
    null_device(tmp_path / "device")
    result = runner.invoke(app, [*arguments, "--out", str(tmp_path / "device")])
    assert "is a character device, not a folder" in result.output.strip().splitlines()[-1]


# ------------------------------------------------------------------------------- system folders (issue 46)
@pytest.mark.parametrize("folder", ["/etc", "/usr", "/var", "/opt", "/usr/local", "~/.cache", "~/.config", "prefix"])
def test_force_never_makes_a_system_folder_an_output(tmp_path, monkeypatch, folder):
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    (home / ".config").mkdir()
    (home / ".cache" / "some-program").write_text("kept")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    import sys

    destination = sys.prefix if folder == "prefix" else folder
    if not Path(destination).expanduser().exists():
        pytest.skip(f"{destination} is not on this system")
    with pytest.raises(UnsafeDestinationError, match="a folder of the system or of other programs"):
        check_destination(destination, force=True)  # the check only: nothing is written even on failure


def test_force_never_makes_an_ancestor_of_home_or_of_an_input_an_output(tmp_path, monkeypatch):
    home = tmp_path / "users" / "me"
    home.mkdir(parents=True)
    corpus = tmp_path / "data" / "texts" / "corpus.txt"
    corpus.parent.mkdir(parents=True)
    corpus.write_text("a line\n")
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(UnsafeDestinationError, match="holds the current folder or the home folder"):
        check_destination(tmp_path / "users", force=True)
    for ancestor in (corpus.parent, tmp_path / "data"):
        with pytest.raises(UnsafeDestinationError, match="an input of this run"):
            check_destination(ancestor, force=True, inputs=[corpus])
    assert check_destination(tmp_path / "new", force=True) == (tmp_path / "new").resolve()
