"""``st-static extract``: steps 1 and 2 (decontextualised vectors, sentence-level PCA + ABTT) from any teacher."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from st_static.cli.app import command
from st_static.cli.options import settings_parameters, with_parameters


def extract(
    out: Annotated[Path, typer.Option("--out", help="Output folder (written atomically).")],
    corpus: Annotated[Path, typer.Option("--corpus", help="Text file, one sentence per line.")],
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted extraction.")] = False,
    **settings_values: Any,
) -> None:
    """Extract a word table from a teacher and reduce it: OUT/model (raw), OUT/reduced (PCA + ABTT), OUT/targets.

    Under ``torchrun --nproc-per-node K -m st_static.cli extract ...`` the teacher pass is sharded across K
    processes (sums and counts all-reduced); the first process writes the folders.
    """
    from st_static.cli.options import settings_from_options
    from st_static.distributed import process_rank
    from st_static.stages.extraction import run_extraction
    from st_static.stages.reduction import run_reduction

    settings = settings_from_options({**settings_values, "corpus": str(corpus)})
    stage = run_extraction(corpus, settings.extraction, out, resume=resume, languages=settings.languages)
    if process_rank()[0] == 0:
        run_reduction(stage, out / "reduced", settings.reduction)
        summary = {key: value for key, value in stage.stats.items() if key != "settings"}
        typer.echo(json.dumps(summary, indent=2))
        typer.echo(f"Wrote {out}/model (raw table), {out}/reduced (PCA + ABTT) and {out}/targets.")


# Extraction settings of the build's later stages, which ``extract`` (steps 1 and 2 only) never runs: offering them
# would let a user set what nothing reads.
NOT_EXTRACTED = frozenset(
    {
        "complete_words",
        "complete_spaceless",
        "fallback_rows",
        "long_texts",
        "long_text_sentences",
        "piece_rows",
        "second_teacher",
        "second_teacher_prompt",
        "second_teacher_sentences",
        "second_teacher_weight",
        "second_teacher_mix",
        "storage",
    }
)


def _extract_parameters() -> list[Any]:
    from dataclasses import fields

    from st_static.settings import ExtractionSettings, ReductionSettings

    wanted = {item.name for kind in (ExtractionSettings, ReductionSettings) for item in fields(kind)} | {"languages"}
    return [parameter for parameter in settings_parameters() if parameter.name in wanted - NOT_EXTRACTED]


command(resume="run the same command again with --resume to continue the teacher pass")(
    with_parameters(extract, _extract_parameters())
)
