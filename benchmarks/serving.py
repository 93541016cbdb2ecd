"""Serving speed of a static model next to its peers: throughput, one-query latency, peak memory; a process per row.

    python -m benchmarks.serving MODEL_DIR [--corpus ../shared/data/corpus/en.txt] [--sentences 20000] [--rounds 2]
        [--potion DIR] [--long-text-mib 50] [--output benchmarks/results/DATE-serving.md] [--profile FILE]

Rows (each measured in a fresh process, so that its peak RSS is its own):
* ``st_static.encode`` (the fast path) of MODEL_DIR loaded with ``st_static.load_model``: the compiled loop (the
  ``fast`` extra, numba), and today's Python look-ups (the loop switched off);
* rows only: the compiled loop's sums and means with the tokenization done before the clock starts (the limit);
* ``SentenceTransformer.encode`` of the same model, loaded with ``st_static.load_model`` (st-static's module) and
  with a bare ``SentenceTransformer`` in a process without st-static (sentence-transformers' ``StaticEmbedding``);
* the raw ``tokenizers`` ``encode_batch`` / ``encode_batch_fast`` of the model's ``tokenizer.json`` (no vectors);
* model2vec ``StaticModel.encode`` of potion-base-8M (``--potion``: what ``../shared/tools/fetch-teachers.sh DEST
  potion8m`` writes; ``--model2vec-distill``: also its own distill of all-MiniLM-L6-v2, pca_dims=256), and of
  MODEL_DIR as saved (no arguments: the torch-free way to serve our models);
* WordLlama l2_supercat 256.
(The worker also runs ``fast-bare``, ``st_static.encode`` after a plain ``SentenceTransformer`` load, for
``benchmarks.one_query``.)
The peers run in their venvs under ``--cache`` (``benchmarks.common.ensure_venv``) when made, else in this
interpreter when it has the package, else in a new venv.
Throughput: sentences/s on the first ``--sentences`` corpus lines in batches of ``--batch-size``, best of
``--repeats`` after a warm-up batch, and its ratio to model2vec's potion-base-8M in the same round. Latency: one
short query, ``--calls`` calls after 50 warm-up calls, p50/p99.
Rows alternate over ``--rounds`` rounds; each figure is the best round. Vectors: every row that embeds MODEL_DIR is
compared with ``SentenceTransformer.encode`` (st-static's module) on the corpus lines plus adversarial texts.
Long text: the peak memory of embedding one ``--long-text-mib`` MiB string through the first four rows.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# The worker side runs in the peers' venvs too: no st-static (nor torch) at import, only the standard library.
from benchmarks.common import CACHE, PEER_ENVS, REPO, ensure_venv, load_average, log, rss_mib

SHORT_QUERY = "The quick brown fox jumps over the lazy dog."
LONG_TEXT_ROWS = ("fast", "fast-python", "st", "st-bare")
WARM_UP_CALLS = 50
ADVERSARIAL = [
    "", " ", "!!! ??? ...", "hello😀world", "\x00\x01 control chars", "Mixed script: hello мир 世界 こんにちは",
    "THE CAT, the Cat; tHe cAt!", "tokeniser tokenisers Tokenisation", "naïve café résumé e\u0301", "a" * 500,
    "word " * 20000, "don't won't it's 1990s 12,345.67", "\u200bzero\u200bwidth \ufeffbom",
]  # fmt: skip


# ---------------------------------------------------------------------------------------------- worker side
def rows_only(path: str):
    """``(encode, encode_one)`` of the rows-only row: the compiled loop's sums and means over the rows of the texts
    given to ``encode.prepare`` (tokenised then, before the clock starts; other texts are tokenised on the call)."""
    import st_static
    from st_static.model.compiled_rows import load_kernels

    kernels = load_kernels(required=True)
    module = st_static.load_model(path)[0]
    table = module.numpy_table()
    params = np.zeros(kernels.PARAMS, dtype=np.int64)  # what the sums and means read: the L2-normalised means
    params[[kernels.P_DROPPED, kernels.P_WORDS_END, kernels.P_NORMALIZE]] = module.num_words, module.fallback_start, 1
    prepared = [None, None]

    def tokenize(texts):
        rows, offsets = module.word_rows.rows(texts)
        return rows, np.append(offsets, len(rows))

    def encode(texts):
        rows, offsets = prepared[1] if prepared[0] is texts else tokenize(texts)
        output = np.empty((len(texts), table.shape[1]), dtype=np.float32)
        kernels.rows_parallel(rows, offsets, output, table, params)
        return output

    encode.prepare = lambda texts: prepared.__setitem__(slice(None), [texts, tokenize(texts)])
    return encode, (lambda text: encode([text]))


def load_row(kind: str, path: str, batch_size: int):
    """``(encode(texts) -> array or None, encode_one(text))`` for a row."""
    if kind == "rows-only":
        return rows_only(path)
    if kind in ("fast", "fast-python", "fast-bare", "st"):
        import st_static
        from st_static.model import compiled_rows

        if kind == "fast-bare":  # the README's path: a plain SentenceTransformer load, then st_static.encode
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(path, device="cpu")
        else:
            model = st_static.load_model(path)
        if kind == "fast":
            compiled_rows.load_kernels(required=True)  # the compiled loop's row: numba or an error
        compiled_rows.ENABLED = kind != "fast-python"
        if kind in ("fast", "fast-python", "fast-bare"):
            return (lambda texts: st_static.encode(model, texts, batch_size=batch_size)), (
                lambda text: st_static.encode(model, [text])
            )
        return (lambda texts: model.encode(texts, batch_size=batch_size)), (lambda text: model.encode([text]))
    if kind == "st-bare":
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(path, device="cpu")
        return (lambda texts: model.encode(texts, batch_size=batch_size)), (lambda text: model.encode([text]))
    if kind in ("tokenizer", "tokenizer-fast"):
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
        call = tokenizer.encode_batch if kind == "tokenizer" else tokenizer.encode_batch_fast

        def tokenize(texts):
            for start in range(0, len(texts), batch_size):
                call(texts[start : start + batch_size], add_special_tokens=False)

        return tokenize, (lambda text: call([text], add_special_tokens=False))
    if kind == "model2vec":
        from model2vec import StaticModel

        model = StaticModel.from_pretrained(path)
        return (lambda texts: model.encode(texts, batch_size=batch_size)), (lambda text: model.encode([text]))
    if kind == "wordllama":
        import wordllama
        from wordllama import WordLlama

        model = WordLlama.load(config=path, dim=256, cache_dir=Path(wordllama.__file__).parent, disable_download=True)
        return (lambda texts: model.embed(texts, norm=True, batch_size=batch_size)), (
            lambda text: model.embed([text], norm=True)
        )
    raise ValueError(f"unknown row kind {kind!r}")


def long_text_worker(spec: dict) -> None:
    """Peak memory and time of embedding one ``long_text_mib`` MiB text made of corpus lines."""
    with open(spec["corpus"], encoding="utf-8") as handle:
        lines = [line.strip() for _, line in zip(range(spec["sentences"]), handle, strict=False)]
    block = " ".join(lines)
    text = (block + " ") * (spec["long_text_mib"] * 2**20 // (len(block) + 1) + 1)
    text = text[: spec["long_text_mib"] * 2**20]
    encode, _ = load_row(spec["kind"], spec["path"], spec["batch_size"])
    encode(lines[:100])
    baseline = rss_mib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    start = time.perf_counter()
    vector = np.asarray(encode([text]), dtype=np.float32)
    seconds = time.perf_counter() - start
    metrics = {
        "peak_delta_mib": rss_mib("VmHWM") - baseline,
        "seconds": seconds,
        "finite": bool(np.isfinite(vector).all()),
    }
    Path(spec["output"]).write_text(json.dumps(metrics))


def worker(spec_file: str) -> None:
    spec = json.loads(Path(spec_file).read_text())
    if spec.get("long_text_mib"):
        long_text_worker(spec)
        return
    with open(spec["corpus"], encoding="utf-8") as handle:
        corpus = [line.strip() for _, line in zip(range(spec["sentences"]), handle, strict=False)]
    started = time.perf_counter()
    encode, encode_one = load_row(spec["kind"], spec["path"], spec["batch_size"])
    load_seconds = time.perf_counter() - started
    started = time.perf_counter()
    encode_one(SHORT_QUERY)  # the first call: whatever a path builds on first use (a bare load's look-ups) is here
    first_call_seconds = time.perf_counter() - started
    encode(corpus[: spec["batch_size"]])
    if hasattr(encode, "prepare"):  # rows only: the tokenization before the clock starts
        encode.prepare(corpus)
    timings = []
    for _ in range(spec["repeats"]):
        gc.collect()
        start = time.perf_counter()
        encode(corpus)
        timings.append(time.perf_counter() - start)
    for _ in range(WARM_UP_CALLS):
        encode_one(SHORT_QUERY)
    calls = []
    for _ in range(spec["calls"]):
        start = time.perf_counter()
        encode_one(SHORT_QUERY)
        calls.append(time.perf_counter() - start)
    p50, p99 = np.percentile(np.array(calls) * 1000, [50, 99])
    if spec.get("embeddings"):
        np.save(spec["embeddings"], np.asarray(encode(corpus + ADVERSARIAL), dtype=np.float32))
    metrics = {
        "sentences_per_second": len(corpus) / min(timings),
        "p50_ms": float(p50),
        "p99_ms": float(p99),
        "load_seconds": load_seconds,
        "first_call_ms": first_call_seconds * 1000,
        "peak_rss_mib": rss_mib("VmHWM"),
        "torch_imported": "torch" in sys.modules,
        "st_static_imported": "st_static" in sys.modules,
    }
    Path(spec["output"]).write_text(json.dumps(metrics))


# ---------------------------------------------------------------------------------------------- driver side
def relative(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (no machine paths in results files)."""
    resolved = path.resolve()
    return str(resolved.relative_to(REPO)) if resolved.is_relative_to(REPO) else path.name


def run_worker(python: str, spec_file: Path, st_static: bool) -> subprocess.CompletedProcess:
    """Run this module's worker on ``spec_file`` in a fresh process of ``python``; st-static importable or not."""
    pythonpath = str(REPO) if st_static else ""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": pythonpath}
    # -m from the repository root: the worker imports benchmarks.common (standard library only).
    command = [python, "-m", "benchmarks.serving", "--worker", str(spec_file)]
    return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)


def run_row(row: dict, args: argparse.Namespace, work: Path, name: str) -> dict:
    spec = {"kind": row["kind"], "path": row["path"], "corpus": str(args.corpus), "sentences": args.sentences,
            "batch_size": args.batch_size, "repeats": args.repeats, "calls": args.calls,
            "output": str(work / f"{name}.json"),
            "embeddings": str(work / f"{name}.npy") if row.get("compare") else None}  # fmt: skip
    (work / f"{name}.spec.json").write_text(json.dumps(spec))
    load_before = load_average()
    result = run_worker(row["python"], work / f"{name}.spec.json", bool(row.get("st_static")))
    if result.returncode != 0:
        raise SystemExit(f"error: row {row['label']} failed:\n{result.stderr[-3000:]}")
    metrics = json.loads(Path(spec["output"]).read_text())
    metrics["load_average"] = f"{load_before} -> {load_average()}"
    return metrics


def run_long_text(row: dict, args: argparse.Namespace, work: Path, name: str) -> dict:
    spec = {"kind": row["kind"], "path": row["path"], "corpus": str(args.corpus), "sentences": 2000,
            "batch_size": args.batch_size, "long_text_mib": args.long_text_mib,
            "output": str(work / f"{name}.json")}  # fmt: skip
    (work / f"{name}.spec.json").write_text(json.dumps(spec))
    log(f"long text: {row['label']} ...")
    result = run_worker(row["python"], work / f"{name}.spec.json", st_static=True)
    if result.returncode != 0:
        raise SystemExit(f"error: long text on {row['label']} failed:\n{result.stderr[-3000:]}")
    return json.loads(Path(spec["output"]).read_text())


def peer_python(cache: Path, name: str, module: str) -> str:
    """The interpreter of a peer's rows: its own venv when made, this one when it has ``module``, else a new venv."""
    import importlib.util

    python, ready = cache / "bench-envs" / name / "bin" / "python", cache / "bench-envs" / name / ".st-static-ready"
    if python.exists() and ready.exists() and ready.read_text() == " ".join(PEER_ENVS[name]):
        return str(python)
    return sys.executable if importlib.util.find_spec(module) is not None else str(ensure_venv(cache, name))


def build_rows(args: argparse.Namespace) -> list[dict]:
    model = str(args.model)
    main = sys.executable
    model2vec_python = peer_python(args.cache, "model2vec", "model2vec")
    wordllama_python = peer_python(args.cache, "wordllama", "wordllama")
    rows = [
        {"key": "fast", "label": "`st_static.encode`, compiled loop (numba)", "kind": "fast", "path": model,
         "python": main, "st_static": True, "compare": True},
        {"key": "fast-python", "label": "`st_static.encode`, Python look-ups (before the compiled loop)",
         "kind": "fast-python", "path": model, "python": main, "st_static": True, "compare": True},
        {"key": "rows-only", "label": "rows only: the compiled loop, tokenization done before (the limit)",
         "kind": "rows-only", "path": model, "python": main, "st_static": True, "compare": True},
        {"key": "st", "label": "`SentenceTransformer.encode`, `st_static.load_model`", "kind": "st", "path": model,
         "python": main, "st_static": True, "compare": True},
        {"key": "st-bare", "label": "`SentenceTransformer.encode`, bare load (no st-static)", "kind": "st-bare",
         "path": model, "python": main, "compare": True},
        {"key": "tokenizer", "label": "raw `tokenizers` `encode_batch` of our tokenizer.json", "kind": "tokenizer",
         "path": model, "python": main},
        {"key": "tokenizer-fast", "label": "raw `tokenizers` `encode_batch_fast` of our tokenizer.json",
         "kind": "tokenizer-fast", "path": model, "python": main},
        {"key": "potion", "label": "Model2Vec `StaticModel.encode`, potion-base-8M", "kind": "model2vec",
         "path": str(args.potion), "python": model2vec_python},
        {"key": "model2vec-ours", "label": "model2vec `StaticModel` loading *our* folder (no arguments; no torch)",
         "kind": "model2vec", "path": model, "python": model2vec_python, "compare": True},
        {"key": "wordllama", "label": "WordLlama l2_supercat 256", "kind": "wordllama", "path": "l2_supercat",
         "python": wordllama_python},
    ]  # fmt: skip
    if args.model2vec_distill:
        from benchmarks.common import DEFAULT_TEACHER, prepare_model2vec, resolve_teacher

        distilled = str(prepare_model2vec(args.cache, resolve_teacher(DEFAULT_TEACHER)))
        rows.insert(8, {"key": "model2vec-distill", "label": "Model2Vec `StaticModel.encode` (its MiniLM distill)",
                        "kind": "model2vec", "path": distilled, "python": model2vec_python})  # fmt: skip
    return rows


def best(rounds: list[dict]) -> dict:
    """The best round of a row: highest throughput, lowest latencies and memory."""
    merged = dict(rounds[0])
    merged["sentences_per_second"] = max(r["sentences_per_second"] for r in rounds)
    for key in ("p50_ms", "p99_ms", "peak_rss_mib", "first_call_ms", "load_seconds"):
        if all(key in r for r in rounds):
            merged[key] = min(r[key] for r in rounds)
    merged["load_average"] = "; ".join(r["load_average"] for r in rounds)
    return merged


def report(rows: list[dict], results: list[dict], diffs: dict[str, float], args: argparse.Namespace) -> str:
    by_key = {row["key"]: result for row, result in zip(rows, results, strict=True)}
    fast, st, m2v = by_key["fast"], by_key["st"], by_key["potion"]
    m2v_ours, wordllama, raw = by_key["model2vec-ours"], by_key["wordllama"], by_key["tokenizer"]
    lines = [
        f"# Serving speed ({datetime.date.today().isoformat()})",
        "",
        f"Command: `{args.command}`",
        "",
        f"Model: {args.model_label} ({args.model_description}). Machine: {args.machine}. Load average (1/5/15 min)",
        f"before the run {args.load_start}, after it {load_average()}; per row below. The machine is shared: absolute",
        "numbers move with the load, the ratios measured in the same run are the result.",
        "",
        f"Throughput: the first {args.sentences:,} lines of en.txt, batch {args.batch_size}, best of {args.repeats}"
        " after a warm-up batch;",
        f"one query: `{SHORT_QUERY}`, {args.calls} calls after {WARM_UP_CALLS} warm-up calls;",
        f"best of {args.rounds} rounds (rows alternate). Peak RSS: VmHWM of the row's process (imports, model,",
        f"{args.sentences:,} texts, the measurements). Max abs diff: against `SentenceTransformer.encode` of",
        "st-static's module on",
        f"the {args.sentences:,} lines plus {len(ADVERSARIAL)} adversarial texts (a 100,000-character one among them).",
        "Quality is not measured here: any table of the same size (a built model, or a `benchmarks.random_model`",
        "stand-in) gives the same speed, memory and agreement.",
        "",
        "| path | sentences/s | x Model2Vec potion-base-8M | one query p50 (ms) | p99 (ms) | peak RSS (MiB) |"
        " torch imported | max abs diff |",
        "| --- | ---: | ---: | ---: | ---: | ---: | :---: | ---: |",
    ]
    for row, result in zip(rows, results, strict=True):
        diff = diffs.get(row["label"])
        lines.append(
            f"| {row['label']} | {result['sentences_per_second']:,.0f} |"
            f" {result['sentences_per_second'] / m2v['sentences_per_second']:.2f} | {result['p50_ms']:.3f} | "
            f"{result['p99_ms']:.3f} | {result['peak_rss_mib']:,.0f} | {'yes' if result['torch_imported'] else 'no'} |"
            f" {'-' if diff is None else f'{diff:.1e}'} |"
        )
    checks = [
        ("throughput: compiled fast path / Model2Vec potion-base-8M",
         fast["sentences_per_second"] / m2v["sentences_per_second"], ">= 8"),
        ("throughput: compiled fast path / rows only (the limit)",
         fast["sentences_per_second"] / by_key["rows-only"]["sentences_per_second"], "(report)"),
        ("throughput: compiled fast path / Python look-ups",
         fast["sentences_per_second"] / by_key["fast-python"]["sentences_per_second"], "(report)"),
        ("one-query p50 (ms): compiled fast path", fast["p50_ms"], "<= 0.008"),
        ("one-query p50: fast path / WordLlama", fast["p50_ms"] / wordllama["p50_ms"], "<= 1"),
        ("one-query p50: `SentenceTransformer.encode` (st-static module) / Model2Vec", st["p50_ms"] / m2v["p50_ms"],
         "<= 2"),
        ("throughput: fast path / raw `encode_batch`", fast["sentences_per_second"] / raw["sentences_per_second"],
         ">= 0.9"),
        ("torch-free serving (model2vec on our folder): peak RSS / Model2Vec's own",
         m2v_ours["peak_rss_mib"] / m2v["peak_rss_mib"], "(report)"),
        ("torch-free serving: p50 / Model2Vec's own", m2v_ours["p50_ms"] / m2v["p50_ms"], "(report)"),
    ]  # fmt: skip
    lines += ["", "| ratio (same run) | value | target |", "| --- | ---: | :---: |"]
    lines += [f"| {name} | {ratio:.3f} | {target} |" for name, ratio, target in checks]
    lines += ["", "Load average per row (before -> after each round):", ""]
    lines += [f"- {row['label']}: {result['load_average']}" for row, result in zip(rows, results, strict=True)]
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", type=Path, help="an st-static model folder")
    parser.add_argument("--model-label", default=None, help="how the report names the model (default MODELS/<name>)")
    parser.add_argument("--corpus", type=Path, default=Path("../shared/data/corpus/en.txt"))
    parser.add_argument("--sentences", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument(
        "--potion",
        type=Path,
        default=CACHE / "teachers" / "potion-base-8M",
        help="potion-base-8M's folder (../shared/tools/fetch-teachers.sh DEST potion8m)",
    )
    parser.add_argument(
        "--model2vec-distill",
        action="store_true",
        help="also model2vec's own distillation of all-MiniLM-L6-v2 (distilled once, cached)",
    )
    parser.add_argument("--long-text-mib", type=int, default=50, help="also embed one text this long (0: skip)")
    parser.add_argument("--output", type=Path, default=None, help="write the table here too")
    parser.add_argument("--profile", type=Path, default=None, help="also write the profile breakdown here")
    args = parser.parse_args()
    if not (args.model / "tokenizer.json").is_file():
        raise SystemExit(f"error: {args.model}: not a model folder.")
    if not args.corpus.is_file():
        raise SystemExit(f"error: {args.corpus}: no such corpus file; pass --corpus.")
    if not (args.potion / "model.safetensors").is_file():
        raise SystemExit(f"error: {args.potion}: no potion-base-8M (../shared/tools/fetch-teachers.sh DEST potion8m).")
    args.corpus = args.corpus.resolve()
    args.model_label = args.model_label or f"MODELS/{args.model.name}"
    args.command = " ".join(
        ["python -m benchmarks.serving", args.model_label, f"--sentences {args.sentences}", f"--rounds {args.rounds}"]
        + [f"--{name} {relative(getattr(args, name))}" for name in ("output", "profile") if getattr(args, name)]
    )
    config = json.loads((args.model / "st_static_config.json").read_text(encoding="utf-8"))
    args.model_description = f"{config['num_words']:,} words x {config['embedding_dim']}"
    from benchmarks.common import machine_description

    args.machine = machine_description()
    args.load_start = load_average()
    if args.profile:
        profile = ["-m", "benchmarks.serving_profile", str(args.model.resolve()), "--corpus", str(args.corpus)]
        profile += ["--sentences", str(args.sentences), "--batch-size", str(args.batch_size)]
        profile += ["--output", str(args.profile.resolve()), "--model-label", args.model_label]
        subprocess.run([sys.executable, *profile], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        log(f"wrote {args.profile}")
    rows = build_rows(args)
    rounds: list[list[dict]] = [[] for _ in rows]
    with tempfile.TemporaryDirectory(prefix="st-static-serving-") as work_dir:
        work = Path(work_dir)
        vectors: dict[str, np.ndarray] = {}
        for round_index in range(args.rounds):
            for index, row in enumerate(rows):
                log(f"round {round_index + 1}: {row['label']} ...")
                rounds[index].append(run_row(row, args, work, f"row{index}"))
                if row.get("compare") and round_index == 0:
                    vectors[row["label"]] = np.load(work / f"row{index}.npy")
        reference = vectors[next(row["label"] for row in rows if row["key"] == "st")]  # st-static's module
        diffs = {label: float(np.abs(embeddings - reference).max()) for label, embeddings in vectors.items()}
        long_rows = enumerate(row for row in rows if row["key"] in LONG_TEXT_ROWS and args.long_text_mib)
        long_text = [(row["label"], run_long_text(row, args, work, f"long{index}")) for index, row in long_rows]
    results = [best(row_rounds) for row_rounds in rounds]
    text = report(rows, results, diffs, args)
    if long_text:
        text += (
            f"\nOne {args.long_text_mib} MiB text (corpus lines joined), peak RSS over the RSS before the call:\n\n"
            "| path | peak RSS increase (MiB) | seconds |\n| --- | ---: | ---: |\n"
        )
        text += "".join(f"| {label} | {m['peak_delta_mib']:,.0f} | {m['seconds']:.1f} |\n" for label, m in long_text)
    print(text)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
        log(f"wrote {args.output}")


if __name__ == "__main__":
    main()
