"""The losses against a direct, loop-by-loop computation of their papers' equations (Wada et al., 2025; the
disentangler's, Nonomura et al.)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss, MultipleNegativesRankingLoss

from st_static.losses import (
    BilingualContrastiveLoss,
    ComponentInteractionLoss,
    LanguageBiasLoss,
    MeaningComponentLoss,
    SimilarityDistillationLoss,
    bilingual_contrastive_loss,
    component_interaction_loss,
    language_bias_loss,
    meaning_component_loss,
    similarity_distillation_loss,
)
from st_static.losses.language_bias import constraint_weights
from st_static.model.meaning_map import MeaningMap


# ---------------------------------------------------------------- reference implementations (float64, loops)
def cosine_matrix(rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
    """Cosine similarity of every pair; 0 when either vector is zero."""
    result = np.zeros((len(rows_a), len(rows_b)))
    for i, a in enumerate(rows_a):
        for j, b in enumerate(rows_b):
            norm = np.linalg.norm(a) * np.linalg.norm(b)
            result[i, j] = 0.0 if norm == 0 else float(a @ b) / norm
    return result


def paper_sigma(matrix: np.ndarray, i: int, j: int, tau: float) -> float:
    """Eq. 3: exp(x_ij / tau) / sum_{k != i} exp(x_ik / tau)."""
    denominator = sum(math.exp(matrix[i, k] / tau) for k in range(len(matrix)) if k != i)
    return math.exp(matrix[i, j] / tau) / denominator


def paper_distillation_loss(student: np.ndarray, teacher: np.ndarray, tau: float) -> float:
    """Eq. 2: -1/K sum_i sum_{j != i} sigma(T, i, j) log sigma(S, i, j)."""
    similarity_s = cosine_matrix(student, student)
    similarity_t = cosine_matrix(teacher, teacher)
    size = len(student)
    total = 0.0
    for i in range(size):
        for j in range(size):
            if j != i:
                total += paper_sigma(similarity_t, i, j, tau) * math.log(paper_sigma(similarity_s, i, j, tau))
    return -total / size


def paper_contrastive_loss(first: np.ndarray, second: np.ndarray, tau: float) -> float:
    """Eqs. 4-5: -1/K sum_i [log sigma'(U, i) + log sigma'(U^T, i)], softmax over all k."""
    similarity = cosine_matrix(first, second)
    size = len(first)
    total = 0.0
    for i in range(size):
        row = math.exp(similarity[i, i] / tau) / sum(math.exp(similarity[i, k] / tau) for k in range(size))
        column = math.exp(similarity[i, i] / tau) / sum(math.exp(similarity[k, i] / tau) for k in range(size))
        total += math.log(row) + math.log(column)
    return -total / size


def random_rows(rows: int, dim: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)


def as_tensor(array: np.ndarray, requires_grad: bool = False) -> torch.Tensor:
    return torch.tensor(array, dtype=torch.float32, requires_grad=requires_grad)


# ---------------------------------------------------------------- similarity distillation
@pytest.mark.parametrize("tau", [0.05, 0.5, 2.0])
@pytest.mark.parametrize(("size", "student_dim", "teacher_dim"), [(3, 4, 4), (8, 5, 11), (16, 32, 7)])
def test_distillation_matches_the_paper_equation(size, student_dim, teacher_dim, tau):
    student = random_rows(size, student_dim, seed=1)
    teacher = random_rows(size, teacher_dim, seed=2)
    loss = similarity_distillation_loss(as_tensor(student), as_tensor(teacher), tau)
    assert loss.item() == pytest.approx(paper_distillation_loss(student, teacher, tau), rel=1e-4, abs=1e-5)


def test_distillation_excludes_the_diagonal():
    student, teacher = random_rows(6, 8, seed=3), random_rows(6, 8, seed=4)
    tau = 0.05
    loss = similarity_distillation_loss(as_tensor(student), as_tensor(teacher), tau).item()
    # With the diagonal in the softmax, the self-similarity exp(1 / tau) dominates every row.
    similarity_s, similarity_t = cosine_matrix(student, student), cosine_matrix(teacher, teacher)
    unmasked_s = np.exp(similarity_s / tau) / np.exp(similarity_s / tau).sum(axis=1, keepdims=True)
    unmasked_t = np.exp(similarity_t / tau) / np.exp(similarity_t / tau).sum(axis=1, keepdims=True)
    unmasked = -(unmasked_t * np.log(unmasked_s)).sum() / len(student)
    assert loss == pytest.approx(paper_distillation_loss(student, teacher, tau), rel=1e-4)
    assert abs(loss - unmasked) > 0.1


def test_distillation_temperature_changes_the_loss():
    student, teacher = as_tensor(random_rows(8, 6, seed=5)), as_tensor(random_rows(8, 6, seed=6))
    assert similarity_distillation_loss(student, teacher, 0.05).item() != pytest.approx(
        similarity_distillation_loss(student, teacher, 1.0).item(), rel=1e-2
    )


def test_distillation_is_minimal_when_student_matches_teacher():
    teacher = random_rows(8, 6, seed=7)
    student = as_tensor(teacher * 3.0, requires_grad=True)  # same cosines, different scale
    loss = similarity_distillation_loss(student, as_tensor(teacher), 0.05)
    loss.backward()
    assert student.grad.abs().max().item() < 1e-4
    worse = similarity_distillation_loss(as_tensor(random_rows(8, 6, seed=8)), as_tensor(teacher), 0.05)
    assert worse.item() > loss.item()


@pytest.mark.parametrize("size", [0, 1])
def test_distillation_batch_without_pairs_is_zero_with_a_graph(size):
    student = as_tensor(random_rows(size, 4, seed=9), requires_grad=True)
    loss = similarity_distillation_loss(student, as_tensor(random_rows(size, 5, seed=10)), 0.05)
    assert loss.item() == 0.0
    assert loss.requires_grad
    loss.backward()
    assert torch.equal(student.grad, torch.zeros_like(student))


def test_distillation_batch_of_two_is_zero_and_finite():
    # One candidate per row: both softmaxes are 1, so the loss is -log 1 = 0.
    student = as_tensor(random_rows(2, 4, seed=11), requires_grad=True)
    loss = similarity_distillation_loss(student, as_tensor(random_rows(2, 3, seed=12)), 0.05)
    loss.backward()
    assert loss.item() == pytest.approx(0.0, abs=1e-7)
    assert torch.isfinite(student.grad).all()


def test_distillation_zero_vectors_give_no_nan():
    student = random_rows(5, 4, seed=13)
    student[1] = 0.0  # a sentence with no known word
    teacher = random_rows(5, 6, seed=14)
    teacher[3] = 0.0
    student_tensor = as_tensor(student, requires_grad=True)
    loss = similarity_distillation_loss(student_tensor, as_tensor(teacher), 0.05)
    loss.backward()
    assert math.isfinite(loss.item())
    assert torch.isfinite(student_tensor.grad).all()
    assert loss.item() == pytest.approx(paper_distillation_loss(student, teacher, 0.05), rel=1e-4)


def test_distillation_gives_no_gradient_to_the_teacher():
    teacher = as_tensor(random_rows(4, 3, seed=15), requires_grad=True)
    similarity_distillation_loss(as_tensor(random_rows(4, 3, seed=16), requires_grad=True), teacher, 0.05).backward()
    assert teacher.grad is None


def features_of(model, texts):
    return model[0].preprocess(texts)


def test_distillation_loss_module_runs_the_model(word_model):
    texts = ["the cat sat", "on the mat", "hello world", "token word", "qqq"]  # the last has no known word
    teacher = as_tensor(random_rows(len(texts), 10, seed=17))
    loss_module = SimilarityDistillationLoss(word_model, temperature=0.1)
    loss = loss_module([features_of(word_model, texts)], teacher)
    embeddings = word_model.encode(texts, convert_to_numpy=True)
    assert loss.item() == pytest.approx(paper_distillation_loss(embeddings, teacher.numpy(), 0.1), rel=1e-4)
    loss.backward()
    assert torch.isfinite(word_model[0].embedding.weight.grad).all()


def test_distillation_loss_module_checks_its_inputs(word_model):
    loss_module = SimilarityDistillationLoss(word_model)
    features = features_of(word_model, ["the cat", "the mat", "hello"])
    teacher = as_tensor(random_rows(3, 5, seed=18))
    with pytest.raises(ValueError, match="exactly one text column"):
        loss_module([features, features], teacher)
    with pytest.raises(ValueError, match="'label' column"):
        loss_module([features], None)
    with pytest.raises(ValueError, match=r"\(batch_size, teacher_dim\)"):
        loss_module([features], teacher[:2])
    with pytest.raises(ValueError, match="float"):
        loss_module([features], torch.ones(3, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="NaN"):
        loss_module([features], torch.full((3, 5), math.nan))
    for temperature in (0, -1.0, math.inf, math.nan, "0.05"):
        with pytest.raises(ValueError, match="temperature"):
            SimilarityDistillationLoss(word_model, temperature=temperature)


def test_losses_follow_the_sentence_transformers_conventions(word_model):
    for loss_class in (SimilarityDistillationLoss, BilingualContrastiveLoss):
        loss_module = loss_class(word_model, temperature=0.07)
        assert loss_module.model is word_model
        assert loss_module.get_config_dict()["temperature"] == 0.07
        assert "@inproceedings" in loss_module.citation
        assert "Static Word Embeddings for Sentence Semantic Representation" in loss_module.citation
        doc = loss_class.__init__.__doc__
        for section in ("Args:", "References:", "Requirements:", "Inputs:", "Relations:", "Example:"):
            assert section in doc
        assert "SentenceTransformerTrainer" in doc


# ---------------------------------------------------------------- Matryoshka
def truncated(embeddings: np.ndarray, dim: int) -> np.ndarray:
    return embeddings[:, :dim]


def test_matryoshka_around_distillation_sums_the_truncated_losses(word_model):
    texts = ["the cat sat", "on the mat", "hello world", "token word", "the world", "cat on mat"]
    teacher = as_tensor(random_rows(len(texts), 10, seed=19))  # 10 wide: not a dimension of the 16-dim model
    loss_module = MatryoshkaLoss(word_model, SimilarityDistillationLoss(word_model), [16, 8, 4])
    loss = loss_module([features_of(word_model, texts)], teacher)
    embeddings = word_model.encode(texts, convert_to_numpy=True, normalize_embeddings=False)
    expected = sum(paper_distillation_loss(truncated(embeddings, dim), teacher.numpy(), 0.05) for dim in (16, 8, 4))
    assert loss.item() == pytest.approx(expected, rel=1e-4)
    loss.backward()
    assert torch.isfinite(word_model[0].embedding.weight.grad).all()


def test_matryoshka_with_teacher_as_wide_as_the_student_is_refused(word_model):
    texts = ["the cat sat", "on the mat", "hello world"]
    loss_module = MatryoshkaLoss(word_model, SimilarityDistillationLoss(word_model), [16, 8])
    with pytest.raises(ValueError, match="zero column"):
        loss_module([features_of(word_model, texts)], as_tensor(random_rows(3, 16, seed=20)))
    # The documented remedy: a zero column leaves the teacher's cosines unchanged.
    padded = np.pad(random_rows(3, 16, seed=20), ((0, 0), (0, 1)))
    assert math.isfinite(loss_module([features_of(word_model, texts)], as_tensor(padded)).item())


def test_matryoshka_around_bilingual_contrastive(word_model):
    first, second = ["the cat", "hello world", "the mat"], ["cat sat", "world word", "on mat"]
    loss_module = MatryoshkaLoss(word_model, BilingualContrastiveLoss(word_model), [16, 8])
    loss = loss_module([features_of(word_model, first), features_of(word_model, second)], None)
    a = word_model.encode(first, convert_to_numpy=True)
    b = word_model.encode(second, convert_to_numpy=True)
    expected = sum(paper_contrastive_loss(truncated(a, dim), truncated(b, dim), 0.05) for dim in (16, 8))
    assert loss.item() == pytest.approx(expected, rel=1e-4)


# ---------------------------------------------------------------- bilingual contrastive
@pytest.mark.parametrize("tau", [0.05, 1.0])
@pytest.mark.parametrize("size", [2, 3, 9])
def test_contrastive_matches_the_paper_equation(size, tau):
    first, second = random_rows(size, 6, seed=21), random_rows(size, 6, seed=22)
    loss = bilingual_contrastive_loss(as_tensor(first), as_tensor(second), tau)
    assert loss.item() == pytest.approx(paper_contrastive_loss(first, second, tau), rel=1e-4, abs=1e-5)


def test_contrastive_counts_both_directions():
    # Asymmetric U: the row and column softmaxes differ, and both terms are summed.
    first, second = random_rows(5, 4, seed=23), random_rows(5, 4, seed=24)
    tau = 0.5
    similarity = cosine_matrix(first, second)
    rows_only = -np.mean([math.log(paper_sigma_all(similarity, i, tau)) for i in range(5)])
    columns_only = -np.mean([math.log(paper_sigma_all(similarity.T, i, tau)) for i in range(5)])
    loss = bilingual_contrastive_loss(as_tensor(first), as_tensor(second), tau).item()
    assert rows_only != pytest.approx(columns_only, rel=1e-3)
    assert loss == pytest.approx(rows_only + columns_only, rel=1e-4)


def paper_sigma_all(matrix: np.ndarray, i: int, tau: float) -> float:
    return math.exp(matrix[i, i] / tau) / sum(math.exp(matrix[i, k] / tau) for k in range(len(matrix)))


@pytest.mark.parametrize("size", [0, 1])
def test_contrastive_batch_without_negatives_is_zero_with_a_graph(size):
    first = as_tensor(random_rows(size, 4, seed=25), requires_grad=True)
    loss = bilingual_contrastive_loss(first, as_tensor(random_rows(size, 4, seed=26)), 0.05)
    assert loss.item() == pytest.approx(0.0, abs=1e-7)
    loss.backward()
    assert torch.isfinite(first.grad).all()


def test_contrastive_zero_vectors_give_no_nan():
    first, second = random_rows(4, 4, seed=27), random_rows(4, 4, seed=28)
    first[0] = 0.0
    second[2] = 0.0
    first_tensor = as_tensor(first, requires_grad=True)
    loss = bilingual_contrastive_loss(first_tensor, as_tensor(second), 0.05)
    loss.backward()
    assert loss.item() == pytest.approx(paper_contrastive_loss(first, second, 0.05), rel=1e-4)
    assert torch.isfinite(first_tensor.grad).all()


def test_contrastive_is_twice_symmetric_multiple_negatives_ranking(word_model):
    first = ["the cat sat", "hello world", "the mat", "token word"]
    second = ["cat on mat", "world word", "on the mat", "token"]
    features = [features_of(word_model, first), features_of(word_model, second)]
    ours = BilingualContrastiveLoss(word_model, temperature=0.05)(features, None)
    theirs = MultipleNegativesRankingLoss(
        word_model, scale=20.0, directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction"
    )(features, None)
    assert ours.item() == pytest.approx(2 * theirs.item(), rel=1e-5)


def test_contrastive_loss_module_checks_its_inputs(word_model):
    loss_module = BilingualContrastiveLoss(word_model)
    features = features_of(word_model, ["the cat", "the mat"])
    with pytest.raises(ValueError, match="exactly two text columns"):
        loss_module([features], None)
    with pytest.raises(ValueError, match="exactly two text columns"):
        loss_module([features, features, features], None)


def test_the_similarity_mse_term_matches_absolute_cosines_the_softmax_ignores(word_model):
    from st_static.losses.similarity_distillation import similarity_distillation_loss

    teacher = torch.nn.functional.normalize(torch.randn(6, 8, generator=torch.Generator().manual_seed(0)), dim=1)
    # A student whose cosines are (T + 1) / 2: other absolute cosines, so the term adds to the loss.
    same_softmax = torch.cat([teacher, torch.full((6, 1), 1.0)], dim=1)
    plain = similarity_distillation_loss(same_softmax, teacher)
    with_term = similarity_distillation_loss(same_softmax, teacher, similarity_mse_weight=1.0)
    assert with_term > plain
    exact = similarity_distillation_loss(teacher, teacher, similarity_mse_weight=1.0)
    assert exact == pytest.approx(float(similarity_distillation_loss(teacher, teacher)), abs=1e-6)
    with pytest.raises(ValueError, match="similarity_mse_weight"):
        SimilarityDistillationLoss(word_model, similarity_mse_weight=-1.0)


# ---------------------------------------------------------------- several teachers
def mixed_distributions_loss(student: np.ndarray, blocks: list[np.ndarray], weights: list[float], tau: float) -> float:
    """-1/K sum_i sum_{j != i} [sum_t w_t sigma(T_t, i, j)] log sigma(S, i, j), the weights scaled to sum to 1."""
    similarity_s = cosine_matrix(student, student)
    teachers = [cosine_matrix(block, block) for block in blocks]
    total_weight = sum(weights)
    size = len(student)
    total = 0.0
    for i in range(size):
        for j in range(size):
            if j != i:
                target = sum(
                    w / total_weight * paper_sigma(t, i, j, tau) for w, t in zip(weights, teachers, strict=True)
                )
                total += target * math.log(paper_sigma(similarity_s, i, j, tau))
    return -total / size


@pytest.mark.parametrize("weights", [[0.4, 0.6], [1.0, 3.0], [1.0, 0.0]])
def test_several_teachers_learn_the_weighted_mean_of_their_distributions(weights):
    student = random_rows(7, 5, seed=30)
    first, second = random_rows(7, 4, seed=31), random_rows(7, 9, seed=32) * 5.0  # a block's scale does not count
    labels = as_tensor(np.concatenate([first, second], axis=1))
    loss = similarity_distillation_loss(as_tensor(student), labels, 0.1, teacher_dims=[4, 9], teacher_weights=weights)
    expected = mixed_distributions_loss(student, [first, second], weights, 0.1)
    assert loss.item() == pytest.approx(expected, rel=1e-4, abs=1e-5)
    if weights[1] == 0:  # one teacher's whole share is that teacher alone
        alone = similarity_distillation_loss(as_tensor(student), as_tensor(first), 0.1)
        assert loss.item() == pytest.approx(alone.item(), rel=1e-5)


def test_several_teachers_differ_from_their_mixed_cosines_and_take_a_zero_column_in_the_last_block():
    student = random_rows(8, 5, seed=33)
    first, second = random_rows(8, 4, seed=34), random_rows(8, 6, seed=35)
    unit = [block / np.linalg.norm(block, axis=1, keepdims=True) for block in (first, second)]
    cosines_mixed = np.concatenate([unit[0] * math.sqrt(0.5), unit[1] * math.sqrt(0.5)], axis=1)
    one_target = similarity_distillation_loss(as_tensor(student), as_tensor(cosines_mixed), 0.05)
    both = as_tensor(np.concatenate([first, second], axis=1))
    distributions = similarity_distillation_loss(as_tensor(student), both, 0.05, None, [4, 6], [0.5, 0.5])
    assert distributions.item() != pytest.approx(one_target.item(), rel=1e-3)
    padded = torch.cat([both, torch.zeros(8, 1)], dim=1)  # as the Matryoshka set-up appends
    again = similarity_distillation_loss(as_tensor(student), padded, 0.05, None, [4, 6], [0.5, 0.5])
    assert again.item() == pytest.approx(distributions.item(), rel=1e-6)


def test_several_teachers_are_checked_and_configured(word_model):
    for dims, weights, match in [
        ([4, 6], None, "together"),
        ([4], [0.5, 0.5], "together"),
        ([4, 0], [0.5, 0.5], "positive integers"),
        ([4, True], [0.5, 0.5], "positive integers"),
        ([4, 6], [0.0, 0.0], "not all 0"),
        ([4, 6], [-1.0, 2.0], "non-negative"),
        ([4, 6], [math.nan, 1.0], "finite"),
        ([4, 6], ["a", 1.0], "finite"),
    ]:
        with pytest.raises(ValueError, match=match):
            SimilarityDistillationLoss(word_model, teacher_dims=dims, teacher_weights=weights)
    loss_module = SimilarityDistillationLoss(word_model, teacher_dims=[4, 6], teacher_weights=[1.0, 3.0])
    assert loss_module.get_config_dict()["teacher_dims"] == [4, 6]
    assert loss_module.get_config_dict()["teacher_weights"] == [0.25, 0.75]
    assert "teacher_dims" not in SimilarityDistillationLoss(word_model).get_config_dict()
    features = features_of(word_model, ["the cat", "the mat", "hello"])
    with pytest.raises(ValueError, match="fewer than"):
        loss_module([features], as_tensor(random_rows(3, 9, seed=36)))
    assert torch.isfinite(loss_module([features], as_tensor(random_rows(3, 10, seed=37))))


def test_make_loss_passes_what_the_data_decides_and_refuses_what_the_loss_does_not_take(word_model):
    from st_static.losses import make_loss
    from st_static.settings import RefinementSettings, SettingsError

    loss_module = make_loss(
        "distillation", word_model, RefinementSettings(), {"teacher_dims": [4, 6], "teacher_weights": [1, 1]}
    )
    assert loss_module.teacher_blocks == ((4, 6), (0.5, 0.5))
    with pytest.raises(SettingsError, match="takes no teacher_dims"):
        make_loss("contrastive", word_model, RefinementSettings(), {"teacher_dims": [4]})


# ---------------------------------------------------------------- the disentangler's losses (Nonomura et al.)
def paper_intra_loss(mx: np.ndarray, my: np.ndarray, ex: np.ndarray, ey: np.ndarray, weight: float) -> float:
    """L_mean + weight * L_lang, averaged over i and every j != i, loop by loop."""
    cos = lambda a, b: cosine_matrix(a[None], b[None])[0, 0]  # noqa: E731
    lx, ly, size = ex - mx, ey - my, len(mx)
    total = 0.0
    for i in range(size):
        others = [j for j in range(size) if j != i]
        mean = 2 * (1 - cos(mx[i], my[i]))
        mean += sum(max(0.0, cos(mx[i], mx[j])) + max(0.0, cos(my[i], my[j])) for j in others) / len(others)
        lang = sum(2 - cos(lx[i], lx[j]) - cos(ly[i], ly[j]) for j in others) / len(others)
        total += mean + weight * lang
    return total / size


def paper_inter_loss(mx: np.ndarray, my: np.ndarray, ex: np.ndarray, ey: np.ndarray) -> float:
    """L_cross + L_sep with j the pair before i (the batch rolled by one), loop by loop."""
    cos = lambda a, b: cosine_matrix(a[None], b[None])[0, 0]  # noqa: E731
    lx, ly, size = ex - mx, ey - my, len(mx)
    total = 0.0
    for i in range(size):
        j = (i - 1) % size
        cross = 4 - cos(ex[i], my[i] + lx[i]) - cos(ey[i], mx[i] + ly[i])
        cross -= cos(ex[i], mx[i] + lx[j]) + cos(ey[i], my[i] + ly[j])
        total += cross + max(0.0, cos(mx[i], lx[i])) + max(0.0, cos(my[i], ly[i]))
    return total / size


def four_parts(size: int, dim: int, seed: int) -> list[np.ndarray]:
    return [random_rows(size, dim, seed=seed + offset) for offset in range(4)]


@pytest.mark.parametrize(("size", "dim"), [(2, 3), (5, 8), (12, 16)])
@pytest.mark.parametrize("weight", [1.0, 0.3])
def test_the_intra_component_loss_matches_the_paper_equations(size, dim, weight):
    parts = four_parts(size, dim, seed=40)
    loss = meaning_component_loss(*map(as_tensor, parts), language_weight=weight)
    assert loss.item() == pytest.approx(paper_intra_loss(*parts, weight), rel=1e-4, abs=1e-5)


@pytest.mark.parametrize(("size", "dim"), [(2, 3), (5, 8), (12, 16)])
def test_the_inter_component_loss_matches_the_paper_equations(size, dim):
    parts = four_parts(size, dim, seed=50)
    loss = component_interaction_loss(*map(as_tensor, parts))
    assert loss.item() == pytest.approx(paper_inter_loss(*parts), rel=1e-4, abs=1e-5)


def test_identical_meaning_parts_of_a_pair_cost_nothing_in_the_first_term():
    rows = random_rows(1, 6, seed=60)
    one = as_tensor(rows)
    assert meaning_component_loss(one, one, one, one).item() == pytest.approx(0.0, abs=1e-6)  # one pair: no j
    size = 6
    embeddings = random_rows(size, 6, seed=61)
    same = as_tensor(embeddings)
    # identity map, x = y: the pair term is 0, the language parts are zero (cosine 0), so L_lang is 2
    expected = paper_intra_loss(embeddings, embeddings, embeddings, embeddings, 1.0)
    assert meaning_component_loss(same, same, same, same).item() == pytest.approx(expected, rel=1e-5)
    others = cosine_matrix(embeddings, embeddings)[~np.eye(size, dtype=bool)]
    assert expected == pytest.approx(2 * np.maximum(others, 0).mean() + 2.0, rel=1e-5)


def test_both_constraints_are_the_weighted_sum_of_the_two_families():
    parts = [as_tensor(part) for part in four_parts(6, 5, seed=70)]
    intra, inter = meaning_component_loss(*parts, language_weight=0.5), component_interaction_loss(*parts)
    both = language_bias_loss(*parts, intra_weight=2.0, inter_weight=0.25, language_weight=0.5)
    assert both.item() == pytest.approx(2.0 * intra.item() + 0.25 * inter.item(), rel=1e-5)
    assert language_bias_loss(*parts, inter_weight=0.0).item() == pytest.approx(
        meaning_component_loss(*parts).item(), rel=1e-6
    )


def test_the_identity_map_gets_a_finite_gradient_of_every_loss():
    embeddings = as_tensor(random_rows(8, 6, seed=80))
    for constraints in ("intra", "inter", "both"):
        weight = torch.eye(6, requires_grad=True)
        meaning = embeddings @ weight.T
        loss = language_bias_loss(
            meaning[:4],
            meaning[4:],
            embeddings[:4],
            embeddings[4:],
            **dict(zip(("intra_weight", "inter_weight"), constraint_weights(constraints), strict=True)),
        )
        loss.backward()
        assert torch.isfinite(loss) and torch.isfinite(weight.grad).all(), constraints


def meaning_model(word_model):
    return SentenceTransformer(modules=[word_model[0], Normalize(), MeaningMap(16)], device="cpu")


def test_the_language_bias_losses_read_both_parts_from_the_model(word_model):
    model = meaning_model(word_model)
    with torch.no_grad():
        model[2].linear.weight.mul_(0.5).add_(torch.full((16, 16), 0.05))
    english, german = ["the cat sat", "on the mat", "hello world"], ["cat the sat", "mat on", "world hello"]
    features = [model[0].preprocess(english), model[0].preprocess(german)]
    full = [word_model.encode(texts, normalize_embeddings=True) for texts in (english, german)]
    weight = model[2].weight.detach().numpy()
    parts = [full[0] @ weight.T, full[1] @ weight.T, *full]
    assert MeaningComponentLoss(model, language_weight=0.5)(features, None).item() == pytest.approx(
        paper_intra_loss(*parts, 0.5), rel=1e-4
    )
    features = [model[0].preprocess(english), model[0].preprocess(german)]
    assert ComponentInteractionLoss(model)(features, None).item() == pytest.approx(paper_inter_loss(*parts), rel=1e-4)


def test_the_language_bias_losses_need_a_meaning_map_and_two_columns(word_model):
    for loss_class in (MeaningComponentLoss, ComponentInteractionLoss, LanguageBiasLoss):
        with pytest.raises(ValueError, match="ends with st_static's MeaningMap"):
            loss_class(word_model)
    model = meaning_model(word_model)
    features = model[0].preprocess(["the cat", "the mat"])
    with pytest.raises(ValueError, match="exactly two text columns"):
        LanguageBiasLoss(model)([features], None)
    with pytest.raises(ValueError, match="constraints must be one of"):
        LanguageBiasLoss(model, constraints="all")
    with pytest.raises(ValueError, match="language_weight"):
        MeaningComponentLoss(model, language_weight=-1.0)


def test_the_language_bias_losses_follow_the_sentence_transformers_conventions(word_model):
    model = meaning_model(word_model)
    assert MeaningComponentLoss(model, language_weight=0.5).get_config_dict() == {"language_weight": 0.5}
    assert LanguageBiasLoss(model, constraints="inter").get_config_dict() == {
        "constraints": "inter",
        "language_weight": 1.0,
        "intra_weight": 0.0,
        "inter_weight": 1.0,
    }
    for loss_class in (MeaningComponentLoss, ComponentInteractionLoss, LanguageBiasLoss):
        loss_module = loss_class(model)
        assert loss_module.model is model
        assert "Mitigating Language Bias in Multilingual Sentence Embeddings" in loss_module.citation
        doc = loss_class.__init__.__doc__
        for section in ("Args:", "References:", "Requirements:", "Inputs:", "Relations:", "Example:"):
            assert section in doc, (loss_class.__name__, section)
        assert "SentenceTransformerTrainer" in doc
