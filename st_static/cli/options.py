"""Command-line options made from the settings dataclasses, so every build setting is an option with one default."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, Field
from typing import Annotated, Any

import typer

from st_static.settings import BuildSettings, SettingsError, settings_fields


def _flag(item: Field[Any]) -> str:
    return "--" + item.name.replace("_", "-")


def _default(item: Field[Any]) -> Any:
    if item.default is not MISSING:
        return item.default
    return item.default_factory()  # type: ignore[misc]


def _base_type(hint: Any) -> Any:
    """``int`` for ``int | None``, ``str`` for ``Literal[...]``; the hint itself otherwise."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        members = [member for member in typing.get_args(hint) if member is not type(None)]
        return _base_type(members[0]) if len(members) == 1 else str
    if typing.get_origin(hint) is typing.Literal:
        return str
    return hint


def _option(owner: type, item: Field[Any]) -> inspect.Parameter:
    hint = typing.get_type_hints(owner)[item.name]
    style = item.metadata.get("cli", "")
    default = _default(item)
    if style == "comma":
        annotation: Any = str | None
        default = ",".join(str(value) for value in default) if default else None
    elif style == "comma-pairs":
        annotation = str | None
        default = ",".join(f"{key}={value}" for key, value in default.items()) if default else None
    elif style in ("repeat", "pairs"):
        annotation = list[str] | None
        default = None
    else:
        annotation = _base_type(hint)
        if default is None:
            annotation = annotation | None
    flag = _flag(item)
    if annotation is bool:
        flag = f"{flag}/--no-{flag[2:]}"
    option = typer.Option(flag, help=item.metadata.get("help", ""))
    return inspect.Parameter(
        item.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[annotation, option]
    )


def settings_parameters(exclude: set[str] = frozenset()) -> list[inspect.Parameter]:
    """One keyword parameter per settings field (see :func:`st_static.settings.settings_fields`)."""
    return [_option(owner, item) for owner, item in settings_fields() if item.name not in exclude]


def _parse_comma(name: str, text: str | None, hint: Any) -> Any:
    if text is None or not text.strip():
        return None
    items = [part.strip() for part in text.split(",") if part.strip()]
    if not items:  # "," names nothing: refused rather than read as the option left out
        raise SettingsError(
            f"--{name.replace('_', '-')} {text!r} names no value: give comma-separated values, or leave the option out."
        )
    if "int" in str(hint):
        try:
            return [int(part) for part in items]
        except ValueError as error:
            raise SettingsError(f"--{name.replace('_', '-')} takes comma-separated integers, got {text!r}.") from error
    return items


def _parse_pairs(name: str, items: list[str] | None) -> dict[str, str] | None:
    """Repeated ``KEY=VALUE`` -> ``{KEY: VALUE}``; a key given twice is refused (one value per key)."""
    if not items:
        return None
    flag = f"--{name.replace('_', '-')}"
    parsed: dict[str, str] = {}
    for item in items:
        key, separator, value = (part.strip() for part in item.partition("="))
        if not separator or not key or not value:
            raise SettingsError(f"{flag} takes KEY=VALUE, got {item!r}.")
        if key in parsed:
            raise SettingsError(f"{flag} names {key} twice ({key}={parsed[key]}, {key}={value}): give one value each.")
        parsed[key] = value
    return parsed


def _dict_value_type(hint: Any) -> Any:
    """``int`` for ``dict[str, int] | None``; ``str`` for a hint without a dict."""
    union = isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
    for member in typing.get_args(hint) if union else (hint,):
        if typing.get_origin(member) is dict:
            return typing.get_args(member)[1]
    return str


def _parse_comma_pairs(name: str, text: str | None, hint: Any) -> dict[str, Any] | None:
    """``"de=40000,ko=12000"`` -> ``{"de": 40000, "ko": 12000}`` (int values for a field of int values)."""
    flag = f"--{name.replace('_', '-')}"
    if text is None or not text.strip():
        return None
    integers = _dict_value_type(hint) is int
    parsed: dict[str, Any] = {}
    for item in (part.strip() for part in text.split(",")):
        key, separator, value = (part.strip() for part in item.partition("="))
        if not separator or not key or not value:
            raise SettingsError(f"{flag} takes comma-separated KEY=VALUE (e.g. de=40000,ko=12000), got {item!r}.")
        if key in parsed:
            raise SettingsError(f"{flag} names {key} twice.")
        if integers:
            try:
                parsed[key] = int(value)
            except ValueError:
                raise SettingsError(f"{flag} {key}={value}: {value!r} is not an integer.") from None
        else:
            parsed[key] = value
    return parsed


def settings_from_options(values: dict[str, Any]) -> BuildSettings:
    """Build settings from the values of :func:`settings_parameters` (other keys are ignored).

    Raises:
        SettingsError: If a value cannot be parsed or is out of range.
    """
    chosen: dict[str, Any] = {}
    for owner, item in settings_fields():
        if item.name not in values:
            continue
        value = values[item.name]
        style = item.metadata.get("cli", "")
        if style == "comma":
            value = _parse_comma(item.name, value, typing.get_type_hints(owner)[item.name])
            if value is None and _default(item) is not None:
                raise SettingsError(f"--{item.name.replace('_', '-')} needs at least one value.")
        elif style == "pairs":
            value = _parse_pairs(item.name, value)
        elif style == "comma-pairs":
            value = _parse_comma_pairs(item.name, value, typing.get_type_hints(owner)[item.name])
        elif style == "repeat":
            value = [str(path) for path in value] if value else None
        chosen[item.name] = value
    return BuildSettings.from_flat(**chosen)


def with_parameters(function: Callable[..., Any], parameters: list[inspect.Parameter]) -> Callable[..., Any]:
    """``function`` with ``parameters`` added to its signature (typer reads the signature to make options)."""
    signature = inspect.signature(function, eval_str=True)
    fixed = [
        parameter for parameter in signature.parameters.values() if parameter.kind != inspect.Parameter.VAR_KEYWORD
    ]
    function.__signature__ = signature.replace(parameters=[*fixed, *parameters])  # type: ignore[attr-defined]
    return function
