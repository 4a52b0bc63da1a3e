"""The control endpoint's OpenAPI 3.1 description, served at ``/openapi.json``: what a
test in any language needs to drive a broker, and what schemathesis fuzzes it against.

The schemas say exactly what the endpoint accepts (one rule shape per action, the APIs an
error can be injected into), so a request the description allows is one it serves.
"""

from __future__ import annotations

from typing import Any

from millpond import __version__
from millpond.broker.control.faults import MAX_DELAY_MS, FaultAction, FaultError
from millpond.broker.error_responses import check
from millpond.wire.api import APIS
from millpond.wire.errors import ErrorCode

#: Longest clock jump (ten years): past every timeout, and far from int64 overflow.
MAX_ADVANCE_MS = 10 * 365 * 24 * 3600 * 1000


def _injectable(key: int) -> bool:
    try:
        check(key)
    except FaultError:
        return False
    return True


def _api(keys: list[int]) -> dict[str, Any]:
    return {
        "description": "The API, by Kafka's name or by key.",
        "oneOf": [
            {"type": "string", "enum": sorted(APIS[k].name for k in keys)},
            {"type": "integer", "enum": sorted(keys)},
        ],
    }


def _rule(action: FaultAction, extra: dict[str, Any], required: list[str]) -> dict[str, Any]:
    keys = sorted(APIS) if action is not FaultAction.ERROR else [k for k in APIS if _injectable(k)]
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["api", "action", *required],
        "properties": {
            "api": _api(keys),
            "action": {"const": action.value},
            "count": {
                "description": "How many matching requests it applies to; null for all.",
                "type": ["integer", "null"],
                "minimum": 1,
                "maximum": 2**31 - 1,
                "default": 1,
            },
            "topic": {"type": ["string", "null"], "description": "Only requests naming it."},
            "partition": {
                "type": ["integer", "null"],
                "minimum": 0,
                "maximum": 2**31 - 1,
                "description": "Only requests naming this partition (of the topic, if one "
                "is given; of any topic otherwise).",
            },
            "client_id": {"type": ["string", "null"], "description": "Only from this client."},
            **extra,
        },
    }


def _error() -> dict[str, Any]:
    codes = [c for c in ErrorCode if c != ErrorCode.NONE]
    return {
        "description": "The Kafka error, by name or code.",
        "oneOf": [
            {"type": "string", "enum": [c.name for c in codes]},
            {"type": "integer", "enum": [int(c) for c in codes]},
        ],
    }


_NULLABLE_STR = {"type": ["string", "null"]}
_NULLABLE_INT = {"type": ["integer", "null"]}
_FAULT = {
    "type": "object",
    "required": ["id", "api", "api_key", "action", "count", "applied"],
    "properties": {
        "id": {"type": "integer"},
        "api": {"type": "string"},
        "api_key": {"type": "integer"},
        "action": {"type": "string", "enum": [a.value for a in FaultAction]},
        "count": _NULLABLE_INT,
        "error": _NULLABLE_STR,
        "error_code": _NULLABLE_INT,
        "delay_ms": _NULLABLE_INT,
        "topic": _NULLABLE_STR,
        "partition": _NULLABLE_INT,
        "client_id": _NULLABLE_STR,
        "applied": {"type": "integer"},
    },
}
_CLOCK = {
    "type": "object",
    "required": ["now_ms", "frozen", "offset_ms"],
    "properties": {
        "now_ms": {"type": "integer"},
        "frozen": {"type": "boolean"},
        "offset_ms": {"type": "integer"},
    },
}
_GROUP = {
    "type": "object",
    "required": ["group_id", "state", "generation", "members"],
    "properties": {
        "group_id": {"type": "string"},
        "state": {"type": "string"},
        "generation": {"type": "integer"},
        "protocol_type": _NULLABLE_STR,
        "protocol": _NULLABLE_STR,
        "leader": _NULLABLE_STR,
        "members": {"type": "array", "items": {"type": "object"}},
    },
}
_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string", "description": "What was wrong, and what to do."}},
}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    reasons = {400: "The request was malformed.", 404: "No such thing.", 409: "Not possible now."}
    return {
        str(code): _json({"$ref": "#/components/schemas/Error"}, reasons[code]) for code in codes
    }


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def openapi() -> dict[str, Any]:
    rules = [
        _rule(FaultAction.ERROR, {"error": _error()}, ["error"]),
        _rule(
            FaultAction.DELAY,
            {"delay_ms": {"type": "integer", "minimum": 1, "maximum": MAX_DELAY_MS}},
            ["delay_ms"],
        ),
        _rule(FaultAction.DROP, {}, []),
        _rule(FaultAction.CLOSE, {}, []),
    ]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "millpond control endpoint",
            "version": __version__,
            "description": (
                "Drive a millpond broker from tests in any language: inject faults into "
                "the Kafka requests it serves, move its clock, force a group rebalance, "
                "read its live state. Loopback only; off unless millpond.control.port is set."
            ),
        },
        "paths": {
            "/v1/faults": {
                "get": {
                    "summary": "The active fault rules, oldest first.",
                    "responses": {
                        "200": _json({"type": "array", "items": _ref("Fault")}, "Rules.")
                    },
                },
                "post": {
                    "summary": "Add a rule: the next matching requests fail, wait, go "
                    "unanswered (the connection then goes silent) or close their connection.",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _ref("FaultRule")}},
                    },
                    "responses": {
                        "201": _json(_ref("Fault"), "The rule, with its id."),
                        **_errors(400),
                    },
                },
                "delete": {
                    "summary": "Remove every rule.",
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["removed"],
                                "properties": {"removed": {"type": "integer"}},
                            },
                            "How many were removed.",
                        )
                    },
                },
            },
            "/v1/faults/{id}": {
                "delete": {
                    "summary": "Remove one rule.",
                    "parameters": [
                        {
                            "name": "id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer"},
                        }
                    ],
                    "responses": {"204": {"description": "Removed."}, **_errors(400, 404)},
                }
            },
            "/v1/clock": {
                "get": {
                    "summary": "The broker's clock.",
                    "responses": {"200": _json(_ref("Clock"), "Now.")},
                }
            },
            "/v1/clock/advance": {
                "post": {
                    "summary": "Jump the clock forwards; session timeouts, retention and "
                    "producer and offset expiry act on it at once.",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["ms"],
                                    "properties": {
                                        "ms": {
                                            "type": "integer",
                                            "minimum": 0,
                                            "maximum": MAX_ADVANCE_MS,
                                        }
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json(_ref("Clock"), "The clock after the jump."),
                        **_errors(400),
                    },
                }
            },
            "/v1/clock/freeze": {
                "post": {
                    "summary": "Stop the clock (it moves only when advanced).",
                    "responses": {"200": _json(_ref("Clock"), "The frozen clock.")},
                }
            },
            "/v1/clock/resume": {
                "post": {
                    "summary": "Let the clock run again from where it stands.",
                    "responses": {"200": _json(_ref("Clock"), "The running clock.")},
                }
            },
            "/v1/groups/{group_id}/rebalance": {
                "post": {
                    "summary": "Force a rebalance of a consumer group: members learn it from "
                    "their next heartbeat and rejoin.",
                    "parameters": [
                        {
                            "name": "group_id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {
                        "200": _json(_ref("Group"), "The group, rebalancing."),
                        **_errors(404),
                    },
                }
            },
            "/v1/producers/{producer_id}/fence": {
                "post": {
                    "summary": "Fence an idempotent producer: its epoch is bumped on every "
                    "partition it wrote to, so its next batch is refused with "
                    "INVALID_PRODUCER_EPOCH (held in memory until the broker restarts).",
                    "parameters": [
                        {
                            "name": "producer_id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer", "format": "int64"},
                        }
                    ],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["producer_id", "partitions"],
                                "properties": {
                                    "producer_id": {"type": "integer"},
                                    "partitions": {"type": "array", "items": {"type": "object"}},
                                },
                            },
                            "Where it was fenced, and its new epoch there.",
                        ),
                        **_errors(400, 404),
                    },
                }
            },
            "/v1/state": {
                "get": {
                    "summary": "Live state: groups, idempotent producers per partition, fetch "
                    "sessions, the clock, the active fault rules and the last used-up ones.",
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["groups", "producers", "fetch_sessions", "faults"],
                                "properties": {
                                    "groups": {"type": "array", "items": _ref("Group")},
                                    "producers": {"type": "array", "items": {"type": "object"}},
                                    "fetch_sessions": {
                                        "type": "array",
                                        "items": {"type": "object"},
                                    },
                                    "clock": {"oneOf": [_ref("Clock"), {"type": "null"}]},
                                    "faults": {"type": "array", "items": _ref("Fault")},
                                    "spent_faults": {
                                        "description": "The last rules used up, with how "
                                        "often each fired.",
                                        "type": "array",
                                        "items": _ref("Fault"),
                                    },
                                },
                            },
                            "The state.",
                        )
                    },
                }
            },
        },
        "components": {
            "schemas": {
                "FaultRule": {"oneOf": rules},
                "Fault": _FAULT,
                "Clock": _CLOCK,
                "Group": _GROUP,
                "Error": _ERROR,
            }
        },
    }
