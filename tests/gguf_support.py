"""A tiny random Llama written as GGUF by hand, so `llama-server` has a real model to serve.

No torch, numpy or `gguf` package: the format (v3) is a header, typed key/values, tensor infos
and 32-byte-aligned F32 data. The vocabulary is SentencePiece-style (`tokenizer.ggml.model =
llama`): three control tokens, the 256 byte-fallback tokens, then letters and `▁` pieces, so
any text tokenizes. The weights are random: the answers are gibberish, the timings real.
"""

from __future__ import annotations

import random
import struct
from array import array
from pathlib import Path

ALIGN = 32
N_EMBD = 64
N_FF = 128
N_HEAD = 4
N_LAYER = 1
CONTEXT = 512

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

_U32, _F32, _BOOL, _STRING, _ARRAY, _I32 = 4, 6, 7, 8, 9, 5


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def _value(kind: int, value: object) -> bytes:
    if kind == _U32:
        return struct.pack("<I", value)
    if kind == _I32:
        return struct.pack("<i", value)
    if kind == _F32:
        return struct.pack("<f", value)
    if kind == _BOOL:
        return struct.pack("<?", value)
    if kind == _STRING:
        assert isinstance(value, str)
        return _string(value)
    raise ValueError(kind)


def _kv(key: str, kind: int, value: object) -> bytes:
    return _string(key) + struct.pack("<I", kind) + _value(kind, value)


def _kv_array(key: str, kind: int, values: list[object]) -> bytes:
    head = _string(key) + struct.pack("<IIQ", _ARRAY, kind, len(values))
    return head + b"".join(_value(kind, v) for v in values)


def _vocab() -> tuple[list[str], list[float], list[int]]:
    tokens = ["<unk>", "<s>", "</s>"]
    types = [2, 3, 3]  # unknown, control, control
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256  # byte
    pieces = ["▁"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces += ["▁" + chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces += ["▁the", "▁is", "?", ".", ","]
    tokens += pieces
    types += [1] * len(pieces)  # normal
    scores = [0.0] * (3 + 256) + [-float(i + 1) for i in range(len(pieces))]
    return tokens, scores, types


def write_tiny_llama(path: Path, seed: int = 0) -> None:
    """Write a 1-layer random Llama with a chat template to `path`."""
    rng = random.Random(seed)
    tokens, scores, types = _vocab()
    n_vocab = len(tokens)
    kvs = [
        _kv("general.architecture", _STRING, "llama"),
        _kv("general.name", _STRING, "tiny-random-llama"),
        _kv("llama.context_length", _U32, CONTEXT),
        _kv("llama.embedding_length", _U32, N_EMBD),
        _kv("llama.block_count", _U32, N_LAYER),
        _kv("llama.feed_forward_length", _U32, N_FF),
        _kv("llama.attention.head_count", _U32, N_HEAD),
        _kv("llama.attention.head_count_kv", _U32, N_HEAD),
        _kv("llama.rope.dimension_count", _U32, N_EMBD // N_HEAD),
        _kv("llama.attention.layer_norm_rms_epsilon", _F32, 1e-5),
        _kv("tokenizer.ggml.model", _STRING, "llama"),
        _kv_array("tokenizer.ggml.tokens", _STRING, list(tokens)),
        _kv_array("tokenizer.ggml.scores", _F32, list(scores)),
        _kv_array("tokenizer.ggml.token_type", _I32, list(types)),
        _kv("tokenizer.ggml.unknown_token_id", _U32, 0),
        _kv("tokenizer.ggml.bos_token_id", _U32, 1),
        _kv("tokenizer.ggml.eos_token_id", _U32, 2),
        _kv("tokenizer.ggml.add_bos_token", _BOOL, True),
        _kv("tokenizer.chat_template", _STRING, CHAT_TEMPLATE),
    ]
    # (name, dims with the innermost first, as GGUF stores them)
    shapes: list[tuple[str, tuple[int, ...]]] = [("token_embd.weight", (N_EMBD, n_vocab))]
    for layer in range(N_LAYER):
        b = f"blk.{layer}."
        shapes += [
            (b + "attn_norm.weight", (N_EMBD,)),
            (b + "attn_q.weight", (N_EMBD, N_EMBD)),
            (b + "attn_k.weight", (N_EMBD, N_EMBD)),
            (b + "attn_v.weight", (N_EMBD, N_EMBD)),
            (b + "attn_output.weight", (N_EMBD, N_EMBD)),
            (b + "ffn_norm.weight", (N_EMBD,)),
            (b + "ffn_gate.weight", (N_EMBD, N_FF)),
            (b + "ffn_up.weight", (N_EMBD, N_FF)),
            (b + "ffn_down.weight", (N_FF, N_EMBD)),
        ]
    shapes += [("output_norm.weight", (N_EMBD,)), ("output.weight", (N_EMBD, n_vocab))]
    infos = b""
    blobs: list[bytes] = []
    offset = 0
    for name, dims in shapes:
        count = 1
        for d in dims:
            count *= d
        if name.endswith("norm.weight"):
            data = array("f", [1.0] * count).tobytes()
        else:
            data = array("f", [rng.gauss(0.0, 0.02) for _ in range(count)]).tobytes()
        infos += _string(name) + struct.pack("<I", len(dims))
        infos += b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", 0, offset)  # type F32, offset in the data section
        padded = data + b"\0" * (-len(data) % ALIGN)
        blobs.append(padded)
        offset += len(padded)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(shapes), len(kvs)) + b"".join(kvs) + infos
    head += b"\0" * (-len(head) % ALIGN)
    path.write_bytes(head + b"".join(blobs))
