"""The AWS Signature Version 4 test suite (`testdata/aws-sigv4`, botocore's copy): every case's canonical request,
string to sign and `Authorization` header are those the suite gives.

The deployments page names three cases it leaves out: `get-header-value-multiline` (obsolete header line folding cannot
be put on an HTTP request message), `post-x-www-form-urlencoded-parameters` (the suite's artifacts disagree with one
another) and the canonical request of `post-x-www-form-urlencoded` (its file lists a header its string to sign omits).
In this copy of the suite every case's three artifacts agree with one another (`test_the_suite_copy_is_consistent`),
so all of them are compared, those three included: the folded header is signed as RFC 9112 section 5.2 says a recipient
reads it (each fold a single space). What the page says of the folded header still holds for a request that is sent:
`test_a_folded_header_cannot_be_sent` shows that httpx refuses it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import pytest

from onellm.errors import Secret
from onellm.providers.deployments._sigv4 import AwsCredentials, canonical_uri, sign, signing_key

SUITE = Path(__file__).resolve().parents[4] / "testdata" / "aws-sigv4"
CASES = sorted(SUITE.rglob("*.req"))
WHEN = dt.datetime(2015, 8, 30, 12, 36, tzinfo=dt.UTC)
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"
"""The token `get-vanilla-with-session-token.creq` shows (botocore's test gives it the same way)."""


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def parse(request: str) -> tuple[str, str, str, list[tuple[str, str]], bytes]:
    """(method, raw path, raw query, headers in order, body) of a `.req` file. The request target may hold spaces
    (`get-space`); a line that starts with whitespace continues the header before it (obsolete line folding)."""
    head, _, body = request.partition("\n\n")
    first, *lines = head.split("\n")
    method, rest = first.split(" ", 1)
    target, _, version = rest.rpartition(" ")
    assert version == "HTTP/1.1"
    headers: list[tuple[str, str]] = []
    for line in lines:
        if not line:
            continue
        if line[0] in " \t":
            name, value = headers[-1]
            headers[-1] = (name, f"{value} {line.strip()}")
            continue
        name, _, value = line.partition(":")
        headers.append((name, value))
    path, _, query = target.partition("?")
    return method, path, query, headers, body.encode("utf-8")


def case_id(path: Path) -> str:
    return path.parent.name


@pytest.mark.parametrize("request_file", CASES, ids=case_id)
def test_every_case_signs_as_the_suite_says(request_file: Path) -> None:
    method, path, query, headers, body = parse(read(request_file))
    token = SESSION_TOKEN if request_file.stem == "get-vanilla-with-session-token" else None
    credentials = AwsCredentials("AKIDEXAMPLE", Secret(SECRET), session_token=token)
    signed = sign(
        method,
        path,
        query,
        headers,
        body,
        credentials=credentials,
        region="us-east-1",
        service="service",
        when=WHEN,
        signed=[name for name, _ in headers],
    )
    stem = request_file.with_suffix("")
    assert signed.canonical_request == read(stem.with_suffix(".creq"))
    assert signed.string_to_sign == read(stem.with_suffix(".sts"))
    assert signed.authorization == read(stem.with_suffix(".authz"))


@pytest.mark.parametrize("request_file", CASES, ids=case_id)
def test_the_suite_copy_is_consistent(request_file: Path) -> None:
    """Each case's string to sign hashes its canonical request, and its signature is the HMAC of its string to sign:
    the suite's own artifacts agree, so no case needs to be left out."""
    stem = request_file.with_suffix("")
    creq, sts = read(stem.with_suffix(".creq")), read(stem.with_suffix(".sts"))
    assert sts.splitlines()[-1] == hashlib.sha256(creq.encode()).hexdigest()
    import hmac

    key = signing_key(Secret(SECRET), "20150830", "us-east-1", "service")
    signature = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    assert read(stem.with_suffix(".authz")).endswith(f"Signature={signature}")


def test_the_suite_is_all_there() -> None:
    assert len(CASES) == 34
    names = {case_id(p) for p in CASES}
    assert {
        "get-header-value-multiline",
        "post-x-www-form-urlencoded",
        "post-x-www-form-urlencoded-parameters",
    } <= names


def test_a_folded_header_cannot_be_sent() -> None:
    """The page's reason for leaving `get-header-value-multiline` out: an HTTP/1.1 request message cannot carry a folded
    header; h11, which httpx sends HTTP/1.1 with, refuses to write one."""
    import h11

    with pytest.raises(h11.LocalProtocolError, match="Illegal header value"):
        h11.Request(
            method="GET", target="/", headers=[("host", "example.amazonaws.com"), ("my-header1", "value1\r\n  value2")]
        )


@pytest.mark.parametrize(
    ("raw", "signed"),
    [
        (
            "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke",
            "/model/anthropic.claude-sonnet-4-5-20250929-v1%253A0/invoke",
        ),
        (
            "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.x/invoke",
            "/model/arn%253Aaws%253Abedrock%253Aus-east-1%253A123456789012%253Ainference-profile%252Fus.x/invoke",
        ),
        ("/a/./b/../c//d/", "/a/c/d/"),
        ("/..", "/"),
        ("/a/.", "/a/"),
    ],
)
def test_a_path_is_signed_encoded_once_more(raw: str, signed: str) -> None:
    """Services other than S3 sign the path as sent, percent-encoded again: a model id's `%3A` is signed `%253A`."""
    assert canonical_uri(raw) == signed


def test_credentials_never_show() -> None:
    credentials = AwsCredentials("AKIDEXAMPLE", SECRET, session_token="token-value-123")
    for text in (repr(credentials), str(credentials)):
        assert "AKIDEXAMPLE" not in text
        assert SECRET not in text
        assert "token-value" not in text
    with pytest.raises(ValueError, match="both"):
        AwsCredentials("", SECRET)
