"""`okt envtest build|start|stop|kubeconfig` — the local control plane outside pytest."""

from __future__ import annotations

import json
import pathlib
import sys

import click

from okt.testing import build, envtest


def _state_file() -> pathlib.Path:
    return build.cache_root() / "run" / "state.json"


def _say(line: str) -> None:
    click.echo(line, err=True)


@click.group("envtest")
def envtest_group() -> None:
    """A real local Kubernetes control plane (etcd + kube-apiserver + kube-controller-manager)."""


@envtest_group.command("build")
def build_command() -> None:
    """Build the control plane once for this machine (or say where the cached binaries are)."""
    try:
        assets = envtest.find_assets(out=_say)
    except envtest.ControlPlaneError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"control plane binaries: {assets}")


@envtest_group.command("start")
def start_command() -> None:
    """Start a control plane in the background and print its kubeconfig path."""
    state_file = _state_file()
    if state_file.exists():
        state = json.loads(state_file.read_text())
        raise click.ClickException(f"already running (kubeconfig {state['kubeconfig']}); `okt envtest stop` first")
    plane = envtest.ControlPlane(tie_to_parent=False, out=_say)
    try:
        plane.start()
    except envtest.ControlPlaneError as error:
        raise click.ClickException(str(error)) from error
    state = plane.detach()
    state_file.parent.mkdir(parents=True, exist_ok=True)
    state_file.write_text(json.dumps(state))
    click.echo(f"control plane at {state['url']}")
    click.echo(f"export KUBECONFIG={state['kubeconfig']}")


@envtest_group.command("stop")
def stop_command() -> None:
    """Stop the background control plane started by `okt envtest start`."""
    state_file = _state_file()
    if not state_file.exists():
        click.echo("no control plane is running", err=True)
        return
    envtest.stop_detached(json.loads(state_file.read_text()))
    state_file.unlink()
    click.echo("control plane stopped")


@envtest_group.command("kubeconfig")
def kubeconfig_command() -> None:
    """Print the kubeconfig path of the background control plane."""
    state_file = _state_file()
    if not state_file.exists():
        click.echo("error: no control plane is running; `okt envtest start` first", err=True)
        sys.exit(1)
    click.echo(json.loads(state_file.read_text())["kubeconfig"])
