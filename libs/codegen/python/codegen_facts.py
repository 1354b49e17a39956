"""Facts about a CodeGen script, from its syntax tree only: nothing in it is executed or imported.

Reads the script on stdin and prints one JSON object. The platform decides from these facts whether
a generated data-quality or transformation script meets the script contract.
"""
import ast
import json
import sys

# Builtins that reach outside the values a script is given, or run code the checks cannot see.
RISKY_CALLS = {"exec", "eval", "compile", "__import__", "open", "input", "breakpoint", "globals", "vars", "setattr", "delattr", "getattr", "__builtins__", "__loader__", "__spec__"}


def dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def facts(source):
    try:
        tree = ast.parse(source, filename="script.py")
    except SyntaxError as e:
        return {"syntaxError": "line %s: %s" % (e.lineno, e.msg)}
    except (ValueError, RecursionError, MemoryError) as e:
        return {"syntaxError": "the script cannot be parsed: %s" % type(e).__name__}

    imports, risky, dunder = set(), set(), set()
    relative = False
    functions = {}
    output_columns = None
    output_problem = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            functions[node.name] = {
                "async": isinstance(node, ast.AsyncFunctionDef),
                "positional": len(a.posonlyargs + a.args),
                "required": len(a.posonlyargs + a.args) - len(a.defaults),
                "vararg": a.vararg is not None,
            }
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "OUTPUT_COLUMNS" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
                output_problem = "OUTPUT_COLUMNS is not a literal dict"
                continue
            if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
                output_problem = "OUTPUT_COLUMNS must map column names (str) to type names (str)"
            else:
                output_columns = [[k, v] for k, v in value.items()]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                imports.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                relative = True
            elif node.module:
                imports.add(node.module)
        elif isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            if name.rsplit(".", 1)[-1] in RISKY_CALLS and (name in RISKY_CALLS or name.startswith("builtins.")):
                risky.add(name)
        elif isinstance(node, ast.Name) and node.id in RISKY_CALLS and isinstance(node.ctx, ast.Load):
            risky.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr.endswith("__"):
            # Dunder attributes (__class__, __subclasses__, __globals__) are how sandboxed Python escapes its names.
            if node.attr not in ("__name__", "__doc__"):
                dunder.add(node.attr)
    return {
        "syntaxError": None,
        "functions": functions,
        "imports": sorted(imports),
        "relativeImports": relative,
        "risky": sorted(risky),
        "dunder": sorted(dunder),
        "outputColumns": output_columns,
        "outputProblem": output_problem,
    }


if __name__ == "__main__":
    sys.setrecursionlimit(3000)
    print(json.dumps(facts(sys.stdin.read())))
