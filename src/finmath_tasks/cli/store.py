"""Checks of a log directory or plan file on object storage before a grid writes anything there.

Inspect reaches ``s3://`` through ``s3fs``, which takes the bucket's credentials, region and
endpoint from the standard AWS configuration (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``
or a profile, ``AWS_DEFAULT_REGION``, and ``AWS_ENDPOINT_URL`` or ``AWS_ENDPOINT_URL_S3`` for
an S3-compatible store such as MinIO). Left to itself, a run into a bucket that does not exist
creates it (when the credentials allow) or fails deep inside the eval after retrying for a
minute; ``check_location`` asks the store once, without retries, and turns the answer into one
line that names what is wrong.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

ENDPOINT_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")

_DENIED = {
    "InvalidAccessKeyId": "the access key id is not known to the store",
    "SignatureDoesNotMatch": "the secret access key does not match the access key id",
    "AccessDenied": "the credentials may not use this bucket",
    "ExpiredToken": "the session token has expired",
    "InvalidToken": "the session token is not valid",
    "403": "the credentials may not use this bucket",
}


def is_remote(location: str) -> bool:
    """True for a URL of a remote filesystem (``s3://``, ``gs://``...), False for a local path."""
    scheme = urlparse(location).scheme
    return len(scheme) > 1 and scheme != "file"


def endpoint() -> str:
    """The S3 endpoint the AWS configuration names, as said in messages."""
    for name in ENDPOINT_ENV:
        if os.environ.get(name):
            return os.environ[name]
    return "the default AWS endpoint"


def bucket_of(location: str) -> str:
    return urlparse(location).netloc


def _s3_client() -> Any:
    """A botocore S3 client resolved like s3fs resolves it, but answering without retries."""
    import botocore.config
    import botocore.session

    session = botocore.session.get_session()
    config = botocore.config.Config(
        signature_version="s3v4",
        connect_timeout=5,
        read_timeout=30,
        retries={"max_attempts": 1, "mode": "standard"},
    )
    return session.create_client("s3", config=config)


def check_location(location: str, what: str) -> str | None:
    """None when ``location`` is local or its bucket answers; else one line naming the problem.

    ``what`` says what the location is for (``"log directory"``, ``"plan"``).
    """
    if not is_remote(location):
        return None
    scheme = urlparse(location).scheme
    if scheme not in ("s3", "s3a"):
        return _check_generic(location, what)
    bucket = bucket_of(location)
    if not bucket:
        return f"{what} {location}: no bucket in the URL (expected s3://BUCKET/PATH)"
    try:
        import botocore.exceptions as bex
    except ImportError:  # pragma: no cover - s3fs brings botocore
        return f"{what} {location}: s3:// needs s3fs (pip install s3fs)"
    try:
        client = _s3_client()
        # a listing, not head_bucket: its error answer carries the code (a HEAD has no body),
        # and Inspect lists the log directory anyway
        prefix = urlparse(location).path.lstrip("/")
        client.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1)
    except bex.NoCredentialsError:
        return (
            f"{what} {location}: no AWS credentials found (set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)"
        )
    except (bex.EndpointConnectionError, bex.ConnectTimeoutError) as e:
        return f"{what} {location}: cannot connect to the S3 endpoint {endpoint()} ({e})"
    except bex.ClientError as e:
        error = e.response.get("Error", {})
        code = str(error.get("Code", ""))
        if code in ("404", "NoSuchBucket"):
            return f"{what} {location}: the bucket {bucket!r} does not exist at {endpoint()}"
        if code in _DENIED:
            return (
                f"{what} {location}: access to bucket {bucket!r} refused at {endpoint()}: "
                f"{_DENIED[code]} ({code})"
            )
        return f"{what} {location}: the S3 endpoint {endpoint()} answered {code or e}"
    except bex.BotoCoreError as e:
        return f"{what} {location}: S3 at {endpoint()}: {e}"
    return None


def _check_generic(location: str, what: str) -> str | None:
    from finmath_tasks._inspect_private import filesystem

    try:
        filesystem(location).exists(location)
    except Exception as e:
        return f"{what} {location}: cannot reach the store ({type(e).__name__}: {e})"
    return None
