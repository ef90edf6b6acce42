"""The operator image's root filesystem: this interpreter, okt and what it needs, the operator's files — no more."""

from __future__ import annotations

import dataclasses
import io
import pathlib
import sys
import tarfile

import pytest

from okt.testing import operator_image

ROOT = pathlib.Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "samples" / "memcached"


@pytest.fixture(scope="module")
def image() -> operator_image.images.Image:
    return operator_image.operator_image(
        "op:test", {"app/main.py": SAMPLE / "main.py", "app/memcached_operator": SAMPLE / "memcached_operator"}
    )


def test_the_image_holds_the_interpreter_okt_its_dependencies_and_the_operator(
    image: operator_image.images.Image,
) -> None:
    paths = dict(image.files)
    interpreter = pathlib.Path(sys.executable).resolve()
    assert paths[str(interpreter).lstrip("/")] == interpreter
    site = operator_image.SITE_PACKAGES
    for needed in ("okt/__init__.py", "okt/codegen/deploy.py", "pydantic/__init__.py", "websocket/__init__.py"):
        assert f"{site}/{needed}" in paths, needed
    assert paths["app/memcached_operator/reconciler.py"] == SAMPLE / "memcached_operator" / "reconciler.py"
    assert any(path.endswith("/libc.so.6") for path in paths)
    assert not [path for path in paths if "/pytest/" in path or "__pycache__" in path or "/test/" in path]
    assert f'ENTRYPOINT ["{interpreter}", "-m", "okt", "run"]' in image.changes


def test_the_dependencies_are_okts_declared_ones_without_extras() -> None:
    names = {distribution.metadata["Name"].lower() for distribution in operator_image.dependencies()}
    assert {"pydantic", "new-pykube", "websocket-client", "cryptography"} <= names
    assert not names & {"pytest", "mypy", "kopf", "mkdocs-material"}


def test_the_digest_changes_with_any_file_of_the_image(
    image: operator_image.images.Image, tmp_path: pathlib.Path
) -> None:
    extra = tmp_path / "extra.py"
    extra.write_text("VALUE = 1\n")
    before = operator_image.digest(dataclasses.replace(image, files=(*image.files, ("app/extra.py", extra))))
    extra.write_text("VALUE = 2\n")
    after = operator_image.digest(dataclasses.replace(image, files=(*image.files, ("app/extra.py", extra))))

    assert before != after
    assert operator_image.digest(image) == operator_image.digest(image)


def test_a_missing_operator_file_is_named() -> None:
    with pytest.raises(operator_image.images.ImageError, match=r"nowhere\.py does not exist"):
        operator_image.operator_image("op:test", {"app/main.py": ROOT / "nowhere.py"})


def test_every_file_is_readable_and_every_program_runnable_by_the_unprivileged_user(
    image: operator_image.images.Image, tmp_path: pathlib.Path
) -> None:
    private, program = tmp_path / "main.py", tmp_path / "tool"
    private.write_text("VALUE = 1\n")
    program.write_text("#!/bin/sh\n")
    private.chmod(0o600)  # a checkout made under umask 077
    program.chmod(0o700)
    small = dataclasses.replace(image, files=(("app/main.py", private), ("app/tool", program)))

    with tarfile.open(fileobj=io.BytesIO(small.tar())) as archive:
        modes = {member.name: member.mode for member in archive.getmembers()}

    assert (modes["app/main.py"], modes["app/tool"]) == (0o644, 0o755)
