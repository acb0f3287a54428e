"""The Docker engine connection and the sandbox image of the ``finmath_docker`` backend.

Image: built from the package's ``Dockerfile`` (context: this directory) on top of
a base image and tagged ``finmath-tasks/sandbox:<hash of Dockerfile, runner.py and
the base image id>``, so edited sources or a new base lead to a rebuild. Base image:
``FINMATH_SANDBOX_BASE_IMAGE`` or the config's ``base_image``, else the local
``finmath-tasks/base:bookworm`` (``scripts/docker-setup.sh`` builds it) when present,
else ``python:3.11-slim``. ``FINMATH_SANDBOX_IMAGE`` (or ``image``) uses a prebuilt
image as is. The build runs on the host network; behind a TLS-intercepting proxy
the proxy's CA bundle (``FINMATH_SANDBOX_BUILD_CA``, else pip's ``cert`` setting)
goes into the build's first stage only and never into the image.

The ``docker`` Python SDK is imported lazily (in :func:`docker_client`): the
backend's provider is imported by the package's Inspect registry and must stay cheap.
"""

from __future__ import annotations

import configparser
import contextlib
import hashlib
import io
import logging
import os
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from finmath_tasks.sandbox import HIDE_SANDBOXES_ENV, hidden_sandbox, runner_source_path

logger = logging.getLogger(__name__)

SANDBOX_DIR = Path(__file__).resolve().parent
DOCKERFILE = SANDBOX_DIR / "Dockerfile"

IMAGE_REPOSITORY = "finmath-tasks/sandbox"
LOCAL_BASE_IMAGE = "finmath-tasks/base:bookworm"
"""Debian base built locally by ``scripts/docker-setup.sh`` (no registry needed)."""
DEFAULT_BASE_IMAGE = "python:3.11-slim"
"""The Dockerfile's own default base, for engines that can pull from Docker Hub."""

LABEL = "finmath-tasks.sandbox"
"""Label on every container (value ``worker``) and image (``image``) we create."""
LABEL_SOURCE = "finmath-tasks.source-hash"


class DockerSandboxError(RuntimeError):
    """The Docker sandbox cannot be set up (engine, image or container problem)."""


def docker_client(timeout: float = 120.0) -> Any:
    """A ``docker.DockerClient`` from the environment (DOCKER_HOST etc.)."""
    try:
        import docker
    except ImportError as exc:  # pragma: no cover - docker is a dependency
        raise DockerSandboxError(
            "the docker Python SDK is not installed (pip install docker)"
        ) from exc
    if hidden_sandbox("docker"):
        raise DockerSandboxError(f"cannot reach a Docker engine: hidden by {HIDE_SANDBOXES_ENV}")
    try:
        return docker.from_env(timeout=int(max(1, timeout)))
    except Exception as exc:
        raise DockerSandboxError(f"cannot reach a Docker engine: {short_exc(exc)}") from exc


def short_exc(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).strip().replace("\n", " ") or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_not_found(exc: BaseException) -> bool:
    return type(exc).__name__ in ("NotFound", "ImageNotFound")


def image_id(client: Any, name: str) -> str | None:
    try:
        return str(client.api.inspect_image(name)["Id"])
    except Exception as exc:
        if is_not_found(exc):
            return None
        raise


def _pull(client: Any, name: str) -> None:
    repo, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "")
    try:
        client.api.pull(repo, tag=tag or "latest")
    except Exception as exc:
        raise DockerSandboxError(
            f"image {name} is not present and cannot be pulled ({short_exc(exc)}); without "
            "registry access run scripts/docker-setup.sh, which builds the local base image "
            f"{LOCAL_BASE_IMAGE}"
        ) from exc


def resolve_base_image(client: Any, requested: str | None = None, *, pull: bool = True) -> str:
    """The base image to build on (see module doc for the order); pulled if needed."""
    name = requested or os.environ.get("FINMATH_SANDBOX_BASE_IMAGE") or None
    if name is None:
        name = LOCAL_BASE_IMAGE if image_id(client, LOCAL_BASE_IMAGE) else DEFAULT_BASE_IMAGE
    if image_id(client, name) is None:
        if not pull:
            raise DockerSandboxError(f"base image {name} is not present")
        _pull(client, name)
    return name


def source_hash(base_image_id: str) -> str:
    """Hash of what the sandbox image is made of (tag of the image)."""
    digest = hashlib.sha256()
    for part in (
        DOCKERFILE.read_bytes(),
        runner_source_path().read_bytes(),
        base_image_id.encode(),
    ):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()[:16]


def _pip_config_cert() -> str | None:
    """The ``cert`` setting of pip's configuration files, if any."""
    files = [
        "/etc/pip.conf",
        "/etc/xdg/pip/pip.conf",
        os.path.expanduser("~/.pip/pip.conf"),
        os.path.expanduser("~/.config/pip/pip.conf"),
        os.path.join(sys.prefix, "pip.conf"),
    ]
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(os.environ["PIP_CONFIG_FILE"])
    found = None
    for path in files:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path)
        except configparser.Error:
            continue
        for section in ("global", "install"):
            if parser.has_option(section, "cert"):
                found = parser.get(section, "cert").strip() or found
    return found


def find_build_ca() -> Path | None:
    """CA bundle for pip inside the image build (None: pip's own certificates).

    ``FINMATH_SANDBOX_BUILD_CA`` (a file, or ``none``), else the host's pip
    settings (``PIP_CERT``, pip.conf ``cert``), else ``REQUESTS_CA_BUNDLE``.
    """
    explicit = os.environ.get("FINMATH_SANDBOX_BUILD_CA")
    if explicit is not None:
        if explicit.strip().lower() in ("", "none"):
            return None
        path = Path(explicit)
        if not path.is_file():
            raise DockerSandboxError(f"FINMATH_SANDBOX_BUILD_CA={explicit} is not a file")
        return path
    for candidate in (
        os.environ.get("PIP_CERT"),
        _pip_config_cert(),
        os.environ.get("REQUESTS_CA_BUNDLE"),
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def build_context(ca_bundle: Path | None = None) -> io.BytesIO:
    """The build context as a tar: Dockerfile, runner.py (+ build-ca.pem)."""
    files = [
        ("Dockerfile", DOCKERFILE.read_bytes()),
        ("runner.py", runner_source_path().read_bytes()),
    ]
    if ca_bundle is not None:
        files.append(("build-ca.pem", ca_bundle.read_bytes()))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def ensure_image(
    client: Any,
    *,
    image: str | None = None,
    base_image: str | None = None,
    rebuild: bool = False,
    build_network: str | None = "host",
    log: Callable[[str], None] | None = None,
) -> str:
    """Name of a sandbox image that is present, building it if needed."""
    explicit = image or os.environ.get("FINMATH_SANDBOX_IMAGE") or None
    if explicit:
        if image_id(client, explicit) is None:
            _pull(client, explicit)
        return explicit
    base = resolve_base_image(client, base_image)
    base_id = image_id(client, base) or base
    digest = source_hash(base_id)
    tag = f"{IMAGE_REPOSITORY}:{digest}"
    if not rebuild and image_id(client, tag) is not None:
        return tag
    emit = log or logger.info
    emit(f"building the sandbox image {tag} from {DOCKERFILE} on {base}")
    started = time.monotonic()
    ca = find_build_ca()
    lines: list[str] = []
    try:
        events = client.api.build(
            fileobj=build_context(ca),
            custom_context=True,
            tag=tag,
            buildargs={"BASE_IMAGE": base},
            network_mode=build_network or None,
            labels={LABEL: "image", LABEL_SOURCE: digest},
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
        )
        for event in events:
            if "error" in event:
                detail = event.get("errorDetail", {}).get("message") or event["error"]
                tail = "".join(lines[-15:])
                raise DockerSandboxError(f"building {tag} failed: {detail.strip()}\n{tail}")
            text = event.get("stream")
            if text:
                lines.append(text)
                if text.strip():
                    emit(text.rstrip())
    except DockerSandboxError:
        raise
    except Exception as exc:
        raise DockerSandboxError(f"building {tag} failed: {short_exc(exc, 1000)}") from exc
    if image_id(client, tag) is None:
        raise DockerSandboxError(f"building {tag} reported success but the image is missing")
    with contextlib.suppress(Exception):
        client.api.tag(tag, IMAGE_REPOSITORY, "latest")
    _remove_stale_images(client, keep=tag)
    emit(f"built {tag} in {time.monotonic() - started:.1f}s (CA bundle: {ca or 'none'})")
    return tag


def _remove_stale_images(client: Any, keep: str) -> None:
    """Untag older builds of the sandbox image (ignored while a container uses them)."""
    try:
        images = client.api.images(name=IMAGE_REPOSITORY)
    except Exception:
        return
    for info in images:
        for ref in info.get("RepoTags") or ():
            if ref not in (keep, f"{IMAGE_REPOSITORY}:latest"):
                with contextlib.suppress(Exception):
                    client.api.remove_image(ref)
