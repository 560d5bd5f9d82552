"""Rails Active Job payloads pushed through Sidekiq: the arguments a person wrote.

Active Job wraps a job in one Sidekiq argument (``job_class``, ``arguments``, ``locale``...)
and serializes what JSON cannot hold: a record as ``{"_aj_globalid": "gid://app/User/1"}``,
a symbol-keyed hash with ``_aj_symbol_keys``, keyword arguments with ``_aj_ruby2_keywords``,
a date or a BigDecimal as ``{"_aj_serialized": "ActiveJob::Serializers::...", "value": ...}``.
Sidekiq 7.1+ shows such arguments unwrapped in its Web UI (``Sidekiq::JobRecord#display_args``):
a global id as its URI, a hash without its ``_aj_`` bookkeeping keys, a mail delivery as its
mailer's params and arguments. djqueue's pages and API show them the same way.
"""

from __future__ import annotations

from typing import Any

#: ``class`` of a Rails ActiveJob pushed through Sidekiq (7.x and older, then 8.x).
WRAPPERS = (
    "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper",
    "Sidekiq::ActiveJob::Wrapper",
)
#: The keys Active Job adds to a serialized hash; none is the job's own data.
PREFIX = "_aj_"
#: The only key of a serialized record (a GlobalID URI).
GLOBAL_ID = "_aj_globalid"
#: Mail deliveries: their first three arguments are the mailer, the method and the delivery.
DELIVERY_JOB = "ActionMailer::DeliveryJob"
MAIL_DELIVERY_JOB = "ActionMailer::MailDeliveryJob"


def display_args(job_class: str, arguments: list[Any]) -> list[Any]:
    """The arguments of the Active Job ``job_class``, as its author passed them."""
    shown = deserialize(arguments)
    if job_class == DELIVERY_JOB:
        return shown[3:]
    if job_class == MAIL_DELIVERY_JOB:
        rest = shown[3:]
        delivery = rest[0] if rest and isinstance(rest[0], dict) else {}
        return [delivery.get("params"), delivery.get("args")]
    return shown


def deserialize(argument: Any) -> Any:
    """``argument`` without Active Job's serialization: a global id as its URI, a hash without
    the ``_aj_`` keys, at any depth."""
    if isinstance(argument, list):
        return [deserialize(item) for item in argument]
    if isinstance(argument, dict):
        if len(argument) == 1 and GLOBAL_ID in argument:
            return argument[GLOBAL_ID]
        return {
            key: deserialize(value)
            for key, value in argument.items()
            if not (isinstance(key, str) and key.startswith(PREFIX))
        }
    return argument
