"""The public surface of the native module ``stiction._stiction``: every public class,
function, method and property has a docstring, and a stub in ``_stiction.pyi``; the
stub file names nothing the module lacks."""

import ast
import inspect
from pathlib import Path

import pytest

import stiction
from stiction import _stiction

STUB = Path(stiction.__file__).with_name("_stiction.pyi")
# Dunder methods with behaviour worth typing (len(), [], in, bool()); the others
# (__repr__, __eq__, pickling) are Python's own protocol and need no stub.
TYPED_DUNDERS = {"__len__", "__getitem__", "__contains__", "__bool__", "__iter__", "__call__"}


def _stubs():
    """``{name: set of member names}`` for classes, ``{name: None}`` for functions and
    module-level names of the stub file."""
    tree = ast.parse(STUB.read_text(), filename=str(STUB))
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    members.update(t.id for t in item.targets if isinstance(t, ast.Name))
            out[node.name] = members
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = None
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = None
    return out


STUBS = _stubs()
# Aliases the stub file defines for its annotations only.
STUB_ONLY = {"ArrayLike", "Vector", "Matrix", "PathLike", "ContactArg", "WorldCosts"}


def _public_names():
    return sorted(n for n in dir(_stiction) if not n.startswith("_"))


def _members(cls):
    """Public members defined by the class itself (methods, static methods, properties)
    and its typed dunders."""
    return sorted(n for n in vars(cls) if not n.startswith("_") or n in TYPED_DUNDERS)


def test_every_public_name_has_docstring():
    missing = []
    for name in _public_names():
        obj = getattr(_stiction, name)
        if isinstance(obj, str):  # __version__-like constants
            continue
        if not (inspect.getdoc(obj) or "").strip():
            missing.append(name)
        if inspect.isclass(obj):
            for member in _members(obj):
                if member.startswith("__"):
                    continue
                doc = getattr(vars(obj)[member], "__doc__", None)
                if not (doc or "").strip():
                    missing.append(f"{name}.{member}")
    assert not missing, f"public names without a docstring: {missing}"


def test_every_public_name_has_stub():
    missing = []
    for name in _public_names():
        if name not in STUBS:
            missing.append(name)
            continue
        obj = getattr(_stiction, name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for member in _members(obj):
                if member not in (STUBS[name] or set()):
                    missing.append(f"{name}.{member}")
    assert not missing, f"public names missing from {STUB.name}: {missing}"


def test_stubs_name_nothing_missing():
    stale = []
    for name, members in STUBS.items():
        if name in STUB_ONLY:
            continue
        if not hasattr(_stiction, name):
            stale.append(name)
            continue
        for member in members or ():
            if member.startswith("__") and member not in TYPED_DUNDERS | {"__init__", "__eq__"}:
                continue
            if not hasattr(getattr(_stiction, name), member):
                stale.append(f"{name}.{member}")
    assert not stale, f"{STUB.name} names what the module lacks: {stale}"


# Native classes that belong to a submodule's namespace rather than the top level.
SUBMODULE_EXPORTS = {"PointCost": "trajopt", "ObstacleCost": "trajopt"}


def test_package_reexports_the_public_surface():
    for name in _public_names():
        obj = getattr(_stiction, name)
        if name in SUBMODULE_EXPORTS:
            module = getattr(stiction, SUBMODULE_EXPORTS[name])
            assert getattr(module, name) is obj and name in module.__all__, name
        elif inspect.isclass(obj) or name in ("gradcheck", "gradcheck_scene", "load_scene"):
            assert getattr(stiction, name) is obj, name
            assert name in stiction.__all__, name


@pytest.mark.parametrize(
    "name",
    [
        "Model",
        "Simulator",
        "ParamSpec",
        "Tape",
        "StepRecord",
        "ModelBuilder",
        "World",
        "Particles",
        "StaticGeometry",
        "WorldStepRecord",
        "WorldTape",
    ],
)
def test_classes_live_in_the_stiction_namespace(name):
    assert getattr(_stiction, name).__module__ == "stiction"


def test_the_checks_can_fail(monkeypatch):
    # A class with an undocumented, unstubbed member is reported.
    class Fake:
        """Documented."""

        def method(self):
            pass

    monkeypatch.setattr(_stiction, "Fake", Fake, raising=False)
    with pytest.raises(AssertionError, match=r"Fake\.method"):
        test_every_public_name_has_docstring()
    with pytest.raises(AssertionError, match=r"Fake"):
        test_every_public_name_has_stub()
