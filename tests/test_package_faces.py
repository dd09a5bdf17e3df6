"""Each package face names only what exists, and no face name is hidden by a submodule."""

import importlib
import pkgutil

import pytest

FACES = ["overbrainer.storage", "overbrainer.llm", "overbrainer.training", "overbrainer.targets"]


@pytest.mark.parametrize("package", FACES)
def test_every_face_name_resolves_to_its_home_object(package: str) -> None:
    face = importlib.import_module(package)
    assert face.__all__, package
    for name in face.__all__:
        value = getattr(face, name)
        # A second look must give the same object: a submodule of the same name, set on the
        # package when it is first imported, would otherwise shadow the face's name.
        assert getattr(face, name) is value, f"{package}.{name}"
        assert not isinstance(value, type(importlib)), f"{package}.{name} is a module"


@pytest.mark.parametrize("package", FACES)
def test_no_face_name_equals_a_submodule(package: str) -> None:
    face = importlib.import_module(package)
    submodules = {info.name for info in pkgutil.iter_modules(face.__path__)}
    assert not submodules & set(face.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    face = importlib.import_module("overbrainer.llm")
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        face.nothing_here  # noqa: B018
