"""Cloud deployments: where a provider's requests go and how they are signed, with no cloud SDK.

| Provider | Deployment | Auth |
|---|---|---|
| `OpenAIProvider` | `AzureOpenAIEndpoint` (Azure OpenAI / Foundry) | `api-key`, or a Microsoft Entra token from a delegate |
| `AnthropicProvider` | `BedrockDeployment` (Amazon Bedrock) | AWS Signature Version 4, or a Bedrock API key |
| `AnthropicProvider` | `VertexAnthropicDeployment` (Vertex AI) | Google OAuth (`GoogleBearerAuth`) |
| `GeminiProvider` | `VertexGeminiEndpoint` (Vertex AI) | Google OAuth (`GoogleBearerAuth`) |

A provider given one (`AnthropicProvider(deployment=BedrockDeployment.from_environment("us-east-1"))`) keeps its name
(`anthropic`) and its codec; `provider.deployment` says `bedrock`. See `docs/deployments.md`. Names load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onellm.providers.deployments._azure import ENTRA_SCOPE, AzureOpenAIEndpoint
    from onellm.providers.deployments._bedrock import BEDROCK_MODEL_IDS, BedrockDeployment
    from onellm.providers.deployments._common import AccessToken, Deployment, TokenCache
    from onellm.providers.deployments._eventstream import EventStreamReader
    from onellm.providers.deployments._google import CLOUD_PLATFORM_SCOPE, GoogleBearerAuth, GoogleServiceAccount
    from onellm.providers.deployments._sigv4 import AwsCredentials
    from onellm.providers.deployments._vertex import VertexAnthropicDeployment, VertexGeminiEndpoint

_LAZY = {
    "ENTRA_SCOPE": "onellm.providers.deployments._azure",
    "AzureOpenAIEndpoint": "onellm.providers.deployments._azure",
    "BEDROCK_MODEL_IDS": "onellm.providers.deployments._bedrock",
    "BedrockDeployment": "onellm.providers.deployments._bedrock",
    "AccessToken": "onellm.providers.deployments._common",
    "Deployment": "onellm.providers.deployments._common",
    "TokenCache": "onellm.providers.deployments._common",
    "EventStreamReader": "onellm.providers.deployments._eventstream",
    "CLOUD_PLATFORM_SCOPE": "onellm.providers.deployments._google",
    "GoogleBearerAuth": "onellm.providers.deployments._google",
    "GoogleServiceAccount": "onellm.providers.deployments._google",
    "AwsCredentials": "onellm.providers.deployments._sigv4",
    "VertexAnthropicDeployment": "onellm.providers.deployments._vertex",
    "VertexGeminiEndpoint": "onellm.providers.deployments._vertex",
}

__all__ = [
    "BEDROCK_MODEL_IDS",
    "CLOUD_PLATFORM_SCOPE",
    "ENTRA_SCOPE",
    "AccessToken",
    "AwsCredentials",
    "AzureOpenAIEndpoint",
    "BedrockDeployment",
    "Deployment",
    "EventStreamReader",
    "GoogleBearerAuth",
    "GoogleServiceAccount",
    "TokenCache",
    "VertexAnthropicDeployment",
    "VertexGeminiEndpoint",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
