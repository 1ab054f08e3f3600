# A warm worker for promptfoo `python:` providers: announces the persistent protocol, then
# reads one request per line ({id, payload: {file, function, prompt, options, context}}),
# calls the module's function as promptfoo does (call_api(prompt, options, context)) and
# answers {id, result} with {value} (what it returned) or {threw}.
import asyncio
import importlib.util
import json
import os
import sys

modules = {}


def function(path, name):
    module = modules.get(path)
    if module is None:
        directory = os.path.dirname(path)
        if directory not in sys.path:
            sys.path.insert(0, directory)
        spec = importlib.util.spec_from_file_location("provider_%d" % len(modules), path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules[path] = module
    found = getattr(module, name, None)
    if not callable(found):
        raise AttributeError("%s has no function %s" % (path, name))
    return found


def run(payload):
    call = function(payload["file"], payload.get("function") or "call_api")
    value = call(payload["prompt"], payload["options"], payload["context"])
    if asyncio.iscoroutine(value):
        value = asyncio.run(value)
    json.dumps(value)
    return {"value": value}
