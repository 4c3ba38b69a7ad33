#!/usr/bin/env python3
"""Checks one HTTP response of the agentjail API against docs/openapi.json.

    openapi_check.py [--spec FILE] METHOD PATH STATUS CONTENT_TYPE BODY_FILE

PATH is the request path as sent (query string allowed); it is matched against the document's
path templates. The response for STATUS must be documented for that operation; its body must
be of a documented media type and, for JSON (and each line of NDJSON), match the schema.
Exit 0 if it does; otherwise 1 with the reason on stdout. Python standard library only: the
validator implements the JSON Schema keywords the document uses.
"""
import json
import re
import sys
from urllib.parse import urlsplit

SUPPORTED = {"type", "properties", "required", "additionalProperties", "items", "enum", "const",
             "oneOf", "anyOf", "$ref", "minimum", "maximum", "minLength", "maxLength",
             "pattern", "format", "description", "default"}


class Invalid(Exception):
    pass


def json_type(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def type_ok(v, want):
    t = json_type(v)
    return t == want or (want == "number" and t == "integer")


DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


class Validator:
    def __init__(self, spec):
        self.spec = spec

    def resolve(self, ref):
        node = self.spec
        for part in ref.lstrip("#/").split("/"):
            node = node[part]
        return node

    def check(self, v, s, where):
        unknown = set(s) - SUPPORTED
        if unknown:
            raise Invalid(f"{where}: the checker does not know {sorted(unknown)}")
        if "$ref" in s:
            self.check(v, self.resolve(s["$ref"]), where)
        if "type" in s:
            types = s["type"] if isinstance(s["type"], list) else [s["type"]]
            if not any(type_ok(v, t) for t in types):
                raise Invalid(f"{where}: expected {'/'.join(types)}, got {json_type(v)} {json.dumps(v)[:80]}")
        if "const" in s and v != s["const"]:
            raise Invalid(f"{where}: expected {json.dumps(s['const'])}, got {json.dumps(v)[:80]}")
        if "enum" in s and v not in s["enum"]:
            raise Invalid(f"{where}: {json.dumps(v)[:80]} is not one of {s['enum']}")
        self.check_number(v, s, where)
        self.check_string(v, s, where)
        if isinstance(v, list) and "items" in s:
            for i, item in enumerate(v):
                self.check(item, s["items"], f"{where}[{i}]")
        if isinstance(v, dict):
            self.check_object(v, s, where)
        for key in ("oneOf", "anyOf"):
            if key in s:
                self.check_alternatives(v, s[key], key, where)

    def check_number(self, v, s, where):
        if json_type(v) not in ("integer", "number"):
            return
        if "minimum" in s and v < s["minimum"]:
            raise Invalid(f"{where}: {v} < minimum {s['minimum']}")
        if "maximum" in s and v > s["maximum"]:
            raise Invalid(f"{where}: {v} > maximum {s['maximum']}")

    def check_string(self, v, s, where):
        if not isinstance(v, str):
            return
        if "minLength" in s and len(v) < s["minLength"]:
            raise Invalid(f"{where}: shorter than {s['minLength']}")
        if "maxLength" in s and len(v) > s["maxLength"]:
            raise Invalid(f"{where}: longer than {s['maxLength']}")
        if "pattern" in s and not re.search(s["pattern"], v):
            raise Invalid(f"{where}: {v!r} does not match {s['pattern']}")
        if s.get("format") == "date-time" and not DATE_TIME.match(v):
            raise Invalid(f"{where}: {v!r} is not a date-time")

    def check_object(self, v, s, where):
        props = s.get("properties", {})
        for k in s.get("required", []):
            if k not in v:
                raise Invalid(f"{where}: missing required field {k!r}")
        for k, item in v.items():
            if k in props:
                self.check(item, props[k], f"{where}.{k}")
            elif s.get("additionalProperties") is False:
                raise Invalid(f"{where}: field {k!r} is not documented")
            elif isinstance(s.get("additionalProperties"), dict):
                self.check(item, s["additionalProperties"], f"{where}.{k}")

    def check_alternatives(self, v, alts, key, where):
        passed, reasons = 0, []
        for a in alts:
            try:
                self.check(v, a, where)
                passed += 1
            except Invalid as e:
                reasons.append(str(e))
        if passed == 0 or (key == "oneOf" and passed > 1):
            raise Invalid(f"{where}: {key} matched {passed} alternatives ({'; '.join(reasons)})")


def find_operation(spec, method, path):
    """The operation for METHOD on the concrete PATH, by template."""
    for template, item in spec["paths"].items():
        rx = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(rx, path):
            op = item.get(method.lower())
            if op is None:
                return None, template
            return op, template
    return None, None


def check(spec, method, path, status, ctype, body):
    path = urlsplit(path).path
    op, template = find_operation(spec, method, path)
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    if template is None:
        if status != 404:
            raise Invalid(f"{path}: no documented path, answered {status}, not 404")
        return check_body(spec, error, ctype, body, f"{method} {path} 404")
    if op is None:
        if status != 405:
            raise Invalid(f"{method} {template}: not documented, answered {status}, not 405")
        return check_body(spec, error, ctype, body, f"{method} {template} 405")
    resp = op["responses"].get(str(status)) or op["responses"].get("default")
    if resp is None:
        raise Invalid(f"{method} {template}: status {status} is not documented")
    return check_body(spec, resp, ctype, body, f"{method} {template} {status}")


def check_body(spec, resp, ctype, body, what):
    content = resp.get("content")
    if not content:
        if body.strip():
            raise Invalid(f"{what}: documented without a body, got {body[:80]!r}")
        return
    media = (ctype or "").split(";")[0].strip().lower()
    if media not in content:
        raise Invalid(f"{what}: Content-Type {media or 'none'} is not one of {sorted(content)}")
    schema = content[media].get("schema", {})
    v = Validator(spec)
    if media == "application/json":
        v.check(parse(body, what), schema, "body")
    elif media == "application/x-ndjson":
        for n, line in enumerate(body.splitlines(), 1):
            v.check(parse(line, what), schema, f"line {n}")


def parse(text, what):
    try:
        return json.loads(text)
    except ValueError as e:
        raise Invalid(f"{what}: not JSON ({e}): {text[:80]!r}")


def main(argv):
    spec_file = None
    if len(argv) > 2 and argv[1] == "--spec":
        spec_file, argv = argv[2], [argv[0]] + argv[3:]
    if len(argv) != 6:
        print(__doc__)
        return 2
    method, path, status, ctype, body_file = argv[1:]
    if spec_file is None:
        import os
        spec_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../docs/openapi.json")
    with open(spec_file) as f:
        spec = json.load(f)
    with open(body_file, encoding="utf-8", errors="replace") as f:
        body = f.read()
    try:
        check(spec, method, path, int(status), ctype, body)
    except Invalid as e:
        print(e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
