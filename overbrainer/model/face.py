"""A package's face: the names other layers may import, loaded from their modules on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_face(package: str, homes: Mapping[str, str]) -> Callable[[str], object]:
    """A module `__getattr__` that imports each face name from its home module on first use.

    Keeping the face lazy means importing a package for one name does not load the rest of it
    (start-up time of short commands).
    """

    def face_attribute(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        return value

    return face_attribute
