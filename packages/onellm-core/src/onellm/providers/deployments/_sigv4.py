"""AWS Signature Version 4, on the standard library's HMAC and SHA-256.

A signature covers a canonical form of the request: the method; the path as sent, with dot segments and empty segments
removed and every byte outside the unreserved set percent-encoded once more (services other than S3 sign the path
encoded twice, so a model id sent as `v1%3A0` is signed as `v1%253A0`); the query pairs decoded, re-encoded and sorted;
the signed headers, lower-cased, their values trimmed with inner runs of spaces made one, repeated headers joined with
commas, sorted by name; the list of their names; and the SHA-256 of the body. The string to sign names the algorithm,
the time, the credential scope (`date/region/service/aws4_request`) and the hash of that canonical request; the
signing key is derived from the secret key by HMAC over the date, region, service and `aws4_request`.

Checked against the published AWS Signature Version 4 test suite (`testdata/aws-sigv4`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote

from onellm._public import publish as _publish
from onellm.errors import Secret

__all__ = [
    "ALGORITHM",
    "AwsCredentials",
    "SignedRequest",
    "canonical_headers",
    "canonical_query",
    "canonical_request",
    "canonical_uri",
    "payload_hash",
    "sign",
    "signing_key",
    "string_to_sign",
]

ALGORITHM = "AWS4-HMAC-SHA256"
_UNRESERVED = "-_.~"


class AwsCredentials:
    """An AWS access key pair, with the session token of temporary credentials. Every part is a `Secret`: none of them
    appears in a repr, a message or a log line.

    ```python
    from onellm import AwsCredentials, Secret

    secret_key, token = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "an-sts-session-token"
    credentials = AwsCredentials("AKIDEXAMPLE", Secret(secret_key), session_token=Secret(token))
    ```
    """

    __slots__ = ("access_key_id", "secret_access_key", "session_token")

    def __init__(
        self,
        access_key_id: Secret | str,
        secret_access_key: Secret | str,
        session_token: Secret | str | None = None,
    ) -> None:
        self.access_key_id = access_key_id if isinstance(access_key_id, Secret) else Secret(access_key_id)
        """The access key id (`AKIA...`, `ASIA...`), sent in the `Authorization` header's credential scope."""
        self.secret_access_key = (
            secret_access_key if isinstance(secret_access_key, Secret) else Secret(secret_access_key)
        )
        """The secret key: never sent, only used to derive the signing key."""
        token = session_token if isinstance(session_token, Secret) or session_token is None else Secret(session_token)
        self.session_token: Secret | None = token or None
        """The session token of temporary credentials, sent (and signed) as `x-amz-security-token`."""
        if not self.access_key_id or not self.secret_access_key:
            raise ValueError("AWS credentials need both an access key id and a secret access key")

    def __repr__(self) -> str:
        session = ", session_token=****" if self.session_token else ""
        return f"AwsCredentials(****, ****{session})"

    @property
    def secrets(self) -> tuple[Secret, ...]:
        """Every part, for removal from error text."""
        parts = [self.access_key_id, self.secret_access_key]
        if self.session_token:
            parts.append(self.session_token)
        return tuple(parts)


def _encode(text: str) -> str:
    """Percent-encode every byte of the UTF-8 text outside the unreserved set (`A-Z a-z 0-9 - _ . ~`)."""
    return quote(text, safe=_UNRESERVED)


def canonical_uri(raw_path: str) -> str:
    """The path as SigV4 signs it for every service but S3: dot segments resolved (RFC 3986), empty segments
    dropped, a trailing slash kept, each segment percent-encoded once more as sent (`%3A` becomes `%253A`)."""
    segments: list[str] = []
    parts = raw_path.split("/")
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if segments:
                segments.pop()
            continue
        segments.append(part)
    if not segments:
        return "/"
    path = "/" + "/".join(_encode(segment) for segment in segments)
    if parts[-1] in ("", ".", ".."):
        path += "/"
    return path


def canonical_query(raw_query: str) -> str:
    """The query as SigV4 signs it: each `name=value` pair percent-decoded and encoded again, sorted by name then value
    (a name without `=` has an empty value)."""
    if not raw_query:
        return ""
    pairs: list[tuple[str, str]] = []
    for item in raw_query.split("&"):
        if not item:
            continue
        name, _, value = item.partition("=")
        pairs.append((_encode(unquote(name)), _encode(unquote(value))))
    pairs.sort()
    return "&".join(f"{name}={value}" for name, value in pairs)


def _trim(value: str) -> str:
    """A header value as signed: leading and trailing spaces removed, each inner run of spaces made one."""
    value = value.strip()
    while "  " in value:
        value = value.replace("  ", " ")
    return value


def canonical_headers(headers: Iterable[tuple[str, str]], signed: Iterable[str]) -> tuple[str, str]:
    """(the canonical header block, the `SignedHeaders` list) for the headers named in `signed` (any case). A header
    given several times is signed as its values joined with commas, in the order given."""
    wanted = {name.lower() for name in signed}
    values: dict[str, list[str]] = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered in wanted:
            values.setdefault(lowered, []).append(_trim(value))
    missing = wanted - values.keys()
    if missing:
        raise ValueError(f"headers to sign are missing from the request: {', '.join(sorted(missing))}")
    names = sorted(values)
    block = "".join(f"{name}:{','.join(values[name])}\n" for name in names)
    return block, ";".join(names)


def payload_hash(body: bytes | None) -> str:
    """The hex SHA-256 of the body (of nothing, for a request without one)."""
    return hashlib.sha256(body or b"").hexdigest()


def canonical_request(
    method: str,
    raw_path: str,
    raw_query: str,
    headers: Iterable[tuple[str, str]],
    signed: Iterable[str],
    body_hash: str,
) -> tuple[str, str]:
    """(the canonical request, the `SignedHeaders` list)."""
    block, names = canonical_headers(headers, signed)
    text = "\n".join((method.upper(), canonical_uri(raw_path), canonical_query(raw_query), block, names, body_hash))
    return text, names


def _amz_date(when: dt.datetime) -> str:
    if when.tzinfo is None:
        raise ValueError("the signing time must be timezone-aware")
    return when.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def string_to_sign(amz_date: str, scope: str, creq: str) -> str:
    """The string to sign: the algorithm, the `x-amz-date` time, the credential scope and the canonical request's hash."""
    return f"{ALGORITHM}\n{amz_date}\n{scope}\n{hashlib.sha256(creq.encode('utf-8')).hexdigest()}"


def signing_key(secret: Secret, date: str, region: str, service: str) -> bytes:
    """The key that signs a day's requests to one service in one region."""
    key = ("AWS4" + secret.reveal()).encode("utf-8")
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return key


@dataclass(frozen=True, slots=True, repr=False)
class SignedRequest:
    """What signing a request made: the headers to add (`x-amz-date`, `x-amz-security-token` with a session token,
    `authorization`) and, for tests and diagnosis, the canonical request and the string to sign."""

    headers: dict[str, str]
    canonical_request: str
    string_to_sign: str
    signed_headers: str

    def __repr__(self) -> str:
        return f"SignedRequest(signed_headers={self.signed_headers!r})"

    @property
    def authorization(self) -> str:
        return self.headers["authorization"]


def sign(
    method: str,
    raw_path: str,
    raw_query: str,
    headers: Sequence[tuple[str, str]],
    body: bytes | None,
    *,
    credentials: AwsCredentials,
    region: str,
    service: str,
    when: dt.datetime,
    signed: Iterable[str],
    body_hash: str | None = None,
) -> SignedRequest:
    """Sign a request as it will be sent. `headers` are the request's headers (`host` among them); `signed` names those
    to sign, to which `x-amz-date` (set here from `when` unless the request has one) and, with a session token,
    `x-amz-security-token` are added."""
    present = {name.lower() for name, _ in headers}
    added: dict[str, str] = {}
    amz_date = next((value.strip() for name, value in headers if name.lower() == "x-amz-date"), None)
    if amz_date is None:
        amz_date = _amz_date(when)
        added["x-amz-date"] = amz_date
    names = {name.lower() for name in signed} | {"x-amz-date"}
    if credentials.session_token is not None and "x-amz-security-token" not in present:
        added["x-amz-security-token"] = credentials.session_token.reveal()
        names.add("x-amz-security-token")
    all_headers = [*headers, *added.items()]
    creq, signed_names = canonical_request(
        method, raw_path, raw_query, all_headers, names, body_hash if body_hash is not None else payload_hash(body)
    )
    date = amz_date[:8]
    scope = f"{date}/{region}/{service}/aws4_request"
    sts = string_to_sign(amz_date, scope, creq)
    signature = hmac.new(
        signing_key(credentials.secret_access_key, date, region, service), sts.encode("utf-8"), hashlib.sha256
    ).hexdigest()
    added["authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key_id.reveal()}/{scope}, "
        f"SignedHeaders={signed_names}, Signature={signature}"
    )
    return SignedRequest(added, creq, sts, signed_names)


_publish("onellm", AwsCredentials)
