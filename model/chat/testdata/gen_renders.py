#!/usr/bin/env python3
"""Development-time generator of the reference renders (not run by tests).

Renders every case of cases.json (plus go-cases.json, written by
`go test ./model/chat -update`) with the official template through Python's
jinja2, set up the way HF transformers' apply_chat_template sets it up:
a sandboxed environment with trim_blocks, lstrip_blocks and loop controls,
`tojson` = json.dumps(ensure_ascii=False) with default separators and key
order kept, `raise_exception`, and the template variables messages, tools,
add_generation_prompt (default true here) and enable_thinking (only when the
case sets it). Tool-call arguments given as JSON strings are parsed first, as
HF callers must do. Writes renders.json: {name: {"text": ...} | {"error": ...}}.

    python3 model/chat/testdata/gen_renders.py
"""
import json
import os

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def main():
    with open(os.path.join(HERE, "..", "spark2.5-chat-template.jinja"), encoding="utf-8") as f:
        source = f.read()
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(source)

    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as f:
        cases = json.load(f)
    go_cases = os.path.join(HERE, "go-cases.json")
    if os.path.exists(go_cases):
        with open(go_cases, encoding="utf-8") as f:
            cases += json.load(f)
    with open(os.path.join(HERE, "droidgo-tools.json"), encoding="utf-8") as f:
        droidgo_tools = json.load(f)

    out = {}
    for case in cases:
        tools = case.get("tools")
        if tools == "droidgo":
            tools = droidgo_tools
        messages = case["messages"]
        for m in messages:
            for call in m.get("tool_calls") or []:
                args = call["function"].get("arguments")
                if isinstance(args, str):
                    call["function"]["arguments"] = json.loads(args)
        kwargs = {}
        if "enable_thinking" in case:
            kwargs["enable_thinking"] = case["enable_thinking"]
        try:
            text = template.render(messages=messages, tools=tools, documents=None,
                                   add_generation_prompt=case.get("add_generation_prompt", True), **kwargs)
            out[case["name"]] = {"text": text}
        except Exception as e:  # the template's raise_exception and Python type errors
            out[case["name"]] = {"error": f"{type(e).__name__}: {e}"}
    with open(os.path.join(HERE, "renders.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(out)} renders, {sum('error' in v for v in out.values())} errors")


if __name__ == "__main__":
    main()
