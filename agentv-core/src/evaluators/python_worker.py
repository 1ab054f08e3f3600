# A warm worker for promptfoo `python` assertions: announces the persistent protocol, then
# reads one request per line ({id, payload: {code, output, context}}) and answers
# {id, result} with {value} (what the function returned) or {threw}.
import importlib.util
import json
import sys

compiled = {}
modules = {}


def function(code):
    if "file" in code:
        path = code["file"]
        module = modules.get(path)
        if module is None:
            spec = importlib.util.spec_from_file_location("assertion_%d" % len(modules), path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            modules[path] = module
        return getattr(module, code.get("function") or "get_assert")
    source = code["script"]
    namespace = compiled.get(source)
    if namespace is None:
        namespace = {}
        exec(compile(source, "<assertion>", "exec"), namespace)
        compiled[source] = namespace
    return namespace["main"]


def run(payload):
    value = function(payload["code"])(payload["output"], payload["context"])
    json.dumps(value)
    return {"value": value}
