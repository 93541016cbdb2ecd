"""What a teacher that cannot be loaded is called: a local folder, a file, or neither."""

from __future__ import annotations

from pathlib import Path

import pytest

from st_static.extraction.teacher_model import load_teacher_tokenizer
from st_static.teachers import TeacherError


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("folder", "It is a local folder, but not a Sentence Transformer one;"),
        ("file", "It is a file, not a model folder;"),
    ],
)
def test_a_local_teacher_that_is_no_model_is_called_what_it_is(kind: str, says: str, tmp_path: Path) -> None:
    path = tmp_path / "teacher"
    if kind == "folder":
        path.mkdir()
    else:
        path.write_text("{}", encoding="utf-8")
    with pytest.raises(TeacherError) as caught:
        load_teacher_tokenizer(path)
    assert says in str(caught.value) and "not a local folder" not in str(caught.value)
    assert str(caught.value).startswith(f"Cannot load the teacher {path}: ")
