"""The type stubs (memdir/_memdir.pyi) describe the native module as it is: every
class, function and constant the module exports has a stub and every stub names
something that exists, method by method and parameter by parameter."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import memdir
from memdir import _memdir

STUB = Path(memdir.__file__).with_name("_memdir.pyi")


def stub_tree() -> dict[str, dict[str, list[str] | None]]:
    """Top-level names of the stub → for a class, its members → parameter names
    (None for a property or an attribute)."""
    out: dict[str, dict[str, list[str] | None]] = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.ClassDef):
            members: dict[str, list[str] | None] = {}
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    is_property = any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list)
                    a = item.args
                    params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg != "self"]
                    members[item.name] = None if is_property else params
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members[item.target.id] = None
            out[node.name] = members
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = {}
    return out


def test_the_stub_names_every_export_and_nothing_else() -> None:
    exported = {n for n in dir(_memdir) if not n.startswith("_")}
    assert set(stub_tree()) == exported


def test_stub_methods_and_parameters_match_the_module() -> None:
    for cls_name, members in stub_tree().items():
        runtime = getattr(_memdir, cls_name)
        if not inspect.isclass(runtime) or issubclass(runtime, BaseException):
            continue
        public = {n for n in dir(runtime) if not n.startswith("_")}
        stubbed = {n for n in members if not n.startswith("_")}
        assert stubbed == public, cls_name
        for name, params in members.items():
            if params is None or name == "__init__":
                continue
            sig = inspect.signature(getattr(runtime, name))
            assert [p for p in sig.parameters if p != "self"] == params, f"{cls_name}.{name}"
    init = inspect.signature(_memdir.Memory)
    assert list(init.parameters) == stub_tree()["Memory"]["__init__"]
