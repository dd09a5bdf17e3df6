"""Writes an `import questions` file of N lines shaped like generated questions.

`python bench/_import_file.py N OUT`: N JSONL rows `{"question": ...}` drawn as
`_synthetic.question` does, one in ten a near-copy (a word dropped, shouted) of an earlier row,
for timing `overbrainer import questions OUT --topic T` on the scale projects.
"""

from __future__ import annotations

import json
import random
import sys

from _synthetic import question
from dedup import near_copy


def main(count: int, out: str) -> None:
    rng = random.Random(4141)
    rows: list[str] = []
    with open(out, "w", encoding="utf-8") as file:
        for n in range(count):
            text = near_copy(rng.choice(rows), rng) if n % 10 == 9 else question(rng)
            rows.append(text)
            file.write(json.dumps({"question": text}) + "\n")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
