"""Parse speed of the fast parser (rcpc.core.syntax.descent) against lark's (the reference),
in-process, best of N runs (CPU time: the machine may be shared): the RL recipe, a 20x concatenation of it, and every ``.rcp`` of
the directories given (e.g. the peers workspace of bench/peers.py); tokens/s of each.

    python bench/parse_speed.py [-n N] [DIR...]

Under a checkout without the fast parser (``parser._parse_lark`` missing) it times
``parser.parse`` alone, as "lark". It needs a checkout whose parser takes a session
(:mod:`rcpc.core.session`, issue 40).
"""

import argparse
import sys
import time
from pathlib import Path

from rcpc.core.source import Source
from rcpc.core.syntax import parser

REPO = Path(__file__).resolve().parents[1]
RL = REPO / "recipes/rl/qwen35_397b_256_v7x.rcp"


def best(fn, n: int) -> float:
    """The shortest of ``n`` runs of ``fn``, in seconds."""
    times = []
    for _ in range(n):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("-n", type=int, default=10)
    args.add_argument("dirs", nargs="*", type=Path)
    a = args.parse_args()
    text = RL.read_text(encoding="utf-8")
    cases = [("rl", [Source("r.rcp", text)]), ("rl x20", [Source("r.rcp", text * 20)])]
    for d in a.dirs:
        cases.append((d.name, [Source(str(p), p.read_text(encoding="utf-8")) for p in sorted(d.rglob("*.rcp"))]))
    from rcpc.core.session import Session
    from rcpc.core.syntax.postlex import TokenCount

    session = Session()  # lark's tables loaded once (not timed), kept by the session
    has_fast = hasattr(parser, "_parse_lark")

    def lark_parse(s):
        return parser._parse_lark(s, None, session) if has_fast else parser.parse(s, session=session)

    lark_parse(Source("w.rcp", "X = 1\n"))

    def run(fn, sources):
        return lambda: [fn(s) for s in sources]

    for label, sources in cases:
        tokens = 0
        for s in sources:
            count = TokenCount()
            parser.parse(s, tokens=count)
            tokens += count.n
        lark = best(run(lark_parse, sources), max(3, a.n // 3))
        line = f"{label:12} {len(sources):4} files {tokens:7} tokens  lark {lark * 1e3:8.2f} ms ({tokens / lark / 1e3:5.0f} k tok/s)"
        if has_fast:
            fast = best(run(parser.parse, sources), a.n)
            line += f"  fast {fast * 1e3:8.2f} ms ({tokens / fast / 1e3:5.0f} k tok/s)  x{lark / fast:.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
