#!/usr/bin/python3
"""Reference renderer for the chat-template tests: python3-jinja2 configured exactly as
Hugging Face transformers configures it (utils/chat_template_utils.py, _compile_jinja_template):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols,
generation tracker]), the tojson override (json.dumps, ensure_ascii=False), raise_exception and
strftime_now.

Usage: oracle.py IN.json OUT.json
IN is a JSON array of cases {"template": str, "context": {...}, "now": optional unix seconds,
"timeout": optional seconds (then a slow render reports kind "timeout")}.
The context holds every template variable (messages, tools, add_generation_prompt, ...), loaded
with insertion order preserved. OUT is a JSON array, one entry per case:
  {"ok": true, "output": str}
  {"ok": false, "kind": "syntax" | "raise" | "error" | "timeout", "message": str}
"""
import json
import signal
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class RaisedByTemplate(jinja2.exceptions.TemplateError):
    pass


class Timeout(BaseException):
    pass


def on_alarm(signum, frame):
    raise Timeout()


class GenerationTag(jinja2.ext.Extension):
    # transformers' AssistantTracker: {% generation %}...{% endgeneration %} renders its body.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env(now):
    def raise_exception(message):
        raise RaisedByTemplate(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        when = datetime.now() if now is None else datetime.fromtimestamp(now)
        return when.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(case):
    env = make_env(case.get("now"))
    try:
        template = env.from_string(case["template"])
    except jinja2.exceptions.TemplateSyntaxError as e:
        return {"ok": False, "kind": "syntax", "message": str(e.message), "line": e.lineno}
    except Exception as e:  # noqa: BLE001 - any compile failure counts as a syntax error
        return {"ok": False, "kind": "syntax", "message": f"{type(e).__name__}: {e}"}
    timeout = case.get("timeout")
    if timeout:
        signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(int(timeout))
    try:
        return {"ok": True, "output": template.render(**case.get("context", {}))}
    except Timeout:
        return {"ok": False, "kind": "timeout", "message": "timeout"}
    except RaisedByTemplate as e:
        return {"ok": False, "kind": "raise", "message": str(e.message)}
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "kind": "error", "message": f"{type(e).__name__}: {e}"}
    finally:
        if timeout:
            signal.alarm(0)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    results = [render(c) for c in cases]
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
