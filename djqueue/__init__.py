"""djqueue: background jobs for Django and Flask on Redis, in Sidekiq's wire format.

``import djqueue`` touches neither Redis nor a web framework; the first push opens the pool.
"""

from __future__ import annotations

from . import limits
from .batch import Batch, JobChain, Signature, chain
from .client import Client
from .config import Settings, configure, get_settings
from .errors import (
    BadKey,
    BatchClosed,
    ConfigurationError,
    DjQueueError,
    DuplicateJobName,
    JobCancelled,
    JobFailed,
    JobNotTracked,
    MalformedJob,
    OverLimit,
    PayloadTooLarge,
    PoolExhausted,
    RedisUnavailable,
    ResultTimeout,
    UnknownJob,
)
from .executor import current_job
from .job import FunctionJob, Job, JobHandle, job
from .lifecycle import JobRef, JobStatus, aresult, astatus, cancel, result, status
from .middleware import Chain, client_middleware, server_middleware
from .periodic_declaration import periodic

__version__ = "0.1.0"

__all__ = [
    "BadKey",
    "Batch",
    "BatchClosed",
    "Chain",
    "Client",
    "ConfigurationError",
    "DjQueueError",
    "DuplicateJobName",
    "FunctionJob",
    "Job",
    "JobCancelled",
    "JobChain",
    "JobFailed",
    "JobHandle",
    "JobNotTracked",
    "JobRef",
    "JobStatus",
    "MalformedJob",
    "OverLimit",
    "PayloadTooLarge",
    "PoolExhausted",
    "RedisUnavailable",
    "ResultTimeout",
    "Settings",
    "Signature",
    "UnknownJob",
    "aresult",
    "astatus",
    "cancel",
    "chain",
    "client_middleware",
    "configure",
    "current_job",
    "get_settings",
    "job",
    "limits",
    "result",
    "server_middleware",
    "periodic",
    "status",
]
