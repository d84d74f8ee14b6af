"""rcpc's content digest (rcpc.core.digest): BLAKE2b-256 as hashlib gives it, for any bytes and
any way of feeding them, taken without importing hashlib (whose import loads OpenSSL, ~2.4 ms of
every build: issue 41)."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from hypothesis import example, given
from hypothesis import strategies as st

from rcpc.core import digest


@given(chunks=st.lists(st.binary(max_size=300), max_size=6))
@example(chunks=[])
@example(chunks=[b"\0" * 129, b"x"])  # across BLAKE2b's 128-byte block
def test_the_digest_is_blake2b_256_however_the_bytes_are_fed(chunks):
    data = b"".join(chunks)
    want = hashlib.blake2b(data, digest_size=32)
    assert digest.digest(data) == want.digest() and len(digest.digest(data)) == digest.SIZE
    assert digest.hexdigest(data) == want.hexdigest()
    h = digest.new(chunks[0] if chunks else b"")
    for chunk in chunks[1:]:
        h.update(chunk)
    assert h.hexdigest() == want.hexdigest()
    assert digest.digest(memoryview(data)) == want.digest()


def test_the_digest_loads_no_openssl():
    """Importing and using the digest imports neither hashlib nor OpenSSL's _hashlib."""
    code = ("import sys\nfrom rcpc.core import digest\n"
            "print(digest.hexdigest(b'rcpc'), 'hashlib' in sys.modules, '_hashlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [hashlib.blake2b(b"rcpc", digest_size=32).hexdigest(), "False", "False"]
