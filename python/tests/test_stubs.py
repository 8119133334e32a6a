"""The typed stubs (resim/__init__.pyi) describe the package as it is: every public name, class
member and parameter of the implementation is in them with the same parameters, and each has
a docstring."""

import ast
import inspect
import pathlib

import resim

STUBS = pathlib.Path(resim.__file__).with_name("__init__.pyi")


def stubbed():
    """Each function and class of the stubs: {name: node}."""
    tree = ast.parse(STUBS.read_text())
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def parameters(node):
    return [a.arg for a in node.args.args]


def public(cls):
    return {n for n in vars(cls) if not n.startswith("__")}


def test_every_public_name_is_stubbed_with_its_parameters_and_a_docstring():
    stubs = stubbed()
    for name in resim.__all__:
        if name == "ScenarioError":
            assert ast.get_docstring(stubs[name])
            continue
        obj = getattr(resim, name)
        node = stubs[name]
        assert ast.get_docstring(node), name
        if inspect.isfunction(obj):
            assert parameters(node) == list(inspect.signature(obj).parameters), name
            continue
        members = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
        assert set(members) == public(obj), name
        for member, stub in members.items():
            assert ast.get_docstring(stub), f"{name}.{member}"
            implementation = inspect.getattr_static(obj, member)
            if inspect.isfunction(implementation):
                assert parameters(stub) == list(inspect.signature(implementation).parameters), member


def test_the_exception_has_its_attributes():
    node = stubbed()["ScenarioError"]
    fields = {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
    assert fields == {"message", "file", "line", "column", "path"}
