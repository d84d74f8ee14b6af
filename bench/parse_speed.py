"""Parse speed of the fast parser (rcpc.core.syntax.descent) against lark's (the reference):
the RL recipe and a 20x concatenation of it, in-process, best of N; tokens/s.

    python bench/parse_speed.py [N]
"""

import sys
import time
from pathlib import Path

from rcpc.core.source import Source
from rcpc.core.syntax import parser

REPO = Path(__file__).resolve().parents[1]
RL = REPO / "recipes/rl/qwen35_397b_256_v7x.rcp"


def best(fn, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    text = RL.read_text(encoding="utf-8")
    parser._parser()  # lark's tables loaded once (not timed)
    for label, t in (("rl", text), ("rl x20", text * 20)):
        src = Source("r.rcp", t)
        parser.parse(src)
        tokens = parser._TOKENS[0]
        fast = best(lambda: parser.parse(src), n)
        lark = best(lambda: parser._parse_lark(src), max(3, n // 4))
        print(f"{label:8} {tokens:7} tokens  fast {fast * 1e3:8.2f} ms ({tokens / fast / 1e3:6.0f} k tok/s)  "
              f"lark {lark * 1e3:8.2f} ms ({tokens / lark / 1e3:6.0f} k tok/s)  x{lark / fast:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
