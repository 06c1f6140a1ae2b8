"""Model interfaces: any Python callable, an OpenAI-compatible HTTP client, and stand-in models."""

from icml25.reasoning.gsm_infinity.models.base import CallableModel, ChatModel, as_chat_model, prompt_of
from icml25.reasoning.gsm_infinity.models.http import (
    ModelRequestError,
    ModelResponseError,
    OpenAICompatibleClient,
)
from icml25.reasoning.gsm_infinity.models.server import ChatServer, serve_chat_model
from icml25.reasoning.gsm_infinity.models.standins import (
    BM25,
    OracleModel,
    RAGModel,
    RandomGuessModel,
    SigmoidModel,
)

__all__ = [
    "BM25",
    "CallableModel",
    "ChatModel",
    "ChatServer",
    "ModelRequestError",
    "ModelResponseError",
    "OpenAICompatibleClient",
    "OracleModel",
    "RAGModel",
    "RandomGuessModel",
    "SigmoidModel",
    "as_chat_model",
    "prompt_of",
    "serve_chat_model",
]
