"""Reading the batch APIs' result lines, from literal examples in the providers' docs."""

from __future__ import annotations

import json

from overbrainer.llm.batches.anthropic import result_of as anthropic_result
from overbrainer.llm.batches.openai import multipart
from overbrainer.llm.batches.openai import result_of as openai_result
from overbrainer.llm.types import Json
from overbrainer.model.finish import FinishReason
from overbrainer.model.usage import Usage

OPENAI_OUTPUT = (
    '{"id": "batch_req_123", "custom_id": "request-2", "response": {"status_code": 200, '
    '"request_id": "req_123", "body": {"id": "chatcmpl-123", "object": "chat.completion", '
    '"created": 1711652795, "model": "gpt-3.5-turbo-0125", "choices": [{"index": 0, '
    '"message": {"role": "assistant", "content": "Hello."}, "logprobs": null, '
    '"finish_reason": "stop"}], "usage": {"prompt_tokens": 22, "completion_tokens": 2, '
    '"total_tokens": 24}, "system_fingerprint": "fp_123"}}, "error": null}'
)
OPENAI_EXPIRED = (
    '{"id": "batch_req_456", "custom_id": "request-3", "response": null, "error": '
    '{"code": "batch_expired", "message": "This request could not be executed before the '
    'completion window expired."}}'
)
ANTHROPIC_SUCCEEDED = (
    '{"custom_id":"my-second-request","result":{"type":"succeeded","message":{"id":'
    '"msg_014VwiXbi91y3JMjcpyGBHX5","type":"message","role":"assistant","model":'
    '"claude-opus-4-8","content":[{"type":"text","text":"Hello again!"}],"stop_reason":'
    '"end_turn","stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":7}}}}'
)
ANTHROPIC_ERRORED = (
    '{"custom_id":"my-first-request","result":{"type":"errored","error":{"type":"error",'
    '"error":{"type":"invalid_request_error","message":"Validation error"}}}}'
)


def test_openai_output_and_error_lines() -> None:
    ok = openai_result(json.loads(OPENAI_OUTPUT))
    assert ok is not None and ok.custom_id == "request-2" and ok.completion is not None
    assert ok.completion.content == "Hello."
    assert ok.completion.usage == Usage(22, 2)
    assert ok.completion.finish is FinishReason.STOP
    expired = openai_result(json.loads(OPENAI_EXPIRED))
    assert expired is not None and expired.completion is None
    assert expired.error == (
        "This request could not be executed before the completion window expired."
    )
    assert openai_result(json.loads('{"id": "x"}')) is None


def test_anthropic_result_lines() -> None:
    ok = anthropic_result(json.loads(ANTHROPIC_SUCCEEDED))
    assert ok is not None and ok.completion is not None
    assert (ok.completion.content, ok.completion.usage) == ("Hello again!", Usage(11, 7))
    errored = anthropic_result(json.loads(ANTHROPIC_ERRORED))
    assert errored is not None and errored.error == "errored: Validation error"
    for kind in ("canceled", "expired"):
        line: Json = {"custom_id": "a", "result": {"type": kind}}
        result = anthropic_result(line)
        assert result is not None and (result.completion, result.error) == (None, kind)


def test_the_upload_is_a_multipart_form_with_purpose_batch() -> None:
    body, content_type = multipart({"purpose": "batch"}, "t.jsonl", b'{"a": 1}\n')
    boundary = content_type.removeprefix("multipart/form-data; boundary=")
    assert body.startswith(f"--{boundary}\r\n".encode())
    assert b'Content-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n' in body
    assert b'name="file"; filename="t.jsonl"\r\nContent-Type: application/jsonl' in body
    assert body.endswith(f'{{"a": 1}}\n\r\n--{boundary}--\r\n'.encode())
