"""What each function's sample event in events/ asks: `scripts/gen_events.py` wraps it in the shape of the
function's trigger (functions/routes.py) and writes events/<folder>.json (`make events`).

HTTP requests name the sample caller "alice"; the conversation and message ids name nothing stored, so on
an empty table those routes answer 404 (tests/integration/test_events_files.py), while the world routes
work on world "save1" once add_dialogue_entries' event has run.
"""

# Sample requests are kept whole on one line each.
# ruff: noqa: E501

from __future__ import annotations

from typing import Any

CONVERSATION = "01JD8ZQ5N6Y4T3W2V1S0R9P8QM"
MESSAGE = "01JD8ZQ5P0000000018XKQ3R2T"
ANSWER = "01JD8ZQ5P0000000019XKQ3R2V"
JOB = "0123456789abcdef0123456789abcdef"
WORLD = "save1"

#: folder -> the request: path parameters, query, body (JSON value, or a string sent as is), headers,
#: extra JWT claims, and which of the function's routes (by index, default the first).
HTTP: dict[str, dict[str, Any]] = {
    "create_conversation": {
        "body": {
            "title": "Trip planning",
            "system_prompt": "You are a concise travel assistant.",
            "model": "gpt-4o-mini",
        }
    },
    "post_message": {
        "headers": {"idempotency-key": "3f1c7a2e-retry-safe-key"},
        "body": {"content": "Plan three days in Lisbon."},
    },
    "chat_completions": {
        "body": {
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "Plan three days in Lisbon."}],
        }
    },
    "list_models": {},
    "responses": {"body": {"model": "gpt-4o-mini", "input": "Plan three days in Lisbon."}},
    "openai_conversations": {"body": {"items": [{"type": "message", "role": "user", "content": "Hello"}]}},
    "serve_console": {},
    "list_conversations": {"query": {"limit": "20"}},
    "get_conversation": {"path": {"conversation_id": CONVERSATION}, "query": {"limit": "100"}},
    "delete_conversation": {"path": {"conversation_id": CONVERSATION}},
    "build_window": {
        "path": {"conversation_id": CONVERSATION},
        "body": {"content": "And what about day four?"},
    },
    "get_events": {"path": {"conversation_id": CONVERSATION}, "query": {"limit": "200"}},
    "get_usage": {"query": {"from": "2026-11-01", "to": "2026-11-30"}},
    # MEM-32: the caller's current facts taken from one conversation.
    "memory_facts": {"query": {"limit": "20", "conversation_id": CONVERSATION}},
    "search_memory": {"query": {"q": "what did I say about Lisbon?", "limit": "10"}},
    # COST-4: an administrator (the deployment's ADMIN_GROUP, chat-admins here) sets bob's limits.
    "set_budget": {
        "path": {"user_id": "bob"},
        "claims": {"cognito:groups": "[chat-admins]"},
        "body": {"daily_tokens": 200000, "monthly_usd": 5},
    },
    "update_message": {
        "path": {"conversation_id": CONVERSATION, "message_id": MESSAGE},
        "body": {"pinned": True},
    },
    "update_conversation": {
        "path": {"conversation_id": CONVERSATION},
        "body": {"title": "Trip planning", "defaults": {"temperature": 0.2, "max_completion_tokens": 800}},
    },
    "edit_message": {
        "path": {"conversation_id": CONVERSATION, "message_id": MESSAGE},
        "body": {"content": "Plan four days in Lisbon instead."},
    },
    "regenerate_message": {"path": {"conversation_id": CONVERSATION, "message_id": ANSWER}, "body": {}},
    "get_tree": {"path": {"conversation_id": CONVERSATION}, "query": {"limit": "100"}},
    "set_active": {"path": {"conversation_id": CONVERSATION}, "body": {"message_id": MESSAGE}},
    "append_messages": {
        "path": {"conversation_id": CONVERSATION},
        "body": {
            "messages": [
                {"role": "user", "content": "What is the weather in Lisbon?"},
                {"role": "assistant", "content": "Sunny, 24 degrees."},
            ]
        },
    },
    "delete_message": {"path": {"conversation_id": CONVERSATION, "message_id": MESSAGE}},
    # MEM-20: a memory item put by namespace and key (LangGraph's store).
    "memory_items": {
        "body": {
            "namespace": ["users", "alice", "memories"],
            "key": "food",
            "value": {"text": "Likes pizza with pineapple", "kind": "preference"},
            "ttl": 1440,
        }
    },
    "add_dialogue_entries": {
        "path": {"world_id": WORLD},
        "body": {
            "participants": ["player", "zorg"],
            "entries": [
                {
                    "participant_id": "player",
                    "role": "user",
                    "content": "Zorg, we need to talk.",
                    "game_tick": 272500,
                    "name": "Player",
                    "entry_id": "save1-0001",
                },
                {
                    "participant_id": "zorg",
                    "role": "assistant",
                    "content": "Talk fast, human.",
                    "game_tick": 272600,
                    "name": "Zorg",
                    "entry_id": "save1-0002",
                },
            ],
        },
    },
    "get_dialogue_history": {
        "path": {"world_id": WORLD},
        "query": {"participants": "player,zorg", "limit": "10"},
    },
    "list_worlds": {"query": {"limit": "50"}},
    "list_dialogues": {"path": {"world_id": WORLD}, "query": {"limit": "50"}},
    "build_dialogue_prompt": {
        "path": {"world_id": WORLD},
        "body": {
            "participants": ["player", "zorg"],
            "ai_participant": "zorg",
            "system_prompt": "You are Zorg, a grumpy mechanoid hunter. Stay in character.",
            "scene": {"location": "barracks", "mood": "tense"},
            "other_data": {"weather": "cold snap"},
            "names": {"player": "Player", "zorg": "Zorg"},
            "history_limit": 10,
            "max_prompt_tokens": 2000,
            "current": {
                "participant_id": "player",
                "content": "Will you join the raid?",
                "game_tick": 273000,
            },
        },
    },
    "export_world": {"path": {"world_id": WORLD}},
    "delete_world": {"path": {"world_id": WORLD}},
    "delete_dialogue": {"path": {"world_id": WORLD, "dialogue_id": "player+zorg"}},
    "delete_dialogue_entry": {
        "path": {"world_id": WORLD, "dialogue_id": "player+zorg", "entry_id": "save1-0001"}
    },
    "save_world": {"path": {"world_id": WORLD}, "body": {"save_id": "before-raid", "game_tick": 272600}},
    "list_saves": {"path": {"world_id": WORLD}},
    "load_save": {"path": {"world_id": WORLD, "save_id": "before-raid"}},
    "revert_load": {"path": {"world_id": WORLD, "save_id": "before-raid"}},
    "export_world_s3": {"path": {"world_id": WORLD}},
    "create_import": {"path": {"world_id": "save2"}},
    "start_import": {"path": {"world_id": "save2", "job_id": JOB}},
    "user_erasure": {"path": {"user_id": "alice"}},
    "user_exports": {"path": {"user_id": "alice"}},
    "user_imports": {"path": {"user_id": "alice"}},
    "get_import": {"path": {"world_id": "save2", "job_id": JOB}},
    "import_world": {
        "path": {"world_id": "save2"},
        "query": {"mode": "restore"},
        "content_type": "application/x-ndjson",
        "body": '{"type":"world","format":"chat-history.dialogues","version":1,"world_id":"save1","exported_at":"2025-01-01T00:00:00Z","dialogues":1,"entries":1}\n{"type":"dialogue","dialogue_id":"player+zorg","participants":["player","zorg"],"created_at":"2025-01-01T00:00:00.000000Z","updated_at":"2025-01-01T00:00:00.000000Z","next_seq":1,"entry_count":1}\n{"dialogue_id":"player+zorg","entry_id":"save1-0001","participant_id":"player","role":"user","content":"Zorg, we need to talk.","game_tick":272500,"seq":0,"created_at":"2025-01-01T00:00:00.000000Z","name":"Player","type":"entry"}\n',
    },
}

#: folder -> the SQS messages of its sample batch: (message id, body as sent).
SQS: dict[str, list[tuple[str, str]]] = {
    # One good message and one poisoned: the batch answer names the second as failed.
    "ingest_dialogue_entries": [
        (
            "059f36b4-87a3-44ab-83d2-661975830a7d",
            '{"owner": "alice", "world_id": "save1", "participants": ["player", "zorg", "trader"], "entries": [{"participant_id": "trader", "role": "character", "content": "Fresh meat for sale.", "game_tick": 60000, "entry_id": "q-0001"}]}',
        ),
        ("2e1424d4-f796-459a-8184-9c92662be6da", "{this message is poisoned"),
    ],
    # DLG-6: the worker picks up an import job (one message per job).
    "run_import": [
        (
            "7b2c9d3e-5f60-4a1b-8c2d-3e4f5a6b7c8d",
            '{"owner": "alice", "world_id": "save2", "job_id": "0123456789abcdef0123456789abcdef"}',
        )
    ],
    "run_user_job": [("5d0f8a9e-1b2c-4d3e-8f4a-5b6c7d8e9f01", '{"kind": "erasure", "owner": "alice"}')],
}

#: folder -> its sample stream records (what varies: the event, the keys and images).
STREAM: dict[str, list[dict[str, Any]]] = {
    # The INSERT of a reply the model wrote: the summarizer's filter lets it through.
    "summarize_conversation": [
        {
            "eventID": "7de3041dd709b024af6f29e4fa13d34c",
            "eventName": "INSERT",
            "dynamodb": {
                "ApproximateCreationDateTime": 1735689600,
                "Keys": {
                    "pk": {"S": "USER#alice#CONV#01JABCDEFGHJKMNPQRSTVWXYZ0"},
                    "sk": {"S": "MSG#0000000014"},
                },
                "NewImage": {
                    "pk": {"S": "USER#alice#CONV#01JABCDEFGHJKMNPQRSTVWXYZ0"},
                    "sk": {"S": "MSG#0000000014"},
                    "type": {"S": "message"},
                    "conversation_id": {"S": "01JABCDEFGHJKMNPQRSTVWXYZ0"},
                    "message_id": {"S": "01JABCDEFGHJKMNPQRSTVWXYZ1"},
                    "seq": {"N": "14"},
                    "role": {"S": "assistant"},
                    "content": {"S": "Paris."},
                    "status": {"S": "ok"},
                    "created_at": {"S": "2025-01-01T00:00:00.000000Z"},
                    "tokens": {"N": "6"},
                    "model": {"S": "gpt-4o-mini"},
                    "usage": {
                        "M": {
                            "prompt_tokens": {"N": "180"},
                            "completion_tokens": {"N": "2"},
                            "total_tokens": {"N": "182"},
                        }
                    },
                },
                "SequenceNumber": "111100000000000000000001",
                "SizeBytes": 420,
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            },
        }
    ],
    # A conversation item removed by DynamoDB's TTL process.
    "purge_conversation": [
        {
            "eventID": "9a1b3cd0a6ee4d5e8f7a6b5c4d3e2f10",
            "eventName": "REMOVE",
            "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
            "dynamodb": {
                "ApproximateCreationDateTime": 1738281600,
                "Keys": {"pk": {"S": "USER#alice#CONV#01JABCDEFGHJKMNPQRSTVWXYZ0"}, "sk": {"S": "~META"}},
                "OldImage": {
                    "pk": {"S": "USER#alice#CONV#01JABCDEFGHJKMNPQRSTVWXYZ0"},
                    "sk": {"S": "~META"},
                    "type": {"S": "conversation"},
                    "conversation_id": {"S": "01JABCDEFGHJKMNPQRSTVWXYZ0"},
                    "owner": {"S": "alice"},
                    "title": {"S": "Trip to Paris"},
                    "model": {"S": "gpt-4o-mini"},
                    "created_at": {"S": "2025-01-01T00:00:00.000000Z"},
                    "updated_at": {"S": "2025-01-01T00:00:00.000000Z"},
                    "next_seq": {"N": "15"},
                    "message_count": {"N": "14"},
                    "deleted_at": {"S": "2025-01-01T00:00:00.000000Z"},
                    "expires_at": {"N": "1735689600"},
                },
                "SequenceNumber": "111100000000000000000002",
                "SizeBytes": 380,
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            },
        }
    ],
}

#: file name -> (folder, payload): direct invocations (Lambda Invoke, Step Functions), no API in between.
DIRECT: dict[str, tuple[str, dict[str, Any]]] = {
    "direct_get_events": (
        "get_events",
        {"user_id": "alice", "path_parameters": {"conversation_id": CONVERSATION}, "query": {"limit": 50}},
    ),
    "direct_post_message": (
        "post_message",
        {
            "user_id": "alice",
            "headers": {"Idempotency-Key": "nightly-report-2025-01-01"},
            "body": {"content": "Summarize yesterday's support tickets."},
        },
    ),
    "direct_update_message": (
        "update_message",
        {
            "user_id": "alice",
            "path_parameters": {"conversation_id": CONVERSATION, "message_id": MESSAGE},
            "body": {"pinned": True},
        },
    ),
    "summarize_conversation_direct": (
        "summarize_conversation",
        {"owner": "alice", "conversation_id": "01JABCDEFGHJKMNPQRSTVWXYZ0"},
    ),
    "purge_conversation_direct": (
        "purge_conversation",
        {"owner": "alice", "conversation_id": "01JABCDEFGHJKMNPQRSTVWXYZ0"},
    ),
}

#: folder -> the request its function URL receives (API-14, API-16): the caller's JWT goes in the
#: Authorization header, verified by the function itself; the sample's is a placeholder to replace.
FUNCTION_URL: dict[str, dict[str, Any]] = {
    "stream_chat": {
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": {
            "authorization": "Bearer <a JWT of JwtIssuer for JwtAudience>",
            "accept": "text/event-stream",
        },
        "body": {
            "model": "gpt-4o-mini",
            "stream": True,
            "messages": [{"role": "user", "content": "Plan three days in Lisbon."}],
        },
    },
}

#: RSP-12: one client message on the WebSocket API (its $connect carries the JWT; this message only names
#: the connection, which the $connect wrote).
SOCKET: dict[str, dict[str, Any]] = {
    "responses_socket": {
        "route": "response.create",
        "body": {"type": "response.create", "model": "gpt-4o-mini", "input": "Hello over the socket."},
    },
}
