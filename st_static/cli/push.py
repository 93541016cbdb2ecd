"""``st-static push``: check a saved static model, then upload it to the Hugging Face Hub."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from st_static.cli.app import command, fail


@command()
def push(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="Saved static model folder.")],
    repo_id: Annotated[str, typer.Argument(metavar="ORG/NAME", help="Hub repo to upload to (created if missing).")],
    private: Annotated[
        bool, typer.Option("--private", help="Create the repo private (an existing repo keeps its visibility).")
    ] = False,
    revision: Annotated[str | None, typer.Option(help="Branch to upload to (created if missing).")] = None,
    token: Annotated[str | None, typer.Option(help="Hub token; default: HF_TOKEN or `hf auth login`.")] = None,
    commit_message: Annotated[str | None, typer.Option(help="Commit message.")] = None,
) -> None:
    """Check a saved static model, then upload it to the Hugging Face Hub.

    Uploads only the files a save writes (others are listed, not uploaded). Refuses (exit code 1, nothing uploaded) a
    folder holding a symbolic link, whose files changed since the save, or whose metadata records paths of this machine,
    and unless the folder loads with a bare SentenceTransformer (no st-static) and encodes to finite vectors, and its
    card describes these weights and matches evaluation.json.
    """
    from st_static.hub.push import HubUploadError, PushRefusedError, push_folder

    try:
        result = push_folder(
            folder,
            repo_id,
            private=True if private else None,
            revision=revision,
            token=token,
            commit_message=commit_message,
        )
    except (PushRefusedError, HubUploadError, ValueError) as error:  # RepoIdError (a ValueError): a malformed id
        raise fail(str(error)) from error
    report = result.report
    hashes = (
        f"{' and '.join(report.verified_files)} unchanged since the save"
        if report.verified_files
        else "no file hashes recorded (saved by an older st-static)"
    )
    typer.echo(
        f"checked: loads without st-static ({report.num_words:,} words, {report.dim} dimensions, "
        f"{report.sentences_checked} test sentences -> finite vectors equal to st-static's); {hashes}; "
        f"card matches the weights and evaluation.json ({report.evaluation_results} result(s))"
    )
    if report.skipped:
        typer.echo(f"not uploaded (not written by a save): {', '.join(report.skipped)}")
    typer.echo(f"uploaded {folder} to {result.repo_id}: {result.commit_url}")
