"""Python client for Chat History Service: `ChatHistoryClient`, `AsyncChatHistoryClient`, their typed
results and errors. Framework adapters: `chat_history_client.agents.ChatHistorySession` (OpenAI Agents
SDK, extra `[agents]`) and `chat_history_client.langchain.ChatHistoryMessageHistory` (LangChain, extra
`[langchain]`)."""

from chat_history_client.client import DEFAULT_BASE_URL, AsyncChatHistoryClient, ChatHistoryClient
from chat_history_client.errors import (
    APIError,
    AuthenticationError,
    BudgetExceeded,
    ChatHistoryError,
    Conflict,
    ImportFailed,
    InvalidRequest,
    JobNotDone,
    ModelError,
    NotFound,
    RateLimited,
    ServiceUnavailable,
    TransportError,
)
from chat_history_client.types import (
    Conversation,
    ErasureReceipt,
    Message,
    Page,
    PostResult,
    UserExport,
    UserImport,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "APIError",
    "AsyncChatHistoryClient",
    "AuthenticationError",
    "BudgetExceeded",
    "ChatHistoryClient",
    "ChatHistoryError",
    "Conflict",
    "Conversation",
    "ErasureReceipt",
    "ImportFailed",
    "InvalidRequest",
    "JobNotDone",
    "Message",
    "ModelError",
    "NotFound",
    "Page",
    "PostResult",
    "RateLimited",
    "ServiceUnavailable",
    "TransportError",
    "UserExport",
    "UserImport",
]
