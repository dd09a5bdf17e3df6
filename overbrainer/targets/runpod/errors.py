"""Errors of the Runpod API, each carrying the line the user is told."""

from __future__ import annotations

import enum

from overbrainer.model.errors import EXIT_USAGE, OverbrainerError

KEY_REFUSED = "Runpod refused the API key"
NO_KEY = "runpod.api_key is not set: set OVERBRAINER_RUNPOD__API_KEY"


class RunpodError(OverbrainerError):
    """A Runpod API call failed; `status` is the HTTP status when one came back."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RunpodKeyError(RunpodError):
    """No key, or Runpod refused it (401): a configuration problem (exit 2)."""

    exit_code = EXIT_USAGE


class CreateFailure(enum.Enum):
    """Why `POST /pods` made no pod (or may have made one: `AMBIGUOUS`)."""

    UNAVAILABLE = "unavailable"
    REFUSED = "refused"
    """A 400 without the capacity wording: this candidate refused, the next one is tried."""
    FORBIDDEN = "forbidden"
    NO_CREDITS = "no_credits"
    REJECTED = "rejected"
    AMBIGUOUS = "ambiguous"
    RATE_LIMITED = "rate_limited"
    KEY_REFUSED = "key_refused"


class CreateError(RunpodError):
    """`POST /pods` failed; `failure` says what the provisioning walk does next."""

    def __init__(self, failure: CreateFailure, message: str, status: int | None = None) -> None:
        super().__init__(message, status)
        self.failure = failure


CAPACITY_MARK = "no longer any instances available"
"""The only wording known to mean "no capacity"; any other 400 is still tried on the next type."""

INVALID_REQUEST = "please report it: overbrainer built an invalid request"


def create_error(status: int | None, body: str, detail: str = "") -> CreateError:
    """The error of a failed create by status (reference §7.1); None status: no answer.
    `detail` is Runpod's `detail`, made safe to show."""
    if status is None:
        return CreateError(
            CreateFailure.AMBIGUOUS,
            "Runpod did not answer the create request (the pod may have been created anyway)",
        )
    if status == 400:
        # Runpod's description of createPod: "`400` covers both \"your request breaks a rule\"
        # and \"no capacity\", because capacity exhaustion currently carries no machine-readable
        # code of its own — only a human-readable `detail`", and for a 400: "Try your next
        # candidate." Our body passed our own check of the description before it was sent
        # (create_check.py), so any 400 is this GPU type's, whatever its wording.
        if CAPACITY_MARK in body:
            return CreateError(CreateFailure.UNAVAILABLE, "no capacity for this GPU type", status)
        said = f": {detail}" if detail else ""
        return CreateError(CreateFailure.REFUSED, f"Runpod refused it with HTTP 400{said}", status)
    fixed: dict[int, tuple[CreateFailure, str]] = {
        401: (CreateFailure.KEY_REFUSED, KEY_REFUSED),
        402: (CreateFailure.NO_CREDITS, "the Runpod account balance is insufficient"),
        403: (
            CreateFailure.FORBIDDEN,
            "Runpod refused the request (403): check the API key and that the GPU type is allowed",
        ),
        408: (
            CreateFailure.AMBIGUOUS,
            "Runpod timed out on the create request (the pod may have been created anyway)",
        ),
        429: (CreateFailure.RATE_LIMITED, "Runpod is rate limiting requests; try again later"),
    }
    if status in fixed:
        failure, message = fixed[status]
        return CreateError(failure, message, status)
    if status >= 500:
        return CreateError(
            CreateFailure.AMBIGUOUS, "Runpod failed to process the create request", status
        )
    if 200 <= status < 300:
        return CreateError(
            CreateFailure.AMBIGUOUS,
            "Runpod's answer to the create request could not be read "
            "(the pod may have been created anyway)",
            status,
        )
    return CreateError(
        CreateFailure.REJECTED,
        f"Runpod rejected the create request ({INVALID_REQUEST})",
        status,
    )
