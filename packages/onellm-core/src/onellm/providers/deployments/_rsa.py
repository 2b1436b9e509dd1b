"""RSASSA-PKCS1-v1_5 with SHA-256 (the JWS `RS256` algorithm) on Python integers, and the RSA private key read from its
PEM by hand (PKCS#8 `PRIVATE KEY`, or PKCS#1 `RSA PRIVATE KEY`), so core needs no cryptography package.

Signing uses the Chinese remainder theorem with the key's primes, blinds the message with a fresh random factor (so
the time a signature takes says nothing about the key), and checks the signature with the public exponent before it
is returned (a fault in the arithmetic must not hand out a signature that leaks the primes). Python's integers are not
constant-time; blinding is what keeps the timing independent of the message.

Checked against RFC 7515 appendix A.2: the same key signs the same input to the same bytes, and verifies.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
from dataclasses import dataclass
from typing import Final

__all__ = [
    "KeyFormatError",
    "RsaPrivateKey",
    "RsaPublicKey",
    "b64url",
    "b64url_decode",
    "parse_private_key_pem",
    "rs256_sign",
    "rs256_verify",
]

_SHA256_DIGEST_INFO: Final = bytes.fromhex("3031300d060960864801650304020105000420")
"""The DER prefix of a SHA-256 `DigestInfo` (RFC 8017, section 9.2, note 1)."""
_RSA_ENCRYPTION: Final = bytes.fromhex("2a864886f70d010101")
"""The OID 1.2.840.113549.1.1.1 (rsaEncryption), as DER content."""


class KeyFormatError(ValueError):
    """The key is not an RSA private key this module reads; the message never holds key material."""


@dataclass(frozen=True, slots=True)
class RsaPublicKey:
    n: int
    e: int

    @property
    def size(self) -> int:
        """The modulus length in bytes."""
        return (self.n.bit_length() + 7) // 8


@dataclass(frozen=True, slots=True, repr=False)
class RsaPrivateKey:
    """An RSA private key with its CRT parameters. Its repr shows only the modulus size."""

    n: int
    e: int
    d: int
    p: int
    q: int
    dp: int
    dq: int
    qi: int

    def __post_init__(self) -> None:
        if self.n.bit_length() < 1024 or self.e < 3 or self.e % 2 == 0:
            raise KeyFormatError("the RSA key is too small or its public exponent is not usable")
        if self.p * self.q != self.n:
            raise KeyFormatError("the RSA key's primes do not multiply to its modulus")
        if self.dp != self.d % (self.p - 1) or self.dq != self.d % (self.q - 1) or (self.qi * self.q) % self.p != 1:
            raise KeyFormatError("the RSA key's CRT parameters do not match its private exponent")

    def __repr__(self) -> str:
        return f"RsaPrivateKey({self.n.bit_length()} bits)"

    @property
    def public(self) -> RsaPublicKey:
        return RsaPublicKey(self.n, self.e)


def _integer(data: bytes) -> int:
    return int.from_bytes(data, "big")


def _bytes(value: int, size: int) -> bytes:
    return value.to_bytes(size, "big")


def _encode_message(message: bytes, size: int) -> int:
    """EMSA-PKCS1-v1_5 encoding of SHA-256(message) for a modulus of `size` bytes (RFC 8017, section 9.2)."""
    digest_info = _SHA256_DIGEST_INFO + hashlib.sha256(message).digest()
    padding = size - len(digest_info) - 3
    if padding < 8:
        raise KeyFormatError("the RSA key is too small for a SHA-256 signature")
    return _integer(b"\x00\x01" + b"\xff" * padding + b"\x00" + digest_info)


def rs256_sign(key: RsaPrivateKey, message: bytes) -> bytes:
    """The RSASSA-PKCS1-v1_5 SHA-256 signature of `message` (deterministic: the same key and message give the same
    bytes)."""
    size = key.public.size
    m = _encode_message(message, size)
    # Blinding: sign m * r^e, then divide by r; the result is m^d, but the exponentiation never sees m itself.
    while True:
        r = secrets.randbelow(key.n - 2) + 2
        try:
            r_inverse = pow(r, -1, key.n)
        except ValueError:  # r shares a factor with n: vanishingly unlikely, and then try another
            continue
        break
    blinded = (m * pow(r, key.e, key.n)) % key.n
    s1 = pow(blinded % key.p, key.dp, key.p)
    s2 = pow(blinded % key.q, key.dq, key.q)
    h = (key.qi * (s1 - s2)) % key.p
    signature = ((s2 + h * key.q) * r_inverse) % key.n
    if pow(signature, key.e, key.n) != m:
        raise ArithmeticError("the RSA signature did not verify; it was not used")
    return _bytes(signature, size)


def rs256_verify(key: RsaPublicKey, message: bytes, signature: bytes) -> bool:
    """Whether `signature` is the RSASSA-PKCS1-v1_5 SHA-256 signature of `message` under `key`."""
    size = key.size
    if len(signature) != size:
        return False
    s = _integer(signature)
    if s >= key.n:
        return False
    return pow(s, key.e, key.n) == _encode_message(message, size)


# -- DER ---------------------------------------------------------------------------------------------------------------


class _Der:
    """A strict reader of the few DER forms a private key uses: SEQUENCE, INTEGER, OCTET STRING, OID, NULL."""

    __slots__ = ("data", "position")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    @property
    def done(self) -> bool:
        return self.position >= len(self.data)

    def read(self, tag: int) -> bytes:
        data = self.data
        if self.position + 2 > len(data):
            raise KeyFormatError("the key's DER ends early")
        if data[self.position] != tag:
            raise KeyFormatError(f"the key's DER has tag 0x{data[self.position]:02x} where 0x{tag:02x} belongs")
        length = data[self.position + 1]
        self.position += 2
        if length & 0x80:
            count = length & 0x7F
            if count == 0 or count > 4 or self.position + count > len(data):
                raise KeyFormatError("the key's DER has a length it cannot hold")
            length = _integer(data[self.position : self.position + count])
            if length < 0x80 or data[self.position] == 0:
                raise KeyFormatError("the key's DER has a length that is not in its shortest form")
            self.position += count
        end = self.position + length
        if end > len(data):
            raise KeyFormatError("the key's DER runs past its end")
        value = data[self.position : end]
        self.position = end
        return value

    def integer(self) -> int:
        raw = self.read(0x02)
        if not raw or raw[0] & 0x80:
            raise KeyFormatError("the key's DER holds a negative or empty integer")
        return _integer(raw)


def _rsa_private_key(der: bytes) -> RsaPrivateKey:
    """A PKCS#1 `RSAPrivateKey`: version 0, then n, e, d, p, q, dp, dq, qi."""
    outer = _Der(der)
    body = _Der(outer.read(0x30))
    if not outer.done:
        raise KeyFormatError("the key's DER has bytes after the key")
    if body.integer() != 0:
        raise KeyFormatError("the RSA key is not a two-prime key (version 0)")
    n, e, d, p, q, dp, dq, qi = (body.integer() for _ in range(8))
    if not body.done:
        raise KeyFormatError("the RSA key has fields this reader does not know")
    return RsaPrivateKey(n, e, d, p, q, dp, dq, qi)


def _pkcs8(der: bytes) -> RsaPrivateKey:
    """A PKCS#8 `PrivateKeyInfo` (RFC 5208): version, the rsaEncryption algorithm, the PKCS#1 key in an OCTET STRING."""
    outer = _Der(der)
    body = _Der(outer.read(0x30))
    if not outer.done:
        raise KeyFormatError("the key's DER has bytes after the key")
    if body.integer() not in (0, 1):
        raise KeyFormatError("the PKCS#8 key has an unknown version")
    algorithm = _Der(body.read(0x30))
    if algorithm.read(0x06) != _RSA_ENCRYPTION:
        raise KeyFormatError("the PKCS#8 key is not an RSA key")
    if not algorithm.done:
        algorithm.read(0x05)  # NULL parameters
    return _rsa_private_key(body.read(0x04))


def parse_private_key_pem(text: str) -> RsaPrivateKey:
    """The RSA private key in a PEM text (`-----BEGIN PRIVATE KEY-----`, or `RSA PRIVATE KEY`).

    Raises:
        KeyFormatError: not a PEM RSA private key (an encrypted key included); the message holds no key material.
    """
    if not isinstance(text, str):
        raise KeyFormatError("the private key is not text")
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if len(lines) < 3:
        raise KeyFormatError("the private key is not a PEM block")
    first, last = lines[0], lines[-1]
    kinds = {"-----BEGIN PRIVATE KEY-----": "PKCS8", "-----BEGIN RSA PRIVATE KEY-----": "PKCS1"}
    kind = kinds.get(first)
    if kind is None:
        label = first if first.startswith("-----BEGIN ") and len(first) < 64 else "something else"
        raise KeyFormatError(f"the private key is not an unencrypted RSA key in PEM ({label})")
    if last != first.replace("BEGIN", "END"):
        raise KeyFormatError("the private key's PEM block does not end where it should")
    body = lines[1:-1]
    if any(":" in line for line in body):
        raise KeyFormatError("the private key is encrypted; give the key unencrypted")
    try:
        der = base64.b64decode("".join(body), validate=True)
    except (binascii.Error, ValueError):
        raise KeyFormatError("the private key's PEM body is not base64") from None
    return _pkcs8(der) if kind == "PKCS8" else _rsa_private_key(der)


def b64url(data: bytes) -> str:
    """base64url without padding (RFC 7515, section 2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
