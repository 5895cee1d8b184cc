"""Which Triton release introduced which ``ModelConfig`` field (builds, ``include`` and ``validate`` read it).

Keys are fully-qualified protobuf names, as ``FieldDescriptor.full_name`` spells them
(``inference.<Message>[.<Nested>].<field>``); values are NGC release tags (``"yy.mm"``).

How these facts were verified: triton-inference-server/common's ``protobuf/model_config.proto`` was
compared field by field between consecutive release branches r23.10 ... r26.07 (and earlier
against the serialized descriptors of each release's ``tritonclient`` wheel, 2.38.0 ... 2.73.0). A
release is listed as "introduced in" only where the field is absent from the previous release's
schema and present in that one's. Everything else in ``proto/model_config.proto``
(``ModelInput.optional``, ``ModelTransactionPolicy.decoupled``, ``ModelResponseCache``,
``ModelRateLimiter``, ``TYPE_BF16``, ``Step.model_namespace``, ...) was already present in 23.09
(2.38.0), so it loads on every release repogen supports (23.10 and later) and is not listed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from google.protobuf.message import Message

from .releases import Release, get_release

#: The release whose schema ``proto/model_config.proto`` mirrors: common's newest branch read here.
#: No field of a later release is known; r26.08-r26.11 are assumed to add none (not read).
SCHEMA_RELEASE = "26.07"

#: Fields added after r23.10, with the first release that parses them: a config that sets one is
#: rejected whole ("failed to read text proto") by an older server.
FIELDS_ADDED: dict[str, str] = {
    "inference.ModelSequenceBatching.State.use_same_buffer_for_input_output": "23.11",
    "inference.ModelSequenceBatching.State.use_growable_memory": "23.11",
    "inference.ModelSequenceBatching.iterative_sequence": "23.11",
    "inference.ModelConfig.runtime": "24.01",
    "inference.ModelInput.is_non_linear_format_io": "24.08",
    "inference.ModelOutput.is_non_linear_format_io": "24.08",
    # message inference.ModelMetrics (per-model histogram bucket overrides) came with it
    "inference.ModelConfig.model_metrics": "24.11",
    "inference.ModelEnsembling.max_inflight_requests": "25.11",
}


def triton_name(full_name: str) -> str:
    """Triton's name of a field of our schema, whose package is ``repogen.inference``."""
    return full_name.removeprefix("repogen.")


def introduced_in(full_name: str) -> str | None:
    """The release that added ``full_name``, or None when it predates 23.10 (or is unknown)."""
    return FIELDS_ADDED.get(full_name)


def supported_by(full_name: str, release: str | Release) -> bool:
    """Whether a server of ``release`` (``"yy.mm"``, or any spelling of the release table) knows ``full_name``."""
    added = introduced_in(full_name)
    return added is None or get_release(added).version <= get_release(release).version


_UNKNOWN_FIELD = re.compile(r'Message type "(?P<message>[\w.]+)" has no field named "(?P<field>\w+)"')


def unknown_field(parse_error: str) -> tuple[str, str] | None:
    """The field a text_format parse error says the schema lacks: ``(field, message.field)``; None for other errors."""
    match = _UNKNOWN_FIELD.search(parse_error)
    return None if match is None else (match["field"], f"{match['message']}.{match['field']}")


def set_fields(message: Message) -> Iterator[str]:
    """Full names (Triton's spelling) of every field set anywhere in ``message``."""
    for descriptor, value in message.ListFields():
        yield triton_name(descriptor.full_name)
        if descriptor.message_type is None:
            continue
        if descriptor.message_type.GetOptions().map_entry:
            values = value.values() if descriptor.message_type.fields_by_name["value"].message_type else []
        else:
            values = value if descriptor.is_repeated else [value]
        for item in values:
            yield from set_fields(item)
