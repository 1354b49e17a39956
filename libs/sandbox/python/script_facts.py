"""Facts about a user's Python script, from its syntax tree only: nothing in it is executed or imported.

Reads the script on stdin and prints one JSON object. One checker serves every kind of script (taps,
CodeGen data-quality and transformation scripts): each caller decides from the same facts whether a
script meets its own contract, so a way of hiding a call or an import is found once, for all of them.
"""
import ast
import json
import sys

# Calls that run code or import modules the checks cannot see.
DYNAMIC_CODE = {"exec", "eval", "compile", "__import__", "importlib.import_module"}
# Builtins that reach outside the values a script is given (CodeGen scripts may use none of them).
RISKY = {name for name in DYNAMIC_CODE if "." not in name} | {
    "open", "input", "breakpoint", "globals", "vars", "setattr", "delattr", "getattr",
    "__builtins__", "__loader__", "__spec__",
}
# Dunder attributes that name nothing an escape needs.
HARMLESS_DUNDER = {"__name__", "__doc__"}

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


def calls_one_of(name, names):
    """`name` (a call's dotted name) is one of `names`, or reaches one through the builtins module."""
    if name in names:
        return True
    return name.startswith(("builtins.", "__builtins__.")) and name.rsplit(".", 1)[-1] in names


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


def signature(node):
    a = node.args
    return {
        "async": isinstance(node, ast.AsyncFunctionDef),
        "args": [x.arg for x in a.posonlyargs + a.args],
        "kwonly": [x.arg for x in a.kwonlyargs],
        "vararg": a.vararg is not None,
        "kwarg": a.kwarg is not None,
        "defaults": len(a.defaults),
    }


def output_columns(node):
    """OUTPUT_COLUMNS = {...}: ([[name, type], ...], None), or (None, the problem)."""
    try:
        value = ast.literal_eval(node.value)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return None, "OUTPUT_COLUMNS is not a literal dict"
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return None, "OUTPUT_COLUMNS must map column names (str) to type names (str)"
    return [[k, v] for k, v in value.items()], None


def facts(source):
    try:
        tree = ast.parse(source, filename="script.py")
    except SyntaxError as e:
        return {"syntaxError": f"line {e.lineno}: {e.msg}"}
    except (ValueError, RecursionError, MemoryError) as e:
        return {"syntaxError": f"the script cannot be parsed: {type(e).__name__}"}

    functions = {}
    columns, columns_problem = None, None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions[node.name] = signature(node)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "OUTPUT_COLUMNS" for t in node.targets):
            found, problem = output_columns(node)
            if problem:
                columns_problem = problem
            else:
                columns = found

    modules, env_reads, dynamic_code, risky, dunder = set(), set(), set(), set(), set()
    relative_imports = False
    dynamic_env = False
    raise_for_status = 0
    retry_names = set()
    env_aliases = {"os.environ"}
    getenv_aliases = {"os.getenv", "os.environ.get"}

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                modules.add(a.name)
                if a.name in RETRY_MODULES:
                    retry_names.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                relative_imports = True
            elif node.module:
                modules.add(node.module)
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
        elif isinstance(node, ast.Name):
            if any(w in node.id.lower() for w in RETRY_WORDS):
                retry_names.add(node.id)
            # A builtin named without being called (`run = eval`) is called later under another name.
            if isinstance(node.ctx, ast.Load):
                if node.id in DYNAMIC_CODE:
                    dynamic_code.add(node.id)
                if node.id in RISKY:
                    risky.add(node.id)
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
            if calls_one_of(name, DYNAMIC_CODE):
                dynamic_code.add(name)
            if calls_one_of(name, RISKY | DYNAMIC_CODE):
                risky.add(name)
            last = name.rsplit(".", 1)[-1].lower()
            if any(w in last for w in RETRY_WORDS):
                retry_names.add(last)
            for kw in node.keywords:
                if kw.arg and any(w in kw.arg.lower() for w in RETRY_WORDS):
                    retry_names.add(kw.arg)
        elif isinstance(node, ast.Attribute):
            if any(w in node.attr.lower() for w in RETRY_WORDS):
                retry_names.add(node.attr)
            # Dunder attributes (__class__, __subclasses__, __globals__) are how sandboxed Python escapes its names.
            if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in HARMLESS_DUNDER:
                dunder.add(node.attr)

    imports = {m.split(".")[0] for m in modules}
    stdlib = set(sys.stdlib_module_names)
    return {
        "syntaxError": None,
        "functions": functions,
        "modules": sorted(modules),
        "imports": sorted(imports),
        "thirdParty": sorted(i for i in imports if i not in stdlib and i != "__future__"),
        "relativeImports": relative_imports,
        "dynamicCode": sorted(dynamic_code),
        "risky": sorted(risky),
        "dunder": sorted(dunder),
        "outputColumns": columns,
        "outputProblem": columns_problem,
        "envReads": sorted(env_reads),
        "dynamicEnv": dynamic_env,
        "raiseForStatus": raise_for_status,
        "retry": bool(retry_names) or sleeps_to_retry(tree),
        "retryNames": sorted(retry_names)[:20],
    }


if __name__ == "__main__":
    sys.setrecursionlimit(3000)
    print(json.dumps(facts(sys.stdin.read())))
