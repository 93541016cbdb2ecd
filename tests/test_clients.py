"""The libraries people plug sentence-transformers models into, each used the way its documentation says (or with
the README's recipe where the library needs one), on a small saved model with fallback rows: every text, the ones
without a known word included, gets a finite vector and sensible search results.

Each test skips when its library is missing (``pip install "st-static[clients]"``; the ``clients`` extra is not part
of ``dev``: see pyproject.toml).
"""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

import st_static

from .conftest import FALLBACK_TEXTS
from .readme_blocks import REPO_ROOT, client_recipes, make_workspace

DOCUMENTS = ["the cat sat on the mat", "hello world", "東京", "?", "", "a token, a word"]


@pytest.fixture
def model_path(fallback_model, tmp_path) -> str:
    """The tiny word model with fallback rows, saved as st-static saves a built model."""
    return str(st_static.save_model(fallback_model, tmp_path / "model"))


def assert_finite_unit(vectors: object) -> None:
    array = np.asarray(vectors, dtype=np.float64)
    assert np.isfinite(array).all()
    np.testing.assert_allclose(np.linalg.norm(array, axis=-1), 1.0, atol=1e-4)


def test_langchain_huggingface_embeddings_and_in_memory_search(model_path):
    pytest.importorskip("langchain_huggingface")
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_huggingface import HuggingFaceEmbeddings

    embeddings = HuggingFaceEmbeddings(model_name=model_path, encode_kwargs={"batch_size": 1024})
    assert_finite_unit(embeddings.embed_documents(FALLBACK_TEXTS))
    assert_finite_unit([embeddings.embed_query(text) for text in FALLBACK_TEXTS])
    store = InMemoryVectorStore.from_texts(DOCUMENTS, embeddings)
    assert store.similarity_search("the cat", k=1)[0].page_content == "the cat sat on the mat"
    for query in FALLBACK_TEXTS:  # "🙂" raised "ValueError: NaN values found" before the fallback rows
        assert len(store.similarity_search(query, k=2)) == 2
    assert store.similarity_search("東京", k=1)[0].page_content == "東京"


def test_chroma_sentence_transformer_embedding_function(model_path):
    pytest.importorskip("chromadb")
    import chromadb
    from chromadb.config import Settings
    from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

    function = SentenceTransformerEmbeddingFunction(model_name=model_path, device="cpu")
    assert_finite_unit(function(FALLBACK_TEXTS))
    client = chromadb.EphemeralClient(Settings(anonymized_telemetry=False))
    collection = client.create_collection("docs", embedding_function=function, metadata={"hnsw:space": "cosine"})
    collection.add(ids=[str(index) for index in range(len(DOCUMENTS))], documents=DOCUMENTS)
    found = collection.query(query_texts=["the cat", "東京", "?", ""], n_results=1)
    assert [hit[0] for hit in found["documents"]] == ["the cat sat on the mat", "東京", "?", ""]
    distances = collection.query(query_texts=["🙂"], n_results=3)["distances"][0]
    assert all(math.isfinite(distance) for distance in distances)


def test_haystack_sentence_transformers_embedders_and_in_memory_retriever(model_path):
    pytest.importorskip("haystack_integrations.components.embedders.sentence_transformers")
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack.utils import ComponentDevice
    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersDocumentEmbedder,
        SentenceTransformersTextEmbedder,
    )

    device = ComponentDevice.from_str("cpu")
    document_embedder = SentenceTransformersDocumentEmbedder(model=model_path, device=device, batch_size=1024)
    text_embedder = SentenceTransformersTextEmbedder(model=model_path, device=device, batch_size=1024)
    document_embedder.warm_up()
    text_embedder.warm_up()
    documents = document_embedder.run([Document(content=text) for text in DOCUMENTS])["documents"]
    assert_finite_unit([document.embedding for document in documents])
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(documents)
    retriever = InMemoryEmbeddingRetriever(store)
    for query, expected in (("the cat", "the cat sat on the mat"), ("東京", "東京"), ("?", "?")):
        embedding = text_embedder.run(query)["embedding"]
        assert retriever.run(query_embedding=embedding, top_k=1)["documents"][0].content == expected
    for query in FALLBACK_TEXTS:
        embedding = text_embedder.run(query)["embedding"]
        assert_finite_unit(embedding)
        assert all(math.isfinite(hit.score) for hit in retriever.run(query_embedding=embedding)["documents"])


def test_llama_index_huggingface_embedding(model_path, monkeypatch):
    pytest.importorskip("llama_index.embeddings.huggingface")
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    with pytest.raises(ValueError, match="finite number"):  # LlamaIndex's own check of StaticEmbedding's inf
        HuggingFaceEmbedding(model_name=model_path, device="cpu")
    # The README's recipe: give sentence-transformers' StaticEmbedding a finite max_seq_length (it reads texts whole).
    monkeypatch.setattr(StaticEmbedding, "max_seq_length", 2**31 - 1)
    embed_model = HuggingFaceEmbedding(model_name=model_path, device="cpu", embed_batch_size=1024)
    assert_finite_unit(embed_model.get_text_embedding_batch(FALLBACK_TEXTS))
    assert_finite_unit([embed_model.get_query_embedding(text) for text in FALLBACK_TEXTS])
    query = embed_model.get_query_embedding("the cat")
    scores = [embed_model.similarity(query, embed_model.get_text_embedding(text)) for text in DOCUMENTS]
    assert DOCUMENTS[int(np.argmax(scores))] == "the cat sat on the mat"
    assert all(math.isfinite(score) for score in scores)


def test_setfit_trains_saves_reloads_and_predicts(model_path, tmp_path):
    pytest.importorskip("setfit")
    from datasets import Dataset
    from setfit import SetFitModel, Trainer, TrainingArguments

    model = SetFitModel.from_pretrained(model_path)
    train = Dataset.from_dict({"text": ["the cat sat", "the mat", "hello world", "a word"], "label": [0, 0, 1, 1]})
    arguments = TrainingArguments(batch_size=4, max_steps=2, output_dir=str(tmp_path / "checkpoints"))
    Trainer(model=model, args=arguments, train_dataset=train).train()
    texts = ["the cat", "hello", *FALLBACK_TEXTS]
    predictions = model.predict(texts)
    assert len(predictions) == len(texts)
    saved = tmp_path / "setfit"
    model.save_pretrained(str(saved))
    body = st_static.load_model(saved)  # SetFit's config.json over model2vec's: a warning, not a refusal
    assert_finite_unit(body.encode(FALLBACK_TEXTS))
    with pytest.raises(TypeError, match="absa"):  # SetFit 1.2 cannot read the config.json it writes itself
        SetFitModel.from_pretrained(str(saved))
    (saved / "config.json").unlink()  # the README's recipe: SetFit keeps its settings in config_setfit.json
    again = SetFitModel.from_pretrained(str(saved))
    assert list(again.predict(texts)) == list(predictions)
    assert_finite_unit(st_static.load_model(saved).encode(FALLBACK_TEXTS))


def test_bertopic_with_the_model_as_embedding_model(model_path):
    pytest.importorskip("bertopic")
    from bertopic import BERTopic
    from bertopic.dimensionality import BaseDimensionalityReduction
    from sklearn.cluster import KMeans

    documents = [*DOCUMENTS, *FALLBACK_TEXTS] * 3
    model = SentenceTransformer(model_path, device="cpu")
    topic_model = BERTopic(
        embedding_model=model, umap_model=BaseDimensionalityReduction(), hdbscan_model=KMeans(3, random_state=0)
    )
    topics, _ = topic_model.fit_transform(documents)
    assert len(topics) == len(documents)
    embeddings = st_static.encode(model, documents)  # the README's tip: the fast path's vectors, passed in
    assert_finite_unit(embeddings)
    fast = BERTopic(umap_model=BaseDimensionalityReduction(), hdbscan_model=KMeans(3, random_state=0))
    assert len(fast.fit_transform(documents, embeddings=embeddings)[0]) == len(documents)


def test_the_clients_extra_names_every_client():
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    extra = " ".join(pyproject["project"]["optional-dependencies"]["clients"])
    for package in ("langchain-huggingface", "chromadb", "sentence-transformers-haystack", "setfit", "bertopic"):
        assert package in extra
    assert "llama-index-embeddings-huggingface" in extra


def test_a_config_json_another_library_wrote_is_a_warning_not_a_refusal(model_path, caplog):
    import json
    import logging

    config = Path(model_path) / "config.json"
    written = json.loads(config.read_text(encoding="utf-8"))
    config.write_text(json.dumps({**written, "labels": None, "model_head": None}), encoding="utf-8")  # as SetFit
    with caplog.at_level(logging.WARNING):
        model = st_static.load_model(model_path)
    assert "keys model2vec never writes (labels, model_head)" in caplog.text
    config.write_text(json.dumps({**written, "normalize": False}), encoding="utf-8")  # model2vec's own key, wrong
    with pytest.raises(st_static.ModelFolderError, match="normalize"):
        st_static.load_model(model_path)
    config.unlink()
    st_static.save_model(model, model_path)  # a save in place writes model2vec's config again
    assert json.loads(config.read_text(encoding="utf-8")) == written


def test_a_loaded_model_has_a_finite_settable_max_seq_length(model_path):
    model = st_static.load_model(model_path)
    assert model.max_seq_length == 2**31 - 1
    model.max_seq_length = 512  # what LlamaIndex's max_length does; texts are still read whole
    assert model.max_seq_length == 512
    long_text = "the cat " * 2000
    np.testing.assert_allclose(model.encode(long_text), st_static.encode(model, long_text), atol=1e-6)
    assert math.isinf(SentenceTransformer(model_path, device="cpu").max_seq_length)  # a bare load: the README recipe


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


@pytest.mark.parametrize(("start", "recipe"), client_recipes(), ids=lambda block: block.needs or "start")
def test_readme_client_recipe_runs_as_written(start, recipe, tmp_path):
    """The README's recipe, after the block that starts its section, in its own process (recipes set class state)."""
    if not installed(recipe.needs):
        pytest.skip(f"{recipe.needs} is not installed (pip install 'st-static[clients]')")
    work = make_workspace(tmp_path)
    path = os.environ.get("PYTHONPATH")
    result = subprocess.run(
        [sys.executable, "-c", start.code + "\n" + recipe.code],
        cwd=work,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT) + (os.pathsep + path if path else "")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"README.md:{recipe.line}\n{result.stderr[-3000:]}"
