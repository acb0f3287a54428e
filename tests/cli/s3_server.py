"""A real S3 implementation on loopback for the object-storage tests: the ``moto`` server.

Started as a subprocess on 127.0.0.1 and a free port, with request authentication switched on
(``INITIAL_NO_AUTH_ACTION_COUNT``: the first three requests create an IAM user with full
access and its key; every later request must be signed with that key, so wrong credentials
are refused as a real store refuses them). Clients reach it through the standard AWS
variables: ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_DEFAULT_REGION``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

REGION = "us-east-1"
# variables that would point a client at another store or identity
AWS_VARIABLES = (
    "AWS_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_ENDPOINT_URL_S3",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
)


@dataclass
class S3Server:
    endpoint: str
    key_id: str
    secret: str
    bucket: str

    def env(self) -> dict[str, str]:
        """The AWS variables a client of this store needs."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the moto server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the moto server did not listen on 127.0.0.1:{port} in {timeout} s")


@contextmanager
def s3_server(bucket: str = "finmath-grid") -> Iterator[S3Server]:
    """A moto S3 server with one bucket and one authorised key; stopped on exit."""
    import boto3

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env={**env, "INITIAL_NO_AUTH_ACTION_COUNT": "3"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, proc)
        endpoint = f"http://127.0.0.1:{port}"
        anonymous = {"aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
        iam = boto3.client("iam", endpoint_url=endpoint, region_name=REGION, **anonymous)
        iam.create_user(UserName="grid")
        everything = {"Effect": "Allow", "Action": "*", "Resource": "*"}
        iam.put_user_policy(
            UserName="grid",
            PolicyName="all",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [everything]}),
        )
        key = iam.create_access_key(UserName="grid")["AccessKey"]
        server = S3Server(endpoint, key["AccessKeyId"], key["SecretAccessKey"], bucket)
        s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=REGION,
            aws_access_key_id=server.key_id,
            aws_secret_access_key=server.secret,
        )
        s3.create_bucket(Bucket=bucket)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
