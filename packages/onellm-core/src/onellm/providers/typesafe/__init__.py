"""TypeSafe Jev, the decisions engine: `JevProvider` and its wire codec (`POST /v1/systemone`)."""

from onellm.providers.typesafe._jev import JevProvider, decode_jev_response, encode_jev_request

__all__ = ["JevProvider", "decode_jev_response", "encode_jev_request"]
