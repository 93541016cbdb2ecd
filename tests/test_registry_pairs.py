"""``st-static pairs`` on fake registry packages (no network): Debian packages built here with dpkg-deb, PyPI wheels
zipped here into the download cache. The pair file and its ``.source.txt``, the sets, the evaluation texts left out,
outputs written whole or not at all, outputs that are inputs and bad language codes refused."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from st_static.bundled import DEFAULT_EVAL_DATA
from st_static.cli import app
from st_static.data_files import read_translation_pairs
from st_static.pairs.catalogues import PairsError, check_language
from st_static.pairs.everyday import ding_pairs, paragraphs
from st_static.pairs.recipes import SETS, bundled_evaluation_files, set_packages
from st_static.pairs.wheels import wheel_sources

from .test_debian_pairs import _deb, _mo

pytest.importorskip("polib")
pytestmark = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb is not installed")

GAME = [("The knight rides into the dark forest", "Le chevalier entre dans la forêt sombre")]
TOOLS = [("Remove the directory if it is empty", "Supprimer le répertoire s'il est vide")]
CAPTION = "An old Chinese sailing ship."  # the first caption of the bundled tuxpaint/fra-eng.tsv
TATOEBA_GERMAN = "Mary said she didn't know where Tom was."  # the first English line of the bundled deu-eng.tsv
WESNOTH_LOCALE = "usr/share/games/wesnoth/1.16/locale"
DING = (
    "# Version :: test\n"
    "Abend {m} | Guten Abend! | Es wird Abend. :: evening | Good evening! | Night is falling.\n"
    "Kirsche {f} | Ich mag Kirschen.; Kirschen mag ich. :: cherry | I like cherries a lot.; I really like cherries.\n"
    "Hund {m} | Nimm/Bring den Hund mit. :: dog | Take/Bring the dog along with you.\n"
    "Ding :: thing | more\n"
)


def run(*arguments: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["pairs", "fetch", *arguments])
    return result.exit_code, result.output


def rows(out: Path) -> list[tuple[str, str, str]]:
    """``(source, english, other)`` of a pair file and its ``.source.txt``, checked aligned."""
    sources = out.with_name(out.stem + ".source.txt").read_text(encoding="utf-8").splitlines()
    pairs = read_translation_pairs(out)
    assert len(sources) == len(pairs)
    return [(source, *pair) for source, pair in zip(sources, pairs, strict=True)]


@pytest.fixture
def debs(tmp_path: Path) -> Path:
    """A game and a tool package (French catalogues, one message a bundled Tux Paint caption), Wesnoth's core data
    and one campaign, and the Ding dictionary."""
    folder = tmp_path / "debs"
    folder.mkdir()
    game = [*GAME, (CAPTION, "Un vieux bateau chinois qui navigue.")]
    _deb(folder, "game-data", {"usr/share/games/game/locale/fr/LC_MESSAGES/game.mo": _mo(game)})
    _deb(folder, "tools", {"usr/share/locale/fr/LC_MESSAGES/tools.mo": _mo([*TOOLS, GAME[0]])})
    story = "Delfador looks at the river.\n\nThe orcs are coming!"
    histoire = "Delfador regarde la rivière.\n\nLes orcs arrivent !"
    campaign = [
        (story, histoire),
        ("Two paragraphs here.\n\nAnd a second one.", "Un seul paragraphe en français."),
        ("teamname^Loyal Rebels", "Rebelles loyaux"),
        ("Fire!", "Feu !"),  # one word
        ("Move $unit.name| to the keep", "Déplacez $unit.name| au donjon"),
    ]
    _deb(
        folder,
        "wesnoth-1.16-data",
        {
            f"{WESNOTH_LOCALE}/fr/LC_MESSAGES/wesnoth-units.mo": _mo([("Elvish Archer", "Archer elfe")]),
            f"{WESNOTH_LOCALE}/fr/LC_MESSAGES/wesnoth-lib.mo": _mo([("Save the game now", "Sauvegarder la partie")]),
        },
    )
    _deb(folder, "wesnoth-1.16-httt", {f"{WESNOTH_LOCALE}/fr/LC_MESSAGES/wesnoth-httt.mo": _mo(campaign)})
    _deb(folder, "trans-de-en", {"usr/share/trans/de-en": DING.encode("utf-8")})
    return folder


def test_the_extra_set_writes_pairs_with_their_sources_less_the_bundled_evaluation_texts(debs, tmp_path) -> None:
    out = tmp_path / "out" / "en-fr.tsv"
    code, output = run("fr", "--debs", str(debs), "--out", str(out), "--packages", "game-data,tools,missing")
    assert code == 0, output
    assert rows(out) == [
        ("mo.game-data", *GAME[0]),
        ("mo.tools", *TOOLS[0]),  # the tool's copy of the game message is the same pair: kept once
    ]
    assert "missing: skipped (no .deb of it in" in output
    assert "1 left out as evaluation texts (tatoeba/fra-eng.tsv, tuxpaint/fra-eng.tsv" in output
    assert out.read_text(encoding="utf-8").startswith("en\tother\n")


def test_exclude_and_not_in_leave_out_pairs(debs, tmp_path) -> None:
    evaluation = tmp_path / "my-eval.tsv"
    evaluation.write_text(f"eng\tother\n{TOOLS[0][0]}\tx\n", encoding="utf-8")
    known = tmp_path / "known.tsv"
    known.write_text(f"en\tother\n{GAME[0][0]}!\t{GAME[0][1]}\n", encoding="utf-8")  # same once compared
    out = tmp_path / "en-fr.tsv"
    code, output = run("fr", "--debs", str(debs), "--out", str(out), "--packages", "game-data,tools",
                       "--exclude", str(evaluation), "--not-in", str(known))  # fmt: skip
    assert code == 1 and "no pairs to write (2 were evaluation texts, 1 in --not-in files)" in output
    assert not out.exists() and not out.with_name("en-fr.source.txt").exists()


def test_a_failed_run_leaves_the_earlier_output_whole(debs, tmp_path) -> None:
    out = tmp_path / "en-fr.tsv"
    assert run("fr", "--debs", str(debs), "--out", str(out), "--packages", "tools")[0] == 0
    before = out.read_bytes(), out.with_name("en-fr.source.txt").read_bytes()
    code, output = run("fr", "--debs", str(debs), "--out", str(out), "--packages", "nothing-here")
    assert code == 1 and "no pair found for fr" in output
    assert (out.read_bytes(), out.with_name("en-fr.source.txt").read_bytes()) == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["debs", "en-fr.source.txt", "en-fr.tsv"]


def test_an_output_that_is_an_input_is_refused_before_any_work(debs, tmp_path) -> None:
    known = tmp_path / "known.tsv"
    known.write_text(f"en\tother\n{GAME[0][0]}\t{GAME[0][1]}\n", encoding="utf-8")
    bundled = DEFAULT_EVAL_DATA / "xling" / "tuxpaint" / "fra-eng.tsv"
    before = bundled.read_bytes()
    for out in (known, bundled, debs / "en-fr.tsv"):
        code, output = run("fr", "--debs", str(debs), "--out", str(out), "--not-in", str(known))
        assert code == 1 and "error:" in output, output
        assert "pairs kept" not in output  # refused before reading a package
    assert known.read_text(encoding="utf-8").count("\n") == 2 and bundled.read_bytes() == before
    assert not (debs / "en-fr.tsv").exists()
    code, output = run("fr", "--debs", str(debs), "--out", str(tmp_path / "known.source.tsv"), "--not-in", str(known))
    assert code == 0, output  # known.source.tsv's own source file is known.source.source.txt, not an input


@pytest.mark.parametrize("language", ["en", "en_GB", "french", "f r", "../fr", "FR", "zh_cn_x", ""])
def test_a_bad_language_code_is_refused(language: str, tmp_path) -> None:
    with pytest.raises(PairsError):
        check_language(language)
    code, output = run(language, "--out", str(tmp_path / "x.tsv"))
    assert code != 0 and not (tmp_path / "x.tsv").exists(), output
    for good in ("fr", "pt_BR", "zh_CN", "sr@latin", "ckb", "zh-TW"):
        assert check_language(good) == good


def test_tux_paint_packages_are_refused(debs, tmp_path) -> None:
    _deb(debs, "tuxpaint-stamps-default", {"usr/share/locale/fr/LC_MESSAGES/stamps.mo": _mo(TOOLS)})
    code, output = run("fr", "--debs", str(debs), "--out", str(tmp_path / "x.tsv"), "--set", "everyday")
    assert code == 1 and "Tux Paint packages hold the evaluation captions" in output
    code, output = run("fr", "--out", str(tmp_path / "x.tsv"), "--packages", "tuxpaint,tools")
    assert code == 1 and "refused" in output and not (tmp_path / "x.tsv").exists()


def test_the_everyday_set_reads_wesnoth_paragraph_by_paragraph_without_the_interface(debs, tmp_path) -> None:
    out = tmp_path / "en-fr-everyday.tsv"
    code, output = run("fr", "--debs", str(debs), "--out", str(out), "--set", "everyday")
    assert code == 0, output
    assert rows(out) == [
        ("wesnoth", "Elvish Archer", "Archer elfe"),
        ("wesnoth", "Delfador looks at the river.", "Delfador regarde la rivière."),
        ("wesnoth", "The orcs are coming!", "Les orcs arrivent !"),
        ("wesnoth", "Loyal Rebels", "Rebelles loyaux"),
    ]  # not wesnoth-lib's menu, not a message of more paragraphs than its translation, one word or a variable
    assert "wesnoth-1.16-utbs: skipped" in output  # campaigns missing from --debs are named


def test_german_everyday_pairs_add_ding_and_the_auf_deutsch_wheel(debs, tmp_path) -> None:
    for package in ("game-data", "tools", "wesnoth-1.16-data", "wesnoth-1.16-httt"):
        next(debs.glob(f"{package}_*.deb")).unlink()
    wheels = tmp_path / "cache" / "wheels"
    wheels.mkdir(parents=True)
    content = {
        "phrases": [
            {"id": "x", "de": "Ich hätte gern ein Brötchen.", "en": "I would like a bread roll.", "literal": "x"},
            {"de": "Tschüss!", "en": "Bye!"},  # one English word
        ],
        "lines": [{"speaker": "Du", "de": TATOEBA_GERMAN + " (de)", "en": TATOEBA_GERMAN}],
    }
    with zipfile.ZipFile(wheels / "auf_deutsch-0.1.1-py3-none-any.whl", "w") as wheel:
        wheel.writestr("auf_deutsch/content/packs/bakery.json", json.dumps(content))
        wheel.writestr("auf_deutsch/app.py", "raise SystemExit('never imported')")
    out = tmp_path / "en-de.tsv"
    code, output = run(
        "de", "--debs", str(debs), "--out", str(out), "--set", "everyday", "--cache", str(tmp_path / "cache")
    )
    assert code == 0, output
    assert rows(out) == [
        ("ding", "Good evening!", "Guten Abend!"),
        ("ding", "Night is falling.", "Es wird Abend."),
        ("ding", "I like cherries a lot.", "Ich mag Kirschen."),
        ("ding", "I like cherries a lot.", "Kirschen mag ich."),
        ("ding", "I really like cherries.", "Ich mag Kirschen."),
        ("ding", "I really like cherries.", "Kirschen mag ich."),
        ("ding", "Take/Bring the dog along with you.", "Nimm/Bring den Hund mit."),
        ("auf-deutsch", "I would like a bread roll.", "Ich hätte gern ein Brötchen."),
    ]  # the Tatoeba sentence left out
    assert "1 left out as evaluation texts (tatoeba/deu-eng.tsv" in output
    code, output = run("de", "--debs", str(debs), "--out", str(out), "--set", "system", "--cache", str(tmp_path / "c2"))
    assert code == 0, output
    assert [english for _, english, _ in rows(out)] == [
        "I like cherries a lot.",
        "I like cherries a lot.",
        "I really like cherries.",
        "I really like cherries.",
    ]  # 4+ words, no slashes


def test_ding_entries_pair_their_aligned_sentences() -> None:
    assert ding_pairs(DING, min_words=5, slashes=False) == [
        ("I like cherries a lot.", "Ich mag Kirschen."),
        ("I like cherries a lot.", "Kirschen mag ich."),
    ]
    assert paragraphs("A.\n\nB.", "C.\n \nD.") == [("A.", "C."), ("B.", "D.")]
    assert paragraphs("A.\nstill A.", "C.\nstill C.") == [("A. still A.", "C. still C.")]
    assert paragraphs("A.\n\nB.", "C.") == []


def test_the_sets_and_their_languages() -> None:
    assert len(SETS["system"].packages) == 51 and "apt" in SETS["system"].packages
    assert set_packages(SETS["extra"], "pt")[-2:] == ["libreoffice-l10n-pt", "libreoffice-l10n-pt-br"]
    assert set_packages(SETS["extra"], "zh")[-1] == "libreoffice-l10n-zh-cn"
    assert not any(name.startswith("tuxpaint") for pair_set in SETS.values() for name in pair_set.packages)
    assert [source.package for source in wheel_sources("zh_CN")] == ["hsk-sentences-audio"]
    assert wheel_sources("zh_TW") == [] and wheel_sources("fr") == []
    names = [path.relative_to(DEFAULT_EVAL_DATA).as_posix() for path in bundled_evaluation_files("zh_CN")]
    assert names == ["tatoeba/cmn-eng.tsv", "xling/tuxpaint/cmn-eng.tsv", "sts/stsb-en-dev.tsv", "sts/stsb-en-test.tsv"]
    assert [path.name for path in bundled_evaluation_files("el")] == ["stsb-en-dev.tsv", "stsb-en-test.tsv"]


def _stamps(captions: dict[str, dict[str, str]]) -> dict[str, bytes]:
    """Tux Paint description files: ``{english: {code: translation}}``, one file per caption."""
    files = {}
    for number, (english, translations) in enumerate(captions.items()):
        lines = [english, *(f"{code}.utf8={text}" for code, text in translations.items())]
        files[f"usr/share/tuxpaint/stamps/things/stamp-{number}.txt"] = ("\n".join(lines) + "\n").encode("utf-8")
    return files


CAPTIONS = {
    f"A picture of thing number {number}.": {"ca": f"Una imatge {number}.", "el": "Εικόνα."} for number in range(9)
}


def test_captions_write_one_half_of_a_new_language_and_pairs_then_leave_out_both(debs, tmp_path, monkeypatch) -> None:
    from st_static.pairs.captions import split_halves, stamp_captions

    monkeypatch.setenv("ST_STATIC_CACHE", str(tmp_path / "cache"))
    evaluation_debs = tmp_path / "cache" / "evaluation-debs"
    evaluation_debs.mkdir(parents=True)
    deb = _deb(evaluation_debs, "tuxpaint-stamps-default", _stamps(CAPTIONS))
    files = [(name, content) for name, content in _stamps(CAPTIONS).items()]
    half, unread = split_halves(stamp_captions(files, "ca"))
    assert len(half) == 5 and unread == 4
    assert split_halves(stamp_captions(list(reversed(files)), "ca")) == (half, unread)  # the order of files aside
    out = tmp_path / "data" / "xling" / "tuxpaint" / "ca-eng.tsv"
    result = CliRunner().invoke(app, ["pairs", "captions", "ca", "--out", str(out), "--count", "3"])
    assert (
        result.exit_code == 0
        and "wrote 3 captions of ca" in result.output
        and "4 captions left unread" in result.output
    )
    assert read_translation_pairs(out) == half[:3]
    result = CliRunner().invoke(
        app, ["pairs", "captions", "fr", "--out", str(tmp_path / "fr.tsv"), "--debs", str(deb.parent)]
    )
    assert result.exit_code == 1 and "fra-eng.tsv is its evaluation half" in result.output
    assert not (tmp_path / "fr.tsv").exists()
    # a Catalan game message that is a caption of the unread half: left out of the training pairs too
    unread_caption = next(english for english in CAPTIONS if english not in dict(half))
    _deb(
        debs,
        "ca-game",
        {
            "usr/share/locale/ca/LC_MESSAGES/g.mo": _mo(
                [(unread_caption, "Una altra cosa del joc."), (GAME[0][0], "El cavaller entra al bosc fosc")]
            )
        },
    )
    pairs = tmp_path / "en-ca.tsv"
    code, output = run("ca", "--debs", str(debs), "--out", str(pairs), "--packages", "ca-game")
    assert code == 0, output
    assert [english for _, english, _ in rows(pairs)] == [GAME[0][0]] and "18 Tux Paint caption texts" in output


def test_debian_reference_chapters_pair_their_paragraphs_when_the_structure_agrees() -> None:
    from st_static.pairs.manuals import chapter_pairs, reference_code

    english = (
        "<html><head><title>Tutorial</title></head><body><h2>Login</h2><p>Log in to the system with your own "
        "account.</p><ul><li><p>Use a strong password for the account.</p></li><li>Too short here.</li></ul>"
        "<p>Run $HOME/bin/setup now to finish it.</p></body></html>"
    )
    german = (
        "<html><head><title>Anleitung</title></head><body><h2>Anmelden</h2><p>Melden Sie sich mit Ihrem eigenen "
        "Konto am System an.</p><ul><li><p>Verwenden Sie ein starkes Passwort.</p></li><li>Zu kurz.</li></ul>"
        "<p>Führen Sie $HOME/bin/setup aus.</p></body></html>"
    )
    assert chapter_pairs(english, german, ()) == [
        ("Log in to the system with your own account.", "Melden Sie sich mit Ihrem eigenen Konto am System an."),
        ("Use a strong password for the account.", "Verwenden Sie ein starkes Passwort."),
    ]  # not the short item, not the one with a variable
    assert chapter_pairs(english, german.replace("<h2>Anmelden</h2>", ""), ()) == []  # structures differ
    assert (reference_code("zh"), reference_code("pt_BR"), reference_code("de")) == ("zh-cn", "pt-br", "de")
