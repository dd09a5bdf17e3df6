"""A tiny random Llama-shaped model with a SentencePiece tokenizer and a chat template.

Imports nothing of overbrainer's, so any Python with torch, transformers and sentencepiece can
build it: the export tests import it, and the real-Axolotl tests run it as a script with
Axolotl's own interpreter (`python tests/tiny_model.py FOLDER`). The SentencePiece tokenizer is
trained on the fly (a random BPE tokenizer fails llama.cpp's pre-tokenizer check); the weights
are random (seconds on the CPU); nothing is fetched from a hub.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
REASONING_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>"
    "{% if message['reasoning_content'] is defined and message['reasoning_content'] %}"
    "<think>{{ message['reasoning_content'] }}</think>"
    "{% endif %}{{ message['content'] }}{{ eos_token }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
"""A template that renders the parent's reasoning (`reasoning_content`) before the answer, as
Qwen3's does, and ends each turn with the EOS token that Axolotl's `train_on_eos` looks for."""
CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "a small model learns from a large one",
    "questions and answers make a data set",
    "rust errors explained with examples and fixes",
    "export the child model to gguf for ollama",
    "think step by step before you answer the user",
] * 40
SEQUENCE_LEN = 512


def _fast_tokenizer(processor: Any) -> Any:
    """The SentencePiece BPE model as a `tokenizers` one that encodes every text the same.

    Built from the pieces by hand: transformers' own conversion needs a protobuf runtime that
    matches sentencepiece's generated code, which Axolotl's pins do not give.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {processor.id_to_piece(i): i for i in range(processor.get_piece_size())}
    ranked = []
    for piece, rank in vocab.items():
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                ranked.append((rank, vocab[left], vocab[right], left, right))
    merges = [(left, right) for *_, left, right in sorted(ranked)]
    bpe = models.BPE(
        vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True
    )
    tokenizer = Tokenizer(bpe)
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement="▁", prepend_scheme="first", split=False
    )
    tokenizer.decoder = decoders.Sequence(
        [
            decoders.Replace("▁", " "),
            decoders.ByteFallback(),
            decoders.Fuse(),
            decoders.Strip(" ", 1, 0),
        ]
    )
    return tokenizer


def make_tiny_model(folder: Path, chat_template: str = CHAT_TEMPLATE) -> Path:
    """Write a tiny random Llama model, its SentencePiece tokenizer and `chat_template`."""
    import sentencepiece as spm
    import torch
    import transformers

    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "\n")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(folder / "sp"),
        vocab_size=320,
        model_type="bpe",
        byte_fallback=True,  # llama.cpp's SPM tokenizer needs the byte pieces (<0x0A> and all)
        character_coverage=1.0,
        bos_id=1,
        eos_id=2,
        unk_id=0,
        pad_id=-1,
        minloglevel=2,
    )
    corpus.unlink()
    (folder / "sp.vocab").unlink()
    processor = spm.SentencePieceProcessor(model_file=str(folder / "sp.model"))
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=_fast_tokenizer(processor),
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
    )
    tokenizer.chat_template = chat_template
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=processor.vocab_size(),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=SEQUENCE_LEN,
        bos_token_id=1,
        eos_token_id=2,
    )
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    # llama.cpp's converter reads the SentencePiece model itself (tokenizer.json's BPE
    # pre-tokenizer is not one it knows).
    (folder / "sp.model").replace(folder / "tokenizer.model")
    return folder


if __name__ == "__main__":
    make_tiny_model(Path(sys.argv[1]), REASONING_TEMPLATE)
