from __future__ import annotations

import pickle
from datetime import timedelta

import pytest

from onellm import (
    AuthError,
    BadDefinitionError,
    BadRequestError,
    OnellmError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    Secret,
    TemplateError,
)


def test_secret_never_shows_its_value() -> None:
    key = Secret("sk-live-1234567890")
    assert "sk-live" not in str(key)
    assert "sk-live" not in repr(key)
    assert "sk-live" not in f"{key}"
    assert key.reveal() == "sk-live-1234567890"


def test_secret_cannot_be_pickled() -> None:
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(Secret("sk-live-1234567890"))


def test_secret_redacts_text() -> None:
    key = Secret("sk-abc")
    assert key.redact("bad key sk-abc given") == "bad key **** given"


def test_secret_takes_only_text() -> None:
    with pytest.raises(TypeError):
        Secret(b"bytes")  # type: ignore[arg-type]


def test_provider_errors_share_the_root_and_carry_context() -> None:
    error = RateLimitError("slow down", provider="openai", status=429, retry_after=timedelta(seconds=3))
    assert isinstance(error, ProviderError)
    assert isinstance(error, OnellmError)
    assert error.retry_after == timedelta(seconds=3)
    assert str(error) == "slow down (openai, 429)"
    assert issubclass(AuthError, ProviderError)
    assert issubclass(OverloadedError, ProviderError)
    assert not issubclass(BadRequestError, RateLimitError)


def test_bad_definition_error_names_file_line_and_column() -> None:
    error = BadDefinitionError("unknown state 'runing'", file="runs/a.yaml", line=4, column=8, path="state")
    assert str(error) == "runs/a.yaml:4:8: unknown state 'runing' (at state)"
    assert (error.file, error.line, error.column) == ("runs/a.yaml", 4, 8)


def test_template_error_carries_its_kind_and_position() -> None:
    error = TemplateError('function "nope" not defined', kind="parse", name="greeting", line=1, column=3, offset=2)
    assert error.kind == "parse"
    assert str(error).startswith("greeting:1:3: parse error:")


def test_argument_and_instance_id_errors_live_under_the_root_and_keep_their_old_homes() -> None:
    import onellm.instances
    import onellm.schema
    import onellm.tools
    from onellm.errors import ArgumentError, InvalidInstanceIdError

    assert onellm.schema.ArgumentError is ArgumentError
    assert onellm.tools.ArgumentError is ArgumentError
    assert onellm.instances.InvalidInstanceIdError is InvalidInstanceIdError
    assert issubclass(ArgumentError, OnellmError)
    # Existing `except ValueError` clauses keep catching a refused instance id.
    assert issubclass(InvalidInstanceIdError, OnellmError)
    assert issubclass(InvalidInstanceIdError, ValueError)

    error = ArgumentError("must be an integer, not a string").within("qty").within(2).within("items")
    assert (error.path, str(error)) == ("items[2].qty", "Argument 'items[2].qty' must be an integer, not a string.")
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.segments, str(again)) == (ArgumentError, ["items", 2, "qty"], str(error))
