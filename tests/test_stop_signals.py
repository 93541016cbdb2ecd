"""A command stopped by SIGTERM or Ctrl-C (issue 38): one line saying so (and, for a build, that a rerun resumes),
exit code 128 + the signal number, and nothing half-written left behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

import st_static.cli.evaluate as evaluate_command
import st_static.pipeline.publish as publish
from st_static.cli import app
from st_static.files import LOCK_FILE_NAME
from st_static.signals import Terminated

from .teachers import TINY_CORPUS, make_tiny_teacher

REPO_ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def interrupt(exception: BaseException):
    def raising(*args, **kwargs):
        raise exception

    return raising


def test_ctrl_c_is_one_line_and_exit_code_130(word_model, tmp_path, monkeypatch):
    word_model.save_pretrained(str(tmp_path / "model"))
    (tmp_path / "data" / "sts").mkdir(parents=True)
    (tmp_path / "data" / "sts" / "stsb-en-test.tsv").write_text("sentence1\tsentence2\tscore\nthe cat\tcat\t3.0\n")
    monkeypatch.setattr(evaluate_command, "load_any_model", interrupt(KeyboardInterrupt()))
    result = runner.invoke(app, ["evaluate", str(tmp_path / "model"), "--data", str(tmp_path / "data")])
    assert result.exit_code == 130
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: stopped by Ctrl-C (SIGINT); nothing half-written"), lines


def test_a_stopped_build_says_a_rerun_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(publish, "build", interrupt(Terminated(signal.SIGTERM)))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat\n")
    result = runner.invoke(app, ["build", "--teacher", "x/y", "--corpus", str(corpus), "--out", str(tmp_path / "m")])
    assert result.exit_code == 143
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("error: stopped by SIGTERM; nothing was published; run the same command again to resume")


def test_the_sigterm_handler_is_installed_by_the_command_line_only():
    command = "import signal, st_static, st_static.cli; print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run([sys.executable, "-c", command], env=env, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "True"


def test_sigterm_stops_a_running_build_cleanly(tmp_path):
    teacher = make_tiny_teacher(tmp_path / "teacher")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n")
    out = tmp_path / "out"
    arguments = ["build", "--teacher", str(teacher), "--corpus", str(corpus), "--out", str(out), "--dim", "8"]
    arguments += ["--min-sentences", "1", "--steps", "12", "--batch-size", "4", "--validation-size", "8"]
    arguments += ["--eval-steps", "4", "--pca-sample-size", "100"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "st_static.cli", *arguments],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    work = tmp_path / "out.work"
    deadline = time.monotonic() + 300
    # stop it in the middle: the first stage is finished, the later ones are not
    while not any(re.fullmatch(r"extraction-[0-9a-f]+", path.name) for path in work.glob("extraction-*")):
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the extraction stage never finished"
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: stopped by SIGTERM; nothing was published; run the same command again to resume")
    assert "Traceback" not in stderr
    assert not out.exists()  # nothing published, nothing half-written next to it
    assert not [path.name for path in tmp_path.iterdir() if path.name.startswith(".out")]
    assert not (work / (LOCK_FILE_NAME + ".owner")).exists()  # the lock was released
    assert not [path.name for path in work.iterdir() if ".tmp-" in path.name]
    assert any(re.fullmatch(r"extraction-[0-9a-f]+", path.name) for path in work.iterdir())  # what a rerun resumes
