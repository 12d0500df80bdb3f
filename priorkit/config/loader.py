"""YAML in, typed and validated dataclasses out -- for any schema of dataclasses.

Loading keeps the line of every field, so a bad value is reported as
``pipelines/x.yaml:14: train.learning_rate: expected a number, got 'fast'``
instead of a stack trace from deep inside training.  Command-line overrides
(``--set train.fraction=0.1``) are applied to the raw tree before validation
and are named as the culprit when they are wrong.

A field's type hint and default are what :func:`_convert` checks and fills
in; nothing here knows the pipeline schema (:mod:`.schema`) or its domain
rules (:mod:`.checks`).
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import types
import typing
from typing import Any, Literal, Union

import yaml

from ..errors import PriorkitError
from .removed import removed


class ConfigError(PriorkitError, ValueError):
    """A pipeline file or override is malformed; the message names file, line and field."""


def parse_yaml(text: str, source: str) -> tuple[Any, dict[tuple, int]]:
    """YAML -> (data, {field path: line}).  Syntax errors name file, line and column."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        _check_nodes(node, source)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = " ".join(x for x in (exc.context, exc.problem) if x)
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    lines: dict[tuple, int] = {}
    _collect_lines(node, (), lines)
    return data, lines


def _check_nodes(node: yaml.Node, source: str) -> None:
    """Refuse what PyYAML accepts silently: a key given twice (the last would win)
    and an anchor that contains itself (cyclic data; every walk over it would recurse forever)."""
    done: set[int] = set()
    stack: list[tuple[yaml.Node, tuple, bool]] = [(node, (), False)]
    active: set[int] = set()
    while stack:
        n, path, leaving = stack.pop()
        if leaving:
            active.discard(id(n))
            done.add(id(n))
            continue
        if id(n) in active:
            raise ConfigError(f"{source}:{n.start_mark.line + 1}:{n.start_mark.column + 1}: "
                              f"{_dotted(path)}: an alias refers to a node that contains it (cyclic data); "
                              "pipeline files cannot hold recursive structures")
        if id(n) in done:
            continue
        active.add(id(n))
        stack.append((n, path, True))
        if isinstance(n, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, value_node in n.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if key is not None and key != "<<":
                    if key in seen:
                        mark = key_node.start_mark
                        raise ConfigError(f"{source}:{mark.line + 1}:{mark.column + 1}: {_dotted(path + (key,))}: "
                                          f"given twice (first on line {seen[key]}); remove one")
                    seen[key] = key_node.start_mark.line + 1
                stack.append((value_node, path + (key if key is not None else "?",), False))
        elif isinstance(n, yaml.SequenceNode):
            stack.extend((item, path + (i,), False) for i, item in enumerate(n.value))


def _dotted(path: tuple) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _collect_lines(node: yaml.Node, path: tuple, lines: dict[tuple, int], seen: set[int] | None = None) -> None:
    seen = set() if seen is None else seen
    lines.setdefault(path, node.start_mark.line + 1)
    if id(node) in seen:  # an aliased node: walked once (an alias "bomb" would be exponential)
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            lines[path + (key,)] = key_node.start_mark.line + 1
            _collect_lines(value_node, path + (key,), lines, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _collect_lines(item, path + (i,), lines, seen)


def parse_override(item: str) -> tuple[list[str], Any]:
    """``"train.fraction=0.1"`` -> (["train", "fraction"], 0.1); the value is YAML."""
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected FIELD=VALUE, e.g. --set train.fraction=0.1")
    key, value = item.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"--set {item!r}: the field must be a dotted name such as train.learning_rate")
    try:
        parsed = yaml.safe_load(value) if value.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {item!r}: the value is not valid YAML: {exc}") from None
    return key.split("."), parsed


def set_path(raw: dict, key: list[str], value: Any, item: str) -> None:
    node = raw
    for i, part in enumerate(key[:-1]):
        nxt = node.get(part)
        if nxt is None:
            nxt = node[part] = {}
        if not isinstance(nxt, dict):
            raise ConfigError(
                f"--set {item}: {'.'.join(key[: i + 1])} is {type(nxt).__name__}, not a section; "
                f"cannot set {'.'.join(key)}"
            )
        node = nxt
    node[key[-1]] = value


def apply_overrides(raw: dict, locations: dict, overrides: list[str] | tuple[str, ...]) -> None:
    """Apply ``a.b=c`` overrides to ``raw`` in place; each field's location becomes ``--set ITEM``."""
    for item in overrides:
        key, value = parse_override(item)
        set_path(raw, key, value, item)
        locations[tuple(key)] = f"--set {item}"
        # Children of the replaced value now come from the override, too.
        for k in [k for k in locations if len(k) > len(key) and k[: len(key)] == tuple(key)]:
            locations[k] = f"--set {item}"


def _where(locations: dict, path: tuple, source: str) -> str:
    """Best location for a field: its own line, else its nearest parent's."""
    p = tuple(path)
    while True:
        loc = locations.get(p)
        if loc is not None:
            return loc if isinstance(loc, str) else f"{source}:{loc}"
        if not p:
            return source
        p = p[:-1]


def _fail(path: tuple, locations: dict, source: str, message: str) -> ConfigError:
    return ConfigError(f"{_where(locations, path, source)}: {_dotted(path)}: {message}")


def _describe(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(tp) if a is not type(None))
    if origin is list:
        return f"a list of {_describe(typing.get_args(tp)[0])}"
    if origin is dict:
        return "a mapping"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(tp, str(tp))


def _convert(value: Any, tp: Any, path: tuple, loc: dict, source: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise _fail(path, loc, source, f"must not be empty; expected {_describe(tp)}")
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, path, loc, source)
            except ConfigError as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        gone = [e for e in errors if " was removed: " in str(e)]  # a value a member no longer takes says why
        if gone:
            raise gone[0]
        raise _fail(path, loc, source, f"expected {_describe(tp)}, got {value!r}")
    if origin is Literal:
        choices = typing.get_args(tp)
        if value in choices:
            return value
        gone = removed(path, value) if isinstance(value, str) else None
        if gone is not None:
            raise _fail(path, loc, source, f"{value!r} was removed: {gone}")
        near = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise _fail(path, loc, source, f"expected one of {', '.join(map(repr, choices))}, got {value!r}{hint}")
    if dataclasses.is_dataclass(tp):
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise _fail(path, loc, source, f"expected a mapping (a section), got {type(value).__name__} {value!r}")
        hints = typing.get_type_hints(tp)
        fields = {f.name: f for f in dataclasses.fields(tp) if not f.metadata.get("internal")}
        for key in value:
            if key not in fields:
                gone = removed(path + (key,))
                if gone is not None:
                    raise _fail(path + (key,), loc, source, f"was removed: {gone}")
                near = difflib.get_close_matches(str(key), list(fields), n=1)
                hint = f"; did you mean {'.'.join(map(str, path + (near[0],)))!r}?" if near else ""
                raise _fail(path + (key,), loc, source,
                            f"unknown field{hint} (known: {', '.join(fields)})")
        kwargs = {}
        for name, f in fields.items():
            if name in value:
                kwargs[name] = _convert(value[name], hints[name], path + (name,), loc, source)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise _fail(path + (name,), loc, source, "is required")
        try:
            return tp(**kwargs)
        except PriorkitError as exc:  # a rule of the section's own (PriorSpec's), naming its field
            field = getattr(exc, "field", None)
            raise _fail(path + ((field,) if field else ()), loc, source, str(exc)) from None
    if origin is list:
        (item_tp,) = typing.get_args(tp)
        if value is None:
            raise _fail(path, loc, source, f"expected {_describe(tp)}, got nothing")
        items = value if isinstance(value, list) else [value]  # `--set sweep.seeds=0` means [0]
        return [_convert(v, item_tp, path + (i,), loc, source) for i, v in enumerate(items)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _fail(path, loc, source, f"expected a mapping, got {type(value).__name__} {value!r}")
        _, val_tp = typing.get_args(tp)
        return {str(k): _convert(v, val_tp, path + (k,), loc, source) for k, v in value.items()}
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _fail(path, loc, source, f"expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise _fail(path, loc, source, f"expected an integer, got {value!r}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # PyYAML reads 5e-5 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
        raise _fail(path, loc, source, f"expected a number, got {value!r}")
    if tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise _fail(path, loc, source, f"expected a string, got {type(value).__name__} {value!r}")
    raise TypeError(f"config schema: unsupported type {tp!r} at {'.'.join(map(str, path))}")


def digest(obj: Any) -> str:
    """Short stable hash of JSON-able data (validity keys of step outputs)."""
    from ..checksums import json_sha256

    return json_sha256(obj, 16)
