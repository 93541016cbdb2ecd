"""Publishing a saved static model to the Hugging Face Hub, after checking that what is uploaded is sound.

:func:`push_folder` refuses a folder holding a symbolic link, whose files changed since the save (sha256 in
``st_static_config.json``), whose metadata records paths of this machine, that a bare ``SentenceTransformer`` cannot
load (or that encodes to non-finite or different vectors), whose card was generated for other weights, or whose card's
evaluation table disagrees with ``evaluation.json``. Only the files a save writes are uploaded
(:mod:`st_static.hub.upload_files`); the checks read a private copy of exactly those files, and that copy is what
:func:`push_folder` uploads with ``huggingface_hub`` (``create_repo`` and ``upload_folder``; the token comes from the
argument, ``HF_TOKEN`` or ``hf auth login``).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from huggingface_hub import HfApi, get_token
from huggingface_hub.utils import HFValidationError, validate_repo_id

from st_static.errors import StStaticError
from st_static.hub.bare_load import BareLoadError, bare_encode
from st_static.hub.upload_files import UploadPlan, copy_files, links_and_special_files, local_paths, plan_upload
from st_static.model.folder_checks import FILES_KEY
from st_static.model.inference import encode
from st_static.model.metadata import ModelMetadata
from st_static.model.static_word_average import (
    CONFIG_FILE_NAME,
    HASHED_FILES,
    WEIGHTS_FILE_NAME,
    ModelFolderError,
    StaticWordAverage,
)
from st_static.model_card import (
    CARD_FILE_NAME,
    EVALUATION_FILE_NAME,
    MODEL_ID_PLACEHOLDER,
    EvaluationFileError,
    card_model_ids,
    card_weights_sha256,
    evaluation_table_differences,
    file_sha256,
    read_evaluation,
)

# Texts the bare load encodes: ordinary sentences, an unknown word, punctuation only and the empty string.
CHECK_SENTENCES = (
    "The weather is lovely today.",
    "A man is playing a guitar on the stage.",
    "Tokenisation of an unknownwordzz!",
    "!!!",
    "",
)

# Uploaded text files that must not mention the user's home folder (the metadata is checked more strictly).
TEXT_FILES = (
    CARD_FILE_NAME,
    EVALUATION_FILE_NAME,
    "stage_scores.json",
    "stage_scores.md",
    "training/training_history.json",
)


class HubUploadError(StStaticError, RuntimeError):
    """The Hub could not be reached or refused the upload (the cause is chained)."""


_BAD_BRANCH = re.compile(r"^$|[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|^/|/$|\.$|^@$|(^|/)\.|\.lock(/|$)")
"""What git refuses in a branch name (``git check-ref-format``): an empty name, spaces, control and special
characters, ``..``, ``@{``, empty parts, a part starting with ``.`` or ending with ``.lock``, a ``.`` at the end."""


class RepoIdError(StStaticError, ValueError):
    """A Hub repo id that is not of the form ``org/name`` the Hub accepts."""


class PushRefusedError(StStaticError, ValueError):
    """The folder failed a check before upload; the message lists every problem and its fix."""

    def __init__(self, folder: str | os.PathLike[str], problems: list[str]) -> None:
        self.folder = Path(folder)
        self.problems = problems
        listed = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"refusing to push {folder}:\n{listed}")


def check_repo_id(repo_id: str, what: str = "The repo id") -> str:
    """Return ``repo_id`` if it is a Hub model repo id ``org/name`` that huggingface_hub accepts.

    Args:
        repo_id: The id to check.
        what: How messages name it (e.g. ``--model-id``).

    Raises:
        RepoIdError: Naming ``what``, the id and the rules.
    """
    valid = isinstance(repo_id, str) and repo_id.count("/") == 1 and all(repo_id.split("/"))
    if valid:
        try:
            validate_repo_id(repo_id)
        except HFValidationError:
            valid = False
    if not valid:
        raise RepoIdError(
            f"{what} must be a Hub repo id of the form org/name (ASCII letters, digits, '-', '_' and '.'; neither "
            f"part starting or ending with '-' or '.'; no '--' or '..'; no '.git' at the end; at most 96 characters), "
            f"got {repo_id!r}."
        )
    return repo_id


@dataclass(frozen=True)
class FolderReport:
    """What the checks of a folder found.

    Attributes:
        uploaded: The files that go up (relative paths).
        skipped: What else the folder holds, left out of the upload (folders end in ``/``).
        verified_files: The files whose sha256 matched the one recorded at save time (empty for a folder saved
            before hashes were recorded).
    """

    num_words: int
    dim: int
    sentences_checked: int
    evaluation_results: int
    uploaded: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    verified_files: tuple[str, ...] = ()


@contextmanager
def _staged_upload(folder: Path) -> Iterator[tuple[Path, UploadPlan]]:
    """A private copy of the files of ``folder`` that a push uploads, and the plan saying which those are."""
    if not folder.is_dir():
        raise PushRefusedError(folder, [f"{folder} is not a folder"])
    unsafe = links_and_special_files(folder)
    if unsafe:
        raise PushRefusedError(
            folder,
            [
                f"{problem}: push refuses links and special files (uploading a link sends what it points at); "
                "replace it by a copy of the file or remove it"
                for problem in unsafe
            ],
        )
    plan = plan_upload(folder)
    with tempfile.TemporaryDirectory(prefix="st-static-push-") as work:
        try:
            copy_files(folder, plan.files, work)
        except OSError as error:
            raise PushRefusedError(folder, [f"the folder changed while it was read ({error}): push again"]) from error
        yield Path(work), plan


def _check_staged(folder: Path, staged: Path, plan: UploadPlan, repo_id: str | None) -> FolderReport:
    """The checks of :func:`push_folder`, run on the staged copy ``staged`` and reported for ``folder``."""

    def named(message: str) -> str:
        return message.replace(str(staged), str(folder))

    regenerate = f"regenerate the card with `st-static card {folder}`"
    try:
        module = StaticWordAverage.load(str(staged))
    except ModelFolderError as error:
        raise PushRefusedError(folder, [named(f"{error} Re-save the model, then push again.")]) from error

    problems: list[str] = []
    if not (staged / "modules.json").is_file():
        problems.append("modules.json is missing (an interrupted save?): re-save the model")
    problems.extend(_local_path_problems(folder, staged, module.metadata))
    readme = staged / CARD_FILE_NAME
    card: str | None = None
    if not readme.is_file():
        problems.append(f"{CARD_FILE_NAME} (the model card) is missing: generate it with `st-static card {folder}`")
    else:
        try:
            card = readme.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            problems.append(
                f"{CARD_FILE_NAME} (the model card) is not UTF-8 text ({error.reason} at byte {error.start + 1}): "
                f"{regenerate}"
            )
    if card is not None:
        card_sha = card_weights_sha256(card)
        if card_sha is not None and card_sha != file_sha256(staged / WEIGHTS_FILE_NAME):
            problems.append(f"the card was generated for other weights than {WEIGHTS_FILE_NAME}: {regenerate}")
        named_ids = card_model_ids(card) - {MODEL_ID_PLACEHOLDER}
        if repo_id is not None and named_ids and named_ids != {repo_id}:
            problems.append(
                f"the card's usage snippets load {', '.join(sorted(named_ids))}, not {repo_id}: "
                f"regenerate it with `st-static card {folder} --model-id {repo_id}`"
            )

    evaluation = None
    evaluation_results = 0
    if (staged / EVALUATION_FILE_NAME).is_file():
        try:
            evaluation = read_evaluation(staged / EVALUATION_FILE_NAME)
            evaluation_results = len(evaluation["results"])
        except EvaluationFileError as error:
            problems.append(
                named(f"{error} Fix or re-create it (st-static evaluate MODEL --json FILE), then {regenerate}")
            )
    evaluation_unreadable = evaluation is None and (staged / EVALUATION_FILE_NAME).is_file()
    if card is not None and not evaluation_unreadable:
        differences = evaluation_table_differences(card, evaluation)
        if differences:
            listed = "".join(f"\n      {difference}" for difference in differences)
            problems.append(f"the card's evaluation table does not match {EVALUATION_FILE_NAME}; {regenerate}:{listed}")

    try:
        bare = bare_encode(staged, CHECK_SENTENCES)
    except BareLoadError as error:
        problems.append(named(f"{error} Re-save the model with st-static."))
    else:
        expected = encode(module, list(CHECK_SENTENCES))
        if bare.embeddings.shape != expected.shape:
            problems.append(
                f"a bare SentenceTransformer gives vectors of shape {bare.embeddings.shape}, expected {expected.shape}"
            )
        elif not np.isfinite(bare.embeddings).all():
            problems.append("a bare SentenceTransformer gives NaN or infinite values: re-build the model")
        elif not np.allclose(bare.embeddings, expected, atol=1e-5):
            problems.append(_bare_difference(bare.embeddings, expected, module))
    if problems:
        raise PushRefusedError(folder, problems)
    return FolderReport(
        num_words=module.num_words,
        dim=module.embedding_dim,
        sentences_checked=len(CHECK_SENTENCES),
        evaluation_results=evaluation_results,
        uploaded=plan.files,
        skipped=plan.skipped,
        verified_files=tuple(sorted(_recorded_files(staged))),
    )


def _bare_difference(bare: np.ndarray, expected: np.ndarray, module: StaticWordAverage) -> str:
    """What a bare load's vectors that differ from st-static's say about the folder."""
    differing = [
        text
        for text, got, wanted in zip(CHECK_SENTENCES, bare, expected, strict=True)
        if not np.allclose(got, wanted, atol=1e-5)
    ]
    if differing == [""] and module.fallback is not None:
        return (
            "the empty text's Dense module is missing from modules.json (the model was saved by save_pretrained of a "
            'model st-static did not return), so a bare SentenceTransformer gives "" the zero vector: re-save the '
            "model with st_static.save_model"
        )
    shown = ", ".join(repr(text) for text in differing[:3])
    return (
        f"a bare SentenceTransformer gives other vectors than st-static (for {shown}): the modules after the table "
        "are not the ones st-static saves (Normalize, and the empty text's Dense before it with fallback rows); "
        "re-save the model with st_static.save_model"
    )


def _recorded_files(staged: Path) -> list[str]:
    """The model files whose sha256 the staged config records (the load has verified them)."""
    config_path = staged / CONFIG_FILE_NAME
    config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
    return [name for name in HASHED_FILES if name in (config.get(FILES_KEY) or {})]


def _local_path_problems(folder: Path, staged: Path, metadata: ModelMetadata) -> list[str]:
    """Paths of this machine in the metadata (every key, known or not), and mentions of the home folder in the other
    uploaded text files."""
    problems: list[str] = []
    found = local_paths(metadata.to_dict())
    if found:
        problems.append(
            f"{CONFIG_FILE_NAME} records paths of this machine, which would be published: {'; '.join(found)}. "
            f"Replace each with a Hub repo id or a bare file/folder name (edit the metadata in "
            f"{folder / CONFIG_FILE_NAME}, or set model[0].metadata and re-save the model), then regenerate the "
            f"card with `st-static card {folder}`"
        )
    home = os.path.expanduser("~")
    if len(home.rstrip("/\\")) > 1:
        for name in TEXT_FILES:
            path = staged / name
            if path.is_file() and home in path.read_text(encoding="utf-8", errors="replace"):
                fix = (
                    f"fix the metadata, then regenerate it with `st-static card {folder}`"
                    if name == CARD_FILE_NAME
                    else "replace the path by a repo id or a folder name"
                )
                problems.append(f"{name} mentions your home folder ({home}): {fix}")
    return problems


@dataclass(frozen=True)
class PushResult:
    """Where the model went and what was checked first."""

    repo_id: str
    commit_url: str
    report: FolderReport


def push_folder(
    folder: str | os.PathLike[str],
    repo_id: str,
    *,
    private: bool | None = None,
    revision: str | None = None,
    token: str | None = None,
    commit_message: str | None = None,
    endpoint: str | None = None,
) -> PushResult:
    """Check a saved static model and upload the files a save writes to ``repo_id``.

    Checks: no symbolic link or special file anywhere in the folder; the files load and agree and are unchanged since
    the save (:meth:`StaticWordAverage.load`); ``modules.json`` and the card exist; the metadata records no path of this
    machine; the card was generated for these weights and (with ``repo_id``) loads that repo in its usage snippets; its
    evaluation table matches ``evaluation.json``; a bare ``SentenceTransformer`` in a process that cannot import
    st-static loads the files that would be uploaded and encodes a few sentences to finite vectors equal to st-static's.

    The repo is created if needed (``private`` applies to a new repo only). A card generated without a model id
    gets ``repo_id`` in its usage snippets in the uploaded copy, as sentence-transformers does for reused cards.
    Other files in the folder are not uploaded; the report lists them.

    Args:
        folder: The saved model.
        repo_id: ``org/name``.
        private: Create the repo private (``None``: the Hub's default).
        revision: Branch to upload to (created from the default branch if missing).
        token: Hub token; defaults to ``HF_TOKEN`` or the one saved by ``hf auth login``.
        commit_message: Defaults to "Upload static model with st-static".
        endpoint: Hub endpoint; defaults to ``HF_ENDPOINT`` or https://huggingface.co.

    Returns:
        The repo id, the commit URL and the check report.

    Raises:
        RepoIdError: If ``repo_id`` is not a Hub repo id ``org/name`` (a ``ValueError``).
        PushRefusedError: If there is no token, ``token`` is empty, ``revision`` is not a branch name, or a check
            fails; nothing is uploaded.
        HubUploadError: If the Hub cannot be reached or refuses the upload.
    """
    check_repo_id(repo_id)
    if token is not None and not token.strip():
        raise PushRefusedError(
            folder, ["--token is empty: pass a Hub token, or leave it out to use HF_TOKEN or `hf auth login`"]
        )
    if token is None and get_token() is None:
        raise PushRefusedError(
            folder, ["no Hugging Face token: pass --token, set HF_TOKEN or log in with `hf auth login`"]
        )
    if revision is not None and _BAD_BRANCH.search(revision):
        raise PushRefusedError(
            folder,
            [
                f"--revision {revision!r} is not a branch name git accepts: give a non-empty name without spaces, "
                "control characters, ~ ^ : ? * [ \\, '..', '@{' or empty parts, no part starting with '.' or ending "
                "with '.lock', and no '.' at the end (e.g. v1 or release/2024-06)"
            ],
        )
    with _staged_upload(Path(folder)) as (staged, plan):
        report = _check_staged(Path(folder), staged, plan, repo_id)
        _fill_in_model_id(staged / CARD_FILE_NAME, repo_id)
        api = HfApi(endpoint=endpoint, token=token)
        try:
            repo_url = api.create_repo(repo_id, private=private, exist_ok=True)
            if revision is not None:
                api.create_branch(repo_url.repo_id, branch=revision, exist_ok=True)
            commit = api.upload_folder(
                repo_id=repo_url.repo_id,
                folder_path=staged,
                revision=revision,
                commit_message=commit_message or "Upload static model with st-static",
            )
        except Exception as error:  # the HTTP stack's errors (HTTP status, connection, TLS) have no common public base
            raise HubUploadError(f"uploading to {repo_id} at {api.endpoint} failed: {error}") from error
    return PushResult(repo_id=repo_url.repo_id, commit_url=commit.commit_url, report=report)


def _fill_in_model_id(readme: Path, repo_id: str) -> None:
    """Replace the card's placeholder model id by ``repo_id`` in the staged copy of the card (in every usage
    snippet: sentence-transformers' and model2vec's)."""
    placeholder = f'"{MODEL_ID_PLACEHOLDER}"'
    card = readme.read_text(encoding="utf-8")
    if placeholder in card:
        readme.write_text(card.replace(placeholder, f'"{repo_id}"'), encoding="utf-8")
