"""One benchmark row, run in its own process (and, for peers with conflicting pins, its own venv).

    python bench_worker.py SPEC.json

SPEC: ``{"kind": "sentence-transformers" | "model2vec" | "wordllama" | "tokenlearn", "path": str,
"texts": JSON list file, "corpus": str, "sentences": int, "batch_size": int, "repeats": int, "time_budget": float,
"output": dir}``.
Writes ``embeddings.npy`` (the texts, in order) and ``metrics.json`` to ``output``. Needs only numpy, the
standard library and the row's own library (st_static is used only when importable, for its fast path).
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import numpy as np

TEACHER_EVALUATION_BATCH = 32
"""Batch size of a transformer row's evaluation texts (its speed is still measured at ``batch_size``)."""

SHORT_SENTENCE = "The quick brown fox jumps over the lazy dog."
LATENCY_CALLS = 300


def rss_kib(field: str) -> int:
    """A field of /proc/self/status in KiB (VmRSS: current resident set, VmHWM: its peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux: write 5 to /proc/self/clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def import_library(kind: str) -> None:
    """Import the row's library first, so that the memory baseline includes it."""
    modules = {
        "sentence-transformers": "sentence_transformers",
        "model2vec": "model2vec",
        "wordllama": "wordllama",
        "tokenlearn": "static_model",
    }
    __import__(modules[kind])


def load(kind: str, path: str, batch_size: int, prompt: str | None = None) -> tuple[Callable, Callable | None, dict]:
    """The row's ``encode(texts)`` (``prompt`` before every text) and, for st-static pipelines, the fast path; plus
    library versions."""
    if kind == "sentence-transformers":
        from sentence_transformers import SentenceTransformer

        modules_file = Path(path) / "modules.json"
        if modules_file.is_file() and '"st_static.' in modules_file.read_text(encoding="utf-8"):
            # st-static's own modules (an ensemble's BlockNormalize) load through st_static, not bare.
            from st_static import load_model

            model = load_model(path)
        else:
            model = SentenceTransformer(path, device="cpu")

        def encode(texts, size=batch_size):
            return model.encode(texts, prompt=prompt, batch_size=size, convert_to_numpy=True, show_progress_bar=False)

        fast = None
        try:
            import st_static
            from st_static.evaluation.encoders import is_static_pipeline

            if is_static_pipeline(model):

                def fast(texts):
                    return st_static.encode(model, texts, batch_size=batch_size)

        except ImportError:
            pass
        versions = {name: version(name) for name in ("sentence-transformers", "torch", "tokenizers")}
        return encode, fast, versions
    if kind == "model2vec":
        from model2vec import StaticModel

        model = StaticModel.from_pretrained(path)

        def encode(texts):
            return model.encode(texts, batch_size=batch_size, show_progress_bar=False)

        return encode, None, {"model2vec": version("model2vec"), "tokenizers": version("tokenizers")}
    if kind == "wordllama":
        import wordllama
        from wordllama import WordLlama

        # The package ships the weights and the tokenizer; pointing the cache at the package keeps it offline.
        model = WordLlama.load(config=path, dim=256, cache_dir=Path(wordllama.__file__).parent, disable_download=True)

        def encode(texts):
            return model.embed(texts, norm=True, batch_size=batch_size)

        return encode, None, {"wordllama": version("wordllama"), "tokenizers": version("tokenizers")}
    if kind == "tokenlearn":
        from static_model import get_embeddings  # tokenlearn-static-model: weights baked into the wheel

        def encode(texts):
            return np.asarray(get_embeddings(list(texts)), dtype=np.float32)

        return encode, None, {"tokenlearn-static-model": version("tokenlearn-static-model")}
    raise ValueError(f"unknown kind {kind!r}")


def throughput(encode: Callable, corpus: list[str], spec: dict) -> dict:
    """Sentences/s, best of ``repeats`` after a warm-up batch, on at most ``sentences`` corpus lines.

    A slow row (a transformer) gets fewer sentences: as many as fit ``time_budget`` seconds at the warm-up rate.
    """
    batch_size = spec["batch_size"]
    warm_up = corpus[:batch_size]
    start = time.perf_counter()
    encode(warm_up)
    rate = len(warm_up) / (time.perf_counter() - start)
    count = min(spec["sentences"], max(batch_size, int(rate * spec["time_budget"]) // batch_size * batch_size))
    texts = corpus[:count]
    timings = []
    for _ in range(spec["repeats"]):
        gc.collect()
        start = time.perf_counter()
        encode(texts)
        timings.append(time.perf_counter() - start)
    return {"sentences": count, "sentences_per_second": count / min(timings), "seconds": timings}


def latency(encode_one: Callable) -> dict:
    for _ in range(20):
        encode_one(SHORT_SENTENCE)
    timings = []
    for _ in range(LATENCY_CALLS):
        start = time.perf_counter()
        encode_one(SHORT_SENTENCE)
        timings.append(time.perf_counter() - start)
    p50, p99 = np.percentile(np.array(timings) * 1000, [50, 99])
    return {"p50_ms": float(p50), "p99_ms": float(p99), "calls": LATENCY_CALLS}


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    output = Path(spec["output"])
    output.mkdir(parents=True, exist_ok=True)
    texts = json.loads(Path(spec["texts"]).read_text(encoding="utf-8"))
    with open(spec["corpus"], encoding="utf-8") as handle:
        corpus = [line.strip() for _, line in zip(range(spec["sentences"]), handle, strict=False)]

    import_library(spec["kind"])
    baseline_kib = rss_kib("VmRSS")  # after importing the row's library, before loading the model
    peak_reset = reset_peak_rss()
    start = time.perf_counter()
    encode, fast, versions = load(spec["kind"], spec["path"], spec["batch_size"], spec.get("prompt"))
    load_seconds = time.perf_counter() - start
    loaded_kib = rss_kib("VmRSS")

    if spec["kind"] == "sentence-transformers" and fast is None:
        # A transformer teacher: the evaluation texts hold whole articles, and a batch of 1024 of them at the
        # teacher's full length needs tens of GB for attention (all-mpnet-base-v2 was OOM-killed at 22 GB).
        embeddings = np.asarray(encode(texts, TEACHER_EVALUATION_BATCH), dtype=np.float32)
    else:
        embeddings = np.asarray(encode(texts), dtype=np.float32)
    np.save(output / "embeddings.npy", embeddings)
    metrics = {
        "kind": spec["kind"],
        "load_seconds": load_seconds,
        "dim": int(embeddings.shape[1]),
        "versions": versions,
        "speed": throughput(encode, corpus, spec),
        "latency": latency(lambda text: encode([text])),
    }
    if fast is not None:
        np.testing.assert_allclose(fast(texts[:2000]), embeddings[:2000], atol=1e-5)
        metrics["fast_speed"] = throughput(fast, corpus, spec)
        metrics["fast_latency"] = latency(lambda text: fast([text]))
    peak_kib = rss_kib("VmHWM")
    metrics["memory"] = {
        "baseline_rss_mib": baseline_kib / 1024,
        "load_rss_delta_mib": (loaded_kib - baseline_kib) / 1024,
        "peak_rss_mib": peak_kib / 1024,
        "peak_rss_delta_mib": (peak_kib - baseline_kib) / 1024 if peak_reset else None,
    }
    (output / "metrics.json").write_text(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    main()
