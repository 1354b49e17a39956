"""Facts about a tap script, from its syntax tree only: nothing in it is executed or imported.

Reads the script on stdin and prints one JSON object. The platform decides from these facts whether
a generated script may be stored, and whether an optimised script kept what the original promised.
"""
import ast
import json
import sys

RETRY_WORDS = ("retry", "retries", "backoff", "back_off")
RETRY_MODULES = {"tenacity", "backoff", "retrying", "urllib3.util.retry", "requests.adapters"}


def dotted(node):
    """`os.environ.get` for an attribute chain of names, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def literal(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def is_sleep(node):
    return isinstance(node, ast.Call) and (dotted(node.func) or "") in ("time.sleep", "sleep", "asyncio.sleep")


def status_check(node):
    """A comparison with an HTTP status: `r.status_code == 429`, `status >= 500`."""
    if not isinstance(node, ast.Compare):
        return False
    for part in [node.left, *node.comparators]:
        if isinstance(part, ast.Attribute) and part.attr in ("status_code", "status"):
            return True
        if isinstance(part, ast.Constant) and isinstance(part.value, int) and (part.value == 429 or 500 <= part.value <= 599):
            return True
    return False


def sleeps_to_retry(tree):
    """A sleep that waits before trying again: in an except handler, or in a loop that continues or checks a status."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler):
            if any(is_sleep(n) for n in ast.walk(node)):
                return True
        elif isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            inside = list(ast.walk(node))
            if any(is_sleep(n) for n in inside) and any(isinstance(n, ast.Continue) or status_check(n) for n in inside):
                return True
    return False


def facts(source):
    try:
        tree = ast.parse(source, filename="tap.py")
    except SyntaxError as e:
        return {"syntaxError": f"line {e.lineno}: {e.msg}"}
    except (ValueError, RecursionError, MemoryError) as e:
        return {"syntaxError": f"the script cannot be parsed: {type(e).__name__}"}

    imports, env_reads = set(), set()
    relative_imports = False
    dynamic_env = False
    dynamic_imports = []
    raise_for_status = 0
    retry_names = set()
    fetch = None
    env_aliases = {"os.environ"}
    getenv_aliases = {"os.getenv", "os.environ.get"}

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                imports.add(a.name.split(".")[0])
                if a.name in RETRY_MODULES:
                    retry_names.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                relative_imports = True
            elif node.module:
                imports.add(node.module.split(".")[0])
                if node.module in RETRY_MODULES or node.module.split(".")[0] in RETRY_MODULES:
                    retry_names.add(node.module)
                for a in node.names:
                    if node.module == "os" and a.name == "environ":
                        env_aliases.add(a.asname or "environ")
                        getenv_aliases.add((a.asname or "environ") + ".get")
                    if node.module == "os" and a.name == "getenv":
                        getenv_aliases.add(a.asname or "getenv")
                    if any(w in a.name.lower() for w in RETRY_WORDS):
                        retry_names.add(a.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(w in node.name.lower() for w in RETRY_WORDS):
                retry_names.add(node.name)
            if node.name == "fetch" and node in tree.body:
                a = node.args
                fetch = {
                    "async": isinstance(node, ast.AsyncFunctionDef),
                    "args": [x.arg for x in a.posonlyargs + a.args],
                    "kwonly": [x.arg for x in a.kwonlyargs],
                    "vararg": a.vararg is not None,
                    "kwarg": a.kwarg is not None,
                    "defaults": len(a.defaults),
                }
        elif isinstance(node, ast.Name):
            if any(w in node.id.lower() for w in RETRY_WORDS):
                retry_names.add(node.id)
        elif isinstance(node, ast.Subscript):
            if dotted(node.value) in env_aliases:
                key = literal(node.slice)
                if key is None:
                    dynamic_env = True
                else:
                    env_reads.add(key)
        elif isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            if name in getenv_aliases:
                key = literal(node.args[0]) if node.args else None
                if key is None:
                    dynamic_env = True
                else:
                    env_reads.add(key)
            if name.endswith("raise_for_status"):
                raise_for_status += 1
            if name in ("__import__", "importlib.import_module", "exec", "eval", "compile"):
                dynamic_imports.append(name)
            last = name.rsplit(".", 1)[-1].lower()
            if any(w in last for w in RETRY_WORDS):
                retry_names.add(last)
            for kw in node.keywords:
                if kw.arg and any(w in kw.arg.lower() for w in RETRY_WORDS):
                    retry_names.add(kw.arg)
        elif isinstance(node, ast.Attribute):
            if any(w in node.attr.lower() for w in RETRY_WORDS):
                retry_names.add(node.attr)

    stdlib = set(sys.stdlib_module_names)
    return {
        "syntaxError": None,
        "fetch": fetch,
        "imports": sorted(imports),
        "thirdParty": sorted(i for i in imports if i not in stdlib and i != "__future__"),
        "relativeImports": relative_imports,
        "dynamicCode": sorted(set(dynamic_imports)),
        "envReads": sorted(env_reads),
        "dynamicEnv": dynamic_env,
        "raiseForStatus": raise_for_status,
        "retry": bool(retry_names) or sleeps_to_retry(tree),
        "retryNames": sorted(retry_names)[:20],
    }


if __name__ == "__main__":
    sys.setrecursionlimit(3000)
    print(json.dumps(facts(sys.stdin.read())))
