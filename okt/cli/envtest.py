"""`okt envtest build|start|stop|kubeconfig` — the local control plane outside pytest."""

from __future__ import annotations

import json
import os
import pathlib
import sys
import time
from typing import Any, TypeGuard

import click

from okt.testing import build, envtest, images


def _state_file() -> pathlib.Path:
    return build.cache_root() / "run" / "state.json"


def _recorded_state() -> dict[str, Any] | None:
    """The state ``okt envtest start`` recorded, or None: none recorded, or one that cannot be read (cut short by a
    start killed while writing it, a full disk, or JSON of another shape), forgotten in one line rather than a
    traceback at every command."""
    state_file = _state_file()
    if not state_file.exists():
        return None
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError):
        state = None
    if _well_formed(state):
        return state
    _say(
        f"okt: the state of the background control plane, {state_file}, cannot be read: forgotten (a plane it "
        "described may still run: stop its etcd and kube-apiserver by hand)"
    )
    state_file.unlink(missing_ok=True)
    return None


def _well_formed(state: object) -> TypeGuard[dict[str, Any]]:
    """Whether ``state`` has the shape :meth:`okt.testing.envtest.ControlPlane.detach` gives it: the commands read
    its process ids as numbers and its paths as text (a word where a process id belongs was a traceback)."""
    if not isinstance(state, dict) or not isinstance(state.get("pids"), dict):
        return False
    pids_are_numbers = all(type(pid) is int for pid in state["pids"].values())
    paths_are_text = all(isinstance(state.get(key), str) for key in ("directory", "kubeconfig", "url"))
    return pids_are_numbers and paths_are_text and isinstance(state.get("node_root", ""), str)


def _write_state(state: dict[str, Any]) -> None:
    """Record ``state`` whole or not at all: written beside the state file, then moved onto it."""
    state_file = _state_file()
    state_file.parent.mkdir(parents=True, exist_ok=True)
    written = state_file.with_name(f".{state_file.name}.{os.getpid()}.tmp")
    written.write_text(json.dumps(state))
    os.replace(written, state_file)


def _running_state() -> dict[str, Any] | None:
    """The state of the plane ``okt envtest start`` left running, or None — a state whose processes are all gone
    (the plane died, the machine restarted) is forgotten, not taken for a running plane."""
    state = _recorded_state()
    if state is None:
        return None
    if envtest.detached_running(state):
        return state
    envtest.stop_detached(state, out=_say)  # its directory and node, if any are left
    _state_file().unlink()
    return None


def _say(line: str) -> None:
    click.echo(line, err=True)


@click.group("envtest")
def envtest_group() -> None:
    """A real local Kubernetes control plane (etcd + kube-apiserver + kube-controller-manager), optionally a node."""


@envtest_group.command("build")
def build_command() -> None:
    """Build the control plane and the node once for this machine (or say where the cached binaries are).

    Also imports the node's images (pause, busybox, memcached) into the local Docker when it answers.
    """
    started = time.monotonic()
    try:
        assets = envtest.find_assets(out=_say)
        if build.has_binaries(assets, node=True):
            build.import_images(assets, _say)
    except (envtest.ControlPlaneError, images.ImageError) as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"control plane binaries: {assets} ({time.monotonic() - started:.1f}s)")


@envtest_group.command("start")
@click.option("--node", is_flag=True, help="Also run kube-scheduler and a kubelet on the local Docker (Pods run).")
def start_command(node: bool) -> None:
    """Start a control plane in the background and print its kubeconfig path."""
    state = _running_state()
    if state is not None:
        raise click.ClickException(f"already running (kubeconfig {state['kubeconfig']}); `okt envtest stop` first")
    plane = envtest.ControlPlane(tie_to_parent=False, node=node, out=_say)
    started = time.monotonic()
    try:
        plane.start()
    except envtest.ControlPlaneError as error:
        raise click.ClickException(str(error)) from error
    state = plane.detach()
    _write_state(state)
    click.echo(f"control plane at {state['url']} (started in {time.monotonic() - started:.1f}s)")
    if plane.node_ready_seconds is not None:
        click.echo(
            f"node localhost Ready {time.monotonic() - started:.1f}s after start "
            f"(kubelet and scheduler: {plane.node_ready_seconds:.1f}s)"
        )
    click.echo(f"export KUBECONFIG={state['kubeconfig']}")


@envtest_group.command("stop")
def stop_command() -> None:
    """Stop the background control plane started by `okt envtest start`."""
    state = _recorded_state()
    if state is None:
        click.echo("no control plane is running", err=True)
        return
    envtest.stop_detached(state, out=_say)
    _state_file().unlink()
    click.echo("control plane stopped")


@envtest_group.command("kubeconfig")
def kubeconfig_command() -> None:
    """Print the kubeconfig path of the background control plane."""
    state = _running_state()
    if state is None:
        click.echo("error: no control plane is running; `okt envtest start` first", err=True)
        sys.exit(1)
    click.echo(state["kubeconfig"])
