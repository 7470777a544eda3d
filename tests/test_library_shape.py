"""The library stays readable in one sitting: no function over 60 lines (as formatted, from
its def line to its last line, docstring included) and the model file within 380 lines."""

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "src" / "seqtheory"
MAX_FUNCTION_LINES = 60
MAX_MODEL_LINES = 380


def test_no_library_function_is_over_60_lines():
    long = []
    for path in sorted(LIBRARY.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = node.end_lineno - first + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(LIBRARY)}:{node.lineno} {node.name} ({lines})")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_model_file_reads_in_one_sitting():
    lines = len((LIBRARY / "core" / "models.py").read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODEL_LINES, f"core/models.py has {lines} lines"
