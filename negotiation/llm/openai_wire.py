"""The OpenAI chat-completions wire format, as far as the project speaks it: the client
(openai_backend) writes requests and reads replies with these models, and the project's
own server (server.py) reads requests and writes replies with the same ones, so both
sides agree by construction. Replies are validated: a server that answers 200 with
something else is a malformed reply, not a crash."""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .backend import ChatMessage, ChatRequest, ChatResult

DEFAULT_MAX_TOKENS = 256


class WireMessage(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class JsonSchemaFormat(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    name: str = "reply"
    schema_: dict[str, Any] = Field(alias="schema")
    strict: bool | None = None


class ResponseFormat(BaseModel):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class CompletionRequest(BaseModel):
    """POST /v1/chat/completions: the fields the backends act on; others are ignored, as
    OpenAI-style servers do."""

    model: str = ""
    messages: list[WireMessage] = Field(min_length=1)
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    response_format: ResponseFormat | None = None

    @classmethod
    def from_chat(cls, request: ChatRequest, model: str) -> CompletionRequest:
        fmt = None
        if request.json_schema is not None:
            fmt = ResponseFormat(
                type="json_schema",
                json_schema=JsonSchemaFormat(schema_=request.json_schema, strict=True),
            )
        return cls(
            model=model,
            messages=[WireMessage(role=m.role, content=m.content) for m in request.messages],
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            seed=request.seed,
            stop=list(request.stop) or None,
            response_format=fmt,
        )

    def body(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_chat(self) -> ChatRequest:
        schema = None
        if self.response_format and self.response_format.type == "json_schema":
            if self.response_format.json_schema is None:
                raise ValueError("response_format json_schema needs a json_schema object")
            schema = self.response_format.json_schema.schema_
        elif self.response_format and self.response_format.type == "json_object":
            schema = {"type": "object"}
        stop = [self.stop] if isinstance(self.stop, str) else (self.stop or [])
        return ChatRequest(
            messages=tuple(ChatMessage(role=m.role, content=m.content) for m in self.messages),
            seed=self.seed or 0,
            temperature=self.temperature,
            max_tokens=self.max_tokens or DEFAULT_MAX_TOKENS,
            stop=tuple(stop),
            json_schema=schema,
        )


class ReplyMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: ReplyMessage
    finish_reason: str | None = None


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class Completion(BaseModel):
    id: str = ""
    object: str = "chat.completion"
    created: int = 0
    model: str = ""
    choices: list[Choice] = Field(min_length=1)
    usage: Usage | None = None

    @classmethod
    def from_result(cls, result: ChatResult, model: str) -> Completion:
        return cls(
            id=f"chatcmpl-{uuid.uuid4().hex}",
            created=int(time.time()),
            model=model,
            choices=[
                Choice(
                    message=ReplyMessage(content=result.text),
                    finish_reason=result.finish_reason,
                )
            ],
            usage=Usage(
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                total_tokens=result.prompt_tokens + result.completion_tokens,
            ),
        )

    def to_result(self, latency_s: float) -> ChatResult:
        choice = self.choices[0]
        usage = self.usage or Usage()
        return ChatResult(
            text=choice.message.content,
            finish_reason="length" if choice.finish_reason == "length" else "stop",
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            latency_s=latency_s,
        )


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}
