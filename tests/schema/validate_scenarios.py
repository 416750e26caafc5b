#!/usr/bin/python3
"""Validates scenario files against docs/scenario.schema.json, as an editor would.

    validate_scenarios.py SCHEMA --valid FILE_OR_DIR... --invalid FILE_OR_DIR... --accepted DIR...

Every --valid document must pass and every --invalid one must fail (so the check itself can
fail). --accepted documents are ones the loader accepted (the fuzzer writes them): they must
pass too, except those PyYAML cannot read at all (yaml-cpp is more lenient in places, and a
document no YAML 1.2 parser reads is no editor's concern), which are counted and skipped. Documents are read as YAML 1.2 (core schema), which is what editors' YAML language
servers use: `yes` and `on` stay strings (the loader rejects them as booleans too), `1e5` is
a number. Mapping keys are kept as written (strings), as JSON has no other kind.

Uses Debian's python3-jsonschema and python3-yaml (scripts/install-deps.sh). Exit status 0
when every document is judged as expected, 1 otherwise.
"""
import json
import math
import pathlib
import re
import sys

import jsonschema
import yaml

if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)   # a 100,000-digit integer is YAML, and the loader reads it as text


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 core-schema scalars instead of YAML 1.1's."""


Yaml12Loader.yaml_implicit_resolvers = {}
CORE_TAGS = [
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", list("~nN") + [""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    ("tag:yaml.org,2002:float",
     r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     list("-+.0123456789")),
]
for tag, pattern, first in CORE_TAGS:
    Yaml12Loader.add_implicit_resolver(tag, re.compile(pattern), first)


def construct_int(loader, node):
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)


def construct_float(loader, node):
    text = loader.construct_scalar(node).lower()
    if text.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    if text == ".nan":
        return math.nan
    return float(text)


def construct_mapping(loader, node):
    # Keys as written: JSON object keys are strings, and `{X: 8}` names axis "X" whatever
    # YAML would make of it. Complex keys (the loader rejects them) become their repr.
    loader.flatten_mapping(node)   # no-op here: '<<' is a plain key without YAML 1.1's resolver
    out = {}
    for key_node, value_node in node.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else repr(loader.construct_object(key_node))
        out[key] = loader.construct_object(value_node, deep=True)
    return out


def construct_text(loader, node):
    """The scalar's text: the loader reads every scalar as text, whatever its tag says."""
    return loader.construct_scalar(node)


Yaml12Loader.add_constructor("tag:yaml.org,2002:binary", construct_text)
Yaml12Loader.add_constructor("tag:yaml.org,2002:timestamp", construct_text)
Yaml12Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
Yaml12Loader.add_constructor("tag:yaml.org,2002:float", construct_float)
Yaml12Loader.add_constructor("tag:yaml.org,2002:map", construct_mapping)


def documents(paths):
    for name in paths:
        path = pathlib.Path(name)
        if path.is_dir():
            yield from sorted(path.glob("*.yaml"))
        else:
            yield path


def dotted(parts):
    """The loader's way of naming a place: workload.operations[0].bytes."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def error_keys(error):
    """Where an error is, as dotted keys: an unexpected key is named itself, as the loader does."""
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        patterns = error.schema.get("patternProperties", {})
        extra = [k for k in error.instance if k not in known and not any(re.search(p, k) for p in patterns)]
        if extra:
            return [dotted(list(error.absolute_path) + [k]) for k in extra]
    return [dotted(error.absolute_path)]


def errors_of(validator, path):
    """(dotted key, message) for every schema error of the document at `path`."""
    try:
        text = path.read_bytes().decode("utf-8")   # no newline translation: a lone CR stays one
        # YAML 1.1 (PyYAML) breaks lines at NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR; YAML 1.2
        # (yaml-cpp, editors) reads them as ordinary characters. Read them as spaces.
        text = text.replace("\u0085", " ").replace("\u2028", " ").replace("\u2029", " ")
        # A carriage return without a line feed: a line break to PyYAML (and the YAML spec), an
        # ordinary character to yaml-cpp (a comment runs on past it to the next LF). Read it as
        # yaml-cpp does, the reader podsim runs.
        text = re.sub("\r(?!\n)", " ", text)
        document = yaml.load(text, Loader=Yaml12Loader)
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as error:
        # RecursionError: PyYAML builds nested collections recursively, and Python's limit is
        # below yaml-cpp's nesting limit; such a document is beyond this check, not wrong.
        return [("", f"not YAML: {type(error).__name__}: {error}")]
    return [(key, e.message) for e in validator.iter_errors(document) for key in error_keys(e)]


def expected_key(path):
    """An invalid document's first line names where the loader rejects it: `# rejects: KEY`."""
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    match = re.fullmatch(r"# rejects: (\S+)", first.strip())
    return match.group(1) if match else None


def at_or_above(location, key):
    """Whether an error at `location` is about `key`: the key itself or a mapping holding it
    (one of two exclusive keys, a missing one), but not the whole document for a nested key."""
    if location == key:
        return True
    if location == "":
        return "." not in key and "[" not in key
    return key.startswith(location + ".") or key.startswith(location + "[")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    schema = json.loads(pathlib.Path(argv[1]).read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    group, groups = "--valid", {"--valid": [], "--invalid": [], "--accepted": []}
    for arg in argv[2:]:
        if arg in groups:
            group = arg
        else:
            groups[group].append(arg)
    failures, counted, unreadable = 0, {True: 0, False: 0}, 0
    for group, paths in groups.items():
        expected = group != "--invalid"
        for path in documents(paths):
            errors = errors_of(validator, path)
            if group == "--accepted" and errors and errors[0][1].startswith("not YAML"):
                unreadable += 1
                continue
            counted[expected] += 1
            key = None if expected else expected_key(path)
            if expected and errors:
                failures += 1
                print(f"FAIL {path}: the schema rejects a document it should accept:")
                for where, message in errors:
                    print(f"    {where or '(top)'}: {message}")
            elif not expected and not errors:
                failures += 1
                print(f"FAIL {path}: the schema accepts a document it should reject")
            elif not expected and key is None:
                failures += 1
                print(f"FAIL {path}: an invalid document must start with '# rejects: KEY' (where the loader rejects it)")
            elif not expected and not any(at_or_above(where, key) for where, _ in errors):
                failures += 1
                print(f"FAIL {path}: rejected, but not at {key}:")
                for where, message in errors:
                    print(f"    {where or '(top)'}: {message}")
            else:
                about = [m for where, m in errors if key and at_or_above(where, key)]
                print(f"ok   {path}" + (f" (at {key}: {about[0][:100]})" if about else ""))
    if counted[True] + counted[False] == 0:
        print("FAIL: no documents given")
        return 1
    skipped = f" ({unreadable} accepted documents skipped: not YAML to PyYAML)" if unreadable else ""
    print(f"{counted[True]} valid and {counted[False]} invalid documents, {failures} judged wrongly{skipped}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
