"""``st_static.embed_files`` / ``st-static embed`` (issue 50): files to vector shards equal to ``st_static.encode``,
every input format, every precision, resumable after a stop (SIGKILL mid-shard included), bad rows named."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers.util import quantize_embeddings
from typer.testing import CliRunner

import st_static
from st_static.cli import app
from st_static.collections.folder import EmbeddingsFolder
from st_static.collections.inputs import InputError
from st_static.collections.manifest import EmbeddingsFolderError

REPO_ROOT = Path(__file__).resolve().parents[1]
WORDS = ["the cat", "sat on the mat", "hello world", "token", "café 12", "don't", "", "the 1990s", "word word"]
runner = CliRunner()


def texts(count: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(1, 4))) for _ in range(count)]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_text_file_becomes_shards_equal_to_encode(word_model, tmp_path):
    lines = texts(250)
    corpus = write_lines(tmp_path / "corpus.txt", lines)
    result = st_static.embed_files(word_model, corpus, tmp_path / "out", shard_size=100, show_progress_bar=False)
    assert (result.rows, result.shards, result.new_rows) == (250, 3, 250)
    ids, vectors = EmbeddingsFolder(tmp_path / "out").load()
    np.testing.assert_array_equal(vectors, st_static.encode(word_model, lines))
    assert ids[:2] == [f"{corpus}:1", f"{corpus}:2"] and ids[-1] == f"{corpus}:250"
    assert sorted(path.name for path in (tmp_path / "out").glob("shard-*")) == [
        "shard-000000.parquet",
        "shard-000001.parquet",
        "shard-000002.parquet",
    ]


def test_several_files_a_glob_crlf_a_bom_and_a_last_line_without_its_end(word_model, tmp_path):
    (tmp_path / "a.txt").write_bytes("\ufeffthe cat\r\nsat on\r\n".encode())
    (tmp_path / "b.txt").write_bytes(b"hello world\n\nlast line")
    result = st_static.embed_files(
        word_model, [str(tmp_path / "*.txt")], tmp_path / "out", shard_size=3, show_progress_bar=False
    )
    assert result.rows == 5
    ids, vectors = EmbeddingsFolder(tmp_path / "out").load()
    expected = ["the cat", "sat on", "hello world", "", "last line"]
    np.testing.assert_array_equal(vectors, st_static.encode(word_model, expected))
    assert [name.rsplit("/", 1)[1] for name in ids] == ["a.txt:1", "a.txt:2", "b.txt:1", "b.txt:2", "b.txt:3"]


@pytest.mark.parametrize("precision", ["float16", "int8", "ubinary"])
def test_precisions_are_sentence_transformers_quantization(word_model, tmp_path, precision):
    lines = texts(120)
    corpus = write_lines(tmp_path / "corpus.txt", lines)
    out = tmp_path / "out"
    st_static.embed_files(
        word_model, corpus, out, precision=precision, output_format="npy", shard_size=50, show_progress_bar=False
    )
    folder = EmbeddingsFolder(out)
    stored = np.concatenate([shard.vectors for shard in folder.shards()])
    floats = st_static.encode(word_model, lines)
    if precision == "float16":
        np.testing.assert_array_equal(stored, floats.astype(np.float16))
    else:
        ranges = None
        if precision == "int8":  # a first shard of under 100 distinct rows: the range of unit vectors' components
            ranges = np.vstack((-np.ones(16), np.ones(16)))
            np.testing.assert_allclose(folder.manifest.ranges_array(), ranges, rtol=1e-6)
        np.testing.assert_array_equal(stored, quantize_embeddings(floats, precision, ranges=ranges))
    assert folder.load()[1].shape == (120, 16)


def test_truncate_dim_keeps_the_first_components(word_model, tmp_path):
    corpus = write_lines(tmp_path / "corpus.txt", texts(20))
    st_static.embed_files(word_model, corpus, tmp_path / "out", truncate_dim=5, show_progress_bar=False)
    _, vectors = EmbeddingsFolder(tmp_path / "out").load()
    np.testing.assert_array_equal(vectors, st_static.encode(word_model, texts(20))[:, :5])


def table_inputs(tmp_path: Path, lines: list[str]) -> dict[str, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps({"key": f"k{i}", "body": line}) + "\n" + ("\n" if i == 3 else "") for i, line in enumerate(lines)
        )
    )
    csv_path = tmp_path / "rows.csv"
    csv_path.write_text("key,body\n" + "".join(f'k{i},"{line}"\n' for i, line in enumerate(lines)))
    tsv = tmp_path / "rows.tsv"
    tsv.write_text("key\tbody\n" + "".join(f"k{i}\t{line}\n" for i, line in enumerate(lines)))
    parquet = tmp_path / "rows.parquet"
    table = pa.table({"key": [f"k{i}" for i in range(len(lines))], "body": lines})
    pq.write_table(table, parquet, row_group_size=7)
    return {"jsonl": jsonl, "csv": csv_path, "tsv": tsv, "parquet": parquet}


@pytest.mark.parametrize("kind", ["jsonl", "csv", "tsv", "parquet"])
def test_tables_read_their_column_and_id_column(word_model, tmp_path, kind):
    lines = texts(30)
    path = table_inputs(tmp_path, lines)[kind]
    out = tmp_path / "out"
    st_static.embed_files(word_model, path, out, column="body", id_column="key", shard_size=8, show_progress_bar=False)
    ids, vectors = EmbeddingsFolder(out).load()
    assert ids == [f"k{i}" for i in range(30)]
    np.testing.assert_array_equal(vectors, st_static.encode(word_model, lines))


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_a_missing_column_is_named(word_model, tmp_path, kind):
    path = table_inputs(tmp_path, texts(5))[kind]
    with pytest.raises(InputError, match=f"{path.name}.*no (column|key) 'text'"):
        st_static.embed_files(word_model, path, tmp_path / "out", show_progress_bar=False)


def test_a_non_utf8_line_is_named_and_the_shards_before_it_stay(word_model, tmp_path):
    lines = texts(30)
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes("".join(line + "\n" for line in lines[:25]).encode() + b"caf\xe9\n" + b"more\n")
    out = tmp_path / "out"
    with pytest.raises(InputError, match=r"corpus.txt:26: not UTF-8"):
        st_static.embed_files(word_model, corpus, out, shard_size=10, show_progress_bar=False)
    folder = EmbeddingsFolder(out)
    assert (folder.manifest.shards, folder.rows, folder.complete) == (2, 20, False)
    _, vectors = folder.load(require_complete=False)
    np.testing.assert_array_equal(vectors, st_static.encode(word_model, lines[:20]))


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.txt", b"", "empty.txt has no rows"),
        ("rows.jsonl", b'{"text": "a"}\n[1, 2]\n', r"rows.jsonl:2: expected a JSON object"),
        ("rows.jsonl", b'{"text": "a"}\n{"text": null}\n', r"rows.jsonl:2: the column 'text' holds null"),
        ("rows.jsonl", b'{"text": "a"}\n{"text": \n', r"rows.jsonl:2: not a JSON object"),
        ("rows.csv", b'text\n"a"\n"b,c\n', r"rows.csv:3: 1 fields|rows.csv:3: unreadable"),
        ("rows.tsv", b"text\ta\nx\ty\nx\ty\tz\n", r"rows.tsv:3: 3 fields where the header has 2"),
        ("header.csv", b"text\n", "header.csv has no rows"),
        ("binary.txt", b"abc\n\x00\x01\n", r"binary.txt:2: holds NUL bytes"),
    ],
)
def test_bad_inputs_name_the_file_and_line(word_model, tmp_path, name, content, message):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(InputError, match=message):
        st_static.embed_files(word_model, tmp_path / name, tmp_path / "out", show_progress_bar=False)


def test_standard_input(word_model, tmp_path):
    lines = texts(12)
    stream = io.BytesIO("".join(line + "\n" for line in lines).encode())
    st_static.embed_files(word_model, "-", tmp_path / "out", stdin=stream, show_progress_bar=False)
    ids, vectors = EmbeddingsFolder(tmp_path / "out").load()
    assert ids[0] == "-:1"
    np.testing.assert_array_equal(vectors, st_static.encode(word_model, lines))


def test_a_stopped_run_resumes_and_other_arguments_are_refused(word_model, tmp_path, monkeypatch):
    import st_static.collections.workers as workers

    lines = texts(100)
    corpus = write_lines(tmp_path / "corpus.txt", lines)
    out = tmp_path / "out"
    real_write = workers.write_shard

    def stop_at_third(folder, index, *args):
        if index == 2:
            raise KeyboardInterrupt
        real_write(folder, index, *args)

    monkeypatch.setattr(workers, "write_shard", stop_at_third)
    with pytest.raises(KeyboardInterrupt):
        st_static.embed_files(word_model, corpus, out, shard_size=20, show_progress_bar=False)
    monkeypatch.setattr(workers, "write_shard", real_write)
    assert EmbeddingsFolder(out).manifest.shards == 2
    (out / ".shard-000002.parquet.tmp-1-2").write_bytes(b"half a shard")  # what a SIGKILL mid-write leaves

    with pytest.raises(EmbeddingsFolderError, match="precision: 'float32' there, 'float16' now"):
        st_static.embed_files(word_model, corpus, out, shard_size=20, precision="float16", show_progress_bar=False)
    result = st_static.embed_files(word_model, corpus, out, shard_size=20, show_progress_bar=False)
    assert (result.rows, result.new_rows) == (100, 60)
    assert not list(out.glob(".shard-*"))
    np.testing.assert_array_equal(EmbeddingsFolder(out).load()[1], st_static.encode(word_model, lines))
    again = st_static.embed_files(word_model, corpus, out, shard_size=20, show_progress_bar=False)
    assert again.new_rows == 0

    with corpus.open("a") as handle:
        handle.write("one more line\n")
    with pytest.raises(EmbeddingsFolderError, match=r"corpus\.txt: its mtime, size changed"):
        st_static.embed_files(word_model, corpus, out, shard_size=20, show_progress_bar=False)


KILL_SCRIPT = """
import os, signal, sys
import st_static.collections.shards as shards
from st_static.files import atomic

real = atomic.write_file_atomically
def write(path, writer):
    if os.environ.get("KILL") and path.name == "shard-000003.npy":
        def half(temporary):
            temporary.write_bytes(b"half")
            os.kill(os.getpid(), signal.SIGKILL)
        return real(path, half)
    return real(path, writer)
shards.write_file_atomically = write
import st_static
model = st_static.load_model(sys.argv[1])
st_static.embed_files(model, sys.argv[2], sys.argv[3], shard_size=7, output_format="npy", show_progress_bar=False)
"""


def test_a_run_killed_mid_shard_resumes_to_the_same_vectors(word_model, tmp_path):
    st_static.save_model(word_model, tmp_path / "model")
    corpus = write_lines(tmp_path / "corpus.txt", texts(60))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1"}
    arguments = [sys.executable, "-c", KILL_SCRIPT, str(tmp_path / "model"), str(corpus)]
    killed = subprocess.run([*arguments, str(tmp_path / "out")], env={**env, "KILL": "1"}, timeout=120)
    assert killed.returncode == -signal.SIGKILL
    assert EmbeddingsFolder(tmp_path / "out").manifest.shards == 3 and list((tmp_path / "out").glob(".shard-*"))
    subprocess.run([*arguments, str(tmp_path / "out")], env=env, timeout=120, check=True)
    st_static.embed_files(
        word_model, corpus, tmp_path / "whole", shard_size=7, output_format="npy", show_progress_bar=False
    )
    resumed, whole = EmbeddingsFolder(tmp_path / "out").load(), EmbeddingsFolder(tmp_path / "whole").load()
    assert [name.rsplit("/", 1)[1] for name in resumed[0]] == [name.rsplit("/", 1)[1] for name in whole[0]]
    np.testing.assert_array_equal(resumed[1], whole[1])
    assert not list((tmp_path / "out").glob(".shard-*"))


def test_two_workers_give_the_one_process_vectors(word_model, tmp_path):
    st_static.save_model(word_model, tmp_path / "model")
    corpus = write_lines(tmp_path / "corpus.txt", texts(90))
    one = st_static.embed_files(tmp_path / "model", corpus, tmp_path / "one", shard_size=10, show_progress_bar=False)
    two = st_static.embed_files(
        tmp_path / "model", corpus, tmp_path / "two", shard_size=10, workers=2, show_progress_bar=False
    )
    assert one.shards == two.shards == 9
    first, second = EmbeddingsFolder(tmp_path / "one").load(), EmbeddingsFolder(tmp_path / "two").load()
    assert first[0] == second[0]
    np.testing.assert_array_equal(first[1], second[1])


def test_the_command_line(word_model, tmp_path):
    st_static.save_model(word_model, tmp_path / "model")
    corpus = write_lines(tmp_path / "corpus.txt", texts(40))
    arguments = ["embed", str(tmp_path / "model"), str(corpus), "--out", str(tmp_path / "out"), "--quiet"]
    result = runner.invoke(app, [*arguments, "--shard-size", "15", "--precision", "int8"])
    assert result.exit_code == 0, result.output
    assert "40 texts in 3 shards" in result.output
    assert "nothing to do" in runner.invoke(app, [*arguments, "--shard-size", "15", "--precision", "int8"]).output
    refused = runner.invoke(app, [*arguments, "--shard-size", "10", "--precision", "int8"])
    assert (
        refused.exit_code == 1
        and refused.output.startswith("error: ")
        and "shard_size: 15 there, 10 now" in refused.output
    )
    bad = runner.invoke(
        app, ["embed", str(tmp_path / "model"), str(corpus), "--out", str(tmp_path / "o2"), "--column", "x"]
    )
    assert bad.exit_code == 1 and "is a text file" in bad.output
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    foreign = runner.invoke(app, ["embed", str(tmp_path / "model"), str(corpus), "--out", str(tmp_path / "notes")])
    assert foreign.exit_code == 1 and "other files in it" in foreign.output


@pytest.mark.parametrize("kind", ["text", "jsonl", "csv", "tsv", "parquet"])
def test_reading_resumes_from_any_recorded_position(tmp_path, kind):
    from st_static.collections.inputs import resolve_inputs
    from st_static.collections.readers import RowReader

    lines = texts(40)
    if kind == "text":
        path, columns = write_lines(tmp_path / "rows.txt", lines), {}
    else:
        path, columns = table_inputs(tmp_path, lines)[kind], {"column": "body", "id_column": "key"}
    reader = RowReader(resolve_inputs([path, path]), **columns)  # two inputs: batches cross from one to the next
    whole = list(reader.batches(st_static.collections.inputs.Position(), 9))
    assert [len(batch) for batch in whole] == [9] * 8 + [8]
    for number, batch in enumerate(whole[:-1]):
        resumed = list(reader.batches(batch.end, 9))
        assert [row for part in resumed for row in part.texts] == [
            row for part in whole[number + 1 :] for row in part.texts
        ]
        assert resumed[0].lines.tolist() == whole[number + 1].lines.tolist()
        assert resumed[0].files.tolist() == whole[number + 1].files.tolist()


# Issue 66: the reliability probe of embed, neighbours and dedup.


def test_a_rerun_over_other_standard_input_is_refused(word_model, tmp_path):
    out = tmp_path / "out"
    first, second = texts(5, seed=1), texts(5, seed=2)

    def run(lines: list[str]) -> st_static.collections.EmbedResult:
        stream = io.BytesIO("".join(line + "\n" for line in lines).encode())
        return st_static.embed_files(word_model, "-", out, stdin=stream, show_progress_bar=False)

    assert run(first).new_rows == 5
    assert run(first).new_rows == 0  # the same texts: nothing to do
    with pytest.raises(EmbeddingsFolderError, match="standard input gives other texts than the run read"):
        run(second)
    np.testing.assert_array_equal(EmbeddingsFolder(out).load()[1], st_static.encode(word_model, first))


@pytest.mark.parametrize("lines", [["the cat"], ["hello world"] * 5, ["the cat", "the cat", "sat on the mat"]])
def test_int8_first_shards_too_small_to_calibrate_read_back(word_model, tmp_path, lines):
    corpus = write_lines(tmp_path / "corpus.txt", lines)
    st_static.embed_files(word_model, corpus, tmp_path / "out", precision="int8", show_progress_bar=False)
    _, vectors = EmbeddingsFolder(tmp_path / "out").load()
    floats = st_static.encode(word_model, lines)
    cosines = np.einsum("ij,ij->i", vectors, floats) / np.linalg.norm(vectors, axis=1)
    assert cosines.min() > 0.999


def test_int8_calibrates_on_a_first_shard_of_enough_distinct_rows(word_model, tmp_path):
    lines = texts(600)
    floats = st_static.encode(word_model, lines)
    assert len(np.unique(floats[:300], axis=0)) >= 100
    corpus = write_lines(tmp_path / "corpus.txt", lines)
    st_static.embed_files(
        word_model, corpus, tmp_path / "out", precision="int8", shard_size=300, show_progress_bar=False
    )
    folder = EmbeddingsFolder(tmp_path / "out")
    np.testing.assert_allclose(folder.manifest.ranges_array(), np.vstack((floats[:300].min(0), floats[:300].max(0))))
    vectors = folder.load()[1]
    cosines = np.einsum("ij,ij->i", vectors, floats) / np.maximum(np.linalg.norm(vectors, axis=1), 1e-12)
    texted = np.linalg.norm(floats, axis=1) > 0  # "" has the zero vector
    assert cosines[:300][texted[:300]].min() > 0.999  # later shards: a component past the range is clipped to it
    assert cosines[texted].min() > 0.95


def test_an_empty_range_reads_back_its_value():
    from st_static.collections.shards import dequantize, quantize

    ranges = np.array([[0.5, -1.0], [0.5, 1.0]], dtype=np.float32)
    stored = quantize(np.array([[0.5, 0.25]], dtype=np.float32), "int8", ranges)
    assert dequantize(stored, "int8", 2, ranges)[0, 0] == 0.5


@pytest.fixture
def alarm():
    """Fail a test that blocks (a pipe opened twice) instead of hanging the run."""

    def hung(*_):
        raise TimeoutError("blocked")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_a_fifo_is_read_once(word_model, tmp_path, alarm):
    import threading

    lines = texts(7)
    fifo = tmp_path / "texts.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with fifo.open("w", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in lines))

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    result = st_static.embed_files(word_model, fifo, tmp_path / "out", show_progress_bar=False)
    writer.join()
    assert result.rows == 7
    np.testing.assert_array_equal(EmbeddingsFolder(tmp_path / "out").load()[1], st_static.encode(word_model, lines))


def test_a_process_substitution_is_read_once(word_model, tmp_path, alarm):
    lines = texts(6)
    read, write = os.pipe()
    os.write(write, "".join(line + "\n" for line in lines).encode())
    os.close(write)
    try:
        result = st_static.embed_files(word_model, f"/dev/fd/{read}", tmp_path / "out", show_progress_bar=False)
    finally:
        os.close(read)
    assert result.rows == 6
    np.testing.assert_array_equal(EmbeddingsFolder(tmp_path / "out").load()[1], st_static.encode(word_model, lines))


def test_a_jsonl_line_nested_too_deep_is_named(word_model, tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"text": "a"}\n' + "[" * 200_000 + "]" * 200_000 + "\n")
    with pytest.raises(InputError, match=r"deep.jsonl:2: JSON nested too deep"):
        st_static.embed_files(word_model, path, tmp_path / "out", show_progress_bar=False)


def test_a_missing_id_column_names_its_option(word_model, tmp_path):
    path = table_inputs(tmp_path, texts(5))["jsonl"]
    with pytest.raises(InputError, match=r"no key 'id'.*choose one with --id-column"):
        st_static.embed_files(word_model, path, tmp_path / "out", column="body", id_column="id")


@pytest.mark.parametrize("other", [{"truncate_dim": 5}, {"precision": "int8"}])
def test_a_shard_copied_from_another_folder_is_refused(word_model, tmp_path, other):
    corpus = write_lines(tmp_path / "corpus.txt", texts(10))
    st_static.embed_files(word_model, corpus, tmp_path / "mine", output_format="npy", show_progress_bar=False)
    st_static.embed_files(word_model, corpus, tmp_path / "other", output_format="npy", show_progress_bar=False, **other)
    (tmp_path / "mine" / "shard-000000.npy").write_bytes((tmp_path / "other" / "shard-000000.npy").read_bytes())
    with pytest.raises(EmbeddingsFolderError, match=r"shard 0 holds .* \(copied in from another folder"):
        EmbeddingsFolder(tmp_path / "mine").load()


def test_an_input_without_rows_leaves_no_manifest_to_refuse_the_next_run(word_model, tmp_path):
    out = tmp_path / "out"
    (tmp_path / "empty.txt").write_bytes(b"")
    with pytest.raises(InputError, match=r"empty\.txt has no rows"):
        st_static.embed_files(word_model, tmp_path / "empty.txt", out, show_progress_bar=False)
    assert not out.exists()
    header = tmp_path / "header.csv"
    header.write_text("text\n")
    with pytest.raises(InputError, match=r"header\.csv has no rows"):
        st_static.embed_files(word_model, header, out, show_progress_bar=False)
    assert not (out / "manifest.json").exists()
    header.write_text("text\nthe cat\n")
    result = st_static.embed_files(word_model, header, out, precision="float16", show_progress_bar=False)
    assert result.rows == 1


def test_the_same_model_and_inputs_under_other_spellings_resume(word_model, tmp_path, monkeypatch):
    st_static.save_model(word_model, tmp_path / "tiny")
    write_lines(tmp_path / "corpus.txt", texts(10))
    monkeypatch.chdir(tmp_path)
    first = st_static.embed_files("tiny", "corpus.txt", "out", show_progress_bar=False)
    assert first.new_rows == 10
    assert st_static.embed_files("./tiny", str(tmp_path / "corpus.txt"), "out", show_progress_bar=False).new_rows == 0
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    again = st_static.embed_files(tmp_path / "tiny", "../corpus.txt", "../out", show_progress_bar=False)
    assert again.new_rows == 0
    assert EmbeddingsFolder(tmp_path / "out").load()[0][0] == "corpus.txt:1"  # the names of the run that made it


def test_workers_are_capped_to_the_shards(word_model, tmp_path, monkeypatch):
    import st_static.collections.job as job

    def no_pool(*_args, **_kwargs):
        raise AssertionError("a pool of workers for a three-line input")

    monkeypatch.setattr(job, "ShardPool", no_pool)
    corpus = write_lines(tmp_path / "corpus.txt", texts(3))
    assert st_static.embed_files(word_model, corpus, tmp_path / "out", workers=6, show_progress_bar=False).rows == 3
    assert job._usable_workers(6, 1000, 0, 100, "ray", "10.0.0.1:6379") == 6
    assert job._usable_workers(6, 1000, 900, 100, "ray", "10.0.0.1:6379") == 1


def test_the_speed_leaves_out_the_model_load(word_model, tmp_path, monkeypatch):
    import time

    import st_static.collections.job as job

    real = job.load_collection_model

    def slow(model):
        time.sleep(2)
        return real(model)

    monkeypatch.setattr(job, "load_collection_model", slow)
    corpus = write_lines(tmp_path / "corpus.txt", texts(3))
    assert st_static.embed_files(word_model, corpus, tmp_path / "out", show_progress_bar=False).seconds < 2
