#!/usr/bin/python3
"""Differential oracle for structured_json_schema_test (JsonSchemaDifferential).

Reads the cases file (a JSON array of {"schema", "instances", "subset_only"?}), expands every
instance into candidates by mutation (each key dropped, an extra key appended, every value replaced
by a few others, array elements dropped or appended), and prints one JSON array of
{"case": i, "compact": text, "pretty": text, "valid": bool, "kind": "candidate"|"subset_only"}
with the verdict of python3-jsonschema (Draft 2020-12, formats asserted).

Key order is kept (the grammar writes properties in schema order). enum/const compare with JSON
equality (true is not 1 at any depth; jsonschema 4.10 gets nested values wrong). The "date-time" and "time"
formats need rfc3339-validator, which Debian does not package: they are checked here with RFC 3339's
grammar plus the calendar, independently of the C++ regexes.

Exit status 3 with a message on stderr when jsonschema is missing.
"""
import datetime
import json
import re
import sys

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:
    sys.stderr.write("python3-jsonschema is not installed (scripts/install-deps.sh test)\n")
    sys.exit(3)

FORMAT_CHECKER = jsonschema.FormatChecker(
    formats=[f for f in Draft202012Validator.FORMAT_CHECKER.checkers])

_TIME = r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))"


def _time_ok(m, offset):
    hour, minute, second = int(m.group(offset)), int(m.group(offset + 1)), int(m.group(offset + 2))
    if hour > 23 or minute > 59 or second > 60:
        return False
    if m.group(offset + 5) is not None:
        if int(m.group(offset + 5)) > 23 or int(m.group(offset + 6)) > 59:
            return False
    return True


@FORMAT_CHECKER.checks("date-time")
def _is_date_time(instance):
    if not isinstance(instance, str):
        return True
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})[Tt]" + _TIME, instance, flags=re.ASCII)
    if not m:
        return False
    try:
        datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return False
    return _time_ok(m, 4)


@FORMAT_CHECKER.checks("time")
def _is_time(instance):
    if not isinstance(instance, str):
        return True
    m = re.fullmatch(_TIME, instance, flags=re.ASCII)
    return bool(m) and _time_ok(m, 1)


def _strict_equal(a, b):
    """JSON equality: true is not 1, also inside arrays and objects (jsonschema 4.10 compares
    nested values with Python's ==, where True == 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_strict_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
        return False
    return a == b


def _enum(validator, enums, instance, schema):
    if not any(_strict_equal(instance, e) for e in enums):
        yield jsonschema.ValidationError(f"{instance!r} is not one of {enums!r}")


def _const(validator, const, instance, schema):
    if not _strict_equal(instance, const):
        yield jsonschema.ValidationError(f"{const!r} was expected")


Validator = jsonschema.validators.extend(Draft202012Validator, {"enum": _enum, "const": _const})

REPLACEMENTS = [None, True, 0, -1, 7, 1.5, "", "x", [], {}]
MAX_CANDIDATES_PER_CASE = 160


def mutations(value):
    """Yields mutated copies of value (key order kept)."""
    yield value
    if isinstance(value, dict):
        keys = list(value)
        for k in keys:
            yield {kk: vv for kk, vv in value.items() if kk != k}
        extra = dict(value)
        extra["zz_extra"] = 1
        yield extra
        for k in keys:
            for sub in mutations(value[k]):
                copy = dict(value)
                copy[k] = sub
                yield copy
    elif isinstance(value, list):
        for i in range(len(value)):
            yield value[:i] + value[i + 1:]
        if value:
            yield value + [value[-1]]
        yield value + [None]
        for i in range(len(value)):
            for sub in mutations(value[i]):
                yield value[:i] + [sub] + value[i + 1:]
    for r in REPLACEMENTS:
        yield r


def compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    out = []
    for i, case in enumerate(cases):
        validator = Validator(case["schema"], format_checker=FORMAT_CHECKER)
        seen = set()
        candidates = []
        for instance in case["instances"]:
            for m in mutations(instance):
                text = compact(m)
                if text not in seen:
                    seen.add(text)
                    candidates.append(m)
        if len(candidates) > MAX_CANDIDATES_PER_CASE:
            # The given instances first, then an even sample of the mutations.
            head = len(case["instances"])
            rest = candidates[head:]
            step = len(rest) / (MAX_CANDIDATES_PER_CASE - head)
            candidates = candidates[:head] + [rest[int(k * step)] for k in
                                              range(MAX_CANDIDATES_PER_CASE - head)]
        for m in candidates:
            out.append({"case": i, "compact": compact(m),
                        "pretty": json.dumps(m, indent=2, ensure_ascii=False),
                        "valid": validator.is_valid(m), "kind": "candidate"})
        for m in case.get("subset_only", []):
            out.append({"case": i, "compact": compact(m),
                        "pretty": json.dumps(m, indent=2, ensure_ascii=False),
                        "valid": validator.is_valid(m), "kind": "subset_only"})
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
