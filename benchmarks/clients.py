"""The README's client recipes run as written on a built model: what each prints, and the texts/s each gives.

For LangChain, Chroma, Haystack, LlamaIndex, SetFit and BERTopic (the README's "Use it with ..." section): embeds
``--texts`` corpus lines through the client at its default batch and with the README's tip (a larger batch, or
``st_static.encode``'s vectors handed to the client), and the eight texts without a known word of issue 45 (norm of
each vector, and what a search for one of them finds). ``sentence-transformers`` and ``st_static.encode``
rows give the ceiling. Run it with an environment that has the clients (``pip install "st-static[clients]"``, e.g.
the ``.venv-clients`` of ``scripts/test_clients.sh``)::

    .venv-clients/bin/python -m benchmarks.clients MODELS/swe-minilm-256 --corpus ../shared/data/corpus/en.txt \\
        --output benchmarks/results/DATE-clients.md

A client that is not installed gets a row saying so.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import command_line, default_corpus, load_average, log, machine, write_report

FALLBACK_TEXTS = ["", " ", "?", "!!!", "#", "🙂", "東京", "Привет"]
"""The texts without a known word of issue 45."""


def rate(embed: Callable[[list[str]], Any], texts: list[str]) -> float:
    """Texts per second of ``embed`` over ``texts`` (after one warm-up call on 64 of them)."""
    embed(texts[:64])
    start = time.perf_counter()
    embed(texts)
    return len(texts) / (time.perf_counter() - start)


def norms(vectors: Any) -> str:
    """The distinct norms of ``vectors`` (rounded to 4 places), e.g. ``1.0000``; NaN shows as ``nan``."""
    values = np.linalg.norm(np.asarray(vectors, dtype=np.float64).reshape(len(FALLBACK_TEXTS), -1), axis=1)
    return ", ".join(sorted({f"{value:.4f}" for value in values}))


def langchain(path: str, texts: list[str]) -> dict[str, str]:
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_huggingface import HuggingFaceEmbeddings

    default = HuggingFaceEmbeddings(model_name=path)
    tuned = HuggingFaceEmbeddings(model_name=path, encode_kwargs={"batch_size": 1024})
    store = InMemoryVectorStore.from_texts([*texts[:1000], *FALLBACK_TEXTS], tuned)
    hits = store.similarity_search_with_score("🙂", k=3)
    found = [(document.page_content, round(score, 3)) for document, score in hits]
    return {
        "recipe": 'HuggingFaceEmbeddings(model_name=PATH, encode_kwargs={"batch_size": 1024})',
        "default": f"{rate(default.embed_documents, texts):,.0f}",
        "tuned": f"{rate(tuned.embed_documents, texts):,.0f}",
        "norms": norms(tuned.embed_documents(FALLBACK_TEXTS)),
        "search": f"similarity_search('🙂', k=3): (text, score) {found}",
    }


def chroma(path: str, texts: list[str], model: Any) -> dict[str, str]:
    import chromadb
    from chromadb.config import Settings
    from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

    import st_static

    function = SentenceTransformerEmbeddingFunction(model_name=path, device="cpu")
    client = chromadb.EphemeralClient(Settings(anonymized_telemetry=False))
    collection = client.create_collection("docs", embedding_function=function, metadata={"hnsw:space": "cosine"})
    documents = [*texts[:1000], *FALLBACK_TEXTS]
    ids = [str(index) for index in range(len(documents))]
    collection.add(ids=ids, documents=documents, embeddings=st_static.encode(model, documents))
    result = collection.query(query_texts=["🙂"], n_results=3)
    hits = zip(result["documents"][0], result["distances"][0], strict=True)
    found = [(text, round(abs(distance), 3)) for text, distance in hits]
    return {
        "recipe": "SentenceTransformerEmbeddingFunction(model_name=PATH); add(..., embeddings=st_static.encode(...))",
        "default": f"{rate(function, texts):,.0f}",
        "tuned": f"{rate(lambda batch: st_static.encode(model, batch), texts):,.0f} (st_static.encode)",
        "norms": norms(function(FALLBACK_TEXTS)),
        "search": f"query('🙂', n_results=3): (text, distance) {found}",
    }


def haystack(path: str, texts: list[str]) -> dict[str, str]:
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack.utils import ComponentDevice
    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersDocumentEmbedder,
        SentenceTransformersTextEmbedder,
    )

    device = ComponentDevice.from_str("cpu")
    embedders = {
        size: SentenceTransformersDocumentEmbedder(model=path, device=device, batch_size=size) for size in (32, 1024)
    }
    text_embedder = SentenceTransformersTextEmbedder(model=path, device=device)
    for embedder in (*embedders.values(), text_embedder):
        embedder.warm_up()

    def embed(size: int) -> Callable[[list[str]], Any]:
        return lambda batch: embedders[size].run([Document(content=text) for text in batch])["documents"]

    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(embed(1024)([*texts[:1000], *FALLBACK_TEXTS]))
    query = text_embedder.run("🙂")["embedding"]
    hits = InMemoryEmbeddingRetriever(store).run(query_embedding=query, top_k=3)["documents"]
    found = [(hit.content, round(hit.score, 3)) for hit in hits]
    return {
        "recipe": "SentenceTransformersDocumentEmbedder(model=PATH, batch_size=1024)",
        "default": f"{rate(embed(32), texts):,.0f}",
        "tuned": f"{rate(embed(1024), texts):,.0f}",
        "norms": norms([document.embedding for document in embed(1024)(FALLBACK_TEXTS)]),
        "search": f"InMemoryEmbeddingRetriever('🙂', top_k=3): (text, score) {found}",
    }


def llama_index(path: str, texts: list[str]) -> dict[str, str]:
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    StaticEmbedding.max_seq_length = 2**31 - 1  # the README's recipe
    default = HuggingFaceEmbedding(model_name=path, device="cpu")
    tuned = HuggingFaceEmbedding(model_name=path, device="cpu", embed_batch_size=1024)
    query = tuned.get_query_embedding("🙂")
    candidates = [*texts[:2], "🙂", "東京"]
    scores = [round(float(tuned.similarity(query, vector)), 3) for vector in tuned.get_text_embedding_batch(candidates)]
    return {
        "recipe": "StaticEmbedding.max_seq_length = 2**31 - 1; HuggingFaceEmbedding(..., embed_batch_size=1024)",
        "default": f"{rate(default.get_text_embedding_batch, texts):,.0f}",
        "tuned": f"{rate(tuned.get_text_embedding_batch, texts):,.0f}",
        "norms": norms(tuned.get_text_embedding_batch(FALLBACK_TEXTS)),
        "search": f"similarity('🙂', text) for 2 corpus lines, '🙂', '東京': {scores}",
    }


def setfit(path: str, texts: list[str], scratch: Path) -> dict[str, str]:
    from datasets import Dataset
    from setfit import SetFitModel, Trainer, TrainingArguments

    model = SetFitModel.from_pretrained(path)
    train = Dataset.from_dict({"text": [*texts[:8]], "label": [0, 1] * 4})
    arguments = TrainingArguments(batch_size=8, max_steps=4, output_dir=str(scratch / "checkpoints"))
    Trainer(model=model, args=arguments, train_dataset=train).train()
    saved = scratch / "setfit"
    model.save_pretrained(str(saved))
    (saved / "config.json").unlink()  # the README's recipe
    again = SetFitModel.from_pretrained(str(saved))
    same = list(again.predict(texts[:100])) == list(model.predict(texts[:100]))
    return {
        "recipe": "save_pretrained; remove config.json; from_pretrained; encode(batch_size=1024)",
        "default": f"{rate(model.encode, texts):,.0f}",
        "tuned": f"{rate(lambda batch: model.encode(batch, batch_size=1024), texts):,.0f}",
        "norms": norms(model.encode(FALLBACK_TEXTS)),
        "search": f"reloaded model predicts as the trained one on 100 texts: {same}",
    }


def bertopic(texts: list[str], model: Any) -> dict[str, str]:
    from bertopic import BERTopic
    from bertopic.backend._utils import select_backend  # what BERTopic(embedding_model=model) embeds with
    from bertopic.dimensionality import BaseDimensionalityReduction
    from sklearn.cluster import KMeans

    import st_static

    backend = select_backend(model)
    documents = texts[:2000]
    topic_model = BERTopic(umap_model=BaseDimensionalityReduction(), hdbscan_model=KMeans(5, random_state=0))
    topics, _ = topic_model.fit_transform(documents, embeddings=st_static.encode(model, documents))
    return {
        "recipe": "BERTopic(embedding_model=model).fit_transform(texts, embeddings=st_static.encode(model, texts))",
        "default": f"{rate(backend.embed_documents, texts):,.0f}",
        "tuned": f"{rate(lambda batch: st_static.encode(model, batch), texts):,.0f} (st_static.encode)",
        "norms": norms(backend.embed_documents(FALLBACK_TEXTS)),
        "search": f"fit_transform of 2,000 lines: {len(set(topics))} topics",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a built model folder (or a Hub id in the HF cache)")
    parser.add_argument("--corpus", type=Path, default=None, help="one text per line (default: en.txt)")
    parser.add_argument("--texts", type=int, default=20_000, help="corpus lines embedded per timed run")
    parser.add_argument("--scratch", type=Path, default=Path("runs/clients"), help="SetFit's saved folders")
    parser.add_argument("--output", type=Path, default=None, help="also write the markdown table here")
    args = parser.parse_args()

    from sentence_transformers import SentenceTransformer

    import st_static

    corpus = args.corpus or default_corpus()
    with corpus.open(encoding="utf-8") as lines:
        texts = [line.rstrip("\n") for _, line in zip(range(args.texts), lines, strict=False)]
    model = SentenceTransformer(args.model, device="cpu")
    loaded = st_static.load_model(args.model)
    clients: dict[str, Callable[[], dict[str, str]]] = {
        "LangChain": lambda: langchain(args.model, texts),
        "Chroma": lambda: chroma(args.model, texts, model),
        "Haystack": lambda: haystack(args.model, texts),
        "LlamaIndex": lambda: llama_index(args.model, texts),
        "SetFit": lambda: setfit(args.model, texts, args.scratch),
        "BERTopic": lambda: bertopic(texts, model),
    }
    rows = {
        "sentence-transformers": {
            "recipe": "SentenceTransformer(PATH).encode(texts, batch_size=1024)",
            "default": f"{rate(model.encode, texts):,.0f}",
            "tuned": f"{rate(lambda batch: model.encode(batch, batch_size=1024), texts):,.0f}",
            "norms": norms(model.encode(FALLBACK_TEXTS)),
            "search": "",
        },
        "st_static.load_model": {
            "recipe": "st_static.load_model(PATH).encode(texts, batch_size=1024)",
            "default": "",
            "tuned": f"{rate(lambda batch: loaded.encode(batch, batch_size=1024), texts):,.0f}",
            "norms": norms(loaded.encode(FALLBACK_TEXTS)),
            "search": "",
        },
        "st_static.encode": {
            "recipe": "st_static.encode(model, texts)",
            "default": f"{rate(lambda batch: st_static.encode(model, batch), texts):,.0f}",
            "tuned": "",
            "norms": norms(st_static.encode(model, FALLBACK_TEXTS)),
            "search": "",
        },
    }
    for name, run in clients.items():
        log(f"{name} ...")
        try:
            rows[name] = run()
        except ImportError as error:
            rows[name] = {
                "recipe": f"not installed ({error.name})",
                "default": "",
                "tuned": "",
                "norms": "",
                "search": "",
            }
    description, _ = machine()
    lines = [
        f"# The README's client recipes on {args.model}",
        "",
        f"Command: `{command_line('benchmarks.clients')}`",
        "",
        f"Machine: {description}; load average at the end {load_average()}. {len(texts):,} lines of {corpus.name} per "
        "timed run (after a warm-up call). default: texts/s at the client's default batch; tuned: with the README's "
        "tip. norms: the distinct norms of the eight texts without a known word "
        f"({', '.join(repr(text) for text in FALLBACK_TEXTS)}).",
        "",
        "| client | recipe | default texts/s | tuned texts/s | norms of the 8 texts | what a query for '🙂' gave |",
        "| --- | --- | ---: | ---: | --- | --- |",
    ]
    for name, row in rows.items():
        cells = [row[key] for key in ("recipe", "default", "tuned", "norms", "search")]
        lines.append(f"| {name} | `{cells[0]}` | " + " | ".join(cells[1:]) + " |")
    off = [name for name, row in rows.items() if row["norms"] and row["norms"] != "1.0000"]
    lines += ["", f"Not all unit vectors: {', '.join(off)}" if off else "Every installed path gave 8 unit vectors."]
    write_report(args.output, lines)


if __name__ == "__main__":
    main()
