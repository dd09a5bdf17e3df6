"""The forms of a container target's `gpus` and `container_user` settings, and their checks."""

from __future__ import annotations

import re

GPUS_AUTO = "auto"
GPUS_ALL = "all"
GPUS_NONE = "none"
USER_AUTO = "auto"
USER_IMAGE = "image"

GPU_LIST = re.compile(r"^[0-9]+(,[0-9]+)*$")
USER_VALUE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$")


def gpus_problem(value: str) -> str | None:
    """Why `gpus` is not one of its forms; None when it is."""
    if value in (GPUS_AUTO, GPUS_ALL, GPUS_NONE) or GPU_LIST.match(value):
        return None
    return 'must be "auto", "all", "none" or GPU indices such as "0,1"'


def user_problem(value: str) -> str | None:
    """Why `container_user` is not one of its forms; None when it is."""
    if value in (USER_AUTO, USER_IMAGE) or USER_VALUE.match(value):
        return None
    return 'must be "auto", "image", or a user such as "1000:1000"'
