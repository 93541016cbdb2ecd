"""Tensors leave their device through ``st_static.tensors.to_numpy`` only, so a build on a GPU does not crash.

``Tensor.numpy()`` raises ``TypeError: can't convert cuda:0 device type tensor to numpy`` for a tensor on an
accelerator. These tests hold that on a machine without one: a scan of the source for ``.numpy()`` calls, and
builds run with ``.numpy()`` refusing, as on a GPU, every tensor st-static code did not move with ``.cpu()``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

from st_static.extraction.completion import complete_spaceless_vocabulary, isolated_token_vectors
from st_static.model.static_word_average import StaticWordAverage
from st_static.pipeline.publish import build
from st_static.settings import BuildSettings
from st_static.tensors import to_numpy

from .teachers import HAN_CHARACTERS, TINY_CORPUS, make_tiny_teacher

REPO = Path(__file__).resolve().parents[1]
HELPER = REPO / "st_static" / "tensors.py"


def numpy_calls(path: Path) -> list[str]:
    """``file:line: code`` of every ``<expression>.numpy(...)`` call in ``path``."""
    source = path.read_text(encoding="utf-8")
    name = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    return [
        f"{name}:{node.lineno}: {ast.get_source_segment(source, node)}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "numpy"
    ]


def test_no_module_converts_a_tensor_to_numpy_but_the_helper():
    paths = [*(REPO / "st_static").rglob("*.py"), *(REPO / "benchmarks").glob("*.py")]
    found = [call for path in sorted(paths) if path != HELPER for call in numpy_calls(path)]
    assert not found, (
        "Tensor.numpy() fails for a tensor on a GPU (and one that needs grad); use "
        "st_static.tensors.to_numpy(tensor) instead:\n" + "\n".join(found)
    )


def test_the_scan_finds_a_numpy_call(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("table = module.word_vectors.detach().numpy()\nfine = numpy.zeros(3)\n", encoding="utf-8")
    assert numpy_calls(planted) == [f"{planted}:1: module.word_vectors.detach().numpy()"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
def test_to_numpy_keeps_the_dtype_and_detaches(dtype):
    tensor = torch.arange(6, dtype=dtype).reshape(2, 3)
    if dtype.is_floating_point:
        tensor.requires_grad_(True)
    array = to_numpy(tensor)
    assert array.dtype == torch.empty(0, dtype=dtype).numpy().dtype
    np.testing.assert_array_equal(array, np.arange(6).reshape(2, 3))


def test_to_numpy_converts_bfloat16_when_asked():
    tensor = torch.tensor([1.5, -2.0], dtype=torch.bfloat16)
    array = to_numpy(tensor, dtype=torch.float32)
    assert array.dtype == np.float32
    np.testing.assert_array_equal(array, [1.5, -2.0])


def test_to_numpy_shares_a_cpu_tensors_memory():
    tensor = torch.zeros(3)
    to_numpy(tensor)[0] = 7.0
    assert tensor[0] == 7.0


@pytest.fixture
def tensors_as_on_a_gpu(monkeypatch):
    """``Tensor.numpy()`` called by st-static code raises as for a CUDA tensor unless the tensor came from ``.cpu()``.

    On a CPU tensor ``.cpu()`` returns the tensor itself; the patched ``.cpu()`` marks what it returns, and the
    patched ``.numpy()`` refuses unmarked tensors when its caller is an ``st_static`` module (libraries' own calls on
    their CPU tensors are left alone).
    """
    real_cpu, real_numpy = torch.Tensor.cpu, torch.Tensor.numpy

    def cpu(self, *args, **kwargs):
        moved = real_cpu(self, *args, **kwargs)
        moved._st_static_on_host = True
        return moved

    def numpy(self, *args, **kwargs):
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.startswith("st_static") and not getattr(self, "_st_static_on_host", False):
            raise TypeError(
                "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                "memory first."
            )
        return real_numpy(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "cpu", cpu)
    monkeypatch.setattr(torch.Tensor, "numpy", numpy)


def test_the_gpu_stand_in_refuses_a_tensor_not_moved_to_the_cpu(tensors_as_on_a_gpu):
    tensor = torch.ones(2)
    namespace = {"__name__": "st_static.example", "tensor": tensor}
    with pytest.raises(TypeError, match="cuda:0"):
        exec("tensor.detach().numpy()", namespace)
    exec("array = tensor.detach().cpu().numpy()", namespace)
    np.testing.assert_array_equal(namespace["array"], [1.0, 1.0])


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp("teacher"))


@pytest.mark.parametrize("pca_level", ["sentence", "word"])
def test_a_build_moves_every_table_to_the_cpu_before_numpy(teacher, tmp_path, tensors_as_on_a_gpu, pca_level):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_CORPUS * 3) + "\n", encoding="utf-8")
    settings = BuildSettings.from_flat(
        teacher=str(teacher),
        corpus=str(corpus),
        dim=8,
        min_sentences=1,
        steps=8,
        batch_size=4,
        validation_size=8,
        eval_steps=4,
        pca_sample_size=100,
        pca_level=pca_level,
        propagate_to_untrained=True,
    )
    result = build(settings, tmp_path / "model", evaluate=lambda model: {})
    assert result.model[0].metadata.stages == ["extraction", "pca", "distillation"]
    assert result.model.encode(["the cat sat"]).shape == (1, 8)


def test_completion_moves_the_table_to_the_cpu_before_numpy(tmp_path, tensors_as_on_a_gpu):
    cjk = SentenceTransformer(str(make_tiny_teacher(tmp_path, kind="cjk")), device="cpu")
    known = HAN_CHARACTERS[:150]
    vectors, _ = isolated_token_vectors(cjk, known)
    words = ["cat", "dog", *known]
    table = np.concatenate([np.ones((2, vectors.shape[1]), dtype=np.float32), vectors])
    module = StaticWordAverage.from_word_vectors(words, table, teacher_tokenizer=cjk[0].tokenizer._tokenizer)
    completed, report = complete_spaceless_vocabulary(module, cjk, ["en", "zh"])
    assert report["added"] > 0 and completed.num_words == module.num_words + report["added"]


@pytest.mark.parametrize("gpus", [True, False])
def test_torchrun_sums_cpu_tensors_with_gloo_even_with_gpus(monkeypatch, gpus):
    """The teacher pass all-reduces CPU tensors; a process group of nccl alone refuses them on a GPU machine."""
    from torch.distributed.distributed_c10d import Backend, BackendConfig

    from st_static.distributed import process_group_backend

    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpus)
    backends = BackendConfig(Backend(process_group_backend())).get_device_backend_map()
    assert backends["cpu"] == "gloo"
    assert backends["cuda"] == ("nccl" if gpus else "gloo")
